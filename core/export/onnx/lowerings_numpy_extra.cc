// More NumPy functions (issue 11), mostly decompositions that reuse existing lowerings:
// the nan-reductions (np.nansum ... np.nancumprod), count_nonzero, deg2rad/rad2deg,
// isposinf/isneginf, signbit, cbrt, rot90, tensordot/inner/vdot/vecdot, cross, diag, atleast_nd.
// Each reads every parameter it is given and refuses what it cannot express exactly. The
// canonical ops are named plainly so that torch's spellings (torch.nansum, torch.rot90(input, k,
// dims), torch.tensordot(a, b, dims), torch.count_nonzero(input, dim)) map onto them too.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/export/onnx/lowering_table.h"
#include "core/export/onnx/lowerings.h"
#include "core/export/onnx/lowerings_rebind.h"
#include "core/ir/arg.h"

namespace ivytrace {
namespace onnx_export {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// dim (an int, ints, or None = every axis) as sorted normalized axes.
Status ReduceAxes(const BoundCall& call, int rank, std::vector<int64_t>* axes) {
  axes->clear();
  if (call.IsNone("dim")) {
    for (int k = 0; k < rank; ++k) axes->push_back(k);
    return Status::Ok();
  }
  auto dims = call.IntList("dim");
  if (!dims) return Status::Unsupported("axis " + ArgToString(*call.Get("dim"), true) + " is not ints");
  for (int64_t d : *dims) {
    int64_t a;
    IVY_RETURN_IF_ERROR(NormalizeAxis(d, rank, &a));
    axes->push_back(a);
  }
  std::sort(axes->begin(), axes->end());
  if (std::adjacent_find(axes->begin(), axes->end()) != axes->end()) return Status::Unsupported("repeated axis");
  return Status::Ok();
}

// ReduceSum of `in` over `axes` (none: `in` unchanged).
std::string SumOver(LoweringContext& ctx, const std::string& in, const std::vector<int64_t>& axes, bool keepdim) {
  if (axes.empty()) return in;
  onnx::NodeProto* n = nullptr;
  const std::string out = ctx.EmitTemp("ReduceSum", {in, ctx.Int64s(axes)}, &n);
  SetAttr(n, "keepdims", int64_t{keepdim ? 1 : 0});
  return out;
}

std::string NumberOf(LoweringContext& ctx, double v, v1::DType d) { return ctx.Scalar(Number::Float(v), d); }

void Define(LoweringContext& ctx, const std::string& value, ValueId result) {
  ctx.Emit("Identity", {value}, {ctx.Out(result)});
}

}  // namespace

// np.nansum/nanprod/nanmax/nanmin/nanargmax/nanargmin/nancumsum/nancumprod/nanmean: the plain
// reduction's lowering on the input with NaN replaced by the reduction's identity (NumPy's own
// definition, _replace_nan); nanmax/nanmin give NaN where every item is NaN, nanmean divides by
// the count of non-NaN items.
Status LowerNanReduce(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const std::string c = ctx.canonical();
  struct Plain {
    std::string_view nan_op, op;
    double fill;
  };
  static const Plain kPlain[] = {
      {"nansum", "sum", 0.0},         {"nanprod", "prod", 1.0},      {"nanmax", "max", -kInf},
      {"nanmin", "min", kInf},        {"nanargmax", "argmax", -kInf}, {"nanargmin", "argmin", kInf},
      {"nancumsum", "cumsum", 0.0},   {"nancumprod", "cumprod", 1.0}, {"nanmean", "sum", 0.0},
  };
  const Plain* p = nullptr;
  for (const Plain& k : kPlain) {
    if (k.nan_op == c) p = &k;
  }
  if (!p) return Status::Unsupported("'nan reduce' lowering does not know " + c);
  const std::string base(p->op);
  const CanonicalLowering* row = FindCanonicalLowering(base);
  if (!row) return Status::Unsupported(base + " has no lowering");
  const v1::DType xd = ctx.DType(x);
  const bool floating = IsFloating(xd);
  if ((c == "nanmax" || c == "nanmin" || c == "nanmean") && floating) {
    for (const char* q : {"initial", "where"}) {
      if (const v1::Arg* a = call.Get(q); a && !IsNone(*a) && !(q[0] == 'w' && AsBool(*a) == true)) {
        return Status::Unsupported(c + " with " + q + "=");
      }
    }
  }
  Rebinding rebind(ctx);
  std::string nan;
  if (floating) {
    const std::string in = ctx.In(x);
    nan = ctx.EmitTemp("IsNaN", {in});
    rebind.Bind(x, ctx.EmitTemp("Where", {nan, NumberOf(ctx, p->fill, xd), in}));
  }
  const bool post = floating && (c == "nanmax" || c == "nanmin" || c == "nanmean");
  const bool ints_mean = !floating && c == "nanmean";
  std::string raw;
  if (post) raw = rebind.BindResult(result, "reduced");
  BoundCall inner = call;
  if (call.Has("where") && call.IsNone("where")) {  // NumPy's "no mask" for the nan-reductions
    v1::Arg all;
    all.set_b(true);
    inner.Set("where", std::move(all));
  }
  IVY_RETURN_IF_ERROR(rebind.Run(row->fn, node, inner, ints_mean ? "mean" : base));
  if (!post) return Status::Ok();
  rebind.Restore();
  const v1::DType d = ctx.DType(result);
  std::vector<int64_t> axes;
  IVY_RETURN_IF_ERROR(ReduceAxes(call, ctx.Rank(x), &axes));
  const bool keepdim = call.Bool("keepdim").value_or(false);
  if (c == "nanmean") {
    const std::string count = SumOver(ctx, ctx.CastTo(ctx.EmitTemp("Not", {nan}), v1::BOOL, d), axes, keepdim);
    ctx.Emit("Div", {raw, count}, {ctx.Out(result)});
    return Status::Ok();
  }
  const std::string seen = SumOver(ctx, ctx.CastTo(ctx.EmitTemp("Not", {nan}), v1::BOOL, v1::INT64), axes, keepdim);
  const std::string all_nan = ctx.EmitTemp("Equal", {seen, ctx.Scalar(Number::Int(0), v1::INT64)});
  ctx.Emit("Where", {all_nan, NumberOf(ctx, kNaN, d), raw}, {ctx.Out(result)});
  return Status::Ok();
}

// np.nanvar / np.nanstd(a, axis, dtype, ddof, keepdims) as NumPy computes them: the mean of the
// non-NaN items, their squared deviations summed and divided by count - ddof (NaN where that is
// not positive).
Status LowerNanVariance(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(result);
  if (!IsFloating(d)) return Status::Unsupported(ctx.canonical() + " with a non-float result");
  if (!call.IsNone("dtype")) {
    auto want = ArgDType(*call.Get("dtype"));
    if (!want || *want != d) return Status::Unsupported("dtype " + ArgToString(*call.Get("dtype"), true));
  }
  auto ddof = call.Double("ddof");
  if (!ddof) return Status::Unsupported("ddof is not a number");
  std::vector<int64_t> axes;
  IVY_RETURN_IF_ERROR(ReduceAxes(call, ctx.Rank(x), &axes));
  const bool keepdim = call.Bool("keepdim").value_or(false);
  const std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  const std::string nan = ctx.EmitTemp("IsNaN", {in});
  const std::string zero = NumberOf(ctx, 0.0, d);
  const std::string filled = ctx.EmitTemp("Where", {nan, zero, in});
  const std::string count_k = SumOver(ctx, ctx.CastTo(ctx.EmitTemp("Not", {nan}), v1::BOOL, d), axes, true);
  const std::string avg = ctx.EmitTemp("Div", {SumOver(ctx, filled, axes, true), count_k});
  const std::string dev = ctx.EmitTemp("Where", {nan, zero, ctx.EmitTemp("Sub", {filled, avg})});
  const std::string sq = SumOver(ctx, ctx.EmitTemp("Mul", {dev, dev}), axes, keepdim);
  const std::string count = SumOver(ctx, ctx.CastTo(ctx.EmitTemp("Not", {nan}), v1::BOOL, d), axes, keepdim);
  const std::string dof = ctx.EmitTemp("Sub", {count, NumberOf(ctx, *ddof, d)});
  std::string var = ctx.EmitTemp("Div", {sq, dof});
  if (ctx.canonical() == "nanstd") var = ctx.EmitTemp("Sqrt", {var});
  ctx.Emit("Where", {ctx.EmitTemp("LessOrEqual", {dof, zero}), NumberOf(ctx, kNaN, d), var}, {ctx.Out(result)});
  return Status::Ok();
}

// count_nonzero(input, dim=None, keepdim=False): the items != 0 (True for bools), summed as int64.
Status LowerCountNonzero(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  std::vector<int64_t> axes;
  IVY_RETURN_IF_ERROR(ReduceAxes(call, ctx.Rank(x), &axes));
  const bool keepdim = call.Bool("keepdim").value_or(false);
  const v1::DType xd = ctx.DType(x);
  std::string nz;
  if (xd == v1::BOOL) nz = ctx.In(x);
  else nz = ctx.EmitTemp("Not", {ctx.EmitTemp("Equal", {ctx.In(x), ctx.Scalar(Number::Int(0), xd)})});
  std::string out = ctx.CastTo(nz, v1::BOOL, v1::INT64);
  if (ctx.Rank(x) > 0) out = SumOver(ctx, out, axes, keepdim);
  Define(ctx, ctx.CastTo(out, v1::INT64, ctx.DType(result)), result);
  return Status::Ok();
}

// deg2rad/rad2deg (np.radians, np.degrees): a product with pi/180 or 180/pi in the result's dtype,
// the constant NumPy's loops use.
Status LowerAngleUnits(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(result);
  if (!IsFloating(d)) return Status::Unsupported(ctx.canonical() + " with a non-float result");
  const double k = ctx.canonical() == "deg2rad" ? M_PI / 180.0 : 180.0 / M_PI;
  ctx.Emit("Mul", {ctx.CastTo(ctx.In(x), ctx.DType(x), d), NumberOf(ctx, k, d)}, {ctx.Out(result)});
  return Status::Ok();
}

// isposinf/isneginf: IsInf of one sign (False for integers and bools).
Status LowerSignedInf(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType xd = ctx.DType(x);
  std::string out;
  if (IsFloating(xd)) {
    onnx::NodeProto* n = nullptr;
    out = ctx.EmitTemp("IsInf", {ctx.CastTo(ctx.In(x), xd, xd == v1::FLOAT64 ? v1::FLOAT64 : v1::FLOAT32)}, &n);
    const bool pos = ctx.canonical() == "isposinf";
    SetAttr(n, "detect_positive", int64_t{pos ? 1 : 0});
    SetAttr(n, "detect_negative", int64_t{pos ? 0 : 1});
  } else {
    const std::string b = ctx.CastTo(ctx.In(x), xd, v1::BOOL);
    out = ctx.EmitTemp("And", {b, ctx.EmitTemp("Not", {b})});  // False everywhere, the input's shape
  }
  Define(ctx, ctx.CastTo(out, v1::BOOL, ctx.DType(result)), result);
  return Status::Ok();
}

// signbit: x < 0, or x is -0.0 (1/x is -inf). ONNX cannot read the sign bit of a NaN: a NaN gives
// False (NumPy's answer for the NaN its functions return on this platform is True for some, e.g.
// np.sqrt(-1.0)); the test's NaN are positive.
Status LowerSignbit(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType xd = ctx.DType(x);
  const std::string in = ctx.In(x);
  std::string out;
  if (xd == v1::BOOL) {
    out = ctx.EmitTemp("And", {in, ctx.EmitTemp("Not", {in})});
  } else if (xd == v1::UINT8) {
    out = ctx.EmitTemp("Less", {in, ctx.Scalar(Number::Int(0), xd)});
  } else {
    const std::string zero = ctx.Scalar(Number::Int(0), xd);
    out = ctx.EmitTemp("Less", {in, zero});
    if (IsFloating(xd)) {
      const std::string neg_zero =
          ctx.EmitTemp("Less", {ctx.EmitTemp("Div", {ctx.Scalar(Number::Int(1), xd), in}), zero});
      out = ctx.EmitTemp("Or", {out, ctx.EmitTemp("And", {ctx.EmitTemp("Equal", {in, zero}), neg_zero})});
    }
  }
  Define(ctx, ctx.CastTo(out, v1::BOOL, ctx.DType(result)), result);
  return Status::Ok();
}

// cbrt (np.cbrt, lax.cbrt_p): |x|^(1/3) with x's sign. Not bit-exact (a Pow, not a cube root):
// within 2 ulp of the framework's for finite x; 0, -0, +-inf and NaN exact.
Status LowerCbrt(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(result);
  if (d != v1::FLOAT32 && d != v1::FLOAT64) return Status::Unsupported(std::string("cbrt in ") + DTypeName(d));
  if (call.Has("accuracy") && !call.IsNone("accuracy")) return Status::Unsupported("lax.cbrt with accuracy=");
  const std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  const std::string mag = ctx.EmitTemp("Pow", {ctx.EmitTemp("Abs", {in}), NumberOf(ctx, 1.0 / 3.0, d)});
  const std::string neg = ctx.EmitTemp("Less", {in, NumberOf(ctx, 0.0, d)});
  // Where keeps -0.0 (Neg of the magnitude) and NaN.
  ctx.Emit("Where", {neg, ctx.EmitTemp("Neg", {mag}), ctx.EmitTemp("Where", {ctx.EmitTemp("Equal", {in, NumberOf(ctx, 0.0, d)}), in, mag})},
           {ctx.Out(result)});
  return Status::Ok();
}

namespace {

// `x` reversed along `axis`.
std::string FlipAxis(LoweringContext& ctx, const std::string& x, int64_t axis) {
  return ctx.EmitTemp("Slice", {x, ctx.Int64s({-1}), ctx.Int64s({std::numeric_limits<int64_t>::min()}), ctx.Int64s({axis}),
                                ctx.Int64s({-1})});
}

}  // namespace

// rot90(input, k=1, dims=(0, 1)) (np.rot90's axes, torch.rot90's dims): NumPy's definition, a flip
// of dims[1] then a swap of the two dims (k = 1), both flips (k = 2), a swap then a flip (k = 3).
Status LowerRot90(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  auto k = call.Int("k");
  if (!k) return Status::Unsupported("k is not an int");
  auto dims = call.IntList("dims");
  if (!dims || dims->size() != 2) return Status::Unsupported("dims is not two ints");
  const int rank = ctx.Rank(x);
  if (rank < 2) return Status::Unsupported("rot90 of an array of rank < 2");
  int64_t a0, a1;
  IVY_RETURN_IF_ERROR(NormalizeAxis((*dims)[0], rank, &a0));
  IVY_RETURN_IF_ERROR(NormalizeAxis((*dims)[1], rank, &a1));
  if (a0 == a1) return Status::Unsupported("rot90 with equal axes");
  const int64_t turns = ((*k % 4) + 4) % 4;
  std::string out = ctx.In(x);
  std::vector<int64_t> perm(rank);
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[a0], perm[a1]);
  auto transpose = [&](const std::string& v) {
    onnx::NodeProto* t = nullptr;
    const std::string r = ctx.EmitTemp("Transpose", {v}, &t);
    SetAttr(t, "perm", perm);
    return r;
  };
  if (turns == 1) out = transpose(FlipAxis(ctx, out, a1));
  else if (turns == 2) out = FlipAxis(ctx, FlipAxis(ctx, out, a0), a1);
  else if (turns == 3) out = FlipAxis(ctx, transpose(out), a1);
  Define(ctx, out, result);
  return Status::Ok();
}

