// Elementwise lowerings: unary math and activations (one ONNX op or a short decomposition),
// binary ops with broadcasting and Python-number operands (comparisons, logical, min/max,
// remainder), clip, where, casts.
#include <cmath>

#include "core/export/onnx/lowerings.h"
#include "core/ir/arg.h"

namespace ivytrace {
namespace onnx_export {

namespace {

std::string F(LoweringContext& ctx, double v, v1::DType d) { return ctx.Scalar(Number::Float(v), d); }

}  // namespace

// --- helpers shared with other files ---------------------------------------------------------------

v1::DType PromotedDType(const LoweringContext& ctx, const std::vector<const v1::Arg*>& operands) {
  v1::DType tensor_dtype = v1::DTYPE_UNSPECIFIED;
  bool float_scalar = false, tensor_rank0_only = true;
  v1::DType rank0_dtype = v1::DTYPE_UNSPECIFIED;
  for (const v1::Arg* arg : operands) {
    if (!arg) continue;
    if (arg->kind_case() == v1::Arg::kTensor) {
      const ValueId v = arg->tensor().value();
      const v1::DType d = ctx.DType(v);
      // torch: a 0-d tensor does not promote a higher-rank tensor of the same kind.
      if (ctx.Rank(v) == 0) {
        if (rank0_dtype == v1::DTYPE_UNSPECIFIED || (IsFloating(d) && !IsFloating(rank0_dtype))) rank0_dtype = d;
        continue;
      }
      tensor_rank0_only = false;
      if (tensor_dtype == v1::DTYPE_UNSPECIFIED || (IsFloating(d) && !IsFloating(tensor_dtype)) ||
          (tensor_dtype == v1::BOOL && d != v1::BOOL) ||
          (IsFloating(d) == IsFloating(tensor_dtype) && DTypeSize(d) > DTypeSize(tensor_dtype))) {
        tensor_dtype = d;
      }
    } else if (arg->kind_case() == v1::Arg::kF) {
      float_scalar = true;
    }
  }
  if (tensor_rank0_only) tensor_dtype = rank0_dtype;
  else if (rank0_dtype != v1::DTYPE_UNSPECIFIED && IsFloating(rank0_dtype) && !IsFloating(tensor_dtype)) {
    tensor_dtype = rank0_dtype;
  }
  if (!IsFloating(tensor_dtype) && float_scalar) return v1::FLOAT32;
  return tensor_dtype;
}

Status OperandAs(LoweringContext& ctx, const v1::Arg& arg, v1::DType dtype, std::string* out) {
  if (arg.kind_case() == v1::Arg::kTensor) {
    const ValueId v = arg.tensor().value();
    *out = ctx.CastTo(ctx.In(v), ctx.DType(v), dtype);
    return Status::Ok();
  }
  if (arg.kind_case() == v1::Arg::kF) {
    *out = ctx.Scalar(Number::Float(arg.f()), dtype);
    return Status::Ok();
  }
  if (auto i = AsInt(arg)) {
    *out = ctx.Scalar(IsFloating(dtype) ? Number::Float(static_cast<double>(*i)) : Number::Int(*i), dtype);
    return Status::Ok();
  }
  return Status::Unsupported("operand " + ArgToString(arg, true) + " is neither a tensor nor a number");
}

// --- unary ------------------------------------------------------------------------------------------

// x clamped to [lo, hi]: one Clip for float32/float64 (onnxruntime's Clip keeps NaN, as torch
// does), Max then Min for the types its Clip kernel lacks.
void EmitClamp(LoweringContext& ctx, const std::string& in, double lo, double hi, v1::DType d,
               const std::string& out) {
  if (d == v1::FLOAT32 || d == v1::FLOAT64) {
    ctx.Emit("Clip", {in, F(ctx, lo, d), F(ctx, hi, d)}, {out});
    return;
  }
  ctx.Emit("Min", {ctx.EmitTemp("Max", {in, F(ctx, lo, d)}), F(ctx, hi, d)}, {out});
}

Status LowerUnary(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const std::string& c = ctx.canonical();
  const v1::DType rd = ctx.DType(result);
  std::string in = ctx.In(x);
  v1::DType d = ctx.DType(x);
  // Predicates read the input as it is; everything else computes in the result's dtype
  // (torch.exp of an int tensor is float).
  const bool predicate = c == "isnan" || c == "isinf" || c == "isfinite" || c == "logical_not";
  if (!predicate && rd != v1::DTYPE_UNSPECIFIED && rd != d) {
    in = ctx.CastTo(in, d, rd);
    d = rd;
  }
  const std::string out = ctx.Out(result);
  static const std::pair<std::string_view, std::string_view> kOneToOne[] = {
      {"abs", "Abs"},     {"acos", "Acos"},       {"acosh", "Acosh"},     {"asin", "Asin"},
      {"asinh", "Asinh"}, {"atan", "Atan"},       {"atanh", "Atanh"},     {"ceil", "Ceil"},
      {"cos", "Cos"},     {"cosh", "Cosh"},       {"erf", "Erf"},         {"exp", "Exp"},
      {"floor", "Floor"}, {"log", "Log"},         {"negative", "Neg"},    {"reciprocal", "Reciprocal"},
      {"relu", "Relu"},   {"sigmoid", "Sigmoid"}, {"sign", "Sign"},       {"sin", "Sin"},
      {"sinh", "Sinh"},   {"sqrt", "Sqrt"},       {"tan", "Tan"},         {"tanh", "Tanh"},
      {"isnan", "IsNaN"}, {"isinf", "IsInf"},     {"hardswish", "HardSwish"}, {"positive", "Identity"},
      {"identity", "Identity"}, {"contiguous", "Identity"},
  };
  for (const auto& [name, op] : kOneToOne) {
    if (c == name) {
      if ((c == "floor" || c == "ceil") && !IsFloating(d)) {
        ctx.Emit("Identity", {in}, {out});  // floor/ceil of an integer tensor
        return Status::Ok();
      }
      ctx.Emit(op, {in}, {out});
      return Status::Ok();
    }
  }
  if (c == "logical_not" || c == "bitwise_not") {
    if (c == "bitwise_not" && d != v1::BOOL) {
      // ~x of an integer, exactly, with no BitwiseNot before opset 18: -1 - x for signed ints (in
      // two's complement, never overflowing), MAX - x for unsigned ones; in int32 for the narrow
      // types onnxruntime's Sub has no kernel for, where the result fits.
      struct Form { v1::DType type; v1::DType via; int64_t minuend; };
      static const Form kForms[] = {
          {v1::INT64, v1::INT64, -1}, {v1::INT32, v1::INT32, -1}, {v1::INT16, v1::INT32, -1},
          {v1::INT8, v1::INT32, -1},  {v1::UINT8, v1::INT32, 255}, {v1::UINT16, v1::INT32, 65535},
      };
      for (const Form& f : kForms) {
        if (f.type != d) continue;
        const std::string v = ctx.CastTo(in, d, f.via);
        const std::string r = ctx.EmitTemp("Sub", {ctx.Scalar(Number::Int(f.minuend), f.via), v});
        ctx.Emit("Identity", {ctx.CastTo(r, f.via, d)}, {out});
        return Status::Ok();
      }
      return Status::Unsupported(std::string("bitwise_not of ") + DTypeName(d) + " needs opset 18");
    }
    ctx.Emit("Not", {ctx.CastTo(in, d, v1::BOOL)}, {out});
    return Status::Ok();
  }
  if (c == "isfinite") {
    if (!IsFloating(d)) {  // integers are always finite
      ctx.Emit("Equal", {in, in}, {out});
      return Status::Ok();
    }
    std::string bad = ctx.EmitTemp("Or", {ctx.EmitTemp("IsNaN", {in}), ctx.EmitTemp("IsInf", {in})});
    ctx.Emit("Not", {bad}, {out});
    return Status::Ok();
  }
  if (c == "round") {
    if (auto dec = call.Int("decimals"); dec && *dec != 0) {
      const double s = std::pow(10.0, static_cast<double>(*dec));
      std::string scaled = ctx.EmitTemp("Round", {ctx.EmitTemp("Mul", {in, F(ctx, s, d)})});
      ctx.Emit("Div", {scaled, F(ctx, s, d)}, {out});
      return Status::Ok();
    }
    // jax.lax.round's default rounds halves away from zero; ONNX Round (and jnp.round, torch.round,
    // np.round) to even. t + sign(x) where |x - t| >= 0.5, t = trunc(x): x - t is exact, where
    // floor(|x| + 0.5) would round 0.49999997 up.
    bool away = false;
    if (const v1::Arg* m = call.Get("rounding_method"); m && !IsNone(*m)) {
      const std::string s = ArgToString(*m, false);
      away = AsInt(*m) == 0 || s.find("AWAY_FROM_ZERO") != std::string::npos;
      if (!away && AsInt(*m) != 1 && s.find("TO_NEAREST_EVEN") == std::string::npos) {
        return Status::Unsupported("round with rounding_method=" + s);
      }
    }
    if (away && IsFloating(d)) {
      const std::string sign = ctx.EmitTemp("Sign", {in});
      const std::string t = ctx.EmitTemp("Mul", {sign, ctx.EmitTemp("Floor", {ctx.EmitTemp("Abs", {in})})});
      const std::string half = ctx.EmitTemp("GreaterOrEqual", {ctx.EmitTemp("Abs", {ctx.EmitTemp("Sub", {in, t})}), F(ctx, 0.5, d)});
      EmitWhere(ctx, half, ctx.EmitTemp("Add", {t, sign}), t, d, out);
      return Status::Ok();
    }
    ctx.Emit(IsFloating(d) ? "Round" : "Identity", {in}, {out});
    return Status::Ok();
  }
  if (!IsFloating(d) && c != "square") return Status::Unsupported(c + " of a " + DTypeName(d) + " tensor");
  if (c == "rsqrt") {
    ctx.Emit("Reciprocal", {ctx.EmitTemp("Sqrt", {in})}, {out});
  } else if (c == "square") {
    ctx.Emit("Mul", {in, in}, {out});
  } else if (c == "log1p") {
    ctx.Emit("Log", {ctx.EmitTemp("Add", {in, F(ctx, 1, d)})}, {out});
  } else if (c == "expm1") {
    ctx.Emit("Sub", {ctx.EmitTemp("Exp", {in}), F(ctx, 1, d)}, {out});
  } else if (c == "log2") {
    ctx.Emit("Div", {ctx.EmitTemp("Log", {in}), F(ctx, std::log(2.0), d)}, {out});
  } else if (c == "log10") {
    ctx.Emit("Div", {ctx.EmitTemp("Log", {in}), F(ctx, std::log(10.0), d)}, {out});
  } else if (c == "exp2") {
    ctx.Emit("Pow", {F(ctx, 2, d), in}, {out});
  } else if (c == "trunc" || c == "frac") {
    std::string t = ctx.EmitTemp("Mul", {ctx.EmitTemp("Sign", {in}), ctx.EmitTemp("Floor", {ctx.EmitTemp("Abs", {in})})});
    if (c == "trunc") ctx.Emit("Identity", {t}, {out});
    else ctx.Emit("Sub", {in, t}, {out});
  } else if (c == "silu") {
    ctx.Emit("Mul", {in, ctx.EmitTemp("Sigmoid", {in})}, {out});
  } else if (c == "relu6") {
    EmitClamp(ctx, in, 0, 6, d, out);
  } else if (c == "hardsigmoid") {
    onnx::NodeProto* n = ctx.Emit("HardSigmoid", {in}, {out});
    SetAttr(n, "alpha", static_cast<float>(1.0 / 6.0));
    SetAttr(n, "beta", 0.5f);
  } else if (c == "mish") {
    ctx.Emit("Mul", {in, ctx.EmitTemp("Tanh", {ctx.EmitTemp("Softplus", {in})})}, {out});
  } else if (c == "log_sigmoid") {
    ctx.Emit("Neg", {ctx.EmitTemp("Softplus", {ctx.EmitTemp("Neg", {in})})}, {out});
  } else {
    return Status::Unsupported("'unary' lowering does not know canonical op '" + c + "'");
  }
  return Status::Ok();
}

// leaky_relu / elu / hardtanh / softplus: one input and number parameters.
Status LowerActivation(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const std::string& c = ctx.canonical();
  const v1::DType d = ctx.DType(x);
  if (!IsFloating(d)) return Status::Unsupported(c + " of a " + DTypeName(d) + " tensor");
  const std::string in = ctx.In(x), out = ctx.Out(result);
  if (c == "leaky_relu") {
    auto* n = ctx.Emit("LeakyRelu", {in}, {out});
    SetAttr(n, "alpha", static_cast<float>(call.Double("negative_slope").value_or(0.01)));
  } else if (c == "elu") {
    auto* n = ctx.Emit("Elu", {in}, {out});
    SetAttr(n, "alpha", static_cast<float>(call.Double("alpha").value_or(1.0)));
  } else if (c == "hardtanh") {
    const double lo = call.Double("min_val").value_or(-1.0), hi = call.Double("max_val").value_or(1.0);
    EmitClamp(ctx, in, lo, hi, d, out);
  } else if (c == "softplus") {
    // softplus(x) = log(1 + exp(beta x)) / beta, and x itself where beta x > threshold.
    const double beta = call.Double("beta").value_or(1.0), threshold = call.Double("threshold").value_or(20.0);
    std::string bx = beta == 1.0 ? in : ctx.EmitTemp("Mul", {in, F(ctx, beta, d)});
    std::string sp = ctx.EmitTemp("Softplus", {bx});
    if (beta != 1.0) sp = ctx.EmitTemp("Div", {sp, F(ctx, beta, d)});
    ctx.Emit("Where", {ctx.EmitTemp("Greater", {bx, F(ctx, threshold, d)}), in, sp}, {out});
  } else {
    return Status::Unsupported("'activation' lowering does not know canonical op '" + c + "'");
  }
  return Status::Ok();
}

// --- binary -----------------------------------------------------------------------------------------

Status LowerElementwiseBinary(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const std::string& c = ctx.canonical();
  const v1::Arg* a = call.Get("input");
  const v1::Arg* b = call.Get("other");
  if (!a || !b) return Status::Unsupported("missing operand");
  if (!HasTensor(*a) && !HasTensor(*b)) return Status::Unsupported("neither operand is a tensor");
  const bool compare = c == "equal" || c == "not_equal" || c == "less" || c == "less_equal" ||
                       c == "greater" || c == "greater_equal";
  const bool logical = c == "logical_and" || c == "logical_or" || c == "logical_xor" ||
                       ((c == "bitwise_and" || c == "bitwise_or" || c == "bitwise_xor") &&
                        ctx.DType(result) == v1::BOOL);
  v1::DType d = logical ? v1::BOOL : compare ? PromotedDType(ctx, {a, b}) : ctx.DType(result);
  if (d == v1::DTYPE_UNSPECIFIED) d = PromotedDType(ctx, {a, b});
  if (d == v1::BOOL && (compare && c != "equal" && c != "not_equal")) d = v1::UINT8;
  std::string lhs, rhs;
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *a, d, &lhs));
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *b, d, &rhs));
  // An in-place comparison or logical op (x.ge_(y), x.logical_xor_(y)) writes its 0/1 result in
  // x's dtype: the bool result is cast to the recorded one.
  const v1::DType rd = ctx.DType(result);
  const bool cast_out = (compare || logical) && rd != v1::BOOL && rd != v1::DTYPE_UNSPECIFIED;
  const std::string out = cast_out ? ctx.Temp("bool") : ctx.Out(result);
  auto finish = [&]() {
    if (!cast_out) return;
    onnx::NodeProto* n = ctx.Emit("Cast", {out}, {ctx.Out(result)});
    SetAttr(n, "to", static_cast<int64_t>(OnnxElemType(rd)));
  };
  static const std::pair<std::string_view, std::string_view> kOps[] = {
      {"equal", "Equal"},     {"less", "Less"},         {"less_equal", "LessOrEqual"},
      {"greater", "Greater"}, {"greater_equal", "GreaterOrEqual"},
      {"logical_and", "And"}, {"logical_or", "Or"},     {"logical_xor", "Xor"},
      {"bitwise_and", "And"}, {"bitwise_or", "Or"},     {"bitwise_xor", "Xor"},
      {"maximum", "Max"},     {"minimum", "Min"},       {"fmax", "Max"},  {"fmin", "Min"},
  };
  if (c == "not_equal") {
    ctx.Emit("Not", {ctx.EmitTemp("Equal", {lhs, rhs})}, {out});
    finish();
    return Status::Ok();
  }
  // np.fmax/np.fmin ignore a NaN operand (the other one is the result; NaN only where both are):
  // Max/Min propagate it.
  if ((c == "fmax" || c == "fmin") && IsFloating(d)) {
    const std::string m = ctx.EmitTemp(c == "fmax" ? "Max" : "Min", {lhs, rhs});
    const std::string lhs_b = ctx.EmitTemp("Expand", {lhs, ctx.EmitTemp("Shape", {m})});
    const std::string rhs_b = ctx.EmitTemp("Expand", {rhs, ctx.EmitTemp("Shape", {m})});
    const std::string r = ctx.EmitTemp("Where", {ctx.EmitTemp("IsNaN", {rhs_b}), lhs_b, m});
    ctx.Emit("Where", {ctx.EmitTemp("IsNaN", {lhs_b}), rhs_b, r}, {out});
    return Status::Ok();
  }
  if ((c == "bitwise_and" || c == "bitwise_or" || c == "bitwise_xor") && d != v1::BOOL) {
    return Status::Unsupported(c + " of integers needs opset 18 (Bitwise ops)");
  }
  for (const auto& [name, op] : kOps) {
    if (c == name) {
      ctx.Emit(op, {lhs, rhs}, {out});
      finish();
      return Status::Ok();
    }
  }
  if (c == "remainder" || c == "fmod") {
    if (c == "fmod" || !IsFloating(d)) {
      auto* n = ctx.Emit("Mod", {lhs, rhs}, {out});
      SetAttr(n, "fmod", int64_t{c == "fmod" || IsFloating(d) ? 1 : 0});
      return Status::Ok();
    }
    // Python's float remainder has the divisor's sign: a - floor(a / b) * b.
    std::string q = ctx.EmitTemp("Floor", {ctx.EmitTemp("Div", {lhs, rhs})});
    ctx.Emit("Sub", {lhs, ctx.EmitTemp("Mul", {q, rhs})}, {out});
    return Status::Ok();
  }
  if (c == "hypot") {
    std::string s = ctx.EmitTemp("Add", {ctx.EmitTemp("Mul", {lhs, lhs}), ctx.EmitTemp("Mul", {rhs, rhs})});
    ctx.Emit("Sqrt", {s}, {out});
    return Status::Ok();
  }
  return Status::Unsupported("'elementwise_binary' lowering does not know canonical op '" + c + "'");
}

