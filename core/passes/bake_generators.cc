#include "core/passes/bake_generators.h"

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
  std::vector<char> from_input(g->values.size(), 0);
  for (ValueId v : g->InputValues()) from_input[v] = 1;
  std::vector<char> bake(g->nodes.size(), 0);
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    const Node& n = g->nodes[i];
    if (n.erased) continue;
    bool reads_input = false;
    for (ValueId in : n.inputs) reads_input = reads_input || from_input[in];
    if (!IsRandom(n)) {
      for (ValueId out : n.outputs) from_input[out] = reads_input;
      continue;
    }
    const std::string cannot = "bake-generators: cannot bake random op " + Where(n) + ": ";
    if (reads_input) {
      return Status::InvalidArgument(cannot + "it reads a region input, so its values depend on the caller's "
                                     "data (run without --bake-generators to keep it)");
    }
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
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    if (!bake[i]) continue;
    ReplaceByRecordedValues(g, i);
    ++result->nodes_removed;
  }
  return Status::Ok();
}

}  // namespace ivytrace
