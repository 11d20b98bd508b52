#include "core/passes/bake_generators.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/passes/recorded_values.h"
#include "core/schema/binding.h"

namespace ivytrace {
namespace {

// Dropout with training=False is marked random by its schema but draws nothing: it is left for
// simplify (a model in eval mode must not be refused for it).
bool IsRandom(const Node& n) {
  if (!(n.schema && n.schema->random()) && !(n.flags & v1::RANDOM)) return false;
  BoundCall call;
  if (n.canonical() == "dropout" && BoundCall::Bind(n, &call).ok() && call.Bool("training") == false) return false;
  return true;
}

std::string Where(const Node& n) { return "'" + n.op + "' at " + n.loc.file() + ":" + std::to_string(n.loc.line()); }

}  // namespace

Status BakeGenerators::Run(Graph* g, PassResult* result) {
  const auto visible = CallerVisibleStorage(*g);
  // from_input: the value depends on a region input's data. Symbolic ints (SYM_INT/SYM_BOOL) and
  // what is made from them alone (torch.empty(x.shape)) depend only on shapes: `shapes_of` lists
  // the symbolic values each such value was made from.
  std::vector<char> from_input(g->values.size(), 0);
  std::vector<std::vector<ValueId>> shapes_of(g->values.size());
  auto symbolic = [&](ValueId v) { return g->values[v].dtype == v1::SYM_INT || g->values[v].dtype == v1::SYM_BOOL; };
  for (ValueId v : g->InputValues()) from_input[v] = !symbolic(v);
  std::vector<char> bake(g->nodes.size(), 0);
  std::vector<std::pair<size_t, std::vector<ValueId>>> shape_guards;  // node -> symbolic ints it was shaped by
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    const Node& n = g->nodes[i];
    if (n.erased) continue;
    bool reads_input = false;
    std::vector<ValueId> shapes;
    for (ValueId in : n.inputs) {
      if (symbolic(in)) {
        if (std::find(shapes.begin(), shapes.end(), in) == shapes.end()) shapes.push_back(in);
        continue;   // a shape, never the caller's data
      }
      reads_input = reads_input || from_input[in];
      for (ValueId s : shapes_of[in]) {
        if (std::find(shapes.begin(), shapes.end(), s) == shapes.end()) shapes.push_back(s);
      }
    }
    if (!IsRandom(n)) {
      for (ValueId out : n.outputs) {
        from_input[out] = reads_input && !symbolic(out);
        if (!reads_input && !symbolic(out)) shapes_of[out] = shapes;
      }
      continue;
    }
    const std::string cannot = "bake-generators: cannot bake random op " + Where(n) + ": ";
    if (reads_input) {
      return Status::InvalidArgument(cannot + "it reads a region input, so its values depend on the caller's "
                                     "data (run without --bake-generators to keep it)");
    }
    // Shapes computed from a region input (torch.rand(x.shape), torch.empty(x.shape).normal_())
    // fix only the draw's shape: baking specializes on them, and a guard checks each on replay.
    for (ValueId s : shapes) {
      if (!RecordedScalar(*g, s)) {
        return Status::InvalidArgument(cannot + "the trace holds no recorded value for the shape it reads");
      }
    }
    if (!shapes.empty()) shape_guards.emplace_back(i, std::move(shapes));
    for (const auto& m : n.mutated) {
      if (visible.count(m.storage())) {
        return Status::InvalidArgument(cannot + "it writes a region input or parameter in place");
      }
    }
    if (!HasRecordedOutputs(*g, n)) {
      return Status::InvalidArgument(cannot + "the trace holds no recorded value for its result");
    }
    bake[i] = 1;
  }
  const auto writers = LaterInPlaceWriters(*g, bake);
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    if (bake[i] && writers[i] >= 0) {
      return Status::InvalidArgument("bake-generators: cannot bake random op " + Where(g->nodes[i]) +
                                     ": its result is later written in place by " + Where(g->nodes[writers[i]]) +
                                     " (run without --bake-generators to keep it)");
    }
  }
  for (const auto& [i, values] : shape_guards) {
    for (ValueId v : values) {
      v1::Guard guard;
      guard.mutable_tensor()->set_value(v);
      guard.mutable_tensor()->set_id(g->values[v].tensor_id);
      guard.mutable_tensor()->set_storage(g->values[v].storage);
      guard.set_op(g->values[v].dtype == v1::SYM_BOOL ? "ivytrace.sym.__bool__" : "ivytrace.sym.__index__");
      const int64_t observed = *RecordedScalar(*g, v);
      if (g->values[v].dtype == v1::SYM_BOOL) guard.mutable_observed()->set_b(observed != 0);
      else guard.mutable_observed()->set_i(observed);
      *guard.mutable_loc() = g->nodes[i].loc;
      g->guards.push_back(std::move(guard));
    }
  }
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    if (!bake[i]) continue;
    ReplaceByRecordedValues(g, i);
    ++result->nodes_removed;
  }
  return Status::Ok();
}

}  // namespace ivytrace
