#include "core/viz/graph_diff.h"

#include <functional>
#include <map>
#include <unordered_map>

namespace ivytrace {
namespace {

// Arguments with tensor references anonymised: value ids differ between two graphs.
std::string ArgsShape(const std::string& args) {
  std::string out;
  for (size_t i = 0; i < args.size(); ++i) {
    out += args[i];
    if (args[i] == '%') {
      while (i + 1 < args.size() && args[i + 1] >= '0' && args[i + 1] <= '9') ++i;
    }
  }
  return out;
}

std::string ConstNames(const ViewModel& vm, const ViewNode& n) {
  std::string s;
  for (ValueId c : n.consts) s += (s.empty() ? "" : ", ") + vm.const_names[c] + ": " + vm.const_types[c];
  return s;
}

std::string Describe(const ViewModel& vm, const ViewNode& n) {
  std::string s = n.op + "(" + n.args + ") -> " + n.dtype + n.shape;
  const std::string consts = ConstNames(vm, n);
  if (!consts.empty()) s += "; reads " + consts;
  return s;
}

// "group path|op|k" for the k-th node of that op in that group; inputs by name, outputs by index.
std::vector<std::string> MatchKeys(const ViewModel& vm) {
  std::vector<std::string> keys(vm.nodes.size());
  std::map<std::pair<int, std::string>, int> seen;
  int outputs = 0;
  for (size_t i = 0; i < vm.nodes.size(); ++i) {
    const ViewNode& n = vm.nodes[i];
    if (n.kind == ViewNode::kInput) {
      keys[i] = "in|" + n.op;
    } else if (n.kind == ViewNode::kOutput) {
      keys[i] = "out|" + std::to_string(outputs++);
    } else {
      const int k = seen[{n.group, n.op}]++;
      keys[i] = "op|" + vm.groups[n.group].path + "|" + n.op + "|" + std::to_string(k);
    }
  }
  return keys;
}

bool Differs(const ViewModel& a, const ViewNode& x, const ViewModel& b, const ViewNode& y) {
  if (ArgsShape(x.args) != ArgsShape(y.args) || x.dtype != y.dtype || x.shape != y.shape) return true;
  return ConstNames(a, x) != ConstNames(b, y);
}

}  // namespace

GraphDiff DiffViewModels(const ViewModel& a, const ViewModel& b) {
  GraphDiff d;
  d.a_name = a.name;
  d.b_name = b.name;
  d.merged = b;
  const std::vector<std::string> ka = MatchKeys(a), kb = MatchKeys(b);
  std::unordered_map<std::string, int> in_b;
  for (size_t i = 0; i < kb.size(); ++i) in_b[kb[i]] = static_cast<int>(i);
  d.status.assign(b.nodes.size(), DiffStatus::kAdded);
  d.before.assign(b.nodes.size(), "");
  std::vector<int> a_to_merged(a.nodes.size(), -1);
  for (size_t i = 0; i < ka.size(); ++i) {
    auto it = in_b.find(ka[i]);
    if (it == in_b.end()) continue;
    const int j = it->second;
    a_to_merged[i] = j;
    if (Differs(a, a.nodes[i], b, b.nodes[j])) {
      d.status[j] = DiffStatus::kChanged;
      d.before[j] = Describe(a, a.nodes[i]);
    } else {
      d.status[j] = DiffStatus::kSame;
    }
  }
  // A's removed nodes go into the group of the same path in B, made when B has none.
  std::unordered_map<std::string, int> group_by_path;
  for (size_t g = 0; g < d.merged.groups.size(); ++g) group_by_path[d.merged.groups[g].path] = static_cast<int>(g);
  std::function<int(int)> merged_group = [&](int ag) -> int {
    if (ag == 0) return 0;
    const ViewGroup& src = a.groups[ag];
    auto it = group_by_path.find(src.path);
    if (it != group_by_path.end()) return it->second;
    const int parent = merged_group(src.parent);
    ViewGroup g;
    g.parent = parent;
    g.name = src.name;
    g.path = src.path;
    g.scope = src.scope;
    d.merged.groups.push_back(std::move(g));
    const int id = static_cast<int>(d.merged.groups.size()) - 1;
    d.merged.groups[parent].groups.push_back(id);
    group_by_path[src.path] = id;
    return id;
  };
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    if (a_to_merged[i] >= 0) continue;
    ViewNode n = a.nodes[i];
    n.group = merged_group(a.nodes[i].group);
    n.name = "A:" + n.name;  // A's value ids would clash with B's names
    const std::string consts = ConstNames(a, a.nodes[i]);
    n.consts.clear();        // ids of A's constants mean nothing in B's model
    n.inputs.clear();
    for (int in : a.nodes[i].inputs) {
      if (a_to_merged[in] >= 0) n.inputs.push_back(a_to_merged[in]);
    }
    d.merged.nodes.push_back(std::move(n));
    const int id = static_cast<int>(d.merged.nodes.size()) - 1;
    a_to_merged[i] = id;
    d.merged.groups[d.merged.nodes[id].group].nodes.push_back(id);
    d.status.push_back(DiffStatus::kRemoved);
    d.before.push_back(consts.empty() ? "" : "reads " + consts);
  }
  for (DiffStatus s : d.status) {
    if (s == DiffStatus::kSame) ++d.same;
    if (s == DiffStatus::kAdded) ++d.added;
    if (s == DiffStatus::kRemoved) ++d.removed;
    if (s == DiffStatus::kChanged) ++d.changed;
  }
  return d;
}

}  // namespace ivytrace
