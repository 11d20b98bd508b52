#include "core/viz/dot_writer.h"

#include <set>
#include <sstream>

#include "core/viz/text_escape.h"

namespace ivytrace {
namespace {

std::string Shorten(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
  return s.substr(0, cut) + "...";
}

std::string ShortFile(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

class DotEmitter {
 public:
  DotEmitter(const ViewModel& vm, const DotOptions& o) : vm_(vm), o_(o) {}

  std::string Emit() {
    os_ << "digraph \"" << DotText(vm_.name) << "\" {\n"
        << "  rankdir=TB; newrank=true; compound=true;\n"
        << "  graph [fontname=\"Helvetica\", fontsize=11];\n"
        << "  node [fontname=\"Helvetica\", fontsize=10];\n"
        << "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#555555\"];\n";
    EmitGroup(0, "  ");
    std::string inputs, outputs;
    for (int n : vm_.groups[0].nodes) {
      if (vm_.nodes[n].kind == ViewNode::kInput) inputs += " " + Id(n) + ";";
      if (vm_.nodes[n].kind == ViewNode::kOutput) outputs += " " + Id(n) + ";";
    }
    if (!inputs.empty()) os_ << "  { rank=source;" << inputs << " }\n";
    if (!outputs.empty()) os_ << "  { rank=sink;" << outputs << " }\n";
    for (size_t n = 0; n < vm_.nodes.size(); ++n) {
      for (int in : vm_.nodes[n].inputs) os_ << "  " << Id(in) << " -> " << Id(static_cast<int>(n)) << ";\n";
      if (o_.show_constants) {
        for (ValueId c : vm_.nodes[n].consts) os_ << "  \"c&#37;" << c << "\" -> " << Id(static_cast<int>(n)) << ";\n";
      }
    }
    os_ << "}\n";
    return os_.str();
  }

 private:
  // Node ids are the names the viewer shows ("%12"): Graphviz uses them as SVG <title>s. Its SVG
  // renderer mangles '%' in titles ("%17" came out as "%15"), so '%' goes in as the XML entity,
  // which Graphviz passes through and a browser shows as '%'.
  std::string Id(int n) const {
    std::string id;
    for (char c : DotText(vm_.nodes[n].name)) id += c == '%' ? std::string("&#37;") : std::string(1, c);
    return "\"" + id + "\"";
  }

  void EmitGroup(int g, const std::string& indent) {
    const ViewGroup& grp = vm_.groups[g];
    for (int child : grp.groups) {
      os_ << indent << "subgraph \"cluster_" << child << "\" {\n"
          << indent << "  label=\"" << DotText(vm_.groups[child].name) << "\"; tooltip=\""
          << DotText(vm_.groups[child].path) << "\"; style=rounded; color=\"#bbbbbb\"; fontcolor=\"#666666\";\n";
      EmitGroup(child, indent + "  ");
      os_ << indent << "}\n";
    }
    for (int n : grp.nodes) EmitNode(n, indent);
  }

  void EmitNode(int n, const std::string& indent) {
    const ViewNode& v = vm_.nodes[n];
    const std::string type = v.dtype + v.shape;
    if (v.kind != ViewNode::kOp) {
      os_ << indent << Id(n) << " [shape=ellipse, style=filled, fillcolor=\""
          << (v.kind == ViewNode::kInput ? "#d5f5d5" : "#d5e5fa") << "\", label=\""
          << DotText(v.op + "\n" + type) << "\", tooltip=\"" << DotText(v.name + " " + v.op) << "\"];\n";
      return;
    }
    std::string label = v.name + " " + (v.canonical.empty() ? v.op : v.canonical) + "\n" + Shorten(v.args, 48) + "\n" + type;
    if (!v.file.empty()) label += "\n" + ShortFile(v.file) + ":" + std::to_string(v.line);
    if (!o_.show_constants && !v.consts.empty()) {
      label += "\n+" + std::to_string(v.consts.size()) + (v.consts.size() == 1 ? " constant" : " constants");
    }
    os_ << indent << Id(n) << " [shape=box, style=\"rounded,filled\", fillcolor=\""
        << (v.canonical.empty() ? "#fde2c8" : "#eef3fb") << "\", label=\"" << DotText(label) << "\", tooltip=\""
        << DotText(v.op + " at " + v.file + ":" + std::to_string(v.line)) << "\"];\n";
    if (o_.show_constants) {
      for (ValueId c : v.consts) {
        if (!emitted_.insert(c).second) continue;
        os_ << indent << "\"c&#37;" << c << "\" [shape=note, style=filled, fillcolor=\"#eeeeee\", label=\""
            << DotText(vm_.const_names[c] + "\n" + vm_.const_types[c]) << "\"];\n";
      }
    }
  }

  const ViewModel& vm_;
  const DotOptions& o_;
  std::ostringstream os_;
  std::set<ValueId> emitted_;
};

}  // namespace

std::string ViewModelToDot(const ViewModel& vm, const DotOptions& options) {
  return DotEmitter(vm, options).Emit();
}

size_t DotNodeCount(const ViewModel& vm, const DotOptions& options) {
  return vm.nodes.size() + (options.show_constants ? vm.constant_count : 0);
}

}  // namespace ivytrace
