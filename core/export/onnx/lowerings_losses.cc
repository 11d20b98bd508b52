// Lowerings of torch.nn.functional's losses (issue 11): the pointwise losses (l1, mse, huber,
// smooth_l1, soft_margin, binary_cross_entropy(_with_logits), kl_div, margin_ranking,
// hinge_embedding, poisson_nll, gaussian_nll, multilabel_soft_margin), cosine_embedding and
// triplet_margin, and nll_loss / cross_entropy (class indices with weight,
// ignore_index and label_smoothing; class probabilities). Each computes torch's formula in the
// result's dtype (float32 or float64) and applies `reduction` ("none", "mean", "sum"; kl_div's
// "batchmean"). The deprecated size_average/reduce arguments and a `weight` where torch's newer
// losses take one are refused when given.
#include <algorithm>
#include <cmath>
#include <string>

#include "core/export/onnx/lowerings.h"
#include "core/ir/arg.h"

namespace ivytrace {
namespace onnx_export {

namespace {

std::string F(LoweringContext& ctx, double v, v1::DType d) { return ctx.Scalar(Number::Float(v), d); }

// The reduction argument, with the deprecated size_average/reduce refused.
Status ReductionOf(const BoundCall& call, std::string* out) {
  for (const char* legacy : {"size_average", "reduce"}) {
    if (call.Has(legacy) && !call.IsNone(legacy)) {
      return Status::Unsupported(std::string("the deprecated ") + legacy + "= argument (use reduction=)");
    }
  }
  const v1::Arg* r = call.Get("reduction");
  if (!r) {
    *out = "mean";
    return Status::Ok();
  }
  if (r->kind_case() != v1::Arg::kS) return Status::Unsupported("reduction is not a string");
  *out = r->s();
  return Status::Ok();
}

// Writes `loss` reduced as `reduction` into `out`.
Status EmitReduced(LoweringContext& ctx, const std::string& loss, const std::string& reduction, const std::string& out) {
  if (reduction == "none") {
    ctx.Emit("Identity", {loss}, {out});
  } else if (reduction == "mean" || reduction == "sum") {
    auto* n = ctx.Emit(reduction == "mean" ? "ReduceMean" : "ReduceSum", {loss}, {out});
    SetAttr(n, "keepdims", int64_t{0});
  } else {
    return Status::Unsupported("reduction '" + reduction + "'");
  }
  return Status::Ok();
}

// The sum of every element of `v`, 0-d.
std::string Total(LoweringContext& ctx, const std::string& v) {
  onnx::NodeProto* n = nullptr;
  const std::string out = ctx.EmitTemp("ReduceSum", {v}, &n);
  SetAttr(n, "keepdims", int64_t{0});
  return out;
}

// x.shape[axis] as a 0-d int64.
std::string DimScalar(LoweringContext& ctx, const std::string& x, int64_t axis) {
  onnx::NodeProto* g = nullptr;
  const std::string size = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {x}), ctx.Scalar(Number::Int(axis), v1::INT64)}, &g);
  SetAttr(g, "axis", int64_t{0});
  return size;
}

Status FloatResult(const Node& node, LoweringContext& ctx, ValueId* result) {
  IVY_RETURN_IF_ERROR(SingleResult(node, result));
  const v1::DType d = ctx.DType(*result);
  if (d != v1::FLOAT32 && d != v1::FLOAT64) {
    return Status::Unsupported(ctx.canonical() + " in " + DTypeName(d) + " (float32 and float64 lower)");
  }
  return Status::Ok();
}

Status NoWeight(const BoundCall& call) {
  if (call.Has("weight") && !call.IsNone("weight")) return Status::Unsupported("a weight= for this loss");
  return Status::Ok();
}

// log(1 + exp(v)) for v <= 0 (no overflow), as torch's log1p(exp(v)).
std::string Log1pExp(LoweringContext& ctx, const std::string& v, v1::DType d) {
  return ctx.EmitTemp("Log", {ctx.EmitTemp("Add", {F(ctx, 1.0, d), ctx.EmitTemp("Exp", {v})})});
}

}  // namespace

