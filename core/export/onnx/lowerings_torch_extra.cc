// Lowerings of torch functions that had no canonical op (issue 11): rsub, deg2rad/rad2deg,
// isposinf/isneginf, ldexp, nansum/nanmean, inner, addr, dist, kron, cross, rot90, diag/diagflat,
// masked_select, isin, channel_shuffle, local_response_norm, lp_pool1d/2d/3d, count_nonzero,
// aminmax, var_mean/std_mean, logcumsumexp, index_fill/index_copy, select_scatter/slice_scatter,
// cummax/cummin, new_full/new_empty, broadcast_tensors, tensordot, column_stack, chain_matmul,
// addbmm, adaptive max (and 3-d average) pooling of divisible sizes and trapezoid, each
// decomposed into opset-17 ops. Each reads every parameter it is given and refuses what it cannot
// express exactly.
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/export/onnx/lowerings.h"
#include "core/ir/arg.h"

namespace ivytrace {
namespace onnx_export {

namespace {

std::string F(LoweringContext& ctx, double v, v1::DType d) { return ctx.Scalar(Number::Float(v), d); }

bool Numeric(v1::DType d) {
  return d == v1::FLOAT32 || d == v1::FLOAT64 || d == v1::INT32 || d == v1::INT64;
}

Status NumericResult(const Node& node, LoweringContext& ctx, ValueId* result) {
  IVY_RETURN_IF_ERROR(SingleResult(node, result));
  const v1::DType d = ctx.DType(*result);
  if (!Numeric(d)) return Status::Unsupported(ctx.canonical() + " in " + DTypeName(d));
  return Status::Ok();
}

// A tensor parameter as an ONNX value of `d`.
Status TensorAs(LoweringContext& ctx, const BoundCall& call, const char* p, v1::DType d, std::string* out, ValueId* id = nullptr) {
  ValueId v;
  IVY_RETURN_IF_ERROR(TensorParam(call, p, &v));
  if (id) *id = v;
  *out = ctx.CastTo(ctx.In(v), ctx.DType(v), d);
  return Status::Ok();
}

// The `dim` argument of a reduction: nullopt for None (every dim), else the axes.
Status ReduceAxes(const BoundCall& call, int rank, std::optional<std::vector<int64_t>>* out) {
  if (!call.Has("dim") || call.IsNone("dim")) {
    *out = std::nullopt;
    return Status::Ok();
  }
  std::vector<int64_t> axes;
  if (auto i = call.Int("dim")) {
    axes = {*i};
  } else if (auto l = call.IntList("dim")) {
    axes = *l;
  } else {
    return Status::Unsupported("dim is not an int or a list of ints");
  }
  for (auto& a : axes) IVY_RETURN_IF_ERROR(NormalizeAxis(a, std::max(rank, 1), &a));
  if (axes.empty()) {  // torch: an empty dim list reduces every dim
    *out = std::nullopt;
    return Status::Ok();
  }
  *out = axes;
  return Status::Ok();
}

std::string Reduce(LoweringContext& ctx, const char* op, const std::string& x, const std::optional<std::vector<int64_t>>& axes,
                   bool keepdim, int rank) {
  // ReduceSum takes its axes as an input since opset 13, the others only since opset 18.
  const bool as_input = std::string_view(op) == "ReduceSum";
  std::vector<std::string> ins{x};
  if (axes && rank > 0 && as_input) ins.push_back(ctx.Int64s(*axes));
  onnx::NodeProto* n = nullptr;
  const std::string out = ctx.EmitTemp(op, ins, &n);
  if (axes && rank > 0 && !as_input) SetAttr(n, "axes", *axes);
  SetAttr(n, "keepdims", int64_t{keepdim ? 1 : 0});
  return out;
}

}  // namespace

// rsub(input, other, alpha) = other - alpha * input: sub with the operands swapped.
Status LowerRsub(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  const v1::Arg* a = call.Get("input");
  const v1::Arg* b = call.Get("other");
  if (!a || !b) return Status::Unsupported("missing operand");
  BoundCall swapped = call;
  v1::Arg ca = *a, cb = *b;
  swapped.Set("input", std::move(cb));
  swapped.Set("other", std::move(ca));
  ctx.SetCanonical("sub");
  return LowerBinary(node, swapped, ctx);
}

// ldexp(input, other) = input * 2 ** other (torch's own formula), in the result's float dtype.
Status LowerLdexp(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(result);
  if (d != v1::FLOAT32 && d != v1::FLOAT64) return Status::Unsupported(std::string("ldexp in ") + DTypeName(d));
  std::string x, e;
  IVY_RETURN_IF_ERROR(TensorAs(ctx, call, "input", d, &x));
  IVY_RETURN_IF_ERROR(TensorAs(ctx, call, "other", d, &e));
  ctx.Emit("Mul", {x, ctx.EmitTemp("Pow", {F(ctx, 2.0, d), e})}, {ctx.Out(result)});
  return Status::Ok();
}

namespace {

// The beta and alpha of addr / addbmm: numbers, and whole numbers for integer tensors.
Status BetaAlpha(const BoundCall& call, v1::DType d, double* beta, double* alpha) {
  auto b = call.Double("beta"), a = call.Double("alpha");
  if (!b || !a) return Status::Unsupported("beta and alpha are not numbers");
  if (!IsFloating(d) && (*b != std::floor(*b) || *a != std::floor(*a))) {
    return Status::Unsupported("a float beta or alpha for integer tensors");
  }
  *beta = *b;
  *alpha = *a;
  return Status::Ok();
}

// beta * input + alpha * product into `result`; beta == 0 ignores input (its NaNs too), as torch does.
void EmitScaledSum(LoweringContext& ctx, std::string input, std::string product, double beta, double alpha,
                   v1::DType d, ValueId result) {
  if (alpha != 1.0) product = ctx.EmitTemp("Mul", {product, F(ctx, alpha, d)});
  if (beta == 0.0) {
    ctx.Emit("Identity", {product}, {ctx.Out(result)});
    return;
  }
  if (beta != 1.0) input = ctx.EmitTemp("Mul", {input, F(ctx, beta, d)});
  ctx.Emit("Add", {input, product}, {ctx.Out(result)});
}

}  // namespace

// addr(input, vec1, vec2, beta, alpha) = beta * input + alpha * outer(vec1, vec2); beta == 0
// ignores input (its NaNs too), as torch does.
Status LowerAddr(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result, v1id, v2id;
  IVY_RETURN_IF_ERROR(NumericResult(node, ctx, &result));
  const v1::DType d = ctx.DType(result);
  std::string c, p, q;
  IVY_RETURN_IF_ERROR(TensorAs(ctx, call, "input", d, &c));
  IVY_RETURN_IF_ERROR(TensorAs(ctx, call, "vec1", d, &p, &v1id));
  IVY_RETURN_IF_ERROR(TensorAs(ctx, call, "vec2", d, &q, &v2id));
  if (ctx.Rank(v1id) != 1 || ctx.Rank(v2id) != 1) return Status::Unsupported("addr of operands that are not vectors");
  double beta, alpha;
  IVY_RETURN_IF_ERROR(BetaAlpha(call, d, &beta, &alpha));
  // The result is (n, m), input broadcast to it.
  EmitScaledSum(ctx, c, ctx.EmitTemp("Mul", {ctx.Unsqueeze(p, {1}), ctx.Unsqueeze(q, {0})}), beta, alpha, d, result);
  return Status::Ok();
}

// dist(input, other, p): the p-norm of input - other over every element (p = inf, -inf, 0 too).
Status LowerDist(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(result);
  if (d != v1::FLOAT32 && d != v1::FLOAT64) return Status::Unsupported(std::string("dist in ") + DTypeName(d));
  std::string a, b;
  IVY_RETURN_IF_ERROR(TensorAs(ctx, call, "input", d, &a));
  IVY_RETURN_IF_ERROR(TensorAs(ctx, call, "other", d, &b));
  auto p = call.Double("p");
  if (!p) return Status::Unsupported("p is not a number");
  const std::string diff = ctx.EmitTemp("Sub", {a, b});
  auto all = [&](const char* op, const std::string& v, const std::string& out) {
    auto* n = ctx.Emit(op, {v}, {out});
    SetAttr(n, "keepdims", int64_t{0});
  };
  const std::string out = ctx.Out(result);
  if (*p == 2.0) {
    all("ReduceL2", diff, out);
  } else if (*p == 1.0) {
    all("ReduceL1", diff, out);
  } else if (std::isinf(*p)) {
    all(*p > 0 ? "ReduceMax" : "ReduceMin", ctx.EmitTemp("Abs", {diff}), out);
  } else if (*p == 0.0) {
    const std::string nz = ctx.EmitTemp("Not", {ctx.EmitTemp("Equal", {diff, F(ctx, 0.0, d)})});
    all("ReduceSum", ctx.CastTo(nz, v1::BOOL, d), out);
  } else {
    const std::string powed = ctx.EmitTemp("Pow", {ctx.EmitTemp("Abs", {diff}), F(ctx, *p, d)});
    onnx::NodeProto* n = nullptr;
    const std::string sum = ctx.EmitTemp("ReduceSum", {powed}, &n);
    SetAttr(n, "keepdims", int64_t{0});
    ctx.Emit("Pow", {sum, F(ctx, 1.0 / *p, d)}, {out});
  }
  return Status::Ok();
}

// masked_select(input, mask): both broadcast, flattened, and the items where mask is true kept
// (Compress; the result's length is data-dependent).
Status LowerMaskedSelect(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, mk, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "mask", &mk));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (ctx.DType(mk) != v1::BOOL) return Status::Unsupported("a mask that is not bool");
  const std::string in = ctx.In(x), mask = ctx.In(mk);
  // The broadcast shape: of mask AND an all-true tensor shaped like input.
  const std::string ones = ctx.EmitTemp("Expand", {ctx.Scalar(Number::Int(1), v1::BOOL), ctx.EmitTemp("Shape", {in})});
  const std::string both = ctx.EmitTemp("And", {mask, ones});
  const std::string shape = ctx.EmitTemp("Shape", {both});
  const std::string xb = ctx.EmitTemp("Reshape", {ctx.EmitTemp("Expand", {in, shape}), ctx.Int64s({-1})});
  const std::string mb = ctx.EmitTemp("Reshape", {both, ctx.Int64s({-1})});
  ctx.Emit("Compress", {xb, mb}, {ctx.Out(result)});
  return Status::Ok();
}