namespace {

// An Einsum of two operands of the result's dtype (float32/float64/int32/int64).
Status EinsumOf(LoweringContext& ctx, ValueId result, const std::string& eq, const v1::Arg& a, const v1::Arg& b) {
  const v1::DType d = ctx.DType(result);
  if (d != v1::FLOAT32 && d != v1::FLOAT64 && d != v1::INT32 && d != v1::INT64) {
    return Status::Unsupported(std::string("a contraction in ") + DTypeName(d));
  }
  std::string lhs, rhs;
  IVY_RETURN_IF_ERROR(OperandAs(ctx, a, d, &lhs));
  IVY_RETURN_IF_ERROR(OperandAs(ctx, b, d, &rhs));
  auto* n = ctx.Emit("Einsum", {lhs, rhs}, {ctx.Out(result)});
  SetAttr(n, "equation", eq);
  return Status::Ok();
}

std::string Letters(const std::vector<int>& ids) {
  std::string s;
  for (int i : ids) s += static_cast<char>('a' + i);
  return s;
}

}  // namespace

// tensordot(input, other, dims=2) (np.tensordot's axes, torch.tensordot's dims): an int N (the
// last N axes of input against the first N of other) or two lists of axes; an Einsum.
Status LowerTensordot(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId a, b, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &a));
  IVY_RETURN_IF_ERROR(TensorParam(call, "other", &b));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const int ra = ctx.Rank(a), rb = ctx.Rank(b);
  std::vector<int64_t> ax, bx;
  const v1::Arg* dims = call.Get("dims");
  if (!dims) return Status::Unsupported("tensordot without dims");
  if (auto n = AsInt(*dims)) {
    if (*n < 0 || *n > ra || *n > rb) return Status::Unsupported("tensordot dims " + std::to_string(*n));
    for (int64_t k = 0; k < *n; ++k) ax.push_back(ra - *n + k), bx.push_back(k);
  } else {
    auto items = SequenceItems(*dims);
    if (!items || items->size() != 2) return Status::Unsupported("tensordot dims " + ArgToString(*dims, true));
    for (int side = 0; side < 2; ++side) {
      const v1::Arg& s = *(*items)[side];
      std::vector<int64_t> v;
      if (auto i = AsInt(s)) v = {*i};
      else if (auto l = AsIntList(s)) v = *l;
      else return Status::Unsupported("tensordot dims " + ArgToString(*dims, true));
      for (int64_t& d : v) IVY_RETURN_IF_ERROR(NormalizeAxis(d, side == 0 ? ra : rb, &d));
      (side == 0 ? ax : bx) = v;
    }
    if (ax.size() != bx.size()) return Status::Unsupported("tensordot axes of different lengths");
  }
  if (ra + rb > 26) return Status::Unsupported("tensordot of too many axes");
  std::vector<int> la(ra, -1), lb(rb, -1);
  int next = 0;
  for (size_t k = 0; k < ax.size(); ++k) {
    if (la[ax[k]] != -1 || lb[bx[k]] != -1) return Status::Unsupported("tensordot with a repeated axis");
    la[ax[k]] = lb[bx[k]] = next++;
  }
  std::vector<int> out;
  for (int& l : la) {
    if (l == -1) out.push_back(l = next++);
  }
  for (int& l : lb) {
    if (l == -1) out.push_back(l = next++);
  }
  return EinsumOf(ctx, result, Letters(la) + "," + Letters(lb) + "->" + Letters(out), *call.Get("input"), *call.Get("other"));
}

// np.inner(a, b): a sum over the last axes, the result a.shape[:-1] + b.shape[:-1] (a product when
// one is 0-d).
Status LowerInner(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId a, b, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &a));
  IVY_RETURN_IF_ERROR(TensorParam(call, "other", &b));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const int ra = ctx.Rank(a), rb = ctx.Rank(b);
  if (ra == 0 || rb == 0) {
    if (ra != 0) return Status::Unsupported("inner of an array and a 0-d array");  // a*b, rare
    if (rb != 0) return Status::Unsupported("inner of a 0-d array and an array");
  }
  if (ra + rb > 25) return Status::Unsupported("inner of too many axes");
  std::vector<int> la, lb, out;
  int next = 1;  // 'a' (0) is the summed axis
  for (int k = 0; k + 1 < ra; ++k) la.push_back(next), out.push_back(next++);
  for (int k = 0; k + 1 < rb; ++k) lb.push_back(next), out.push_back(next++);
  if (ra > 0) la.push_back(0);
  if (rb > 0) lb.push_back(0);
  return EinsumOf(ctx, result, Letters(la) + "," + Letters(lb) + "->" + Letters(out), *call.Get("input"), *call.Get("other"));
}

// np.vdot(a, b) of real arrays: the flattened arrays' dot product.
Status LowerVdot(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId a, b, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &a));
  IVY_RETURN_IF_ERROR(TensorParam(call, "other", &b));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(result);
  if (d != v1::FLOAT32 && d != v1::FLOAT64 && d != v1::INT32 && d != v1::INT64) {
    return Status::Unsupported(std::string("vdot in ") + DTypeName(d));
  }
  const std::string fa = ctx.EmitTemp("Reshape", {ctx.CastTo(ctx.In(a), ctx.DType(a), d), ctx.Int64s({-1})});
  const std::string fb = ctx.EmitTemp("Reshape", {ctx.CastTo(ctx.In(b), ctx.DType(b), d), ctx.Int64s({-1})});
  auto* n = ctx.Emit("Einsum", {fa, fb}, {ctx.Out(result)});
  SetAttr(n, "equation", std::string("a,a->"));
  return Status::Ok();
}

// vecdot(input, other, dim=-1) (np.vecdot, np.linalg.vecdot) of real arrays: the broadcast
// product summed over dim.
Status LowerVecdot(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId a, b, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &a));
  IVY_RETURN_IF_ERROR(TensorParam(call, "other", &b));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(result);
  if (d != v1::FLOAT32 && d != v1::FLOAT64 && d != v1::INT32 && d != v1::INT64) {
    return Status::Unsupported(std::string("vecdot in ") + DTypeName(d));
  }
  auto dim = call.Has("dim") ? call.Int("dim") : std::optional<int64_t>(-1);  // the ufunc np.vecdot has no axis
  if (!dim) return Status::Unsupported("axis is not an int");
  const int rank = std::max(ctx.Rank(a), ctx.Rank(b));
  if (*dim >= 0 || *dim < -std::min(ctx.Rank(a), ctx.Rank(b))) {
    return Status::Unsupported("vecdot over axis " + std::to_string(*dim) + " (only a negative axis both operands have)");
  }
  const std::string prod = ctx.EmitTemp("Mul", {ctx.CastTo(ctx.In(a), ctx.DType(a), d), ctx.CastTo(ctx.In(b), ctx.DType(b), d)});
  Define(ctx, SumOver(ctx, prod, {rank + *dim}, false), result);
  return Status::Ok();
}

// np.cross(a, b) / np.linalg.cross of 3-vectors along the last axis: NumPy's formula, each
// component a product minus a product.
Status LowerCross(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId a, b, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &a));
  IVY_RETURN_IF_ERROR(TensorParam(call, "other", &b));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  for (const char* p : {"axisa", "axisb", "axisc", "dim"}) {
    if (const v1::Arg* v = call.Get(p); v && !IsNone(*v) && AsInt(*v) != -1) {
      return Status::Unsupported(std::string("cross with ") + p + "=" + ArgToString(*v, true) + " (only the last axis)");
    }
  }
  if (ctx.Rank(a) == 0 || ctx.Rank(b) == 0 || ctx.Shape(a).back() != 3 || ctx.Shape(b).back() != 3) {
    return Status::Unsupported("cross of vectors that are not 3-vectors along the last axis");
  }
  const v1::DType d = ctx.DType(result);
  if (d == v1::BOOL || d == v1::DTYPE_UNSPECIFIED) return Status::Unsupported("cross of bools");
  const std::string ia = ctx.CastTo(ctx.In(a), ctx.DType(a), d), ib = ctx.CastTo(ctx.In(b), ctx.DType(b), d);
  auto pick = [&](const std::string& v, std::vector<int64_t> idx) {
    onnx::NodeProto* g = nullptr;
    const std::string r = ctx.EmitTemp("Gather", {v, ctx.Int64s(idx)}, &g);
    SetAttr(g, "axis", int64_t{-1});
    return r;
  };
  const std::string p1 = ctx.EmitTemp("Mul", {pick(ia, {1, 2, 0}), pick(ib, {2, 0, 1})});
  const std::string p2 = ctx.EmitTemp("Mul", {pick(ia, {2, 0, 1}), pick(ib, {1, 2, 0})});
  ctx.Emit("Sub", {p1, p2}, {ctx.Out(result)});
  return Status::Ok();
}

namespace {

// The 1-D `in` (of dtype d) on the k-th diagonal of a square matrix of zeros, into `out`.
void VectorOnDiagonal(LoweringContext& ctx, const std::string& in, v1::DType d, int64_t k, const std::string& out) {
  const std::string len = ctx.EmitTemp("Shape", {in});
  const std::string n = ctx.EmitTemp("Squeeze", {ctx.EmitTemp("Add", {len, ctx.Int64s({std::abs(k)})}), ctx.Int64s({0})});
  const std::string pos = ctx.EmitTemp("Range", {ctx.Scalar(Number::Int(0), v1::INT64), n, ctx.Scalar(Number::Int(1), v1::INT64)});
  const std::string i = ctx.Unsqueeze(pos, {1}), j = ctx.Unsqueeze(pos, {0});
  const std::string on = ctx.EmitTemp("Equal", {ctx.EmitTemp("Sub", {j, i}), ctx.Scalar(Number::Int(k), v1::INT64)});
  // The item at (i, j) on the diagonal is v[i] (k >= 0) or v[j] (k < 0); clipped elsewhere.
  const std::string last = ctx.EmitTemp("Sub", {ctx.EmitTemp("Squeeze", {len, ctx.Int64s({0})}), ctx.Scalar(Number::Int(1), v1::INT64)});
  const std::string idx = ctx.EmitTemp("Min", {ctx.EmitTemp("Max", {k >= 0 ? i : j, ctx.Scalar(Number::Int(0), v1::INT64)}), last});
  onnx::NodeProto* c = nullptr;
  const std::string square = ctx.EmitTemp("Concat", {ctx.Unsqueeze(n, {0}), ctx.Unsqueeze(n, {0})}, &c);
  SetAttr(c, "axis", int64_t{0});
  const std::string wide = ctx.EmitTemp("Expand", {idx, square});
  onnx::NodeProto* g = nullptr;
  const std::string vals = ctx.EmitTemp("Gather", {in, wide}, &g);
  SetAttr(g, "axis", int64_t{0});
  EmitWhere(ctx, on, vals, ctx.Scalar(Number::Int(0), d), d, out);
}

}  // namespace

// np.diag(v, k): a 2-D array's k-th diagonal (diagonal's lowering), or a 1-D array on the k-th
// diagonal of a square matrix of zeros; np.diagflat(v, k): the flattened v on the diagonal.
Status LowerDiag(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId v, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &v));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  auto k = call.Int("diagonal");
  if (!k) return Status::Unsupported("k is not an int");
  const bool flat = ctx.canonical() == "diagflat";
  if (!flat && ctx.Rank(v) == 2) {
    const CanonicalLowering* row = FindCanonicalLowering("diagonal");
    BoundCall inner = call;
    v1::Arg i;
    i.set_i(*k);
    inner.Set("offset", i);
    i.set_i(0);
    inner.Set("axis1", i);
    i.set_i(1);
    inner.Set("axis2", i);
    Rebinding rebind(ctx);
    return rebind.Run(row->fn, node, inner, "diagonal");
  }
  if (!flat && ctx.Rank(v) != 1) return Status::Unsupported("diag of an array that is not 1-D or 2-D");
  std::string in = ctx.CastTo(ctx.In(v), ctx.DType(v), ctx.DType(result));
  if (flat && ctx.Rank(v) != 1) in = ctx.EmitTemp("Reshape", {in, ctx.Int64s({-1})});
  VectorOnDiagonal(ctx, in, ctx.DType(result), *k, ctx.Out(result));
  return Status::Ok();
}

// np.atleast_1d/2d/3d(*arys): each array reshaped as NumPy does (0-d -> [1], [1, 1], [1, 1, 1];
// 1-D [n] -> [1, n], [1, n, 1]; 2-D [m, n] -> [m, n, 1] for 3d); one result per array.
Status LowerAtleastNd(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  int nd = 0;
  // torch.atleast_1d/2d/3d reshape as NumPy does.
  if (node.op == "numpy.atleast_1d" || node.op == "torch.atleast_1d") nd = 1;
  else if (node.op == "numpy.atleast_2d" || node.op == "torch.atleast_2d") nd = 2;
  else if (node.op == "numpy.atleast_3d" || node.op == "torch.atleast_3d") nd = 3;
  else return Status::Unsupported("atleast_nd of " + node.op);
  const v1::Arg* arys = call.Get(call.Has("arys") ? "arys" : "tensors");
  auto items = arys ? SequenceItems(*arys) : std::nullopt;
  if (!items) return Status::Unsupported("arys is not a list of arrays");
  std::vector<ValueId> results;
  ForEachTensor(node.result, [&](const v1::TensorRef& t) { results.push_back(t.value()); });
  if (results.size() != items->size()) return Status::Unsupported("atleast_nd results do not match its arrays");
  for (size_t k = 0; k < items->size(); ++k) {
    if ((*items)[k]->kind_case() != v1::Arg::kTensor) return Status::Unsupported("atleast_nd of a non-array");
    const ValueId x = (*items)[k]->tensor().value();
    const int r = ctx.Rank(x);
    std::vector<int64_t> axes;
    if (r < nd) {
      if (r == 0) for (int a = 0; a < nd; ++a) axes.push_back(a);
      else if (nd == 2) axes = {0};
      else if (r == 1) axes = {0, 2};
      else axes = {2};
    }
    ctx.Emit("Identity", {axes.empty() ? ctx.In(x) : ctx.Unsqueeze(ctx.In(x), axes)}, {ctx.Out(results[k])});
  }
  return Status::Ok();
}


namespace {

// The tensor items of a list/tuple parameter; Unsupported for anything else.
Status ArrayItems(const BoundCall& call, const char* param, std::vector<ValueId>* out) {
  const v1::Arg* a = call.Get(param);
  auto items = a ? SequenceItems(*a) : std::nullopt;
  if (!items || items->empty()) return Status::Unsupported(std::string(param) + " is not a list of arrays");
  for (const v1::Arg* it : *items) {
    if (it->kind_case() != v1::Arg::kTensor) return Status::Unsupported(std::string(param) + " holds a non-array");
    out->push_back(it->tensor().value());
  }
  return Status::Ok();
}

}  // namespace

// np.column_stack(tup): 1-D (and 0-d) arrays as columns, 2-D arrays as they are, concatenated
// along axis 1.
Status LowerColumnStack(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  std::vector<ValueId> xs;
  IVY_RETURN_IF_ERROR(ArrayItems(call, "tup", &xs));
  const v1::DType d = ctx.DType(result);
  std::vector<std::string> cols;
  for (ValueId x : xs) {
    std::string v = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
    if (ctx.Rank(x) == 0) v = ctx.Unsqueeze(v, {0, 1});
    else if (ctx.Rank(x) == 1) v = ctx.Unsqueeze(v, {1});
    cols.push_back(v);
  }
  auto* n = ctx.Emit("Concat", cols, {ctx.Out(result)});
  SetAttr(n, "axis", int64_t{1});
  return Status::Ok();
}

