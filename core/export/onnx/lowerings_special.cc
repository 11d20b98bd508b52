// Lowerings of the less common activations and elementwise functions (selu, celu, shrinks,
// threshold, glu, prelu, logit, erfc, sinc, logaddexp, xlogy, copysign, heaviside, addcmul,
// addcdiv), cosine_similarity, pairwise_distance and pixel_(un)shuffle. Each one follows the
// framework's own formula (ATen's CPU kernels, NumPy's ufunc loops), including what it does at
// zeros, infinities and NaN, and computes in the dtype the call recorded for its result.
#include <cmath>
#include <limits>

#include "core/export/onnx/lowerings.h"
#include "core/ir/arg.h"

namespace ivytrace {
namespace onnx_export {

namespace {

std::string F(LoweringContext& ctx, double v, v1::DType d) { return ctx.Scalar(Number::Float(v), d); }

// The result dtype, or `fallback` when the recording has none.
v1::DType ResultDType(LoweringContext& ctx, ValueId result, v1::DType fallback) {
  const v1::DType d = ctx.DType(result);
  return d == v1::DTYPE_UNSPECIFIED ? fallback : d;
}

// A number parameter (int or float) as a double; Unsupported when it is anything else.
Status NumberParam(const BoundCall& call, const char* param, double* out) {
  const v1::Arg* a = call.Get(param);
  if (!a) return Status::Unsupported(std::string("missing ") + param);
  if (a->kind_case() == v1::Arg::kF) {
    *out = a->f();
    return Status::Ok();
  }
  if (auto i = AsInt(*a)) {
    *out = static_cast<double>(*i);
    return Status::Ok();
  }
  return Status::Unsupported(std::string(param) + "=" + ArgToString(*a, true) + " is not a number");
}

}  // namespace

// One tensor input, number parameters: selu, celu, softsign, hardshrink, softshrink, tanhshrink,
// threshold, logit, erfc, sinc.
Status LowerSpecialUnary(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const std::string& c = ctx.canonical();
  const v1::DType d = ResultDType(ctx, result, ctx.DType(x));
  // threshold keeps integer tensors integer; the others are float functions (torch refuses an
  // integer input to the activations, and promotes it to float for logit, erfc and sinc).
  if (c != "threshold" && !IsFloating(d)) return Status::Unsupported(c + " computing in " + DTypeName(d));
  const std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  const std::string out = ctx.Out(result);
  if (c == "selu" || c == "celu") {
    // selu: scale * (x > 0 ? x : alpha * (exp(x) - 1)); celu: x > 0 ? x : alpha * (exp(x / alpha) - 1).
    // Where on x > 0 keeps NaN (the else branch is NaN too).
    double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
    if (c == "celu") {
      IVY_RETURN_IF_ERROR(NumberParam(call, "alpha", &alpha));
      if (alpha == 0.0) return Status::Unsupported("celu with alpha=0 (torch refuses it)");
      scale = 1.0;
    }
    const std::string arg = c == "celu" && alpha != 1.0 ? ctx.EmitTemp("Div", {in, F(ctx, alpha, d)}) : in;
    const std::string neg = ctx.EmitTemp("Mul", {F(ctx, alpha, d), ctx.EmitTemp("Sub", {ctx.EmitTemp("Exp", {arg}), F(ctx, 1, d)})});
    const std::string pos = ctx.EmitTemp("Greater", {in, F(ctx, 0, d)});
    if (scale == 1.0) {
      ctx.Emit("Where", {pos, in, neg}, {out});
    } else {
      ctx.Emit("Mul", {ctx.EmitTemp("Where", {pos, in, neg}), F(ctx, scale, d)}, {out});
    }
  } else if (c == "softsign") {
    ctx.Emit("Div", {in, ctx.EmitTemp("Add", {F(ctx, 1, d), ctx.EmitTemp("Abs", {in})})}, {out});
  } else if (c == "tanhshrink") {
    ctx.Emit("Sub", {in, ctx.EmitTemp("Tanh", {in})}, {out});
  } else if (c == "hardshrink") {
    // ATen: (x >= -lambd && x <= lambd) ? 0 : x (NaN stays NaN).
    double l;
    IVY_RETURN_IF_ERROR(NumberParam(call, "lambd", &l));
    const std::string inside = ctx.EmitTemp("And", {ctx.EmitTemp("GreaterOrEqual", {in, F(ctx, -l, d)}),
                                                   ctx.EmitTemp("LessOrEqual", {in, F(ctx, l, d)})});
    ctx.Emit("Where", {inside, F(ctx, 0, d), in}, {out});
  } else if (c == "softshrink") {
    // ATen: x > lambd ? x - lambd : (x < -lambd ? x + lambd : x * 0) (NaN stays NaN).
    double l;
    IVY_RETURN_IF_ERROR(NumberParam(call, "lambd", &l));
    if (l < 0) return Status::Unsupported("softshrink with a negative lambd (torch refuses it)");
    const std::string lo = ctx.EmitTemp("Where", {ctx.EmitTemp("Less", {in, F(ctx, -l, d)}),
                                                  ctx.EmitTemp("Add", {in, F(ctx, l, d)}),
                                                  ctx.EmitTemp("Mul", {in, F(ctx, 0, d)})});
    ctx.Emit("Where", {ctx.EmitTemp("Greater", {in, F(ctx, l, d)}), ctx.EmitTemp("Sub", {in, F(ctx, l, d)}), lo}, {out});
  } else if (c == "threshold") {
    // x <= threshold ? value : x, in x's dtype (NaN is kept: the comparison is false).
    std::string th, value;
    const v1::Arg* t = call.Get("threshold");
    const v1::Arg* v = call.Get("value");
    if (!t || !v) return Status::Unsupported("threshold without threshold and value");
    IVY_RETURN_IF_ERROR(OperandAs(ctx, *t, d, &th));
    IVY_RETURN_IF_ERROR(OperandAs(ctx, *v, d, &value));
    EmitWhere(ctx, ctx.EmitTemp("LessOrEqual", {in, th}), value, in, d, out);
  } else if (c == "logit") {
    // ATen: z = eps given ? (x < eps ? eps : (x > 1 - eps ? 1 - eps : x)) : x; log(z / (1 - z)).
    // 1 - eps is computed in the tensor's dtype, as ATen does; NaN passes the clamp.
    std::string z = in;
    if (!call.IsNone("eps")) {
      double eps;
      IVY_RETURN_IF_ERROR(NumberParam(call, "eps", &eps));
      const std::string lo = F(ctx, eps, d);
      const std::string hi = ctx.EmitTemp("Sub", {F(ctx, 1, d), lo});
      const std::string upper = ctx.EmitTemp("Where", {ctx.EmitTemp("Greater", {in, hi}), hi, in});
      z = ctx.EmitTemp("Where", {ctx.EmitTemp("Less", {in, lo}), lo, upper});
    }
    ctx.Emit("Log", {ctx.EmitTemp("Div", {z, ctx.EmitTemp("Sub", {F(ctx, 1, d), z})})}, {out});
  } else if (c == "erfc") {
    // ONNX has no erfc. 1 - erf(x) below x = 1.5 (erfc > 0.03 there: relative error a few
    // 1e-7 in float32); above, where 1 - erf(x) loses every digit (erfc(5) = 1.5e-12 would be 0),
    // Laplace's continued fraction erfc(x) = exp(-x^2) / (sqrt(pi) K), K = x + (1/2) / (x + (2/2) /
    // (x + (3/2) / ...)), cut at 40 levels: truncation below 1e-10 for x >= 1.5, so the error is
    // exp(-x^2)'s rounding (relative 4e-6 in float32, measured against math.erfc up to x = 9).
    // erfc(inf) = 0 and NaN stays NaN (the 1 - erf branch).
    const std::string big = ctx.EmitTemp("GreaterOrEqual", {in, F(ctx, 1.5, d)});
    std::string k = in;
    for (int i = 40; i >= 1; --i) k = ctx.EmitTemp("Add", {in, ctx.EmitTemp("Div", {F(ctx, i / 2.0, d), k})});
    const std::string g = ctx.EmitTemp("Exp", {ctx.EmitTemp("Neg", {ctx.EmitTemp("Mul", {in, in})})});
    const std::string tail = ctx.EmitTemp("Div", {g, ctx.EmitTemp("Mul", {k, F(ctx, std::sqrt(M_PI), d)})});
    ctx.Emit("Where", {big, tail, ctx.EmitTemp("Sub", {F(ctx, 1, d), ctx.EmitTemp("Erf", {in})})}, {out});
  } else if (c == "sinc") {
    // torch: x == 0 ? 1 : sin(pi x) / (pi x); NumPy: y = pi * where(x == 0, 1e-20, x), sin(y) / y,
    // which is 1 at 0 as well. pi x is rounded to the dtype as both do.
    const std::string px = ctx.EmitTemp("Mul", {in, F(ctx, M_PI, d)});
    const std::string q = ctx.EmitTemp("Div", {ctx.EmitTemp("Sin", {px}), px});
    ctx.Emit("Where", {ctx.EmitTemp("Equal", {in, F(ctx, 0, d)}), F(ctx, 1, d), q}, {out});
  } else {
    return Status::Unsupported("'special_unary' lowering does not know canonical op '" + c + "'");
  }
  return Status::Ok();
}

// F.glu(input, dim): the first half along dim times the sigmoid of the second half.
Status LowerGlu(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  auto dim = call.Int("dim");
  if (!dim) return Status::Unsupported("glu dim " + ArgToString(*call.Get("dim"), true) + " is not an int");
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, ctx.Rank(x), &axis));
  const int64_t n = ctx.Shape(x)[axis];
  if (n < 0 || n % 2 != 0) return Status::Unsupported("glu over a dim of odd or unknown size");
  const v1::DType d = ctx.DType(x);
  if (!IsFloating(d)) return Status::Unsupported(std::string("glu of a ") + DTypeName(d) + " tensor");
  // No split sizes: two equal halves of the size at run time (the dim may be the batch).
  const std::string a = ctx.Temp("glu_a"), b = ctx.Temp("glu_b");
  auto* sp = ctx.Emit("Split", {ctx.In(x)}, {a, b});
  SetAttr(sp, "axis", axis);
  ctx.Emit("Mul", {a, ctx.EmitTemp("Sigmoid", {b})}, {ctx.Out(result)});
  return Status::Ok();
}

