// The lowering registry, the generic op_type lowering, shared helpers, and the elementwise and
// simple lowerings (binary arithmetic, gelu, softmax, identity, dropout, factories).
#include <cmath>
#include <string_view>
#include <utility>

#include "core/export/onnx/lowerings.h"
#include "core/ir/arg.h"

namespace ivytrace {
namespace onnx_export {

// --- helpers -------------------------------------------------------------------------------------

Status SingleResult(const Node& node, ValueId* out) {
  auto r = LoweringContext::ResultTensor(node);
  if (!r) return Status::Unsupported("the call does not return a single tensor");
  *out = *r;
  return Status::Ok();
}

std::vector<ValueId> ResultTensors(const Node& node) {
  std::vector<ValueId> r;
  ForEachTensor(node.result, [&](const v1::TensorRef& t) { r.push_back(t.value()); });
  return r;
}

bool FromTorch(const Node& node) { return node.op.rfind("torch.", 0) == 0; }

Status TensorParam(const BoundCall& call, const char* param, ValueId* out) {
  auto t = call.Tensor(param);
  if (!t) {
    const v1::Arg* a = call.Get(param);
    return Status::Unsupported(std::string("argument '") + param + "' is " +
                               (a ? ArgToString(*a, true) : std::string("missing")) +
                               ", expected a tensor");
  }
  *out = *t;
  return Status::Ok();
}

Status NormalizeAxis(int64_t axis, int rank, int64_t* out) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= std::max(rank, 1)) {
    return Status::Unsupported("dim " + std::to_string(axis) + " is out of range for a tensor of rank " +
                               std::to_string(rank));
  }
  *out = a;
  return Status::Ok();
}

std::optional<v1::DType> ArgDType(const v1::Arg& arg) {
  if (arg.kind_case() == v1::Arg::kDtype && arg.dtype() != v1::DTYPE_UNSPECIFIED) return arg.dtype();
  if (arg.kind_case() == v1::Arg::kSymbol) {
    static const std::pair<std::string_view, v1::DType> kNames[] = {
        {"torch.float32", v1::FLOAT32}, {"torch.float", v1::FLOAT32},   {"torch.float64", v1::FLOAT64},
        {"torch.double", v1::FLOAT64},  {"torch.float16", v1::FLOAT16}, {"torch.half", v1::FLOAT16},
        {"torch.bfloat16", v1::BFLOAT16}, {"torch.int64", v1::INT64},   {"torch.long", v1::INT64},
        {"torch.int32", v1::INT32},     {"torch.int", v1::INT32},       {"torch.int16", v1::INT16},
        {"torch.int8", v1::INT8},       {"torch.uint8", v1::UINT8},     {"torch.bool", v1::BOOL},
        // NumPy's dtypes as the NumPy and JAX recorders spell them (np.zeros(n, dtype=np.float32)).
        {"numpy.float32", v1::FLOAT32}, {"numpy.float64", v1::FLOAT64}, {"numpy.float16", v1::FLOAT16},
        {"numpy.int64", v1::INT64},     {"numpy.int32", v1::INT32},     {"numpy.int16", v1::INT16},
        {"numpy.int8", v1::INT8},       {"numpy.uint8", v1::UINT8},     {"numpy.bool_", v1::BOOL},
        {"numpy.bool", v1::BOOL},
    };
    for (const auto& [n, d] : kNames) {
      if (n == arg.symbol()) return d;
    }
  }
  return std::nullopt;
}

// --- binary arithmetic ---------------------------------------------------------------------------