// channel_shuffle(input, groups): (N, C, *) viewed as (N, g, C/g, *), the two swapped, and
// flattened back.
Status LowerChannelShuffle(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  auto g = call.Int("groups");
  const int rank = ctx.Rank(x);
  if (!g || *g <= 0) return Status::Unsupported("groups is not a positive int");
  if (rank < 3) return Status::Unsupported("channel_shuffle of a tensor of rank < 3");
  if (ctx.Shape(x)[1] % *g != 0) return Status::Unsupported("channels not divisible by groups");
  const std::string in = ctx.In(x), shape = ctx.EmitTemp("Shape", {in});
  onnx::NodeProto* c = nullptr;
  const std::string split = ctx.EmitTemp(
      "Concat", {ctx.EmitTemp("Slice", {shape, ctx.Int64s({0}), ctx.Int64s({1}), ctx.Int64s({0})}), ctx.Int64s({*g, -1}),
                 ctx.EmitTemp("Slice", {shape, ctx.Int64s({2}), ctx.Int64s({rank}), ctx.Int64s({0})})}, &c);
  SetAttr(c, "axis", int64_t{0});
  std::vector<int64_t> perm{0, 2, 1};
  for (int k = 3; k <= rank; ++k) perm.push_back(k);
  onnx::NodeProto* t = nullptr;
  const std::string moved = ctx.EmitTemp("Transpose", {ctx.EmitTemp("Reshape", {in, split})}, &t);
  SetAttr(t, "perm", perm);
  ctx.Emit("Reshape", {moved, shape}, {ctx.Out(result)});
  return Status::Ok();
}

// local_response_norm(input, size, alpha, beta, k), torch's construction: the squares averaged
// over a window of `size` channels (zero-padded size // 2 before, (size - 1) // 2 after: an
// AveragePool over the channel dim of (N, 1, C, *)), then input / (k + alpha * avg) ** beta.
Status LowerLocalResponseNorm(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(result);
  // (onnxruntime's CPU AveragePool is float32 only.)
  if (d != v1::FLOAT32) return Status::Unsupported(std::string("local_response_norm in ") + DTypeName(d));
  auto size = call.Int("size");
  auto alpha = call.Double("alpha"), beta = call.Double("beta"), k = call.Double("k");
  if (!size || *size <= 0 || !alpha || !beta || !k) return Status::Unsupported("size, alpha, beta or k is not a number");
  const int rank = ctx.Rank(x);
  if (rank < 3 || rank > 4) return Status::Unsupported("local_response_norm of a tensor of rank other than 3 or 4");
  const std::string in = ctx.In(x);
  const std::string sq = ctx.Unsqueeze(ctx.EmitTemp("Mul", {in, in}), {1});
  std::vector<int64_t> pads(2 * (rank + 1), 0);
  pads[2] = *size / 2;
  pads[rank + 1 + 2] = (*size - 1) / 2;
  const std::string padded = ctx.EmitTemp("Pad", {sq, ctx.Int64s(pads)});
  std::vector<int64_t> kernel(rank - 1, 1), strides(rank - 1, 1);
  kernel[0] = *size;
  onnx::NodeProto* p = nullptr;
  const std::string avg = ctx.Squeeze(ctx.EmitTemp("AveragePool", {padded}, &p), {1});
  SetAttr(p, "kernel_shape", kernel);
  SetAttr(p, "strides", strides);
  const std::string div = ctx.EmitTemp("Pow", {ctx.EmitTemp("Add", {ctx.EmitTemp("Mul", {avg, F(ctx, *alpha, d)}), F(ctx, *k, d)}),
                                               F(ctx, *beta, d)});
  ctx.Emit("Div", {in, div}, {ctx.Out(result)});
  return Status::Ok();
}

// lp_pool1d/2d/3d(input, norm_type, kernel_size, stride, ceil_mode), torch's construction:
// avg_pool(input ** p) * window size, then (sign * relu(abs)) ** (1 / p) (not ONNX's LpPool,
// which takes |x| ** p).
Status LowerLpPool(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(result);
  if (d != v1::FLOAT32) return Status::Unsupported(std::string("lp_pool in ") + DTypeName(d));  // AveragePool: float32
  const std::string& op = ctx.canonical();
  const int nd = op == "lp_pool1d" ? 1 : op == "lp_pool2d" ? 2 : 3;
  if (ctx.Rank(x) != nd + 2) return Status::Unsupported("an unbatched input");
  auto p = call.Double("norm_type");
  if (!p || *p == 0.0) return Status::Unsupported("norm_type is not a non-zero number");
  auto kernel = call.IntList("kernel_size", nd);
  if (!kernel || static_cast<int>(kernel->size()) != nd) return Status::Unsupported("kernel_size is not ints");
  std::vector<int64_t> strides = *kernel;
  if (!call.IsNone("stride")) {
    auto s = call.IntList("stride", nd);
    if (!s || static_cast<int>(s->size()) != nd) return Status::Unsupported("stride is not ints");
    strides = *s;
  }
  auto ceil = call.Bool("ceil_mode");
  if (!ceil) return Status::Unsupported("ceil_mode is not a bool");
  if (*ceil) return Status::Unsupported("lp_pool with ceil_mode=True");
  int64_t window = 1;
  for (int64_t kk : *kernel) window *= kk;
  const std::string powed = ctx.EmitTemp("Pow", {ctx.In(x), F(ctx, *p, d)});
  onnx::NodeProto* ap = nullptr;
  const std::string avg = ctx.EmitTemp("AveragePool", {powed}, &ap);
  SetAttr(ap, "kernel_shape", *kernel);
  SetAttr(ap, "strides", strides);
  const std::string mag = ctx.EmitTemp("Mul", {ctx.EmitTemp("Sign", {avg}), ctx.EmitTemp("Relu", {ctx.EmitTemp("Abs", {avg})})});
  const std::string scaled = ctx.EmitTemp("Mul", {mag, F(ctx, static_cast<double>(window), d)});
  ctx.Emit("Pow", {scaled, F(ctx, 1.0 / *p, d)}, {ctx.Out(result)});
  return Status::Ok();
}

