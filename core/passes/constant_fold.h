// Constant folding ("array caching" in the seeds): an op whose tensor inputs were all constants
// when the program ran (the recorder flags it FOLDABLE_OP and stores its outputs) is replaced by
// those stored values, so the replay does not compute it again. Folding is transitive: in
// topological order, a node folds when its inputs are constants or outputs of folded nodes.
//
// Never folded: ops whose result the region returns (the caller gets a fresh tensor on every
// call, never the plan's own constant, which it could then change), ops that write
// caller-visible memory in place (a parameter or an input: that is
// an effect, not a value), random or side-effecting ops, and ops whose results are later written
// in place by an op that stays (the constant would carry the write into the next replay).
// `PassOptions::fold_size_limit` leaves values larger than the limit to be computed.
#pragma once

#include "core/passes/pass.h"

namespace ivytrace {

class ConstantFold : public Pass {
 public:
  explicit ConstantFold(const PassOptions& options) : size_limit_(options.fold_size_limit) {}
  std::string_view name() const override { return "constant-fold"; }
  std::string_view description() const override {
    return "replace ops that read only constants by the values the recorder stored (array caching)";
  }
  Status Run(Graph* graph, PassResult* result) override;

 private:
  uint64_t size_limit_;
};

}  // namespace ivytrace