// F.prelu(input, weight): x > 0 ? x : weight * x, weight of one value or one per channel (dim 1).
Status LowerPrelu(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, w, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "weight", &w));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ResultDType(ctx, result, ctx.DType(x));
  if (!IsFloating(d)) return Status::Unsupported(std::string("prelu of a ") + DTypeName(d) + " tensor");
  int64_t n = 1;
  for (int64_t s : ctx.Shape(w)) n *= s;
  const int rank = ctx.Rank(x);
  std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  std::string weight = ctx.CastTo(ctx.In(w), ctx.DType(w), d);
  if (n == 1) {
    weight = ctx.EmitTemp("Reshape", {weight, ctx.Int64s({1})});
  } else if (rank >= 2 && ctx.Rank(w) == 1 && ctx.Shape(x)[1] == n) {
    // [C] -> [C, 1, ...] so that it lines up with dim 1 of [N, C, ...].
    std::vector<int64_t> shape(rank - 1, 1);
    shape[0] = n;
    weight = ctx.EmitTemp("Reshape", {weight, ctx.Int64s(shape)});
  } else {
    return Status::Unsupported("prelu with a weight that is neither one value nor one per channel (dim 1)");
  }
  const std::string pos = ctx.EmitTemp("Greater", {in, F(ctx, 0, d)});
  ctx.Emit("Where", {pos, in, ctx.EmitTemp("Mul", {weight, in})}, {ctx.Out(result)});
  return Status::Ok();
}

