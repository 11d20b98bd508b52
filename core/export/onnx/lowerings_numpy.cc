// Lowerings of ops NumPy programs use that have no single ONNX op: atan2, roll, take_along_axis,
// ptp, nan_to_num and linspace. Each follows NumPy's own definition (and torch's, where a torch
// op maps onto the same canonical op: roll, atan2) at any input shape: sizes are read when the
// model runs, never taken from the recorded shapes.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/export/onnx/lowerings.h"
#include "core/ir/arg.h"

namespace ivytrace {
namespace onnx_export {

namespace {

std::string F(LoweringContext& ctx, double v, v1::DType d) { return ctx.Scalar(Number::Float(v), d); }

// Dim `axis` of `x`'s run-time shape as a 1-D int64 of one item.
std::string DimOf(LoweringContext& ctx, const std::string& x, int64_t axis) {
  onnx::NodeProto* g = nullptr;
  std::string d = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {x}), ctx.Int64s({axis})}, &g);
  SetAttr(g, "axis", int64_t{0});
  return d;
}

// Where v's sign bit is set (-0.0 and -inf included), for a float v.
std::string SignBit(LoweringContext& ctx, const std::string& v, v1::DType d) {
  const std::string zero = F(ctx, 0.0, d);
  return ctx.EmitTemp("Or", {ctx.EmitTemp("Less", {v, zero}), ctx.EmitTemp("Less", {ctx.EmitTemp("Div", {F(ctx, 1.0, d), v}), zero})});
}

}  // namespace

// atan2(y, x) of float tensors of dtype d, into `out` (or a new name when empty): atan(y / x),
// moved by ±pi (the sign of y) where x's sign bit is set, with IEEE's signed zeros and infinities.
std::string EmitAtan2(LoweringContext& ctx, const std::string& y, const std::string& x, v1::DType d,
                      const std::string& out) {
  const std::string zero = F(ctx, 0.0, d), one = F(ctx, 1.0, d), minus_one = F(ctx, -1.0, d);
  const std::string neg_x = SignBit(ctx, x, d), neg_y = SignBit(ctx, y, d);
  const std::string both_zero =
      ctx.EmitTemp("And", {ctx.EmitTemp("Equal", {x, zero}), ctx.EmitTemp("Equal", {y, zero})});
  const std::string both_inf = ctx.EmitTemp("And", {ctx.EmitTemp("IsInf", {x}), ctx.EmitTemp("IsInf", {y})});
  const std::string x_unit = ctx.EmitTemp("Where", {neg_x, minus_one, one});
  const std::string y_unit = ctx.EmitTemp("Where", {neg_y, minus_one, one});
  const std::string x2 = ctx.EmitTemp("Where", {ctx.EmitTemp("Or", {both_zero, both_inf}), x_unit, x});
  const std::string y2 = ctx.EmitTemp("Where", {both_inf, y_unit, y});
  const std::string t = ctx.EmitTemp("Atan", {ctx.EmitTemp("Div", {y2, x2})});
  const std::string shift = ctx.EmitTemp("Where", {neg_y, F(ctx, -M_PI, d), F(ctx, M_PI, d)});
  // Where, not Add: atan(y / x) + 0 would turn -0 into +0.
  const std::string moved = ctx.EmitTemp("Add", {t, shift});
  if (out.empty()) return ctx.EmitTemp("Where", {neg_x, moved, t});
  ctx.Emit("Where", {neg_x, moved, t}, {out});
  return out;
}

// atan2(y, x) = atan(y / x), moved by ±pi (the sign of y) where x's sign bit is set. y / x is NaN
// where both are zero or both infinite: there x becomes ±1 (its sign kept), and an infinite y
// becomes ±1 too (atan2(±inf, ±inf) = ±pi/4, ±3pi/4; atan2(±0, ±0) = ±0, ±pi as IEEE says).
Status LowerAtan2(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* a = call.Get("input");
  const v1::Arg* b = call.Get("other");
  if (!a || !b) return Status::Unsupported("atan2: missing operand");
  if (!HasTensor(*a) && !HasTensor(*b)) return Status::Unsupported("atan2: neither operand is a tensor");
  const v1::DType d = ctx.DType(result);
  if (d != v1::FLOAT32 && d != v1::FLOAT64) return Status::Unsupported(std::string("atan2 giving ") + DTypeName(d));
  std::string y, x;
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *a, d, &y));
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *b, d, &x));
  EmitAtan2(ctx, y, x, d, ctx.Out(result));
  return Status::Ok();
}

// roll(input, shifts, dims): out[i] = x[(i - s) mod n] along each dim, n read at run time: the
// last s mod n items, then the others. dims None: the flattened input, then its shape again.
// NumPy broadcasts one shift over several axes and adds several shifts of one axis.
Status LowerRoll(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* shifts = call.Get("shifts");
  if (!shifts) return Status::Unsupported("roll without shifts");
  std::vector<const v1::Arg*> s = SequenceItems(*shifts).value_or(std::vector<const v1::Arg*>{shifts});
  const char* dims_param = call.Has("dims") ? "dims" : "dim";
  const bool flat = call.IsNone(dims_param);
  std::vector<int64_t> dims;
  const int rank = ctx.Rank(x);
  if (flat) {
    dims = {0};
  } else {
    auto d = call.IntList(dims_param);
    if (!d) return Status::Unsupported("roll dims are not ints");
    for (int64_t& a : *d) IVY_RETURN_IF_ERROR(NormalizeAxis(a, std::max(rank, 1), &a));
    dims = *d;
  }
  if (s.empty() || dims.empty()) return Status::Unsupported("roll with no shifts or no dims");
  if (s.size() != dims.size()) {
    if (s.size() == 1) s.assign(dims.size(), s[0]);
    else if (dims.size() == 1) dims.assign(s.size(), dims[0]);
    else return Status::Unsupported("roll with " + std::to_string(s.size()) + " shifts for " +
                                    std::to_string(dims.size()) + " dims");
  }
  std::string cur = ctx.In(x);
  if (flat) cur = ctx.EmitTemp("Reshape", {cur, ctx.Int64s({-1})});
  if (rank == 0 && !flat) return Status::Unsupported("roll of a 0-d array along a dim");
  for (size_t k = 0; k < s.size(); ++k) {
    v1::Arg one;
    *one.mutable_list()->add_items() = *s[k];
    std::string shift;
    IVY_RETURN_IF_ERROR(DynamicInts(ctx, one, &shift));
    const std::string ax = ctx.Int64s({dims[k]});
    const std::string n = DimOf(ctx, cur, dims[k]);
    // Python's modulo (Mod fmod=0 takes the divisor's sign); an empty dim is divided by 1.
    onnx::NodeProto* m = nullptr;
    const std::string r = ctx.EmitTemp("Mod", {shift, ctx.EmitTemp("Max", {n, ctx.Int64s({1})})}, &m);
    SetAttr(m, "fmod", int64_t{0});
    const std::string cut = ctx.EmitTemp("Sub", {n, r});
    const std::string tail = ctx.EmitTemp("Slice", {cur, cut, ctx.Int64s({std::numeric_limits<int64_t>::max()}), ax});
    const std::string head = ctx.EmitTemp("Slice", {cur, ctx.Int64s({0}), cut, ax});
    const bool last = k + 1 == s.size() && !flat;
    onnx::NodeProto* c = nullptr;
    if (last) {
      c = ctx.Emit("Concat", {tail, head}, {ctx.Out(result)});
    } else {
      cur = ctx.EmitTemp("Concat", {tail, head}, &c);
    }
    SetAttr(c, "axis", dims[k]);
  }
  if (flat) ctx.Emit("Reshape", {cur, ctx.EmitTemp("Shape", {ctx.In(x)})}, {ctx.Out(result)});
  return Status::Ok();
}