namespace {

// The dtype torch gives `a <op> b` when the recorded result has none: the tensor's dtype, or the
// default float dtype when a Python float meets an integer tensor (and for true division).
v1::DType FallbackDType(const LoweringContext& ctx, const v1::Arg& a, const v1::Arg& b, bool true_div) {
  v1::DType tensor_dtype = v1::DTYPE_UNSPECIFIED;
  bool float_scalar = false;
  for (const v1::Arg* arg : {&a, &b}) {
    if (arg->kind_case() == v1::Arg::kTensor) {
      v1::DType d = ctx.DType(arg->tensor().value());
      if (tensor_dtype == v1::DTYPE_UNSPECIFIED || (IsFloating(d) && !IsFloating(tensor_dtype))) tensor_dtype = d;
    } else if (arg->kind_case() == v1::Arg::kF) {
      float_scalar = true;
    }
  }
  if (!IsFloating(tensor_dtype) && (float_scalar || true_div)) return v1::FLOAT32;
  return tensor_dtype;
}

// `arg` (a tensor or a Python number) as an ONNX value of `dtype`.
Status Operand(LoweringContext& ctx, const v1::Arg& arg, v1::DType dtype, double scale, std::string* out) {
  if (arg.kind_case() == v1::Arg::kTensor) {
    ValueId v = arg.tensor().value();
    *out = ctx.CastTo(ctx.In(v), ctx.DType(v), dtype);
    if (scale != 1.0) {
      Number s = IsFloating(dtype) ? Number::Float(scale) : Number::Int(static_cast<int64_t>(scale));
      *out = ctx.EmitTemp("Mul", {*out, ctx.Scalar(s, dtype)});
    }
    return Status::Ok();
  }
  Number n;
  if (arg.kind_case() == v1::Arg::kF) {
    n = Number::Float(arg.f() * scale);
  } else if (auto i = AsInt(arg)) {
    n = scale == 1.0 ? Number::Int(*i) : Number::Float(static_cast<double>(*i) * scale);
    if (!IsFloating(dtype)) n = Number::Int(static_cast<int64_t>(n.AsDouble()));
  } else {
    return Status::Unsupported("operand " + ArgToString(arg, true) + " is neither a tensor nor a real number");
  }
  *out = ctx.Scalar(n, dtype);
  return Status::Ok();
}

}  // namespace