// Two operands (tensors or numbers), computed in the result's dtype: logaddexp, logaddexp2, xlogy,
// copysign, heaviside.
Status LowerSpecialBinary(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const std::string& c = ctx.canonical();
  const char* second = c == "heaviside" && call.Has("values") ? "values" : "other";  // NumPy: other
  const v1::Arg* a = call.Get("input");
  const v1::Arg* b = call.Get(second);
  if (!a || !b) return Status::Unsupported("missing operand");
  if (!HasTensor(*a) && !HasTensor(*b)) return Status::Unsupported("neither operand is a tensor");
  const v1::DType d = ResultDType(ctx, result, PromotedDType(ctx, {a, b}));
  if (d == v1::BOOL || (!IsFloating(d) && c != "heaviside")) return Status::Unsupported(c + " computing in " + DTypeName(d));
  std::string x, y;
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *a, d, &x));
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *b, d, &y));
  const std::string out = ctx.Out(result);
  if (c == "logaddexp" || c == "logaddexp2") {
    // ATen: isinf(a) && a == b ? a : max(a, b) + log1p(exp(-|a - b|)) (exp2 and / ln 2 for base 2).
    // The special case gives -inf for (-inf, -inf) and inf for (inf, inf), where the formula
    // would give NaN (inf - inf); NumPy returns the same (x == y: x + log 2). NaN gives NaN
    // through |a - b|.
    const std::string m = ctx.EmitTemp("Max", {x, y});
    const std::string negd = ctx.EmitTemp("Neg", {ctx.EmitTemp("Abs", {ctx.EmitTemp("Sub", {x, y})})});
    const std::string e = c == "logaddexp" ? ctx.EmitTemp("Exp", {negd}) : ctx.EmitTemp("Pow", {F(ctx, 2, d), negd});
    std::string l = ctx.EmitTemp("Log", {ctx.EmitTemp("Add", {F(ctx, 1, d), e})});
    if (c == "logaddexp2") l = ctx.EmitTemp("Div", {l, F(ctx, std::log(2.0), d)});
    const std::string same = ctx.EmitTemp("And", {ctx.EmitTemp("IsInf", {x}), ctx.EmitTemp("Equal", {x, y})});
    ctx.Emit("Where", {same, x, ctx.EmitTemp("Add", {m, l})}, {out});
  } else if (c == "xlogy") {
    // ATen: isnan(y) ? NaN : (x == 0 ? 0 : x * log(y)): xlogy(0, 0) = xlogy(0, inf) = 0,
    // xlogy(0, NaN) = NaN, xlogy(NaN, y) = NaN.
    const std::string v = ctx.EmitTemp("Where", {ctx.EmitTemp("Equal", {x, F(ctx, 0, d)}), F(ctx, 0, d),
                                                 ctx.EmitTemp("Mul", {x, ctx.EmitTemp("Log", {y})})});
    ctx.Emit("Where", {ctx.EmitTemp("IsNaN", {y}), y, v}, {out});
  } else if (c == "copysign") {
    // |x| with the sign of y. ONNX has no signbit: y is negative where y < 0 or 1 / y < 0 (that
    // tells -0.0 from 0.0, and y < 0 covers -inf, whose reciprocal is -0.0). A NaN's sign bit is
    // not visible to any comparison: a NaN y counts as positive (torch and NumPy read its sign
    // bit, so a negative NaN, e.g. 0/0 on x86, differs).
    const std::string neg = ctx.EmitTemp("Or", {ctx.EmitTemp("Less", {y, F(ctx, 0, d)}),
                                               ctx.EmitTemp("Less", {ctx.EmitTemp("Div", {F(ctx, 1, d), y}), F(ctx, 0, d)})});
    // |x| times +-1, not Where(neg, -|x|, |x|): onnxruntime's Where turns a -0.0 taken from its
    // second input into 0.0 (copysign(0, -1) must be -0.0).
    const std::string sign = ctx.EmitTemp("Where", {neg, F(ctx, -1, d), F(ctx, 1, d)});
    ctx.Emit("Mul", {ctx.EmitTemp("Abs", {x}), sign}, {out});
  } else if (c == "heaviside") {
    // torch: x == 0 ? values : (x > 0), so NaN gives 0; NumPy: isnan(x) ? NaN : (x == 0 ? h0 :
    // (x < 0 ? 0 : 1)).
    const std::string step = ctx.CastTo(ctx.EmitTemp("Greater", {x, ctx.Scalar(Number::Int(0), d)}),
                                        v1::BOOL, d);
    // values is taken where x != 0 is false (Where's third input): onnxruntime's Where turns a
    // -0.0 from its second input into 0.0. Not x == 0 would be fused by onnxruntime into a Where
    // with its inputs swapped, so x != 0 is x < 0 or x > 0 or x is NaN.
    const bool numpy = node.op.rfind("numpy.", 0) == 0;
    const std::string zero_s = ctx.Scalar(Number::Int(0), d);
    if (!IsFloating(d)) {
      EmitWhere(ctx, ctx.EmitTemp("Equal", {x, zero_s}), y, step, d, out);
      return Status::Ok();
    }
    const std::string nonzero = ctx.EmitTemp("Or", {ctx.EmitTemp("Or", {ctx.EmitTemp("Less", {x, zero_s}), ctx.EmitTemp("Greater", {x, zero_s})}),
                                                   ctx.EmitTemp("IsNaN", {x})});
    if (numpy) {
      const std::string h = ctx.EmitTemp("Where", {nonzero, step, y});
      ctx.Emit("Where", {ctx.EmitTemp("IsNaN", {x}), x, h}, {out});
    } else {
      EmitWhere(ctx, nonzero, step, y, d, out);
    }
  } else {
    return Status::Unsupported("'special_binary' lowering does not know canonical op '" + c + "'");
  }
  return Status::Ok();
}