namespace {

// torch.max/torch.min(input, dim, keepdim=False): (values, indices). The index is the first extreme
// along dim, as torch returns it; along a run holding a NaN it is the first NaN (torch propagates
// NaN: the value is NaN and the index points at it; ONNX ArgMax ignores NaN). The value is read at
// that index (GatherElements), so values and indices always agree.
Status LowerMinMaxOverDim(const Node& node, const BoundCall& call, LoweringContext& ctx, bool is_max,
                          v1::ArgList items) {
  if (items.items_size() == 0) *items.add_items() = *call.Get("dim");   // torch.max(x, dim=1)
  ValueId x;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  std::vector<ValueId> results;
  ForEachTensor(node.result, [&](const v1::TensorRef& t) { results.push_back(t.value()); });
  if (results.size() != 2) return Status::Unsupported("torch.max/min over a dim without (values, indices)");
  if (items.items(0).kind_case() != v1::Arg::kI) {
    return Status::Unsupported("torch.max/min with dim " + ArgToString(items.items(0), true));
  }
  bool keepdim = call.Bool("keepdim").value_or(false);
  if (items.items_size() == 2) {
    if (items.items(1).kind_case() != v1::Arg::kB) {
      return Status::Unsupported("torch.max/min with keepdim " + ArgToString(items.items(1), true));
    }
    keepdim = items.items(1).b();
  } else if (items.items_size() > 2) {
    return Status::Unsupported("torch.max/min with more than (dim, keepdim)");
  }
  const int rank = ctx.Rank(x);
  if (rank == 0) return Status::Unsupported("torch.max/min over a dim of a 0-d tensor");
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(items.items(0).i(), rank, &axis));
  const v1::DType d = ctx.DType(x);
  std::string in = ctx.In(x);
  std::string arg_in = d == v1::BOOL ? ctx.CastTo(in, d, v1::INT32) : in;
  auto arg = [&](const std::string& of, bool max) {
    onnx::NodeProto* n = nullptr;
    std::string r = ctx.EmitTemp(max ? "ArgMax" : "ArgMin", {of}, &n);
    SetAttr(n, "axis", axis);
    SetAttr(n, "keepdims", int64_t{1});
    return r;
  };
  std::string idx = arg(arg_in, is_max);
  if (IsFloating(d)) {
    const std::string nan = ctx.CastTo(ctx.EmitTemp("IsNaN", {in}), v1::BOOL, v1::INT32);
    onnx::NodeProto* any = nullptr;
    std::string has_nan;
    if (ctx.opset() >= 18) {
      has_nan = ctx.EmitTemp("ReduceMax", {nan, ctx.Int64s({axis})}, &any);
    } else {
      has_nan = ctx.EmitTemp("ReduceMax", {nan}, &any);
      SetAttr(any, "axes", std::vector<int64_t>{axis});
    }
    SetAttr(any, "keepdims", int64_t{1});
    has_nan = ctx.CastTo(has_nan, v1::INT32, v1::BOOL);
    idx = ctx.EmitTemp("Where", {has_nan, arg(nan, true), idx});
  }
  onnx::NodeProto* g = nullptr;
  const std::string val = ctx.EmitTemp("GatherElements", {in, idx}, &g);
  SetAttr(g, "axis", axis);
  const v1::DType di = ctx.DType(results[1]);
  const std::string idx_out = di == v1::INT64 || di == v1::DTYPE_UNSPECIFIED ? idx : ctx.CastTo(idx, v1::INT64, di);
  if (keepdim) {
    ctx.Emit("Identity", {val}, {ctx.Out(results[0])});
    ctx.Emit("Identity", {idx_out}, {ctx.Out(results[1])});
  } else {
    ctx.Emit("Squeeze", {val, ctx.Int64s({axis})}, {ctx.Out(results[0])});
    ctx.Emit("Squeeze", {idx_out, ctx.Int64s({axis})}, {ctx.Out(results[1])});
  }
  return Status::Ok();
}

}  // namespace

