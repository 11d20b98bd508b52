// Dead-code elimination from the region's outputs.
//
// A node is kept when a value it defines reaches the region's result or a guard (a value the
// program's control flow depended on, checked again on replay), or when it has an effect
// beyond its outputs: its schema marks a side effect, or it writes (in place) a tensor whose
// memory belongs to a region input or a constant (parameter/buffer) — that is state the caller
// can see. Which ops write is what the recorder observed and schemas/ declares, never a guess
// from the op's name (torch.fx's DCE drops in-place methods that way: pytorch issue #68301).
// A graph with no declared result (a trace without regions) is left untouched.
#pragma once

#include "core/passes/pass.h"

namespace ivytrace {

class DeadCodeElimination : public Pass {
 public:
  std::string_view name() const override { return "dce"; }
  std::string_view description() const override {
    return "remove ops whose results reach no region output and that change no visible state";
  }
  Status Run(Graph* graph, PassResult* result) override;
};

}  // namespace ivytrace
