// Lowerings of canonical ops that ONNX opset 17 has no single op for, decomposed (issue 11):
// moveaxis, narrow, select, unflatten, lerp, cumprod, diagonal, trace, lax.dynamic_slice and
// dynamic_update_slice. Each reads every parameter it is given and
// refuses what it cannot express exactly.
#include <algorithm>
#include <numeric>

#include "core/export/onnx/lowerings.h"
#include "core/ir/arg.h"

namespace ivytrace {
namespace onnx_export {

namespace {

// An int or a list/tuple of ints.
std::optional<std::vector<int64_t>> IntOrInts(const BoundCall& call, const char* param) {
  const v1::Arg* a = call.Get(param);
  if (!a) return std::nullopt;
  if (auto i = AsInt(*a)) return std::vector<int64_t>{*i};
  return call.IntList(param);
}

// x.shape[axis] as a 1-D int64 [1].
std::string DimSize(LoweringContext& ctx, const std::string& x, int64_t axis) {
  onnx::NodeProto* g = nullptr;
  const std::string size = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {x}), ctx.Int64s({axis})}, &g);
  SetAttr(g, "axis", int64_t{0});
  return size;
}

// A position argument (an int, a size read from a shape, or a 0-d integer tensor) as int64 [1].
Status Position(LoweringContext& ctx, const BoundCall& call, const char* param, std::string* out) {
  if (auto t = call.Tensor(param)) {
    if (IsFloating(ctx.DType(*t)) || ctx.DType(*t) == v1::BOOL || ctx.Rank(*t) != 0) {
      return Status::Unsupported(std::string(param) + " is a tensor that is not a 0-d integer");
    }
    *out = ctx.EmitTemp("Reshape", {ctx.CastTo(ctx.In(*t), ctx.DType(*t), v1::INT64), ctx.Int64s({1})});
    return Status::Ok();
  }
  const v1::Arg* a = call.Get(param);
  if (!a || !(AsInt(*a) || IsSymbolicArg(ctx, *a))) {
    return Status::Unsupported(std::string(param) + " is not an int");
  }
  return DynamicInts(ctx, *a, out);
}

// The "input" tensor, the single result, and the "dim" parameter as an axis of the input: what
// narrow, select and unflatten start from.
Status InputResultAndDim(const Node& node, const BoundCall& call, LoweringContext& ctx, ValueId* x, ValueId* result,
                         int64_t* axis) {
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", x));
  IVY_RETURN_IF_ERROR(SingleResult(node, result));
  auto dim = call.Int("dim");
  if (!dim) return Status::Unsupported("dim is not an int");
  return NormalizeAxis(*dim, ctx.Rank(*x), axis);
}

}  // namespace

// moveaxis(input, source, destination) (np.moveaxis, torch.movedim/moveaxis): a Transpose.
Status LowerMoveaxis(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const int rank = ctx.Rank(x);
  auto src = IntOrInts(call, "source"), dst = IntOrInts(call, "destination");
  if (!src || !dst) return Status::Unsupported("source and destination are not ints");
  if (src->size() != dst->size()) return Status::Unsupported("source and destination of different lengths");
  for (auto& d : *src) IVY_RETURN_IF_ERROR(NormalizeAxis(d, std::max(rank, 1), &d));
  for (auto& d : *dst) IVY_RETURN_IF_ERROR(NormalizeAxis(d, std::max(rank, 1), &d));
  auto unique = [](std::vector<int64_t> v) {
    std::sort(v.begin(), v.end());
    return std::adjacent_find(v.begin(), v.end()) == v.end();
  };
  if (!unique(*src) || !unique(*dst)) return Status::Unsupported("repeated dims in source or destination");
  if (rank == 0) {
    ctx.Emit("Identity", {ctx.In(x)}, {ctx.Out(result)});
    return Status::Ok();
  }
  // NumPy's construction: the dims not moved, in order, then each moved dim inserted at its
  // destination, in increasing destination order.
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(src->begin(), src->end(), d) == src->end()) perm.push_back(d);
  }
  std::vector<std::pair<int64_t, int64_t>> moved;
  for (size_t i = 0; i < src->size(); ++i) moved.emplace_back((*dst)[i], (*src)[i]);
  std::sort(moved.begin(), moved.end());
  for (const auto& [to, from] : moved) perm.insert(perm.begin() + to, from);
  auto* n = ctx.Emit("Transpose", {ctx.In(x)}, {ctx.Out(result)});
  SetAttr(n, "perm", perm);
  return Status::Ok();
}

