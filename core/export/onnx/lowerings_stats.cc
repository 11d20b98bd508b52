// Lowerings of torch's order statistics and related ops whose canonical op NumPy shares: median /
// nanmedian / kthvalue (values and indices), quantile / nanquantile (every interpolation), mode,
// searchsorted (torch's form), cov / corrcoef (torch's form) and unique / unique_consecutive.
// The order statistics sort with ONNX TopK (ascending, sorted), which puts NaN after every number
// and keeps equal values in index order, as torch's sort does; a position per slice then picks
// the value and its index with GatherElements.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/export/onnx/lowerings.h"
#include "core/ir/arg.h"

namespace ivytrace {
namespace onnx_export {

namespace {

std::string I64(LoweringContext& ctx, int64_t v) { return ctx.Scalar(Number::Int(v), v1::INT64); }

// Reduce `op` over one axis (keepdims), with axes as an input for ReduceSum and an attribute for
// the others (opset 17).
std::string ReduceAxis(LoweringContext& ctx, const char* op, const std::string& v, int64_t axis, bool keep) {
  onnx::NodeProto* n = nullptr;
  std::string r;
  if (std::string_view(op) == "ReduceSum") {
    r = ctx.EmitTemp(op, {v, ctx.Int64s({axis})}, &n);
  } else {
    r = ctx.EmitTemp(op, {v}, &n);
    SetAttr(n, "axes", std::vector<int64_t>{axis});
  }
  SetAttr(n, "keepdims", int64_t{keep ? 1 : 0});
  return r;
}

// The run-time size of `v` along `axis`, as a 1-element int64 ([1]).
std::string SizeAlong(LoweringContext& ctx, const std::string& v, int64_t axis) {
  onnx::NodeProto* g = nullptr;
  const std::string s = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {v}), ctx.Int64s({axis})}, &g);
  SetAttr(g, "axis", int64_t{0});
  return s;
}

// An input prepared for an order statistic over one axis: `in` (flattened to 1-D when dim is
// None), the axis, and the ascending sort of it (values, indices).
struct Sorted {
  std::string in, values, indices;
  int64_t axis = 0;
  int rank = 0;  // of `in`
  bool flat = false;
};

Status SortAlong(LoweringContext& ctx, ValueId x, const v1::Arg* dim, Sorted* s) {
  s->in = ctx.In(x);
  s->rank = ctx.Rank(x);
  if (!dim || IsNone(*dim)) {
    s->flat = true;
    s->in = ctx.EmitTemp("Reshape", {s->in, ctx.Int64s({-1})});
    s->rank = 1;
    s->axis = 0;
  } else {
    auto d = AsInt(*dim);
    if (!d) return Status::Unsupported("dim " + ArgToString(*dim, true) + " is not an int");
    if (s->rank == 0) {  // torch treats a 0-d tensor as one item along dim 0 / -1
      if (*d != 0 && *d != -1) return Status::Unsupported("dim out of range of a 0-d tensor");
      s->in = ctx.Unsqueeze(s->in, {0});
      s->rank = 1;
      s->axis = 0;
      s->flat = true;  // the result is 0-d again
    } else {
      IVY_RETURN_IF_ERROR(NormalizeAxis(*d, s->rank, &s->axis));
    }
  }
  s->values = ctx.Temp("sorted");
  s->indices = ctx.Temp("order");
  auto* n = ctx.Emit("TopK", {s->in, SizeAlong(ctx, s->in, s->axis)}, {s->values, s->indices});
  SetAttr(n, "axis", s->axis);
  SetAttr(n, "largest", int64_t{0});
  SetAttr(n, "sorted", int64_t{1});
  return Status::Ok();
}

// The non-NaN count of each slice (int64, keepdims) and the slice length ([1]).
std::string CountNotNan(LoweringContext& ctx, const Sorted& s, v1::DType d) {
  if (!IsFloating(d)) return ReduceAxis(ctx, "ReduceSum", ctx.CastTo(ctx.EmitTemp("Equal", {s.in, s.in}), v1::BOOL, v1::INT64), s.axis, true);
  return ReduceAxis(ctx, "ReduceSum", ctx.CastTo(ctx.EmitTemp("Not", {ctx.EmitTemp("IsNaN", {s.in})}), v1::BOOL, v1::INT64),
                    s.axis, true);
}

// Defines `out` as GatherElements(src, pos, axis), squeezed unless keepdim.
void PickInto(LoweringContext& ctx, const Sorted& s, const std::string& src, const std::string& pos, bool keepdim,
              v1::DType from, v1::DType to, const std::string& out) {
  onnx::NodeProto* g = nullptr;
  std::string v = ctx.EmitTemp("GatherElements", {src, pos}, &g);
  SetAttr(g, "axis", s.axis);
  v = ctx.CastTo(v, from, to);
  if (s.flat) {
    ctx.Emit("Reshape", {v, ctx.Int64s({})}, {out});
  } else if (!keepdim) {
    ctx.Emit("Squeeze", {v, ctx.Int64s({s.axis})}, {out});
  } else {
    ctx.Emit("Identity", {v}, {out});
  }
}