// torch.max/torch.min(input, *args): with a tensor argument the elementwise maximum/minimum;
// with none, the reduction over every element; with a dim, (values, indices) over that dim.
Status LowerMinMaxOverload(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  const bool is_max = ctx.canonical() == "max_or_maximum";
  const v1::Arg* args = call.Get("args");
  const int n = args && args->kind_case() == v1::Arg::kList ? args->list().items_size() : 0;
  BoundCall c = call;
  if (n == 1 && args->list().items(0).kind_case() == v1::Arg::kTensor) {
    c.Set("other", args->list().items(0));
    ctx.SetCanonical(is_max ? "maximum" : "minimum");
    return LowerElementwiseBinary(node, c, ctx);
  }
  if (n == 0 && !call.IsNone("dim")) return LowerMinMaxOverDim(node, call, ctx, is_max, v1::ArgList());
  if (n == 0) {
    ctx.SetCanonical(is_max ? "max" : "min");
    return LowerReduce(node, c, ctx);
  }
  if (n >= 1 && call.IsNone("dim")) return LowerMinMaxOverDim(node, call, ctx, is_max, args->list());
  return Status::Unsupported("torch.max/min with arguments " + ArgToString(*args, true));
}

// clip(input, min, max): numbers, tensors or None -> Max/Min (ONNX Clip takes only 0-d bounds).
Status LowerClip(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  v1::DType d = ctx.DType(result);
  if (d == v1::DTYPE_UNSPECIFIED) d = ctx.DType(x);
  std::string cur = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  const std::string out = ctx.Out(result);
  int stages = !call.IsNone("min") + !call.IsNone("max");
  if (stages == 0) {
    ctx.Emit("Identity", {cur}, {out});
    return Status::Ok();
  }
  for (const char* bound : {"min", "max"}) {
    if (call.IsNone(bound)) continue;
    std::string v;
    IVY_RETURN_IF_ERROR(OperandAs(ctx, *call.Get(bound), d, &v));
    const char* op = std::string_view(bound) == "min" ? "Max" : "Min";
    if (--stages == 0) ctx.Emit(op, {cur, v}, {out});
    else cur = ctx.EmitTemp(op, {cur, v});
  }
  return Status::Ok();
}