// aminmax(input, *, dim, keepdim) -> (min, max): ReduceMin and ReduceMax (bools and small
// integers through int32).
Status LowerAminmax(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  const std::vector<ValueId> results = ResultTensors(node);
  if (results.size() != 2) return Status::Unsupported("aminmax without (min, max)");
  const int rank = ctx.Rank(x);
  std::optional<std::vector<int64_t>> axes;
  IVY_RETURN_IF_ERROR(ReduceAxes(call, rank, &axes));
  auto keepdim = call.Bool("keepdim");
  if (!keepdim) return Status::Unsupported("keepdim is not a bool");
  const v1::DType d = ctx.DType(x);
  const bool direct = d == v1::FLOAT32 || d == v1::FLOAT64 || d == v1::INT32 || d == v1::INT64;
  if (!direct && d != v1::BOOL && d != v1::UINT8 && d != v1::INT8 && d != v1::INT16) {
    return Status::Unsupported(std::string("aminmax of ") + DTypeName(d));
  }
  const v1::DType work = direct ? d : v1::INT32;
  const std::string in = ctx.CastTo(ctx.In(x), d, work);
  const char* ops[2] = {"ReduceMin", "ReduceMax"};
  for (int k = 0; k < 2; ++k) {
    const std::string r = Reduce(ctx, ops[k], in, axes, *keepdim, rank);
    ctx.Emit("Identity", {ctx.CastTo(r, work, ctx.DType(results[k]))}, {ctx.Out(results[k])});
  }
  return Status::Ok();
}

// var_mean / std_mean(input, dim, unbiased, keepdim, *, correction) -> (var or std, mean): the
// first is torch.var / torch.std's lowering, the second a ReduceMean over the same dims.
Status LowerVarMean(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  const std::vector<ValueId> results = ResultTensors(node);
  if (results.size() != 2) return Status::Unsupported(ctx.canonical() + " without two results");
  const int rank = ctx.Rank(x);
  std::optional<std::vector<int64_t>> axes;
  if (const v1::Arg* dm = call.Get("dim"); dm && dm->kind_case() == v1::Arg::kB) {
    axes = std::nullopt;  // the (input, unbiased) overload
  } else {
    IVY_RETURN_IF_ERROR(ReduceAxes(call, rank, &axes));
  }
  const bool keepdim = call.Bool("keepdim").value_or(false);
  if (call.Has("keepdim") && !call.Bool("keepdim")) return Status::Unsupported("keepdim is not a bool");
  const v1::DType d = ctx.DType(results[1]);
  if (d != v1::FLOAT32 && d != v1::FLOAT64) return Status::Unsupported(ctx.canonical() + " in " + DTypeName(d));
  Node first = node;
  first.result.Clear();
  first.result.mutable_tensor()->set_value(results[0]);
  ctx.SetCanonical(ctx.canonical() == "std_mean" ? "torch_std" : "torch_var");
  IVY_RETURN_IF_ERROR(LowerTorchVariance(first, call, ctx));
  const std::string mean = Reduce(ctx, "ReduceMean", ctx.CastTo(ctx.In(x), ctx.DType(x), d), axes, keepdim, rank);
  ctx.Emit("Identity", {mean}, {ctx.Out(results[1])});
  return Status::Ok();
}

// logcumsumexp(input, dim): out[i] = log(sum_{j <= i} exp(x[j])), over a triangular mask as
// cumprod does (quadratic in the dim's length), shifted by the running max (0 where it is
// infinite, so -inf stays -inf and +inf gives +inf, as in torch).
Status LowerLogcumsumexp(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(result);
  if (d != v1::FLOAT32 && d != v1::FLOAT64) return Status::Unsupported(std::string("logcumsumexp in ") + DTypeName(d));
  auto dim = call.Int("dim");
  if (!dim) return Status::Unsupported("dim is not an int");
  const int rank = ctx.Rank(x);
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, std::max(rank, 1), &axis));
  std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  if (rank == 0) {
    ctx.Emit("Identity", {in}, {ctx.Out(result)});
    return Status::Ok();
  }
  onnx::NodeProto* g = nullptr;
  const std::string n = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {in}), ctx.Scalar(Number::Int(axis), v1::INT64)}, &g);
  SetAttr(g, "axis", int64_t{0});
  const std::string pos = ctx.EmitTemp("Range", {ctx.Scalar(Number::Int(0), v1::INT64), n, ctx.Scalar(Number::Int(1), v1::INT64)});
  // mask[i, j] = j <= i, with i at `axis` and j at axis + 1.
  std::string mask = ctx.EmitTemp("LessOrEqual", {ctx.Unsqueeze(pos, {0}), ctx.Unsqueeze(pos, {1})});
  std::vector<int64_t> outer, inner;
  for (int64_t k = 0; k < axis; ++k) outer.push_back(k);
  if (!outer.empty()) mask = ctx.Unsqueeze(mask, outer);
  for (int64_t k = axis + 2; k < rank + 1; ++k) inner.push_back(k);
  if (!inner.empty()) mask = ctx.Unsqueeze(mask, inner);
  const std::string spread = ctx.Unsqueeze(in, {axis});
  const std::string masked = ctx.EmitTemp("Where", {mask, spread, F(ctx, -std::numeric_limits<double>::infinity(), d)});
  onnx::NodeProto* mx = nullptr;
  const std::string m = ctx.EmitTemp("ReduceMax", {masked}, &mx);
  SetAttr(mx, "axes", std::vector<int64_t>{axis + 1});
  SetAttr(mx, "keepdims", int64_t{1});
  const std::string shift = ctx.EmitTemp("Where", {ctx.EmitTemp("IsInf", {m}), F(ctx, 0.0, d), m});
  onnx::NodeProto* rs = nullptr;
  const std::string sum = ctx.EmitTemp("ReduceSum", {ctx.EmitTemp("Exp", {ctx.EmitTemp("Sub", {masked, shift})}), ctx.Int64s({axis + 1})}, &rs);
  SetAttr(rs, "keepdims", int64_t{1});
  ctx.Emit("Squeeze", {ctx.EmitTemp("Add", {ctx.EmitTemp("Log", {sum}), shift}), ctx.Int64s({axis + 1})}, {ctx.Out(result)});
  return Status::Ok();
}


namespace {

// Positions 0..n-1 along `axis` of `x` (int64 [n]) and n (int64 [1]).
void Positions(LoweringContext& ctx, const std::string& x, int64_t axis, std::string* pos, std::string* n) {
  onnx::NodeProto* g = nullptr;
  const std::string size = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {x}), ctx.Scalar(Number::Int(axis), v1::INT64)}, &g);
  SetAttr(g, "axis", int64_t{0});
  *pos = ctx.EmitTemp("Range", {ctx.Scalar(Number::Int(0), v1::INT64), size, ctx.Scalar(Number::Int(1), v1::INT64)});
  *n = ctx.Unsqueeze(size, {0});
}

// A 1-D value of length n laid along `axis` of a rank-`rank` tensor (n, 1, ..., 1 after axis).
std::string AlongAxis(LoweringContext& ctx, const std::string& v, int64_t axis, int rank) {
  std::vector<int64_t> tail;
  for (int64_t k = 1; k < rank - axis; ++k) tail.push_back(k);
  return tail.empty() ? v : ctx.Unsqueeze(v, tail);
}

// An integer index tensor as int64 [k], negative indices counted from the end (n: int64 [1]).
Status IndexVector(LoweringContext& ctx, const BoundCall& call, const char* param, const std::string& n, std::string* out,
                   ValueId* id) {
  IVY_RETURN_IF_ERROR(TensorParam(call, param, id));
  const v1::DType d = ctx.DType(*id);
  if (IsFloating(d) || d == v1::BOOL) return Status::Unsupported(std::string(param) + " is not an integer tensor");
  if (ctx.Rank(*id) > 1) return Status::Unsupported(std::string(param) + " has more than one dim");
  const std::string idx = ctx.EmitTemp("Reshape", {ctx.CastTo(ctx.In(*id), d, v1::INT64), ctx.Int64s({-1})});
  *out = ctx.EmitTemp("Where", {ctx.EmitTemp("Less", {idx, ctx.Scalar(Number::Int(0), v1::INT64)}), ctx.EmitTemp("Add", {idx, n}), idx});
  return Status::Ok();
}

}  // namespace