// torch.median(input) / median(input, dim, keepdim), torch.nanmedian, torch.kthvalue(input, k,
// dim, keepdim): the value at a position of the ascending sort, and (with a dim) its index.
// median: position (n - 1) / 2 (the lower median), or the first NaN's (NaN) when the slice holds
// one; nanmedian: (m - 1) / 2 of the m non-NaN values (0 when all are NaN: NaN and index 0);
// kthvalue: k - 1. Among equal values torch leaves which index it returns unspecified; this
// returns the first occurrence's.
Status LowerTorchOrderStat(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  const std::string& c = ctx.canonical();
  const std::vector<ValueId> results = ResultTensors(node);
  const v1::DType d = ctx.DType(x);
  if (d == v1::BOOL || d == v1::DTYPE_UNSPECIFIED) return Status::Unsupported(c + " of a " + DTypeName(d) + " tensor");
  const v1::Arg* dim = nullptr;
  bool keepdim = false;
  int64_t k = 0;
  v1::Arg minus_one;
  minus_one.set_i(-1);
  if (c == "median" && call.Has("args")) {
    // torch.median(input) or median(input, dim[, keepdim]): the overloads bind positionally.
    const v1::Arg* args = call.Get("args");
    auto items = SequenceItems(*args);
    if (!items || items->size() > 2) return Status::Unsupported("median with arguments " + ArgToString(*args, true));
    if (!items->empty()) dim = (*items)[0];
    if (items->size() == 2) {
      auto b = AsBool(*(*items)[1]);
      if (!b) return Status::Unsupported("median keepdim is not a bool");
      keepdim = *b;
    }
  } else {
    dim = call.Get("dim");
    keepdim = call.Bool("keepdim").value_or(false);
    if (c == "kthvalue") {
      auto kk = call.Int("k");
      if (!kk) return Status::Unsupported("kthvalue k is not an int");
      k = *kk;
      if (!dim || IsNone(*dim)) dim = &minus_one;  // kthvalue's dim defaults to -1
    }
  }
  const bool with_dim = dim && !IsNone(*dim);
  if (results.size() != (with_dim ? 2u : 1u)) return Status::Unsupported(c + " with an unexpected result");
  Sorted s;
  IVY_RETURN_IF_ERROR(SortAlong(ctx, x, dim, &s));
  if (c == "kthvalue") {
    const int64_t n = ctx.Rank(x) == 0 ? 1 : ctx.Shape(x)[s.axis];
    if (k < 1 || (n >= 0 && k > n)) return Status::Unsupported("kthvalue k out of range");
  }
  const std::string n = SizeAlong(ctx, s.in, s.axis);
  std::string pos;
  if (c == "kthvalue") {
    pos = I64(ctx, k - 1);
  } else if (c == "nanmedian") {
    const std::string m = CountNotNan(ctx, s, d);
    pos = ctx.EmitTemp("Div", {ctx.EmitTemp("Max", {ctx.EmitTemp("Sub", {m, I64(ctx, 1)}), I64(ctx, 0)}), I64(ctx, 2)});
  } else if (c == "median") {
    const std::string mid = ctx.EmitTemp("Div", {ctx.EmitTemp("Sub", {n, I64(ctx, 1)}), I64(ctx, 2)});
    if (IsFloating(d)) {
      const std::string m = CountNotNan(ctx, s, d);
      pos = ctx.EmitTemp("Where", {ctx.EmitTemp("Less", {m, n}), m, mid});
    } else {
      pos = mid;
    }
  } else {
    return Status::Unsupported("'torch order statistic' lowering does not know canonical op '" + c + "'");
  }
  // pos as the keepdims shape of a reduction over the axis.
  const std::string shape = ctx.EmitTemp("Shape", {s.in});
  const std::string kshape = ctx.EmitTemp("ScatterElements", {shape, ctx.Int64s({s.axis}), ctx.Int64s({1})});
  pos = ctx.EmitTemp("Expand", {pos, kshape});
  PickInto(ctx, s, s.values, pos, keepdim, d, ctx.DType(results[0]), ctx.Out(results[0]));
  if (with_dim) PickInto(ctx, s, s.indices, pos, keepdim, v1::INT64, ctx.DType(results[1]), ctx.Out(results[1]));
  return Status::Ok();
}

