// Shape arithmetic in ONNX: the `ivytrace.sym.*` ops (schemas/sym.textproto) and the int-list
// operands that may hold their values.
//
// A shape-derived Python int (x.shape[0], b * t, c // n_head) is a 0-d int64 tensor in the ONNX
// graph, computed from the inputs' shapes at run time: sym_size is Shape+Gather, the arithmetic is
// ONNX's integer arithmetic with Python's meaning (floor division and modulo take the divisor's
// sign), comparisons give 0-d bools. An op taking such an int in a size or bound (view(b, t, -1),
// expand(b, -1), arange(t), x[:, :t], ones(b)) builds its shape operand with DynamicInts, so the
// model follows the input's shape instead of the recorded one.
#include <algorithm>
#include <cmath>

#include "core/export/onnx/lowerings.h"
#include "core/ir/arg.h"

namespace ivytrace {
namespace onnx_export {

namespace {

bool IsSymValue(const LoweringContext& ctx, ValueId v) {
  const v1::DType d = ctx.DType(v);
  return d == v1::SYM_INT || d == v1::SYM_BOOL || d == v1::SYM_FLOAT;
}

// The plain dtype a sym value is held as in ONNX.
v1::DType PlainDType(v1::DType d) {
  return d == v1::SYM_INT ? v1::INT64 : d == v1::SYM_BOOL ? v1::BOOL : d == v1::SYM_FLOAT ? v1::FLOAT64 : d;
}

// A sym op's operand (a sym value or a Python int/bool/float) as a 0-d tensor of `dtype`.
Status SymOperand(LoweringContext& ctx, const v1::Arg* a, v1::DType dtype, std::string* out) {
  if (!a) return Status::Unsupported("missing operand");
  if (a->kind_case() == v1::Arg::kTensor) {
    const ValueId v = a->tensor().value();
    if (ctx.Rank(v) != 0) return Status::Unsupported("a shape-arithmetic operand that is not a scalar");
    *out = ctx.CastTo(ctx.In(v), PlainDType(ctx.DType(v)), dtype);
    return Status::Ok();
  }
  if (dtype == v1::FLOAT64) {
    const auto f = AsDouble(*a);
    if (!f) return Status::Unsupported("float arithmetic operand " + ArgToString(*a, true) + " is not a number");
    *out = ctx.Scalar(Number::Float(*f), dtype);
    return Status::Ok();
  }
  const auto i = AsInt(*a);
  if (!i) return Status::Unsupported("shape-arithmetic operand " + ArgToString(*a, true) + " is not an int");
  *out = ctx.Scalar(Number::Int(*i), dtype);
  return Status::Ok();
}

}  // namespace

bool IsSymbolicArg(const LoweringContext& ctx, const v1::Arg& arg) {
  bool sym = false;
  ForEachTensor(arg, [&](const v1::TensorRef& r) { sym = sym || IsSymValue(ctx, r.value()); });
  return sym;
}

std::optional<std::vector<const v1::Arg*>> SequenceItems(const v1::Arg& arg) {
  std::vector<const v1::Arg*> items;
  if (arg.kind_case() == v1::Arg::kList) {
    for (const auto& it : arg.list().items()) items.push_back(&it);
  } else if (arg.kind_case() == v1::Arg::kTuple) {
    for (const auto& it : arg.tuple().items()) items.push_back(&it);
  } else {
    return std::nullopt;
  }
  return items;
}

Status DynamicInts(LoweringContext& ctx, const v1::Arg& arg, std::string* out) {
  const std::vector<const v1::Arg*> items = SequenceItems(arg).value_or(std::vector<const v1::Arg*>{&arg});
  // Runs of constant ints become one initializer; each symbolic item a one-element tensor.
  std::vector<std::string> parts;
  std::vector<int64_t> run;
  auto flush = [&] {
    if (!run.empty()) parts.push_back(ctx.Int64s(run));
    run.clear();
  };
  for (const v1::Arg* it : items) {
    if (it->kind_case() == v1::Arg::kTensor) {
      const ValueId v = it->tensor().value();
      if (ctx.Rank(v) != 0 || IsFloating(ctx.DType(v)) || ctx.DType(v) == v1::SYM_BOOL ||
          ctx.DType(v) == v1::SYM_FLOAT) {
        return Status::Unsupported("a size " + ArgToString(*it, true) + " that is not an int");
      }
      flush();
      parts.push_back(ctx.Unsqueeze(ctx.CastTo(ctx.In(v), PlainDType(ctx.DType(v)), v1::INT64), {0}));
      continue;
    }
    const auto i = AsInt(*it);
    if (!i) return Status::Unsupported("a size " + ArgToString(*it, true) + " that is not an int");
    run.push_back(*i);
  }
  flush();
  if (parts.empty()) {
    *out = ctx.Int64s({});
  } else if (parts.size() == 1) {
    *out = parts[0];
  } else {
    onnx::NodeProto* n = nullptr;
    *out = ctx.EmitTemp("Concat", parts, &n);
    SetAttr(n, "axis", int64_t{0});
  }
  return Status::Ok();
}

// ivytrace.sym.size(input, dim): Shape + Gather of one dim, a 0-d int64.
Status LowerSymSize(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const auto dim = call.Int("dim");
  if (!dim) return Status::Unsupported("sym size: dim is not an int");
  int64_t d;
  IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, ctx.Rank(x), &d));
  auto* g = ctx.Emit("Gather", {ctx.EmitTemp("Shape", {ctx.In(x)}), ctx.Scalar(Number::Int(d), v1::INT64)},
                     {ctx.Out(result)});
  SetAttr(g, "axis", int64_t{0});
  return Status::Ok();
}