// index_fill(input, dim, index, value): the positions `index` along dim set to value (a number or
// a 0-d tensor): Where(position in index, value, input).
Status LowerIndexFill(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result, ix;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const int rank = ctx.Rank(x);
  auto dim = call.Int("dim");
  if (!dim) return Status::Unsupported("dim is not an int");
  if (rank == 0) return Status::Unsupported("index_fill of a 0-d tensor");
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, rank, &axis));
  const v1::DType d = ctx.DType(result);
  const std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  std::string pos, n, idx, value;
  Positions(ctx, in, axis, &pos, &n);
  IVY_RETURN_IF_ERROR(IndexVector(ctx, call, "index", n, &idx, &ix));
  const v1::Arg* v = call.Get("value");
  if (!v) return Status::Unsupported("missing value");
  if (v->kind_case() == v1::Arg::kTensor && ctx.Rank(v->tensor().value()) != 0) return Status::Unsupported("a value that is not 0-d");
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *v, d, &value));
  const std::string eq = ctx.EmitTemp("Equal", {ctx.Unsqueeze(pos, {1}), ctx.Unsqueeze(idx, {0})});
  onnx::NodeProto* r = nullptr;
  const std::string hits = ctx.EmitTemp("ReduceSum", {ctx.CastTo(eq, v1::BOOL, v1::INT64), ctx.Int64s({1})}, &r);
  SetAttr(r, "keepdims", int64_t{0});
  const std::string hit = AlongAxis(ctx, ctx.EmitTemp("Greater", {hits, ctx.Scalar(Number::Int(0), v1::INT64)}), axis, rank);
  EmitWhere(ctx, hit, ctx.EmitTemp("Expand", {value, ctx.EmitTemp("Shape", {in})}), in, d, ctx.Out(result));
  return Status::Ok();
}

// index_copy(input, dim, index, source): position index[i] along dim takes source's slice i; of
// repeated indices the last wins (torch's CPU loop): for each position p, i = max{i: index[i] == p},
// and Where(i exists, source gathered at i, input).
Status LowerIndexCopy(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, src, result, ix;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "source", &src));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const int rank = ctx.Rank(x);
  auto dim = call.Int("dim");
  if (!dim) return Status::Unsupported("dim is not an int");
  if (rank == 0 || ctx.Rank(src) != rank) return Status::Unsupported("index_copy of a 0-d tensor or a source of another rank");
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, rank, &axis));
  const v1::DType d = ctx.DType(result);
  const std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  const std::string source = ctx.CastTo(ctx.In(src), ctx.DType(src), d);
  std::string pos, n, idx;
  Positions(ctx, in, axis, &pos, &n);
  IVY_RETURN_IF_ERROR(IndexVector(ctx, call, "index", n, &idx, &ix));
  if (ctx.Shape(ix).empty() ? false : ctx.Shape(ix)[0] == 0) return Status::Unsupported("an empty index");
  onnx::NodeProto* g = nullptr;
  const std::string k = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {idx}), ctx.Scalar(Number::Int(0), v1::INT64)}, &g);
  SetAttr(g, "axis", int64_t{0});
  const std::string which = ctx.EmitTemp("Range", {ctx.Scalar(Number::Int(0), v1::INT64), k, ctx.Scalar(Number::Int(1), v1::INT64)});
  const std::string eq = ctx.EmitTemp("Equal", {ctx.Unsqueeze(pos, {1}), ctx.Unsqueeze(idx, {0})});
  const std::string cand = ctx.EmitTemp("Where", {eq, ctx.Unsqueeze(which, {0}), ctx.Scalar(Number::Int(-1), v1::INT64)});
  onnx::NodeProto* r = nullptr;
  const std::string last = ctx.EmitTemp("ReduceMax", {cand}, &r);
  SetAttr(r, "axes", std::vector<int64_t>{1});
  SetAttr(r, "keepdims", int64_t{0});
  onnx::NodeProto* gs = nullptr;
  const std::string picked = ctx.EmitTemp("Gather", {source, ctx.EmitTemp("Max", {last, ctx.Scalar(Number::Int(0), v1::INT64)})}, &gs);
  SetAttr(gs, "axis", axis);
  const std::string found = AlongAxis(ctx, ctx.EmitTemp("GreaterOrEqual", {last, ctx.Scalar(Number::Int(0), v1::INT64)}), axis, rank);
  EmitWhere(ctx, found, picked, in, d, ctx.Out(result));
  return Status::Ok();
}

// select_scatter(input, src, dim, index): src written at position index along dim.
Status LowerSelectScatter(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, src, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "src", &src));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const int rank = ctx.Rank(x);
  auto dim = call.Int("dim");
  auto index = call.Int("index");
  if (!dim || !index) return Status::Unsupported("dim and index are not ints");
  if (rank == 0) return Status::Unsupported("select_scatter of a 0-d tensor");
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, rank, &axis));
  const v1::DType d = ctx.DType(result);
  const std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  std::string pos, n;
  Positions(ctx, in, axis, &pos, &n);
  std::string at = ctx.Int64s({*index});
  if (*index < 0) at = ctx.EmitTemp("Add", {at, n});
  const std::string hit = AlongAxis(ctx, ctx.EmitTemp("Equal", {pos, at}), axis, rank);
  const std::string value = ctx.Unsqueeze(ctx.CastTo(ctx.In(src), ctx.DType(src), d), {axis});
  EmitWhere(ctx, hit, ctx.EmitTemp("Expand", {value, ctx.EmitTemp("Shape", {in})}), in, d, ctx.Out(result));
  return Status::Ok();
}

// slice_scatter(input, src, dim, start, end, step): src written at positions start:end:step along
// dim (Python's clamping of start and end, step > 0): Where(p in the slice, src[(p - start) / step],
// input).
Status LowerSliceScatter(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, src, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "src", &src));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const int rank = ctx.Rank(x);
  auto dim = call.Int("dim");
  auto step = call.Int("step");
  if (!dim || !step || *step <= 0) return Status::Unsupported("dim is not an int or step not a positive int");
  if (rank == 0 || ctx.Rank(src) != rank) return Status::Unsupported("slice_scatter of a 0-d tensor or a src of another rank");
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, rank, &axis));
  const v1::DType d = ctx.DType(result);
  const std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  std::string pos, n;
  Positions(ctx, in, axis, &pos, &n);
  auto bound = [&](const char* p, bool is_end, std::string* out) -> Status {
    if (call.IsNone(p)) {
      *out = is_end ? n : ctx.Int64s({0});
      return Status::Ok();
    }
    auto v = call.Int(p);
    if (!v) return Status::Unsupported(std::string(p) + " is not an int");
    std::string b = ctx.Int64s({*v});
    if (*v < 0) b = ctx.EmitTemp("Max", {ctx.EmitTemp("Add", {b, n}), ctx.Int64s({0})});
    *out = ctx.EmitTemp("Min", {b, n});
    return Status::Ok();
  };
  std::string lo, hi;
  IVY_RETURN_IF_ERROR(bound("start", false, &lo));
  IVY_RETURN_IF_ERROR(bound("end", true, &hi));
  const std::string off = ctx.EmitTemp("Sub", {pos, lo});
  const std::string st = ctx.Int64s({*step});
  std::string hit = ctx.EmitTemp("And", {ctx.EmitTemp("GreaterOrEqual", {pos, lo}), ctx.EmitTemp("Less", {pos, hi})});
  if (*step != 1) hit = ctx.EmitTemp("And", {hit, ctx.EmitTemp("Equal", {ctx.EmitTemp("Mod", {ctx.EmitTemp("Max", {off, ctx.Int64s({0})}), st}), ctx.Int64s({0})})});
  const std::string source = ctx.CastTo(ctx.In(src), ctx.DType(src), d);
  std::string m;
  {
    onnx::NodeProto* g = nullptr;
    m = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {source}), ctx.Int64s({axis})}, &g);
    SetAttr(g, "axis", int64_t{0});
  }
  const std::string at = ctx.EmitTemp("Min", {ctx.EmitTemp("Max", {ctx.EmitTemp("Div", {off, st}), ctx.Int64s({0})}),
                                              ctx.EmitTemp("Sub", {m, ctx.Int64s({1})})});
  onnx::NodeProto* g = nullptr;
  const std::string picked = ctx.EmitTemp("Gather", {source, ctx.EmitTemp("Max", {at, ctx.Int64s({0})})}, &g);
  SetAttr(g, "axis", axis);
  EmitWhere(ctx, AlongAxis(ctx, hit, axis, rank), picked, in, d, ctx.Out(result));
  return Status::Ok();
}