// torch.quantile / nanquantile(input, q, dim, keepdim, interpolation), q one number (a Python
// float or a 0-d tensor) or a 1-D tensor (its dim first in the result). ATen's steps: sort
// (NaN last); rank = q * (n - 1), n the slice length (quantile: the last index where the slice
// holds a NaN, so the result is NaN) or its non-NaN count (nanquantile: rank 0 when negative);
// lower / higher / nearest take floor / ceil / round-half-even of rank; linear and midpoint lerp
// the values at floor and ceil with weight rank - floor or 0.5 (torch.lerp's two formulas).
Status LowerTorchQuantile(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const std::string& c = ctx.canonical();
  const bool nan = c == "nanquantile";
  const v1::DType d = ctx.DType(x);
  if (d != v1::FLOAT32 && d != v1::FLOAT64) return Status::Unsupported(c + " of a " + DTypeName(d) + " tensor");
  std::string mode = "linear";
  if (const v1::Arg* m = call.Get("interpolation"); m && m->kind_case() == v1::Arg::kS) mode = m->s();
  if (mode != "linear" && mode != "lower" && mode != "higher" && mode != "nearest" && mode != "midpoint") {
    return Status::Unsupported(c + " with interpolation '" + mode + "'");
  }
  const bool keepdim = call.Bool("keepdim").value_or(false);
  const v1::Arg* qa = call.Get("q");
  if (!qa) return Status::Unsupported(c + " without q");
  std::string q;       // in d, shape [] or [Q]
  bool q_vector = false;
  if (qa->kind_case() == v1::Arg::kTensor) {
    const ValueId qv = qa->tensor().value();
    if (ctx.Rank(qv) > 1) return Status::Unsupported(c + " with a q of rank > 1");
    q_vector = ctx.Rank(qv) == 1;
    q = ctx.CastTo(ctx.In(qv), ctx.DType(qv), d);
  } else if (auto v = AsDouble(*qa)) {
    if (*v < 0 || *v > 1) return Status::Unsupported(c + " with q outside [0, 1] (torch refuses it)");
    q = ctx.Scalar(Number::Float(*v), d);
  } else {
    return Status::Unsupported(c + " with q " + ArgToString(*qa, true));
  }
  Sorted s;
  IVY_RETURN_IF_ERROR(SortAlong(ctx, x, call.Get("dim"), &s));
  if (ctx.Rank(x) == 0 && !s.flat) return Status::Unsupported(c + " of a 0-d tensor");
  const std::string n = SizeAlong(ctx, s.in, s.axis);                  // [1] int64
  const std::string m = CountNotNan(ctx, s, d);                        // keepdims, int64
  std::string qb = q;  // q broadcast against the keepdims shape: [Q, 1, ..., 1] for a vector
  if (q_vector) {
    std::vector<int64_t> shape(static_cast<size_t>(s.rank) + 1, 1);
    shape[0] = -1;
    qb = ctx.EmitTemp("Reshape", {q, ctx.Int64s(shape)});
  }
  std::string rank;
  if (nan) {
    rank = ctx.EmitTemp("Mul", {qb, ctx.CastTo(ctx.EmitTemp("Sub", {m, I64(ctx, 1)}), v1::INT64, d)});
    rank = ctx.EmitTemp("Where", {ctx.EmitTemp("Less", {rank, ctx.Scalar(Number::Float(0), d)}), ctx.Scalar(Number::Float(0), d), rank});
  } else {
    const std::string last = ctx.CastTo(ctx.EmitTemp("Sub", {n, I64(ctx, 1)}), v1::INT64, d);
    rank = ctx.EmitTemp("Mul", {qb, last});
    const std::string has_nan = ctx.EmitTemp("Less", {m, n});
    rank = ctx.EmitTemp("Where", {has_nan, last, rank});
  }
  if (mode == "lower") rank = ctx.EmitTemp("Floor", {rank});
  else if (mode == "higher") rank = ctx.EmitTemp("Ceil", {rank});
  else if (mode == "nearest") rank = ctx.EmitTemp("Round", {rank});
  // The rank has the keepdims shape (or [Q, keepdims]): expand it to that exactly.
  const std::string shape = ctx.EmitTemp("Shape", {s.in});
  std::string kshape = ctx.EmitTemp("ScatterElements", {shape, ctx.Int64s({s.axis}), ctx.Int64s({1})});
  std::string src = s.values;
  int64_t axis = s.axis;
  if (q_vector) {
    const std::string qn = SizeAlong(ctx, q, 0);
    onnx::NodeProto* cn = nullptr;
    kshape = ctx.EmitTemp("Concat", {qn, kshape}, &cn);
    SetAttr(cn, "axis", int64_t{0});
    // the sorted values repeated for each q: [Q, ...]
    onnx::NodeProto* cs = nullptr;
    const std::string rep = ctx.EmitTemp("Concat", {qn, ctx.Int64s(std::vector<int64_t>(s.rank, 1))}, &cs);
    SetAttr(cs, "axis", int64_t{0});
    src = ctx.EmitTemp("Expand", {ctx.Unsqueeze(s.values, {0}), rep});
    axis += 1;
  }
  rank = ctx.EmitTemp("Expand", {rank, kshape});
  auto gather = [&](const std::string& pos_f) {
    onnx::NodeProto* g = nullptr;
    const std::string r = ctx.EmitTemp("GatherElements", {src, ctx.CastTo(pos_f, d, v1::INT64)}, &g);
    SetAttr(g, "axis", axis);
    return r;
  };
  std::string out;
  if (mode == "lower" || mode == "higher" || mode == "nearest") {
    out = gather(rank);
  } else {
    const std::string below_f = ctx.EmitTemp("Floor", {rank});
    const std::string a = gather(below_f), b = gather(ctx.EmitTemp("Ceil", {rank}));
    const std::string w = mode == "midpoint" ? ctx.Scalar(Number::Float(0.5), d) : ctx.EmitTemp("Sub", {rank, below_f});
    // torch.lerp: w < 0.5 ? a + w * (b - a) : b - (b - a) * (1 - w)
    const std::string diff = ctx.EmitTemp("Sub", {b, a});
    const std::string lo = ctx.EmitTemp("Add", {a, ctx.EmitTemp("Mul", {w, diff})});
    const std::string hi = ctx.EmitTemp("Sub", {b, ctx.EmitTemp("Mul", {diff, ctx.EmitTemp("Sub", {ctx.Scalar(Number::Float(1), d), w})})});
    out = ctx.EmitTemp("Where", {ctx.EmitTemp("Less", {w, ctx.Scalar(Number::Float(0.5), d)}), lo, hi});
  }
  // The result: [Q,] then the input's dims with the axis squeezed (kept as 1 with keepdim; every
  // dim kept as 1 when dim is None and keepdim).
  const int in_rank = ctx.Rank(x);
  if (s.flat) {
    std::vector<int64_t> shape_out;
    if (q_vector) shape_out.push_back(-1);
    if (keepdim) for (int i = 0; i < in_rank; ++i) shape_out.push_back(1);
    out = ctx.EmitTemp("Reshape", {out, ctx.Int64s(shape_out)});
  } else if (!keepdim) {
    out = ctx.Squeeze(out, {axis});
  }
  ctx.Emit("Identity", {ctx.CastTo(out, d, ctx.DType(result))}, {ctx.Out(result)});
  return Status::Ok();
}

