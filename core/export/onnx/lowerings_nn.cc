// Layer lowerings: linear, conv2d, pooling, batch_norm.
#include <functional>

#include "core/export/onnx/lowerings.h"
#include "core/ir/arg.h"

namespace ivytrace {
namespace onnx_export {

namespace {

// Runs an NCHW op. torch also accepts unbatched CHW input: then the op runs on an Unsqueeze'd
// input and its output is squeezed back.
Status EmitNchw(LoweringContext& ctx, const char* what, ValueId x, ValueId result,
                const std::function<void(const std::string& in, const std::string& out)>& emit) {
  const int rank = ctx.Rank(x);
  if (rank == 4) {
    emit(ctx.In(x), ctx.Out(result));
    return Status::Ok();
  }
  if (rank == 3) {
    std::string batched_out = ctx.Temp("batched");
    emit(ctx.Unsqueeze(ctx.In(x), {0}), batched_out);
    ctx.Emit("Squeeze", {batched_out, ctx.Int64s({0})}, {ctx.Out(result)});
    return Status::Ok();
  }
  return Status::Unsupported(std::string(what) + " expects a 3-D or 4-D input, got rank " + std::to_string(rank));
}

// Ones or zeros of shape [n], as a `dtype` initializer (batch_norm without weight or bias).
}  // namespace

std::string Filled(LoweringContext& ctx, int64_t n, double value, v1::DType dtype, const char* hint) {
  onnx::TensorProto t;
  t.set_data_type(OnnxElemType(dtype));
  t.add_dims(n);
  std::string raw;
  (void)EncodeNumbers(std::vector<Number>(static_cast<size_t>(n), Number::Float(value)), dtype, &raw);
  t.set_raw_data(raw);
  return ctx.AddInitializer(std::move(t), hint);
}

Status LowerLinear(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, w, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "weight", &w));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (ctx.Rank(w) != 2) return Status::Unsupported("linear with a weight of rank " + std::to_string(ctx.Rank(w)));
  std::optional<ValueId> b;
  if (!call.IsNone("bias")) {
    b = call.Tensor("bias");
    if (!b) return Status::Unsupported("linear bias is not a tensor");
  }
  if (ctx.Rank(x) == 2) {
    std::vector<std::string> ins = {ctx.In(x), ctx.In(w)};
    if (b) ins.push_back(ctx.In(*b));
    auto* n = ctx.Emit("Gemm", ins, {ctx.Out(result)});
    SetAttr(n, "transB", int64_t{1});
    return Status::Ok();
  }
  // y = x @ W^T (+ b) for inputs of any other rank.
  onnx::NodeProto* t = nullptr;
  std::string wt = ctx.EmitTemp("Transpose", {ctx.In(w)}, &t);
  SetAttr(t, "perm", std::vector<int64_t>{1, 0});
  if (!b) {
    ctx.Emit("MatMul", {ctx.In(x), wt}, {ctx.Out(result)});
  } else {
    std::string y = ctx.EmitTemp("MatMul", {ctx.In(x), wt});
    ctx.Emit("Add", {y, ctx.In(*b)}, {ctx.Out(result)});
  }
  return Status::Ok();
}

namespace {

// The [n, L] matrix whose row i averages torch's adaptive window i over an axis of L items (L read
// when the model runs): window i is [floor(i L / n), ceil((i + 1) L / n)), so windows overlap where n
// does not divide L, as in torch. x @ P^T pools the last axis; P @ x the one before it.
std::string AdaptivePoolMatrix(LoweringContext& ctx, const std::string& x, int64_t axis, int64_t n, v1::DType d) {
  onnx::NodeProto* g = nullptr;
  const std::string len = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {x}), ctx.Scalar(Number::Int(axis), v1::INT64)}, &g);
  SetAttr(g, "axis", int64_t{0});
  std::vector<int64_t> rows(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) rows[static_cast<size_t>(i)] = i;
  const std::string i = ctx.Int64s(rows), nn = ctx.Scalar(Number::Int(n), v1::INT64);
  const std::string start = ctx.Unsqueeze(ctx.EmitTemp("Div", {ctx.EmitTemp("Mul", {i, len}), nn}), {1});
  const std::string next = ctx.EmitTemp("Mul", {ctx.EmitTemp("Add", {i, ctx.Scalar(Number::Int(1), v1::INT64)}), len});
  const std::string end = ctx.Unsqueeze(
      ctx.EmitTemp("Div", {ctx.EmitTemp("Add", {next, ctx.Scalar(Number::Int(n - 1), v1::INT64)}), nn}), {1});
  const std::string j = ctx.EmitTemp("Range", {ctx.Scalar(Number::Int(0), v1::INT64), len, ctx.Scalar(Number::Int(1), v1::INT64)});
  const std::string inside = ctx.EmitTemp("And", {ctx.EmitTemp("GreaterOrEqual", {j, start}), ctx.EmitTemp("Less", {j, end})});
  const std::string count = ctx.CastTo(ctx.EmitTemp("Sub", {end, start}), v1::INT64, d);
  return ctx.EmitTemp("Div", {ctx.CastTo(inside, v1::BOOL, d), count});
}