// np.append(arr, values, axis=None): both flattened and concatenated, or concatenated along axis.
Status LowerAppend(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(result);
  std::string a, b;
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *call.Get("arr"), d, &a));
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *call.Get("values"), d, &b));
  int64_t axis = 0;
  if (call.IsNone("dim")) {
    a = ctx.EmitTemp("Reshape", {a, ctx.Int64s({-1})});
    b = ctx.EmitTemp("Reshape", {b, ctx.Int64s({-1})});
  } else {
    auto dim = call.Int("dim");
    if (!dim) return Status::Unsupported("axis is not an int");
    IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, ctx.Rank(result), &axis));
    for (const char* p : {"arr", "values"}) {
      const v1::Arg* v = call.Get(p);
      if (v->kind_case() != v1::Arg::kTensor || ctx.Rank(v->tensor().value()) != ctx.Rank(result)) {
        return Status::Unsupported("np.append along an axis of arrays of another rank");
      }
    }
  }
  auto* n = ctx.Emit("Concat", {a, b}, {ctx.Out(result)});
  SetAttr(n, "axis", axis);
  return Status::Ok();
}

// np.matvec(A, v) / np.vecmat(v, A) of real arrays: a MatMul with v as a column / a row.
Status LowerMatvec(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId a, b, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &a));
  IVY_RETURN_IF_ERROR(TensorParam(call, "other", &b));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(result);
  if (d != v1::FLOAT32 && d != v1::FLOAT64 && d != v1::INT32 && d != v1::INT64) {
    return Status::Unsupported(ctx.canonical() + " in " + DTypeName(d));
  }
  const bool matvec = ctx.canonical() == "matvec";
  if (ctx.Rank(matvec ? a : b) < 2 || ctx.Rank(matvec ? b : a) < 1) return Status::Unsupported(ctx.canonical() + " of too few axes");
  const std::string ia = ctx.CastTo(ctx.In(a), ctx.DType(a), d), ib = ctx.CastTo(ctx.In(b), ctx.DType(b), d);
  if (matvec) {
    ctx.Emit("Squeeze", {ctx.EmitTemp("MatMul", {ia, ctx.Unsqueeze(ib, {-1})}), ctx.Int64s({-1})}, {ctx.Out(result)});
  } else {
    ctx.Emit("Squeeze", {ctx.EmitTemp("MatMul", {ctx.Unsqueeze(ia, {-2}), ib}), ctx.Int64s({-2})}, {ctx.Out(result)});
  }
  return Status::Ok();
}

// np.linalg.multi_dot(arrays): MatMuls left to right (NumPy may pick another order for three or
// more: the same sums, rounded otherwise); a first 1-D array is a row, a last one a column.
Status LowerMultiDot(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  std::vector<ValueId> xs;
  IVY_RETURN_IF_ERROR(ArrayItems(call, "arrays", &xs));
  if (xs.size() < 2) return Status::Unsupported("multi_dot of fewer than two arrays");
  const v1::DType d = ctx.DType(result);
  if (d != v1::FLOAT32 && d != v1::FLOAT64 && d != v1::INT32 && d != v1::INT64) {
    return Status::Unsupported(std::string("multi_dot in ") + DTypeName(d));
  }
  for (size_t k = 1; k + 1 < xs.size(); ++k) {
    if (ctx.Rank(xs[k]) != 2) return Status::Unsupported("multi_dot with an inner array that is not 2-D");
  }
  const bool row = ctx.Rank(xs.front()) == 1, col = ctx.Rank(xs.back()) == 1;
  if ((!row && ctx.Rank(xs.front()) != 2) || (!col && ctx.Rank(xs.back()) != 2)) {
    return Status::Unsupported("multi_dot of arrays that are not 1-D or 2-D");
  }
  std::string acc = ctx.CastTo(ctx.In(xs[0]), ctx.DType(xs[0]), d);
  if (row) acc = ctx.Unsqueeze(acc, {0});
  for (size_t k = 1; k < xs.size(); ++k) {
    std::string m = ctx.CastTo(ctx.In(xs[k]), ctx.DType(xs[k]), d);
    if (k + 1 == xs.size() && col) m = ctx.Unsqueeze(m, {1});
    acc = ctx.EmitTemp("MatMul", {acc, m});
  }
  std::vector<int64_t> drop;  // the row's and the column's axes of the 2-D product
  if (row) drop.push_back(0);
  if (col) drop.push_back(1);
  Define(ctx, drop.empty() ? acc : ctx.Squeeze(acc, drop), result);
  return Status::Ok();
}

// np.rollaxis(a, axis, start=0): a Transpose that moves axis to before start.
Status LowerRollaxis(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const int n = ctx.Rank(x);
  auto axis = call.Int("dim");
  auto start = call.Int("start");
  if (!axis || !start) return Status::Unsupported("axis and start are not ints");
  int64_t a;
  IVY_RETURN_IF_ERROR(NormalizeAxis(*axis, n, &a));
  int64_t s = *start < 0 ? *start + n : *start;
  if (s < 0 || s > n) return Status::Unsupported("rollaxis start out of range");
  std::vector<int64_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  if (a < s) s -= 1;
  if (a != s) {
    perm.erase(perm.begin() + a);
    perm.insert(perm.begin() + s, a);
  }
  auto* t = ctx.Emit("Transpose", {ctx.In(x)}, {ctx.Out(result)});
  SetAttr(t, "perm", perm);
  return Status::Ok();
}

// np.average(a, axis=None, weights=None, keepdims): the mean, or sum(a * w) / sum(w) with w of
// a's shape or 1-D along one axis (returned=True, a pair, is refused).
Status LowerAverage(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (call.Bool("returned").value_or(false)) return Status::Unsupported("np.average with returned=True");
  const v1::DType d = ctx.DType(result);
  if (!IsFloating(d)) return Status::Unsupported("np.average with a non-float result");
  const int rank = ctx.Rank(x);
  std::vector<int64_t> axes;
  IVY_RETURN_IF_ERROR(ReduceAxes(call, rank, &axes));
  const bool keepdim = call.Bool("keepdim").value_or(false);
  const std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  if (call.IsNone("weights")) {
    if (rank == 0) { Define(ctx, in, result); return Status::Ok(); }
    onnx::NodeProto* n = nullptr;
    const std::string m = ctx.EmitTemp("ReduceMean", {in}, &n);
    SetAttr(n, "axes", axes);
    SetAttr(n, "keepdims", int64_t{keepdim ? 1 : 0});
    Define(ctx, m, result);
    return Status::Ok();
  }
  ValueId w;
  IVY_RETURN_IF_ERROR(TensorParam(call, "weights", &w));
  std::string wt = ctx.CastTo(ctx.In(w), ctx.DType(w), d);
  if (ctx.Rank(w) != rank) {
    if (ctx.Rank(w) != 1 || axes.size() != 1) return Status::Unsupported("np.average weights of another shape");
    std::vector<int64_t> other;
    for (int k = 0; k < rank; ++k) if (k != axes[0]) other.push_back(k);
    if (!other.empty()) wt = ctx.Unsqueeze(wt, other);
    wt = ctx.EmitTemp("Expand", {wt, ctx.EmitTemp("Shape", {in})});
  }
  const std::string num = SumOver(ctx, ctx.EmitTemp("Mul", {in, wt}), axes, keepdim);
  const std::string den = SumOver(ctx, ctx.EmitTemp("Expand", {wt, ctx.EmitTemp("Shape", {in})}), axes, keepdim);
  ctx.Emit("Div", {num, den}, {ctx.Out(result)});
  return Status::Ok();
}

// np.fft.fftshift / ifftshift(x, axes=None): a roll of each axis by n // 2 (fftshift) or
// -(n // 2), the split point read from the shape at run time.
Status LowerFftShift(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const int rank = ctx.Rank(x);
  std::vector<int64_t> axes;
  if (call.IsNone("dims")) {
    for (int k = 0; k < rank; ++k) axes.push_back(k);
  } else {
    const v1::Arg* a = call.Get("dims");
    if (auto i = AsInt(*a)) axes = {*i};
    else if (auto l = AsIntList(*a)) axes = *l;
    else return Status::Unsupported("axes is not ints");
    for (int64_t& v : axes) IVY_RETURN_IF_ERROR(NormalizeAxis(v, rank, &v));
  }
  const bool inverse = ctx.canonical() == "ifftshift";
  std::string out = ctx.In(x);
  const std::string shape = ctx.EmitTemp("Shape", {out});
  const std::string big = ctx.Int64s({std::numeric_limits<int64_t>::max()});
  for (int64_t axis : axes) {
    onnx::NodeProto* g = nullptr;
    const std::string n = ctx.EmitTemp("Gather", {shape, ctx.Int64s({axis})}, &g);
    SetAttr(g, "axis", int64_t{0});
    const std::string half = ctx.EmitTemp("Div", {n, ctx.Int64s({2})});
    // The result starts at item n - n//2 (fftshift) or n//2 (ifftshift) of the input.
    const std::string split = inverse ? half : ctx.EmitTemp("Sub", {n, half});
    const std::string ax = ctx.Int64s({axis});
    const std::string head = ctx.EmitTemp("Slice", {out, split, big, ax});
    const std::string tail = ctx.EmitTemp("Slice", {out, ctx.Int64s({0}), split, ax});
    onnx::NodeProto* c = nullptr;
    out = ctx.EmitTemp("Concat", {head, tail}, &c);
    SetAttr(c, "axis", axis);
  }
  Define(ctx, out, result);
  return Status::Ok();
}

// np.kron(a, b): a[i..] * b[k..] at index i * b.shape + k: the operands interleaved over 2r axes
// (the rank r the larger of theirs, the smaller padded with leading 1s) and the pairs merged.
Status LowerKron(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId a, b, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &a));
  IVY_RETURN_IF_ERROR(TensorParam(call, "other", &b));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(result);
  if (d == v1::BOOL) return Status::Unsupported("kron of bools");
  const int r = std::max(ctx.Rank(a), ctx.Rank(b));
  if (r == 0) {
    ctx.Emit("Mul", {ctx.CastTo(ctx.In(a), ctx.DType(a), d), ctx.CastTo(ctx.In(b), ctx.DType(b), d)}, {ctx.Out(result)});
    return Status::Ok();
  }
  auto padded = [&](ValueId v) {
    std::string s = ctx.CastTo(ctx.In(v), ctx.DType(v), d);
    std::vector<int64_t> lead;
    for (int k = 0; k < r - ctx.Rank(v); ++k) lead.push_back(k);
    if (!lead.empty()) s = ctx.Unsqueeze(s, lead);
    return s;
  };
  const std::string pa = padded(a), pb = padded(b);
  std::vector<int64_t> odd, even;
  for (int k = 0; k < r; ++k) odd.push_back(2 * k + 1), even.push_back(2 * k);
  const std::string prod = ctx.EmitTemp("Mul", {ctx.Unsqueeze(pa, odd), ctx.Unsqueeze(pb, even)});
  const std::string shape = ctx.EmitTemp("Mul", {ctx.EmitTemp("Shape", {pa}), ctx.EmitTemp("Shape", {pb})});
  ctx.Emit("Reshape", {prod, shape}, {ctx.Out(result)});
  return Status::Ok();
}

// np.tri(N, M=None, k=0, dtype=float): ones at and below the k-th diagonal.
Status LowerTri(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  auto k = call.Int("k");
  if (!k) return Status::Unsupported("k is not an int");
  const v1::Arg* n = call.Get("N");
  if (!n || !(AsInt(*n) || IsSymbolicArg(ctx, *n))) return Status::Unsupported("N is not an int");
  std::string rows, cols;
  IVY_RETURN_IF_ERROR(DynamicInts(ctx, *n, &rows));
  if (call.IsNone("M")) cols = rows;
  else IVY_RETURN_IF_ERROR(DynamicInts(ctx, *call.Get("M"), &cols));
  auto range = [&](const std::string& len) {
    return ctx.EmitTemp("Range", {ctx.Scalar(Number::Int(0), v1::INT64), ctx.EmitTemp("Squeeze", {len, ctx.Int64s({0})}),
                                  ctx.Scalar(Number::Int(1), v1::INT64)});
  };
  const std::string i = ctx.Unsqueeze(range(rows), {1}), j = ctx.Unsqueeze(range(cols), {0});
  const std::string in = ctx.EmitTemp("LessOrEqual", {j, ctx.EmitTemp("Add", {i, ctx.Scalar(Number::Int(*k), v1::INT64)})});
  Define(ctx, ctx.CastTo(in, v1::BOOL, ctx.DType(result)), result);
  return Status::Ok();
}

// np.select(condlist, choicelist, default=0): NumPy's loop, the last condition first, each a Where.
Status LowerSelectChoices(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* cl = call.Get("condlist");
  const v1::Arg* ch = call.Get("choicelist");
  auto conds = cl ? SequenceItems(*cl) : std::nullopt;
  auto choices = ch ? SequenceItems(*ch) : std::nullopt;
  if (!conds || !choices || conds->size() != choices->size() || conds->empty()) {
    return Status::Unsupported("np.select of lists that are not of one length");
  }
  const v1::DType d = ctx.DType(result);
  std::string out;
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *call.Get("default"), d, &out));
  for (size_t k = conds->size(); k-- > 0;) {
    const v1::Arg& c = *(*conds)[k];
    if (c.kind_case() != v1::Arg::kTensor || ctx.DType(c.tensor().value()) != v1::BOOL) {
      return Status::Unsupported("np.select with a condition that is not a bool array");
    }
    std::string v;
    IVY_RETURN_IF_ERROR(OperandAs(ctx, *(*choices)[k], d, &v));
    const std::string next = k == 0 ? ctx.Temp("selected") : ctx.Temp("select");
    EmitWhere(ctx, ctx.In(c.tensor().value()), v, out, d, next);
    out = next;
  }
  // Where broadcasts; the result has every operand's broadcast shape, default's included.
  Define(ctx, out, result);
  return Status::Ok();
}