// torch.mode(input, dim=-1, keepdim): the smallest of the most frequent values of each slice and
// the index of its last occurrence (ATen's CPU kernel walks the sorted slice and keeps the last
// index of the first longest run; its sort is unstable beyond 16 items, where the index among
// equal values is unspecified). Frequencies by an n x n equality count. NaN equals nothing.
Status LowerMode(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  const std::vector<ValueId> results = ResultTensors(node);
  if (results.size() != 2) return Status::Unsupported("mode without (values, indices)");
  auto dim = call.Int("dim");
  if (!dim) return Status::Unsupported("mode dim is not an int");
  const bool keepdim = call.Bool("keepdim").value_or(false);
  const v1::DType d0 = ctx.DType(x);
  if (d0 == v1::DTYPE_UNSPECIFIED) return Status::Unsupported("mode of an unknown dtype");
  const v1::DType d = d0 == v1::BOOL ? v1::INT32 : d0;
  std::string in = ctx.CastTo(ctx.In(x), d0, d);
  int r = ctx.Rank(x);
  bool scalar = false;
  if (r == 0) {
    if (*dim != 0 && *dim != -1) return Status::Unsupported("mode dim out of range of a 0-d tensor");
    in = ctx.Unsqueeze(in, {0});
    r = 1;
    scalar = true;
  }
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, r, &axis));
  const std::string eq = ctx.EmitTemp("Equal", {ctx.Unsqueeze(in, {axis + 1}), ctx.Unsqueeze(in, {axis})});
  const std::string counts = ReduceAxis(ctx, "ReduceSum", ctx.CastTo(eq, v1::BOOL, v1::INT64), axis + 1, false);
  const std::string top = ReduceAxis(ctx, "ReduceMax", counts, axis, true);
  const std::string cand = ctx.EmitTemp("Equal", {counts, top});
  Number big = IsFloating(d) ? Number::Float(std::numeric_limits<double>::infinity())
                             : Number::Int(d == v1::INT32 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max());
  if (!IsFloating(d) && d != v1::INT32 && d != v1::INT64) return Status::Unsupported(std::string("mode of a ") + DTypeName(d0) + " tensor");
  std::string value = ReduceAxis(ctx, "ReduceMin", ctx.EmitTemp("Where", {cand, in, ctx.Scalar(big, d)}), axis, true);
  // The last index where the slice equals the value: Range along the axis, shaped to broadcast.
  const std::string n = SizeAlong(ctx, in, axis);
  std::string iota = ctx.EmitTemp("Range", {I64(ctx, 0), ctx.Squeeze(n, {0}), I64(ctx, 1)});
  std::vector<int64_t> ishape(static_cast<size_t>(r - axis), 1);
  ishape[0] = -1;
  iota = ctx.EmitTemp("Reshape", {iota, ctx.Int64s(ishape)});
  const std::string at = ctx.EmitTemp("Where", {ctx.EmitTemp("Equal", {in, value}), iota, I64(ctx, -1)});
  std::string index = ReduceAxis(ctx, "ReduceMax", at, axis, true);
  // A slice of NaN only: no item equals the (NaN) value; index 0 then.
  index = ctx.EmitTemp("Max", {index, I64(ctx, 0)});
  auto finish = [&](std::string v, v1::DType from, ValueId res) {
    v = ctx.CastTo(v, from, ctx.DType(res));
    if (scalar) ctx.Emit("Reshape", {v, ctx.Int64s({})}, {ctx.Out(res)});
    else if (!keepdim) ctx.Emit("Squeeze", {v, ctx.Int64s({axis})}, {ctx.Out(res)});
    else ctx.Emit("Identity", {v}, {ctx.Out(res)});
  };
  finish(value, d, results[0]);
  finish(index, v1::INT64, results[1]);
  return Status::Ok();
}