// torch.addcmul / addcdiv(input, tensor1, tensor2, value): input + value * tensor1 * tensor2 and
// input + value * tensor1 / tensor2, in ATen's order of operations ((value * t1) op t2).
Status LowerAddcmul(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const std::string& c = ctx.canonical();
  const v1::Arg* in = call.Get("input");
  const v1::Arg* t1 = call.Get("tensor1");
  const v1::Arg* t2 = call.Get("tensor2");
  const v1::Arg* value = call.Get("value");
  if (!in || !t1 || !t2 || !value) return Status::Unsupported("missing operand");
  const v1::DType d = ResultDType(ctx, result, PromotedDType(ctx, {in, t1, t2}));
  if (c == "addcdiv" && !IsFloating(d)) return Status::Unsupported("addcdiv of integer tensors (torch refuses it)");
  std::string a, p, q, v;
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *in, d, &a));
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *t1, d, &p));
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *t2, d, &q));
  if (AsInt(*value) != 1) {  // value * t1 is t1 itself for value 1
    IVY_RETURN_IF_ERROR(OperandAs(ctx, *value, d, &v));
    p = ctx.EmitTemp("Mul", {v, p});
  }
  ctx.Emit("Add", {a, ctx.EmitTemp(c == "addcmul" ? "Mul" : "Div", {p, q})}, {ctx.Out(result)});
  return Status::Ok();
}