Status LowerBinary(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  const std::string& canonical = ctx.canonical();
  std::string op_type;
  if (canonical == "add") op_type = "Add";
  else if (canonical == "sub") op_type = "Sub";
  else if (canonical == "mul") op_type = "Mul";
  else if (canonical == "div") op_type = "Div";
  else if (canonical == "pow") op_type = "Pow";
  else return Status::Unsupported("'binary' lowering does not know canonical op '" + canonical + "'");

  const v1::Arg* a = call.Get("input");
  const v1::Arg* b = call.Get(canonical == "pow" ? "exponent" : "other");
  if (!a || !b) return Status::Unsupported("missing operand");
  if (!HasTensor(*a) && !HasTensor(*b)) return Status::Unsupported("neither operand is a tensor");
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));

  std::string rounding;
  if (canonical == "div" && !call.IsNone("rounding_mode")) {
    const v1::Arg* r = call.Get("rounding_mode");
    if (r->kind_case() != v1::Arg::kS || (r->s() != "trunc" && r->s() != "floor")) {
      return Status::Unsupported("div rounding_mode " + ArgToString(*r, true) + " is not supported");
    }
    rounding = r->s();
  }
  v1::DType dtype = ctx.DType(result);
  if (dtype == v1::DTYPE_UNSPECIFIED) dtype = FallbackDType(ctx, *a, *b, canonical == "div" && rounding.empty());
  if (dtype == v1::BOOL || (!IsFloating(dtype) && dtype != v1::INT8 && dtype != v1::INT16 &&
                            dtype != v1::INT32 && dtype != v1::INT64 && dtype != v1::UINT8)) {
    return Status::Unsupported(canonical + " on " + DTypeName(dtype) + " tensors is not supported");
  }

  double alpha = 1.0;
  if ((canonical == "add" || canonical == "sub") && call.Has("alpha")) {
    auto al = call.Double("alpha");
    if (!al) return Status::Unsupported("alpha " + ArgToString(*call.Get("alpha"), true) + " is not a number");
    alpha = *al;
  }
  // bfloat16: torch rounds each tensor operand to bfloat16, computes in float32 and rounds the
  // result once; onnxruntime's CPU provider has no bfloat16 kernel for any of these ops (Falcon's
  // ALiBi multiplies bfloat16 slopes). A Python number operand (and alpha) is rounded to bfloat16
  // too for add, sub and pow, and kept in float32 for mul and div, as torch's CPU kernels do.
  const bool via_float = dtype == v1::BFLOAT16;
  const v1::DType compute = via_float ? v1::FLOAT32 : dtype;
  const bool round_numbers = canonical == "add" || canonical == "sub" || canonical == "pow";
  auto operand = [&](const v1::Arg& arg, double scale, std::string* out) -> Status {
    if (!via_float) return Operand(ctx, arg, compute, scale, out);
    if (arg.kind_case() != v1::Arg::kTensor) {
      IVY_RETURN_IF_ERROR(Operand(ctx, arg, round_numbers ? dtype : compute, scale, out));
      if (round_numbers) *out = ctx.CastTo(*out, dtype, compute);
      return Status::Ok();
    }
    IVY_RETURN_IF_ERROR(Operand(ctx, arg, dtype, 1.0, out));
    *out = ctx.CastTo(*out, dtype, compute);
    if (scale != 1.0) {
      const std::string s = ctx.Scalar(Number::Float(scale), round_numbers ? dtype : compute);
      *out = ctx.EmitTemp("Mul", {*out, round_numbers ? ctx.CastTo(s, dtype, compute) : s});
    }
    return Status::Ok();
  };
  std::string lhs, rhs;
  IVY_RETURN_IF_ERROR(operand(*a, 1.0, &lhs));
  IVY_RETURN_IF_ERROR(operand(*b, alpha, &rhs));
  const std::string result_name = ctx.Out(result);
  const std::string out = via_float ? ctx.Temp("bf16_via_f32") : result_name;

  if (rounding.empty()) {
    ctx.Emit(op_type, {lhs, rhs}, {out});
  } else if (IsFloating(dtype)) {
    std::string q = ctx.EmitTemp("Div", {lhs, rhs});
    if (rounding == "floor") {
      // As torch (div_floor_floating) and Python's float // compute it, not floor(a / b): the
      // rounded quotient can land on the next integer (1.0 // 0.1 is 9, floor(1.0 / 0.1) is 10).
      //   mod = fmod(a, b); div = (a - mod) / b, less 1 where mod and b differ in sign;
      //   floor(div), plus 1 where div is more than 0.5 above it; 0 with a / b's sign where
      //   div is 0; a / b where b is 0.
      auto f = [&](double v) { return ctx.Scalar(Number::Float(v), compute); };
      onnx::NodeProto* m = nullptr;
      const std::string mod = ctx.EmitTemp("Mod", {lhs, rhs}, &m);
      SetAttr(m, "fmod", int64_t{1});
      const std::string div0 = ctx.EmitTemp("Div", {ctx.EmitTemp("Sub", {lhs, mod}), rhs});
      const std::string signs_differ = ctx.EmitTemp("Xor", {ctx.EmitTemp("Less", {rhs, f(0)}),
                                                            ctx.EmitTemp("Less", {mod, f(0)})});
      const std::string adjust = ctx.EmitTemp("And", {ctx.EmitTemp("Not", {ctx.EmitTemp("Equal", {mod, f(0)})}),
                                                      signs_differ});
      const std::string div = ctx.EmitTemp("Where", {adjust, ctx.EmitTemp("Sub", {div0, f(1)}), div0});
      const std::string fl = ctx.EmitTemp("Floor", {div});
      const std::string up = ctx.EmitTemp("Greater", {ctx.EmitTemp("Sub", {div, fl}), f(0.5)});
      const std::string rounded = ctx.EmitTemp("Where", {up, ctx.EmitTemp("Add", {fl, f(1)}), fl});
      const std::string zero = ctx.EmitTemp("Mul", {q, f(0)});   // 0 with q's sign
      const std::string nonzero_b = ctx.EmitTemp("Where", {ctx.EmitTemp("Equal", {div, f(0)}), zero, rounded});
      ctx.Emit("Where", {ctx.EmitTemp("Equal", {rhs, f(0)}), q, nonzero_b}, {out});
    } else {  // trunc(q) = sign(q) * floor(|q|)
      std::string mag = ctx.EmitTemp("Floor", {ctx.EmitTemp("Abs", {q})});
      ctx.Emit("Mul", {ctx.EmitTemp("Sign", {q}), mag}, {out});
    }
  } else if (rounding == "trunc") {
    ctx.Emit("Div", {lhs, rhs}, {out});  // integer Div truncates
  } else {  // floor division of integers: (a - a mod b) / b, where Mod(fmod=0) has b's sign
    std::string mod = ctx.EmitTemp("Mod", {lhs, rhs});
    ctx.Emit("Div", {ctx.EmitTemp("Sub", {lhs, mod}), rhs}, {out});
  }
  if (via_float) {
    auto* cast = ctx.Emit("Cast", {out}, {result_name});
    SetAttr(cast, "to", static_cast<int64_t>(OnnxElemType(dtype)));
  }
  return Status::Ok();
}