// torch.searchsorted(sorted_sequence, input, out_int32, right, side, sorter): for each value, the
// count of the sequence's items before it: left, items that are not >= it; right, not > it (the
// predicates of ATen's binary search, so a NaN value goes after every item). A 1-D sequence
// serves every value; an N-D one has a last dim to search per leading index of `input`. sorter
// reorders the sequence first.
Status LowerTorchSearchsorted(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId seq, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "sorted_sequence", &seq));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  bool right = call.Bool("right").value_or(false);
  if (const v1::Arg* sd = call.Get("side"); sd && !IsNone(*sd)) {
    if (sd->kind_case() != v1::Arg::kS || (sd->s() != "left" && sd->s() != "right")) {
      return Status::Unsupported("searchsorted side " + ArgToString(*sd, true));
    }
    right = sd->s() == "right";
  }
  call.Get("out_int32");  // the result's dtype says it
  const v1::Arg* va = call.Get("input");
  if (!va) return Status::Unsupported("searchsorted without input");
  const v1::DType sd = ctx.DType(seq);
  if (sd == v1::BOOL) return Status::Unsupported("searchsorted of bools");
  v1::DType d = sd;
  if (va->kind_case() == v1::Arg::kTensor) d = PromotedDType(ctx, {call.Get("sorted_sequence"), va});
  else if (va->kind_case() == v1::Arg::kF && !IsFloating(d)) d = v1::FLOAT32;
  std::string v;
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *va, d, &v));
  std::string s = ctx.CastTo(ctx.In(seq), sd, d);
  if (!call.IsNone("sorter")) {
    ValueId so;
    IVY_RETURN_IF_ERROR(TensorParam(call, "sorter", &so));
    onnx::NodeProto* g = nullptr;
    s = ctx.EmitTemp("GatherElements", {s, ctx.CastTo(ctx.In(so), ctx.DType(so), v1::INT64)}, &g);
    SetAttr(g, "axis", int64_t{-1});
  }
  const int vr = va->kind_case() == v1::Arg::kTensor ? ctx.Rank(va->tensor().value()) : 0;
  const int sr = ctx.Rank(seq);
  if (sr == 0) return Status::Unsupported("searchsorted in a 0-d sequence");
  std::string sb;
  if (sr == 1) {
    std::vector<int64_t> shape(static_cast<size_t>(vr), 1);
    shape.push_back(-1);
    sb = ctx.EmitTemp("Reshape", {s, ctx.Int64s(shape)});
  } else {
    if (vr != sr) return Status::Unsupported("searchsorted with an N-D sequence and input of another rank");
    sb = ctx.Unsqueeze(s, {sr - 1});  // [..., 1, n] against [..., m, 1]
  }
  const std::string vb = ctx.Unsqueeze(v, {vr});
  const std::string before = ctx.EmitTemp("Not", {ctx.EmitTemp(right ? "Greater" : "GreaterOrEqual", {sb, vb})});
  const std::string count = ReduceAxis(ctx, "ReduceSum", ctx.CastTo(before, v1::BOOL, v1::INT64), vr, false);
  ctx.Emit("Identity", {ctx.CastTo(count, v1::INT64, ctx.DType(result))}, {ctx.Out(result)});
  return Status::Ok();
}

// torch.cov(input, correction, fweights, aweights) and torch.corrcoef(input), with the weights
// as ATen computes them: w = fweights * aweights, avg = sum(x * w) / sum(w), norm = sum(w) -
// correction (* sum(w * aweights) / sum(w) with aweights), clamped at 0; (x - avg) @ ((x - avg) *
// w).T / norm, squeezed. corrcoef divides by the standard deviations and clips to [-1, 1].
Status LowerTorchCov(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const std::string& c = ctx.canonical();
  const v1::DType d = ctx.DType(result);
  if (d != v1::FLOAT32 && d != v1::FLOAT64) return Status::Unsupported(c + " in " + DTypeName(d));
  const int r = ctx.Rank(x);
  if (r < 1 || r > 2) return Status::Unsupported(c + " of a tensor that is not 1-D or 2-D");
  std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  if (r == 1) in = ctx.Unsqueeze(in, {0});
  double correction = 1.0;
  if (c == "cov") {
    const v1::Arg* ca = call.Get("correction");
    auto cv = ca ? AsDouble(*ca) : std::optional<double>(1.0);
    if (!cv) return Status::Unsupported("cov correction is not a number");
    correction = *cv;
  }
  std::string w, aw;
  for (const char* p : {"fweights", "aweights"}) {
    if (!call.Has(p) || call.IsNone(p)) continue;
    ValueId t;
    IVY_RETURN_IF_ERROR(TensorParam(call, p, &t));
    if (ctx.Rank(t) != 1) return Status::Unsupported(std::string("cov with ") + p + " that is not 1-D");
    const std::string tv = ctx.CastTo(ctx.In(t), ctx.DType(t), d);
    if (std::string_view(p) == "aweights") aw = tv;
    w = w.empty() ? tv : ctx.EmitTemp("Mul", {w, tv});
  }
  std::string avg, wsum;
  if (w.empty()) {
    avg = ReduceAxis(ctx, "ReduceMean", in, 1, true);
    wsum = ctx.CastTo(SizeAlong(ctx, in, 1), v1::INT64, d);
  } else {
    wsum = ReduceAxis(ctx, "ReduceSum", w, 0, true);  // [1]
    avg = ctx.EmitTemp("Div", {ReduceAxis(ctx, "ReduceSum", ctx.EmitTemp("Mul", {in, w}), 1, true), wsum});
  }
  std::string norm;
  if (w.empty() || correction == 0.0 || aw.empty()) {
    norm = correction == 0.0 ? wsum : ctx.EmitTemp("Sub", {wsum, ctx.Scalar(Number::Float(correction), d)});
  } else {
    const std::string wa = ReduceAxis(ctx, "ReduceSum", ctx.EmitTemp("Mul", {w, aw}), 0, true);
    norm = ctx.EmitTemp("Sub", {wsum, ctx.EmitTemp("Div", {ctx.EmitTemp("Mul", {ctx.Scalar(Number::Float(correction), d), wa}), wsum})});
  }
  norm = ctx.EmitTemp("Max", {norm, ctx.Scalar(Number::Float(0), d)});
  const std::string xc = ctx.EmitTemp("Sub", {in, avg});
  onnx::NodeProto* t = nullptr;
  const std::string xt = ctx.EmitTemp("Transpose", {w.empty() ? xc : ctx.EmitTemp("Mul", {xc, w})}, &t);
  SetAttr(t, "perm", std::vector<int64_t>{1, 0});
  std::string cv = ctx.EmitTemp("Div", {ctx.EmitTemp("MatMul", {xc, xt}), norm});
  if (c == "corrcoef") {
    if (ctx.Rank(result) == 0) {
      cv = ctx.EmitTemp("Div", {cv, cv});
    } else {
      const std::string k = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {cv}), I64(ctx, 0)});
      const std::string idx = ctx.EmitTemp("Mul", {ctx.EmitTemp("Range", {I64(ctx, 0), k, I64(ctx, 1)}), ctx.EmitTemp("Add", {k, I64(ctx, 1)})});
      const std::string sd = ctx.EmitTemp("Sqrt", {ctx.EmitTemp("Gather", {ctx.EmitTemp("Reshape", {cv, ctx.Int64s({-1})}), idx})});
      cv = ctx.EmitTemp("Div", {ctx.EmitTemp("Div", {cv, ctx.Unsqueeze(sd, {1})}), ctx.Unsqueeze(sd, {0})});
      const std::string one = ctx.Scalar(Number::Float(1), d), mone = ctx.Scalar(Number::Float(-1), d);
      cv = ctx.EmitTemp("Where", {ctx.EmitTemp("Greater", {cv, one}), one, cv});  // clip keeps NaN
      cv = ctx.EmitTemp("Where", {ctx.EmitTemp("Less", {cv, mone}), mone, cv});
    }
  }
  if (ctx.Rank(result) == 0) cv = ctx.EmitTemp("Reshape", {cv, ctx.Int64s({})});
  else if (ctx.Rank(result) != 2) return Status::Unsupported(c + " with a result of rank " + std::to_string(ctx.Rank(result)));
  ctx.Emit("Identity", {cv}, {ctx.Out(result)});
  return Status::Ok();
}

}  // namespace