// The pointwise losses: loss(input, target) elementwise (torch broadcasts the two), then reduced.
Status LowerLoss(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(FloatResult(node, ctx, &result));
  const v1::DType d = ctx.DType(result);
  const std::string& op = ctx.canonical();
  std::string reduction;
  IVY_RETURN_IF_ERROR(ReductionOf(call, &reduction));
  auto operand = [&](const char* p, std::string* out) -> Status {
    const v1::Arg* a = call.Get(p);
    if (!a || !HasTensor(*a)) return Status::Unsupported(std::string(p) + " is not a tensor");
    return OperandAs(ctx, *a, d, out);
  };
  auto number = [&](const char* p, double* out) -> Status {
    auto v = call.Double(p);
    if (!v) return Status::Unsupported(std::string(p) + " is not a number");
    *out = *v;
    return Status::Ok();
  };
  std::string loss;
  if (op == "margin_ranking_loss") {
    // max(0, -target * (input1 - input2) + margin)
    std::string a, b, y;
    double margin;
    IVY_RETURN_IF_ERROR(operand("input1", &a));
    IVY_RETURN_IF_ERROR(operand("input2", &b));
    IVY_RETURN_IF_ERROR(operand("target", &y));
    IVY_RETURN_IF_ERROR(number("margin", &margin));
    const std::string t = ctx.EmitTemp("Add", {ctx.EmitTemp("Mul", {ctx.EmitTemp("Neg", {y}), ctx.EmitTemp("Sub", {a, b})}),
                                              F(ctx, margin, d)});
    loss = ctx.EmitTemp("Max", {t, F(ctx, 0.0, d)});
    return EmitReduced(ctx, loss, reduction, ctx.Out(result));
  }
  std::string x, y;
  IVY_RETURN_IF_ERROR(operand("input", &x));
  IVY_RETURN_IF_ERROR(operand("target", &y));
  if (op == "l1_loss" || op == "mse_loss") {
    IVY_RETURN_IF_ERROR(NoWeight(call));
    const std::string diff = ctx.EmitTemp("Sub", {x, y});
    loss = op == "l1_loss" ? ctx.EmitTemp("Abs", {diff}) : ctx.EmitTemp("Mul", {diff, diff});
  } else if (op == "huber_loss" || op == "smooth_l1_loss") {
    // huber: z < delta ? 0.5 z^2 : delta (z - 0.5 delta); smooth_l1: z < beta ? 0.5 z^2 / beta
    // : z - 0.5 beta, and beta == 0 is the l1 loss (z = |input - target|).
    IVY_RETURN_IF_ERROR(NoWeight(call));
    double k;
    IVY_RETURN_IF_ERROR(number(op == "huber_loss" ? "delta" : "beta", &k));
    if (k < 0) return Status::Unsupported("a negative delta/beta");
    const std::string z = ctx.EmitTemp("Abs", {ctx.EmitTemp("Sub", {x, y})});
    if (op == "smooth_l1_loss" && k == 0.0) {
      loss = z;
    } else {
      std::string quad = ctx.EmitTemp("Mul", {ctx.EmitTemp("Mul", {F(ctx, 0.5, d), z}), z});
      std::string lin;
      if (op == "huber_loss") {
        lin = ctx.EmitTemp("Mul", {F(ctx, k, d), ctx.EmitTemp("Sub", {z, F(ctx, 0.5 * k, d)})});
      } else {
        quad = ctx.EmitTemp("Div", {quad, F(ctx, k, d)});
        lin = ctx.EmitTemp("Sub", {z, F(ctx, 0.5 * k, d)});
      }
      loss = ctx.EmitTemp("Where", {ctx.EmitTemp("Less", {z, F(ctx, k, d)}), quad, lin});
    }
  } else if (op == "soft_margin_loss") {
    // log1p(exp(-target * input)), computed as torch does (no rewrite for large arguments).
    const std::string v = ctx.EmitTemp("Mul", {ctx.EmitTemp("Neg", {y}), x});
    loss = ctx.EmitTemp("Log", {ctx.EmitTemp("Add", {F(ctx, 1.0, d), ctx.EmitTemp("Exp", {v})})});
  } else if (op == "binary_cross_entropy") {
    // (target - 1) * max(log(1 - input), -100) - target * max(log(input), -100), times weight.
    const std::string lo = F(ctx, -100.0, d);
    const std::string log_x = ctx.EmitTemp("Max", {ctx.EmitTemp("Log", {x}), lo});
    const std::string log_1mx = ctx.EmitTemp("Max", {ctx.EmitTemp("Log", {ctx.EmitTemp("Sub", {F(ctx, 1.0, d), x})}), lo});
    loss = ctx.EmitTemp("Sub", {ctx.EmitTemp("Mul", {ctx.EmitTemp("Sub", {y, F(ctx, 1.0, d)}), log_1mx}),
                               ctx.EmitTemp("Mul", {y, log_x})});
    if (!call.IsNone("weight")) {
      std::string w;
      IVY_RETURN_IF_ERROR(operand("weight", &w));
      loss = ctx.EmitTemp("Mul", {loss, w});
    }
  } else if (op == "binary_cross_entropy_with_logits") {
    // (1 - target) * input + lw * (log1p(exp(-|input|)) + max(-input, 0)), lw = 1 or
    // (pos_weight - 1) * target + 1; times weight.
    const std::string one = F(ctx, 1.0, d);
    const std::string soft = ctx.EmitTemp("Add", {Log1pExp(ctx, ctx.EmitTemp("Neg", {ctx.EmitTemp("Abs", {x})}), d),
                                                  ctx.EmitTemp("Max", {ctx.EmitTemp("Neg", {x}), F(ctx, 0.0, d)})});
    std::string weighted = soft;
    if (!call.IsNone("pos_weight")) {
      std::string pw;
      IVY_RETURN_IF_ERROR(operand("pos_weight", &pw));
      const std::string lw = ctx.EmitTemp("Add", {ctx.EmitTemp("Mul", {ctx.EmitTemp("Sub", {pw, one}), y}), one});
      weighted = ctx.EmitTemp("Mul", {lw, soft});
    }
    loss = ctx.EmitTemp("Add", {ctx.EmitTemp("Mul", {ctx.EmitTemp("Sub", {one, y}), x}), weighted});
    if (!call.IsNone("weight")) {
      std::string w;
      IVY_RETURN_IF_ERROR(operand("weight", &w));
      loss = ctx.EmitTemp("Mul", {loss, w});
    }
  } else if (op == "kl_div") {
    // log_target: exp(target) * (target - input); else xlogy(target, target) - target * input
    // (0 where target is 0).
    auto log_target = call.Bool("log_target");
    if (!log_target) return Status::Unsupported("log_target is not a bool");
    if (*log_target) {
      loss = ctx.EmitTemp("Mul", {ctx.EmitTemp("Exp", {y}), ctx.EmitTemp("Sub", {y, x})});
    } else {
      const std::string zero = F(ctx, 0.0, d);
      const std::string is_zero = ctx.EmitTemp("Equal", {y, zero});
      const std::string ylogy = ctx.EmitTemp("Where", {is_zero, zero, ctx.EmitTemp("Mul", {y, ctx.EmitTemp("Log", {y})})});
      loss = ctx.EmitTemp("Sub", {ylogy, ctx.EmitTemp("Mul", {y, x})});
    }
    if (reduction == "batchmean") {
      ValueId in;
      IVY_RETURN_IF_ERROR(TensorParam(call, "input", &in));
      const std::string total = Total(ctx, loss);
      if (ctx.Rank(in) == 0) {
        ctx.Emit("Identity", {total}, {ctx.Out(result)});
      } else {
        ctx.Emit("Div", {total, ctx.CastTo(DimScalar(ctx, ctx.In(in), 0), v1::INT64, d)}, {ctx.Out(result)});
      }
      return Status::Ok();
    }
  } else if (op == "hinge_embedding_loss") {
    // where(target != 1, max(margin - input, 0), 0) + where(target != -1, input, 0)
    double margin;
    IVY_RETURN_IF_ERROR(number("margin", &margin));
    const std::string zero = F(ctx, 0.0, d);
    const std::string clamp = ctx.EmitTemp("Max", {ctx.EmitTemp("Sub", {F(ctx, margin, d), x}), zero});
    const std::string not_one = ctx.EmitTemp("Not", {ctx.EmitTemp("Equal", {y, F(ctx, 1.0, d)})});
    const std::string not_minus = ctx.EmitTemp("Not", {ctx.EmitTemp("Equal", {y, F(ctx, -1.0, d)})});
    loss = ctx.EmitTemp("Add", {ctx.EmitTemp("Where", {not_one, clamp, zero}), ctx.EmitTemp("Where", {not_minus, x, zero})});
  } else if (op == "poisson_nll_loss") {
    // log_input: exp(input) - target * input; else input - target * log(input + eps); full adds
    // Stirling's term target * log(target) - target + 0.5 * log(2 pi target) where target > 1.
    auto log_input = call.Bool("log_input"), full = call.Bool("full");
    double eps;
    IVY_RETURN_IF_ERROR(number("eps", &eps));
    if (!log_input || !full) return Status::Unsupported("log_input and full are not bools");
    if (*log_input) {
      loss = ctx.EmitTemp("Sub", {ctx.EmitTemp("Exp", {x}), ctx.EmitTemp("Mul", {y, x})});
    } else {
      loss = ctx.EmitTemp("Sub", {x, ctx.EmitTemp("Mul", {y, ctx.EmitTemp("Log", {ctx.EmitTemp("Add", {x, F(ctx, eps, d)})})})});
    }
    if (*full) {
      const std::string stirling =
          ctx.EmitTemp("Add", {ctx.EmitTemp("Sub", {ctx.EmitTemp("Mul", {y, ctx.EmitTemp("Log", {y})}), y}),
                               ctx.EmitTemp("Mul", {F(ctx, 0.5, d), ctx.EmitTemp("Log", {ctx.EmitTemp("Mul", {F(ctx, 2 * M_PI, d), y})})})});
      const std::string term = ctx.EmitTemp("Where", {ctx.EmitTemp("Greater", {y, F(ctx, 1.0, d)}), stirling, F(ctx, 0.0, d)});
      loss = ctx.EmitTemp("Add", {loss, term});
    }
  } else if (op == "gaussian_nll_loss") {
    // 0.5 * (log(v) + (input - target)^2 / v), v = max(var, eps) (var of input's shape, or
    // without its last dim), + 0.5 log(2 pi) when full. torch raises for a negative var: the
    // model refuses it (a Reshape to an invalid shape).
    ValueId in, vv;
    IVY_RETURN_IF_ERROR(TensorParam(call, "input", &in));
    IVY_RETURN_IF_ERROR(TensorParam(call, "var", &vv));
    auto full = call.Bool("full");
    double eps;
    IVY_RETURN_IF_ERROR(number("eps", &eps));
    if (!full) return Status::Unsupported("full is not a bool");
    std::string var;
    IVY_RETURN_IF_ERROR(operand("var", &var));
    const auto& xs = ctx.Shape(in);
    const auto& vs = ctx.Shape(vv);
    if (vs != xs) {
      if (vs.size() + 1 == xs.size() && std::equal(vs.begin(), vs.end(), xs.begin())) {
        var = ctx.Unsqueeze(var, {static_cast<int64_t>(vs.size())});
      } else if (!(vs.size() == xs.size() && !vs.empty() && vs.back() == 1)) {
        return Status::Unsupported("a var of a shape torch does not take");
      }
    }
    onnx::NodeProto* rmin = nullptr;
    const std::string neg = ctx.EmitTemp("ReduceMax", {ctx.CastTo(ctx.EmitTemp("Less", {var, F(ctx, 0.0, d)}), v1::BOOL, v1::INT32)}, &rmin);
    SetAttr(rmin, "keepdims", int64_t{0});
    const std::string vshape = ctx.EmitTemp("Shape", {var});
    const std::string bad = ctx.EmitTemp("Expand", {ctx.Int64s({-2}), ctx.EmitTemp("Shape", {vshape})});
    onnx::NodeProto* chk = nullptr;
    var = ctx.EmitTemp("Reshape", {var, ctx.EmitTemp("Where", {ctx.CastTo(neg, v1::INT32, v1::BOOL), bad, vshape})}, &chk);
    chk->set_name("ivytrace guard (gaussian_nll_loss var >= 0) " + ctx.Temp("check") + ": " + node.op +
                  ": torch raises for a negative var");
    const std::string v = ctx.EmitTemp("Max", {var, F(ctx, eps, d)});
    const std::string diff = ctx.EmitTemp("Sub", {x, y});
    loss = ctx.EmitTemp("Mul", {F(ctx, 0.5, d), ctx.EmitTemp("Add", {ctx.EmitTemp("Log", {v}),
                                                                     ctx.EmitTemp("Div", {ctx.EmitTemp("Mul", {diff, diff}), v})})});
    if (*full) loss = ctx.EmitTemp("Add", {loss, F(ctx, 0.5 * std::log(2 * M_PI), d)});
  } else if (op == "multilabel_soft_margin_loss") {
    // -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input)) (times weight), the mean
    // over the last (class) dim, then reduced.
    ValueId in;
    IVY_RETURN_IF_ERROR(TensorParam(call, "input", &in));
    const int rank = ctx.Rank(in);
    if (rank == 0) return Status::Unsupported("a 0-d input");
    auto log_sigmoid = [&](const std::string& v) {  // min(v, 0) - log1p(exp(-|v|))
      return ctx.EmitTemp("Sub", {ctx.EmitTemp("Min", {v, F(ctx, 0.0, d)}), Log1pExp(ctx, ctx.EmitTemp("Neg", {ctx.EmitTemp("Abs", {v})}), d)});
    };
    const std::string one = F(ctx, 1.0, d);
    loss = ctx.EmitTemp("Neg", {ctx.EmitTemp("Add", {ctx.EmitTemp("Mul", {y, log_sigmoid(x)}),
                                                    ctx.EmitTemp("Mul", {ctx.EmitTemp("Sub", {one, y}), log_sigmoid(ctx.EmitTemp("Neg", {x}))})})});
    if (!call.IsNone("weight")) {
      std::string w;
      IVY_RETURN_IF_ERROR(operand("weight", &w));
      loss = ctx.EmitTemp("Mul", {loss, w});
    }
    onnx::NodeProto* r = nullptr;
    const std::string sum = ctx.EmitTemp("ReduceSum", {loss, ctx.Int64s({rank - 1})}, &r);
    SetAttr(r, "keepdims", int64_t{0});
    loss = ctx.EmitTemp("Div", {sum, ctx.CastTo(DimScalar(ctx, x, rank - 1), v1::INT64, d)});
  } else {
    return Status::Unsupported("'loss' lowering does not know canonical op '" + op + "'");
  }
  return EmitReduced(ctx, loss, reduction, ctx.Out(result));
}