std::string TransposeMatrix(LoweringContext& ctx, const std::string& m) {
  onnx::NodeProto* t = nullptr;
  const std::string out = ctx.EmitTemp("Transpose", {m}, &t);
  SetAttr(t, "perm", std::vector<int64_t>{1, 0});
  return out;
}

}  // namespace

// adaptive_avg_pool1d(x, output_size) over the last axis of a (C, L) or (N, C, L) input. To 1 (Swin's
// pooler): the mean over L. To n: as adaptive_avg_pool2d, [..., L] -> [..., n, L / n] averaged over the
// last axis, L read when the model runs; an L that n does not divide fails in the Reshape (torch's
// windows would overlap there), and a recorded L it does not divide is refused.
Status LowerAdaptiveAvgPool1d(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const auto& shape = ctx.Shape(x);
  if (shape.size() != 2 && shape.size() != 3) {
    return Status::Unsupported("adaptive_avg_pool1d expects a 2-D or 3-D input, got rank " +
                               std::to_string(shape.size()));
  }
  const v1::Arg* os = call.Get("output_size");
  std::optional<int64_t> target = os ? AsInt(*os) : std::nullopt;
  if (!target && os && (os->kind_case() == v1::Arg::kList || os->kind_case() == v1::Arg::kTuple)) {
    const v1::ArgList& items = os->kind_case() == v1::Arg::kList ? os->list() : os->tuple();
    if (items.items_size() == 1) target = AsInt(items.items(0));
  }
  if (!target) return Status::Unsupported("output_size " + (os ? ArgToString(*os, true) : std::string("missing")));
  const int64_t rank = static_cast<int64_t>(shape.size()), length = shape.back();
  if (*target == 1) {
    auto* m = ctx.Emit("ReduceMean", {ctx.In(x)}, {ctx.Out(result)});
    SetAttr(m, "axes", std::vector<int64_t>{rank - 1});
    SetAttr(m, "keepdims", int64_t{1});
    return Status::Ok();
  }
  if (*target <= 0) return Status::Unsupported("adaptive_avg_pool1d to " + std::to_string(*target));
  (void)length;
  const v1::DType d = ctx.DType(result);
  const std::string p = AdaptivePoolMatrix(ctx, ctx.In(x), rank - 1, *target, d);
  ctx.Emit("MatMul", {ctx.In(x), TransposeMatrix(ctx, p)}, {ctx.Out(result)});
  return Status::Ok();
}

Status LowerAdaptiveAvgPool2d(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const auto& shape = ctx.Shape(x);
  if (shape.size() != 3 && shape.size() != 4) {
    return Status::Unsupported("adaptive_avg_pool2d expects a 3-D or 4-D input, got rank " +
                               std::to_string(shape.size()));
  }
  const int64_t in[2] = {shape[shape.size() - 2], shape[shape.size() - 1]};
  // output_size: an int, or a pair whose entries may be None (= keep that input size).
  const v1::Arg* os = call.Get("output_size");
  int64_t target[2];
  bool keep[2] = {false, false};   // None: that axis keeps the input's size, whatever it is at run time
  const v1::ArgList* items = nullptr;
  if (os && os->kind_case() == v1::Arg::kList) items = &os->list();
  if (os && os->kind_case() == v1::Arg::kTuple) items = &os->tuple();
  if (os && AsInt(*os)) {
    target[0] = target[1] = *AsInt(*os);
  } else if (items && items->items_size() == 2) {
    for (int i = 0; i < 2; ++i) {
      const v1::Arg& it = items->items(i);
      if (IsNone(it)) target[i] = in[i], keep[i] = true;
      else if (auto v = AsInt(it)) target[i] = *v;
      else return Status::Unsupported("output_size " + ArgToString(*os, true));
    }
  } else {
    return Status::Unsupported("output_size " + (os ? ArgToString(*os, true) : std::string("missing")));
  }
  if (target[0] == 1 && target[1] == 1 && !keep[0] && !keep[1]) {
    return EmitNchw(ctx, "adaptive_avg_pool2d", x, result, [&](const std::string& i, const std::string& o) {
      ctx.Emit("GlobalAveragePool", {i}, {o});
    });
  }
  for (int i = 0; i < 2; ++i) {
    if (target[i] <= 0) return Status::Unsupported("adaptive_avg_pool2d to a size " + std::to_string(target[i]));
  }
  // The windows follow the input's size when the model runs (an exported model's spatial dims may
  // be dynamic), overlapping where the output size does not divide it, as torch's do:
  // P_h @ x @ P_w^T with the averaging matrices of AdaptivePoolMatrix.
  const int64_t rank = static_cast<int64_t>(shape.size());
  const v1::DType d = ctx.DType(result);
  const std::string xin = ctx.In(x);
  if (keep[0] && keep[1]) {
    ctx.Emit("Identity", {xin}, {ctx.Out(result)});
    return Status::Ok();
  }
  if (keep[0] || keep[1]) {   // one axis pooled
    const std::string p = AdaptivePoolMatrix(ctx, xin, keep[1] ? rank - 2 : rank - 1, target[keep[1] ? 0 : 1], d);
    if (keep[1]) ctx.Emit("MatMul", {p, xin}, {ctx.Out(result)});
    else ctx.Emit("MatMul", {xin, TransposeMatrix(ctx, p)}, {ctx.Out(result)});
    return Status::Ok();
  }
  const std::string pw = AdaptivePoolMatrix(ctx, xin, rank - 1, target[1], d);
  const std::string ph = AdaptivePoolMatrix(ctx, xin, rank - 2, target[0], d);
  ctx.Emit("MatMul", {ph, ctx.EmitTemp("MatMul", {xin, TransposeMatrix(ctx, pw)})}, {ctx.Out(result)});
  return Status::Ok();
}

