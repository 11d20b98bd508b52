// onnxruntime's CPU provider has no float64 kernel for some ONNX ops (Atan, Asin, Acos, Sinh,
// Cosh, Tan, Asinh, Acosh, Atanh, Erf, Softplus, Softsign, Elu, Selu, HardSigmoid): a model using
// one on float64 data does not load ("Could not find an implementation"). NumPy computes in
// float64 by default, so NumPy programs meet them first.
#pragma once

#include <onnx/onnx_pb.h>

#include "core/export/onnx/simplify_exported.h"

namespace ivytrace {
namespace onnx_export {

// Rewrites each such node whose input is float64 (`inferred`: ONNX shape inference's types):
//  - into float64 ops onnxruntime has, where the function has an exact formula: sinh, cosh, tan,
//    asinh, acosh, atanh, softplus, softsign, elu, selu, hard sigmoid;
//  - else computed in float32 and cast back (Atan, Asin, Acos, Erf): their results are bounded
//    (|y| <= pi), so float32 keeps about 7 significant digits of them, not float64's 16.
// Returns how many nodes were rewritten.
int ComputeWithoutMissingFloat64Kernels(onnx::GraphProto* graph, const InferredTypes& inferred);

}  // namespace onnx_export
}  // namespace ivytrace