// cummax / cummin(input, dim) -> (values, indices), torch's loop: a NaN, once seen, is the value
// and the index is the last NaN's; otherwise the running max (min) and the last index holding it
// (ties go to the later item). Over a triangular mask (quadratic in the dim's length).
Status LowerCumExtreme(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  const std::vector<ValueId> results = ResultTensors(node);
  if (results.size() != 2) return Status::Unsupported(ctx.canonical() + " without (values, indices)");
  const bool is_max = ctx.canonical() == "cummax";
  auto dim = call.Int("dim");
  if (!dim) return Status::Unsupported("dim is not an int");
  const int rank = ctx.Rank(x);
  const v1::DType d = ctx.DType(x);
  if (!Numeric(d)) return Status::Unsupported(ctx.canonical() + " of " + DTypeName(d));
  const std::string in = ctx.In(x);
  if (rank == 0) {
    ctx.Emit("Identity", {in}, {ctx.Out(results[0])});
    ctx.Emit("Identity", {ctx.CastTo(ctx.Scalar(Number::Int(0), v1::INT64), v1::INT64, ctx.DType(results[1]))}, {ctx.Out(results[1])});
    return Status::Ok();
  }
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, rank, &axis));
  std::string pos, n;
  Positions(ctx, in, axis, &pos, &n);
  // mask[i, j] = j <= i, with i at `axis` and j at axis + 1 of the spread input.
  auto place = [&](std::string v) {
    std::vector<int64_t> outer, inner;
    for (int64_t k = 0; k < axis; ++k) outer.push_back(k);
    if (!outer.empty()) v = ctx.Unsqueeze(v, outer);
    for (int64_t k = axis + 2; k < rank + 1; ++k) inner.push_back(k);
    if (!inner.empty()) v = ctx.Unsqueeze(v, inner);
    return v;
  };
  const std::string mask = place(ctx.EmitTemp("LessOrEqual", {ctx.Unsqueeze(pos, {0}), ctx.Unsqueeze(pos, {1})}));
  const std::string jpos = place(ctx.Unsqueeze(pos, {0}));
  const std::string spread = ctx.Unsqueeze(in, {axis});
  const bool fl = IsFloating(d);
  const double lim = fl ? std::numeric_limits<double>::infinity() : 0.0;
  Number worst = fl ? Number::Float(is_max ? -lim : lim)
                    : Number::Int(is_max ? (d == v1::INT32 ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min())
                                         : (d == v1::INT32 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max()));
  std::string valid = mask;  // in the prefix and not NaN
  std::string nan_in_prefix;
  if (fl) {
    nan_in_prefix = ctx.EmitTemp("And", {mask, ctx.EmitTemp("IsNaN", {spread})});
    valid = ctx.EmitTemp("And", {mask, ctx.EmitTemp("Not", {ctx.EmitTemp("IsNaN", {spread})})});
  }
  const std::string masked = ctx.EmitTemp("Where", {valid, spread, ctx.Scalar(worst, d)});
  onnx::NodeProto* r = nullptr;
  const std::string ext = ctx.EmitTemp(is_max ? "ReduceMax" : "ReduceMin", {masked}, &r);
  SetAttr(r, "axes", std::vector<int64_t>{axis + 1});
  SetAttr(r, "keepdims", int64_t{1});
  // The last j holding the extreme (or, with a NaN in the prefix, the last NaN).
  auto last_where = [&](const std::string& cond) {
    onnx::NodeProto* m = nullptr;
    const std::string out = ctx.EmitTemp("ReduceMax", {ctx.EmitTemp("Where", {cond, jpos, ctx.Scalar(Number::Int(-1), v1::INT64)})}, &m);
    SetAttr(m, "axes", std::vector<int64_t>{axis + 1});
    SetAttr(m, "keepdims", int64_t{0});
    return out;
  };
  std::string values = ctx.Squeeze(ext, {axis + 1});
  std::string index = last_where(ctx.EmitTemp("And", {valid, ctx.EmitTemp("Equal", {spread, ext})}));
  if (fl) {
    const std::string last_nan = last_where(nan_in_prefix);
    const std::string has_nan = ctx.EmitTemp("GreaterOrEqual", {last_nan, ctx.Scalar(Number::Int(0), v1::INT64)});
    values = ctx.EmitTemp("Where", {has_nan, ctx.Scalar(Number::Float(std::numeric_limits<double>::quiet_NaN()), d), values});
    index = ctx.EmitTemp("Where", {has_nan, last_nan, index});
  }
  ctx.Emit("Identity", {values}, {ctx.Out(results[0])});
  ctx.Emit("Identity", {ctx.CastTo(index, v1::INT64, ctx.DType(results[1]))}, {ctx.Out(results[1])});
  return Status::Ok();
}

// new_full(input, size, fill_value) / new_empty(input, *size): full / zeros of the recorded dtype
// (new_empty's values are undefined in torch: zeros are one choice of them).
Status LowerNewFull(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  if (!call.Tensor("input")) return Status::Unsupported("new_full/new_empty of something not a tensor");
  ctx.SetCanonical(ctx.canonical() == "new_full" ? "full" : "new_zeros");
  return LowerFull(node, call, ctx);
}


// broadcast_tensors(*tensors): each Expanded to the common shape (of an And of all-true tensors
// shaped like them).
Status LowerBroadcastTensors(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  const v1::Arg* ts = call.Get("tensors");
  auto items = ts ? SequenceItems(*ts) : std::nullopt;
  if (!items || items->empty()) return Status::Unsupported("tensors is not a list of tensors");
  const std::vector<ValueId> results = ResultTensors(node);
  if (results.size() != items->size()) return Status::Unsupported("a result per tensor expected");
  std::vector<std::string> ins;
  std::string all;
  for (const v1::Arg* a : *items) {
    if (a->kind_case() != v1::Arg::kTensor) return Status::Unsupported("an operand that is not a tensor");
    const ValueId v = a->tensor().value();
    ins.push_back(ctx.In(v));
    const std::string ones = ctx.EmitTemp("Expand", {ctx.Scalar(Number::Int(1), v1::BOOL), ctx.EmitTemp("Shape", {ins.back()})});
    all = all.empty() ? ones : ctx.EmitTemp("And", {all, ones});
  }
  const std::string shape = ctx.EmitTemp("Shape", {all});
  for (size_t k = 0; k < results.size(); ++k) {
    const ValueId v = (*items)[k]->tensor().value();
    ctx.Emit("Expand", {ctx.CastTo(ins[k], ctx.DType(v), ctx.DType(results[k])), shape}, {ctx.Out(results[k])});
  }
  return Status::Ok();
}

// chain_matmul(*matrices): MatMuls left to right (one matrix: itself).
Status LowerChainMatmul(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(NumericResult(node, ctx, &result));
  const v1::Arg* ms = call.Get("matrices");
  auto items = ms ? SequenceItems(*ms) : std::nullopt;
  if (!items || items->empty()) return Status::Unsupported("matrices is not a list of tensors");
  const v1::DType d = ctx.DType(result);
  std::string acc;
  for (const v1::Arg* a : *items) {
    if (a->kind_case() != v1::Arg::kTensor || ctx.Rank(a->tensor().value()) != 2) return Status::Unsupported("an operand that is not a matrix");
    const ValueId v = a->tensor().value();
    const std::string m = ctx.CastTo(ctx.In(v), ctx.DType(v), d);
    acc = acc.empty() ? m : ctx.EmitTemp("MatMul", {acc, m});
  }
  ctx.Emit("Identity", {acc}, {ctx.Out(result)});
  return Status::Ok();
}

// addbmm(input, batch1, batch2, beta, alpha) = beta * input + alpha * sum_b(batch1[b] @ batch2[b])
// (an Einsum); beta == 0 ignores input.
Status LowerAddbmm(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result, b1, b2;
  IVY_RETURN_IF_ERROR(NumericResult(node, ctx, &result));
  const v1::DType d = ctx.DType(result);
  std::string c, p, q;
  IVY_RETURN_IF_ERROR(TensorAs(ctx, call, "input", d, &c));
  IVY_RETURN_IF_ERROR(TensorAs(ctx, call, "batch1", d, &p, &b1));
  IVY_RETURN_IF_ERROR(TensorAs(ctx, call, "batch2", d, &q, &b2));
  if (ctx.Rank(b1) != 3 || ctx.Rank(b2) != 3) return Status::Unsupported("addbmm of batches that are not 3-D");
  double beta, alpha;
  IVY_RETURN_IF_ERROR(BetaAlpha(call, d, &beta, &alpha));
  auto* e = ctx.Emit("Einsum", {p, q}, {ctx.Temp("sum")});
  SetAttr(e, "equation", std::string("bij,bjk->ik"));
  EmitScaledSum(ctx, c, e->output(0), beta, alpha, d, result);
  return Status::Ok();
}

