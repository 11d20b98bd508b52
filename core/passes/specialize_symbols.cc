#include "core/passes/specialize_symbols.h"

#include <string>

#include "core/passes/recorded_values.h"

namespace ivytrace {
namespace {

bool IsSymbolic(const Graph& g, ValueId v) {
  return v < g.values.size() && (g.values[v].dtype == v1::SYM_INT || g.values[v].dtype == v1::SYM_BOOL);
}

// Replaces symbolic references inside `arg` (any depth) by their recorded values.
Status Specialize(const Graph& g, v1::Arg* arg, size_t* replaced) {
  switch (arg->kind_case()) {
    case v1::Arg::kTensor: {
      const ValueId v = arg->tensor().value();
      if (!IsSymbolic(g, v)) return Status::Ok();
      const auto x = RecordedScalar(g, v);
      if (!x) {
        return Status::Unsupported("symbolic value %" + std::to_string(v) +
                                   " has no recorded value (the trace holds no OBSERVED record for it)");
      }
      if (g.values[v].dtype == v1::SYM_BOOL) arg->set_b(*x != 0);
      else arg->set_i(*x);
      ++*replaced;
      return Status::Ok();
    }
    case v1::Arg::kList:
      for (auto& a : *arg->mutable_list()->mutable_items()) IVY_RETURN_IF_ERROR(Specialize(g, &a, replaced));
      return Status::Ok();
    case v1::Arg::kTuple:
      for (auto& a : *arg->mutable_tuple()->mutable_items()) IVY_RETURN_IF_ERROR(Specialize(g, &a, replaced));
      return Status::Ok();
    case v1::Arg::kDict:
      for (auto& a : *arg->mutable_dict()->mutable_values()) IVY_RETURN_IF_ERROR(Specialize(g, &a, replaced));
      return Status::Ok();
    case v1::Arg::kSlice: {
      auto* s = arg->mutable_slice();
      if (s->has_start()) IVY_RETURN_IF_ERROR(Specialize(g, s->mutable_start(), replaced));
      if (s->has_stop()) IVY_RETURN_IF_ERROR(Specialize(g, s->mutable_stop(), replaced));
      if (s->has_step()) IVY_RETURN_IF_ERROR(Specialize(g, s->mutable_step(), replaced));
      return Status::Ok();
    }
    default: return Status::Ok();
  }
}

}  // namespace

Status SpecializeSymbols(Graph* graph, size_t* replaced) {
  *replaced = 0;
  for (Node& n : graph->nodes) {
    if (n.erased || n.op.rfind("ivytrace.sym.", 0) == 0) continue;
    const size_t before = *replaced;
    for (auto& a : n.args) IVY_RETURN_IF_ERROR(Specialize(*graph, &a, replaced));
    for (auto& kw : n.kwargs) IVY_RETURN_IF_ERROR(Specialize(*graph, kw.mutable_value(), replaced));
    if (*replaced != before) {
      Graph::IndexNode(&n);
      // Its tensor inputs were constants and it read shapes, now constants too: constant-fold
      // may replace it by its recorded (OBSERVED) outputs.
      if (n.flags & v1::SHAPE_FOLDABLE) n.flags |= v1::FOLDABLE_OP;
    }
  }
  graph->Recount();
  std::vector<v1::Guard> kept;
  for (auto& guard : graph->guards) {
    if (!IsSymbolic(*graph, guard.tensor().value())) kept.push_back(std::move(guard));
  }
  graph->guards = std::move(kept);
  return Status::Ok();
}

}  // namespace ivytrace
