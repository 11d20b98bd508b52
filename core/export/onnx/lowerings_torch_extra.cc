// Lowerings of torch functions that had no canonical op (issue 11): rsub, deg2rad/rad2deg,
// isposinf/isneginf, ldexp, nansum/nanmean, inner, addr, dist, kron, cross and rot90, each
// decomposed into opset-17 ops. Each reads every parameter it is given and refuses what it cannot
// express exactly.
#include <cmath>
#include <limits>
#include <string>
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

// x reversed along `axis` (a Slice of step -1).
std::string Reverse(LoweringContext& ctx, const std::string& x, int64_t axis) {
  return ctx.EmitTemp("Slice", {x, ctx.Int64s({-1}), ctx.Int64s({std::numeric_limits<int64_t>::min()}), ctx.Int64s({axis}),
                                ctx.Int64s({-1})});
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
  std::vector<std::string> ins{x};
  if (axes && rank > 0) ins.push_back(ctx.Int64s(*axes));
  onnx::NodeProto* n = nullptr;
  const std::string out = ctx.EmitTemp(op, ins, &n);
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

// deg2rad / rad2deg: the input (integers as the result's float dtype) times pi/180 or 180/pi, as
// torch multiplies by that number.
Status LowerAngleUnits(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(result);
  if (d != v1::FLOAT32 && d != v1::FLOAT64) return Status::Unsupported(ctx.canonical() + " in " + DTypeName(d));
  const double k = ctx.canonical() == "deg2rad" ? 0.017453292519943295769236907684886127134428718885417
                                                : 57.295779513082320876798154814105170332405472466564;
  ctx.Emit("Mul", {ctx.CastTo(ctx.In(x), ctx.DType(x), d), F(ctx, k, d)}, {ctx.Out(result)});
  return Status::Ok();
}

// isposinf / isneginf: equal to +inf / -inf; never for integers and bools.
Status LowerSignedInf(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(x);
  const std::string in = ctx.In(x);
  if (!IsFloating(d)) {
    auto* n = ctx.Emit("ConstantOfShape", {ctx.EmitTemp("Shape", {in})}, {ctx.Out(result)});
    onnx::TensorProto v;
    v.set_data_type(OnnxElemType(v1::BOOL));
    v.add_dims(1);
    v.set_raw_data(std::string(1, '\0'));
    SetAttr(n, "value", v);
    return Status::Ok();
  }
  auto* n = ctx.Emit("IsInf", {in}, {ctx.Out(result)});
  const bool pos = ctx.canonical() == "isposinf";
  SetAttr(n, "detect_positive", int64_t{pos ? 1 : 0});
  SetAttr(n, "detect_negative", int64_t{pos ? 0 : 1});
  return Status::Ok();
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

// nansum / nanmean(input, dim, keepdim, dtype): NaNs count as 0 in the sum; nanmean divides by
// the number of non-NaN items (torch: nansum / (~isnan).sum()).
Status LowerNanReduce(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(NumericResult(node, ctx, &result));
  const v1::DType d = ctx.DType(result);
  const bool mean = ctx.canonical() == "nanmean";
  const int rank = ctx.Rank(x);
  std::optional<std::vector<int64_t>> axes;
  IVY_RETURN_IF_ERROR(ReduceAxes(call, rank, &axes));
  const bool keepdim = call.Bool("keepdim").value_or(false);
  if (call.Has("dtype") && !call.IsNone("dtype") && !ArgDType(*call.Get("dtype"))) return Status::Unsupported("dtype is not a dtype");
  std::string in = ctx.In(x);
  std::string not_nan;
  if (IsFloating(ctx.DType(x))) {
    const std::string nan = ctx.EmitTemp("IsNaN", {in});
    in = ctx.EmitTemp("Where", {nan, ctx.Scalar(Number::Int(0), ctx.DType(x)), in});
    not_nan = ctx.EmitTemp("Not", {nan});
  } else if (mean) {
    return Status::Unsupported("nanmean of integers");
  }
  in = ctx.CastTo(in, ctx.DType(x), d);
  const std::string sum = Reduce(ctx, "ReduceSum", in, axes, keepdim, rank);
  if (!mean) {
    ctx.Emit("Identity", {sum}, {ctx.Out(result)});
    return Status::Ok();
  }
  const std::string count = Reduce(ctx, "ReduceSum", ctx.CastTo(not_nan, v1::BOOL, d), axes, keepdim, rank);
  ctx.Emit("Div", {sum, count}, {ctx.Out(result)});
  return Status::Ok();
}

// inner(input, other): the sum over the last dims of both, result dims input's then other's (an
// Einsum); a 0-d operand multiplies.
Status LowerInner(const Node& node, const BoundCall& call, LoweringContext& ctx) {
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
  auto beta = call.Double("beta"), alpha = call.Double("alpha");
  if (!beta || !alpha) return Status::Unsupported("beta and alpha are not numbers");
  if (!IsFloating(d) && (*beta != std::floor(*beta) || *alpha != std::floor(*alpha))) {
    return Status::Unsupported("a float beta or alpha for integer tensors");
  }
  std::string outer = ctx.EmitTemp("Mul", {ctx.Unsqueeze(p, {1}), ctx.Unsqueeze(q, {0})});
  if (*alpha != 1.0) outer = ctx.EmitTemp("Mul", {outer, F(ctx, *alpha, d)});
  if (*beta == 0.0) {  // the result is (n, m), input broadcast to it
    ctx.Emit("Identity", {outer}, {ctx.Out(result)});
    return Status::Ok();
  }
  if (*beta != 1.0) c = ctx.EmitTemp("Mul", {c, F(ctx, *beta, d)});
  ctx.Emit("Add", {c, outer}, {ctx.Out(result)});
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

// kron(input, other): both brought to the same rank (leading 1s), interleaved as
// (a0, b0, a1, b1, ...) by Unsqueeze, multiplied, and reshaped to (a0 * b0, a1 * b1, ...).
Status LowerKron(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result, av, bv;
  IVY_RETURN_IF_ERROR(NumericResult(node, ctx, &result));
  const v1::DType d = ctx.DType(result);
  std::string a, b;
  IVY_RETURN_IF_ERROR(TensorAs(ctx, call, "input", d, &a, &av));
  IVY_RETURN_IF_ERROR(TensorAs(ctx, call, "other", d, &b, &bv));
  const int ra = ctx.Rank(av), rb = ctx.Rank(bv), r = std::max(ra, rb);
  if (r == 0) {
    ctx.Emit("Mul", {a, b}, {ctx.Out(result)});
    return Status::Ok();
  }
  auto lead = [&](const std::string& x, int rx) {
    std::vector<int64_t> axes;
    for (int k = 0; k < r - rx; ++k) axes.push_back(k);
    return axes.empty() ? x : ctx.Unsqueeze(x, axes);
  };
  a = lead(a, ra);
  b = lead(b, rb);
  std::vector<int64_t> odd, even;
  for (int k = 0; k < r; ++k) {
    odd.push_back(2 * k + 1);
    even.push_back(2 * k);
  }
  const std::string prod = ctx.EmitTemp("Mul", {ctx.Unsqueeze(a, odd), ctx.Unsqueeze(b, even)});
  const std::string shape = ctx.EmitTemp("Mul", {ctx.EmitTemp("Shape", {a}), ctx.EmitTemp("Shape", {b})});
  auto* n = ctx.Emit("Reshape", {prod, shape}, {ctx.Out(result)});
  SetAttr(n, "allowzero", int64_t{1});
  return Status::Ok();
}

// cross(input, other, dim): the cross product along a dim of size 3 (dim None, which picks a dim
// by its size, is refused): a[1,2,0] * b[2,0,1] - a[2,0,1] * b[1,2,0].
Status LowerCross(const Node& node, const BoundCall& call, LoweringContext& ctx) {
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

// rot90(input, k, dims) (np.rot90's axes, same turns): k mod 4 quarter turns from dims[0] towards dims[1]: one turn flips
// dims[1] and swaps the two, three flip dims[0] and swap, two flip both (torch's construction).
Status LowerRot90(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const int rank = ctx.Rank(x);
  auto k = call.Int("k");
  auto dims = call.IntList(call.Has("dims") ? "dims" : "axes");  // np.rot90 says axes
  if (!k || !dims || dims->size() != 2) return Status::Unsupported("k is not an int or dims not two ints");
  if (rank < 2) return Status::Unsupported("rot90 of a tensor of rank < 2");
  int64_t d0, d1;
  IVY_RETURN_IF_ERROR(NormalizeAxis((*dims)[0], rank, &d0));
  IVY_RETURN_IF_ERROR(NormalizeAxis((*dims)[1], rank, &d1));
  if (d0 == d1) return Status::Unsupported("rot90 dims that are the same");
  const int64_t turns = ((*k % 4) + 4) % 4;
  const std::string in = ctx.In(x);
  std::vector<int64_t> perm(rank);
  for (int i = 0; i < rank; ++i) perm[i] = i;
  std::swap(perm[d0], perm[d1]);
  if (turns == 0) {
    ctx.Emit("Identity", {in}, {ctx.Out(result)});
  } else if (turns == 2) {
    ctx.Emit("Identity", {Reverse(ctx, Reverse(ctx, in, d0), d1)}, {ctx.Out(result)});
  } else {
    auto* t = ctx.Emit("Transpose", {Reverse(ctx, in, turns == 1 ? d1 : d0)}, {ctx.Out(result)});
    SetAttr(t, "perm", perm);
  }
  return Status::Ok();
}

}  // namespace onnx_export
}  // namespace ivytrace