// adaptive_max_pool1d/2d/3d and adaptive_avg_pool3d where each output size divides the input's
// (the windows are then disjoint, of the quotient's size: a MaxPool / AveragePool of that kernel
// and stride), or is 1 everywhere (GlobalMaxPool / GlobalAveragePool). The model checks that the
// pooled sizes are the recorded ones (a Reshape to an invalid shape otherwise), since the windows
// were computed from them. return_indices is refused.
Status LowerAdaptivePool(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const std::string& op = ctx.canonical();
  const bool is_max = op.rfind("adaptive_max", 0) == 0;
  const int nd = op.back() == 'd' ? op[op.size() - 2] - '0' : 0;
  if (nd < 1 || nd > 3) return Status::Unsupported("unknown adaptive pooling " + op);
  if (is_max) {
    auto ri = call.Bool("return_indices");
    if (!ri || *ri) return Status::Unsupported("adaptive max pooling with return_indices");
  }
  const v1::DType d = ctx.DType(result);
  if (d != v1::FLOAT32) return Status::Unsupported(op + " in " + DTypeName(d) + " (float32 lowers)");
  const auto& shape = ctx.Shape(x);
  const int rank = static_cast<int>(shape.size());
  if (rank != nd + 2) return Status::Unsupported(op + " of an unbatched input");
  const v1::Arg* os = call.Get("output_size");
  if (!os) return Status::Unsupported("missing output_size");
  std::vector<int64_t> target(nd);
  if (auto i = AsInt(*os)) {
    std::fill(target.begin(), target.end(), *i);
  } else if (auto items = SequenceItems(*os); items && static_cast<int>(items->size()) == nd) {
    for (int k = 0; k < nd; ++k) {
      if (IsNone(*(*items)[k])) target[k] = shape[2 + k];
      else if (auto v = AsInt(*(*items)[k])) target[k] = *v;
      else return Status::Unsupported("output_size " + ArgToString(*os, true));
    }
  } else {
    return Status::Unsupported("output_size " + ArgToString(*os, true));
  }
  const std::string in = ctx.In(x);
  if (std::all_of(target.begin(), target.end(), [](int64_t t) { return t == 1; })) {
    ctx.Emit(is_max ? "GlobalMaxPool" : "GlobalAveragePool", {in}, {ctx.Out(result)});
    return Status::Ok();
  }
  std::vector<int64_t> kernel(nd), spatial(shape.begin() + 2, shape.end());
  for (int k = 0; k < nd; ++k) {
    if (target[k] <= 0 || spatial[k] % target[k] != 0) {
      return Status::Unsupported(op + ": an output size that does not divide the input's (" + std::to_string(spatial[k]) + " to " +
                                 std::to_string(target[k]) + ")");
    }
    kernel[k] = spatial[k] / target[k];
  }
  // The check: the input reshaped to its own shape while its pooled sizes are the recorded ones.
  const std::string sh = ctx.EmitTemp("Shape", {in});
  const std::string sizes = ctx.EmitTemp("Slice", {sh, ctx.Int64s({2}), ctx.Int64s({rank}), ctx.Int64s({0})});
  onnx::NodeProto* rmin = nullptr;
  const std::string same = ctx.EmitTemp("ReduceMin", {ctx.CastTo(ctx.EmitTemp("Equal", {sizes, ctx.Int64s(spatial)}), v1::BOOL, v1::INT32)}, &rmin);
  SetAttr(rmin, "keepdims", int64_t{0});
  onnx::NodeProto* cast = nullptr;
  const std::string okb = ctx.EmitTemp("Cast", {same}, &cast);
  SetAttr(cast, "to", static_cast<int64_t>(OnnxElemType(v1::BOOL)));
  const std::string to = ctx.EmitTemp("Where", {okb, sh, ctx.Int64s(std::vector<int64_t>(rank, -2))});
  onnx::NodeProto* chk = nullptr;
  const std::string checked = ctx.EmitTemp("Reshape", {in, to}, &chk);
  chk->set_name("ivytrace guard (" + op + " input size) " + ctx.Temp("check") + ": " + node.op + " at " +
                (node.loc.file().empty() ? std::string("an unknown line") : node.loc.file() + ":" + std::to_string(node.loc.line())) +
                ": the pooling windows were computed for the recorded spatial sizes");
  auto* p = ctx.Emit(is_max ? "MaxPool" : "AveragePool", {checked}, {ctx.Out(result)});
  SetAttr(p, "kernel_shape", kernel);
  SetAttr(p, "strides", kernel);
  return Status::Ok();
}

// F.bilinear(input1, input2, weight, bias) = input1[..., i] * weight[o, i, j] * input2[..., j] (+ bias[o]):
// one Einsum over the leading dims (nn.Bilinear).
Status LowerBilinear(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result, a, b, w;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  IVY_RETURN_IF_ERROR(TensorParam(call, "input1", &a));
  IVY_RETURN_IF_ERROR(TensorParam(call, "input2", &b));
  IVY_RETURN_IF_ERROR(TensorParam(call, "weight", &w));
  const v1::DType d = ctx.DType(result);
  if (!IsFloating(d)) return Status::Unsupported(std::string("bilinear in ") + DTypeName(d));
  if (ctx.Rank(w) != 3 || ctx.Rank(a) < 1 || ctx.Rank(a) != ctx.Rank(b)) {
    return Status::Unsupported("bilinear of inputs of ranks " + std::to_string(ctx.Rank(a)) + " and " +
                               std::to_string(ctx.Rank(b)) + " with a rank-" + std::to_string(ctx.Rank(w)) + " weight");
  }
  auto* e = ctx.Emit("Einsum", {ctx.CastTo(ctx.In(a), ctx.DType(a), d), ctx.CastTo(ctx.In(w), ctx.DType(w), d),
                                ctx.CastTo(ctx.In(b), ctx.DType(b), d)}, {ctx.Temp("bilinear")});
  SetAttr(e, "equation", std::string("...i,oij,...j->...o"));
  if (call.IsNone("bias")) {
    ctx.Emit("Identity", {e->output(0)}, {ctx.Out(result)});
    return Status::Ok();
  }
  ValueId bias;
  IVY_RETURN_IF_ERROR(TensorParam(call, "bias", &bias));
  ctx.Emit("Add", {e->output(0), ctx.CastTo(ctx.In(bias), ctx.DType(bias), d)}, {ctx.Out(result)});
  return Status::Ok();
}

// cummax / cummin of every framework: torch's (values, indices) through LowerCumExtreme, NumPy's
// maximum.accumulate and lax.cummax_p/cummin_p (values only, JAX's `reverse`) through
// LowerUfuncAccumulate (lowerings_ufunc_methods.cc).
Status LowerCummaxCummin(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  size_t results = 0;
  ForEachTensor(node.result, [&](const v1::TensorRef&) { ++results; });
  return results == 2 ? LowerCumExtreme(node, call, ctx) : LowerUfuncAccumulate(node, call, ctx);
}

// inner(input, other): the sum over the last dims of both, result dims input's then other's (an
// Einsum); a 0-d operand multiplies.
Status LowerInnerTorch(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result, av, bv;
  IVY_RETURN_IF_ERROR(NumericResult(node, ctx, &result));
  const v1::DType d = ctx.DType(result);
  std::string a, b;
  IVY_RETURN_IF_ERROR(TensorAs(ctx, call, "input", d, &a, &av));
  IVY_RETURN_IF_ERROR(TensorAs(ctx, call, "other", d, &b, &bv));
  const int ra = ctx.Rank(av), rb = ctx.Rank(bv);
  if (ra == 0 || rb == 0) {
    ctx.Emit("Mul", {a, b}, {ctx.Out(result)});
    return Status::Ok();
  }
  if (ra + rb - 2 > 24) return Status::Unsupported("inner of tensors of too many dims");
  std::string ea, eb;
  char next = 'a';
  for (int k = 0; k < ra - 1; ++k) ea += next++;
  for (int k = 0; k < rb - 1; ++k) eb += next++;
  const std::string equation = ea + "z," + eb + "z->" + ea + eb;
  auto* n = ctx.Emit("Einsum", {a, b}, {ctx.Out(result)});
  SetAttr(n, "equation", equation);
  return Status::Ok();
}