// cosine_embedding_loss(input1, input2, target, margin) and triplet_margin_loss(anchor,
// positive, negative, margin, p, eps, swap), torch's formulas (ATen's Loss.cpp).
Status LowerEmbeddingLoss(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(FloatResult(node, ctx, &result));
  const v1::DType d = ctx.DType(result);
  std::string reduction;
  IVY_RETURN_IF_ERROR(ReductionOf(call, &reduction));
  auto operand = [&](const char* p, std::string* out, ValueId* id) -> Status {
    IVY_RETURN_IF_ERROR(TensorParam(call, p, id));
    *out = ctx.CastTo(ctx.In(*id), ctx.DType(*id), d);
    return Status::Ok();
  };
  auto margin = call.Double("margin");
  if (!margin) return Status::Unsupported("margin is not a number");
  auto sum_over = [&](const std::string& v, int64_t axis) {
    onnx::NodeProto* r = nullptr;
    const std::string out = ctx.EmitTemp("ReduceSum", {v, ctx.Int64s({axis})}, &r);
    SetAttr(r, "keepdims", int64_t{0});
    return out;
  };
  const std::string zero = F(ctx, 0.0, d);
  std::string loss;
  if (ctx.canonical() == "cosine_embedding_loss") {
    // cos = sum(a b) / sqrt((sum(a a) + 1e-12) (sum(b b) + 1e-12)) over dim 1 (0 for 1-D inputs);
    // where(target == 1, 1 - cos, 0) + where(target == -1, max(cos - margin, 0), 0).
    std::string a, b, t;
    ValueId av, bv, tv;
    IVY_RETURN_IF_ERROR(operand("input1", &a, &av));
    IVY_RETURN_IF_ERROR(operand("input2", &b, &bv));
    IVY_RETURN_IF_ERROR(operand("target", &t, &tv));
    const int rank = ctx.Rank(av);
    if (rank < 1 || rank > 2 || ctx.Rank(bv) != rank) return Status::Unsupported("inputs that are not two 1-D or 2-D tensors");
    const int64_t axis = rank == 2 ? 1 : 0;
    const std::string eps = F(ctx, 1e-12, d);
    const std::string prod = sum_over(ctx.EmitTemp("Mul", {a, b}), axis);
    const std::string m1 = ctx.EmitTemp("Add", {sum_over(ctx.EmitTemp("Mul", {a, a}), axis), eps});
    const std::string m2 = ctx.EmitTemp("Add", {sum_over(ctx.EmitTemp("Mul", {b, b}), axis), eps});
    const std::string cos = ctx.EmitTemp("Div", {prod, ctx.EmitTemp("Sqrt", {ctx.EmitTemp("Mul", {m1, m2})})});
    const std::string pos = ctx.EmitTemp("Sub", {F(ctx, 1.0, d), cos});
    const std::string neg = ctx.EmitTemp("Max", {ctx.EmitTemp("Sub", {cos, F(ctx, *margin, d)}), zero});
    loss = ctx.EmitTemp("Add", {ctx.EmitTemp("Where", {ctx.EmitTemp("Equal", {t, F(ctx, 1.0, d)}), pos, zero}),
                                ctx.EmitTemp("Where", {ctx.EmitTemp("Equal", {t, F(ctx, -1.0, d)}), neg, zero})});
  } else {
    // max(margin + d(anchor, positive) - d(anchor, negative), 0), d(x, y) = ||x - y + eps||_p
    // over the last dim; swap: d(anchor, negative) is min'd with d(positive, negative).
    std::string a, pv, nv;
    ValueId aid, pid, nid;
    IVY_RETURN_IF_ERROR(operand("anchor", &a, &aid));
    IVY_RETURN_IF_ERROR(operand("positive", &pv, &pid));
    IVY_RETURN_IF_ERROR(operand("negative", &nv, &nid));
    auto p = call.Double("p"), eps = call.Double("eps");
    auto swap = call.Bool("swap");
    if (!p || !eps || !swap) return Status::Unsupported("p, eps or swap is not a number/bool");
    if (!(*p > 0) || std::isinf(*p)) return Status::Unsupported("p that is not a finite positive number");
    const int rank = ctx.Rank(aid);
    if (rank < 1 || rank > 2) return Status::Unsupported("inputs that are not 1-D or 2-D");
    auto dist = [&](const std::string& u, const std::string& v) {
      const std::string diff = ctx.EmitTemp("Add", {ctx.EmitTemp("Sub", {u, v}), F(ctx, *eps, d)});
      onnx::NodeProto* r = nullptr;
      std::string out;
      if (*p == 2.0 || *p == 1.0) {
        out = ctx.EmitTemp(*p == 2.0 ? "ReduceL2" : "ReduceL1", {diff}, &r);
        SetAttr(r, "axes", std::vector<int64_t>{-1});
      } else {
        out = ctx.EmitTemp("ReduceSum", {ctx.EmitTemp("Pow", {ctx.EmitTemp("Abs", {diff}), F(ctx, *p, d)}), ctx.Int64s({-1})}, &r);
        out = ctx.EmitTemp("Pow", {out, F(ctx, 1.0 / *p, d)});
      }
      SetAttr(r, "keepdims", int64_t{0});
      return out;
    };
    const std::string dp = dist(a, pv);
    std::string dn = dist(a, nv);
    if (*swap) dn = ctx.EmitTemp("Min", {dn, dist(pv, nv)});
    loss = ctx.EmitTemp("Max", {ctx.EmitTemp("Sub", {ctx.EmitTemp("Add", {F(ctx, *margin, d), dp}), dn}), zero});
  }
  return EmitReduced(ctx, loss, reduction, ctx.Out(result));
}

