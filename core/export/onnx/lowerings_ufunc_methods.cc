// NumPy ufunc methods (issue 11): `np.<ufunc>.outer` for every binary ufunc, and `.accumulate`
// for the ufuncs whose running result ONNX can compute exactly (maximum, minimum, fmax, fmin, the
// logical and bitwise-bool ones; add and multiply are cumsum and cumprod, see normalize.cc). Also
// lax.cummax_p / cummin_p, which are maximum/minimum accumulations with `reverse`.
//
// `.outer` reuses the ufunc's own lowering: the first operand is read through an Unsqueeze that
// gives it one trailing axis per axis of the second, so the ufunc's broadcast is the outer one.
// `.reduce` of the other ufuncs (subtract, divide, power, ...) is refused: NumPy folds them in
// order, and no ONNX reduction reproduces that order.
#include <limits>

#include "core/export/onnx/lowering_table.h"
#include "core/export/onnx/lowerings.h"
#include "core/export/onnx/lowerings_rebind.h"
#include "core/ir/arg.h"

namespace ivytrace {
namespace onnx_export {

namespace {

bool EndsWith(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

}  // namespace

// np.<ufunc>.outer(a, b): ufunc(a[..., None * b.ndim], b).
Status LowerUfuncOuter(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  const std::string canonical = ctx.canonical();
  if (!EndsWith(canonical, "_outer")) return Status::Unsupported("'outer' lowering for " + canonical);
  std::string base = canonical.substr(0, canonical.size() - 6);
  const v1::Arg* a = call.Get("input");
  const v1::Arg* b = call.Get("other");
  if (!a || !b) return Status::Unsupported("missing operand");
  BoundCall inner = call;
  if (base == "floor_divide") {
    base = "div";
    v1::Arg mode;
    mode.set_s("floor");
    inner.Set("rounding_mode", std::move(mode));
  }
  if (base == "pow") inner.Set("exponent", *b);
  const CanonicalLowering* row = FindCanonicalLowering(base);
  if (!row) return Status::Unsupported("ufunc '" + base + "' has no lowering");
  const int nb = b->kind_case() == v1::Arg::kTensor ? ctx.Rank(b->tensor().value()) : 0;
  Rebinding rebind(ctx);
  if (a->kind_case() == v1::Arg::kTensor && nb > 0) {
    const ValueId va = a->tensor().value();
    if (b->kind_case() == v1::Arg::kTensor && b->tensor().value() == va) {
      // One value can be read under one name only while the ufunc's lowering runs.
      return Status::Unsupported("np.<ufunc>.outer of an array with itself (write np.<ufunc>.outer(x, x.copy()))");
    }
    const int na = ctx.Rank(va);
    std::vector<int64_t> axes;
    for (int k = 0; k < nb; ++k) axes.push_back(na + k);
    rebind.Bind(va, ctx.Unsqueeze(ctx.In(va), axes));
  }
  return rebind.Run(row->fn, node, inner, base);
}

namespace {

// x.shape[axis] as a 0-d int64.
std::string DimLength(LoweringContext& ctx, const std::string& x, int64_t axis) {
  onnx::NodeProto* g = nullptr;
  const std::string size = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {x}), ctx.Scalar(Number::Int(axis), v1::INT64)}, &g);
  SetAttr(g, "axis", int64_t{0});
  return size;
}

// The largest / smallest value of `d` (the identity of max / min), as a Number.
Number Lowest(v1::DType d) {
  switch (d) {
    case v1::INT32: return Number::Int(std::numeric_limits<int32_t>::min());
    case v1::INT64: return Number::Int(std::numeric_limits<int64_t>::min());
    case v1::INT8: return Number::Int(std::numeric_limits<int8_t>::min());
    case v1::UINT8: return Number::Int(0);
    default: return Number::Float(-std::numeric_limits<double>::infinity());
  }
}
Number Highest(v1::DType d) {
  switch (d) {
    case v1::INT32: return Number::Int(std::numeric_limits<int32_t>::max());
    case v1::INT64: return Number::Int(std::numeric_limits<int64_t>::max());
    case v1::INT8: return Number::Int(std::numeric_limits<int8_t>::max());
    case v1::UINT8: return Number::Int(255);
    default: return Number::Float(std::numeric_limits<double>::infinity());
  }
}

}  // namespace