// np.isin(element, test_elements, invert=False): whether each element equals one of the
// flattened test elements (a comparison against each; NaN is in nothing).
Status LowerIsin(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "element", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  call.Get("assume_unique");  // hints: the answer is the same
  call.Get("kind");
  const v1::Arg* te = call.Get("test_elements");
  std::string tests;
  v1::DType d;
  if (te && te->kind_case() == v1::Arg::kTensor) {
    const ValueId t = te->tensor().value();
    d = PromotedDType(ctx, {call.Get("element"), te});
    if (d == v1::DTYPE_UNSPECIFIED) return Status::Unsupported("np.isin of these dtypes");
    tests = ctx.CastTo(ctx.In(t), ctx.DType(t), d);
  } else {
    // A list of Python numbers is an int64 or float64 array to NumPy; compared in the common dtype.
    auto items = te ? SequenceItems(*te) : std::nullopt;
    if (!items || items->empty()) return Status::Unsupported("np.isin test_elements that are not an array or numbers");
    std::vector<Number> values;
    bool ints = !IsFloating(ctx.DType(x));
    for (const v1::Arg* it : *items) {
      if (auto i = AsInt(*it); i && it->kind_case() != v1::Arg::kB) {
        values.push_back(Number::Int(*i));
      } else if (auto f = AsDouble(*it); f && it->kind_case() == v1::Arg::kF) {
        values.push_back(Number::Float(*f));
        ints = false;
      } else {
        return Status::Unsupported("np.isin test_elements " + ArgToString(*te, true));
      }
    }
    d = ints ? v1::INT64 : v1::FLOAT64;
    std::string raw;
    IVY_RETURN_IF_ERROR(EncodeNumbers(values, d, &raw));
    onnx::TensorProto t;
    t.set_data_type(OnnxElemType(d));
    t.add_dims(static_cast<int64_t>(values.size()));
    t.set_raw_data(raw);
    tests = ctx.AddInitializer(std::move(t), "isin_tests");
  }
  const std::string ts = ctx.EmitTemp("Reshape", {tests, ctx.Int64s({-1})});
  const std::string xs = ctx.Unsqueeze(ctx.CastTo(ctx.In(x), ctx.DType(x), d), {ctx.Rank(x)});
  const std::string eq = ctx.CastTo(ctx.EmitTemp("Equal", {xs, ts}), v1::BOOL, v1::INT32);
  onnx::NodeProto* r = nullptr;
  const std::string any = ctx.EmitTemp("ReduceMax", {eq}, &r);
  SetAttr(r, "axes", std::vector<int64_t>{-1});
  SetAttr(r, "keepdims", int64_t{0});
  std::string out = ctx.CastTo(any, v1::INT32, v1::BOOL);
  if (call.Bool("invert").value_or(false)) out = ctx.EmitTemp("Not", {out});
  Define(ctx, ctx.CastTo(out, v1::BOOL, ctx.DType(result)), result);
  return Status::Ok();
}

// np.ediff1d(ary): the differences of the flattened array (to_begin/to_end refused).
Status LowerEdiff1d(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (!call.IsNone("to_end") || !call.IsNone("to_begin")) return Status::Unsupported("np.ediff1d with to_begin/to_end");
  const v1::DType d = ctx.DType(result);
  if (d == v1::BOOL) return Status::Unsupported("np.ediff1d of bools");
  const std::string flat = ctx.EmitTemp("Reshape", {ctx.CastTo(ctx.In(x), ctx.DType(x), d), ctx.Int64s({-1})});
  const std::string big = ctx.Int64s({std::numeric_limits<int64_t>::max()});
  ctx.Emit("Sub", {ctx.EmitTemp("Slice", {flat, ctx.Int64s({1}), big}), ctx.EmitTemp("Slice", {flat, ctx.Int64s({0}), ctx.Int64s({-1})})},
           {ctx.Out(result)});
  return Status::Ok();
}

// np.trapezoid(y, x=None, dx=1.0, axis=-1): NumPy's sum of d * (y[1:] + y[:-1]) / 2, d = dx or
// the differences of x (1-D along axis, or y's shape).
Status LowerTrapezoid(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId y, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &y));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(result);
  if (!IsFloating(d)) return Status::Unsupported("np.trapezoid with a non-float result");
  const int rank = ctx.Rank(y);
  if (rank == 0) return Status::Unsupported("np.trapezoid of a 0-d array");
  auto dim = call.Int("dim");
  if (!dim) return Status::Unsupported("axis is not an int");
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, rank, &axis));
  const std::string big = ctx.Int64s({std::numeric_limits<int64_t>::max()});
  auto upper = [&](const std::string& v, int64_t ax) { return ctx.EmitTemp("Slice", {v, ctx.Int64s({1}), big, ctx.Int64s({ax})}); };
  auto lower = [&](const std::string& v, int64_t ax) { return ctx.EmitTemp("Slice", {v, ctx.Int64s({0}), ctx.Int64s({-1}), ctx.Int64s({ax})}); };
  std::string step;
  if (call.IsNone("x")) {
    IVY_RETURN_IF_ERROR(OperandAs(ctx, *call.Get("dx"), d, &step));
  } else {
    ValueId x;
    IVY_RETURN_IF_ERROR(TensorParam(call, "x", &x));
    const std::string xs = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
    if (ctx.Rank(x) == 1) {
      step = ctx.EmitTemp("Sub", {upper(xs, 0), lower(xs, 0)});
      std::vector<int64_t> other;
      for (int k = 0; k < rank; ++k) if (k != axis) other.push_back(k);
      if (!other.empty()) step = ctx.Unsqueeze(step, other);
    } else if (ctx.Rank(x) == rank) {
      step = ctx.EmitTemp("Sub", {upper(xs, axis), lower(xs, axis)});
    } else {
      return Status::Unsupported("np.trapezoid with x of another rank");
    }
  }
  const std::string ys = ctx.CastTo(ctx.In(y), ctx.DType(y), d);
  const std::string avg = ctx.EmitTemp("Div", {ctx.EmitTemp("Mul", {step, ctx.EmitTemp("Add", {upper(ys, axis), lower(ys, axis)})}),
                                               NumberOf(ctx, 2.0, d)});
  Define(ctx, SumOver(ctx, avg, {axis}, false), result);
  return Status::Ok();
}

// np.polyval(p, x): Horner's rule in NumPy's order (y = y * x + p[i]) over the recorded number
// of coefficients.
Status LowerPolyval(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId p, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "p", &p));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (ctx.Rank(p) != 1 || ctx.Shape(p)[0] < 1) return Status::Unsupported("np.polyval with coefficients that are not 1-D");
  const v1::DType d = ctx.DType(result);
  if (d == v1::BOOL) return Status::Unsupported("np.polyval of bools");
  std::string x;
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *call.Get("x"), d, &x));
  const std::string coef = ctx.CastTo(ctx.In(p), ctx.DType(p), d);
  // y starts as zeros_like(x): 0 * x + p[0] is p[0] broadcast (exactly: 0 * x is +-0 or NaN for
  // an infinite x, as in NumPy).
  std::string y = ctx.EmitTemp("Mul", {x, NumberOf(ctx, 0.0, d)});
  for (int64_t i = 0; i < ctx.Shape(p)[0]; ++i) {
    onnx::NodeProto* g = nullptr;
    const std::string c = ctx.EmitTemp("Gather", {coef, ctx.Scalar(Number::Int(i), v1::INT64)}, &g);
    SetAttr(g, "axis", int64_t{0});
    y = ctx.EmitTemp("Add", {ctx.EmitTemp("Mul", {y, x}), c});
  }
  Define(ctx, y, result);
  return Status::Ok();
}


// np.median(a, axis=None, keepdims=False): the sorted values' middle one, or the mean of the two
// middle ones ((lo + hi) / 2, as NumPy's mean of them), the length read at run time; NaN where a
// slice holds a NaN. One axis (or every axis); the input cast to the result's dtype first.
Status LowerMedian(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  call.Get("overwrite_input");  // a hint: the answer is the same
  const v1::DType d = ctx.DType(result);
  if (d != v1::FLOAT32 && d != v1::FLOAT64) return Status::Unsupported(std::string("median in ") + DTypeName(d));
  const int rank = ctx.Rank(x);
  const bool keepdim = call.Bool("keepdim").value_or(false);
  std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  int64_t axis = 0;
  if (call.IsNone("dim") || rank == 0) {
    in = ctx.EmitTemp("Reshape", {in, ctx.Int64s({-1})});
  } else {
    auto dim = call.Int("dim");
    if (!dim) return Status::Unsupported("median over axis " + ArgToString(*call.Get("dim"), true) + " (one axis only)");
    IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, rank, &axis));
  }
  onnx::NodeProto* g = nullptr;
  const std::string n = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {in}), ctx.Int64s({axis})}, &g);
  SetAttr(g, "axis", int64_t{0});
  onnx::NodeProto* tk = nullptr;
  const std::string sorted = ctx.EmitTemp("TopK", {in, n}, &tk);
  tk->add_output(ctx.Temp("order"));
  SetAttr(tk, "axis", axis);
  SetAttr(tk, "largest", int64_t{0});
  SetAttr(tk, "sorted", int64_t{1});
  const std::string one = ctx.Scalar(Number::Int(1), v1::INT64), two = ctx.Scalar(Number::Int(2), v1::INT64);
  const std::string n0 = ctx.EmitTemp("Squeeze", {n, ctx.Int64s({0})});
  auto at = [&](const std::string& i) {
    onnx::NodeProto* gg = nullptr;
    const std::string v = ctx.EmitTemp("Gather", {sorted, i}, &gg);
    SetAttr(gg, "axis", axis);
    return v;
  };
  const std::string lo = at(ctx.EmitTemp("Div", {ctx.EmitTemp("Sub", {n0, one}), two}));
  const std::string hi = at(ctx.EmitTemp("Div", {n0, two}));
  const std::string med = ctx.EmitTemp("Div", {ctx.EmitTemp("Add", {lo, hi}), NumberOf(ctx, 2.0, d)});
  onnx::NodeProto* rm = nullptr;
  const std::string any_nan = ctx.EmitTemp("ReduceMax", {ctx.CastTo(ctx.EmitTemp("IsNaN", {in}), v1::BOOL, v1::INT32)}, &rm);
  SetAttr(rm, "axes", std::vector<int64_t>{axis});
  SetAttr(rm, "keepdims", int64_t{0});
  std::string out = ctx.EmitTemp("Where", {ctx.CastTo(any_nan, v1::INT32, v1::BOOL), NumberOf(ctx, kNaN, d), med});
  if (keepdim) {
    if (call.IsNone("dim")) out = ctx.EmitTemp("Reshape", {out, ctx.Int64s(std::vector<int64_t>(rank, 1))});
    else out = ctx.Unsqueeze(out, {axis});
  }
  Define(ctx, out, result);
  return Status::Ok();
}

namespace {

// `node` with only its k-th result tensor, for a lowering that defines one result.
Node OneResult(const Node& node, size_t k) {
  Node one = node;
  auto items = SequenceItems(node.result);
  one.result = (*items)[k] ? *(*items)[k] : v1::Arg();
  return one;
}

}  // namespace

// np.divmod(x, y): (floor_divide, remainder), each by its own lowering.
Status LowerDivmod(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  auto items = SequenceItems(node.result);
  if (!items || items->size() != 2 || (*items)[0]->kind_case() != v1::Arg::kTensor || (*items)[1]->kind_case() != v1::Arg::kTensor) {
    return Status::Unsupported("divmod without two array results");
  }
  BoundCall floor = call;
  v1::Arg mode;
  mode.set_s("floor");
  floor.Set("rounding_mode", std::move(mode));
  Rebinding run(ctx);
  IVY_RETURN_IF_ERROR(run.Run(FindCanonicalLowering("div")->fn, OneResult(node, 0), floor, "div"));
  return run.Run(FindCanonicalLowering("remainder")->fn, OneResult(node, 1), call, "remainder");
}

// np.modf(x): (fractional part, integral part), both with x's sign (-0.0 for -2.0's fraction),
// the fraction of +-inf +-0.0, NaN for NaN.
Status LowerModf(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  auto items = SequenceItems(node.result);
  if (!items || items->size() != 2 || (*items)[0]->kind_case() != v1::Arg::kTensor || (*items)[1]->kind_case() != v1::Arg::kTensor) {
    return Status::Unsupported("modf without two array results");
  }
  const ValueId rf = (*items)[0]->tensor().value(), ri = (*items)[1]->tensor().value();
  const v1::DType d = ctx.DType(rf);
  if (!IsFloating(d) || ctx.DType(ri) != d) return Status::Unsupported("modf with non-float results");
  const std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  const std::string zero = NumberOf(ctx, 0.0, d);
  const std::string negative = ctx.EmitTemp("Less", {in, zero});
  const std::string whole = ctx.EmitTemp("Where", {negative, ctx.EmitTemp("Neg", {ctx.EmitTemp("Floor", {ctx.EmitTemp("Neg", {in})})}),
                                                   ctx.EmitTemp("Floor", {in})});
  const std::string mag = ctx.EmitTemp("Where", {ctx.EmitTemp("IsInf", {in}), zero, ctx.EmitTemp("Abs", {ctx.EmitTemp("Sub", {in, whole})})});
  const std::string neg_zero = ctx.EmitTemp("And", {ctx.EmitTemp("Equal", {in, zero}),
                                                    ctx.EmitTemp("Less", {ctx.EmitTemp("Div", {NumberOf(ctx, 1.0, d), in}), zero})});
  ctx.Emit("Where", {ctx.EmitTemp("Or", {negative, neg_zero}), ctx.EmitTemp("Neg", {mag}), mag}, {ctx.Out(rf)});
  ctx.Emit("Identity", {whole}, {ctx.Out(ri)});
  return Status::Ok();
}

// np.vander(x, N=None, increasing=False): the powers of 1-D x as columns, each the previous one
// times x (NumPy's multiply.accumulate), in the result's dtype; N a plain int.
Status LowerVander(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "x", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (ctx.Rank(x) != 1) return Status::Unsupported("vander of an array that is not 1-D");
  const v1::DType d = ctx.DType(result);
  if (d == v1::BOOL) return Status::Unsupported("vander of bools");
  int64_t n = ctx.Shape(x)[0];
  if (!call.IsNone("N")) {
    auto v = call.Int("N");
    if (!v) return Status::Unsupported("N is not an int");
    n = *v;
  } else if (n < 0) {
    return Status::Unsupported("vander of an array of unknown length");
  }
  if (n < 1 || n > 64) return Status::Unsupported("vander with N " + std::to_string(n));
  const bool increasing = call.Bool("increasing").value_or(false);
  std::string xs = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  // N=None is x's length: the columns are unrolled for the recorded one, so another length must
  // fail in the model (a Reshape to it), not give a matrix of the recorded width.
  if (call.IsNone("N")) xs = ctx.EmitTemp("Reshape", {xs, ctx.Int64s({n})});
  const std::string in = ctx.Unsqueeze(xs, {1});
  std::vector<std::string> cols;
  // 1 as x's column shape: x * 0 + 1 would turn inf into NaN, so an Expand of a 1.
  cols.push_back(ctx.EmitTemp("Expand", {ctx.Scalar(Number::Int(1), d), ctx.EmitTemp("Shape", {in})}));
  std::string p = in;
  for (int64_t k = 1; k < n; ++k) {
    cols.push_back(p);
    if (k + 1 < n) p = ctx.EmitTemp("Mul", {p, in});
  }
  if (!increasing) std::reverse(cols.begin(), cols.end());
  auto* c = ctx.Emit("Concat", cols, {ctx.Out(result)});
  SetAttr(c, "axis", int64_t{1});
  return Status::Ok();
}

// np.fft.fftfreq(n, d=1.0) / rfftfreq: NumPy's integer bins times 1.0 / (n * d), n a plain int.
Status LowerFftFreq(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  auto n = call.Int("n");
  if (!n || *n < 1) return Status::Unsupported("n is not a positive int");
  const v1::Arg* darg = call.Get("d");
  auto dv = darg ? AsDouble(*darg) : std::nullopt;
  if (!dv || HasTensor(*darg)) return Status::Unsupported("d is not a number");
  const v1::DType rd = ctx.DType(result);
  if (!IsFloating(rd)) return Status::Unsupported("fftfreq with a non-float result");
  std::vector<int64_t> bins;
  if (ctx.canonical() == "rfftfreq") {
    for (int64_t k = 0; k < *n / 2 + 1; ++k) bins.push_back(k);
  } else {
    const int64_t half = (*n - 1) / 2 + 1;
    for (int64_t k = 0; k < half; ++k) bins.push_back(k);
    for (int64_t k = -(*n / 2); k < 0; ++k) bins.push_back(k);
  }
  const double val = 1.0 / (static_cast<double>(*n) * *dv);
  const std::string f = ctx.EmitTemp("Mul", {ctx.CastTo(ctx.Int64s(bins), v1::INT64, v1::FLOAT64), ctx.Scalar(Number::Float(val), v1::FLOAT64)});
  Define(ctx, ctx.CastTo(f, v1::FLOAT64, rd), result);
  return Status::Ok();
}