// np.take_along_axis(arr, indices, axis): GatherElements, after broadcasting arr and indices
// against each other on every other axis (NumPy does; GatherElements would instead take the
// indices' size there). axis None: both flattened.
Status LowerTakeAlongAxis(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, index, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "index", &index));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (IsFloating(ctx.DType(index)) || ctx.DType(index) == v1::BOOL) {
    return Status::Unsupported("take_along_axis with indices that are not integers");
  }
  std::string in = ctx.In(x);
  std::string idx = ctx.CastTo(ctx.In(index), ctx.DType(index), v1::INT64);
  int64_t axis = 0;
  const int rank = ctx.Rank(x);
  if (call.IsNone("dim")) {
    if (ctx.Rank(index) != 1) return Status::Unsupported("take_along_axis(axis=None) with indices that are not 1-D");
    in = ctx.EmitTemp("Reshape", {in, ctx.Int64s({-1})});
  } else {
    if (ctx.Rank(index) != rank) return Status::Unsupported("take_along_axis with indices of another rank");
    if (rank == 0) return Status::Unsupported("take_along_axis of a 0-d array");
    IVY_RETURN_IF_ERROR(NormalizeAxis(call.Int("dim").value_or(-1), rank, &axis));
    // Broadcasting: needed unless every other dim was recorded equal and not 1 in both (then a
    // new shape either keeps them equal or is one NumPy itself refuses).
    bool broadcast = false;
    for (int k = 0; k < rank; ++k) {
      if (k == axis) continue;
      const int64_t a = ctx.Shape(x)[k], b = ctx.Shape(index)[k];
      broadcast = broadcast || a != b || a == 1;
    }
    if (broadcast) {
      // Expand(v, other's shape with 1 at axis): v's size at axis, the broadcast size elsewhere.
      auto with_one_at_axis = [&](const std::string& v) {
        const std::string shape = ctx.EmitTemp("Shape", {v});
        onnx::NodeProto* sc = nullptr;
        std::string s = ctx.EmitTemp("ScatterElements", {shape, ctx.Int64s({axis}), ctx.Int64s({1})}, &sc);
        SetAttr(sc, "axis", int64_t{0});
        return s;
      };
      const std::string idx_target = with_one_at_axis(in), in_target = with_one_at_axis(idx);
      idx = ctx.EmitTemp("Expand", {idx, idx_target});
      in = ctx.EmitTemp("Expand", {in, in_target});
    }
  }
  auto* n = ctx.Emit("GatherElements", {in, idx}, {ctx.Out(result)});
  SetAttr(n, "axis", axis);
  return Status::Ok();
}

// np.ptp(a, axis, keepdims): ReduceMax - ReduceMin over the same axes.
Status LowerPtp(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (!call.IsNone("out")) return Status::Unsupported("ptp with out=");
  const v1::DType d = ctx.DType(x);
  if (d == v1::BOOL) return Status::Unsupported("ptp of a bool array (NumPy refuses it)");
  const int rank = ctx.Rank(x);
  std::vector<int64_t> axes;
  if (!call.IsNone("dim")) {
    auto a = call.IntList("dim");
    if (!a || a->empty()) return Status::Unsupported("ptp axis " + ArgToString(*call.Get("dim"), true));
    for (int64_t v : *a) {
      int64_t n;
      IVY_RETURN_IF_ERROR(NormalizeAxis(v, std::max(rank, 1), &n));
      axes.push_back(n);
    }
    std::sort(axes.begin(), axes.end());
    axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  }
  const bool keepdim = call.Bool("keepdim").value_or(false);
  std::string in = ctx.CastTo(ctx.In(x), d, ctx.DType(result));
  if (rank == 0) {
    ctx.Emit("Sub", {in, in}, {ctx.Out(result)});
    return Status::Ok();
  }
  std::string extremes[2];
  const char* ops[2] = {"ReduceMax", "ReduceMin"};
  for (int k = 0; k < 2; ++k) {
    std::vector<std::string> ins = {in};
    if (ctx.opset() >= 18 && !axes.empty()) ins.push_back(ctx.Int64s(axes));
    onnx::NodeProto* r = nullptr;
    extremes[k] = ctx.EmitTemp(ops[k], ins, &r);
    if (ctx.opset() < 18 && !axes.empty()) SetAttr(r, "axes", axes);
    SetAttr(r, "keepdims", int64_t{keepdim ? 1 : 0});
  }
  ctx.Emit("Sub", {extremes[0], extremes[1]}, {ctx.Out(result)});
  return Status::Ok();
}