// F.cosine_similarity(x1, x2, dim, eps): as ATen computes it now (checked against torch 2.13):
// both operands broadcast to one shape, each divided by its own 2-norm along dim clamped to at
// least eps, then the product summed over dim. (Older torch clamped the product of the squared
// norms with eps^2; that gives other numbers where a norm is below eps.)
Status LowerCosineSimilarity(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId a, b, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "x1", &a));
  IVY_RETURN_IF_ERROR(TensorParam(call, "x2", &b));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ResultDType(ctx, result, ctx.DType(a));
  if (!IsFloating(d)) return Status::Unsupported(std::string("cosine_similarity computing in ") + DTypeName(d));
  auto dim = call.Int("dim");
  if (!dim) return Status::Unsupported("cosine_similarity dim " + ArgToString(*call.Get("dim"), true) + " is not an int");
  double eps;
  IVY_RETURN_IF_ERROR(NumberParam(call, "eps", &eps));
  const int rank = std::max(ctx.Rank(a), ctx.Rank(b));
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, rank, &axis));
  std::string x = ctx.CastTo(ctx.In(a), ctx.DType(a), d), y = ctx.CastTo(ctx.In(b), ctx.DType(b), d);
  if (ctx.Shape(a) != ctx.Shape(b)) {
    // Expand broadcasts both ways: each becomes the common shape (torch expands both first, so a
    // size-1 dim along `dim` counts every copy in the norm).
    const std::string sx = ctx.EmitTemp("Shape", {x}), sy = ctx.EmitTemp("Shape", {y});
    x = ctx.EmitTemp("Expand", {x, sy});
    y = ctx.EmitTemp("Expand", {y, sx});
  }
  auto normalized = [&](const std::string& v) {
    onnx::NodeProto* r = nullptr;
    const std::string n = ctx.EmitTemp("ReduceL2", {v}, &r);
    SetAttr(r, "axes", std::vector<int64_t>{axis});
    SetAttr(r, "keepdims", int64_t{1});
    return ctx.EmitTemp("Div", {v, ctx.EmitTemp("Max", {n, F(ctx, eps, d)})});
  };
  const std::string prod = ctx.EmitTemp("Mul", {normalized(x), normalized(y)});
  auto* s = ctx.Emit("ReduceSum", {prod, ctx.Int64s({axis})}, {ctx.Out(result)});
  SetAttr(s, "keepdims", int64_t{0});
  return Status::Ok();
}