// np.broadcast_arrays(*args): each array Expanded to the shape they broadcast to (read at run time
// from a Sum of zero tensors of their shapes).
Status LowerBroadcastArrays(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  std::vector<ValueId> xs;
  IVY_RETURN_IF_ERROR(ArrayItems(call, "args", &xs));
  call.Get("subok");
  std::vector<ValueId> results;
  ForEachTensor(node.result, [&](const v1::TensorRef& t) { results.push_back(t.value()); });
  if (results.size() != xs.size()) return Status::Unsupported("broadcast_arrays results do not match its arrays");
  std::vector<std::string> zeros;
  for (ValueId x : xs) {
    onnx::NodeProto* c = nullptr;
    zeros.push_back(ctx.EmitTemp("ConstantOfShape", {ctx.EmitTemp("Shape", {ctx.In(x)})}, &c));  // float32 zeros
  }
  const std::string shape = ctx.EmitTemp("Shape", {zeros.size() == 1 ? zeros[0] : ctx.EmitTemp("Sum", zeros)});
  for (size_t k = 0; k < xs.size(); ++k) {
    ctx.Emit("Expand", {ctx.CastTo(ctx.In(xs[k]), ctx.DType(xs[k]), ctx.DType(results[k])), shape}, {ctx.Out(results[k])});
  }
  return Status::Ok();
}

// np.resize(a, new_shape): a's items, flattened and repeated as often as needed, in new_shape (ints).
Status LowerResize(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "a", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* ns = call.Get("new_shape");
  std::vector<int64_t> shape;
  if (auto i = ns ? AsInt(*ns) : std::nullopt) shape = {*i};
  else if (auto l = ns ? AsIntList(*ns) : std::nullopt) shape = *l;
  else return Status::Unsupported("new_shape is not ints");
  int64_t total = 1;
  for (int64_t v : shape) {
    if (v < 0) return Status::Unsupported("np.resize to a negative size");
    total *= v;
  }
  if (total == 0) return Status::Unsupported("np.resize to an empty shape");
  const std::string flat = ctx.EmitTemp("Reshape", {ctx.CastTo(ctx.In(x), ctx.DType(x), ctx.DType(result)), ctx.Int64s({-1})});
  // copies = ceil(total / n); an empty a is refused by NumPy's own check (it fills zeros): a Div by 0.
  const std::string n = ctx.EmitTemp("Size", {flat});
  const std::string t = ctx.Scalar(Number::Int(total), v1::INT64);
  const std::string copies = ctx.EmitTemp("Div", {ctx.EmitTemp("Sub", {ctx.EmitTemp("Add", {t, n}), ctx.Scalar(Number::Int(1), v1::INT64)}), n});
  const std::string tiled = ctx.EmitTemp("Tile", {flat, ctx.Unsqueeze(copies, {0})});
  const std::string cut = ctx.EmitTemp("Slice", {tiled, ctx.Int64s({0}), ctx.Int64s({total})});
  ctx.Emit("Reshape", {cut, ctx.Int64s(shape)}, {ctx.Out(result)});
  return Status::Ok();
}

// np.hanning/hamming/blackman/bartlett(M), M a plain int: NumPy's formulas over n = 1-M, 3-M, ..,
// M-1 in float64 (ones(1) for M = 1).
Status LowerWindow(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  auto m = call.Int("M");
  if (!m || *m < 1) return Status::Unsupported("M is not a positive int");
  const v1::DType rd = ctx.DType(result);
  const v1::DType f = v1::FLOAT64;
  const std::string& c = ctx.canonical();
  if (*m == 1) {
    Define(ctx, ctx.CastTo(ctx.Int64s({1}), v1::INT64, rd), result);
    return Status::Ok();
  }
  std::vector<int64_t> ns;
  for (int64_t k = 1 - *m; k < *m; k += 2) ns.push_back(k);
  const std::string n = ctx.CastTo(ctx.Int64s(ns), v1::INT64, f);
  auto num = [&](double v) { return ctx.Scalar(Number::Float(v), f); };
  const double m1 = static_cast<double>(*m - 1);
  std::string out;
  if (c == "bartlett") {
    const std::string r = ctx.EmitTemp("Div", {n, num(m1)});
    out = ctx.EmitTemp("Where", {ctx.EmitTemp("LessOrEqual", {n, num(0.0)}), ctx.EmitTemp("Add", {num(1.0), r}), ctx.EmitTemp("Sub", {num(1.0), r})});
  } else {
    // cos(pi * n / (M - 1)) as NumPy groups it: (pi * n) / (M - 1).
    const std::string c1 = ctx.EmitTemp("Cos", {ctx.EmitTemp("Div", {ctx.EmitTemp("Mul", {num(M_PI), n}), num(m1)})});
    if (c == "hanning") {
      out = ctx.EmitTemp("Add", {num(0.5), ctx.EmitTemp("Mul", {num(0.5), c1})});
    } else if (c == "hamming") {
      out = ctx.EmitTemp("Add", {num(0.54), ctx.EmitTemp("Mul", {num(0.46), c1})});
    } else if (c == "blackman") {
      const std::string c2 = ctx.EmitTemp("Cos", {ctx.EmitTemp("Div", {ctx.EmitTemp("Mul", {num(2.0 * M_PI), n}), num(m1)})});
      out = ctx.EmitTemp("Add", {ctx.EmitTemp("Add", {num(0.42), ctx.EmitTemp("Mul", {num(0.5), c1})}), ctx.EmitTemp("Mul", {num(0.08), c2})});
    } else {
      return Status::Unsupported("window " + c);
    }
  }
  Define(ctx, ctx.CastTo(out, f, rd), result);
  return Status::Ok();
}

// np.quantile(a, q) / np.percentile(a, q) with one number q and method "linear" (NumPy's default):
// the sorted values at floor and floor + 1 of q * (n - 1) (n - 1 at the end), combined as NumPy's
// _lerp does (a + (b - a) * t, or b - (b - a) * (1 - t) for t >= 0.5); NaN where a slice holds a
// NaN. One axis or every axis, keepdims.
Status LowerQuantile(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  call.Get("overwrite_input");  // a hint
  if (const v1::Arg* m = call.Get("method"); m && !IsNone(*m) && !(m->kind_case() == v1::Arg::kS && m->s() == "linear")) {
    return Status::Unsupported(ctx.canonical() + " with method " + ArgToString(*m, true) + " (only 'linear')");
  }
  if (!call.IsNone("weights")) return Status::Unsupported(ctx.canonical() + " with weights");
  const v1::Arg* qa = call.Get("q");
  auto qv = qa ? AsDouble(*qa) : std::nullopt;
  if (!qv || HasTensor(*qa)) return Status::Unsupported(ctx.canonical() + " of q " + (qa ? ArgToString(*qa, true) : "") + " (one number only)");
  double q = *qv;
  if (ctx.canonical() == "percentile") q /= 100.0;
  if (!(q >= 0.0 && q <= 1.0)) return Status::Unsupported("q out of range");
  const v1::DType d = ctx.DType(result);
  if (d != v1::FLOAT32 && d != v1::FLOAT64) return Status::Unsupported(ctx.canonical() + " in " + DTypeName(d));
  const int rank = ctx.Rank(x);
  const bool keepdim = call.Bool("keepdim").value_or(false);
  std::string in = ctx.In(x);
  int64_t axis = 0;
  if (call.IsNone("dim") || rank == 0) {
    in = ctx.EmitTemp("Reshape", {in, ctx.Int64s({-1})});
  } else {
    auto dim = call.Int("dim");
    if (!dim) return Status::Unsupported(ctx.canonical() + " over axis " + ArgToString(*call.Get("dim"), true) + " (one axis only)");
    IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, rank, &axis));
  }
  const v1::DType xd = ctx.DType(x);
  onnx::NodeProto* g = nullptr;
  const std::string n = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {in}), ctx.Int64s({axis})}, &g);
  SetAttr(g, "axis", int64_t{0});
  onnx::NodeProto* tk = nullptr;
  const std::string sorted = ctx.EmitTemp("TopK", {in, n}, &tk);
  tk->add_output(ctx.Temp("order"));
  SetAttr(tk, "axis", axis);
  SetAttr(tk, "largest", int64_t{0});
  SetAttr(tk, "sorted", int64_t{1});
  const std::string last = ctx.EmitTemp("Sub", {ctx.EmitTemp("Squeeze", {n, ctx.Int64s({0})}), ctx.Scalar(Number::Int(1), v1::INT64)});
  const std::string vi = ctx.EmitTemp("Mul", {ctx.CastTo(last, v1::INT64, v1::FLOAT64), ctx.Scalar(Number::Float(q), v1::FLOAT64)});
  const std::string fl = ctx.CastTo(ctx.EmitTemp("Floor", {vi}), v1::FLOAT64, v1::INT64);
  const std::string above = ctx.EmitTemp("GreaterOrEqual", {fl, last});
  const std::string prev = ctx.EmitTemp("Where", {above, last, fl});
  const std::string next = ctx.EmitTemp("Where", {above, last, ctx.EmitTemp("Add", {fl, ctx.Scalar(Number::Int(1), v1::INT64)})});
  const std::string gamma = ctx.EmitTemp("Sub", {vi, ctx.CastTo(fl, v1::INT64, v1::FLOAT64)});
  auto at = [&](const std::string& i) {
    onnx::NodeProto* gg = nullptr;
    const std::string v = ctx.EmitTemp("Gather", {sorted, i}, &gg);
    SetAttr(gg, "axis", axis);
    return ctx.CastTo(v, xd, v1::FLOAT64);
  };
  const std::string a = at(prev), b = at(next);
  const std::string diff = ctx.EmitTemp("Sub", {b, a});
  const std::string low = ctx.EmitTemp("Add", {a, ctx.EmitTemp("Mul", {diff, gamma})});
  const std::string high = ctx.EmitTemp("Sub", {b, ctx.EmitTemp("Mul", {diff, ctx.EmitTemp("Sub", {ctx.Scalar(Number::Float(1.0), v1::FLOAT64), gamma})})});
  std::string out = ctx.EmitTemp("Where", {ctx.EmitTemp("GreaterOrEqual", {gamma, ctx.Scalar(Number::Float(0.5), v1::FLOAT64)}), high, low});
  if (IsFloating(xd)) {
    onnx::NodeProto* rm = nullptr;
    const std::string any_nan = ctx.EmitTemp("ReduceMax", {ctx.CastTo(ctx.EmitTemp("IsNaN", {in}), v1::BOOL, v1::INT32)}, &rm);
    SetAttr(rm, "axes", std::vector<int64_t>{axis});
    SetAttr(rm, "keepdims", int64_t{0});
    out = ctx.EmitTemp("Where", {ctx.CastTo(any_nan, v1::INT32, v1::BOOL), ctx.Scalar(Number::Float(kNaN), v1::FLOAT64), out});
  }
  out = ctx.CastTo(out, v1::FLOAT64, d);
  if (keepdim) {
    if (call.IsNone("dim")) out = ctx.EmitTemp("Reshape", {out, ctx.Int64s(std::vector<int64_t>(rank, 1))});
    else out = ctx.Unsqueeze(out, {axis});
  }
  Define(ctx, out, result);
  return Status::Ok();
}

// np.digitize(x, bins, right=False): searchsorted's lowering on bins (side "right", or "left" for
// right=True) when they increase, len(bins) minus it on the reversed bins when they decrease
// (NumPy's two branches, chosen at run time by bins[0] <= bins[-1]).
Status LowerDigitize(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, bins, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "x", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "bins", &bins));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (ctx.Rank(bins) != 1) return Status::Unsupported("digitize with bins that are not 1-D");
  const bool right = call.Bool("right").value_or(false);
  const CanonicalLowering* row = FindCanonicalLowering("searchsorted");
  BoundCall inner = call;
  inner.Set("input", *call.Get("bins"));
  inner.Set("v", *call.Get("x"));
  v1::Arg side;
  side.set_s(right ? "left" : "right");
  inner.Set("side", side);
  v1::Arg none;
  none.set_none(true);
  inner.Set("sorter", none);
  const v1::DType rd = ctx.DType(result);
  const std::string b = ctx.In(bins);
  std::string inc, dec;
  {
    Rebinding run(ctx);
    inc = run.BindResult(result, "increasing");
    IVY_RETURN_IF_ERROR(run.Run(row->fn, node, inner, "searchsorted"));
  }
  {
    Rebinding run(ctx);
    run.Bind(bins, ctx.EmitTemp("Slice", {b, ctx.Int64s({-1}), ctx.Int64s({std::numeric_limits<int64_t>::min()}), ctx.Int64s({0}),
                                          ctx.Int64s({-1})}));
    dec = run.BindResult(result, "decreasing");
    IVY_RETURN_IF_ERROR(run.Run(row->fn, node, inner, "searchsorted"));
  }
  const std::string len = ctx.CastTo(ctx.EmitTemp("Size", {b}), v1::INT64, rd);
  onnx::NodeProto* g0 = nullptr;
  const std::string first = ctx.EmitTemp("Gather", {b, ctx.Scalar(Number::Int(0), v1::INT64)}, &g0);
  onnx::NodeProto* g1 = nullptr;
  const std::string lastb = ctx.EmitTemp("Gather", {b, ctx.Scalar(Number::Int(-1), v1::INT64)}, &g1);
  // NumPy: increasing unless every step is <= 0 with some < 0; for monotonic bins, first > last.
  const std::string decreasing = ctx.EmitTemp("Greater", {first, lastb});
  EmitWhere(ctx, decreasing, ctx.EmitTemp("Sub", {len, dec}), inc, rd, ctx.Out(result));
  return Status::Ok();
}