// np.nan_to_num(x, nan=0.0, posinf=None, neginf=None): NaN, +inf and -inf replaced (infinities
// by the dtype's largest and lowest finite values unless given); integers and bools unchanged.
Status LowerNanToNum(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(x);
  if (!IsFloating(d)) {   // no NaN or infinity to replace: nan/posinf/neginf do not apply
    for (const char* p : {"nan", "posinf", "neginf"}) call.Get(p);
    ctx.Emit("Identity", {ctx.In(x)}, {ctx.Out(result)});
    return Status::Ok();
  }
  double big;
  if (d == v1::FLOAT64) big = std::numeric_limits<double>::max();
  else if (d == v1::FLOAT32) big = std::numeric_limits<float>::max();
  else if (d == v1::FLOAT16) big = 65504.0;
  else return Status::Unsupported(std::string("nan_to_num of a ") + DTypeName(d) + " array");
  auto value = [&](const char* p, double dflt, double* out) -> Status {
    *out = dflt;
    if (call.IsNone(p)) return Status::Ok();
    auto v = call.Double(p);
    if (!v) return Status::Unsupported(std::string("nan_to_num ") + p + " is not a number");
    *out = *v;
    return Status::Ok();
  };
  double nan, posinf, neginf;
  IVY_RETURN_IF_ERROR(value("nan", 0.0, &nan));
  IVY_RETURN_IF_ERROR(value("posinf", big, &posinf));
  IVY_RETURN_IF_ERROR(value("neginf", -big, &neginf));
  // IsNaN/IsInf on float32 for float16 (onnxruntime's CPU kernels have no float16 IsInf).
  const v1::DType w = d == v1::FLOAT16 ? v1::FLOAT32 : d;
  const std::string in = ctx.In(x), wide = ctx.CastTo(in, d, w);
  onnx::NodeProto* pi = nullptr;
  onnx::NodeProto* ni = nullptr;
  const std::string is_pos = ctx.EmitTemp("IsInf", {wide}, &pi);
  SetAttr(pi, "detect_negative", int64_t{0});
  const std::string is_neg = ctx.EmitTemp("IsInf", {wide}, &ni);
  SetAttr(ni, "detect_positive", int64_t{0});
  std::string v = ctx.EmitTemp("Where", {is_pos, F(ctx, posinf, d), in});
  v = ctx.EmitTemp("Where", {is_neg, F(ctx, neginf, d), v});
  ctx.Emit("Where", {ctx.EmitTemp("IsNaN", {wide}), F(ctx, nan, d), v}, {ctx.Out(result)});
  return Status::Ok();
}

// np.linspace(start, stop, num, endpoint, dtype) as NumPy computes it: in float64 (float32 when
// start and stop are float32 arrays), y = arange(num) * (stop - start) / div + start with
// div = num - 1 (num without endpoint), the last item exactly `stop` with the endpoint, floored
// for an integer dtype, then cast. num may be read from a shape.
Status LowerLinspace(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (call.Bool("retstep").value_or(false)) return Status::Unsupported("linspace with retstep=True");
  const v1::Arg* start = call.Get("start");
  const v1::Arg* stop = call.Get("stop");
  const v1::Arg* num = call.Get("num");
  if (!start || !stop || !num) return Status::Unsupported("linspace without start, stop or num");
  v1::DType w = v1::FLOAT64;
  bool any_tensor = false, all_f32 = true;
  for (const v1::Arg* a : {start, stop}) {
    if (a->kind_case() == v1::Arg::kTensor) {
      const ValueId v = a->tensor().value();
      if (ctx.Rank(v) != 0) return Status::Unsupported("linspace with array start or stop");
      const v1::DType d = ctx.DType(v);
      if (d == v1::FLOAT16 || d == v1::BFLOAT16) return Status::Unsupported(std::string("linspace of ") + DTypeName(d));
      any_tensor = true;
      all_f32 = all_f32 && d == v1::FLOAT32;
    } else if (!AsDouble(*a)) {
      return Status::Unsupported("linspace start/stop " + ArgToString(*a, true));
    }
  }
  // NumPy's result type: Python numbers are weak, so two float32 0-d arrays (or one and a
  // number) compute in float32.
  if (any_tensor && all_f32) w = v1::FLOAT32;
  const bool endpoint = call.Bool("endpoint").value_or(true);
  std::string n;
  {
    v1::Arg one;
    *one.mutable_list()->add_items() = *num;
    std::string n1;
    IVY_RETURN_IF_ERROR(DynamicInts(ctx, one, &n1));
    n = ctx.Squeeze(n1, {0});  // 0-d int64
  }
  std::string s, e;
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *start, w, &s));
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *stop, w, &e));
  const std::string i64_0 = ctx.Scalar(Number::Int(0), v1::INT64), i64_1 = ctx.Scalar(Number::Int(1), v1::INT64);
  const std::string idx = ctx.EmitTemp("Range", {i64_0, n, i64_1});
  const std::string y = ctx.CastTo(idx, v1::INT64, w);
  const std::string div_i = endpoint ? ctx.EmitTemp("Sub", {n, i64_1}) : n;
  const std::string div = ctx.CastTo(div_i, v1::INT64, w);
  const std::string delta = ctx.EmitTemp("Sub", {e, s});
  const std::string step = ctx.EmitTemp("Div", {delta, div});
  // div > 0: y * step, or y / div * delta where step underflows to 0; div <= 0: y * delta.
  const std::string by_step = ctx.EmitTemp("Mul", {y, step});
  const std::string by_delta = ctx.EmitTemp("Mul", {ctx.EmitTemp("Div", {y, div}), delta});
  std::string scaled = ctx.EmitTemp("Where", {ctx.EmitTemp("Equal", {step, F(ctx, 0.0, w)}), by_delta, by_step});
  scaled = ctx.EmitTemp("Where", {ctx.EmitTemp("Greater", {div_i, i64_0}), scaled, ctx.EmitTemp("Mul", {y, delta})});
  std::string out = ctx.EmitTemp("Add", {scaled, s});
  if (endpoint) {
    const std::string last = ctx.EmitTemp("And", {ctx.EmitTemp("Equal", {idx, div_i}), ctx.EmitTemp("Greater", {n, i64_1})});
    out = ctx.EmitTemp("Where", {last, e, out});
  }
  const v1::DType d = ctx.DType(result);
  if (!IsFloating(d) && d != v1::BOOL) out = ctx.EmitTemp("Floor", {out});
  if (d == w) ctx.Emit("Identity", {out}, {ctx.Out(result)});
  else {
    auto* c = ctx.Emit("Cast", {out}, {ctx.Out(result)});
    SetAttr(c, "to", static_cast<int64_t>(OnnxElemType(d)));
  }
  return Status::Ok();
}