// narrow(input, dim, start, length): a Slice; a negative start counts from the end (torch).
Status LowerNarrow(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  int64_t axis;
  IVY_RETURN_IF_ERROR(InputResultAndDim(node, call, ctx, &x, &result, &axis));
  std::string start, length;
  IVY_RETURN_IF_ERROR(Position(ctx, call, "start", &start));
  IVY_RETURN_IF_ERROR(Position(ctx, call, "length", &length));
  const std::string in = ctx.In(x);
  const std::string wrapped = ctx.EmitTemp("Add", {start, DimSize(ctx, in, axis)});
  const std::string lo = ctx.EmitTemp("Where", {ctx.EmitTemp("Less", {start, ctx.Int64s({0})}), wrapped, start});
  const std::string hi = ctx.EmitTemp("Add", {lo, length});
  ctx.Emit("Slice", {in, lo, hi, ctx.Int64s({axis})}, {ctx.Out(result)});
  return Status::Ok();
}

// select(input, dim, index): a Gather of one index (negative counts from the end) along dim.
Status LowerSelect(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  int64_t axis;
  IVY_RETURN_IF_ERROR(InputResultAndDim(node, call, ctx, &x, &result, &axis));
  std::string index;
  IVY_RETURN_IF_ERROR(Position(ctx, call, "index", &index));
  onnx::NodeProto* g = nullptr;
  const std::string picked = ctx.EmitTemp("Gather", {ctx.In(x), index}, &g);
  SetAttr(g, "axis", axis);
  ctx.Emit("Squeeze", {picked, ctx.Int64s({axis})}, {ctx.Out(result)});
  return Status::Ok();
}

// unflatten(input, dim, sizes): a Reshape to shape[:dim] + sizes + shape[dim+1:] (sizes may hold
// one -1, and sizes read from shapes); a 0 is an empty dim, as in torch (allowzero).
Status LowerUnflatten(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  int64_t axis;
  IVY_RETURN_IF_ERROR(InputResultAndDim(node, call, ctx, &x, &result, &axis));
  const int rank = ctx.Rank(x);
  const v1::Arg* sizes = call.Get("sizes");
  if (!sizes || !SequenceItems(*sizes)) return Status::Unsupported("sizes is not a list of ints");
  if (ctx.opset() < 14) return Status::Unsupported("unflatten needs opset 14 (Reshape's allowzero)");
  std::string inner;
  IVY_RETURN_IF_ERROR(DynamicInts(ctx, *sizes, &inner));
  const std::string shape = ctx.EmitTemp("Shape", {ctx.In(x)});
  auto part = [&](int64_t lo, int64_t hi) {
    return ctx.EmitTemp("Slice", {shape, ctx.Int64s({lo}), ctx.Int64s({hi}), ctx.Int64s({0})});
  };
  onnx::NodeProto* c = nullptr;
  const std::string target = ctx.EmitTemp("Concat", {part(0, axis), inner, part(axis + 1, rank)}, &c);
  SetAttr(c, "axis", int64_t{0});
  auto* n = ctx.Emit("Reshape", {ctx.In(x), target}, {ctx.Out(result)});
  SetAttr(n, "allowzero", int64_t{1});
  return Status::Ok();
}

// lerp(input, end, weight), as torch computes it: input + weight * (end - input) where
// |weight| < 0.5, else end - (end - input) * (1 - weight).
Status LowerLerp(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* a = call.Get("input");
  const v1::Arg* b = call.Get("end");
  const v1::Arg* w = call.Get("weight");
  if (!a || !b || !w) return Status::Unsupported("missing operand");
  const v1::DType d = ctx.DType(result);
  if (!IsFloating(d)) return Status::Unsupported("lerp of a non-floating result");
  std::string start, end, weight;
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *a, d, &start));
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *b, d, &end));
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *w, d, &weight));
  const std::string diff = ctx.EmitTemp("Sub", {end, start});
  const std::string small = ctx.EmitTemp("Less", {ctx.EmitTemp("Abs", {weight}), ctx.Scalar(Number::Float(0.5), d)});
  const std::string lo = ctx.EmitTemp("Add", {start, ctx.EmitTemp("Mul", {weight, diff})});
  const std::string one_minus = ctx.EmitTemp("Sub", {ctx.Scalar(Number::Float(1.0), d), weight});
  const std::string hi = ctx.EmitTemp("Sub", {end, ctx.EmitTemp("Mul", {diff, one_minus})});
  ctx.Emit("Where", {small, lo, hi}, {ctx.Out(result)});
  return Status::Ok();
}

