#include "core/passes/dead_code_elimination.h"

#include "core/passes/recorded_values.h"

#include <optional>
#include <unordered_set>
#include <vector>

namespace ivytrace {
namespace {

// Storage ids of memory the caller owns (region inputs, parameters, buffers), worked out on the
// first in-place write: graphs without any never scan their values for it.
class VisibleStorage {
 public:
  explicit VisibleStorage(const Graph& g) : g_(g) {}
  bool Contains(uint64_t storage) {
    if (!set_) set_ = CallerVisibleStorage(g_);
    return set_->count(storage) > 0;
  }

 private:
  const Graph& g_;
  std::optional<std::unordered_set<uint64_t>> set_;
};

bool HasVisibleEffect(const Node& n, VisibleStorage* visible) {
  if (n.schema && n.schema->side_effect()) return true;
  for (const auto& m : n.mutated) {
    if (visible->Contains(m.storage())) return true;
  }
  return false;
}

}  // namespace

Status DeadCodeElimination::Run(Graph* g, PassResult* result) {
  if (g->outputs.kind_case() == v1::Arg::KIND_NOT_SET) return Status::Ok();
  VisibleStorage visible(*g);
  std::vector<char> live(g->values.size(), 0);
  for (ValueId v : g->OutputValues()) live[v] = 1;
  // Guarded values are checked on replay: what computes them stays.
  for (const auto& guard : g->guards) live[guard.tensor().value()] = 1;
  for (size_t i = g->nodes.size(); i-- > 0;) {
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
  }
  return Status::Ok();
}

}  // namespace ivytrace