// np.hstack / np.vstack / np.dstack: each array made at least 1-D / 2-D / 3-D as NumPy does
// ((n,) -> (1, n) for vstack, (n,) -> (1, n, 1) and (m, n) -> (m, n, 1) for dstack), then
// concatenated along axis 1 (0 when all are 1-D) / 0 / 2.
Status LowerNumpyStacks(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* a = call.Get("tensors");
  auto items = a ? SequenceItems(*a) : std::nullopt;
  if (!items || items->empty()) return Status::Unsupported("a stack of no arrays");
  const std::string& c = ctx.canonical();
  const int want = c == "hstack" ? 1 : c == "vstack" ? 2 : 3;
  bool all_1d = true;
  for (const v1::Arg* it : *items) {
    if (it->kind_case() != v1::Arg::kTensor) return Status::Unsupported(c + " of a non-array item");
    all_1d = all_1d && ctx.Rank(it->tensor().value()) <= 1;
  }
  const int64_t axis = c == "hstack" ? (all_1d ? 0 : 1) : c == "vstack" ? 0 : 2;
  std::vector<std::string> ins;
  for (const v1::Arg* it : *items) {
    const ValueId v = it->tensor().value();
    std::string in = ctx.CastTo(ctx.In(v), ctx.DType(v), ctx.DType(result));
    const int r = ctx.Rank(v);
    if (r < want) {
      std::vector<int64_t> axes;  // atleast_1d: (1,); atleast_2d: (1, .); atleast_3d: (1, ., 1) / (., ., 1)
      if (r == 0) for (int k = 0; k < want; ++k) axes.push_back(k);
      else if (want == 2) axes = {0};
      else if (r == 1) axes = {0, 2};
      else axes = {2};
      in = ctx.Unsqueeze(in, axes);
    }
    ins.push_back(in);
  }
  auto* n = ctx.Emit("Concat", ins, {ctx.Out(result)});
  SetAttr(n, "axis", axis);
  return Status::Ok();
}

// np.isclose(a, b, rtol, atol, equal_nan) as NumPy computes it: |a - b| <= atol + rtol |b| where b
// is finite, or a == b (equal infinities), or both NaN with equal_nan; in the operands' float type
// (float64 for integers).
Status LowerIsclose(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* a = call.Get("input");
  const v1::Arg* b = call.Get("other");
  if (!a || !b || (!HasTensor(*a) && !HasTensor(*b))) return Status::Unsupported("isclose without an array operand");
  bool any_int = false, any_float = false;
  for (const v1::Arg* o : {a, b}) {
    if (o->kind_case() != v1::Arg::kTensor) continue;
    const v1::DType d = ctx.DType(o->tensor().value());
    if (IsFloating(d)) any_float = true;
    else any_int = true;
  }
  if (any_int && any_float) return Status::Unsupported("isclose of an integer and a float array");
  v1::DType w = PromotedDType(ctx, {a, b});
  if (!IsFloating(w)) w = v1::FLOAT64;
  if (w != v1::FLOAT32 && w != v1::FLOAT64) return Status::Unsupported(std::string("isclose in ") + DTypeName(w));
  std::optional<double> rtol = call.IsNone("rtol") ? 1e-5 : call.Double("rtol");
  std::optional<double> atol = call.IsNone("atol") ? 1e-8 : call.Double("atol");
  if (!rtol || !atol) return Status::Unsupported("isclose with array tolerances");
  std::string x, y;
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *a, w, &x));
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *b, w, &y));
  const std::string bound = ctx.EmitTemp("Add", {F(ctx, *atol, w), ctx.EmitTemp("Mul", {F(ctx, *rtol, w), ctx.EmitTemp("Abs", {y})})});
  std::string r = ctx.EmitTemp("LessOrEqual", {ctx.EmitTemp("Abs", {ctx.EmitTemp("Sub", {x, y})}), bound});
  const std::string finite = ctx.EmitTemp("Not", {ctx.EmitTemp("Or", {ctx.EmitTemp("IsNaN", {y}), ctx.EmitTemp("IsInf", {y})})});
  r = ctx.EmitTemp("Or", {ctx.EmitTemp("And", {r, finite}), ctx.EmitTemp("Equal", {x, y})});
  if (call.Bool("equal_nan").value_or(false)) {
    r = ctx.EmitTemp("Or", {r, ctx.EmitTemp("And", {ctx.EmitTemp("IsNaN", {x}), ctx.EmitTemp("IsNaN", {y})})});
  }
  ctx.Emit("Identity", {r}, {ctx.Out(result)});
  return Status::Ok();
}

// np.put_along_axis(arr, indices, values, axis), in place: ScatterElements into arr, the indices
// broadcast against arr on every axis but `axis` and the values against the indices, as NumPy's
// fancy index does. (Repeated indices: onnxruntime writes in order, the last wins, as in NumPy.)
Status LowerPutAlongAxis(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, index;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "index", &index));
  if (node.outputs.empty()) return Status::Unsupported("the write defines no new value");
  const ValueId result = node.outputs.back();
  const v1::Arg* values = call.Get("values");
  if (!values) return Status::Unsupported("put_along_axis without values");
  if (IsFloating(ctx.DType(index)) || ctx.DType(index) == v1::BOOL) {
    return Status::Unsupported("put_along_axis with indices that are not integers");
  }
  const int rank = ctx.Rank(x);
  if (call.IsNone("dim") || rank == 0 || ctx.Rank(index) != rank) {
    return Status::Unsupported("put_along_axis other than along one axis with indices of the array's rank");
  }
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(*call.Int("dim"), rank, &axis));
  const v1::DType d = ctx.DType(x);
  std::string v;
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *values, d, &v));
  onnx::NodeProto* sc = nullptr;
  const std::string target =
      ctx.EmitTemp("ScatterElements", {ctx.EmitTemp("Shape", {ctx.In(x)}), ctx.Int64s({axis}), ctx.Int64s({1})}, &sc);
  SetAttr(sc, "axis", int64_t{0});
  const std::string idx =
      ctx.EmitTemp("Expand", {ctx.CastTo(ctx.In(index), ctx.DType(index), v1::INT64), target});
  const std::string vals = ctx.EmitTemp("Expand", {v, ctx.EmitTemp("Shape", {idx})});
  auto* n = ctx.Emit("ScatterElements", {ctx.In(x), idx, vals}, {ctx.Out(result)});
  SetAttr(n, "axis", axis);
  return Status::Ok();
}

