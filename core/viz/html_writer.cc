#include "core/viz/html_writer.h"

#include <string_view>
#include <unordered_map>

#include "core/viz/text_escape.h"

namespace ivytrace {

// core/viz/viewer.{html,css,js}, embedded by cmake/embed_viewer.cmake.
std::string_view ViewerHtmlTemplate();
std::string_view ViewerCss();
std::string_view ViewerJs();

namespace {

// Strings that repeat (ops, files, dtypes, shapes, group names) are written once in a table and
// referred to by index.
class StringTable {
 public:
  int Id(const std::string& s) {
    auto [it, inserted] = ids_.emplace(s, static_cast<int>(strings_.size()));
    if (inserted) strings_.push_back(&it->first);
    return it->second;
  }
  void AppendJson(std::string* out) const {
    out->push_back('[');
    for (size_t i = 0; i < strings_.size(); ++i) {
      if (i) out->push_back(',');
      AppendJsonString(*strings_[i], out);
    }
    out->push_back(']');
  }

 private:
  std::unordered_map<std::string, int> ids_;
  std::vector<const std::string*> strings_;
};

std::string DataJson(const ViewModel& vm, const GraphDiff* diff) {
  StringTable st;
  st.Id("");  // index 0: the empty string
  std::string groups, nodes, consts;
  groups.reserve(vm.groups.size() * 16);
  nodes.reserve(vm.nodes.size() * 96);
  // Groups: [parent, name].
  for (size_t g = 0; g < vm.groups.size(); ++g) {
    if (g) groups.push_back(',');
    groups += "[" + std::to_string(vm.groups[g].parent) + "," + std::to_string(st.Id(vm.groups[g].name)) + "]";
  }
  // Constants read, numbered in order of first use: [name, type].
  std::unordered_map<ValueId, int> const_index;
  // Nodes: [kind, group, name, op, canonical, args, dtype, shape, file, line, duration in 100 ns
  //         units, [inputs], [constants], diff status, before]; trailing empty fields are left off.
  for (size_t i = 0; i < vm.nodes.size(); ++i) {
    const ViewNode& n = vm.nodes[i];
    if (i) nodes.push_back(',');
    std::vector<std::string> f = {
        std::to_string(n.kind), std::to_string(n.group), std::to_string(st.Id(n.name)), std::to_string(st.Id(n.op)),
        std::to_string(st.Id(n.canonical)), std::to_string(st.Id(n.args)), std::to_string(st.Id(n.dtype)),
        std::to_string(st.Id(n.shape)), std::to_string(st.Id(n.file)), std::to_string(n.line),
        std::to_string((n.duration_ns + 50) / 100)};
    std::string ins = "[";
    for (size_t k = 0; k < n.inputs.size(); ++k) ins += (k ? "," : "") + std::to_string(n.inputs[k]);
    f.push_back(ins + "]");
    std::string cs = "[";
    for (size_t k = 0; k < n.consts.size(); ++k) {
      auto [it, inserted] = const_index.emplace(n.consts[k], static_cast<int>(const_index.size()));
      if (inserted) {
        if (!consts.empty()) consts.push_back(',');
        consts += "[" + std::to_string(st.Id(vm.const_names[n.consts[k]])) + "," +
                  std::to_string(st.Id(vm.const_types[n.consts[k]])) + "]";
      }
      cs += (k ? "," : "") + std::to_string(it->second);
    }
    f.push_back(cs + "]");
    if (diff) {
      f.push_back(std::to_string(static_cast<int>(diff->status[i])));
      f.push_back(std::to_string(st.Id(diff->before[i])));
    }
    size_t keep = f.size();
    while (keep > 3 && (f[keep - 1] == "0" || f[keep - 1] == "[]")) --keep;
    nodes.push_back('[');
    for (size_t k = 0; k < keep; ++k) {
      if (k) nodes.push_back(',');
      nodes += f[k];
    }
    nodes.push_back(']');
  }
  std::string out = "{\"v\":1,\"title\":";
  AppendJsonString(vm.name, &out);
  if (diff) {
    out += ",\"diff\":{\"a\":";
    AppendJsonString(diff->a_name, &out);
    out += ",\"b\":";
    AppendJsonString(diff->b_name, &out);
    out += ",\"same\":" + std::to_string(diff->same) + ",\"added\":" + std::to_string(diff->added) +
           ",\"removed\":" + std::to_string(diff->removed) + ",\"changed\":" + std::to_string(diff->changed) + "}";
  }
  out += ",\"S\":";
  st.AppendJson(&out);
  out += ",\"G\":[" + groups + "],\"C\":[" + consts + "],\"N\":[";
  out += nodes;
  out += "]}";
  return out;
}

void ReplaceOnce(std::string* s, std::string_view marker, std::string_view with) {
  const size_t at = s->find(marker);
  if (at != std::string::npos) s->replace(at, marker.size(), with);
}

}  // namespace

std::string ViewModelToHtml(const ViewModel& vm, const GraphDiff* diff) {
  std::string html(ViewerHtmlTemplate());
  // The data is inserted last: it may be large, and nothing must be searched for inside it.
  ReplaceOnce(&html, "/*IVY_TITLE*/", HtmlText((diff ? "diff: " : "") + vm.name + " - ivytrace"));
  ReplaceOnce(&html, "/*IVY_CSS*/", ViewerCss());
  ReplaceOnce(&html, "/*IVY_JS*/", ViewerJs());
  ReplaceOnce(&html, "/*IVY_DATA*/", DataJson(vm, diff));
  return html;
}

}  // namespace ivytrace