// np.polyder(p, m=1): the coefficients times their powers, m times (NumPy's p[:-1] * arange(n, 0,
// -1)), of a 1-D p of the recorded length.
Status LowerPolyder(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId p, result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (ctx.canonical() == "polyadd" || ctx.canonical() == "polysub") {
    // np.polyadd / polysub(a1, a2): the shorter padded with leading zeros (recorded lengths).
    ValueId a1, a2;
    IVY_RETURN_IF_ERROR(TensorParam(call, "a1", &a1));
    IVY_RETURN_IF_ERROR(TensorParam(call, "a2", &a2));
    if (ctx.Rank(a1) != 1 || ctx.Rank(a2) != 1) return Status::Unsupported(ctx.canonical() + " of arrays that are not 1-D");
    const v1::DType d = ctx.DType(result);
    if (d == v1::BOOL) return Status::Unsupported(ctx.canonical() + " of bools");
    std::string x1 = ctx.CastTo(ctx.In(a1), ctx.DType(a1), d), x2 = ctx.CastTo(ctx.In(a2), ctx.DType(a2), d);
    const int64_t diff = ctx.Shape(a2)[0] - ctx.Shape(a1)[0];
    if (diff != 0) {
      std::string& shorter = diff > 0 ? x1 : x2;
      shorter = ctx.EmitTemp("Pad", {shorter, ctx.Int64s({std::abs(diff), 0})});
    }
    ctx.Emit(ctx.canonical() == "polyadd" ? "Add" : "Sub", {x1, x2}, {ctx.Out(result)});
    return Status::Ok();
  }
  IVY_RETURN_IF_ERROR(TensorParam(call, "p", &p));
  auto m = call.Int("m");
  if (!m || *m < 0) return Status::Unsupported("m is not a non-negative int");
  if (ctx.canonical() == "polyint") {
    // np.polyint(p, m=1, k=None): m times, p / arange(len(p), 0, -1) then the constant k (0, or
    // one number for every step).
    const v1::DType d = ctx.DType(result);
    if (!IsFloating(d)) return Status::Unsupported("polyint with a non-float result");
    if (ctx.Rank(p) != 1 || ctx.Shape(p)[0] < 1) return Status::Unsupported("polyint of coefficients that are not 1-D");
    double k = 0.0;
    if (!call.IsNone("k")) {
      const v1::Arg* ka = call.Get("k");
      auto kv = AsDouble(*ka);
      if (!kv || HasTensor(*ka)) return Status::Unsupported("polyint with k " + ArgToString(*ka, true) + " (one number only)");
      k = *kv;
    }
    std::string y = ctx.CastTo(ctx.In(p), ctx.DType(p), d);
    int64_t n = ctx.Shape(p)[0];
    for (int64_t step = 0; step < *m; ++step, ++n) {
      std::vector<int64_t> powers;
      for (int64_t v = n; v > 0; --v) powers.push_back(v);
      const std::string div = ctx.EmitTemp("Div", {y, ctx.CastTo(ctx.Int64s(powers), v1::INT64, d)});
      onnx::NodeProto* c = nullptr;
      y = ctx.EmitTemp("Concat", {div, ctx.EmitTemp("Reshape", {NumberOf(ctx, k, d), ctx.Int64s({1})})}, &c);
      SetAttr(c, "axis", int64_t{0});
    }
    Define(ctx, y, result);
    return Status::Ok();
  }
  if (ctx.Rank(p) != 1 || ctx.Shape(p)[0] < 1) return Status::Unsupported("polyder of coefficients that are not 1-D");
  const v1::DType rd = ctx.DType(result);
  if (rd == v1::BOOL) return Status::Unsupported("polyder of bools");
  int64_t n = ctx.Shape(p)[0];
  if (*m >= n) return Status::Unsupported("polyder to a zero polynomial");
  std::string y = ctx.CastTo(ctx.In(p), ctx.DType(p), rd);
  for (int64_t k = 0; k < *m; ++k, --n) {
    std::vector<int64_t> powers;
    for (int64_t v = n - 1; v > 0; --v) powers.push_back(v);
    y = ctx.EmitTemp("Mul", {ctx.EmitTemp("Slice", {y, ctx.Int64s({0}), ctx.Int64s({n - 1})}), ctx.CastTo(ctx.Int64s(powers), v1::INT64, rd)});
  }
  Define(ctx, y, result);
  return Status::Ok();
}


// np.nanmedian / nanquantile / nanpercentile (q one number, method "linear"): the sorted values
// with NaN moved past the end (as +inf: the first m of them are the m non-NaN values), the
// positions read per slice from m (GatherElements); the median is the mean of the two middle
// values as np.median takes it, a quantile NumPy's _lerp; NaN where a slice is all NaN.
Status LowerNanQuantile(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  call.Get("overwrite_input");  // a hint
  const std::string& c = ctx.canonical();
  const bool median = c == "nanmedian";
  double q = 0.5;
  if (!median) {
    if (const v1::Arg* m = call.Get("method"); m && !IsNone(*m) && !(m->kind_case() == v1::Arg::kS && m->s() == "linear")) {
      return Status::Unsupported(c + " with method " + ArgToString(*m, true) + " (only 'linear')");
    }
    if (!call.IsNone("weights")) return Status::Unsupported(c + " with weights");
    const v1::Arg* qa = call.Get("q");
    auto qv = qa ? AsDouble(*qa) : std::nullopt;
    if (!qv || HasTensor(*qa)) return Status::Unsupported(c + " of q that is not one number");
    q = c == "nanpercentile" ? *qv / 100.0 : *qv;
    if (!(q >= 0.0 && q <= 1.0)) return Status::Unsupported("q out of range");
  }
  const v1::DType d = ctx.DType(result);
  if (d != v1::FLOAT32 && d != v1::FLOAT64) return Status::Unsupported(c + " in " + DTypeName(d));
  const int rank = ctx.Rank(x);
  const bool keepdim = call.Bool("keepdim").value_or(false);
  const v1::DType w = v1::FLOAT64;
  std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), w);
  int64_t axis = 0;
  if (call.IsNone("dim") || rank == 0) {
    in = ctx.EmitTemp("Reshape", {in, ctx.Int64s({-1})});
  } else {
    auto dim = call.Int("dim");
    if (!dim) return Status::Unsupported(c + " over axis " + ArgToString(*call.Get("dim"), true) + " (one axis only)");
    IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, rank, &axis));
  }
  const std::string nan = ctx.EmitTemp("IsNaN", {in});
  const std::string clean = ctx.EmitTemp("Where", {nan, ctx.Scalar(Number::Float(kInf), w), in});
  onnx::NodeProto* g = nullptr;
  const std::string n = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {in}), ctx.Int64s({axis})}, &g);
  SetAttr(g, "axis", int64_t{0});
  onnx::NodeProto* tk = nullptr;
  const std::string sorted = ctx.EmitTemp("TopK", {clean, n}, &tk);
  tk->add_output(ctx.Temp("order"));
  SetAttr(tk, "axis", axis);
  SetAttr(tk, "largest", int64_t{0});
  SetAttr(tk, "sorted", int64_t{1});
  // m: the non-NaN count of each slice, kept as a size-1 axis.
  const std::string m = SumOver(ctx, ctx.CastTo(ctx.EmitTemp("Not", {nan}), v1::BOOL, v1::INT64), {axis}, true);
  const std::string zero = ctx.Scalar(Number::Int(0), v1::INT64), one = ctx.Scalar(Number::Int(1), v1::INT64);
  const std::string last = ctx.EmitTemp("Max", {ctx.EmitTemp("Sub", {m, one}), zero});
  auto at = [&](const std::string& i) {
    onnx::NodeProto* ge = nullptr;
    const std::string v = ctx.EmitTemp("GatherElements", {sorted, i}, &ge);
    SetAttr(ge, "axis", axis);
    return v;
  };
  std::string out;
  if (median) {
    const std::string two = ctx.Scalar(Number::Int(2), v1::INT64);
    const std::string lo = at(ctx.EmitTemp("Div", {last, two}));
    // m // 2, which is last too when m is 1, and past it only for m = 0 (all NaN: NaN below).
    const std::string hi_safe = at(ctx.EmitTemp("Min", {ctx.EmitTemp("Div", {m, two}), last}));
    out = ctx.EmitTemp("Div", {ctx.EmitTemp("Add", {lo, hi_safe}), ctx.Scalar(Number::Float(2.0), w)});
  } else {
    const std::string vi = ctx.EmitTemp("Mul", {ctx.CastTo(last, v1::INT64, w), ctx.Scalar(Number::Float(q), w)});
    const std::string fl = ctx.CastTo(ctx.EmitTemp("Floor", {vi}), w, v1::INT64);
    const std::string above = ctx.EmitTemp("GreaterOrEqual", {fl, last});
    const std::string prev = ctx.EmitTemp("Where", {above, last, fl});
    const std::string next = ctx.EmitTemp("Where", {above, last, ctx.EmitTemp("Add", {fl, one})});
    const std::string gamma = ctx.EmitTemp("Sub", {vi, ctx.CastTo(fl, v1::INT64, w)});
    const std::string a = at(prev), b = at(next);
    const std::string diff = ctx.EmitTemp("Sub", {b, a});
    const std::string low = ctx.EmitTemp("Add", {a, ctx.EmitTemp("Mul", {diff, gamma})});
    const std::string high = ctx.EmitTemp("Sub", {b, ctx.EmitTemp("Mul", {diff, ctx.EmitTemp("Sub", {ctx.Scalar(Number::Float(1.0), w), gamma})})});
    out = ctx.EmitTemp("Where", {ctx.EmitTemp("GreaterOrEqual", {gamma, ctx.Scalar(Number::Float(0.5), w)}), high, low});
  }
  out = ctx.EmitTemp("Where", {ctx.EmitTemp("Equal", {m, zero}), ctx.Scalar(Number::Float(kNaN), w), out});
  out = ctx.CastTo(out, w, d);
  if (call.IsNone("dim") || rank == 0) {
    out = ctx.EmitTemp("Reshape", {out, ctx.Int64s(keepdim ? std::vector<int64_t>(rank, 1) : std::vector<int64_t>{})});
  } else if (!keepdim) {
    out = ctx.Squeeze(out, {axis});
  }
  Define(ctx, out, result);
  return Status::Ok();
}

// np.unique(ar) (no return_* flags, axis None), np.unique_values, np.unique_counts: ONNX Unique
// (sorted) of the flattened non-NaN items, then one NaN (counting every NaN) if there is any, as
// np.unique's equal_nan=True gives, or every NaN once (unique_values/unique_counts: the Array API
// counts NaNs as distinct). onnxruntime's Unique drops NaN, so none reaches it.
namespace {

// The dtype onnxruntime's Unique takes (float, double, int64, int8) for `d`; UNSPECIFIED if none.
v1::DType UniqueWork(v1::DType d) {
  if (d == v1::INT32 || d == v1::INT16 || d == v1::UINT8 || d == v1::UINT16 || d == v1::UINT32) return v1::INT64;
  if (d == v1::BOOL) return v1::INT8;
  if (d != v1::FLOAT32 && d != v1::FLOAT64 && d != v1::INT64 && d != v1::INT8) return v1::DTYPE_UNSPECIFIED;
  return d;
}

// `base` followed by the items of 1-D `extra` where the [1] bool `has` is True.
std::string AppendIf(LoweringContext& ctx, const std::string& base, const std::string& extra, const std::string& has) {
  onnx::NodeProto* cp = nullptr;
  const std::string tail = ctx.EmitTemp("Compress", {extra, has}, &cp);
  SetAttr(cp, "axis", int64_t{0});
  onnx::NodeProto* cc = nullptr;
  const std::string r = ctx.EmitTemp("Concat", {base, tail}, &cc);
  SetAttr(cc, "axis", int64_t{0});
  return r;
}

// The sorted unique non-NaN items of 1-D `flat` (of dtype `work`); `nan_once` appends one NaN when
// `flat` holds any (np.unique's equal_nan=True).
std::string SortedUnique(LoweringContext& ctx, std::string flat, v1::DType work, bool nan_once) {
  std::string nan;
  if (IsFloating(work)) {
    nan = ctx.EmitTemp("IsNaN", {flat});
    onnx::NodeProto* cp = nullptr;
    flat = ctx.EmitTemp("Compress", {flat, ctx.EmitTemp("Not", {nan})}, &cp);
    SetAttr(cp, "axis", int64_t{0});
  }
  onnx::NodeProto* u = ctx.Emit("Unique", {flat}, {ctx.Temp("values"), ctx.Temp("first"), ctx.Temp("inverse"), ctx.Temp("counts")});
  SetAttr(u, "sorted", int64_t{1});
  std::string values = u->output(0);
  if (IsFloating(work) && nan_once) {
    const std::string has = ctx.EmitTemp("Greater", {SumOver(ctx, ctx.CastTo(nan, v1::BOOL, v1::INT64), {0}, true),
                                                     ctx.Scalar(Number::Int(0), v1::INT64)});
    values = AppendIf(ctx, values, ctx.EmitTemp("Reshape", {ctx.Scalar(Number::Float(kNaN), work), ctx.Int64s({1})}), has);
  }
  return values;
}

// np.union1d / intersect1d / setdiff1d(ar1, ar2): NumPy's definitions on sorted unique values
// (unique of both; those of ar1 in ar2; those of ar1 not in ar2), NaN as np.unique counts it
// (one NaN; never "in" another array).
Status LowerSetOp(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId a1, a2, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "ar1", &a1));
  IVY_RETURN_IF_ERROR(TensorParam(call, "ar2", &a2));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const std::string& c = ctx.canonical();
  if (call.Bool("return_indices").value_or(false)) return Status::Unsupported("intersect1d with return_indices=True");
  // setdiff1d(assume_unique=True) keeps ar1's order and repeats: not a sorted unique.
  if (c == "setdiff1d" && call.Bool("assume_unique").value_or(false)) return Status::Unsupported("setdiff1d with assume_unique=True");
  call.Get("assume_unique");  // intersect1d: a hint
  const v1::DType d = ctx.DType(result);
  const v1::DType work = UniqueWork(d);
  if (work == v1::DTYPE_UNSPECIFIED) return Status::Unsupported(c + " of " + DTypeName(d));
  auto flat = [&](ValueId v) {
    return ctx.EmitTemp("Reshape", {ctx.CastTo(ctx.CastTo(ctx.In(v), ctx.DType(v), d), d, work), ctx.Int64s({-1})});
  };
  const std::string f1 = flat(a1), f2 = flat(a2);
  std::string out;
  if (c == "union1d") {
    onnx::NodeProto* cc = nullptr;
    const std::string both = ctx.EmitTemp("Concat", {f1, f2}, &cc);
    SetAttr(cc, "axis", int64_t{0});
    out = SortedUnique(ctx, both, work, true);
  } else {
    const std::string u = SortedUnique(ctx, f1, work, c == "setdiff1d");
    const std::string eq = ctx.CastTo(ctx.EmitTemp("Equal", {ctx.Unsqueeze(u, {1}), ctx.Unsqueeze(f2, {0})}), v1::BOOL, v1::INT32);
    onnx::NodeProto* r = nullptr;
    std::string in2 = ctx.CastTo(ctx.EmitTemp("ReduceMax", {eq}, &r), v1::INT32, v1::BOOL);
    SetAttr(r, "axes", std::vector<int64_t>{1});
    SetAttr(r, "keepdims", int64_t{0});
    if (c == "setdiff1d") in2 = ctx.EmitTemp("Not", {in2});
    onnx::NodeProto* cp = nullptr;
    out = ctx.EmitTemp("Compress", {u, in2}, &cp);
    SetAttr(cp, "axis", int64_t{0});
  }
  Define(ctx, ctx.CastTo(out, work, d), result);
  return Status::Ok();
}

}  // namespace