// ivytrace.sym.numel(input): Size.
Status LowerSymNumel(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  ctx.Emit("Size", {ctx.In(x)}, {ctx.Out(result)});
  return Status::Ok();
}

// The unary and binary shape arithmetic, with Python's meaning.
Status LowerSymArith(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const std::string& c = ctx.canonical();
  const bool logical = c == "sym_not" || c == "sym_and" || c == "sym_or";
  // Float arithmetic (a float argument of the traced function) is done in double, as Python does.
  bool floating = ctx.DType(result) == v1::SYM_FLOAT;
  for (const char* p : {"a", "b"}) {
    const v1::Arg* x = call.Get(p);
    if (!x) continue;
    if (x->kind_case() == v1::Arg::kTensor) floating = floating || ctx.DType(x->tensor().value()) == v1::SYM_FLOAT;
    else floating = floating || x->kind_case() == v1::Arg::kF;
  }
  const v1::DType d = logical ? v1::BOOL : floating ? v1::FLOAT64 : v1::INT64;
  std::string a, b;
  IVY_RETURN_IF_ERROR(SymOperand(ctx, call.Get("a"), d, &a));
  const bool unary = c == "sym_neg" || c == "sym_abs" || c == "sym_not";
  if (!unary) IVY_RETURN_IF_ERROR(SymOperand(ctx, call.Get("b"), d, &b));
  const std::string out = ctx.Out(result);
  if (floating && (c == "sym_truediv" || c == "sym_floordiv" || c == "sym_mod")) {
    // Python's float a // b is floor(a / b); a % b is a - floor(a / b) * b (the divisor's sign).
    if (c == "sym_truediv") {
      ctx.Emit("Div", {a, b}, {out});
    } else {
      const std::string q = ctx.EmitTemp("Floor", {ctx.EmitTemp("Div", {a, b})});
      if (c == "sym_floordiv") ctx.Emit("Identity", {q}, {out});
      else ctx.Emit("Sub", {a, ctx.EmitTemp("Mul", {q, b})}, {out});
    }
    return Status::Ok();
  }
  static const std::pair<std::string_view, std::string_view> kDirect[] = {
      {"sym_add", "Add"},   {"sym_sub", "Sub"},     {"sym_mul", "Mul"},     {"sym_pow", "Pow"},
      {"sym_min", "Min"},   {"sym_max", "Max"},     {"sym_eq", "Equal"},    {"sym_lt", "Less"},
      {"sym_le", "LessOrEqual"}, {"sym_gt", "Greater"}, {"sym_ge", "GreaterOrEqual"}, {"sym_and", "And"},
      {"sym_or", "Or"},
  };
  for (const auto& [name, op] : kDirect) {
    if (c == name) {
      ctx.Emit(op, {a, b}, {out});
      return Status::Ok();
    }
  }
  if (c == "sym_neg") ctx.Emit("Neg", {a}, {out});
  else if (c == "sym_abs") ctx.Emit("Abs", {a}, {out});
  else if (c == "sym_not") ctx.Emit("Not", {a}, {out});
  else if (c == "sym_ne") ctx.Emit("Not", {ctx.EmitTemp("Equal", {a, b})}, {out});
  else if (c == "sym_mod" || c == "sym_floordiv") {
    // Python's a % b has b's sign (Mod with fmod=0); a // b = (a - a % b) / b, which divides
    // exactly, so ONNX's truncating integer Div gives the floor.
    onnx::NodeProto* m = nullptr;
    std::string mod = c == "sym_mod" ? out : ctx.Temp("mod");
    m = ctx.Emit("Mod", {a, b}, {mod});
    SetAttr(m, "fmod", int64_t{0});
    if (c == "sym_floordiv") ctx.Emit("Div", {ctx.EmitTemp("Sub", {a, mod}), b}, {out});
  } else {
    return Status::Unsupported("no lowering for shape arithmetic '" + c + "'");
  }
  return Status::Ok();
}