// cumprod(input, dim) (np.cumprod: axis None flattens; lax.cumprod_p's reverse): ONNX has no CumProd. Output i along dim
// is the product of inputs 0..i: the input, broadcast over a new axis of output positions, is 1
// where the input position comes after the output's (a triangular mask), and ReduceProd takes the
// products. Quadratic in the dim's length.
Status LowerCumprod(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(result);
  if (d != v1::FLOAT32 && d != v1::FLOAT64 && d != v1::INT32 && d != v1::INT64) {
    return Status::Unsupported(std::string("cumprod in ") + DTypeName(d));
  }
  std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  int rank = ctx.Rank(x);
  int64_t axis = 0;
  if (call.IsNone("dim")) {
    if (node.op.rfind("numpy.", 0) != 0) return Status::Unsupported("cumprod without dim");
    in = ctx.EmitTemp("Reshape", {in, ctx.Int64s({-1})});
    rank = 1;
  } else {
    auto dim = call.Int("dim");
    if (!dim) return Status::Unsupported("dim is not an int");
    IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, std::max(rank, 1), &axis));
  }
  if (rank == 0) {
    ctx.Emit("Identity", {in}, {ctx.Out(result)});
    return Status::Ok();
  }
  // positions j (input) and i (output): mask[i, j] = j <= i, shaped [1.., n, n, 1..] with i at
  // `axis` and j at axis + 1.
  const std::string n = ctx.EmitTemp("Squeeze", {DimSize(ctx, in, axis), ctx.Int64s({0})});
  const std::string pos = ctx.EmitTemp("Range", {ctx.Scalar(Number::Int(0), v1::INT64), n,
                                                 ctx.Scalar(Number::Int(1), v1::INT64)});
  const std::string i = ctx.Unsqueeze(pos, {1}), j = ctx.Unsqueeze(pos, {0});
  // lax.cumprod(reverse=True): the products of inputs i..n-1.
  const bool reverse = call.Has("reverse") && call.Bool("reverse").value_or(true);
  std::string mask = ctx.EmitTemp(reverse ? "GreaterOrEqual" : "LessOrEqual", {j, i});
  std::vector<int64_t> outer, inner;
  for (int64_t k = 0; k < axis; ++k) outer.push_back(k);
  if (!outer.empty()) mask = ctx.Unsqueeze(mask, outer);
  for (int64_t k = axis + 2; k < rank + 1; ++k) inner.push_back(k);
  if (!inner.empty()) mask = ctx.Unsqueeze(mask, inner);
  const std::string spread = ctx.Unsqueeze(in, {axis});
  const std::string masked = ctx.EmitTemp("Where", {mask, spread, ctx.Scalar(Number::Int(1), d)});
  auto* r = ctx.Emit("ReduceProd", {masked}, {ctx.Out(result)});
  SetAttr(r, "axes", std::vector<int64_t>{axis + 1});
  SetAttr(r, "keepdims", int64_t{0});
  return Status::Ok();
}

namespace {

// lax's start indices (ints, sizes read from shapes, or 0-d integer arrays) clamped as lax clamps
// them: into [0, dim - size], so the window lies inside the operand. Int64 [rank].
Status ClampedStarts(LoweringContext& ctx, const v1::Arg* starts, const std::string& in, const std::string& sizes,
                     int rank, std::string* out) {
  auto items = starts ? SequenceItems(*starts) : std::nullopt;
  if (!items || static_cast<int>(items->size()) != rank) {
    return Status::Unsupported("start indices do not give one index per dim");
  }
  std::vector<std::string> parts;
  for (const v1::Arg* a : *items) {
    if (a->kind_case() == v1::Arg::kTensor) {
      const ValueId t = a->tensor().value();
      if (IsFloating(ctx.DType(t)) || ctx.DType(t) == v1::BOOL || ctx.Rank(t) != 0) {
        return Status::Unsupported("a start index that is not a 0-d integer array");
      }
      parts.push_back(ctx.EmitTemp("Reshape", {ctx.CastTo(ctx.In(t), ctx.DType(t), v1::INT64), ctx.Int64s({1})}));
    } else if (AsInt(*a) || IsSymbolicArg(ctx, *a)) {
      std::string p;
      IVY_RETURN_IF_ERROR(DynamicInts(ctx, *a, &p));
      parts.push_back(p);
    } else {
      return Status::Unsupported("a start index that is neither an int nor an array");
    }
  }
  std::string s = parts[0];
  if (parts.size() > 1) {
    onnx::NodeProto* c = nullptr;
    s = ctx.EmitTemp("Concat", parts, &c);
    SetAttr(c, "axis", int64_t{0});
  }
  const std::string hi = ctx.EmitTemp("Sub", {ctx.EmitTemp("Shape", {in}), sizes});
  *out = ctx.EmitTemp("Max", {ctx.EmitTemp("Min", {s, hi}), ctx.Int64s(std::vector<int64_t>(rank, 0))});
  return Status::Ok();
}

}  // namespace