Status LowerUnique(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  const std::string& c = ctx.canonical();
  if (c == "union1d" || c == "intersect1d" || c == "setdiff1d") return LowerSetOp(node, call, ctx);
  ValueId x;
  IVY_RETURN_IF_ERROR(TensorParam(call, c == "unique" ? "ar" : "x", &x));
  std::vector<ValueId> results;
  ForEachTensor(node.result, [&](const v1::TensorRef& t) { results.push_back(t.value()); });
  const bool counts = c == "unique_counts";
  if (c == "unique") {
    for (const char* p : {"return_index", "return_inverse", "return_counts"}) {
      if (call.Bool(p).value_or(false)) return Status::Unsupported(std::string("np.unique with ") + p + "=True");
    }
    if (!call.IsNone("axis")) return Status::Unsupported("np.unique along an axis");
    if (!call.Bool("equal_nan").value_or(true)) return Status::Unsupported("np.unique with equal_nan=False");
    if (!call.Bool("sorted").value_or(true)) return Status::Unsupported("np.unique with sorted=False");
  }
  if (results.size() != (counts ? 2u : 1u)) return Status::Unsupported(c + " with other results");
  const v1::DType d = ctx.DType(x);
  // onnxruntime's Unique takes float, double, int64 and int8: others go through int64 and back.
  v1::DType work = d;
  if (d == v1::INT32 || d == v1::INT16 || d == v1::UINT8 || d == v1::UINT16 || d == v1::UINT32) work = v1::INT64;
  else if (d == v1::BOOL) work = v1::INT8;
  else if (d != v1::FLOAT32 && d != v1::FLOAT64 && d != v1::INT64 && d != v1::INT8) return Status::Unsupported(c + " of " + DTypeName(d));
  std::string flat = ctx.EmitTemp("Reshape", {ctx.CastTo(ctx.In(x), d, work), ctx.Int64s({-1})});
  std::string nan;
  const std::string all = flat;
  if (IsFloating(d)) {
    nan = ctx.EmitTemp("IsNaN", {flat});
    onnx::NodeProto* cp = nullptr;
    flat = ctx.EmitTemp("Compress", {flat, ctx.EmitTemp("Not", {nan})}, &cp);
    SetAttr(cp, "axis", int64_t{0});
  }
  onnx::NodeProto* u = ctx.Emit("Unique", {flat}, {ctx.Temp("values"), ctx.Temp("first"), ctx.Temp("inverse"), ctx.Temp("counts")});
  SetAttr(u, "sorted", int64_t{1});
  std::string values = u->output(0), cnt = u->output(3);
  if (IsFloating(d)) {
    const std::string nan_count = SumOver(ctx, ctx.CastTo(nan, v1::BOOL, v1::INT64), {0}, true);
    const std::string has = ctx.EmitTemp("Greater", {nan_count, ctx.Scalar(Number::Int(0), v1::INT64)});
    auto append = [&](const std::string& base, const std::string& extra) {
      onnx::NodeProto* cp = nullptr;
      const std::string tail = ctx.EmitTemp("Compress", {extra, has}, &cp);
      SetAttr(cp, "axis", int64_t{0});
      onnx::NodeProto* cc = nullptr;
      const std::string r = ctx.EmitTemp("Concat", {base, tail}, &cc);
      SetAttr(cc, "axis", int64_t{0});
      return r;
    };
    if (c == "unique") {  // equal_nan=True: one NaN counting them all
      values = append(values, ctx.EmitTemp("Reshape", {ctx.Scalar(Number::Float(kNaN), work), ctx.Int64s({1})}));
      cnt = append(cnt, nan_count);
    } else {  // np.unique_values / unique_counts: the Array API's distinct NaNs, each counted once
      onnx::NodeProto* cp = nullptr;
      const std::string nans = ctx.EmitTemp("Compress", {all, nan}, &cp);
      SetAttr(cp, "axis", int64_t{0});
      onnx::NodeProto* cc = nullptr;
      values = ctx.EmitTemp("Concat", {values, nans}, &cc);
      SetAttr(cc, "axis", int64_t{0});
      const std::string ones = ctx.CastTo(ctx.EmitTemp("Equal", {nans, nans}), v1::BOOL, v1::INT64);  // NaN != NaN: 0
      onnx::NodeProto* cc2 = nullptr;
      cnt = ctx.EmitTemp("Concat", {cnt, ctx.EmitTemp("Sub", {ctx.Scalar(Number::Int(1), v1::INT64), ones})}, &cc2);
      SetAttr(cc2, "axis", int64_t{0});
    }
  }
  Define(ctx, ctx.CastTo(values, work, ctx.DType(results[0])), results[0]);
  if (counts) Define(ctx, ctx.CastTo(cnt, v1::INT64, ctx.DType(results[1])), results[1]);
  return Status::Ok();
}

// np.compress(condition, a, axis=None), np.extract(condition, arr), np.flatnonzero(a): ONNX
// Compress (a shorter condition drops the rest, as in NumPy) and NonZero, lengths read at run time.
Status LowerCompress(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const std::string& c = ctx.canonical();
  if (c == "flatnonzero") {
    ValueId a;
    IVY_RETURN_IF_ERROR(TensorParam(call, "a", &a));
    const std::string flat = ctx.EmitTemp("Reshape", {ctx.CastTo(ctx.In(a), ctx.DType(a), v1::BOOL), ctx.Int64s({-1})});
    Define(ctx, ctx.CastTo(ctx.Squeeze(ctx.EmitTemp("NonZero", {flat}), {0}), v1::INT64, ctx.DType(result)), result);
    return Status::Ok();
  }
  ValueId a;
  IVY_RETURN_IF_ERROR(TensorParam(call, c == "extract" ? "arr" : "a", &a));
  std::string mask;
  if (auto cond = call.Tensor("condition")) {
    mask = ctx.EmitTemp("Reshape", {ctx.CastTo(ctx.In(*cond), ctx.DType(*cond), v1::BOOL), ctx.Int64s({-1})});
  } else {  // a list of bools or ints, as NumPy's bool array of it
    const v1::Arg* ca = call.Get("condition");
    auto items = ca ? SequenceItems(*ca) : std::nullopt;
    if (!items) return Status::Unsupported("condition " + (ca ? ArgToString(*ca, true) : std::string("missing")));
    onnx::TensorProto t;
    t.set_data_type(OnnxElemType(v1::BOOL));
    t.add_dims(static_cast<int64_t>(items->size()));
    std::string raw;
    for (const v1::Arg* it : *items) {
      auto b = AsBool(*it);
      auto i = AsInt(*it);
      if (HasTensor(*it) || (!b && !i)) return Status::Unsupported("condition " + ArgToString(*ca, true));
      raw.push_back(b ? static_cast<char>(*b) : static_cast<char>(*i != 0));
    }
    t.set_raw_data(raw);
    mask = ctx.AddInitializer(std::move(t), "condition");
  }
  std::string data = ctx.CastTo(ctx.In(a), ctx.DType(a), ctx.DType(result));
  onnx::NodeProto* n = nullptr;
  if (c == "extract" || call.IsNone("dim")) {
    n = ctx.Emit("Compress", {ctx.EmitTemp("Reshape", {data, ctx.Int64s({-1})}), mask}, {ctx.Out(result)});
    SetAttr(n, "axis", int64_t{0});
    return Status::Ok();
  }
  auto dim = call.Int("dim");
  if (!dim) return Status::Unsupported("axis is not an int");
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, ctx.Rank(a), &axis));
  n = ctx.Emit("Compress", {data, mask}, {ctx.Out(result)});
  SetAttr(n, "axis", axis);
  return Status::Ok();
}

// np.cov(m, rowvar, bias, ddof) / np.corrcoef(x, rowvar) without y or weights: NumPy's steps in
// the result's dtype: the variables' means subtracted, X @ X.T times 1 / (N - ddof), squeezed;
// corrcoef divides by the standard deviations on both sides and clips to [-1, 1].
Status LowerCov(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId m, result;
  const std::string& c = ctx.canonical();
  IVY_RETURN_IF_ERROR(TensorParam(call, c == "cov" ? "m" : "x", &m));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (!call.IsNone("y")) return Status::Unsupported(c + " with y");
  for (const char* p : {"fweights", "aweights"}) {
    if (call.Has(p) && !call.IsNone(p)) return Status::Unsupported(std::string("cov with ") + p);
  }
  const v1::DType d = ctx.DType(result);
  if (d != v1::FLOAT32 && d != v1::FLOAT64) return Status::Unsupported(c + " in " + DTypeName(d));
  const int r = ctx.Rank(m);
  if (r < 1 || r > 2) return Status::Unsupported(c + " of an array that is not 1-D or 2-D");
  std::string x = ctx.CastTo(ctx.In(m), ctx.DType(m), d);
  if (r == 1) x = ctx.Unsqueeze(x, {0});
  const bool rowvar = call.Bool("rowvar").value_or(true);
  if (!rowvar && !(r == 1 || ctx.Shape(m)[0] == 1)) {  // NumPy transposes unless there is one row
    onnx::NodeProto* t = nullptr;
    x = ctx.EmitTemp("Transpose", {x}, &t);
    SetAttr(t, "perm", std::vector<int64_t>{1, 0});
  }
  double ddof = 1.0;
  if (c == "cov") {
    if (!call.IsNone("ddof")) {
      auto v = call.Int("ddof");
      if (!v) return Status::Unsupported("ddof is not an int");
      ddof = static_cast<double>(*v);
    } else if (call.Bool("bias").value_or(false)) {
      ddof = 0.0;
    }
  }
  onnx::NodeProto* mn = nullptr;
  const std::string avg = ctx.EmitTemp("ReduceMean", {x}, &mn);
  SetAttr(mn, "axes", std::vector<int64_t>{1});
  SetAttr(mn, "keepdims", int64_t{1});
  const std::string xc = ctx.EmitTemp("Sub", {x, avg});
  onnx::NodeProto* t = nullptr;
  const std::string xt = ctx.EmitTemp("Transpose", {xc}, &t);
  SetAttr(t, "perm", std::vector<int64_t>{1, 0});
  onnx::NodeProto* g = nullptr;
  const std::string n = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {xc}), ctx.Scalar(Number::Int(1), v1::INT64)}, &g);
  SetAttr(g, "axis", int64_t{0});
  std::string fact = ctx.EmitTemp("Sub", {ctx.CastTo(n, v1::INT64, d), NumberOf(ctx, ddof, d)});
  fact = ctx.EmitTemp("Max", {fact, NumberOf(ctx, 0.0, d)});  // NumPy: fact <= 0 is 0 (a warning)
  std::string cv = ctx.EmitTemp("Mul", {ctx.EmitTemp("MatMul", {xc, xt}), ctx.EmitTemp("Div", {NumberOf(ctx, 1.0, d), fact})});
  if (c == "corrcoef") {
    if (ctx.Rank(result) == 0) {
      cv = ctx.EmitTemp("Div", {cv, cv});
    } else {
      // diag(c) as [k]: the k x k matrix's items 0, k + 1, 2k + 2, ...
      const std::string k = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {cv}), ctx.Scalar(Number::Int(0), v1::INT64)});
      const std::string idx = ctx.EmitTemp("Mul", {ctx.EmitTemp("Range", {ctx.Scalar(Number::Int(0), v1::INT64), k, ctx.Scalar(Number::Int(1), v1::INT64)}),
                                                   ctx.EmitTemp("Add", {k, ctx.Scalar(Number::Int(1), v1::INT64)})});
      const std::string dg = ctx.EmitTemp("Gather", {ctx.EmitTemp("Reshape", {cv, ctx.Int64s({-1})}), idx});
      const std::string sd = ctx.EmitTemp("Sqrt", {dg});
      cv = ctx.EmitTemp("Div", {ctx.EmitTemp("Div", {cv, ctx.Unsqueeze(sd, {1})}), ctx.Unsqueeze(sd, {0})});
      // np.clip(c, -1, 1), which keeps NaN (a variable without variance)
      cv = ctx.EmitTemp("Where", {ctx.EmitTemp("Greater", {cv, NumberOf(ctx, 1.0, d)}), NumberOf(ctx, 1.0, d), cv});
      cv = ctx.EmitTemp("Where", {ctx.EmitTemp("Less", {cv, NumberOf(ctx, -1.0, d)}), NumberOf(ctx, -1.0, d), cv});
    }
  }
  if (ctx.Rank(result) == 0) cv = ctx.EmitTemp("Reshape", {cv, ctx.Int64s({})});
  else if (ctx.Rank(result) != 2) return Status::Unsupported(c + " with a result of rank " + std::to_string(ctx.Rank(result)));
  Define(ctx, cv, result);
  return Status::Ok();
}


// np.linalg.matrix_norm(x, keepdims, ord) over the last two axes: 'fro' (sqrt of the sum of
// squares), 1 / -1 (the largest / smallest column sum of |x|), inf / -inf (row sums). The
// singular-value norms ('nuc', 2, -2) are refused.
Status LowerMatrixNorm(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const int r = ctx.Rank(x);
  if (r < 2) return Status::Unsupported("matrix_norm of an array of rank < 2");
  const v1::DType d = ctx.DType(result);
  if (!IsFloating(d)) return Status::Unsupported("matrix_norm with a non-float result");
  const bool keepdim = call.Bool("keepdim").value_or(false);
  const v1::Arg* o = call.Get("ord");
  std::string ord = "fro";
  if (o && o->kind_case() == v1::Arg::kS) ord = o->s();
  else if (auto v = o ? AsDouble(*o) : std::nullopt) {
    if (*v == 1.0) ord = "1";
    else if (*v == -1.0) ord = "-1";
    else if (*v == kInf) ord = "inf";
    else if (*v == -kInf) ord = "-inf";
    else return Status::Unsupported("matrix_norm with ord " + ArgToString(*o, true) + " (a singular-value norm)");
  } else if (o && !IsNone(*o)) {
    return Status::Unsupported("matrix_norm with ord " + ArgToString(*o, true));
  }
  const std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  const int64_t row = r - 2, col = r - 1;
  std::string out;
  if (ord == "fro") {
    out = ctx.EmitTemp("Sqrt", {SumOver(ctx, ctx.EmitTemp("Mul", {in, in}), {row, col}, keepdim)});
  } else if (ord == "1" || ord == "-1" || ord == "inf" || ord == "-inf") {
    const bool cols = ord == "1" || ord == "-1";  // sums down each column, then the extreme over columns
    const std::string sums = SumOver(ctx, ctx.EmitTemp("Abs", {in}), {cols ? row : col}, true);
    onnx::NodeProto* n = nullptr;
    out = ctx.EmitTemp(ord[0] == '-' ? "ReduceMin" : "ReduceMax", {sums}, &n);
    SetAttr(n, "axes", std::vector<int64_t>{row, col});
    SetAttr(n, "keepdims", int64_t{keepdim ? 1 : 0});
  } else {
    return Status::Unsupported("matrix_norm with ord '" + ord + "' (a singular-value norm)");
  }
  Define(ctx, out, result);
  return Status::Ok();
}

// np.linalg.matrix_power(a, n), n >= 0: NumPy's products in NumPy's order (a @ a, (a @ a) @ a,
// then binary decomposition); n = 0 is the identity.
Status LowerMatrixPower(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId a, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "a", &a));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  auto n = call.Int("n");
  if (!n) return Status::Unsupported("n is not an int");
  if (*n < 0) return Status::Unsupported("matrix_power with n < 0 (an inverse)");
  const v1::DType d = ctx.DType(result);
  if (d != v1::FLOAT32 && d != v1::FLOAT64 && d != v1::INT32 && d != v1::INT64) {
    return Status::Unsupported(std::string("matrix_power in ") + DTypeName(d));
  }
  if (ctx.Rank(a) < 2) return Status::Unsupported("matrix_power of an array of rank < 2");
  const std::string in = ctx.CastTo(ctx.In(a), ctx.DType(a), d);
  auto mm = [&](const std::string& p, const std::string& q) { return ctx.EmitTemp("MatMul", {p, q}); };
  std::string out;
  if (*n == 0) {
    onnx::NodeProto* g = nullptr;
    const std::string m = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {in}), ctx.Scalar(Number::Int(-1), v1::INT64)}, &g);
    const std::string pos = ctx.EmitTemp("Range", {ctx.Scalar(Number::Int(0), v1::INT64), m, ctx.Scalar(Number::Int(1), v1::INT64)});
    const std::string eye = ctx.CastTo(ctx.EmitTemp("Equal", {ctx.Unsqueeze(pos, {1}), ctx.Unsqueeze(pos, {0})}), v1::BOOL, d);
    out = ctx.EmitTemp("Expand", {eye, ctx.EmitTemp("Shape", {in})});
  } else if (*n == 1) {
    out = in;
  } else if (*n == 2) {
    out = mm(in, in);
  } else if (*n == 3) {
    out = mm(mm(in, in), in);
  } else {
    std::string z, acc;
    for (int64_t k = *n; k > 0; k /= 2) {
      z = z.empty() ? in : mm(z, z);
      if (k % 2) acc = acc.empty() ? z : mm(acc, z);
    }
    out = acc;
  }
  Define(ctx, out, result);
  return Status::Ok();
}