// --- activations ---------------------------------------------------------------------------------

Status LowerGelu(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(x);
  if (!IsFloating(d)) return Status::Unsupported(std::string("gelu on ") + DTypeName(d) + " tensors");
  std::string approximate = "none";
  if (const v1::Arg* a = call.Get("approximate"); a && a->kind_case() == v1::Arg::kS) approximate = a->s();
  const std::string in = ctx.In(x);
  std::string inner;
  if (approximate == "none") {  // x * 0.5 * (1 + erf(x / sqrt(2)))  (opset 17 has no Gelu)
    inner = ctx.EmitTemp("Erf", {ctx.EmitTemp("Div", {in, ctx.Scalar(Number::Float(std::sqrt(2.0)), d)})});
  } else if (approximate == "tanh") {  // x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
    std::string cube = ctx.EmitTemp("Mul", {ctx.EmitTemp("Mul", {in, in}), in});
    std::string poly = ctx.EmitTemp("Add", {in, ctx.EmitTemp("Mul", {cube, ctx.Scalar(Number::Float(0.044715), d)})});
    const double k = std::sqrt(2.0 / M_PI);
    inner = ctx.EmitTemp("Tanh", {ctx.EmitTemp("Mul", {poly, ctx.Scalar(Number::Float(k), d)})});
  } else {
    return Status::Unsupported("gelu approximate='" + approximate + "'");
  }
  std::string one_plus = ctx.EmitTemp("Add", {inner, ctx.Scalar(Number::Float(1.0), d)});
  std::string scaled = ctx.EmitTemp("Mul", {in, one_plus});
  ctx.Emit("Mul", {scaled, ctx.Scalar(Number::Float(0.5), d)}, {ctx.Out(result)});
  return Status::Ok();
}

Status LowerSoftmax(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const int rank = ctx.Rank(x);
  int64_t dim;
  if (call.IsNone("dim")) {
    dim = (rank == 0 || rank == 1 || rank == 3) ? 0 : 1;  // torch's implicit-dim rule
  } else {
    auto d = call.Int("dim");
    if (!d) return Status::Unsupported("dim " + ArgToString(*call.Get("dim"), true) + " is not an int");
    dim = *d;
  }
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(dim, rank, &axis));
  std::string in = ctx.In(x);
  v1::DType d = ctx.DType(x);
  if (!call.IsNone("dtype")) {
    auto want = ArgDType(*call.Get("dtype"));
    if (!want) return Status::Unsupported("dtype " + ArgToString(*call.Get("dtype"), true));
    in = ctx.CastTo(in, d, *want);
    d = *want;
  }
  if (!IsFloating(d)) in = ctx.CastTo(in, d, ctx.DType(result));
  if (ctx.canonical() == "softmin") in = ctx.EmitTemp("Neg", {in});  // softmin(x) = softmax(-x)
  auto* n = ctx.Emit(ctx.canonical() == "log_softmax" ? "LogSoftmax" : "Softmax", {in}, {ctx.Out(result)});
  SetAttr(n, "axis", axis);
  return Status::Ok();
}

// --- identity-like -------------------------------------------------------------------------------

Status LowerIdentity(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  ctx.Emit("Identity", {ctx.In(x)}, {ctx.Out(result)});
  return Status::Ok();
}

Status LowerDropout(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  auto training = call.Bool("training");
  auto p = call.Double("p");
  if (training.value_or(true) && p.value_or(1.0) != 0.0) {
    return Status::Unsupported(
        "dropout in training mode is random (record the model in eval mode, or pass training=False)");
  }
  return LowerIdentity(node, call, ctx);
}

// --- factories -----------------------------------------------------------------------------------