bool IsSymbolicValue(const Graph& graph, ValueId v) {
  return v < graph.values.size() && (graph.values[v].dtype == v1::SYM_INT || graph.values[v].dtype == v1::SYM_BOOL ||
                                     graph.values[v].dtype == v1::SYM_FLOAT);
}

namespace {

// A guard's recorded value that is a (nested) list of numbers, as `t.tolist()` gives it: its
// leaves in row-major order and its nesting as a shape. False for anything else (a ragged list).
bool FlattenObserved(const v1::Arg& a, int depth, std::vector<int64_t>* shape, std::vector<const v1::Arg*>* leaves) {
  const auto k = a.kind_case();
  if (k == v1::Arg::kB || k == v1::Arg::kI || k == v1::Arg::kF) {
    if (depth != static_cast<int>(shape->size())) return false;
    leaves->push_back(&a);
    return true;
  }
  if (k != v1::Arg::kList && k != v1::Arg::kTuple) return false;
  const auto& items = k == v1::Arg::kList ? a.list().items() : a.tuple().items();
  if (depth == static_cast<int>(shape->size())) shape->push_back(items.size());
  else if ((*shape)[depth] != items.size()) return false;
  for (const auto& it : items) {
    if (!FlattenObserved(it, depth + 1, shape, leaves)) return false;
  }
  // An empty list has no leaves to fix the depth below it.
  return !items.empty() || depth + 1 == static_cast<int>(shape->size());
}

}  // namespace

bool GuardCheckable(const Graph& graph, const v1::Guard& guard) {
  if (!guard.has_tensor() || guard.tensor().value() >= graph.values.size()) return false;
  const Value& v = graph.values[guard.tensor().value()];
  const v1::DType d = v.dtype;
  if (OnnxElemType(d) == 0 || d == v1::COMPLEX64 || d == v1::COMPLEX128) return false;
  const auto k = guard.observed().kind_case();
  if (k == v1::Arg::kB || k == v1::Arg::kI || k == v1::Arg::kF) return true;
  // t.tolist(): a list whose nesting is the tensor's recorded rank.
  std::vector<int64_t> shape;
  std::vector<const v1::Arg*> leaves;
  return (k == v1::Arg::kList || k == v1::Arg::kTuple) && FlattenObserved(guard.observed(), 0, &shape, &leaves) &&
         shape.size() == v.shape.size();
}