// Tensor.unfold(dimension, size, step): windows of `size` along `dimension`, every `step`. The
// window count L = (n - size) // step + 1 is read from the run-time length n; the windows are a
// Gather of starts[:, None] + arange(size)[None, :] along the dim, whose offsets axis then goes
// to the end, as torch lays it out: x.shape[:d] + [L] + x.shape[d+1:] + [size].
Status LowerUnfoldWindows(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  auto dim = call.Int("dimension");
  auto size = call.Int("size");
  auto step = call.Int("step");
  if (!dim || !size || !step) return Status::Unsupported("unfold with a dimension, size or step that is not an int");
  if (*size < 0 || *step < 1) return Status::Unsupported("unfold with size < 0 or step < 1");
  const int rank = ctx.Rank(x);
  int64_t axis = 0;
  IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, std::max(rank, 1), &axis));
  std::string in = ctx.In(x);
  if (rank == 0) in = ctx.EmitTemp("Reshape", {in, ctx.Int64s({1})});   // a 0-d tensor unfolds as [x]
  const int r = std::max(rank, 1);
  const std::string n = DimOf(ctx, in, axis);
  // Floor division (n >= size on any input torch accepts, so Div's truncation is the floor).
  const std::string count = ctx.EmitTemp(
      "Add", {ctx.EmitTemp("Div", {ctx.EmitTemp("Sub", {n, ctx.Int64s({*size})}), ctx.Int64s({*step})}),
              ctx.Int64s({1})});
  const std::string zero = ctx.Scalar(Number::Int(0), v1::INT64);
  const std::string one = ctx.Scalar(Number::Int(1), v1::INT64);
  const std::string count0 = ctx.EmitTemp("Squeeze", {count, ctx.Int64s({0})});
  const std::string starts = ctx.EmitTemp("Mul", {ctx.EmitTemp("Range", {zero, count0, one}),
                                                  ctx.Scalar(Number::Int(*step), v1::INT64)});
  const std::string offs = ctx.EmitTemp("Range", {zero, ctx.Scalar(Number::Int(*size), v1::INT64), one});
  const std::string idx = ctx.EmitTemp("Add", {ctx.EmitTemp("Unsqueeze", {starts, ctx.Int64s({1})}),
                                               ctx.EmitTemp("Unsqueeze", {offs, ctx.Int64s({0})})});
  onnx::NodeProto* g = nullptr;
  const std::string win = ctx.EmitTemp("Gather", {in, idx}, &g);
  SetAttr(g, "axis", axis);
  // win: shape[:axis] + [L, size] + shape[axis+1:]; move the size axis (axis + 1) to the end.
  std::vector<int64_t> perm;
  for (int64_t i = 0; i <= axis; ++i) perm.push_back(i);
  for (int64_t i = axis + 2; i <= r; ++i) perm.push_back(i);
  perm.push_back(axis + 1);
  auto* t = ctx.Emit("Transpose", {win}, {ctx.Out(result)});
  SetAttr(t, "perm", perm);
  return Status::Ok();
}

// torch.cdist(x1, x2, p, compute_mode): p-norm distances between the rows of x1 [..., P, M] and
// x2 [..., R, M], [..., P, R]. For p = 2 torch picks an algorithm: with compute_mode None it
// computes through a matrix product (cat(-2 a, |a|^2, 1) @ cat(b, 1, |b|^2)^T, clamped at 0, then
// sqrt) when P > 25 or R > 25 and directly otherwise; both are emitted and the run-time P and R
// choose, so the rounding follows torch's at any size.
Status LowerCdist(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x1, x2, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "x1", &x1));
  IVY_RETURN_IF_ERROR(TensorParam(call, "x2", &x2));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const int rank = ctx.Rank(x1);
  if (rank < 2 || ctx.Rank(x2) != rank) return Status::Unsupported("cdist of tensors of rank < 2 or of two ranks");
  const v1::DType d = ctx.DType(result);
  if (!IsFloating(d)) return Status::Unsupported("cdist with a non-float result");
  const double p = call.Double("p").value_or(2.0);
  if (p < 0) return Status::Unsupported("cdist with p < 0");
  std::string mode = "use_mm_for_euclid_dist_if_necessary";
  if (const v1::Arg* m = call.Get("compute_mode"); m && m->kind_case() == v1::Arg::kS) mode = m->s();
  else if (m && m->kind_case() != v1::Arg::kNone) return Status::Unsupported("cdist compute_mode " + ArgToString(*m, true));
  const std::string a = ctx.CastTo(ctx.In(x1), ctx.DType(x1), d), b = ctx.CastTo(ctx.In(x2), ctx.DType(x2), d);
  auto reduce = [&](const char* op, const std::string& v, int64_t keep) {
    onnx::NodeProto* n = nullptr;
    std::string r;
    if (std::string_view(op) == "ReduceSum" || ctx.opset() >= 18) {
      r = ctx.EmitTemp(op, {v, ctx.Int64s({-1})}, &n);
    } else {
      r = ctx.EmitTemp(op, {v}, &n);
      SetAttr(n, "axes", std::vector<int64_t>{-1});
    }
    SetAttr(n, "keepdims", keep);
    return r;
  };
  const std::string diff = ctx.EmitTemp("Sub", {ctx.EmitTemp("Unsqueeze", {a, ctx.Int64s({-2})}),
                                                ctx.EmitTemp("Unsqueeze", {b, ctx.Int64s({-3})})});
  const std::string out = ctx.Out(result);
  if (p == 0) {
    const std::string nz = ctx.EmitTemp("Not", {ctx.EmitTemp("Equal", {diff, F(ctx, 0.0, d)})});
    ctx.Emit("Identity", {reduce("ReduceSum", ctx.CastTo(nz, v1::BOOL, d), 0)}, {out});
    return Status::Ok();
  }
  const std::string ad = ctx.EmitTemp("Abs", {diff});
  if (p == 1) {
    ctx.Emit("Identity", {reduce("ReduceSum", ad, 0)}, {out});
  } else if (std::isinf(p)) {
    ctx.Emit("Identity", {reduce("ReduceMax", ad, 0)}, {out});
  } else if (p != 2) {
    const std::string s = reduce("ReduceSum", ctx.EmitTemp("Pow", {ad, F(ctx, p, d)}), 0);
    ctx.Emit("Pow", {s, F(ctx, 1.0 / p, d)}, {out});
  } else {
    const std::string direct = ctx.EmitTemp("Sqrt", {reduce("ReduceSum", ctx.EmitTemp("Mul", {diff, diff}), 0)});
    if (mode == "donot_use_mm_for_euclid_dist") {
      ctx.Emit("Identity", {direct}, {out});
      return Status::Ok();
    }
    const std::string an = reduce("ReduceSum", ctx.EmitTemp("Mul", {a, a}), 1);
    const std::string bn = reduce("ReduceSum", ctx.EmitTemp("Mul", {b, b}), 1);
    onnx::NodeProto* c1 = nullptr;
    onnx::NodeProto* c2 = nullptr;
    const std::string a_ = ctx.EmitTemp(
        "Concat", {ctx.EmitTemp("Mul", {a, F(ctx, -2.0, d)}), an, ctx.EmitTemp("Expand", {F(ctx, 1.0, d), ctx.EmitTemp("Shape", {an})})}, &c1);
    SetAttr(c1, "axis", int64_t{-1});
    const std::string b_ = ctx.EmitTemp(
        "Concat", {b, ctx.EmitTemp("Expand", {F(ctx, 1.0, d), ctx.EmitTemp("Shape", {bn})}), bn}, &c2);
    SetAttr(c2, "axis", int64_t{-1});
    std::vector<int64_t> perm;
    for (int i = 0; i < rank; ++i) perm.push_back(i);
    std::swap(perm[rank - 2], perm[rank - 1]);
    onnx::NodeProto* t = nullptr;
    const std::string bt = ctx.EmitTemp("Transpose", {b_}, &t);
    SetAttr(t, "perm", perm);
    const std::string mm = ctx.EmitTemp("Sqrt", {ctx.EmitTemp("Max", {ctx.EmitTemp("MatMul", {a_, bt}), F(ctx, 0.0, d)})});
    if (mode == "use_mm_for_euclid_dist") {
      ctx.Emit("Identity", {mm}, {out});
      return Status::Ok();
    }
    const std::string limit = ctx.Int64s({25});
    const std::string big = ctx.EmitTemp("Or", {ctx.EmitTemp("Greater", {DimOf(ctx, a, rank - 2), limit}),
                                                ctx.EmitTemp("Greater", {DimOf(ctx, b, rank - 2), limit})});
    ctx.Emit("Where", {ctx.EmitTemp("Squeeze", {big, ctx.Int64s({0})}), mm, direct}, {out});
  }
  return Status::Ok();
}