// where(condition, input, other); numbers allowed for input/other.
Status LowerWhere(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId cond, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "condition", &cond));
  if (call.IsNone("input") && call.IsNone("other")) {   // where(cond): the indices where cond holds
    BoundCall c = call;
    c.Set("input", call.Get("condition") ? *call.Get("condition") : v1::Arg());
    ctx.SetCanonical("nonzero");
    return LowerNonzero(node, c, ctx);
  }
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* a = call.Get("input");
  const v1::Arg* b = call.Get("other");
  if (!a || !b || call.IsNone("input") || call.IsNone("other")) {
    return Status::Unsupported("where with a condition and one value");
  }
  v1::DType d = ctx.DType(result);
  if (d == v1::DTYPE_UNSPECIFIED) d = PromotedDType(ctx, {a, b});
  std::string lhs, rhs;
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *a, d, &lhs));
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *b, d, &rhs));
  EmitWhere(ctx, ctx.CastTo(ctx.In(cond), ctx.DType(cond), v1::BOOL), lhs, rhs, d, ctx.Out(result));
  return Status::Ok();
}

// lax.select_n(which, *cases): which picks cases[which]; a bool `which` picks case 1 where True.
Status LowerSelectN(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId which, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "which", &which));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* cases = call.Get("cases");
  const v1::ArgList* items = cases && cases->kind_case() == v1::Arg::kList ? &cases->list()
                             : cases && cases->kind_case() == v1::Arg::kTuple ? &cases->tuple() : nullptr;
  if (!items || items->items_size() != 2) return Status::Unsupported("select_n with other than two cases");
  const v1::DType d = ctx.DType(result);
  std::string c0, c1;
  IVY_RETURN_IF_ERROR(OperandAs(ctx, items->items(0), d, &c0));
  IVY_RETURN_IF_ERROR(OperandAs(ctx, items->items(1), d, &c1));
  EmitWhere(ctx, ctx.CastTo(ctx.In(which), ctx.DType(which), v1::BOOL), c1, c0, d, ctx.Out(result));
  return Status::Ok();
}

// Every cast spelling (.to(dtype), .to(dtype=...), .float(), .type_as(t), astype, convert_element_type,
// .to(other_tensor), .cpu()): the recorded result dtype says what the cast made.
Status LowerCast(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType to = ctx.DType(result);
  if (OnnxElemType(to) == 0) return Status::Unsupported(std::string("a cast to ") + DTypeName(to));
  std::string in = ctx.In(x);
  if (ctx.DType(x) == to) {
    ctx.Emit("Identity", {in}, {ctx.Out(result)});
  } else {
    auto* n = ctx.Emit("Cast", {in}, {ctx.Out(result)});
    SetAttr(n, "to", static_cast<int64_t>(OnnxElemType(to)));
  }
  return Status::Ok();
}

}  // namespace onnx_export
}  // namespace ivytrace
