// The named lowering functions (see FindLowering in lowering_context.h) and helpers they share.
// Each returns Unsupported with a one-line reason when a call cannot be expressed in ONNX.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/export/onnx/lowering_context.h"

namespace ivytrace {
namespace onnx_export {

// lowerings.cc: elementwise and simple ops.
Status LowerBinary(const Node& node, const BoundCall& call, LoweringContext& ctx);
Status LowerGelu(const Node& node, const BoundCall& call, LoweringContext& ctx);
Status LowerSoftmax(const Node& node, const BoundCall& call, LoweringContext& ctx);
Status LowerIdentity(const Node& node, const BoundCall& call, LoweringContext& ctx);
Status LowerDropout(const Node& node, const BoundCall& call, LoweringContext& ctx);
Status LowerFactory(const Node& node, const BoundCall& call, LoweringContext& ctx);

// lowerings_nn.cc: layers.
Status LowerLinear(const Node& node, const BoundCall& call, LoweringContext& ctx);
Status LowerConv2d(const Node& node, const BoundCall& call, LoweringContext& ctx);
Status LowerMaxPool2d(const Node& node, const BoundCall& call, LoweringContext& ctx);
Status LowerAvgPool2d(const Node& node, const BoundCall& call, LoweringContext& ctx);
Status LowerAdaptiveAvgPool2d(const Node& node, const BoundCall& call, LoweringContext& ctx);
Status LowerBatchNorm(const Node& node, const BoundCall& call, LoweringContext& ctx);
Status LowerLayerNorm(const Node& node, const BoundCall& call, LoweringContext& ctx);

// lowerings_tensor.cc: shape and indexing ops, reductions.
Status LowerFlatten(const Node& node, const BoundCall& call, LoweringContext& ctx);
Status LowerReshape(const Node& node, const BoundCall& call, LoweringContext& ctx);
Status LowerTranspose(const Node& node, const BoundCall& call, LoweringContext& ctx);
Status LowerPermute(const Node& node, const BoundCall& call, LoweringContext& ctx);
Status LowerConcat(const Node& node, const BoundCall& call, LoweringContext& ctx);
Status LowerGetitem(const Node& node, const BoundCall& call, LoweringContext& ctx);
Status LowerReduce(const Node& node, const BoundCall& call, LoweringContext& ctx);
Status LowerMaskedFill(const Node& node, const BoundCall& call, LoweringContext& ctx);

// --- shared helpers ------------------------------------------------------------------------------
// The node's single tensor result, or Unsupported.
Status SingleResult(const Node& node, ValueId* out);
// The tensor bound to `param`, or Unsupported naming the parameter.
Status TensorParam(const BoundCall& call, const char* param, ValueId* out);
// Maps a negative axis into [0, rank); Unsupported when out of range.
Status NormalizeAxis(int64_t axis, int rank, int64_t* out);
// A dtype argument (torch.float32 as a dtype or a symbol); nullopt for None or anything else.
std::optional<v1::DType> ArgDType(const v1::Arg& arg);

}  // namespace onnx_export
}  // namespace ivytrace