// F.pairwise_distance(x1, x2, p, eps, keepdim): the p-norm of x1 - x2 + eps over the last dim.
Status LowerPairwiseDistance(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId a, b, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "x1", &a));
  IVY_RETURN_IF_ERROR(TensorParam(call, "x2", &b));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ResultDType(ctx, result, ctx.DType(a));
  if (!IsFloating(d)) return Status::Unsupported(std::string("pairwise_distance computing in ") + DTypeName(d));
  double p, eps;
  IVY_RETURN_IF_ERROR(NumberParam(call, "p", &p));
  IVY_RETURN_IF_ERROR(NumberParam(call, "eps", &eps));
  auto keepdim = call.Bool("keepdim");
  if (!keepdim) return Status::Unsupported("pairwise_distance keepdim " + ArgToString(*call.Get("keepdim"), true));
  if (std::max(ctx.Rank(a), ctx.Rank(b)) == 0) return Status::Unsupported("pairwise_distance of 0-d tensors");
  const std::string x = ctx.CastTo(ctx.In(a), ctx.DType(a), d), y = ctx.CastTo(ctx.In(b), ctx.DType(b), d);
  const std::string diff = ctx.EmitTemp("Add", {ctx.EmitTemp("Sub", {x, y}), F(ctx, eps, d)});
  const std::string out = ctx.Out(result);
  const int64_t keep = *keepdim ? 1 : 0;
  auto reduce = [&](const char* op, const std::string& v, const std::string& o) {
    onnx::NodeProto* r = ctx.Emit(op, {v}, {o});
    SetAttr(r, "axes", std::vector<int64_t>{-1});
    SetAttr(r, "keepdims", keep);
  };
  if (p == 2.0) {
    reduce("ReduceL2", diff, out);
  } else if (p == 1.0) {
    reduce("ReduceL1", diff, out);
  } else if (std::isinf(p)) {
    reduce(p > 0 ? "ReduceMax" : "ReduceMin", ctx.EmitTemp("Abs", {diff}), out);
  } else if (p == 0.0) {  // the count of nonzero items
    const std::string nz = ctx.CastTo(ctx.EmitTemp("Not", {ctx.EmitTemp("Equal", {diff, F(ctx, 0, d)})}), v1::BOOL, d);
    auto* r = ctx.Emit("ReduceSum", {nz, ctx.Int64s({-1})}, {out});
    SetAttr(r, "keepdims", keep);
  } else if (p > 0) {
    const std::string pw = ctx.EmitTemp("Pow", {ctx.EmitTemp("Abs", {diff}), F(ctx, p, d)});
    const std::string s = ctx.Temp("psum");
    auto* r = ctx.Emit("ReduceSum", {pw, ctx.Int64s({-1})}, {s});
    SetAttr(r, "keepdims", keep);
    ctx.Emit("Pow", {s, F(ctx, 1.0 / p, d)}, {out});
  } else {
    return Status::Unsupported("pairwise_distance with a negative p");
  }
  return Status::Ok();
}