// torch.histc(input, bins, min, max): counts of the elements in `bins` equal bins over [min, max]
// (the last bin closed), elements outside (and NaN) not counted: bin floor((x - min) * bins /
// (max - min)), max itself in the last bin. min == max (torch then takes the data's range) is
// refused.
Status LowerHistc(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  auto bins = call.Int("bins");
  auto lo = call.Double("min");
  auto hi = call.Double("max");
  if (!bins || !lo || !hi || *bins < 1) return Status::Unsupported("histc with bins, min or max that are not numbers");
  if (!(*lo < *hi)) return Status::Unsupported("histc with min >= max (the range of the data)");
  const v1::DType d = ctx.DType(result);
  if (!IsFloating(d)) return Status::Unsupported("histc of a non-float tensor");
  const std::string v = ctx.EmitTemp("Reshape", {ctx.CastTo(ctx.In(x), ctx.DType(x), d), ctx.Int64s({-1})});
  const std::string valid = ctx.EmitTemp("And", {ctx.EmitTemp("GreaterOrEqual", {v, F(ctx, *lo, d)}),
                                                 ctx.EmitTemp("LessOrEqual", {v, F(ctx, *hi, d)})});
  // NaN and out-of-range elements get bin 0 here and are dropped by `valid`.
  const std::string safe = ctx.EmitTemp("Where", {valid, v, F(ctx, *lo, d)});
  std::string pos = ctx.EmitTemp(
      "Floor", {ctx.EmitTemp("Div", {ctx.EmitTemp("Mul", {ctx.EmitTemp("Sub", {safe, F(ctx, *lo, d)}), F(ctx, static_cast<double>(*bins), d)}),
                                     F(ctx, *hi - *lo, d)})});
  pos = ctx.EmitTemp("Min", {ctx.CastTo(pos, d, v1::INT64), ctx.Scalar(Number::Int(*bins - 1), v1::INT64)});
  const std::string range = ctx.EmitTemp("Range", {ctx.Scalar(Number::Int(0), v1::INT64), ctx.Scalar(Number::Int(*bins), v1::INT64),
                                                   ctx.Scalar(Number::Int(1), v1::INT64)});
  const std::string hit = ctx.EmitTemp("And", {ctx.EmitTemp("Equal", {ctx.EmitTemp("Unsqueeze", {pos, ctx.Int64s({1})}),
                                                                      ctx.EmitTemp("Unsqueeze", {range, ctx.Int64s({0})})}),
                                               ctx.EmitTemp("Unsqueeze", {valid, ctx.Int64s({1})})});
  onnx::NodeProto* r = nullptr;
  const std::string counts = ctx.EmitTemp("ReduceSum", {ctx.CastTo(hit, v1::BOOL, d), ctx.Int64s({0})}, &r);
  SetAttr(r, "keepdims", int64_t{0});
  ctx.Emit("Identity", {counts}, {ctx.Out(result)});
  return Status::Ok();
}

