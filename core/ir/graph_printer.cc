#include "core/ir/graph_printer.h"

#include <sstream>

#include "core/ir/arg.h"

namespace ivytrace {
namespace {

std::string TypeOf(const Value& v) {
  std::ostringstream os;
  os << DTypeName(v.dtype) << "[";
  for (size_t i = 0; i < v.shape.size(); ++i) os << (i ? ", " : "") << v.shape[i];
  os << "]";
  return os.str();
}

}  // namespace

std::string PrintGraph(const Graph& g) {
  std::ostringstream os;
  os << "graph " << g.name << "(";
  bool first = true;
  for (ValueId v : g.InputValues()) {
    os << (first ? "" : ", ") << "%" << v << " " << g.values[v].name << ": " << TypeOf(g.values[v]);
    first = false;
  }
  os << "):\n";
  for (size_t i = 0; i < g.values.size(); ++i) {
    const Value& v = g.values[i];
    if (v.kind != v1::CONSTANT_VALUE) continue;
    os << "  %" << i << ": " << TypeOf(v) << " = constant " << (v.name.empty() ? "" : "'" + v.name + "'")
       << "\n";
  }
  for (const Node& n : g.nodes) {
    if (n.erased) continue;
    std::ostringstream line;
    line << "  ";
    if (!n.outputs.empty()) {
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        line << (k ? ", " : "") << "%" << n.outputs[k];
      }
      line << ": " << TypeOf(g.values[n.outputs[0]]) << " = ";
    }
    line << n.op << "(";
    bool comma = false;
    for (const auto& a : n.args) {
      line << (comma ? ", " : "") << ArgToString(a, true);
      comma = true;
    }
    for (const auto& kw : n.kwargs) {
      line << (comma ? ", " : "") << kw.name() << "=" << ArgToString(kw.value(), true);
      comma = true;
    }
    line << ")";
    std::string text = line.str();
    if (text.size() < 72) text.resize(72, ' ');
    os << text << "  # " << n.loc.file() << ":" << n.loc.line();
    if (!n.scope.empty()) os << "  [" << n.scope << "]";
    os << "\n";
  }
  if (g.outputs.kind_case() != v1::Arg::KIND_NOT_SET) {
    os << "  return " << ArgToString(g.outputs, true) << "\n";
  } else {
    os << "  # no region: nothing is returned\n";
  }
  return os.str();
}

}  // namespace ivytrace