// F.pixel_shuffle / F.pixel_unshuffle: one Reshape to 6-D (the leading dims folded into one),
// one Transpose, one Reshape back, every size read from the input's shape at run time.
// pixel_shuffle is DepthToSpace(CRD) on 4-D inputs, but pixel_unshuffle orders channels (c, i, j)
// where SpaceToDepth orders them (i, j, c), so both use the same plain permutation.
Status LowerPixelShuffle(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const bool shuffle = ctx.canonical() == "pixel_shuffle";
  const char* param = shuffle ? "upscale_factor" : "downscale_factor";
  auto r = call.Int(param);
  if (!r || *r <= 0) return Status::Unsupported(std::string(param) + " " + ArgToString(*call.Get(param), true));
  if (ctx.Rank(x) < 3) return Status::Unsupported(ctx.canonical() + " of a tensor of rank below 3");
  const std::string in = ctx.In(x);
  const std::string shape = ctx.EmitTemp("Shape", {in});
  auto part = [&](int64_t start, int64_t end) { return ctx.EmitTemp("Slice", {shape, ctx.Int64s({start}), ctx.Int64s({end})}); };
  const std::string lead = part(0, -3), ch = part(-3, -2), h = part(-2, -1), w = part(-1, std::numeric_limits<int64_t>::max());
  auto concat = [&](const std::vector<std::string>& parts) {
    onnx::NodeProto* n = nullptr;
    const std::string v = ctx.EmitTemp("Concat", parts, &n);
    SetAttr(n, "axis", int64_t{0});
    return v;
  };
  const std::string rr = ctx.Int64s({*r}), r2 = ctx.Int64s({*r * *r});
  std::string six, out_shape;
  std::vector<int64_t> perm;
  if (shuffle) {  // [*, C r r, H, W] -> [-1, C, r, r, H, W] -> [-1, C, H, r, W, r] -> [*, C, H r, W r]
    const std::string c = ctx.EmitTemp("Div", {ch, r2});
    six = concat({ctx.Int64s({-1}), c, rr, rr, h, w});
    perm = {0, 1, 4, 2, 5, 3};
    out_shape = concat({lead, c, ctx.EmitTemp("Mul", {h, rr}), ctx.EmitTemp("Mul", {w, rr})});
  } else {  // [*, C, H r, W r] -> [-1, C, H, r, W, r] -> [-1, C, r, r, H, W] -> [*, C r r, H, W]
    const std::string hh = ctx.EmitTemp("Div", {h, rr}), ww = ctx.EmitTemp("Div", {w, rr});
    six = concat({ctx.Int64s({-1}), ch, hh, rr, ww, rr});
    perm = {0, 1, 3, 5, 2, 4};
    out_shape = concat({lead, ctx.EmitTemp("Mul", {ch, r2}), hh, ww});
  }
  const std::string reshaped = ctx.EmitTemp("Reshape", {in, six});
  onnx::NodeProto* t = nullptr;
  const std::string moved = ctx.EmitTemp("Transpose", {reshaped}, &t);
  SetAttr(t, "perm", perm);
  ctx.Emit("Reshape", {moved, out_shape}, {ctx.Out(result)});
  return Status::Ok();
}

}  // namespace onnx_export
}  // namespace ivytrace