// np.histogram(a, bins=n, range=(lo, hi), density=None|bool): counts and the n + 1 edges, as NumPy
// computes them for equal bins: edges = linspace(lo, hi, n + 1) in float64 cast to the edges' dtype;
// each kept element (lo <= x <= hi; NaN dropped) gets bin int((x - lo) / (hi - lo) * n) in that
// dtype, moved down one where x is below its bin's left edge and up one where it reaches the next
// edge (not past the last bin), exactly NumPy's corrections. A range read from the data (range=None),
// bin edges given as an array, weights and density=True are refused.
Status LowerHistogram(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  std::vector<ValueId> results;
  ForEachTensor(node.result, [&](const v1::TensorRef& t) { results.push_back(t.value()); });
  if (results.size() != 2) return Status::Unsupported("histogram without (counts, edges)");
  auto bins = call.Int("bins");
  if (!bins || *bins < 1) return Status::Unsupported("histogram bins that are not a positive int (edges as an array)");
  const v1::Arg* range_arg = call.Get("range");
  const auto range = range_arg ? SequenceItems(*range_arg) : std::nullopt;
  std::optional<double> b0 = range && range->size() == 2 ? AsDouble(*(*range)[0]) : std::nullopt;
  std::optional<double> b1 = range && range->size() == 2 ? AsDouble(*(*range)[1]) : std::nullopt;
  if (!b0 || !b1) return Status::Unsupported("histogram without range=(lo, hi) numbers (the range read from the data)");
  if (!call.IsNone("weights")) return Status::Unsupported("histogram with weights");
  if (call.Bool("density").value_or(false)) return Status::Unsupported("histogram with density=True");
  double lo = *b0, hi = *b1;
  if (!(lo <= hi) || !std::isfinite(lo) || !std::isfinite(hi)) return Status::Unsupported("histogram range that is not finite and ordered");
  if (lo == hi) lo -= 0.5, hi += 0.5;   // as NumPy widens an empty range
  const int64_t n = *bins;
  const v1::DType d = ctx.DType(results[1]);   // the edges' dtype: the one NumPy computes the bins in
  if (!IsFloating(d)) return Status::Unsupported(std::string("histogram edges of ") + DTypeName(d));
  // np.linspace(lo, hi, n + 1): i * step + lo in float64, the last edge hi itself.
  std::vector<double> edges(static_cast<size_t>(n + 1));
  const double step = (hi - lo) / static_cast<double>(n);
  for (int64_t i = 0; i <= n; ++i) edges[static_cast<size_t>(i)] = static_cast<double>(i) * step + lo;
  edges.back() = hi;
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::DOUBLE);
  t.add_dims(n + 1);
  for (double e : edges) t.add_double_data(e);
  const std::string edges_d = ctx.CastTo(ctx.AddInitializer(std::move(t), "histogram_edges"), v1::FLOAT64, d);
  ctx.Emit("Identity", {edges_d}, {ctx.Out(results[1])});

  const std::string v = ctx.EmitTemp("Reshape", {ctx.CastTo(ctx.In(x), ctx.DType(x), d), ctx.Int64s({-1})});
  const std::string first = F(ctx, lo, d), last = F(ctx, hi, d);
  const std::string keep = ctx.EmitTemp("And", {ctx.EmitTemp("GreaterOrEqual", {v, first}), ctx.EmitTemp("LessOrEqual", {v, last})});
  const std::string safe = ctx.EmitTemp("Where", {keep, v, first});
  const std::string f = ctx.EmitTemp("Mul", {ctx.EmitTemp("Div", {ctx.EmitTemp("Sub", {safe, first}), F(ctx, hi - lo, d)}),
                                             F(ctx, static_cast<double>(n), d)});
  const std::string top = ctx.Scalar(Number::Int(n - 1), v1::INT64), one = ctx.Scalar(Number::Int(1), v1::INT64);
  std::string idx = ctx.EmitTemp("Min", {ctx.CastTo(f, d, v1::INT64), top});
  auto edge_at = [&](const std::string& i) {
    onnx::NodeProto* g = nullptr;
    const std::string e = ctx.EmitTemp("Gather", {edges_d, i}, &g);
    SetAttr(g, "axis", int64_t{0});
    return e;
  };
  const std::string down = ctx.EmitTemp("Less", {safe, edge_at(idx)});
  idx = ctx.EmitTemp("Sub", {idx, ctx.CastTo(down, v1::BOOL, v1::INT64)});
  const std::string up = ctx.EmitTemp("And", {ctx.EmitTemp("GreaterOrEqual", {safe, edge_at(ctx.EmitTemp("Add", {idx, one}))}),
                                              ctx.EmitTemp("Less", {idx, top})});
  idx = ctx.EmitTemp("Add", {idx, ctx.CastTo(up, v1::BOOL, v1::INT64)});
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[static_cast<size_t>(i)] = i;
  const std::string hit = ctx.EmitTemp("And", {ctx.EmitTemp("Equal", {ctx.Unsqueeze(idx, {1}), ctx.Unsqueeze(ctx.Int64s(ids), {0})}),
                                               ctx.Unsqueeze(keep, {1})});
  const v1::DType cd = ctx.DType(results[0]);
  onnx::NodeProto* r = nullptr;
  const std::string counts = ctx.EmitTemp("ReduceSum", {ctx.CastTo(hit, v1::BOOL, v1::INT64), ctx.Int64s({0})}, &r);
  SetAttr(r, "keepdims", int64_t{0});
  ctx.Emit("Identity", {ctx.CastTo(counts, v1::INT64, cd)}, {ctx.Out(results[0])});
  return Status::Ok();
}

// torch._grouped_mm(mat_a [S, K], mat_b [E, K, N], offs [E]): row s of mat_a times mat_b[g], g the
// group whose offsets hold s (offs[g - 1] <= s < offs[g], the count of offsets <= s). Rows past the
// last offset are unspecified in torch; here they take the last group. Each row's matrix is
// gathered: right at any routing, though not the grouped kernel's cost.
Status LowerGroupedMm(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId a, b, offs, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "mat_a", &a));
  IVY_RETURN_IF_ERROR(TensorParam(call, "mat_b", &b));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (!call.Tensor("offs")) return Status::Unsupported("_grouped_mm without offs");
  offs = *call.Tensor("offs");
  if (!call.IsNone("bias")) return Status::Unsupported("_grouped_mm with a bias");
  if (ctx.Rank(a) != 2 || ctx.Rank(b) != 3 || ctx.Rank(offs) != 1) {
    return Status::Unsupported("_grouped_mm other than a 2-D input and 3-D experts");
  }
  const v1::DType d = ctx.DType(result);
  const std::string x = ctx.CastTo(ctx.In(a), ctx.DType(a), d), w = ctx.CastTo(ctx.In(b), ctx.DType(b), d);
  const std::string o = ctx.CastTo(ctx.In(offs), ctx.DType(offs), v1::INT64);
  const std::string rows = ctx.EmitTemp("Squeeze", {DimOf(ctx, x, 0), ctx.Int64s({0})});
  const std::string s = ctx.EmitTemp("Range", {ctx.Scalar(Number::Int(0), v1::INT64), rows, ctx.Scalar(Number::Int(1), v1::INT64)});
  const std::string past = ctx.EmitTemp("GreaterOrEqual", {ctx.EmitTemp("Unsqueeze", {s, ctx.Int64s({1})}),
                                                           ctx.EmitTemp("Unsqueeze", {o, ctx.Int64s({0})})});
  onnx::NodeProto* r = nullptr;
  std::string group = ctx.EmitTemp("ReduceSum", {ctx.CastTo(past, v1::BOOL, v1::INT64), ctx.Int64s({1})}, &r);
  SetAttr(r, "keepdims", int64_t{0});
  const std::string last = ctx.EmitTemp("Sub", {ctx.EmitTemp("Squeeze", {DimOf(ctx, w, 0), ctx.Int64s({0})}),
                                                ctx.Scalar(Number::Int(1), v1::INT64)});
  group = ctx.EmitTemp("Min", {group, last});
  onnx::NodeProto* g = nullptr;
  const std::string wg = ctx.EmitTemp("Gather", {w, group}, &g);   // [S, K, N]
  SetAttr(g, "axis", int64_t{0});
  const std::string prod = ctx.EmitTemp("MatMul", {ctx.EmitTemp("Unsqueeze", {x, ctx.Int64s({1})}), wg});   // [S, 1, N]
  ctx.Emit("Squeeze", {prod, ctx.Int64s({1})}, {ctx.Out(result)});
  return Status::Ok();
}