namespace {

// Flattens nested lists of Python numbers; `shape` gets the nesting sizes.
Status FlattenData(const v1::Arg& arg, size_t depth, std::vector<int64_t>* shape, std::vector<Number>* out,
                   bool* any_float, bool* all_bool) {
  const v1::ArgList* items = nullptr;
  if (arg.kind_case() == v1::Arg::kList) items = &arg.list();
  if (arg.kind_case() == v1::Arg::kTuple) items = &arg.tuple();
  if (items) {
    if (shape->size() == depth) {
      shape->push_back(items->items_size());
    } else if (shape->size() < depth || (*shape)[depth] != items->items_size()) {
      return Status::Unsupported("torch.tensor data is not rectangular");
    }
    for (const auto& it : items->items()) {
      IVY_RETURN_IF_ERROR(FlattenData(it, depth + 1, shape, out, any_float, all_bool));
    }
    return Status::Ok();
  }
  if (shape->size() != depth) return Status::Unsupported("torch.tensor data is not rectangular");
  if (arg.kind_case() == v1::Arg::kF) {
    *any_float = true;
    *all_bool = false;
    out->push_back(Number::Float(arg.f()));
  } else if (arg.kind_case() == v1::Arg::kI || arg.kind_case() == v1::Arg::kB) {
    if (arg.kind_case() == v1::Arg::kI) *all_bool = false;
    out->push_back(Number::Int(*AsInt(arg)));
  } else {
    return Status::Unsupported("torch.tensor data holds " + ArgToString(arg, true));
  }
  return Status::Ok();
}

}  // namespace