// np.interp(x, xp, fp, left=None, right=None) of real arrays, xp 1-D increasing of at least two
// points: NumPy's loop (numpy/_core/src/multiarray/compiled_base.c) in float64: NaN x stays NaN;
// below xp[0] left, above xp[-1] right; at xp[j] exactly fp[j]; else the slope of the segment
// from xp[j], retried from xp[j + 1] when that gives NaN, fp[j] when both do and fp[j] ==
// fp[j + 1]. The segment j is the count of xp <= x, less one.
Status LowerInterp(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId xpv, fpv, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "xp", &xpv));
  IVY_RETURN_IF_ERROR(TensorParam(call, "fp", &fpv));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (!call.IsNone("period")) return Status::Unsupported("np.interp with period");
  if (ctx.Rank(xpv) != 1 || ctx.Rank(fpv) != 1 || ctx.Shape(xpv)[0] < 2) return Status::Unsupported("np.interp with xp of fewer than two points");
  const v1::DType d = ctx.DType(result);
  if (d != v1::FLOAT64) return Status::Unsupported(std::string("np.interp with a ") + DTypeName(d) + " result");
  const v1::DType f = v1::FLOAT64;
  std::string x;
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *call.Get("x"), f, &x));
  const std::string xp = ctx.CastTo(ctx.In(xpv), ctx.DType(xpv), f), fp = ctx.CastTo(ctx.In(fpv), ctx.DType(fpv), f);
  auto item = [&](const std::string& v, int64_t i) {
    onnx::NodeProto* g = nullptr;
    const std::string r = ctx.EmitTemp("Gather", {v, ctx.Scalar(Number::Int(i), v1::INT64)}, &g);
    SetAttr(g, "axis", int64_t{0});
    return r;
  };
  std::string left = item(fp, 0), right = item(fp, -1);
  if (!call.IsNone("left")) IVY_RETURN_IF_ERROR(OperandAs(ctx, *call.Get("left"), f, &left));
  if (!call.IsNone("right")) IVY_RETURN_IF_ERROR(OperandAs(ctx, *call.Get("right"), f, &right));
  const int xr = call.Get("x")->kind_case() == v1::Arg::kTensor ? ctx.Rank(call.Get("x")->tensor().value()) : 0;
  const std::string xs = ctx.Unsqueeze(x, {xr});  // [..., 1] against xp [n]
  onnx::NodeProto* rs = nullptr;
  const std::string count = ctx.EmitTemp("ReduceSum", {ctx.CastTo(ctx.EmitTemp("LessOrEqual", {xp, xs}), v1::BOOL, v1::INT64),
                                                       ctx.Int64s({-1})}, &rs);
  SetAttr(rs, "keepdims", int64_t{0});
  const int64_t n = ctx.Shape(xpv)[0];
  const std::string j = ctx.EmitTemp("Min", {ctx.EmitTemp("Max", {ctx.EmitTemp("Sub", {count, ctx.Scalar(Number::Int(1), v1::INT64)}),
                                                                ctx.Scalar(Number::Int(0), v1::INT64)}),
                                             ctx.Scalar(Number::Int(n - 2), v1::INT64)});
  const std::string j1 = ctx.EmitTemp("Add", {j, ctx.Scalar(Number::Int(1), v1::INT64)});
  auto at = [&](const std::string& v, const std::string& i) {
    onnx::NodeProto* g = nullptr;
    const std::string r = ctx.EmitTemp("Gather", {v, i}, &g);
    SetAttr(g, "axis", int64_t{0});
    return r;
  };
  const std::string x0 = at(xp, j), x1 = at(xp, j1), y0 = at(fp, j), y1 = at(fp, j1);
  const std::string slope = ctx.EmitTemp("Div", {ctx.EmitTemp("Sub", {y1, y0}), ctx.EmitTemp("Sub", {x1, x0})});
  const std::string from0 = ctx.EmitTemp("Add", {ctx.EmitTemp("Mul", {slope, ctx.EmitTemp("Sub", {x, x0})}), y0});
  const std::string from1 = ctx.EmitTemp("Add", {ctx.EmitTemp("Mul", {slope, ctx.EmitTemp("Sub", {x, x1})}), y1});
  std::string v = ctx.EmitTemp("Where", {ctx.EmitTemp("IsNaN", {from0}), from1, from0});
  v = ctx.EmitTemp("Where", {ctx.EmitTemp("And", {ctx.EmitTemp("IsNaN", {v}), ctx.EmitTemp("Equal", {y0, y1})}), y0, v});
  v = ctx.EmitTemp("Where", {ctx.EmitTemp("Equal", {x0, x}), y0, v});
  const std::string last_x = item(xp, -1);
  v = ctx.EmitTemp("Where", {ctx.EmitTemp("Equal", {x, last_x}), item(fp, -1), v});
  v = ctx.EmitTemp("Where", {ctx.EmitTemp("Less", {x, item(xp, 0)}), left, v});
  v = ctx.EmitTemp("Where", {ctx.EmitTemp("Greater", {x, last_x}), right, v});
  ctx.Emit("Where", {ctx.EmitTemp("IsNaN", {x}), x, v}, {ctx.Out(result)});
  return Status::Ok();
}


// np.gradient(f, *varargs, axis=None, edge_order=1) with uniform spacing (none, or one number h):
// NumPy's central differences (f[2:] - f[:-2]) / (2 * h) inside, one-sided (f[1] - f[0]) / h and
// (f[-1] - f[-2]) / h at the edges; one array per axis (integers become float64).
Status LowerGradient(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId f;
  IVY_RETURN_IF_ERROR(TensorParam(call, "f", &f));
  std::vector<ValueId> results;
  ForEachTensor(node.result, [&](const v1::TensorRef& t) { results.push_back(t.value()); });
  if (call.Int("edge_order").value_or(1) != 1) return Status::Unsupported("np.gradient with edge_order=2");
  double h = 1.0;
  if (const v1::Arg* va = call.Get("varargs")) {
    auto items = SequenceItems(*va);
    if (items && items->size() == 1) {
      auto v = AsDouble(*(*items)[0]);
      if (!v || HasTensor(*(*items)[0])) return Status::Unsupported("np.gradient with array spacing");
      h = *v;
    } else if (items && !items->empty()) {
      return Status::Unsupported("np.gradient with a spacing per axis");
    } else if (!items && !IsNone(*va)) {
      return Status::Unsupported("np.gradient spacing " + ArgToString(*va, true));
    }
  }
  const int rank = ctx.Rank(f);
  std::vector<int64_t> axes;
  if (call.IsNone("dim")) {
    for (int k = 0; k < rank; ++k) axes.push_back(k);
  } else {
    const v1::Arg* a = call.Get("dim");
    if (auto i = AsInt(*a)) axes = {*i};
    else if (auto l = AsIntList(*a)) axes = *l;
    else return Status::Unsupported("axis is not ints");
    for (int64_t& v : axes) IVY_RETURN_IF_ERROR(NormalizeAxis(v, rank, &v));
  }
  if (axes.empty() || results.size() != axes.size()) return Status::Unsupported("np.gradient results do not match its axes");
  const v1::DType d = ctx.DType(results[0]);
  if (!IsFloating(d)) return Status::Unsupported("np.gradient with a non-float result");
  const std::string in = ctx.CastTo(ctx.In(f), ctx.DType(f), d);
  const std::string big = ctx.Int64s({std::numeric_limits<int64_t>::max()});
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t ax = axes[k];
    if (ctx.Shape(f)[ax] >= 0 && ctx.Shape(f)[ax] < 2) return Status::Unsupported("np.gradient along an axis shorter than 2");
    auto slice = [&](int64_t b, int64_t e) {
      return ctx.EmitTemp("Slice", {in, ctx.Int64s({b}), e == 0 ? big : ctx.Int64s({e}), ctx.Int64s({ax})});
    };
    const std::string inner = ctx.EmitTemp("Div", {ctx.EmitTemp("Sub", {slice(2, 0), slice(0, -2)}), NumberOf(ctx, 2.0 * h, d)});
    const std::string first = ctx.EmitTemp("Div", {ctx.EmitTemp("Sub", {slice(1, 2), slice(0, 1)}), NumberOf(ctx, h, d)});
    const std::string last = ctx.EmitTemp("Div", {ctx.EmitTemp("Sub", {slice(-1, 0), slice(-2, -1)}), NumberOf(ctx, h, d)});
    auto* c = ctx.Emit("Concat", {first, inner, last}, {ctx.Out(results[k])});
    SetAttr(c, "axis", ax);
  }
  return Status::Ok();
}

// np.delete(arr, obj, axis=None), obj an int or a list of ints (negative from the end): the
// items of arr (flattened for axis None) along axis whose position is none of them (Compress).
Status LowerDelete(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "arr", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* obj = call.Get("obj");
  std::vector<int64_t> drop;
  if (auto i = obj && obj->kind_case() != v1::Arg::kB ? AsInt(*obj) : std::nullopt) drop = {*i};
  else if (auto l = obj ? AsIntList(*obj) : std::nullopt) drop = *l;
  else return Status::Unsupported("np.delete of obj " + (obj ? ArgToString(*obj, true) : std::string("missing")) + " (ints only)");
  if (auto items = SequenceItems(*obj)) {
    for (const v1::Arg* it : *items) {
      if (it->kind_case() == v1::Arg::kB) return Status::Unsupported("np.delete with a bool mask");
    }
  }
  std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), ctx.DType(result));
  int64_t axis = 0;
  if (call.IsNone("dim")) {
    in = ctx.EmitTemp("Reshape", {in, ctx.Int64s({-1})});
  } else {
    auto dim = call.Int("dim");
    if (!dim) return Status::Unsupported("axis is not an int");
    IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, ctx.Rank(x), &axis));
  }
  onnx::NodeProto* g = nullptr;
  const std::string n = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {in}), ctx.Scalar(Number::Int(axis), v1::INT64)}, &g);
  SetAttr(g, "axis", int64_t{0});
  const std::string pos = ctx.EmitTemp("Range", {ctx.Scalar(Number::Int(0), v1::INT64), n, ctx.Scalar(Number::Int(1), v1::INT64)});
  std::string keep;
  for (int64_t o : drop) {
    std::string at = ctx.Scalar(Number::Int(o), v1::INT64);
    if (o < 0) at = ctx.EmitTemp("Add", {n, at});
    const std::string other = ctx.EmitTemp("Not", {ctx.EmitTemp("Equal", {pos, at})});
    keep = keep.empty() ? other : ctx.EmitTemp("And", {keep, other});
  }
  if (keep.empty()) keep = ctx.EmitTemp("Equal", {pos, pos});  // np.delete(arr, []): everything
  auto* c = ctx.Emit("Compress", {in, keep}, {ctx.Out(result)});
  SetAttr(c, "axis", axis);
  return Status::Ok();
}

// np.choose(a, choices, mode): choices broadcast with a and stacked, a's index picked from them
// (GatherElements on the stacked axis); mode 'wrap' takes a mod n, 'clip' clips it, 'raise'
// (NumPy raises for an index out of range) takes it as it is.
Status LowerChoose(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId a, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "a", &a));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* ch = call.Get("choices");
  auto items = ch ? SequenceItems(*ch) : std::nullopt;
  if (!items || items->empty()) return Status::Unsupported("np.choose of choices that are not a list");
  std::string mode = "raise";
  if (const v1::Arg* m = call.Get("mode"); m && m->kind_case() == v1::Arg::kS) mode = m->s();
  if (mode != "raise" && mode != "wrap" && mode != "clip") return Status::Unsupported("np.choose mode " + mode);
  const v1::DType d = ctx.DType(result);
  std::vector<std::string> vals;
  std::vector<std::string> zeros = {ctx.EmitTemp("ConstantOfShape", {ctx.EmitTemp("Shape", {ctx.In(a)})})};
  for (const v1::Arg* it : *items) {
    std::string v;
    IVY_RETURN_IF_ERROR(OperandAs(ctx, *it, d, &v));
    vals.push_back(v);
    zeros.push_back(ctx.EmitTemp("ConstantOfShape", {ctx.EmitTemp("Shape", {v})}));
  }
  const std::string shape = ctx.EmitTemp("Shape", {ctx.EmitTemp("Sum", zeros)});
  std::vector<std::string> stacked;
  for (const std::string& v : vals) stacked.push_back(ctx.Unsqueeze(ctx.EmitTemp("Expand", {v, shape}), {0}));
  onnx::NodeProto* cc = nullptr;
  const std::string all = ctx.EmitTemp("Concat", stacked, &cc);
  SetAttr(cc, "axis", int64_t{0});
  const int64_t k = static_cast<int64_t>(vals.size());
  std::string idx = ctx.CastTo(ctx.In(a), ctx.DType(a), v1::INT64);
  if (mode == "wrap") idx = ctx.EmitTemp("Mod", {idx, ctx.Scalar(Number::Int(k), v1::INT64)});  // floor mod, as NumPy's wrap
  else if (mode == "clip") idx = ctx.EmitTemp("Min", {ctx.EmitTemp("Max", {idx, ctx.Scalar(Number::Int(0), v1::INT64)}), ctx.Scalar(Number::Int(k - 1), v1::INT64)});
  idx = ctx.Unsqueeze(ctx.EmitTemp("Expand", {idx, shape}), {0});
  onnx::NodeProto* ge = nullptr;
  const std::string picked = ctx.EmitTemp("GatherElements", {all, idx}, &ge);
  SetAttr(ge, "axis", int64_t{0});
  ctx.Emit("Squeeze", {picked, ctx.Int64s({0})}, {ctx.Out(result)});
  return Status::Ok();
}

// np.logspace(start, stop, num, endpoint, base): base ** linspace(start, stop, num, endpoint)
// (linspace's lowering, then a Pow), base one number, a float result.
Status LowerLogspace(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(result);
  if (!IsFloating(d)) return Status::Unsupported("logspace with a non-float result");
  const v1::Arg* b = call.Get("base");
  auto base = b ? AsDouble(*b) : std::nullopt;
  if (!base || HasTensor(*b)) return Status::Unsupported("logspace with an array base");
  // NumPy raises base to the float exponents, then casts to dtype: not linspace's cast first.
  if (!call.IsNone("dtype")) return Status::Unsupported("logspace with dtype " + ArgToString(*call.Get("dtype"), true));
  std::string y;
  {
    Rebinding run(ctx);
    y = run.BindResult(result, "exponents");
    IVY_RETURN_IF_ERROR(run.Run(FindCanonicalLowering("numpy_linspace")->fn, node, call, "numpy_linspace"));
  }
  ctx.Emit("Pow", {ctx.Scalar(Number::Float(*base), d), y}, {ctx.Out(result)});
  return Status::Ok();
}

}  // namespace onnx_export
}  // namespace ivytrace