Status LowerMedianByFramework(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  return FromTorch(node) ? LowerTorchOrderStat(node, call, ctx) : LowerMedian(node, call, ctx);
}

Status LowerNanQuantileByFramework(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  if (!FromTorch(node)) return LowerNanQuantile(node, call, ctx);
  return ctx.canonical() == "nanmedian" ? LowerTorchOrderStat(node, call, ctx) : LowerTorchQuantile(node, call, ctx);
}

Status LowerQuantileByFramework(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  return FromTorch(node) ? LowerTorchQuantile(node, call, ctx) : LowerQuantile(node, call, ctx);
}

Status LowerKthvalue(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  return LowerTorchOrderStat(node, call, ctx);
}

Status LowerModeStat(const Node& node, const BoundCall& call, LoweringContext& ctx) { return LowerMode(node, call, ctx); }

Status LowerSearchsortedByFramework(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  return FromTorch(node) ? LowerTorchSearchsorted(node, call, ctx) : LowerSearchsorted(node, call, ctx);
}

Status LowerCovByFramework(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  return FromTorch(node) ? LowerTorchCov(node, call, ctx) : LowerCov(node, call, ctx);
}

namespace {

// Unique of the flattened input with every NaN its own value, as torch.unique and NumPy's
// unique_all / unique_inverse (equal_nan=False) give it: the non-NaN values through ONNX Unique
// (sorted), then the NaNs in input order. values; first-occurrence indices; inverse (the input's
// shape); counts.
struct UniqueParts {
  std::string values, indices, inverse, counts;
};

UniqueParts EmitUnique(LoweringContext& ctx, ValueId x, v1::DType d, v1::DType work) {
  UniqueParts u;
  const std::string flat = ctx.EmitTemp("Reshape", {ctx.CastTo(ctx.In(x), ctx.DType(x), work), ctx.Int64s({-1})});
  const std::string n = SizeAlong(ctx, flat, 0);
  const std::string pos = ctx.EmitTemp("Range", {I64(ctx, 0), ctx.Squeeze(n, {0}), I64(ctx, 1)});
  std::string nan = IsFloating(work) ? ctx.EmitTemp("IsNaN", {flat}) : ctx.EmitTemp("Not", {ctx.EmitTemp("Equal", {flat, flat})});
  const std::string keep = ctx.EmitTemp("Not", {nan});
  auto compress = [&](const std::string& v, const std::string& m) {
    onnx::NodeProto* c = nullptr;
    const std::string r = ctx.EmitTemp("Compress", {v, m}, &c);
    SetAttr(c, "axis", int64_t{0});
    return r;
  };
  const std::string finite = compress(flat, keep), finite_pos = compress(pos, keep);
  const std::string nans = compress(flat, nan), nan_pos = compress(pos, nan);
  const std::string uy = ctx.Temp("uniq"), ui = ctx.Temp("uniq_first"), uinv = ctx.Temp("uniq_inv"), uc = ctx.Temp("uniq_counts");
  auto* un = ctx.Emit("Unique", {finite}, {uy, ui, uinv, uc});
  SetAttr(un, "sorted", int64_t{1});
  auto cat = [&](const std::string& a, const std::string& b) {
    onnx::NodeProto* c = nullptr;
    const std::string r = ctx.EmitTemp("Concat", {a, b}, &c);
    SetAttr(c, "axis", int64_t{0});
    return r;
  };
  u.values = ctx.CastTo(cat(uy, nans), work, d);
  // first occurrences: Unique's indices are into the non-NaN values
  u.indices = cat(ctx.EmitTemp("Gather", {finite_pos, ui}), nan_pos);
  const std::string ones = ctx.EmitTemp("Expand", {I64(ctx, 1), SizeAlong(ctx, nans, 0)});
  u.counts = cat(uc, ones);
  // inverse: Unique's for the non-NaN items, k + (the NaN's rank) for the NaNs (k = Unique's count)
  const std::string k = SizeAlong(ctx, uy, 0);
  const std::string nan_rank = ctx.EmitTemp("Sub", {ctx.EmitTemp("CumSum", {ctx.CastTo(nan, v1::BOOL, v1::INT64), I64(ctx, 0)}), I64(ctx, 1)});
  std::string inv = ctx.EmitTemp("Add", {nan_rank, k});
  inv = ctx.EmitTemp("ScatterElements", {inv, finite_pos, uinv});
  u.inverse = ctx.EmitTemp("Reshape", {inv, ctx.EmitTemp("Shape", {ctx.In(x)})});
  return u;
}

Status UniqueWork(LoweringContext& ctx, ValueId x, const std::string& what, v1::DType* work) {
  const v1::DType d = ctx.DType(x);
  if (d == v1::FLOAT32 || d == v1::FLOAT64 || d == v1::INT64) *work = d;
  else if (d == v1::INT32 || d == v1::INT16 || d == v1::INT8 || d == v1::UINT8 || d == v1::BOOL) *work = v1::INT64;
  else return Status::Unsupported(what + " of a " + DTypeName(d) + " tensor (onnxruntime's Unique has no kernel for it)");
  return Status::Ok();
}

// torch.unique(input, sorted, return_inverse, return_counts, dim=None).
Status LowerTorchUnique(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  if (!call.IsNone("dim")) return Status::Unsupported("torch.unique along a dim");
  // CPU torch.unique sorts even with sorted=False.
  call.Get("sorted");
  const bool inverse = call.Bool("return_inverse").value_or(false), counts = call.Bool("return_counts").value_or(false);
  const std::vector<ValueId> results = ResultTensors(node);
  if (results.size() != 1u + inverse + counts) return Status::Unsupported("torch.unique with an unexpected result");
  v1::DType work;
  IVY_RETURN_IF_ERROR(UniqueWork(ctx, x, "torch.unique", &work));
  const UniqueParts u = EmitUnique(ctx, x, ctx.DType(results[0]), work);
  size_t i = 0;
  ctx.Emit("Identity", {u.values}, {ctx.Out(results[i++])});
  if (inverse) ctx.Emit("Identity", {ctx.CastTo(u.inverse, v1::INT64, ctx.DType(results[i]))}, {ctx.Out(results[i])}), ++i;
  if (counts) ctx.Emit("Identity", {ctx.CastTo(u.counts, v1::INT64, ctx.DType(results[i]))}, {ctx.Out(results[i])}), ++i;
  return Status::Ok();
}

}  // namespace

