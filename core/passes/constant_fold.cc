#include "core/passes/constant_fold.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

#include "core/passes/recorded_values.h"

namespace ivytrace {

Status ConstantFold::Run(Graph* g, PassResult* result) {
  // Only ops the recorder saw reading constants alone are candidates; a graph without any (the
  // usual case once it has been folded) is done at once (the op census).
  if (!g->MayHoldFlags(v1::FOLDABLE_OP)) return Status::Ok();
  const auto visible = CallerVisibleStorage(*g);
  const std::vector<ValueId> outputs = g->OutputValues();
  const std::unordered_set<ValueId> region_outputs(outputs.begin(), outputs.end());
  auto candidate = [&](const Node& n) {
    if (n.erased || !(n.flags & v1::FOLDABLE_OP)) return false;
    for (ValueId out : n.outputs) {
      if (region_outputs.count(out)) return false;
    }
    if (n.schema && (n.schema->random() || n.schema->side_effect())) return false;
    for (const auto& m : n.mutated) {
      if (visible.count(m.storage())) return false;
    }
    return HasRecordedOutputs(*g, n, size_limit_);
  };
  // A node whose result a later op writes in place is blocked; blocking can only grow, so this
  // settles after a few rounds.
  std::vector<char> blocked(g->nodes.size(), 0);
  std::vector<char> fold;
  while (true) {
    std::vector<char> constant(g->values.size(), 0);
    for (size_t v = 0; v < g->values.size(); ++v) constant[v] = g->values[v].kind == v1::CONSTANT_VALUE;
    fold.assign(g->nodes.size(), 0);
    for (size_t i = 0; i < g->nodes.size(); ++i) {
      const Node& n = g->nodes[i];
      if (!candidate(n)) continue;
      bool all_constant = true;
      for (ValueId in : n.inputs) all_constant = all_constant && constant[in];
      if (!all_constant) continue;
      // A blocked node still computes the same value on every replay: what reads it may fold.
      for (ValueId out : n.outputs) constant[out] = 1;
      fold[i] = !blocked[i];
    }
    const auto writers = LaterInPlaceWriters(*g, fold);
    bool again = false;
    for (size_t i = 0; i < g->nodes.size(); ++i) {
      if (fold[i] && writers[i] >= 0) blocked[i] = 1, again = true;
    }
    if (!again) break;
  }
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    if (!fold[i]) continue;
    ReplaceByRecordedValues(g, i);
    ++result->nodes_removed;
  }
  return Status::Ok();
}

}  // namespace ivytrace
