#include "core/passes/dead_code_elimination.h"

#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/passes/recorded_values.h"

namespace ivytrace {
namespace {

bool HasVisibleEffect(const Node& n, LazyCallerVisibleStorage* visible) {
  if (n.schema && n.schema->side_effect()) return true;
  if (!n.writes) return false;
  for (const auto& m : n.mutated) {
    if (visible->Contains(m.storage())) return true;
  }
  return false;
}

// A write's new version of an alias the node did not read (NumPy lists every array on the written
// memory: `u = x[0]; t = swapaxes(x); t += 1; u * 2`) is the same memory as that alias's earlier
// version, and the plan replays it as that array (the write went through the memory): so while the
// new version is read, the earlier one must be made. Tensor id -> (version, value), built on the
// first such write.
class EarlierVersions {
 public:
  std::optional<ValueId> Before(const Graph& g, uint64_t tensor_id, uint32_t version) {
    if (!built_) {
      built_ = true;
      for (ValueId v = 0; v < g.values.size(); ++v) {
        const Value& val = g.values[v];
        if (val.tensor_id) by_tensor_[val.tensor_id].emplace_back(val.tensor_version, v);
      }
    }
    auto it = by_tensor_.find(tensor_id);
    if (it == by_tensor_.end()) return std::nullopt;
    std::optional<std::pair<uint32_t, ValueId>> best;
    for (const auto& e : it->second) {
      if (e.first < version && (!best || e.first > best->first)) best = e;
    }
    if (!best) return std::nullopt;
    return best->second;
  }

 private:
  bool built_ = false;
  std::unordered_map<uint64_t, std::vector<std::pair<uint32_t, ValueId>>> by_tensor_;
};

void KeepWrittenAliases(const Graph& g, const Node& n, std::vector<char>* live, EarlierVersions* earlier) {
  for (const auto& m : n.mutated) {
    if (!live->at(m.value())) continue;
    bool read = false;
    for (ValueId in : n.inputs) read = read || g.values[in].tensor_id == m.id();
    if (read) continue;
    if (const auto before = earlier->Before(g, m.id(), m.version())) (*live)[*before] = 1;
  }
}

}  // namespace

Status DeadCodeElimination::Run(Graph* g, PassResult* result) {
  if (g->outputs.kind_case() == v1::Arg::KIND_NOT_SET) return Status::Ok();
  LazyCallerVisibleStorage visible(*g);
  std::vector<char> live(g->values.size(), 0);
  EarlierVersions earlier;
  for (ValueId v : g->OutputValues()) live[v] = 1;
  // Guarded values are checked on replay: what computes them stays.
  for (const auto& guard : g->guards) live[guard.tensor().value()] = 1;
  for (size_t i = g->nodes.size(); i-- > 0;) {
    g->Prefetch(i - Graph::kPrefetchDistance);
    Node& n = g->nodes[i];
    if (n.erased) continue;
    bool keep = HasVisibleEffect(n, &visible);
    for (ValueId out : n.outputs) keep = keep || live[out];
    if (!keep) {
      n.erased = true;
      ++result->nodes_removed;
      continue;
    }
    for (ValueId in : n.inputs) live[in] = 1;
    if (n.writes) KeepWrittenAliases(*g, n, &live, &earlier);
  }
  return Status::Ok();
}

}  // namespace ivytrace