// cross(input, other, dim): the cross product along a dim of size 3 (dim None, which picks a dim
// by its size, is refused): a[1,2,0] * b[2,0,1] - a[2,0,1] * b[1,2,0].
Status LowerCrossTorch(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result, av, bv;
  IVY_RETURN_IF_ERROR(NumericResult(node, ctx, &result));
  const v1::DType d = ctx.DType(result);
  std::string a, b;
  IVY_RETURN_IF_ERROR(TensorAs(ctx, call, "input", d, &a, &av));
  IVY_RETURN_IF_ERROR(TensorAs(ctx, call, "other", d, &b, &bv));
  if (ctx.Rank(av) != ctx.Rank(bv)) return Status::Unsupported("cross of tensors of different ranks");
  const std::vector<int64_t>& shape = ctx.Shape(result);
  const int rank = static_cast<int>(shape.size());
  int64_t axis = -1;
  if (call.IsNone("dim")) {
    // torch picks the first dim of size 3 of the input it is given: a model with another batch
    // size could pick another.
    return Status::Unsupported("torch.cross without dim (it picks the first dim of size 3): pass dim=");
  } else {
    auto dim = call.Int("dim");
    if (!dim) return Status::Unsupported("dim is not an int");
    IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, rank, &axis));
  }
  if (shape[axis] != 3 || ctx.Shape(av)[axis] != 3 || ctx.Shape(bv)[axis] != 3) {
    return Status::Unsupported("cross along a dim whose size is not 3 in both operands");
  }
  auto pick = [&](const std::string& x, std::vector<int64_t> order) {
    onnx::NodeProto* g = nullptr;
    const std::string out = ctx.EmitTemp("Gather", {x, ctx.Int64s(order)}, &g);
    SetAttr(g, "axis", axis);
    return out;
  };
  const std::string l = ctx.EmitTemp("Mul", {pick(a, {1, 2, 0}), pick(b, {2, 0, 1})});
  const std::string rr = ctx.EmitTemp("Mul", {pick(a, {2, 0, 1}), pick(b, {1, 2, 0})});
  ctx.Emit("Sub", {l, rr}, {ctx.Out(result)});
  return Status::Ok();
}

// diag(input, diagonal) / diagflat(input, offset): a 2-D input's diagonal (torch.diagonal's);
// a 1-D input (diagflat: the flattened input) as the diagonal of a square matrix of size
// n + |k|: Where(col - row == k, v[row or col], 0).
Status LowerDiagTorch(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const bool flat = ctx.canonical() == "diagflat";
  auto k = call.Int(flat ? "offset" : "diagonal");
  if (!k) return Status::Unsupported("the diagonal offset is not an int");
  const int rank = ctx.Rank(x);
  if (!flat && rank == 2) {
    BoundCall c = call;
    c.Set("offset", [&] { v1::Arg a; a.set_i(*k); return a; }());
    c.Set("axis1", [&] { v1::Arg a; a.set_i(0); return a; }());
    c.Set("axis2", [&] { v1::Arg a; a.set_i(1); return a; }());
    return LowerDiagonal(node, c, ctx);
  }
  if (!flat && rank != 1) return Status::Unsupported("diag of a tensor that is neither 1-D nor 2-D");
  const v1::DType d = ctx.DType(result);
  const std::string v = ctx.EmitTemp("Reshape", {ctx.In(x), ctx.Int64s({-1})});
  const std::string n = ctx.EmitTemp("Squeeze", {ctx.EmitTemp("Shape", {v}), ctx.Int64s({0})});
  const std::string i64_1 = ctx.Scalar(Number::Int(1), v1::INT64), i64_0 = ctx.Scalar(Number::Int(0), v1::INT64);
  const std::string m = ctx.EmitTemp("Add", {n, ctx.Scalar(Number::Int(*k < 0 ? -*k : *k), v1::INT64)});
  const std::string pos = ctx.EmitTemp("Range", {i64_0, m, i64_1});
  const std::string row = ctx.Unsqueeze(pos, {1}), col = ctx.Unsqueeze(pos, {0});
  const std::string mask = ctx.EmitTemp("Equal", {ctx.EmitTemp("Sub", {col, row}), ctx.Scalar(Number::Int(*k), v1::INT64)});
  // v[row] on diagonal k >= 0 (rows past n hold none), v[col] below; clipped for the Gather.
  const std::string at = ctx.EmitTemp("Min", {*k >= 0 ? row : col, ctx.EmitTemp("Sub", {n, i64_1})});
  onnx::NodeProto* g = nullptr;
  const std::string vals = ctx.EmitTemp("Gather", {v, ctx.EmitTemp("Max", {at, i64_0})}, &g);
  SetAttr(g, "axis", int64_t{0});
  const std::string full = ctx.EmitTemp("Expand", {ctx.CastTo(vals, ctx.DType(x), d), ctx.EmitTemp("Shape", {mask})});
  const std::string zeros = ctx.EmitTemp("Expand", {ctx.Scalar(Number::Int(0), d), ctx.EmitTemp("Shape", {mask})});
  EmitWhere(ctx, mask, full, zeros, d, ctx.Out(result));
  return Status::Ok();
}

// isin(elements, test_elements, assume_unique, invert): each element equal to any test element
// (assume_unique only speeds torch up); NaN is in nothing, as in torch.
Status LowerIsinTorch(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* e = call.Get("e");
  const v1::Arg* te = call.Get("te");
  if (!e || !te || (!HasTensor(*e) && !HasTensor(*te))) return Status::Unsupported("neither operand is a tensor");
  auto invert = call.Bool("invert"), unique = call.Bool("assume_unique");
  if (!invert || !unique) return Status::Unsupported("invert and assume_unique are not bools");
  const v1::DType d = PromotedDType(ctx, {e, te});
  if (!Numeric(d)) return Status::Unsupported(std::string("isin of ") + DTypeName(d));
  std::string a, b;
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *e, d, &a));
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *te, d, &b));
  const std::string eq = ctx.EmitTemp("Equal", {ctx.Unsqueeze(a, {-1}), ctx.EmitTemp("Reshape", {b, ctx.Int64s({-1})})});
  onnx::NodeProto* r = nullptr;
  const std::string hits = ctx.EmitTemp("ReduceSum", {ctx.CastTo(eq, v1::BOOL, v1::INT64), ctx.Int64s({-1})}, &r);
  SetAttr(r, "keepdims", int64_t{0});
  if (*invert) {
    ctx.Emit("Equal", {hits, ctx.Scalar(Number::Int(0), v1::INT64)}, {ctx.Out(result)});
  } else {
    ctx.Emit("Greater", {hits, ctx.Scalar(Number::Int(0), v1::INT64)}, {ctx.Out(result)});
  }
  return Status::Ok();
}

// tensordot(a, b, dims) (np.tensordot's axes too): an Einsum over the contracted dims (dims: n, the last n of a with the
// first n of b; or two lists of dims).
Status LowerTensordotTorch(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result, av, bv;
  IVY_RETURN_IF_ERROR(NumericResult(node, ctx, &result));
  const v1::DType d = ctx.DType(result);
  std::string a, b;
  // torch.tensordot(a, b, dims); np.tensordot's a, b are input, other (aliases) and its dims axes.
  const bool numpy = call.Has("axes");
  IVY_RETURN_IF_ERROR(TensorAs(ctx, call, numpy ? "input" : "a", d, &a, &av));
  IVY_RETURN_IF_ERROR(TensorAs(ctx, call, numpy ? "other" : "b", d, &b, &bv));
  const int ra = ctx.Rank(av), rb = ctx.Rank(bv);
  std::vector<int64_t> da, db;
  const v1::Arg* dims = call.Get(numpy ? "axes" : "dims");
  if (!dims) return Status::Unsupported("missing dims");
  if (auto n = AsInt(*dims)) {
    if (*n < 0 || *n > ra || *n > rb) return Status::Unsupported("dims out of range");
    for (int64_t k = 0; k < *n; ++k) {
      da.push_back(ra - *n + k);
      db.push_back(k);
    }
  } else if (auto pair = SequenceItems(*dims); pair && pair->size() == 2) {
    auto one = [](const v1::Arg& x) -> std::optional<std::vector<int64_t>> {
      if (auto i = AsInt(x)) return std::vector<int64_t>{*i};
      return AsIntList(x);
    };
    auto l = one(*(*pair)[0]), r = one(*(*pair)[1]);
    if (!l || !r || l->size() != r->size()) return Status::Unsupported("dims are not two lists of ints of one length");
    da = *l;
    db = *r;
    for (auto& x : da) IVY_RETURN_IF_ERROR(NormalizeAxis(x, ra, &x));
    for (auto& x : db) IVY_RETURN_IF_ERROR(NormalizeAxis(x, rb, &x));
  } else {
    return Status::Unsupported("dims is not an int or two lists");
  }
  if (ra + rb > 26) return Status::Unsupported("tensordot of too many dims");
  std::string ea(ra, ' '), eb(rb, ' '), out;
  char next = 'a';
  for (size_t k = 0; k < da.size(); ++k) {
    if (ea[da[k]] != ' ' || eb[db[k]] != ' ') return Status::Unsupported("a dim contracted twice");
    ea[da[k]] = eb[db[k]] = next++;
  }
  for (auto& c : ea) {
    if (c == ' ') {
      c = next++;
      out += c;
    }
  }
  for (auto& c : eb) {
    if (c == ' ') {
      c = next++;
      out += c;
    }
  }
  auto* n = ctx.Emit("Einsum", {a, b}, {ctx.Out(result)});
  SetAttr(n, "equation", ea + "," + eb + "->" + out);
  return Status::Ok();
}