// np.searchsorted(a, v, side): for each v, the count of a's elements ordered before it (side
// "left": a < v; "right": a <= v), in NumPy's order, where NaN sorts after every number. `a` is
// 1-D and sorted (as NumPy requires); a sorter is refused.
Status LowerSearchsorted(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId a, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &a));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (ctx.Rank(a) != 1) return Status::Unsupported("searchsorted into an array that is not 1-D");
  if (!call.IsNone("sorter")) return Status::Unsupported("searchsorted with a sorter");
  std::string side = "left";
  if (const v1::Arg* sd = call.Get("side"); sd && sd->kind_case() == v1::Arg::kS) side = sd->s();
  if (side != "left" && side != "right") return Status::Unsupported("searchsorted side " + side);
  const v1::Arg* varg = call.Get("v");
  if (!varg) return Status::Unsupported("searchsorted without v");
  const v1::DType ad = ctx.DType(a);
  v1::DType d = ad;
  if (varg->kind_case() == v1::Arg::kTensor) d = PromotedDType(ctx, {call.Get("input"), varg});
  else if (varg->kind_case() == v1::Arg::kF && !IsFloating(d)) d = v1::FLOAT64;
  std::string v;
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *varg, d, &v));
  const std::string arr = ctx.CastTo(ctx.In(a), ad, d);
  // a as [1, ..., 1, n] against v as [..., 1]
  const int vr = varg->kind_case() == v1::Arg::kTensor ? ctx.Rank(varg->tensor().value()) : 0;
  std::vector<int64_t> shape(static_cast<size_t>(vr), 1);
  shape.push_back(-1);
  const std::string ab = ctx.EmitTemp("Reshape", {arr, ctx.Int64s(shape)});
  const std::string vb = ctx.EmitTemp("Unsqueeze", {v, ctx.Int64s({-1})});
  // lt(x, y) in NumPy's order: x < y, or y is NaN and x is not.
  auto lt = [&](const std::string& x, const std::string& y) {
    std::string r = ctx.EmitTemp("Less", {x, y});
    if (IsFloating(d)) {
      r = ctx.EmitTemp("Or", {r, ctx.EmitTemp("And", {ctx.EmitTemp("IsNaN", {y}), ctx.EmitTemp("Not", {ctx.EmitTemp("IsNaN", {x})})})});
    }
    return r;
  };
  const std::string before = side == "left" ? lt(ab, vb) : ctx.EmitTemp("Not", {lt(vb, ab)});
  onnx::NodeProto* r = nullptr;
  const std::string count = ctx.EmitTemp("ReduceSum", {ctx.CastTo(before, v1::BOOL, v1::INT64), ctx.Int64s({-1})}, &r);
  SetAttr(r, "keepdims", int64_t{0});
  ctx.Emit("Identity", {ctx.CastTo(count, v1::INT64, ctx.DType(result))}, {ctx.Out(result)});
  return Status::Ok();
}

// np.bincount(x, weights, minlength): counts (or weight sums) of each value 0..L-1 of a 1-D array of
// non-negative ints, L = max(max(x) + 1, minlength) read when the model runs (a data-dependent
// length). An empty x is refused by onnxruntime's ReduceMax (NumPy gives minlength zeros).
Status LowerBincount(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (ctx.Rank(x) != 1) return Status::Unsupported("bincount of an array that is not 1-D");
  auto minlength = call.Int("minlength");
  if (!minlength) return Status::Unsupported("bincount with a minlength that is not an int");
  const v1::DType d = ctx.DType(result);
  const std::string xi = ctx.CastTo(ctx.In(x), ctx.DType(x), v1::INT64);
  onnx::NodeProto* m = nullptr;
  std::string top;
  if (ctx.opset() >= 18) {
    top = ctx.EmitTemp("ReduceMax", {xi, ctx.Int64s({0})}, &m);
  } else {
    top = ctx.EmitTemp("ReduceMax", {xi}, &m);
    SetAttr(m, "axes", std::vector<int64_t>{0});
  }
  SetAttr(m, "keepdims", int64_t{0});
  const std::string len = ctx.EmitTemp("Max", {ctx.EmitTemp("Add", {top, ctx.Scalar(Number::Int(1), v1::INT64)}),
                                               ctx.Scalar(Number::Int(*minlength), v1::INT64)});
  const std::string range = ctx.EmitTemp("Range", {ctx.Scalar(Number::Int(0), v1::INT64), len, ctx.Scalar(Number::Int(1), v1::INT64)});
  std::string hit = ctx.CastTo(ctx.EmitTemp("Equal", {ctx.EmitTemp("Unsqueeze", {xi, ctx.Int64s({1})}),
                                                      ctx.EmitTemp("Unsqueeze", {range, ctx.Int64s({0})})}),
                               v1::BOOL, d);
  if (!call.IsNone("weights")) {
    ValueId w;
    IVY_RETURN_IF_ERROR(TensorParam(call, "weights", &w));
    hit = ctx.EmitTemp("Mul", {hit, ctx.EmitTemp("Unsqueeze", {ctx.CastTo(ctx.In(w), ctx.DType(w), d), ctx.Int64s({1})})});
  }
  onnx::NodeProto* r = nullptr;
  const std::string sum = ctx.EmitTemp("ReduceSum", {hit, ctx.Int64s({0})}, &r);
  SetAttr(r, "keepdims", int64_t{0});
  ctx.Emit("Identity", {sum}, {ctx.Out(result)});
  return Status::Ok();
}

}  // namespace onnx_export
}  // namespace ivytrace
