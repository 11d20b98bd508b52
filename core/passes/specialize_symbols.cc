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

Status SpecializeSymbols(Graph* graph, size_t* replaced, std::vector<v1::Guard>* moved_guards) {
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
    else moved_guards->push_back(std::move(guard));
  }
  graph->guards = std::move(kept);
  return Status::Ok();
}

namespace {
bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

bool DropInputShapeGuards(Graph* graph) {
  std::vector<v1::Guard> kept;
  bool shapes = false;
  for (auto& guard : graph->guards) {
    const ValueId v = guard.tensor().value();
    const bool input = v < graph->values.size() && graph->values[v].kind == v1::INPUT;
    if (input && (EndsWith(guard.op(), ".dim") || EndsWith(guard.op(), ".ndim"))) continue;
    if (input && EndsWith(guard.op(), ".shape")) {
      shapes = true;
      continue;
    }
    kept.push_back(std::move(guard));
  }
  graph->guards = std::move(kept);
  return shapes;
}

namespace {

// Whether symbolic value `v` is computed only from dims the exported model declares static (every
// input dim, but dim 0 when `dynamic_dim0`), so that its value is the recorded one on every input
// the model accepts.
bool FromStaticDims(const Graph& g, ValueId v, bool dynamic_dim0, int depth = 0) {
  if (v >= g.values.size() || depth > 64) return false;
  const Value& val = g.values[v];
  if (val.kind == v1::CONSTANT_VALUE) return true;
  if (val.kind != v1::NODE_OUTPUT || val.producer < 0) return false;
  const Node& n = g.nodes[val.producer];
  if (n.op == "ivytrace.sym.size") {
    if (n.args.size() < 2 || !n.args[0].has_tensor() || n.args[1].kind_case() != v1::Arg::kI) return false;
    const Value& x = g.values[n.args[0].tensor().value()];
    if (x.kind != v1::INPUT) return false;
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    int64_t d = n.args[1].i();
    if (d < 0) d += rank;
    return d >= 0 && d < rank && !(dynamic_dim0 && d == 0);
  }
  if (n.op == "ivytrace.sym.dim") return n.args.size() == 1 && n.args[0].has_tensor() &&
                                         g.values[n.args[0].tensor().value()].kind == v1::INPUT;
  if (n.op == "ivytrace.sym.numel") {
    return !dynamic_dim0 && n.args.size() == 1 && n.args[0].has_tensor() &&
           g.values[n.args[0].tensor().value()].kind == v1::INPUT;
  }
  if (n.op.rfind("ivytrace.sym.", 0) != 0) return false;
  for (ValueId in : n.inputs) {
    if (!FromStaticDims(g, in, dynamic_dim0, depth + 1)) return false;
  }
  return true;
}

}  // namespace

void DropGuardsOnStaticDims(Graph* graph, bool dynamic_dim0) {
  std::vector<v1::Guard> kept;
  for (auto& guard : graph->guards) {
    const ValueId v = guard.tensor().value();
    if (IsSymbolic(*graph, v) && FromStaticDims(*graph, v, dynamic_dim0)) continue;
    kept.push_back(std::move(guard));
  }
  graph->guards = std::move(kept);
}

}  // namespace ivytrace