// column_stack(tensors): 0-d and 1-D tensors as columns (n, 1), then a Concat along dim 1.
Status LowerColumnStackTorch(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* ts = call.Get("tensors");
  auto items = ts ? SequenceItems(*ts) : std::nullopt;
  if (!items || items->empty()) return Status::Unsupported("tensors is not a list of tensors");
  const v1::DType d = ctx.DType(result);
  std::vector<std::string> cols;
  for (const v1::Arg* a : *items) {
    if (a->kind_case() != v1::Arg::kTensor) return Status::Unsupported("an operand that is not a tensor");
    const ValueId v = a->tensor().value();
    std::string c = ctx.CastTo(ctx.In(v), ctx.DType(v), d);
    if (ctx.Rank(v) == 0) c = ctx.EmitTemp("Reshape", {c, ctx.Int64s({1, 1})});
    else if (ctx.Rank(v) == 1) c = ctx.Unsqueeze(c, {1});
    cols.push_back(c);
  }
  auto* n = ctx.Emit("Concat", cols, {ctx.Out(result)});
  SetAttr(n, "axis", int64_t{1});
  return Status::Ok();
}

// trapezoid / trapz / cumulative_trapezoid(y, x, *, dx, dim), torch's formulas: with a spacing dx
// (default 1), (sum(y) - (y[0] + y[-1]) * 0.5) * dx, cumulative: cumsum(dx / 2 * (y[1:] + y[:-1]));
// with sample points x (1-D, or y's shape), dx = diff(x) and sum / cumsum of dx * (y[1:] + y[:-1]) / 2.
Status LowerTrapezoidTorch(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId yv, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "y", &yv));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(result);
  if (d != v1::FLOAT32 && d != v1::FLOAT64) return Status::Unsupported(ctx.canonical() + " in " + DTypeName(d));
  const bool cumulative = ctx.canonical() == "cumulative_trapezoid";
  const int rank = ctx.Rank(yv);
  auto dim = call.Int("dim");
  if (!dim) return Status::Unsupported("dim is not an int");
  if (rank == 0) return Status::Unsupported("a 0-d y");
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, rank, &axis));
  if (ctx.Shape(yv)[axis] == 0) return Status::Unsupported("an empty dim");
  const std::string y = ctx.CastTo(ctx.In(yv), ctx.DType(yv), d);
  const std::string big = ctx.Int64s({std::numeric_limits<int64_t>::max()});
  auto slice = [&](const std::string& v, int64_t lo, const std::string& hi, int64_t ax) {
    return ctx.EmitTemp("Slice", {v, ctx.Int64s({lo}), hi, ctx.Int64s({ax})});
  };
  const std::string right = slice(y, 1, big, axis), left = slice(y, 0, ctx.Int64s({-1}), axis);
  const std::string pair = ctx.EmitTemp("Add", {right, left});
  const bool has_x = call.Has("x") && !call.IsNone("x");
  const bool has_dx = call.Has("dx") && !call.IsNone("dx");
  if (has_x && has_dx) return Status::Unsupported("both x and dx");
  std::string terms;
  if (!has_x) {
    double dx = 1.0;
    if (has_dx) {
      auto v = call.Double("dx");
      if (!v) return Status::Unsupported("dx is not a number");
      dx = *v;
    }
    if (!cumulative) {
      onnx::NodeProto* r = nullptr;
      const std::string sum = ctx.EmitTemp("ReduceSum", {y, ctx.Int64s({axis})}, &r);
      SetAttr(r, "keepdims", int64_t{0});
      auto at = [&](int64_t i) {
        onnx::NodeProto* g = nullptr;
        const std::string out = ctx.EmitTemp("Gather", {y, ctx.Scalar(Number::Int(i), v1::INT64)}, &g);
        SetAttr(g, "axis", axis);
        return out;
      };
      const std::string ends = ctx.EmitTemp("Mul", {ctx.EmitTemp("Add", {at(0), at(-1)}), F(ctx, 0.5, d)});
      ctx.Emit("Mul", {ctx.EmitTemp("Sub", {sum, ends}), F(ctx, dx, d)}, {ctx.Out(result)});
      return Status::Ok();
    }
    terms = ctx.EmitTemp("Mul", {F(ctx, dx / 2.0, d), pair});
  } else {
    ValueId xv;
    IVY_RETURN_IF_ERROR(TensorParam(call, "x", &xv));
    std::string xs = ctx.CastTo(ctx.In(xv), ctx.DType(xv), d);
    int64_t xaxis = axis;
    if (ctx.Rank(xv) == 1 && rank > 1) {
      xaxis = 0;
    } else if (ctx.Rank(xv) != rank) {
      return Status::Unsupported("sample points x that are neither 1-D nor of y's rank");
    }
    std::string dxs = ctx.EmitTemp("Sub", {slice(xs, 1, big, xaxis), slice(xs, 0, ctx.Int64s({-1}), xaxis)});
    if (xaxis != axis) {  // a 1-D x lies along dim
      std::vector<int64_t> tail;
      for (int64_t k = 1; k < rank - axis; ++k) tail.push_back(k);
      if (!tail.empty()) dxs = ctx.Unsqueeze(dxs, tail);
    }
    terms = ctx.EmitTemp("Div", {ctx.EmitTemp("Mul", {dxs, pair}), F(ctx, 2.0, d)});
  }
  if (cumulative) {
    ctx.Emit("CumSum", {terms, ctx.Scalar(Number::Int(axis), v1::INT64)}, {ctx.Out(result)});
  } else {
    auto* r = ctx.Emit("ReduceSum", {terms, ctx.Int64s({axis})}, {ctx.Out(result)});
    SetAttr(r, "keepdims", int64_t{0});
  }
  return Status::Ok();
}

// Canonical ops both the torch and the NumPy lowerings were written for in one session (two
// engineers, one table row): each framework's calls go to the lowering its cases were checked
// with. One lowering per op is the aim; unifying these needs each to take the other's cases.

Status LowerInnerByFramework(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  return FromTorch(node) ? LowerInnerTorch(node, call, ctx) : LowerInner(node, call, ctx);
}

Status LowerCrossByFramework(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  return FromTorch(node) ? LowerCrossTorch(node, call, ctx) : LowerCross(node, call, ctx);
}

Status LowerDiagByFramework(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  return FromTorch(node) ? LowerDiagTorch(node, call, ctx) : LowerDiag(node, call, ctx);
}

Status LowerIsinByFramework(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  return FromTorch(node) ? LowerIsinTorch(node, call, ctx) : LowerIsin(node, call, ctx);
}

Status LowerTensordotByFramework(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  return FromTorch(node) ? LowerTensordotTorch(node, call, ctx) : LowerTensordot(node, call, ctx);
}

Status LowerColumnStackByFramework(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  return FromTorch(node) ? LowerColumnStackTorch(node, call, ctx) : LowerColumnStack(node, call, ctx);
}

Status LowerTrapezoidByFramework(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  return FromTorch(node) ? LowerTrapezoidTorch(node, call, ctx) : LowerTrapezoid(node, call, ctx);
}

}  // namespace onnx_export
}  // namespace ivytrace