Status LowerFactory(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  std::optional<v1::DType> dtype;
  if (!call.IsNone("dtype")) {
    dtype = ArgDType(*call.Get("dtype"));
    if (!dtype) return Status::Unsupported("dtype " + ArgToString(*call.Get("dtype"), true));
  } else if (ctx.DType(result) != v1::DTYPE_UNSPECIFIED) {
    dtype = ctx.DType(result);
  }
  const std::string& canonical = ctx.canonical();
  if (canonical == "zeros" || canonical == "ones") {
    std::string shape;
    if (const v1::Arg* s = call.Get("size")) {
      IVY_RETURN_IF_ERROR(DynamicInts(ctx, *s, &shape));  // zeros(b, t): sizes read from shapes
    } else {
      shape = ctx.Int64s({});
    }
    const v1::DType d = dtype.value_or(v1::FLOAT32);
    onnx::TensorProto value;
    value.set_data_type(OnnxElemType(d));
    value.add_dims(1);
    std::string raw;
    IVY_RETURN_IF_ERROR(EncodeNumbers({Number::Int(canonical == "ones" ? 1 : 0)}, d, &raw));
    value.set_raw_data(raw);
    auto* n = ctx.Emit("ConstantOfShape", {shape}, {ctx.Out(result)});
    SetAttr(n, "value", value);
    return Status::Ok();
  }
  if (canonical != "asarray") return Status::Unsupported("'factory' lowering does not know '" + canonical + "'");
  // torch.tensor/np.asarray take `data`; t.numpy() its `input`; torch.from_numpy/as_tensor bind
  // positionally (*args).
  const v1::Arg* data = call.Get("data");
  if (!data) data = call.Get("input");
  if (!data) {
    if (const v1::Arg* args = call.Get("args"); args && args->kind_case() == v1::Arg::kList && args->list().items_size() > 0) {
      data = &args->list().items(0);
    }
  }
  if (!data) return Status::Unsupported("asarray without data");
  if (data->kind_case() == v1::Arg::kTensor) {  // a copy
    ValueId src = data->tensor().value();
    ctx.Emit("Identity", {ctx.CastTo(ctx.In(src), ctx.DType(src), ctx.DType(result) != v1::DTYPE_UNSPECIFIED ? ctx.DType(result) : dtype.value_or(ctx.DType(src)))},
             {ctx.Out(result)});
    return Status::Ok();
  }
  auto int_items = [&](const v1::Arg& list) {   // only ints and 0-d int values: DynamicInts reads them
    for (const auto& it : list.kind_case() == v1::Arg::kList ? list.list().items() : list.tuple().items()) {
      if (it.kind_case() == v1::Arg::kI) continue;
      if (it.kind_case() != v1::Arg::kTensor) return false;
      const ValueId v = it.tensor().value();
      const v1::DType vd = ctx.DType(v);
      if (ctx.Rank(v) != 0 || IsFloating(vd) || vd == v1::SYM_FLOAT || vd == v1::SYM_BOOL || vd == v1::BOOL) return false;
    }
    return true;
  };
  if (HasTensor(*data) && IsSymbolicArg(ctx, *data) &&
      (data->kind_case() == v1::Arg::kList || data->kind_case() == v1::Arg::kTuple) && ctx.Rank(result) == 1 &&
      int_items(*data)) {
    // torch.tensor([b, t]): shape-derived ints, computed at run time.
    std::string ints;
    IVY_RETURN_IF_ERROR(DynamicInts(ctx, *data, &ints));
    ctx.Emit("Identity", {ctx.CastTo(ints, v1::INT64, ctx.DType(result))}, {ctx.Out(result)});
    return Status::Ok();
  }
  if (HasTensor(*data) && (data->kind_case() == v1::Arg::kList || data->kind_case() == v1::Arg::kTuple) &&
      ctx.Rank(result) == 1 && ctx.DType(result) != v1::DTYPE_UNSPECIFIED) {
    // np.array([x.sum(), idx.size, 2.0]): numbers, shape-derived values and 0-d tensors, each cast
    // to the result's dtype and concatenated.
    const v1::DType d = ctx.DType(result);
    std::vector<std::string> parts;
    const auto& items = data->kind_case() == v1::Arg::kList ? data->list().items() : data->tuple().items();
    for (const auto& it : items) {
      if (it.kind_case() == v1::Arg::kTensor) {
        const ValueId v = it.tensor().value();
        if (ctx.Rank(v) != 0) return Status::Unsupported("an array of a list holding tensors that are not 0-d");
        v1::DType from = ctx.DType(v);
        if (from == v1::SYM_INT) from = v1::INT64;
        else if (from == v1::SYM_FLOAT) from = v1::FLOAT64;
        else if (from == v1::SYM_BOOL) from = v1::BOOL;
        if (OnnxElemType(from) == 0 || from == v1::COMPLEX64 || from == v1::COMPLEX128) {
          return Status::Unsupported("an array of a list holding a " + std::string(DTypeName(from)) + " value");
        }
        parts.push_back(ctx.Unsqueeze(ctx.CastTo(ctx.In(v), from, d), {0}));
      } else if (it.kind_case() == v1::Arg::kI || it.kind_case() == v1::Arg::kF || it.kind_case() == v1::Arg::kB) {
        const Number n = it.kind_case() == v1::Arg::kF ? Number::Float(it.f())
                         : it.kind_case() == v1::Arg::kI ? Number::Int(it.i()) : Number::Int(it.b() ? 1 : 0);
        parts.push_back(ctx.Unsqueeze(ctx.Scalar(n, d), {0}));
      } else {
        return Status::Unsupported("an array of a list holding " + ArgToString(it, true));
      }
    }
    onnx::NodeProto* c = nullptr;
    const std::string cat = ctx.EmitTemp("Concat", parts, &c);
    SetAttr(c, "axis", int64_t{0});
    ctx.Emit("Identity", {cat}, {ctx.Out(result)});
    return Status::Ok();
  }
  if (HasTensor(*data)) return Status::Unsupported("torch.tensor of a list holding tensors");
  std::vector<int64_t> shape;
  std::vector<Number> values;
  bool any_float = false, all_bool = true;
  IVY_RETURN_IF_ERROR(FlattenData(*data, 0, &shape, &values, &any_float, &all_bool));
  v1::DType d = dtype.value_or(any_float ? v1::FLOAT32 : (all_bool && !values.empty() ? v1::BOOL : v1::INT64));
  onnx::TensorProto value;
  value.set_data_type(OnnxElemType(d));
  for (int64_t s : shape) value.add_dims(s);
  std::string raw;
  IVY_RETURN_IF_ERROR(EncodeNumbers(values, d, &raw));
  value.set_raw_data(raw);
  auto* n = ctx.Emit("Constant", {}, {ctx.Out(result)});
  SetAttr(n, "value", value);
  return Status::Ok();
}

}  // namespace onnx_export
}  // namespace ivytrace
