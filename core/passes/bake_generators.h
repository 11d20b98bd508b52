// Baking generators (the seeds' include_generators=False): random ops are replaced by the values
// the recorder stored for their outputs, so every replay sees the recorded draws.
//
// Refused, with InvalidArgument naming the op and its file:line: a random op that reads a region
// input (directly or through other ops: torch.rand_like(x), dropout on x — its draw depends on
// the caller's data), one that writes caller-visible memory in place, one whose result a later
// op writes in place (a baked constant would carry that write into the next replay), and one
// whose value the trace does not hold. Not in the default pipeline: `--bake-generators`.
#pragma once

#include "core/passes/pass.h"

namespace ivytrace {

class BakeGenerators : public Pass {
 public:
  std::string_view name() const override { return "bake-generators"; }
  std::string_view description() const override {
    return "replace random ops by the values they produced when recorded (include_generators=False)";
  }
  Status Run(Graph* graph, PassResult* result) override;
};

}  // namespace ivytrace
