#include "core/passes/dead_code_elimination.h"

#include <unordered_set>
#include <vector>

namespace ivytrace {
namespace {

// Storage ids of memory the caller owns: region inputs and constants (parameters, buffers).
std::unordered_set<uint64_t> VisibleStorage(const Graph& g) {
  std::unordered_set<uint64_t> out;
  for (const Value& v : g.values) {
    if ((v.kind == v1::INPUT || v.kind == v1::CONSTANT_VALUE) && v.storage != 0) out.insert(v.storage);
  }
  return out;
}

bool HasVisibleEffect(const Node& n, const std::unordered_set<uint64_t>& visible) {
  if (n.schema && n.schema->side_effect()) return true;
  for (const auto& m : n.mutated) {
    if (visible.count(m.storage())) return true;
  }
  return false;
}

}  // namespace

Status DeadCodeElimination::Run(Graph* g, PassResult* result) {
  if (g->outputs.kind_case() == v1::Arg::KIND_NOT_SET) return Status::Ok();
  const auto visible = VisibleStorage(*g);
  std::vector<char> live(g->values.size(), 0);
  for (ValueId v : g->OutputValues()) live[v] = 1;
  // Guarded values are checked on replay: what computes them stays.
  for (const auto& guard : g->guards) live[guard.tensor().value()] = 1;
  for (size_t i = g->nodes.size(); i-- > 0;) {
    Node& n = g->nodes[i];
    if (n.erased) continue;
    bool keep = HasVisibleEffect(n, visible);
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