// np.unique_inverse(x) -> (values, inverse_indices); np.unique_all(x) -> (values, indices,
// inverse_indices, counts), NaNs distinct (NumPy's equal_nan=False for these).
Status LowerUniqueAll(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x;
  IVY_RETURN_IF_ERROR(TensorParam(call, "x", &x));
  const std::string& c = ctx.canonical();
  const std::vector<ValueId> results = ResultTensors(node);
  const bool all = c == "unique_all";
  if (results.size() != (all ? 4u : 2u)) return Status::Unsupported(c + " with an unexpected result");
  v1::DType work;
  IVY_RETURN_IF_ERROR(UniqueWork(ctx, x, c, &work));
  const UniqueParts u = EmitUnique(ctx, x, ctx.DType(results[0]), work);
  std::vector<std::string> parts = all ? std::vector<std::string>{u.values, u.indices, u.inverse, u.counts}
                                       : std::vector<std::string>{u.values, u.inverse};
  for (size_t i = 0; i < results.size(); ++i) {
    ctx.Emit("Identity", {i == 0 ? parts[i] : ctx.CastTo(parts[i], v1::INT64, ctx.DType(results[i]))}, {ctx.Out(results[i])});
  }
  return Status::Ok();
}

// torch.unique_consecutive(input, return_inverse, return_counts, dim=None): the first item of
// each run of equal items of the flattened input (NaN equals nothing), the run of each item, the
// runs' lengths.
Status LowerUniqueConsecutive(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  if (!call.IsNone("dim")) return Status::Unsupported("unique_consecutive along a dim");
  const bool inverse = call.Bool("return_inverse").value_or(false), counts = call.Bool("return_counts").value_or(false);
  const std::vector<ValueId> results = ResultTensors(node);
  if (results.size() != 1u + inverse + counts) return Status::Unsupported("unique_consecutive with an unexpected result");
  const v1::DType d = ctx.DType(x);
  if (d == v1::DTYPE_UNSPECIFIED) return Status::Unsupported("unique_consecutive of an unknown dtype");
  const std::string flat = ctx.EmitTemp("Reshape", {ctx.In(x), ctx.Int64s({-1})});
  const std::string n = SizeAlong(ctx, flat, 0);
  auto slice = [&](const std::string& v, int64_t b, int64_t e) {
    return ctx.EmitTemp("Slice", {v, ctx.Int64s({b}), ctx.Int64s({e}), ctx.Int64s({0})});
  };
  // new run at i: i == 0 or x[i] != x[i - 1]
  const std::string differs = ctx.EmitTemp("Not", {ctx.EmitTemp("Equal", {slice(flat, 1, INT64_MAX), slice(flat, 0, -1)})});
  onnx::NodeProto* c = nullptr;
  const std::string starts = ctx.EmitTemp("Concat", {ctx.EmitTemp("Expand", {ctx.Scalar(Number::Int(1), v1::BOOL), ctx.EmitTemp("Min", {n, ctx.Int64s({1})})}), differs}, &c);
  SetAttr(c, "axis", int64_t{0});
  onnx::NodeProto* cv = nullptr;
  ctx.Emit("Compress", {flat, starts}, {ctx.Out(results[0])});
  (void)cv;
  size_t i = 1;
  if (inverse) {
    const std::string run = ctx.EmitTemp("Sub", {ctx.EmitTemp("CumSum", {ctx.CastTo(starts, v1::BOOL, v1::INT64), I64(ctx, 0)}), I64(ctx, 1)});
    ctx.Emit("Reshape", {ctx.CastTo(run, v1::INT64, ctx.DType(results[i])), ctx.EmitTemp("Shape", {ctx.In(x)})}, {ctx.Out(results[i])});
    ++i;
  }
  if (counts) {
    const std::string pos = ctx.EmitTemp("Range", {I64(ctx, 0), ctx.Squeeze(n, {0}), I64(ctx, 1)});
    onnx::NodeProto* cp = nullptr;
    const std::string first = ctx.EmitTemp("Compress", {pos, starts}, &cp);
    SetAttr(cp, "axis", int64_t{0});
    onnx::NodeProto* ce = nullptr;
    const std::string ends = ctx.EmitTemp("Concat", {slice(first, 1, INT64_MAX), n}, &ce);
    SetAttr(ce, "axis", int64_t{0});
    ctx.Emit("Identity", {ctx.CastTo(ctx.EmitTemp("Sub", {ends, first}), v1::INT64, ctx.DType(results[i]))}, {ctx.Out(results[i])});
  }
  return Status::Ok();
}