// nll_loss(input, target, weight, ignore_index, reduction) and cross_entropy (nll_loss of
// log_softmax over the class dim, with label_smoothing; or class probabilities as target).
// input is (C), (N, C) or (N, C, d1, ...); the class dim is 0 for a 1-D input, else 1.
Status LowerNllLoss(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, t, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "target", &t));
  IVY_RETURN_IF_ERROR(FloatResult(node, ctx, &result));
  const v1::DType d = ctx.DType(result);
  if (ctx.DType(x) != d) return Status::Unsupported("an input of another dtype than the loss");
  std::string reduction;
  IVY_RETURN_IF_ERROR(ReductionOf(call, &reduction));
  if (reduction != "none" && reduction != "mean" && reduction != "sum") {
    return Status::Unsupported("reduction '" + reduction + "'");
  }
  const bool ce = ctx.canonical() == "cross_entropy";
  const int rank = ctx.Rank(x);
  if (rank == 0) return Status::Unsupported("a 0-d input");
  const int64_t cdim = rank == 1 ? 0 : 1;
  auto ignore = call.Int("ignore_index");
  if (!ignore) return Status::Unsupported("ignore_index is not an int");
  double smoothing = 0.0;
  if (ce) {
    auto ls = call.Double("label_smoothing");
    if (!ls) return Status::Unsupported("label_smoothing is not a number");
    smoothing = *ls;
    if (smoothing < 0.0 || smoothing > 1.0) return Status::Unsupported("label_smoothing outside [0, 1]");
  }
  std::string w;
  const bool weighted = !call.IsNone("weight");
  if (weighted) {
    ValueId wv;
    IVY_RETURN_IF_ERROR(TensorParam(call, "weight", &wv));
    if (ctx.Rank(wv) != 1) return Status::Unsupported("a weight that is not 1-D");
    w = ctx.CastTo(ctx.In(wv), ctx.DType(wv), d);
  }
  std::string logp = ctx.In(x);
  if (ce) {
    auto* s = ctx.Emit("LogSoftmax", {logp}, {ctx.Temp("logp")});
    SetAttr(s, "axis", cdim);
    logp = s->output(0);
  }
  // The weight broadcast along the class dim: [C, 1, ...].
  auto class_view = [&](const std::string& v) {
    std::vector<int64_t> tail;
    for (int64_t k = 1; k < rank - cdim; ++k) tail.push_back(k);
    return tail.empty() ? v : ctx.Unsqueeze(v, tail);
  };
  const std::string n_classes = ctx.CastTo(DimScalar(ctx, logp, cdim), v1::INT64, d);
  if (IsFloating(ctx.DType(t))) {
    // Class probabilities (cross_entropy only): -sum_c(logp * weight * target), mean over the
    // numel / C positions; smoothing mixes the target with the uniform distribution.
    if (!ce) return Status::Unsupported("nll_loss with a floating target");
    if (ctx.Rank(t) != rank) return Status::Unsupported("class probabilities of another shape than the input");
    std::string target = ctx.CastTo(ctx.In(t), ctx.DType(t), d);
    if (smoothing > 0.0) {
      target = ctx.EmitTemp("Add", {ctx.EmitTemp("Mul", {target, F(ctx, 1.0 - smoothing, d)}),
                                    ctx.EmitTemp("Div", {F(ctx, smoothing, d), n_classes})});
    }
    std::string prod = logp;
    if (weighted) prod = ctx.EmitTemp("Mul", {prod, class_view(w)});
    prod = ctx.EmitTemp("Mul", {prod, target});
    if (reduction == "none") {
      auto* r = ctx.Emit("ReduceSum", {prod, ctx.Int64s({cdim})}, {ctx.Temp("sum")});
      SetAttr(r, "keepdims", int64_t{0});
      ctx.Emit("Neg", {r->output(0)}, {ctx.Out(result)});
      return Status::Ok();
    }
    const std::string total = ctx.EmitTemp("Neg", {Total(ctx, prod)});
    if (reduction == "sum") {
      ctx.Emit("Identity", {total}, {ctx.Out(result)});
    } else {
      const std::string count = ctx.EmitTemp("Div", {ctx.EmitTemp("Size", {logp}), DimScalar(ctx, logp, cdim)});
      ctx.Emit("Div", {total, ctx.CastTo(count, v1::INT64, d)}, {ctx.Out(result)});
    }
    return Status::Ok();
  }
  // Class indices.
  const v1::DType td = ctx.DType(t);
  if (td != v1::INT64 && td != v1::INT32 && td != v1::UINT8) return Status::Unsupported(std::string("a target of dtype ") + DTypeName(td));
  if (ctx.Rank(t) != rank - 1) return Status::Unsupported("a target whose rank is not the input's minus one");
  const std::string target = ctx.CastTo(ctx.In(t), td, v1::INT64);
  const std::string valid = ctx.EmitTemp("Not", {ctx.EmitTemp("Equal", {target, ctx.Scalar(Number::Int(*ignore), v1::INT64)})});
  const std::string zero_i = ctx.Scalar(Number::Int(0), v1::INT64);
  const std::string safe = ctx.EmitTemp("Where", {valid, target, zero_i});
  onnx::NodeProto* ge = nullptr;
  const std::string picked = ctx.EmitTemp("GatherElements", {logp, ctx.Unsqueeze(safe, {cdim})}, &ge);
  SetAttr(ge, "axis", cdim);
  const std::string picked_logp = ctx.Squeeze(picked, {cdim});
  const std::string zero = F(ctx, 0.0, d);
  std::string wt;  // the weight of each position's class, 0 where ignored
  if (weighted) {
    onnx::NodeProto* g = nullptr;
    wt = ctx.EmitTemp("Gather", {w, safe}, &g);
    SetAttr(g, "axis", int64_t{0});
    wt = ctx.EmitTemp("Where", {valid, wt, zero});
  } else {
    wt = ctx.EmitTemp("Where", {valid, F(ctx, 1.0, d), zero});
  }
  const std::string nll = ctx.EmitTemp("Where", {valid, ctx.EmitTemp("Neg", {ctx.EmitTemp("Mul", {picked_logp, wt})}), zero});
  auto total = [&](const std::string& v) { return Total(ctx, v); };
  auto reduce = [&](const std::string& v) {
    if (reduction == "none") return v;
    if (reduction == "sum") return total(v);
    return ctx.EmitTemp("Div", {total(v), total(wt)});
  };
  if (smoothing == 0.0) {
    ctx.Emit("Identity", {reduce(nll)}, {ctx.Out(result)});
    return Status::Ok();
  }
  // torch: (1 - s) * nll + reduce(smooth) * (s / C), smooth = -sum_c(logp * weight), 0 where
  // ignored; the mean divides by the same weight total as the nll's.
  std::string lw = logp;
  if (weighted) lw = ctx.EmitTemp("Mul", {lw, class_view(w)});
  auto* rs = ctx.Emit("ReduceSum", {lw, ctx.Int64s({cdim})}, {ctx.Temp("smooth")});
  SetAttr(rs, "keepdims", int64_t{0});
  const std::string smooth = ctx.EmitTemp("Where", {valid, ctx.EmitTemp("Neg", {rs->output(0)}), zero});
  const std::string a = ctx.EmitTemp("Mul", {F(ctx, 1.0 - smoothing, d), reduce(nll)});
  const std::string b = ctx.EmitTemp("Mul", {reduce(smooth), ctx.EmitTemp("Div", {F(ctx, smoothing, d), n_classes})});
  ctx.Emit("Add", {a, b}, {ctx.Out(result)});
  return Status::Ok();
}

}  // namespace onnx_export
}  // namespace ivytrace
