#include "core/passes/dead_code_elimination.h"

#include <unordered_set>
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

}  // namespace

Status DeadCodeElimination::Run(Graph* g, PassResult* result) {
  if (g->outputs.kind_case() == v1::Arg::KIND_NOT_SET) return Status::Ok();
  LazyCallerVisibleStorage visible(*g);
  std::vector<char> live(g->values.size(), 0);
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
  }
  return Status::Ok();
}

}  // namespace ivytrace
