// Folds an inference batch norm into the conv2d before it:
//   y = batch_norm(conv2d(x, W, b), mean, var, gamma, beta, training=False, eps)
//   -> y = conv2d(x, W', b')  with  s = gamma / sqrt(var + eps),  W' = W * s[o],
//                                   b' = (b - mean) * s + beta  (b = 0 when the conv has none).
// Only when W, b, mean, var, gamma, beta are float32 constants (parameters/buffers), the conv's
// result has no other reader, is not returned and its memory is never written in place. The new
// weight and bias are computed in double precision, cast to float32, and named
// "<conv>.weight.folded_bn" / "<conv>.bias.folded_bn" (<conv> = W's name without ".weight"). This changes rounding: replay matches within
// floating-point tolerance, not bit for bit.
#pragma once

#include "core/passes/pass.h"

namespace ivytrace {

class FoldConvBatchNorm : public Pass {
 public:
  std::string_view name() const override { return "fold-conv-bn"; }
  std::string_view description() const override {
    return "fold batch_norm(training=False) with constant stats into the conv2d before it";
  }
  Status Run(Graph* graph, PassResult* result) override;
};

}  // namespace ivytrace