// np.lexsort(keys, axis=-1): the indices that sort by the last key, ties broken by the one
// before, ... : a stable sort by each key in turn from the first, each an ascending TopK of the
// key in the current order (TopK puts equal values in index order and NaN last, as NumPy's
// stable sort does). keys is a list of arrays of one shape or a 2-D+ array (its first dim).
Status LowerLexsort(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* ka = call.Get("keys");
  if (!ka) return Status::Unsupported("lexsort without keys");
  std::vector<std::string> keys;
  std::vector<v1::DType> dtypes;
  int rank = 0;
  if (ka->kind_case() == v1::Arg::kTensor) {
    const ValueId k = ka->tensor().value();
    if (ctx.Rank(k) < 2 || ctx.Shape(k)[0] < 1) return Status::Unsupported("lexsort of a keys array that is not 2-D or more");
    rank = ctx.Rank(k) - 1;
    for (int64_t i = 0; i < ctx.Shape(k)[0]; ++i) {
      keys.push_back(ctx.EmitTemp("Gather", {ctx.In(k), ctx.Scalar(Number::Int(i), v1::INT64)}));
      dtypes.push_back(ctx.DType(k));
    }
  } else if (auto items = SequenceItems(*ka)) {
    for (const v1::Arg* it : *items) {
      if (it->kind_case() != v1::Arg::kTensor) return Status::Unsupported("lexsort of a key that is not an array");
      const ValueId k = it->tensor().value();
      if (!keys.empty() && ctx.Rank(k) != rank) return Status::Unsupported("lexsort of keys of different ranks");
      rank = ctx.Rank(k);
      keys.push_back(ctx.In(k));
      dtypes.push_back(ctx.DType(k));
    }
  } else {
    return Status::Unsupported("lexsort keys " + ArgToString(*ka, true));
  }
  if (keys.empty()) return Status::Unsupported("lexsort of no keys");
  if (rank < 1) return Status::Unsupported("lexsort of 0-d keys");
  auto ax = call.Int("dim");
  if (!ax) return Status::Unsupported("lexsort axis is not an int");
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(*ax, rank, &axis));
  std::string perm;
  for (size_t i = 0; i < keys.size(); ++i) {
    std::string k = keys[i];
    if (dtypes[i] == v1::BOOL) k = ctx.CastTo(k, v1::BOOL, v1::INT32);
    else if (dtypes[i] == v1::DTYPE_UNSPECIFIED) return Status::Unsupported("lexsort of a key of unknown dtype");
    if (!perm.empty()) {
      onnx::NodeProto* g = nullptr;
      k = ctx.EmitTemp("GatherElements", {k, perm}, &g);
      SetAttr(g, "axis", axis);
    }
    const std::string vals = ctx.Temp("lex_sorted"), idx = ctx.Temp("lex_order");
    auto* t = ctx.Emit("TopK", {k, SizeAlong(ctx, k, axis)}, {vals, idx});
    SetAttr(t, "axis", axis);
    SetAttr(t, "largest", int64_t{0});
    SetAttr(t, "sorted", int64_t{1});
    if (perm.empty()) {
      perm = idx;
    } else {
      onnx::NodeProto* g = nullptr;
      perm = ctx.EmitTemp("GatherElements", {perm, idx}, &g);
      SetAttr(g, "axis", axis);
    }
  }
  ctx.Emit("Identity", {ctx.CastTo(perm, v1::INT64, ctx.DType(result))}, {ctx.Out(result)});
  return Status::Ok();
}

Status LowerUniqueByFramework(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  return FromTorch(node) ? LowerTorchUnique(node, call, ctx) : LowerUnique(node, call, ctx);
}

}  // namespace onnx_export
}  // namespace ivytrace