// Running max/min along `axis` of `in` (of dtype `d`, rank `rank` >= 1), NaN handled as the ufunc
// does: `propagate` (maximum/minimum, lax.cummax/cummin): NaN from the first NaN on; otherwise
// (fmax/fmin): NaN only while every item so far is NaN. A triangular mask over a new axis of
// input positions (as cumprod) and ReduceMax/ReduceMin; NaN never reaches the reduction.
std::string RunningExtreme(LoweringContext& ctx, const std::string& in, v1::DType d, int rank, int64_t axis, bool max,
                           bool propagate, bool reverse) {
  const std::string n = DimLength(ctx, in, axis);
  const std::string pos = ctx.EmitTemp("Range", {ctx.Scalar(Number::Int(0), v1::INT64), n, ctx.Scalar(Number::Int(1), v1::INT64)});
  const std::string i = ctx.Unsqueeze(pos, {1}), j = ctx.Unsqueeze(pos, {0});
  std::string mask = ctx.EmitTemp(reverse ? "GreaterOrEqual" : "LessOrEqual", {j, i});
  std::vector<int64_t> outer, inner;
  for (int64_t k = 0; k < axis; ++k) outer.push_back(k);
  if (!outer.empty()) mask = ctx.Unsqueeze(mask, outer);
  for (int64_t k = axis + 2; k < rank + 1; ++k) inner.push_back(k);
  if (!inner.empty()) mask = ctx.Unsqueeze(mask, inner);
  const std::string fill = ctx.Scalar(max ? Lowest(d) : Highest(d), d);
  std::string clean = in, nan;
  if (IsFloating(d)) {
    nan = ctx.EmitTemp("IsNaN", {in});
    clean = ctx.EmitTemp("Where", {nan, fill, in});
  }
  const std::string masked = ctx.EmitTemp("Where", {mask, ctx.Unsqueeze(clean, {axis}), fill});
  onnx::NodeProto* r = nullptr;
  std::string out = ctx.EmitTemp(max ? "ReduceMax" : "ReduceMin", {masked}, &r);
  SetAttr(r, "axes", std::vector<int64_t>{axis + 1});
  SetAttr(r, "keepdims", int64_t{0});
  if (IsFloating(d)) {
    // How many NaN (propagate) or non-NaN (fmax/fmin) items the running window holds.
    const std::string counted = propagate ? nan : ctx.EmitTemp("Not", {nan});
    auto* c = ctx.Emit("CumSum", {ctx.CastTo(counted, v1::BOOL, v1::INT32), ctx.Scalar(Number::Int(axis), v1::INT64)},
                       {ctx.Temp("count")});
    if (reverse) SetAttr(c, "reverse", int64_t{1});
    const std::string count = c->output(0);
    const std::string zero = ctx.Scalar(Number::Int(0), v1::INT32);
    const std::string is_nan = propagate ? ctx.EmitTemp("Greater", {count, zero}) : ctx.EmitTemp("Equal", {count, zero});
    out = ctx.EmitTemp("Where", {is_nan, ctx.Scalar(Number::Float(std::numeric_limits<double>::quiet_NaN()), d), out});
  }
  return out;
}

// np.<ufunc>.accumulate(a, axis=0, dtype=None) for maximum, minimum, fmax, fmin, logical_and,
// logical_or (and bitwise_and/or of bools); lax.cummax_p / cummin_p(operand, axis, reverse).
Status LowerUfuncAccumulate(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const std::string& c = ctx.canonical();
  const v1::DType d = ctx.DType(result);
  const int rank = ctx.Rank(x);
  if (rank == 0) return Status::Unsupported(c + " of a 0-d array");
  auto dim = call.Int("dim");
  if (!dim) return Status::Unsupported("axis " + (call.Get("dim") ? ArgToString(*call.Get("dim"), true) : "missing") +
                                       " is not an int");
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, rank, &axis));
  if (!call.IsNone("dtype")) {  // the input is cast to the result's dtype below
    auto want = ArgDType(*call.Get("dtype"));
    if (!want || *want != d) return Status::Unsupported(c + " with dtype " + ArgToString(*call.Get("dtype"), true));
  }
  const bool reverse = call.Has("reverse") && call.Bool("reverse").value_or(false);
  const bool logical_and = c == "logical_and_accumulate" || c == "bitwise_and_accumulate" ||
                           ((c == "minimum_accumulate" || c == "fmin_accumulate" || c == "cummin") && d == v1::BOOL);
  const bool logical_or = c == "logical_or_accumulate" || c == "bitwise_or_accumulate" ||
                          ((c == "maximum_accumulate" || c == "fmax_accumulate" || c == "cummax") && d == v1::BOOL);
  if (logical_and || logical_or) {
    if ((c == "bitwise_and_accumulate" || c == "bitwise_or_accumulate") && (d != v1::BOOL || ctx.DType(x) != v1::BOOL)) {
      return Status::Unsupported(c + " of integers (ONNX opset 17 has no bitwise And/Or)");
    }
    // and: no False so far; or: some True so far. Counted with a CumSum.
    std::string b = ctx.CastTo(ctx.In(x), ctx.DType(x), v1::BOOL);
    if (logical_and) b = ctx.EmitTemp("Not", {b});
    auto* cs = ctx.Emit("CumSum", {ctx.CastTo(b, v1::BOOL, v1::INT32), ctx.Scalar(Number::Int(axis), v1::INT64)},
                        {ctx.Temp("count")});
    if (reverse) SetAttr(cs, "reverse", int64_t{1});
    const std::string zero = ctx.Scalar(Number::Int(0), v1::INT32);
    const std::string r = ctx.EmitTemp(logical_and ? "Equal" : "Greater", {cs->output(0), zero});
    ctx.Emit("Identity", {ctx.CastTo(r, v1::BOOL, d)}, {ctx.Out(result)});
    return Status::Ok();
  }
  bool max, propagate;
  if (c == "maximum_accumulate" || c == "cummax") max = true, propagate = true;
  else if (c == "minimum_accumulate" || c == "cummin") max = false, propagate = true;
  else if (c == "fmax_accumulate") max = true, propagate = false;
  else if (c == "fmin_accumulate") max = false, propagate = false;
  else return Status::Unsupported("'accumulate' lowering does not know " + c);
  if (d != v1::FLOAT32 && d != v1::FLOAT64 && d != v1::INT32 && d != v1::INT64 && d != v1::UINT8 && d != v1::INT8) {
    return Status::Unsupported(c + " in " + DTypeName(d));
  }
  const std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  ctx.Emit("Identity", {RunningExtreme(ctx, in, d, rank, axis, max, propagate, reverse)}, {ctx.Out(result)});
  return Status::Ok();
}