// lax.dynamic_slice_p(operand, *start_indices, slice_sizes): a Slice at the clamped starts.
Status LowerDynamicSlice(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const int rank = ctx.Rank(x);
  auto sizes = call.IntList("slice_sizes");
  if (!sizes || static_cast<int>(sizes->size()) != rank) return Status::Unsupported("slice_sizes are not one int per dim");
  if (rank == 0) {
    ctx.Emit("Identity", {ctx.In(x)}, {ctx.Out(result)});
    return Status::Ok();
  }
  const std::string in = ctx.In(x), size = ctx.Int64s(*sizes);
  std::string lo;
  IVY_RETURN_IF_ERROR(ClampedStarts(ctx, call.Get("start_indices"), in, size, rank, &lo));
  std::vector<int64_t> axes(rank);
  std::iota(axes.begin(), axes.end(), 0);
  ctx.Emit("Slice", {in, lo, ctx.EmitTemp("Add", {lo, size}), ctx.Int64s(axes)}, {ctx.Out(result)});
  return Status::Ok();
}

// lax.dynamic_update_slice_p(operand, update, *indices): a ScatterND of the update at the clamped
// starts (the indices of every update element: start + its position).
Status LowerDynamicUpdateSlice(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, u, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "update", &u));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const int rank = ctx.Rank(x);
  if (ctx.Rank(u) != rank) return Status::Unsupported("an update of another rank");
  const v1::DType d = ctx.DType(result);
  const std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  const std::string upd = ctx.CastTo(ctx.In(u), ctx.DType(u), d);
  if (rank == 0) {
    ctx.Emit("Identity", {upd}, {ctx.Out(result)});
    return Status::Ok();
  }
  const std::string ushape = ctx.EmitTemp("Shape", {upd});
  std::string lo;
  IVY_RETURN_IF_ERROR(ClampedStarts(ctx, call.Get("indices"), in, ushape, rank, &lo));
  std::vector<std::string> coords;
  for (int k = 0; k < rank; ++k) {
    onnx::NodeProto* g = nullptr;
    const std::string n = ctx.EmitTemp("Gather", {ushape, ctx.Scalar(Number::Int(k), v1::INT64)}, &g);
    SetAttr(g, "axis", int64_t{0});
    onnx::NodeProto* gs = nullptr;
    const std::string s = ctx.EmitTemp("Gather", {lo, ctx.Scalar(Number::Int(k), v1::INT64)}, &gs);
    SetAttr(gs, "axis", int64_t{0});
    std::string r = ctx.EmitTemp("Add", {ctx.EmitTemp("Range", {ctx.Scalar(Number::Int(0), v1::INT64), n,
                                                                 ctx.Scalar(Number::Int(1), v1::INT64)}), s});
    std::vector<int64_t> view(rank, 1);
    view[k] = -1;
    r = ctx.EmitTemp("Reshape", {r, ctx.Int64s(view)});
    coords.push_back(ctx.Unsqueeze(ctx.EmitTemp("Expand", {r, ushape}), {rank}));
  }
  std::string index = coords[0];
  if (rank > 1) {
    onnx::NodeProto* c = nullptr;
    index = ctx.EmitTemp("Concat", coords, &c);
    SetAttr(c, "axis", int64_t{rank});
  }
  ctx.Emit("ScatterND", {in, index, upd}, {ctx.Out(result)});
  return Status::Ok();
}

