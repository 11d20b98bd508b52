// Algebraic and identity simplifications, as a table of rules (see simplify.cc): each rule
// matches one call and names the argument whose value the call's result can be replaced by
// (detach/contiguous/clone, dropout with training=False, x*1, x+0, x-0, x/1 with a Python
// scalar, reshape/view to the recorded shape). Readers of the result then read that argument
// and the call becomes dead.
//
// A rule only fires when the result has the argument's recorded dtype and shape (so type
// promotion and broadcasting are not changed), when neither tensor's memory is ever written in
// place (the two would then alias where the program had two tensors), and when the result is not
// a region output that would become (a view of) an input, a constant or another output (the
// caller would get an alias of its own tensor, of the plan's constant, or one tensor twice).
#pragma once

#include "core/passes/pass.h"

namespace ivytrace {

class Simplify : public Pass {
 public:
  std::string_view name() const override { return "simplify"; }
  std::string_view description() const override {
    return "forward the input of identity-like calls (detach, x*1, x+0, reshape to the same shape, ...)";
  }
  Status Run(Graph* graph, PassResult* result) override;
};

}  // namespace ivytrace
