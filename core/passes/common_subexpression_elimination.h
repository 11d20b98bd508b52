// Common-subexpression elimination: a pure op called again with the same arguments (the same
// values, after earlier merges, and the same Python literals) is dropped, and what read its
// results reads the first call's results instead.
//
// Only ops that schemas/ marks pure (not random, no side effect, writing nothing), that wrote
// nothing when recorded, and that read a tensor: factories (torch.tensor([2]) twice) stay as
// written — they are cheap, and array caching folds them anyway. Memory is checked too, because the graph is SSA over values but a replay
// runs on tensors: no merge when a result of either call is ever written in place (the write
// would reach the other call's readers), when both results are region outputs (the caller would
// get one tensor twice), or when memory an argument lives in is written between the two calls
// (a view read twice may see different data).
#pragma once

#include "core/passes/pass.h"

namespace ivytrace {

class CommonSubexpressionElimination : public Pass {
 public:
  std::string_view name() const override { return "cse"; }
  std::string_view description() const override {
    return "merge repeated pure ops with the same arguments into their first call";
  }
  Status Run(Graph* graph, PassResult* result) override;
};

}  // namespace ivytrace