namespace {

// The diagonal of `x` at `offset` over dims a1, a2, as the last dim of the other dims: the two dims
// moved last and flattened, and a Gather of positions i * (m + 1) + start, i < L, with n, m the
// two dims' run-time sizes, L = max(0, min(n, m - offset)) and start = offset for offset >= 0,
// L = max(0, min(n + offset, m)) and start = -offset * m below.
Status EmitDiagonal(LoweringContext& ctx, const BoundCall& call, ValueId x, const char* p1, const char* p2,
                    std::string* out) {
  const int rank = ctx.Rank(x);
  if (rank < 2) return Status::Unsupported("the diagonal of an array of rank < 2");
  if (ctx.opset() < 14) return Status::Unsupported("diagonal needs opset 14 (Reshape's allowzero)");
  // torch.trace has none of them: the main diagonal of dims 0 and 1.
  auto get = [&](const char* p, int64_t dflt) { return call.Has(p) ? call.Int(p) : std::optional<int64_t>(dflt); };
  auto offset = get("offset", 0), d1 = get(p1, 0), d2 = get(p2, 1);
  if (!offset || !d1 || !d2) return Status::Unsupported("offset and axes are not ints");
  int64_t a1, a2;
  IVY_RETURN_IF_ERROR(NormalizeAxis(*d1, rank, &a1));
  IVY_RETURN_IF_ERROR(NormalizeAxis(*d2, rank, &a2));
  if (a1 == a2) return Status::Unsupported("the diagonal of one dim with itself");
  std::vector<int64_t> perm;
  for (int64_t k = 0; k < rank; ++k) {
    if (k != a1 && k != a2) perm.push_back(k);
  }
  perm.push_back(a1);
  perm.push_back(a2);
  onnx::NodeProto* t = nullptr;
  const std::string moved = ctx.EmitTemp("Transpose", {ctx.In(x)}, &t);
  SetAttr(t, "perm", perm);
  const std::string shape = ctx.EmitTemp("Shape", {moved});
  auto part = [&](int64_t lo, int64_t hi) {
    return ctx.EmitTemp("Slice", {shape, ctx.Int64s({lo}), ctx.Int64s({hi}), ctx.Int64s({0})});
  };
  const std::string n = part(rank - 2, rank - 1), m = part(rank - 1, rank);
  onnx::NodeProto* c = nullptr;
  const std::string flat_shape = ctx.EmitTemp("Concat", {part(0, rank - 2), ctx.EmitTemp("Mul", {n, m})}, &c);
  SetAttr(c, "axis", int64_t{0});
  onnx::NodeProto* r = nullptr;
  const std::string flat = ctx.EmitTemp("Reshape", {moved, flat_shape}, &r);
  SetAttr(r, "allowzero", int64_t{1});
  const std::string k = ctx.Int64s({*offset});
  std::string length, start;
  if (*offset >= 0) {
    length = ctx.EmitTemp("Min", {n, ctx.EmitTemp("Sub", {m, k})});
    start = k;
  } else {
    length = ctx.EmitTemp("Min", {ctx.EmitTemp("Add", {n, k}), m});
    start = ctx.EmitTemp("Mul", {ctx.Int64s({-*offset}), m});
  }
  length = ctx.EmitTemp("Squeeze", {ctx.EmitTemp("Max", {length, ctx.Int64s({0})}), ctx.Int64s({0})});
  const std::string i = ctx.EmitTemp("Range", {ctx.Scalar(Number::Int(0), v1::INT64), length,
                                               ctx.Scalar(Number::Int(1), v1::INT64)});
  const std::string step = ctx.EmitTemp("Add", {m, ctx.Int64s({1})});
  const std::string pos = ctx.EmitTemp("Add", {ctx.EmitTemp("Mul", {i, step}), start});
  onnx::NodeProto* g = nullptr;
  *out = ctx.EmitTemp("Gather", {flat, pos}, &g);
  SetAttr(g, "axis", int64_t{rank - 2});
  return Status::Ok();
}

}  // namespace

// diagonal(input, offset, axis1, axis2) (np.diagonal; torch.diagonal's dim1/dim2 are renamed).
Status LowerDiagonal(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  std::string diag;
  IVY_RETURN_IF_ERROR(EmitDiagonal(ctx, call, x, "axis1", "axis2", &diag));
  ctx.Emit("Identity", {diag}, {ctx.Out(result)});
  return Status::Ok();
}

// trace(input, offset, axis1, axis2): the diagonal's sum, in the result's dtype (np.trace and
// torch.trace sum integers as int64).
Status LowerTrace(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (node.op.rfind("torch.", 0) == 0 && ctx.Rank(x) != 2) return Status::Unsupported("torch.trace of a tensor that is not 2-D");
  std::string diag;
  IVY_RETURN_IF_ERROR(EmitDiagonal(ctx, call, x, "axis1", "axis2", &diag));
  const v1::DType d = ctx.DType(result);
  if (d != v1::FLOAT32 && d != v1::FLOAT64 && d != v1::INT32 && d != v1::INT64) {
    return Status::Unsupported(std::string("trace in ") + DTypeName(d));
  }
  auto* r = ctx.Emit("ReduceSum", {ctx.CastTo(diag, ctx.DType(x), d), ctx.Int64s({-1})}, {ctx.Out(result)});
  SetAttr(r, "keepdims", int64_t{0});
  return Status::Ok();
}

}  // namespace onnx_export
}  // namespace ivytrace