namespace {

// A 0-d bool: whether the guard's value is what was recorded. bool(t), int(t), float(t) and
// t.item() read a one-element tensor: it is reshaped to 0-d, then compared.
// A 0-d bool that is true when the guard holds; `*negated`: it is false then instead (a recorded
// False is checked on the value itself, not through a Not).
// t.tolist() recorded as a list: the run-time shape equals the list's nesting and every element
// equals the recorded one (NaN matching NaN). The elements are compared in float64 when any was
// recorded as a float, else in int64 (bools as 0/1). A tensor of another size is compared after
// padding/cutting to the recorded size; its shape already fails the check.
std::string ListGuardOk(LoweringContext& ctx, const v1::Guard& g) {
  const ValueId v = g.tensor().value();
  const v1::DType d = PlainDType(ctx.DType(v));
  std::vector<int64_t> shape;
  std::vector<const v1::Arg*> leaves;
  FlattenObserved(g.observed(), 0, &shape, &leaves);
  const std::string t = ctx.In(v);
  auto all = [&](const std::string& bools) {   // a 1-D bool -> 0-d: every element true
    onnx::NodeProto* r = nullptr;
    std::string m = ctx.EmitTemp("ReduceMin", {ctx.CastTo(bools, v1::BOOL, v1::INT64)}, &r);
    SetAttr(r, "keepdims", int64_t{0});
    return ctx.CastTo(m, v1::INT64, v1::BOOL);
  };
  std::string ok = shape.empty() ? std::string()
                                 : all(ctx.EmitTemp("Equal", {ctx.EmitTemp("Shape", {t}), ctx.Int64s(shape)}));
  if (leaves.empty()) return ok.empty() ? ctx.EmitTemp("Equal", {ctx.EmitTemp("Size", {t}), ctx.Scalar(Number::Int(0), v1::INT64)}) : ok;
  const bool floats = std::any_of(leaves.begin(), leaves.end(), [](const v1::Arg* a) { return a->kind_case() == v1::Arg::kF; });
  const v1::DType cd = floats ? v1::FLOAT64 : v1::INT64;
  onnx::TensorProto want;
  want.set_data_type(OnnxElemType(cd));
  want.add_dims(static_cast<int64_t>(leaves.size()));
  for (const v1::Arg* a : leaves) {
    const double f = a->kind_case() == v1::Arg::kF ? a->f() : a->kind_case() == v1::Arg::kI ? static_cast<double>(a->i()) : (a->b() ? 1.0 : 0.0);
    if (floats) want.add_double_data(f);
    else want.add_int64_data(a->kind_case() == v1::Arg::kI ? a->i() : (a->b() ? 1 : 0));
  }
  const std::string c = ctx.AddInitializer(std::move(want), "guard.tolist");
  const int64_t n = static_cast<int64_t>(leaves.size());
  std::string flat = ctx.CastTo(ctx.CastTo(ctx.EmitTemp("Reshape", {t, ctx.Int64s({-1})}), d, d == v1::BOOL ? v1::INT64 : d),
                                d == v1::BOOL ? v1::INT64 : d, cd);
  onnx::NodeProto* cat = nullptr;
  flat = ctx.EmitTemp("Concat", {flat, c}, &cat);   // at least n long whatever t's size
  SetAttr(cat, "axis", int64_t{0});
  flat = ctx.EmitTemp("Slice", {flat, ctx.Int64s({0}), ctx.Int64s({n}), ctx.Int64s({0})});
  std::string eq = ctx.EmitTemp("Equal", {flat, c});
  if (floats) eq = ctx.EmitTemp("Or", {eq, ctx.EmitTemp("And", {ctx.EmitTemp("IsNaN", {flat}), ctx.EmitTemp("IsNaN", {c})})});
  std::string values = all(eq);
  const std::string size_ok = ctx.EmitTemp("Equal", {ctx.EmitTemp("Size", {t}), ctx.Scalar(Number::Int(n), v1::INT64)});
  values = ctx.EmitTemp("And", {size_ok, values});
  return ok.empty() ? values : ctx.EmitTemp("And", {ok, values});
}

std::string GuardOk(LoweringContext& ctx, const v1::Guard& g, bool* negated) {
  *negated = false;
  const ValueId v = g.tensor().value();
  const v1::DType d = PlainDType(ctx.DType(v));
  const auto k = g.observed().kind_case();
  if (k == v1::Arg::kList || k == v1::Arg::kTuple) return ListGuardOk(ctx, g);
  std::string t = ctx.In(v);
  if (ctx.Rank(v) != 0) t = ctx.EmitTemp("Reshape", {t, ctx.Int64s({})});
  const v1::Arg& want = g.observed();
  if (want.kind_case() == v1::Arg::kB) {
    *negated = !want.b();
    return ctx.CastTo(t, d, v1::BOOL);
  }
  if (want.kind_case() == v1::Arg::kI) {
    return ctx.EmitTemp("Equal", {ctx.CastTo(t, d, v1::INT64), ctx.Scalar(Number::Int(want.i()), v1::INT64)});
  }
  t = ctx.CastTo(t, d, v1::FLOAT64);
  if (std::isnan(want.f())) return ctx.EmitTemp("IsNaN", {t});
  return ctx.EmitTemp("Equal", {t, ctx.Scalar(Number::Float(want.f()), v1::FLOAT64)});
}

}  // namespace

