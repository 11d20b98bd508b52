#include "core/viz/dot_writer.h"

#include <map>
#include <sstream>

#include "core/ir/arg.h"

namespace ivytrace {
namespace {

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string ShapeString(const Value& v) {
  std::ostringstream os;
  os << DTypeName(v.dtype) << "[";
  for (size_t i = 0; i < v.shape.size(); ++i) os << (i ? ", " : "") << v.shape[i];
  os << "]";
  return os.str();
}

std::string ShortFile(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::string GraphToDot(const Graph& g) {
  std::ostringstream os;
  os << "digraph \"" << Escape(g.name) << "\" {\n"
     << "  rankdir=TB;\n"
     << "  graph [fontname=\"Helvetica\", fontsize=11];\n"
     << "  node [fontname=\"Helvetica\", fontsize=10];\n"
     << "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#555555\"];\n";
  // Which node (or input/constant pseudo-node) defines each value.
  std::vector<std::string> source(g.values.size());
  for (size_t i = 0; i < g.values.size(); ++i) {
    const Value& v = g.values[i];
    if (v.kind == v1::INPUT) {
      source[i] = "in" + std::to_string(i);
      os << "  " << source[i] << " [shape=ellipse, style=filled, fillcolor=\"#d5f5d5\", label=\""
         << Escape(v.name) << "\\n" << ShapeString(v) << "\"];\n";
    }
  }
  // Constants are drawn only where something reads them.
  std::vector<char> const_drawn(g.values.size(), 0);
  std::map<std::string, std::vector<size_t>> by_scope;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (!g.nodes[n].erased) by_scope[g.nodes[n].scope].push_back(n);
  }
  int cluster = 0;
  for (const auto& [scope, nodes] : by_scope) {
    std::string indent = "  ";
    if (!scope.empty()) {
      os << "  subgraph cluster_" << cluster++ << " {\n    label=\"" << Escape(scope)
         << "\"; style=rounded; color=\"#bbbbbb\"; fontcolor=\"#666666\";\n";
      indent = "    ";
    }
    for (size_t n : nodes) {
      const Node& node = g.nodes[n];
      std::string label = node.op;
      if (!node.outputs.empty()) label += "\n" + ShapeString(g.values[node.outputs[0]]);
      if (!node.loc.file().empty()) {
        label += "\n" + ShortFile(node.loc.file()) + ":" + std::to_string(node.loc.line());
      }
      const bool known = node.schema != nullptr;
      os << indent << "n" << n << " [shape=box, style=\"rounded,filled\", fillcolor=\""
         << (known ? "#eef3fb" : "#fde2c8") << "\", label=\"" << Escape(label) << "\"];\n";
      for (ValueId out : node.outputs) source[out] = "n" + std::to_string(n);
    }
    if (!scope.empty()) os << "  }\n";
  }
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    if (node.erased) continue;
    for (ValueId in : node.inputs) {
      const Value& v = g.values[in];
      if (v.kind == v1::CONSTANT_VALUE && !const_drawn[in]) {
        const_drawn[in] = 1;
        source[in] = "c" + std::to_string(in);
        os << "  " << source[in] << " [shape=note, style=filled, fillcolor=\"#eeeeee\", label=\""
           << Escape(v.name.empty() ? "constant" : v.name) << "\\n" << ShapeString(v) << "\"];\n";
      }
      if (!source[in].empty()) os << "  " << source[in] << " -> n" << n << ";\n";
    }
  }
  int k = 0;
  for (ValueId out : g.OutputValues()) {
    os << "  out" << k << " [shape=ellipse, style=filled, fillcolor=\"#d5e5fa\", label=\"output"
       << (g.OutputValues().size() > 1 ? "." + std::to_string(k) : "") << "\\n"
       << ShapeString(g.values[out]) << "\"];\n";
    if (!source[out].empty()) os << "  " << source[out] << " -> out" << k << ";\n";
    ++k;
  }
  os << "}\n";
  return os.str();
}

}  // namespace ivytrace