// lax.cumlogsumexp_p(x, axis, reverse): log(sum_{j<=i} exp(x_j - m_i)) + m_i with m_i the running
// max (the triangular mask of RunningExtreme); m_i itself where it is infinite (a window of -inf
// gives -inf, one holding +inf gives +inf), NaN from the first NaN on.
Status LowerCumLogSumExp(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(result);
  if (d != v1::FLOAT32 && d != v1::FLOAT64) return Status::Unsupported(std::string("cumlogsumexp in ") + DTypeName(d));
  const int rank = ctx.Rank(x);
  if (rank == 0) return Status::Unsupported("cumlogsumexp of a 0-d array");
  auto dim = call.Int("dim");
  if (!dim) return Status::Unsupported("axis is not an int");
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, rank, &axis));
  const bool reverse = call.Bool("reverse").value_or(false);
  const std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  const std::string m = RunningExtreme(ctx, in, d, rank, axis, /*max=*/true, /*propagate=*/true, reverse);
  const std::string n = DimLength(ctx, in, axis);
  const std::string pos = ctx.EmitTemp("Range", {ctx.Scalar(Number::Int(0), v1::INT64), n, ctx.Scalar(Number::Int(1), v1::INT64)});
  std::string mask = ctx.EmitTemp(reverse ? "GreaterOrEqual" : "LessOrEqual", {ctx.Unsqueeze(pos, {0}), ctx.Unsqueeze(pos, {1})});
  std::vector<int64_t> outer, inner;
  for (int64_t k = 0; k < axis; ++k) outer.push_back(k);
  if (!outer.empty()) mask = ctx.Unsqueeze(mask, outer);
  for (int64_t k = axis + 2; k < rank + 1; ++k) inner.push_back(k);
  if (!inner.empty()) mask = ctx.Unsqueeze(mask, inner);
  // [.., i, j, ..]: x_j - m_i where j is in i's window.
  const std::string diff = ctx.EmitTemp("Sub", {ctx.Unsqueeze(in, {axis}), ctx.Unsqueeze(m, {axis + 1})});
  const std::string e = ctx.EmitTemp("Exp", {ctx.EmitTemp("Where", {mask, diff, ctx.Scalar(Number::Float(-std::numeric_limits<double>::infinity()), d)})});
  onnx::NodeProto* r = nullptr;
  const std::string sum = ctx.EmitTemp("ReduceSum", {e, ctx.Int64s({axis + 1})}, &r);
  SetAttr(r, "keepdims", int64_t{0});
  const std::string lse = ctx.EmitTemp("Add", {ctx.EmitTemp("Log", {sum}), m});
  ctx.Emit("Where", {ctx.EmitTemp("IsInf", {m}), m, lse}, {ctx.Out(result)});
  return Status::Ok();
}

}  // namespace onnx_export
}  // namespace ivytrace