std::string EmitGuardCheck(LoweringContext& ctx, const v1::Guard& g, size_t index) {
  // A Reshape of a one-element tensor to [1] while the guard holds and to [-2] (which onnxruntime
  // rejects, naming the node) when it does not. ONNX has no assert op; a failing node is the one
  // way a model can refuse an input. Each check reshapes its own constant (a chain of Reshapes
  // would be fused by onnxruntime into the last one, dropping the others), and is emitted right
  // after the guard's value, so that it fails before later nodes trip over the wrong path.
  std::string where = g.loc().file().empty() ? "an unknown line" : g.loc().file() + ":" + std::to_string(g.loc().line());
  bool negated = false;
  const std::string ok = GuardOk(ctx, g, &negated);
  const std::string pass = ctx.Int64s({1}), fail = ctx.Int64s({-2});
  const std::string shape = ctx.EmitTemp("Where", {ok, negated ? fail : pass, negated ? pass : fail});
  onnx::NodeProto* n = nullptr;
  const std::string out = ctx.EmitTemp("Reshape", {ctx.Int64s({0}), shape}, &n);
  n->set_name("ivytrace guard " + std::to_string(index) + ": " + g.op() + " at " + where + ": recorded " +
              ArgToString(g.observed(), true) + " (the input takes another path in the program)");
  return out;
}

std::string CombineGuardChecks(LoweringContext& ctx, const std::vector<std::string>& checks) {
  // A 0-d bool that exists only when every check passed (and is then true): each check is one
  // element when it passes (it fails in onnxruntime otherwise), so their count is the number of
  // checks. Size, not a sum: its result is 0-d whatever its input, which ONNX shape inference
  // knows; the checks' shapes are computed (that is how they fail), and a gate of unknown shape
  // would hide the shape of every value gated on it (GateOn), and with it every dim read after.
  std::string all = checks[0];
  if (checks.size() > 1) {
    onnx::NodeProto* c = nullptr;
    all = ctx.EmitTemp("Concat", checks, &c);
    SetAttr(c, "axis", int64_t{0});
  }
  const std::string count = ctx.EmitTemp("Size", {all});
  return ctx.EmitTemp("Equal", {count, ctx.Scalar(Number::Int(static_cast<int64_t>(checks.size())), v1::INT64)});
}

namespace {
// The type onnxruntime's CPU Where computes a `dtype` value in: it has no kernel for bool, 8- and
// 16-bit ints, bfloat16 and uint64. Each of those goes through a type that holds it exactly.
v1::DType WhereType(v1::DType dtype) {
  switch (dtype) {
    case v1::BOOL:
    case v1::SYM_BOOL:
    case v1::INT8:
    case v1::INT16:
    case v1::UINT16:
      return v1::INT32;
    case v1::BFLOAT16:
      return v1::FLOAT32;
    case v1::UINT64:  // Cast between uint64 and int64 keeps the bits
      return v1::INT64;
    default:
      return dtype;
  }
}
}  // namespace

void EmitWhere(LoweringContext& ctx, const std::string& cond, const std::string& a, const std::string& b,
               v1::DType dtype, const std::string& out) {
  const v1::DType via = WhereType(dtype);
  if (via == dtype) {
    ctx.Emit("Where", {cond, a, b}, {out});
    return;
  }
  const std::string w = ctx.EmitTemp("Where", {cond, ctx.CastTo(a, dtype, via), ctx.CastTo(b, dtype, via)});
  onnx::NodeProto* cast = ctx.Emit("Cast", {w}, {out});
  SetAttr(cast, "to", static_cast<int64_t>(OnnxElemType(dtype == v1::SYM_BOOL ? v1::BOOL : dtype)));
}

std::string GateOn(LoweringContext& ctx, const std::string& value, v1::DType dtype, const std::string& gate) {
  // Where(gate, v, v) is v (bit for bit but for one onnxruntime quirk: its CPU Where gives +0.0
  // where it selects a -0.0), with v's static shape (a Reshape to Shape(v) would hide
  // the shape from ONNX shape inference), computed only once the gate's checks ran. It copies v:
  // a gate is taken only by values that live across a guard. A bool is And with the true gate;
  // the types onnxruntime's CPU Where has no kernel for go through WhereType and back.
  if (dtype == v1::BOOL || dtype == v1::SYM_BOOL) return ctx.EmitTemp("And", {gate, value});
  const v1::DType via = WhereType(dtype);
  if (via == dtype) return ctx.EmitTemp("Where", {gate, value, value});
  const std::string v = ctx.CastTo(value, dtype, via);
  return ctx.CastTo(ctx.EmitTemp("Where", {gate, v, v}), via, dtype);
}

}  // namespace onnx_export
}  // namespace ivytrace