Status LowerBatchNorm(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  if (call.Bool("training").value_or(false)) {
    return Status::Unsupported(
        "batch_norm in training mode normalizes with batch statistics and updates the running "
        "stats; record the model in eval mode (model.eval())");
  }
  ValueId x, mean, var, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "running_mean", &mean));
  IVY_RETURN_IF_ERROR(TensorParam(call, "running_var", &var));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (ctx.Rank(x) < 2) return Status::Unsupported("batch_norm expects an input of rank >= 2");
  int64_t channels = ctx.Shape(mean).size() == 1 ? ctx.Shape(mean)[0] : ctx.Shape(x)[1];
  std::optional<ValueId> w, b;
  if (!call.IsNone("weight") && !(w = call.Tensor("weight"))) return Status::Unsupported("weight is not a tensor");
  if (!call.IsNone("bias") && !(b = call.Tensor("bias"))) return Status::Unsupported("bias is not a tensor");
  // scale and B share one type in ONNX.
  v1::DType param_dtype = w ? ctx.DType(*w) : b ? ctx.DType(*b) : ctx.DType(x);
  std::string scale = w ? ctx.In(*w) : Filled(ctx, channels, 1.0, param_dtype, "batch_norm.ones");
  std::string bias = b ? ctx.In(*b) : Filled(ctx, channels, 0.0, param_dtype, "batch_norm.zeros");
  auto* n = ctx.Emit("BatchNormalization", {ctx.In(x), scale, bias, ctx.In(mean), ctx.In(var)}, {ctx.Out(result)});
  SetAttr(n, "epsilon", static_cast<float>(call.Double("eps").value_or(1e-5)));
  SetAttr(n, "momentum", static_cast<float>(1.0 - call.Double("momentum").value_or(0.1)));
  return Status::Ok();
}

// layer_norm(x, normalized_shape, weight, bias, eps) -> LayerNormalization (opset 17) over the last
// len(normalized_shape) axes.
Status LowerLayerNorm(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const auto normalized = call.IntList("normalized_shape");
  if (!normalized || normalized->empty() || static_cast<int>(normalized->size()) > ctx.Rank(x)) {
    return Status::Unsupported("normalized_shape must be a non-empty list of at most rank(input) ints");
  }
  std::optional<ValueId> w, b;
  if (!call.IsNone("weight") && !(w = call.Tensor("weight"))) return Status::Unsupported("weight is not a tensor");
  if (!call.IsNone("bias") && !(b = call.Tensor("bias"))) return Status::Unsupported("bias is not a tensor");
  // ONNX requires Scale; without a weight it is ones of the normalized shape (one axis here).
  if (!w && normalized->size() != 1) return Status::Unsupported("layer_norm without weight over several axes");
  std::vector<std::string> inputs = {ctx.In(x), w ? ctx.In(*w) : Filled(ctx, (*normalized)[0], 1.0, ctx.DType(x),
                                                                      "layer_norm.ones")};
  if (b) inputs.push_back(ctx.In(*b));
  auto* n = ctx.Emit("LayerNormalization", inputs, {ctx.Out(result)});
  SetAttr(n, "axis", -static_cast<int64_t>(normalized->size()));
  SetAttr(n, "epsilon", static_cast<float>(call.Double("eps").value_or(1e-5)));
  return Status::Ok();
}

}  // namespace onnx_export
}  // namespace ivytrace
