// Shape, indexing, reduction, sorting and factory lowerings: stack/split/chunk/unbind,
// squeeze/unsqueeze/expand, gather/take/embedding, reductions with dims/keepdim, arg-reductions,
// cumsum, topk/sort, tril/triu, full/zeros_like/arange, and JAX's broadcast_in_dim/slice/iota.
#include <algorithm>
#include <limits>
#include <numeric>

#include "core/export/onnx/lowerings.h"
#include "core/ir/arg.h"

namespace ivytrace {
namespace onnx_export {

namespace {

const v1::ArgList* Items(const v1::Arg* a) {
  if (!a) return nullptr;
  if (a->kind_case() == v1::Arg::kList) return &a->list();
  if (a->kind_case() == v1::Arg::kTuple) return &a->tuple();
  return nullptr;
}

// dim (int, list, tuple or None) -> sorted unique normalized axes; empty = every axis.
Status Axes(const BoundCall& call, const char* param, int rank, std::vector<int64_t>* axes) {
  axes->clear();
  if (call.IsNone(param)) return Status::Ok();
  auto dims = call.IntList(param);
  if (!dims) return Status::Unsupported(std::string(param) + " " + ArgToString(*call.Get(param), true));
  for (int64_t dim : *dims) {
    int64_t a;
    IVY_RETURN_IF_ERROR(NormalizeAxis(dim, std::max(rank, 1), &a));
    axes->push_back(a);
  }
  std::sort(axes->begin(), axes->end());
  axes->erase(std::unique(axes->begin(), axes->end()), axes->end());
  return Status::Ok();
}

// Axes, with none (or an empty list) meaning every axis, spelled out.
Status AxesOrAll(const BoundCall& call, const char* param, int rank, std::vector<int64_t>* axes) {
  IVY_RETURN_IF_ERROR(Axes(call, param, rank, axes));
  if (axes->empty()) {
    axes->resize(static_cast<size_t>(rank));
    std::iota(axes->begin(), axes->end(), 0);
  }
  return Status::Ok();
}

// An axis given as a 0-d int64 tensor (CumSum).
std::string AxisScalar(LoweringContext& ctx, int64_t axis) { return ctx.Scalar(Number::Int(axis), v1::INT64); }

}  // namespace

// --- reductions -------------------------------------------------------------------------------------

Status LowerReduce(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const std::string& c = ctx.canonical();
  static const std::pair<std::string_view, std::string_view> kOps[] = {
      {"sum", "ReduceSum"}, {"mean", "ReduceMean"}, {"prod", "ReduceProd"}, {"max", "ReduceMax"},
      {"min", "ReduceMin"}, {"any", "ReduceMax"},   {"all", "ReduceMin"},
  };
  std::string op;
  for (const auto& [name, o] : kOps) {
    if (c == name) op = o;
  }
  if (op.empty()) return Status::Unsupported("'reduce' lowering does not know canonical op '" + c + "'");
  const int rank = ctx.Rank(x);
  std::vector<int64_t> axes;
  IVY_RETURN_IF_ERROR(Axes(call, "dim", rank, &axes));
  // dim=() : NumPy/JAX reduce over no axis; torch over every axis (x.amax(), torch.sum(x, dim=[])).
  const bool torch_op = node.op.rfind("torch.", 0) == 0;
  if (!call.IsNone("dim") && axes.empty() && rank > 0 && Items(call.Get("dim")) && !torch_op) {
    ctx.Emit("Identity", {ctx.CastTo(ctx.In(x), ctx.DType(x), ctx.DType(result))}, {ctx.Out(result)});
    return Status::Ok();
  }
  const bool keepdim = call.Bool("keepdim").value_or(false);
  std::string in = ctx.In(x);
  v1::DType d = ctx.DType(x);
  if (!call.IsNone("dtype")) {
    if (auto want = ArgDType(*call.Get("dtype"))) {
      in = ctx.CastTo(in, d, *want);
      d = *want;
    }
  }
  const v1::DType rd = ctx.DType(result);
  // any/all work on 0/1 integers; bool max/min likewise (ONNX reductions take no bool).
  const v1::DType work = (c == "any" || c == "all" || rd == v1::BOOL) ? v1::INT32
                         : (c == "mean" && !IsFloating(rd)) ? v1::FLOAT32 : rd;
  if (c == "any" || c == "all") in = ctx.CastTo(ctx.CastTo(in, d, v1::BOOL), v1::BOOL, work);
  else in = ctx.CastTo(in, d, work);
  // np.sum/np.prod(where=mask, initial=v): masked-out items count as 0 / 1, then v is added /
  // multiplied in.
  if (const v1::Arg* w = call.Get("where"); w && AsBool(*w) != true) {
    if ((c != "sum" && c != "prod") || w->kind_case() != v1::Arg::kTensor) {
      return Status::Unsupported(c + " with where=" + ArgToString(*w, true));
    }
    const ValueId m = w->tensor().value();
    const std::string mask = ctx.EmitTemp("Expand", {ctx.CastTo(ctx.In(m), ctx.DType(m), v1::BOOL), ctx.EmitTemp("Shape", {in})});
    const std::string kept = ctx.Temp("kept");
    EmitWhere(ctx, mask, in, ctx.Scalar(Number::Int(c == "sum" ? 0 : 1), work), work, kept);
    in = kept;
  }
  // initial=v (NumPy): one more item in the reduction.
  std::string initial;
  const char* combine = c == "sum" ? "Add" : c == "prod" ? "Mul" : c == "max" ? "Max" : c == "min" ? "Min" : nullptr;
  if (!call.IsNone("initial")) {
    if (!combine || work != rd) return Status::Unsupported(c + " with initial=");
    IVY_RETURN_IF_ERROR(OperandAs(ctx, *call.Get("initial"), work, &initial));
  }
  if (rank == 0) {
    if (!initial.empty()) ctx.Emit(combine, {in, initial}, {ctx.Out(result)});
    else ctx.Emit("Identity", {ctx.CastTo(in, work, rd)}, {ctx.Out(result)});
    return Status::Ok();
  }
  const bool axes_as_input = op == "ReduceSum" ? ctx.opset() >= 13 : ctx.opset() >= 18;
  std::vector<std::string> ins = {in};
  if (axes_as_input && !axes.empty()) ins.push_back(ctx.Int64s(axes));
  const bool direct = work == rd && initial.empty();
  std::string out = direct ? ctx.Out(result) : ctx.Temp("reduced");
  auto* n = ctx.Emit(op, ins, {out});
  if (!axes_as_input && !axes.empty()) SetAttr(n, "axes", axes);
  SetAttr(n, "keepdims", int64_t{keepdim ? 1 : 0});
  if (!initial.empty()) {   // work == rd here
    ctx.Emit(combine, {out, initial}, {ctx.Out(result)});
    return Status::Ok();
  }
  if (!direct) {
    auto* cast = ctx.Emit("Cast", {out}, {ctx.Out(result)});
    SetAttr(cast, "to", static_cast<int64_t>(OnnxElemType(rd)));
  }
  return Status::Ok();
}

// logsumexp(x, dim, keepdim) as torch computes it: m = max over dim (0 where it is infinite, so
// that a row of -inf gives -inf and one holding +inf gives +inf, not NaN), log(sum(exp(x - m))) + m.
Status LowerLogSumExp(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const int rank = ctx.Rank(x);
  std::vector<int64_t> axes;
  IVY_RETURN_IF_ERROR(AxesOrAll(call, "dim", rank, &axes));
  const v1::DType d = ctx.DType(result);
  if (!IsFloating(d)) return Status::Unsupported("logsumexp with a non-float result");
  const bool keepdim = call.Bool("keepdim").value_or(false);
  const std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  if (rank == 0) {
    ctx.Emit("Identity", {in}, {ctx.Out(result)});
    return Status::Ok();
  }
  onnx::NodeProto* mx = nullptr;
  const std::string m = ctx.EmitTemp("ReduceMax", {in}, &mx);
  SetAttr(mx, "axes", axes);
  SetAttr(mx, "keepdims", int64_t{1});
  const std::string finite = ctx.EmitTemp("Where", {ctx.EmitTemp("IsInf", {m}), ctx.Scalar(Number::Float(0.0), d), m});
  onnx::NodeProto* sum = nullptr;
  const std::string s = ctx.EmitTemp("ReduceSum", {ctx.EmitTemp("Exp", {ctx.EmitTemp("Sub", {in, finite})}),
                                                   ctx.Int64s(axes)}, &sum);
  SetAttr(sum, "keepdims", int64_t{1});
  const std::string r = ctx.EmitTemp("Add", {ctx.EmitTemp("Log", {s}), finite});
  if (keepdim) ctx.Emit("Identity", {r}, {ctx.Out(result)});
  else ctx.Emit("Squeeze", {r, ctx.Int64s(axes)}, {ctx.Out(result)});
  return Status::Ok();
}

// std/var: mean of squared deviations, with a correction (torch `correction`/`unbiased`, NumPy `ddof`).
Status LowerVariance(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const int rank = ctx.Rank(x);
  std::vector<int64_t> axes;
  IVY_RETURN_IF_ERROR(AxesOrAll(call, "dim", rank, &axes));
  const double ddof = call.Double("ddof").value_or(call.Double("correction").value_or(0.0));
  const v1::DType d = ctx.DType(result);
  if (!IsFloating(d)) return Status::Unsupported("std/var with a non-float result");
  const bool keepdim = call.Bool("keepdim").value_or(false);
  std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  auto* m = static_cast<onnx::NodeProto*>(nullptr);
  std::string mean = ctx.EmitTemp("ReduceMean", {in}, &m);
  SetAttr(m, "axes", axes);
  SetAttr(m, "keepdims", int64_t{1});
  std::string dev = ctx.EmitTemp("Sub", {in, mean});
  std::string sq = ctx.EmitTemp("Mul", {dev, dev});
  std::string s = ctx.EmitTemp("ReduceSum", {sq, ctx.Int64s(axes)}, &m);
  SetAttr(m, "keepdims", int64_t{keepdim ? 1 : 0});
  // The count of reduced elements from the input's run-time shape (a reduced dim may be dynamic).
  onnx::NodeProto* g = nullptr;
  std::string dims = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {in}), ctx.Int64s(axes)}, &g);
  SetAttr(g, "axis", int64_t{0});
  std::string count = ctx.CastTo(ctx.EmitTemp("ReduceProd", {dims}, &m), v1::INT64, d);
  SetAttr(m, "keepdims", int64_t{0});
  std::string var = ctx.EmitTemp("Div", {s, ctx.EmitTemp("Sub", {count, ctx.Scalar(Number::Float(ddof), d)})});
  ctx.Emit(ctx.canonical() == "std" ? "Sqrt" : "Identity", {var}, {ctx.Out(result)});
  return Status::Ok();
}

// torch.var/torch.std: the correction is torch's (1 unless `unbiased=False` or `correction=` says
// otherwise; NumPy's var/std default to ddof 0), and a bool in the dim slot is the
// (input, unbiased) overload.
Status LowerTorchVariance(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  BoundCall c = call;
  std::optional<bool> unbiased = call.Bool("unbiased");
  if (const v1::Arg* d = call.Get("dim"); d && d->kind_case() == v1::Arg::kB) {
    if (unbiased) return Status::Unsupported("torch.var/std with two unbiased flags");
    unbiased = d->b();
    v1::Arg none;
    none.set_none(true);
    c.Set("dim", none);
  }
  double correction = 1.0;
  if (!call.IsNone("correction")) {
    auto v = call.Double("correction");
    if (!v) return Status::Unsupported("torch.var/std with correction " + ArgToString(*call.Get("correction"), true));
    if (unbiased) return Status::Unsupported("torch.var/std with both unbiased and correction");
    correction = *v;
  } else if (unbiased) {
    correction = *unbiased ? 1.0 : 0.0;
  }
  v1::Arg ddof;
  ddof.set_f(correction);
  c.Set("correction", ddof);
  ctx.SetCanonical(ctx.canonical() == "torch_std" ? "std" : "var");
  return LowerVariance(node, c, ctx);
}

// torch.linalg.vector_norm(x, ord, dim, keepdim, dtype) and NumPy's linalg.norm of vectors:
// ord 2 -> ReduceL2, 1 -> ReduceL1, inf / -inf -> ReduceMax / ReduceMin of |x|, 0 -> the count
// of nonzeros, other p -> (sum |x|^p)^(1/p). NumPy's matrix norms (two axes, or a matrix with
// axis None and an explicit ord) are refused; with ord None NumPy's Frobenius norm is the 2-norm
// of the flattened values, which is what ReduceL2 over every axis computes.
Status LowerVectorNorm(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const int rank = ctx.Rank(x);
  std::vector<int64_t> axes;
  IVY_RETURN_IF_ERROR(Axes(call, "dim", rank, &axes));
  const bool numpy = ctx.canonical() == "norm";
  std::optional<double> p = 2.0;
  if (const v1::Arg* o = call.Get("ord"); o && o->kind_case() == v1::Arg::kS) {
    // torch.norm's p: 'fro' is the 2-norm of the values over dim (every dim when None); 'nuc' is
    // a matrix norm.
    if (o->s() != "fro") return Status::Unsupported("norm with p " + ArgToString(*o, true));
  } else if (call.Has("ord") && !call.IsNone("ord")) {
    p = call.Double("ord");
    if (!p) return Status::Unsupported("norm with ord " + ArgToString(*call.Get("ord"), true));
    if (numpy && (axes.size() >= 2 || (axes.empty() && rank >= 2))) {
      return Status::Unsupported("a matrix norm (numpy.linalg.norm with ord over two axes)");
    }
  }
  if (axes.empty()) {
    axes.resize(rank);
    std::iota(axes.begin(), axes.end(), 0);
  }
  const bool keepdim = call.Bool("keepdim").value_or(false);
  const v1::DType rd = ctx.DType(result);
  if (!IsFloating(rd)) return Status::Unsupported("a norm with a non-float result");
  std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), rd);
  if (rank == 0) {
    ctx.Emit("Abs", {in}, {ctx.Out(result)});
    return Status::Ok();
  }
  auto reduce = [&](const char* op, const std::string& v, const std::string& out) {
    std::vector<std::string> ins = {v};
    const bool axes_as_input = std::string_view(op) == "ReduceSum" ? ctx.opset() >= 13 : ctx.opset() >= 18;
    if (axes_as_input) ins.push_back(ctx.Int64s(axes));
    auto* n = ctx.Emit(op, ins, {out});
    if (!axes_as_input) SetAttr(n, "axes", axes);
    SetAttr(n, "keepdims", int64_t{keepdim ? 1 : 0});
  };
  const double inf = std::numeric_limits<double>::infinity();
  if (*p == 2.0 || *p == 1.0) {
    reduce(*p == 2.0 ? "ReduceL2" : "ReduceL1", in, ctx.Out(result));
  } else if (*p == inf || *p == -inf) {
    reduce(*p == inf ? "ReduceMax" : "ReduceMin", ctx.EmitTemp("Abs", {in}), ctx.Out(result));
  } else if (*p == 0.0) {
    std::string nz = ctx.CastTo(ctx.EmitTemp("Not", {ctx.EmitTemp("Equal", {in, ctx.Scalar(Number::Float(0.0), rd)})}),
                                v1::BOOL, rd);
    reduce("ReduceSum", nz, ctx.Out(result));
  } else {
    std::string pw = ctx.EmitTemp("Pow", {ctx.EmitTemp("Abs", {in}), ctx.Scalar(Number::Float(*p), rd)});
    std::string sum = ctx.Temp("norm_sum");
    reduce("ReduceSum", pw, sum);
    ctx.Emit("Pow", {sum, ctx.Scalar(Number::Float(1.0 / *p), rd)}, {ctx.Out(result)});
  }
  return Status::Ok();
}

// torch._weight_norm(v, g, dim): v * g / ||v||_2, the norm over every dim but `dim` (kept as
// size 1, so g broadcasts), over every dim when dim is -1.
Status LowerWeightNorm(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId v, g, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "v", &v));
  IVY_RETURN_IF_ERROR(TensorParam(call, "g", &g));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const int rank = ctx.Rank(v);
  const auto dim = call.Int("dim");
  if (!dim) return Status::Unsupported("weight_norm with dim that is not an int");
  std::vector<int64_t> axes;
  int64_t keep = -1;
  if (*dim != -1) IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, std::max(rank, 1), &keep));
  for (int64_t k = 0; k < rank; ++k) {
    if (k != keep) axes.push_back(k);
  }
  const v1::DType d = ctx.DType(result);
  if (!IsFloating(d)) return Status::Unsupported("weight_norm of a non-float tensor");
  const std::string in = ctx.CastTo(ctx.In(v), ctx.DType(v), d);
  std::string norm = in;
  if (!axes.empty()) {
    onnx::NodeProto* r = nullptr;
    if (ctx.opset() >= 18) {
      norm = ctx.EmitTemp("ReduceL2", {in, ctx.Int64s(axes)}, &r);
    } else {
      norm = ctx.EmitTemp("ReduceL2", {in}, &r);
      SetAttr(r, "axes", axes);
    }
    SetAttr(r, "keepdims", int64_t{1});
  } else {
    norm = ctx.EmitTemp("Abs", {in});
  }
  const std::string scale = ctx.EmitTemp("Div", {ctx.CastTo(ctx.In(g), ctx.DType(g), d), norm});
  ctx.Emit("Mul", {in, scale}, {ctx.Out(result)});
  return Status::Ok();
}

Status LowerArgReduce(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  std::string in = ctx.In(x);
  const v1::DType d = ctx.DType(x);
  if (d == v1::BOOL) in = ctx.CastTo(in, d, v1::INT32);
  int64_t axis = 0;
  const bool keepdim = call.Bool("keepdim").value_or(false);
  if (keepdim && call.IsNone("dim") && ctx.Rank(x) > 1) {
    return Status::Unsupported("argmax/argmin over every axis with keepdims");
  }
  if (call.IsNone("dim")) {  // over the flattened input
    in = ctx.EmitTemp("Reshape", {in, ctx.Int64s({-1})});
  } else {
    auto dim = call.Int("dim");
    if (!dim) return Status::Unsupported("dim " + ArgToString(*call.Get("dim"), true));
    IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, std::max(ctx.Rank(x), 1), &axis));
  }
  const bool cast = ctx.DType(result) != v1::INT64;
  std::string out = cast ? ctx.Temp("arg") : ctx.Out(result);
  auto* n = ctx.Emit(ctx.canonical() == "argmax" ? "ArgMax" : "ArgMin", {in}, {out});
  SetAttr(n, "axis", axis);
  SetAttr(n, "keepdims", int64_t{keepdim && !call.IsNone("dim") ? 1 : 0});
  if (cast) {
    auto* c = ctx.Emit("Cast", {out}, {ctx.Out(result)});
    SetAttr(c, "to", static_cast<int64_t>(OnnxElemType(ctx.DType(result))));
  }
  return Status::Ok();
}

Status LowerCumsum(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), ctx.DType(result));
  int64_t axis = 0;
  if (call.IsNone("dim")) {  // NumPy: the flattened input
    in = ctx.EmitTemp("Reshape", {in, ctx.Int64s({-1})});
  } else {
    auto dim = call.Int("dim");
    if (!dim) return Status::Unsupported("dim " + ArgToString(*call.Get("dim"), true));
    IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, std::max(ctx.Rank(x), 1), &axis));
  }
  if (ctx.Rank(x) == 0) {
    ctx.Emit("Identity", {in}, {ctx.Out(result)});
    return Status::Ok();
  }
  auto* n = ctx.Emit("CumSum", {in, AxisScalar(ctx, axis)}, {ctx.Out(result)});
  if (call.Bool("reverse").value_or(false)) SetAttr(n, "reverse", int64_t{1});
  return Status::Ok();
}

// topk(input, k, dim, largest, sorted); sort/argsort as a TopK over the whole dim.
Status LowerTopK(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  const std::vector<ValueId> results = ResultTensors(node);
  const std::string& c = ctx.canonical();
  const int rank = ctx.Rank(x);
  if (rank == 0) return Status::Unsupported(c + " of a 0-d tensor");
  if (call.Has("dim") && call.IsNone("dim")) return Status::Unsupported(c + " of the flattened array (axis None)");
  if (call.Has("order") && !call.IsNone("order")) return Status::Unsupported(c + " by fields (order)");
  // TopK keeps equal items in index order: what stable=True / kind='stable' ask, and one of the
  // orders an unstable sort may give.
  for (const char* p : {"stable", "kind", "is_stable"}) call.Get(p);
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(call.Int("dim").value_or(-1), rank, &axis));
  int64_t k;
  bool largest;
  if (c == "top_k") {
    auto kk = call.Int("k");
    if (!kk) return Status::Unsupported("k is not an int");
    k = *kk;
    largest = call.Bool("largest").value_or(true);
    if (results.size() != 2) return Status::Unsupported("topk without (values, indices)");
  } else {
    k = -1;  // every element along the axis: read from the run-time shape below
    largest = call.Bool("descending").value_or(false);
    if (call.Bool("stable").value_or(false)) {
      // TopK orders equal values by index, as a stable sort does.
    }
    // NumPy's sort returns the values only; torch's (values, indices).
    if ((c == "sort" && results.size() != 2 && results.size() != 1) || (c == "argsort" && results.size() != 1)) {
      return Status::Unsupported(c + " with an unexpected result");
    }
  }
  std::string in = ctx.In(x);
  const v1::DType d = ctx.DType(x);
  if (d == v1::BOOL) in = ctx.CastTo(in, d, v1::INT32);
  std::string values = c == "argsort" ? ctx.Temp("values") : ctx.Temp("values");
  std::string indices = ctx.Temp("indices");
  std::string kk = ctx.Int64s({k});
  if (k < 0) {
    onnx::NodeProto* g = nullptr;
    kk = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {in}), ctx.Int64s({axis})}, &g);
    SetAttr(g, "axis", int64_t{0});
  }
  auto* n = ctx.Emit("TopK", {in, kk}, {values, indices});
  SetAttr(n, "axis", axis);
  SetAttr(n, "largest", int64_t{largest ? 1 : 0});
  SetAttr(n, "sorted", int64_t{1});
  if (c == "argsort") {
    ctx.Emit("Identity", {ctx.CastTo(indices, v1::INT64, ctx.DType(results[0]))}, {ctx.Out(results[0])});
  } else {
    ctx.Emit("Identity", {ctx.CastTo(values, d == v1::BOOL ? v1::INT32 : d, d)}, {ctx.Out(results[0])});
    if (results.size() == 2) {
      ctx.Emit("Identity", {ctx.CastTo(indices, v1::INT64, ctx.DType(results[1]))}, {ctx.Out(results[1])});
    }
  }
  return Status::Ok();
}

// --- joining and splitting --------------------------------------------------------------------------

Status LowerStack(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::ArgList* items = Items(call.Get("tensors"));
  if (!items || items->items_size() == 0) return Status::Unsupported("stack of something that is not a list of tensors");
  const int rank = ctx.Rank(result);
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(call.Int("dim").value_or(0), rank, &axis));
  std::vector<std::string> ins;
  for (const auto& it : items->items()) {
    if (it.kind_case() != v1::Arg::kTensor) return Status::Unsupported("stack of a non-tensor item");
    ValueId v = it.tensor().value();
    ins.push_back(ctx.Unsqueeze(ctx.CastTo(ctx.In(v), ctx.DType(v), ctx.DType(result)), {axis}));
  }
  auto* n = ctx.Emit("Concat", ins, {ctx.Out(result)});
  SetAttr(n, "axis", axis);
  return Status::Ok();
}

// split/chunk/unbind/array_split: the pieces' sizes along the axis are those recorded.
// torch.meshgrid(*tensors, indexing): N 1-D tensors -> N tensors of shape (n_0, ..., n_{N-1})
// ('ij', torch's default; 'xy' swaps the first two dims). Each is its input reshaped to -1 on its
// own dim and 1 elsewhere, expanded to the sizes read from the inputs when the model runs.
Status LowerMeshgrid(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  const v1::Arg* a = call.Get("tensors");
  auto items = a ? SequenceItems(*a) : std::nullopt;
  if (items && items->size() == 1 && SequenceItems(*(*items)[0])) items = SequenceItems(*(*items)[0]);  // meshgrid([a, b])
  if (!items || items->empty()) return Status::Unsupported("meshgrid of no tensors");
  std::vector<ValueId> ins;
  for (const v1::Arg* it : *items) {
    if (it->kind_case() != v1::Arg::kTensor || ctx.Rank(it->tensor().value()) != 1) {
      return Status::Unsupported("meshgrid of something other than 1-D tensors");
    }
    ins.push_back(it->tensor().value());
  }
  const std::vector<ValueId> results = ResultTensors(node);
  if (results.size() != ins.size()) return Status::Unsupported("meshgrid with as many results as inputs");
  bool xy = false;
  if (const v1::Arg* ix = call.Get("indexing"); ix && !IsNone(*ix)) {
    if (ix->kind_case() != v1::Arg::kS || (ix->s() != "ij" && ix->s() != "xy")) {
      return Status::Unsupported("meshgrid indexing " + ArgToString(*ix, true));
    }
    xy = ix->s() == "xy";
  }
  if (call.Bool("sparse").value_or(false)) return Status::Unsupported("np.meshgrid(sparse=True)");
  const int n = static_cast<int>(ins.size());
  std::vector<int> dim_of(n);  // the output dim input k runs along
  for (int k = 0; k < n; ++k) dim_of[k] = (xy && n >= 2 && k < 2) ? 1 - k : k;
  std::vector<std::string> sizes(n);
  for (int k = 0; k < n; ++k) sizes[dim_of[k]] = ctx.EmitTemp("Shape", {ctx.In(ins[k])});
  onnx::NodeProto* c = nullptr;
  const std::string shape = n == 1 ? sizes[0] : ctx.EmitTemp("Concat", sizes, &c);
  if (c) SetAttr(c, "axis", int64_t{0});
  for (int k = 0; k < n; ++k) {
    std::vector<int64_t> view(n, 1);
    view[dim_of[k]] = -1;
    const std::string in = ctx.CastTo(ctx.In(ins[k]), ctx.DType(ins[k]), ctx.DType(results[k]));
    ctx.Emit("Expand", {ctx.EmitTemp("Reshape", {in, ctx.Int64s(view)}), shape}, {ctx.Out(results[k])});
  }
  return Status::Ok();
}

Status LowerSplit(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  const std::vector<ValueId> results = ResultTensors(node);
  if (results.empty()) return Status::Unsupported("split returns no tensors");
  const int rank = ctx.Rank(x);
  int64_t axis;
  // np.hsplit (axis 1, 0 for a 1-D array), np.vsplit (0), np.dsplit (2): np.split on a fixed axis.
  int64_t dim = call.Int("dim").value_or(0);
  // torch.hsplit/vsplit/dsplit likewise (and torch.tensor_split is np.array_split with a dim).
  const std::string op_name = node.op;
  auto one_of = [&](const char* a, const char* b, const char* c) { return op_name == a || op_name == b || op_name == c; };
  if (one_of("numpy.hsplit", "torch.hsplit", "torch.Tensor.hsplit")) dim = rank >= 2 ? 1 : 0;
  else if (one_of("numpy.vsplit", "torch.vsplit", "torch.Tensor.vsplit")) dim = 0;
  else if (one_of("numpy.dsplit", "torch.dsplit", "torch.Tensor.dsplit")) dim = 2;
  IVY_RETURN_IF_ERROR(NormalizeAxis(dim, rank, &axis));
  const bool unbind = ctx.canonical() == "unbind";
  // torch.chunk's count and jax.lax.split's sizes are the recorded results' (their sizes below;
  // JAX's are static, and a chunked dim of another size fails in the Split, never silently).
  call.Get("chunks");
  call.Get("sizes");
  // unbind gives as many tensors as the dim is long: the graph holds the recorded count, so a
  // run-time length that differs (`for e in x[mask]`, `for i in t.nonzero()`) is the replay's
  // GuardError. Here the same check: x is reshaped to its own shape while the length is the
  // recorded count, and to an invalid shape otherwise, in a node named as an ivytrace guard, so
  // onnxruntime refuses the input there rather than in the Split (or silently, for one piece).
  // The same check for the pieces' recorded sizes below (torch.chunk, torch.split by a size):
  // at another length of the dim the Split failed naming no guard, or (one recorded piece)
  // returned the whole input as the only piece.
  auto guard_length = [&](const std::string& in, int64_t length, const std::string& what) {
    // (A 0-d index: a dim ONNX shape inference knows becomes a constant, and a check that holds
    // is then dropped, DropHeldLengthGuards.)
    onnx::NodeProto* g = nullptr;
    const std::string shape = ctx.EmitTemp("Shape", {in});
    const std::string n = ctx.EmitTemp("Gather", {shape, AxisScalar(ctx, axis)}, &g);
    SetAttr(g, "axis", int64_t{0});
    const std::string ok = ctx.EmitTemp("Equal", {n, ctx.Int64s({length})});
    const std::string to =
        ctx.EmitTemp("Where", {ok, shape, ctx.Int64s(std::vector<int64_t>(static_cast<size_t>(rank), -2))});
    onnx::NodeProto* r = nullptr;
    const std::string checked = ctx.EmitTemp("Reshape", {in, to}, &r);
    // Node names are unique in a model: the same line splits once per loop iteration.
    r->set_name("ivytrace guard (" + what + ") " + ctx.Temp("check") + ": " + node.op + " at " +
                (node.loc.file().empty() ? std::string("an unknown line")
                                         : node.loc.file() + ":" + std::to_string(node.loc.line())) +
                ": recorded " + std::to_string(length) + " along dim " + std::to_string(axis) +
                " (the input gives another length: the program takes another path)");
    return checked;
  };
  std::string src = ctx.In(x);
  if (unbind && rank > 0) src = guard_length(src, static_cast<int64_t>(results.size()), "unbind count");
  std::vector<int64_t> sizes;
  std::vector<std::string> outs;
  for (ValueId r : results) {
    const auto& s = ctx.Shape(r);
    if (unbind) sizes.push_back(1);
    else if (static_cast<int>(s.size()) != rank) return Status::Unsupported("a split piece of another rank");
    else sizes.push_back(s[axis]);
    outs.push_back(unbind ? ctx.Temp("piece") : ctx.Out(r));
  }
  // split(x, [n // 3, n - n // 3]): sizes read from shapes are computed at run time.
  const v1::Arg* sections = call.Get("split_size_or_sections");
  const bool sym_sections = sections && !unbind && IsSymbolicArg(ctx, *sections) &&
                            (sections->kind_case() == v1::Arg::kList || sections->kind_case() == v1::Arg::kTuple);
  // np.split(x, [i, j]): split points; the pieces are [i, j - i, n - j], n the run-time size.
  const v1::Arg* points = call.Get("indices_or_sections");
  const bool point_list = points && !unbind &&
                          (points->kind_case() == v1::Arg::kList || points->kind_case() == v1::Arg::kTuple);
  // np.split(x, k) / np.array_split(x, k): k sections of the run-time size n, n // k each
  // (np.split; a size k does not divide fails in the Split, as NumPy raises), or the first n % k
  // of them one larger (np.array_split).
  const bool numpy_sections = points && AsInt(*points).has_value();  // NumPy's and torch's indices_or_sections
  if (numpy_sections && *AsInt(*points) != static_cast<int64_t>(results.size())) {
    return Status::Unsupported("np.split into " + std::to_string(*AsInt(*points)) + " sections gave " +
                               std::to_string(results.size()) + " arrays");
  }
  if (numpy_sections && results.size() > 1) {
    const int64_t k = static_cast<int64_t>(results.size());
    auto* g = ctx.Emit("Gather", {ctx.EmitTemp("Shape", {ctx.In(x)}), ctx.Int64s({axis})}, {ctx.Temp("n")});
    SetAttr(g, "axis", int64_t{0});
    const std::string n = g->output(0), kk = ctx.Int64s({k});
    std::string split = ctx.EmitTemp("Expand", {ctx.EmitTemp("Div", {n, kk}), kk});
    if (one_of("numpy.array_split", "torch.tensor_split", "torch.Tensor.tensor_split")) {
      std::vector<int64_t> positions(k);
      std::iota(positions.begin(), positions.end(), 0);
      onnx::NodeProto* m = nullptr;
      const std::string r = ctx.EmitTemp("Mod", {n, kk}, &m);
      SetAttr(m, "fmod", int64_t{0});
      split = ctx.EmitTemp("Add", {split, ctx.CastTo(ctx.EmitTemp("Less", {ctx.Int64s(positions), r}), v1::BOOL, v1::INT64)});
    }
    auto* sp = ctx.Emit("Split", {ctx.In(x), split}, outs);
    SetAttr(sp, "axis", axis);
  } else if (results.size() == 1 && (numpy_sections || unbind)) {
    ctx.Emit("Identity", {src}, {outs[0]});
  } else if (point_list) {
    for (const auto& it : points->kind_case() == v1::Arg::kList ? points->list().items() : points->tuple().items()) {
      if (auto i = AsInt(it); i && *i < 0) return Status::Unsupported("np.split at a negative index");
    }
    std::string p;
    IVY_RETURN_IF_ERROR(DynamicInts(ctx, *points, &p));
    auto* g = ctx.Emit("Gather", {ctx.EmitTemp("Shape", {ctx.In(x)}), ctx.Int64s({axis})}, {ctx.Temp("n")});
    SetAttr(g, "axis", int64_t{0});
    onnx::NodeProto* c1 = nullptr;
    onnx::NodeProto* c2 = nullptr;
    std::string ends = ctx.EmitTemp("Concat", {p, g->output(0)}, &c1);
    std::string starts = ctx.EmitTemp("Concat", {ctx.Int64s({0}), p}, &c2);
    SetAttr(c1, "axis", int64_t{0});
    SetAttr(c2, "axis", int64_t{0});
    auto* n = ctx.Emit("Split", {ctx.In(x), ctx.EmitTemp("Sub", {ends, starts})}, outs);
    SetAttr(n, "axis", axis);
  } else if (sym_sections) {
    std::string split;
    IVY_RETURN_IF_ERROR(DynamicInts(ctx, *sections, &split));
    auto* n = ctx.Emit("Split", {ctx.In(x), split}, outs);
    SetAttr(n, "axis", axis);
  } else {
    if (!unbind && rank > 0) {
      int64_t total = 0;
      for (int64_t s : sizes) total += s;
      src = guard_length(src, total, "split sizes");
    }
    if (results.size() == 1) {
      ctx.Emit("Identity", {src}, {outs[0]});
    } else {
      auto* n = ctx.Emit("Split", {src, ctx.Int64s(sizes)}, outs);
      SetAttr(n, "axis", axis);
    }
  }
  if (unbind) {
    for (size_t i = 0; i < results.size(); ++i) {
      ctx.Emit("Squeeze", {outs[i], ctx.Int64s({axis})}, {ctx.Out(results[i])});
    }
  }
  return Status::Ok();
}

Status LowerSqueeze(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const auto& shape = ctx.Shape(x);
  std::vector<int64_t> axes;
  IVY_RETURN_IF_ERROR(Axes(call, "dim", ctx.Rank(x), &axes));
  if (call.IsNone("dim")) {
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] == 1) axes.push_back(static_cast<int64_t>(i));
    }
  } else {  // torch: a named dim that is not of size 1 is kept
    axes.erase(std::remove_if(axes.begin(), axes.end(), [&](int64_t a) { return shape[a] != 1; }), axes.end());
  }
  if (axes.empty()) ctx.Emit("Identity", {ctx.In(x)}, {ctx.Out(result)});
  else ctx.Emit("Squeeze", {ctx.In(x), ctx.Int64s(axes)}, {ctx.Out(result)});
  return Status::Ok();
}

Status LowerExpandDims(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const int out_rank = ctx.Rank(result);
  auto dims = call.IntList("dim");
  if (!dims) return Status::Unsupported("dim is not an int");
  std::vector<int64_t> axes;
  for (int64_t d : *dims) {
    int64_t a;
    IVY_RETURN_IF_ERROR(NormalizeAxis(d, out_rank, &a));
    axes.push_back(a);
  }
  std::sort(axes.begin(), axes.end());
  ctx.Emit("Unsqueeze", {ctx.In(x), ctx.Int64s(axes)}, {ctx.Out(result)});
  return Status::Ok();
}

// expand/broadcast_to/expand_as: Expand broadcasts, so -1 ("keep") becomes 1.
Status LowerBroadcastTo(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  std::string shape;
  if (auto other = call.Tensor("other")) {
    shape = ctx.EmitTemp("Shape", {ctx.In(*other)});
  } else {
    // -1 keeps a dim: 1 in Expand's shape, which then follows the input. A size read from a shape
    // (expand(b, -1)) is computed at run time; other ints are the program's literals.
    const v1::Arg* size = call.Get("size");
    if (!size) return Status::Unsupported("expand without a size");
    v1::Arg keep = *size;
    auto* items = keep.kind_case() == v1::Arg::kList ? keep.mutable_list()->mutable_items()
                  : keep.kind_case() == v1::Arg::kTuple ? keep.mutable_tuple()->mutable_items() : nullptr;
    if (items) {
      for (auto& it : *items) {
        if (it.kind_case() == v1::Arg::kI && it.i() < 0) it.set_i(1);
      }
    } else if (keep.kind_case() == v1::Arg::kI && keep.i() < 0) {
      keep.set_i(1);
    }
    IVY_RETURN_IF_ERROR(DynamicInts(ctx, keep, &shape));
  }
  ctx.Emit("Expand", {ctx.In(x), shape}, {ctx.Out(result)});
  return Status::Ok();
}

// lax.broadcast_in_dim(x, shape, broadcast_dimensions): Unsqueeze the new axes, then Expand.
// `shape` may hold sizes computed from the inputs' shapes (a JAX program traced with symbolic
// dims, recorder/jax_shapes.py): those are read when the model runs (DynamicInts).
Status LowerBroadcastInDim(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* shape_arg = call.Get("shape");
  auto items = shape_arg ? SequenceItems(*shape_arg) : std::nullopt;
  auto bdims = call.IntList("broadcast_dimensions");
  const std::vector<int64_t>& recorded = ctx.Shape(result);  // the shape param's recorded sizes
  if (!items || !bdims || items->size() != recorded.size()) {
    return Status::Unsupported("shape/broadcast_dimensions are not lists of ints");
  }
  std::vector<int64_t> sorted = *bdims;
  if (!std::is_sorted(sorted.begin(), sorted.end())) return Status::Unsupported("broadcast_in_dim that permutes axes");
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < static_cast<int64_t>(items->size()); ++i) {
    if (std::find(bdims->begin(), bdims->end(), i) == bdims->end()) axes.push_back(i);
  }
  std::string cur = ctx.In(x);
  if (!axes.empty()) cur = ctx.Unsqueeze(cur, axes);
  // A dim the input already has is 1 in Expand's shape: it then follows the input's run-time
  // size. JAX requires an operand dim to equal its result dim or be 1, so a recorded size other
  // than 1 that both have is the same dim; a 1 is kept only where the shape says 1 literally.
  v1::Arg target;
  auto* out = target.mutable_list()->mutable_items();
  for (const v1::Arg* it : *items) *out->Add() = *it;
  const auto& in_shape = ctx.Shape(x);
  for (size_t i = 0; i < bdims->size() && i < in_shape.size(); ++i) {
    const int64_t o = (*bdims)[i];
    if (o < 0 || o >= static_cast<int64_t>(recorded.size())) return Status::Unsupported("broadcast_dimensions out of range");
    const bool literal_one = AsInt(out->Get(o)).value_or(-1) == 1;
    if (in_shape[i] == recorded[o] && (in_shape[i] != 1 || literal_one)) out->Mutable(o)->set_i(1);
  }
  // A size 0 in the shape (jnp.pad's edge of width 0, jnp.repeat(x, 0)): Slice the input to 0
  // there and Expand by 1. onnxruntime's ExpandElimination takes an input dim it does not know
  // for 0 and drops an Expand to a 0 there: the result kept the input's size.
  std::vector<int64_t> empty_axes;
  for (int i = 0; i < out->size(); ++i) {
    if (AsInt(out->Get(i)).value_or(-1) == 0) {
      empty_axes.push_back(i);
      out->Mutable(i)->set_i(1);
    }
  }
  if (!empty_axes.empty()) {
    const std::vector<int64_t> zeros(empty_axes.size(), 0);
    cur = ctx.EmitTemp("Slice", {cur, ctx.Int64s(zeros), ctx.Int64s(zeros), ctx.Int64s(empty_axes)});
  }
  std::string shape;
  IVY_RETURN_IF_ERROR(DynamicInts(ctx, target, &shape));
  ctx.Emit("Expand", {cur, shape}, {ctx.Out(result)});
  return Status::Ok();
}

// repeat_interleave(x, r, dim) with an int r (torch.repeat_interleave, np.repeat): each element
// r times in a row along dim: Unsqueeze after dim, Expand r there, merge the two dims (sizes read
// when the model runs). dim None repeats the flattened input.
Status LowerRepeatInterleave(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* r = call.Get("repeats");
  std::optional<int64_t> reps = r ? AsInt(*r) : std::nullopt;
  // One count known when the model runs: a sym int (canine: `char_seq_length % rate + rate`) or a
  // 0-d int tensor. A 1-D tensor of counts (one per element) has no lowering.
  const bool runtime_reps = !reps && r && r->kind_case() == v1::Arg::kTensor && ctx.Rank(r->tensor().value()) == 0 &&
                            !IsFloating(ctx.DType(r->tensor().value())) && ctx.DType(r->tensor().value()) != v1::BOOL &&
                            ctx.DType(r->tensor().value()) != v1::SYM_BOOL && ctx.DType(r->tensor().value()) != v1::SYM_FLOAT;
  if (!reps && !runtime_reps && r && r->kind_case() == v1::Arg::kTensor) {
    return Status::Unsupported("repeats given as a tensor of counts");
  }
  if (!runtime_reps && (!reps || *reps < 0)) return Status::Unsupported("repeats is not an int >= 0");
  // torch's output_size (Flux's rotary embedding: `repeat_interleave(2, dim=1, output_size=n * 2)`)
  // only checks the result's length along dim (a wrong one raises in torch): the result is the
  // same without it, and the model computes that length itself.
  (void)call.Get("output_size");
  std::string in = ctx.In(x);
  int rank = ctx.Rank(x);
  int64_t dim = 0;
  if (call.IsNone("dim") || rank == 0) {
    in = ctx.EmitTemp("Reshape", {in, ctx.Int64s({-1})});
    rank = 1;
  } else {
    IVY_RETURN_IF_ERROR(NormalizeAxis(call.Int("dim").value_or(0), rank, &dim));
  }
  std::string counts;
  if (runtime_reps) {
    v1::Arg list;
    for (int k = 0; k <= rank; ++k) {
      if (k == dim + 1) *list.mutable_list()->add_items() = *r;
      else list.mutable_list()->add_items()->set_i(1);
    }
    IVY_RETURN_IF_ERROR(DynamicInts(ctx, list, &counts));
  } else {
    std::vector<int64_t> ones(rank + 1, 1);
    ones[dim + 1] = *reps;
    counts = ctx.Int64s(ones);
  }
  const std::string expanded = ctx.EmitTemp("Expand", {ctx.Unsqueeze(in, {dim + 1}), counts});
  const std::string shape = ctx.EmitTemp("Shape", {in});
  std::vector<std::string> parts;
  if (dim > 0) parts.push_back(ctx.EmitTemp("Slice", {shape, ctx.Int64s({0}), ctx.Int64s({dim})}));
  parts.push_back(ctx.Int64s({-1}));
  if (dim + 1 < rank) {
    parts.push_back(ctx.EmitTemp("Slice", {shape, ctx.Int64s({dim + 1}), ctx.Int64s({std::numeric_limits<int64_t>::max()})}));
  }
  std::string target = parts[0];
  if (parts.size() > 1) {
    onnx::NodeProto* c = nullptr;
    target = ctx.EmitTemp("Concat", parts, &c);
    SetAttr(c, "axis", int64_t{0});
  }
  ctx.Emit("Reshape", {expanded, target}, {ctx.Out(result)});
  return Status::Ok();
}

Status LowerTile(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const char* param = call.Has("repeats") ? "repeats" : call.Has("reps") ? "reps" : "dims";
  const v1::Arg* reps_arg = call.Get(param);
  if (!reps_arg) return Status::Unsupported("tile without repeats");
  const int rank = ctx.Rank(x), out_rank = ctx.Rank(result);
  // repeat(1, n) with n read from a shape: the repeats are computed at run time.
  v1::Arg all;
  auto* items = all.mutable_list()->mutable_items();
  size_t given = 0;
  if (reps_arg->kind_case() == v1::Arg::kList) given = reps_arg->list().items_size();
  else if (reps_arg->kind_case() == v1::Arg::kTuple) given = reps_arg->tuple().items_size();
  else given = 1;
  if (given > static_cast<size_t>(out_rank)) return Status::Unsupported("more repeats than result dims");
  for (size_t i = given; i < static_cast<size_t>(out_rank); ++i) items->Add()->set_i(1);
  if (reps_arg->kind_case() == v1::Arg::kList) for (const auto& it : reps_arg->list().items()) *items->Add() = it;
  else if (reps_arg->kind_case() == v1::Arg::kTuple) for (const auto& it : reps_arg->tuple().items()) *items->Add() = it;
  else *items->Add() = *reps_arg;
  std::string in = ctx.In(x);
  if (out_rank > rank) {
    std::vector<int64_t> axes(out_rank - rank);
    std::iota(axes.begin(), axes.end(), 0);
    in = ctx.Unsqueeze(in, axes);
  }
  std::string r;
  IVY_RETURN_IF_ERROR(DynamicInts(ctx, all, &r));
  ctx.Emit("Tile", {in, r}, {ctx.Out(result)});
  return Status::Ok();
}

Status LowerFlip(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  std::vector<int64_t> axes;
  const int rank = ctx.Rank(x);
  if (node.op == "numpy.fliplr" || node.op == "numpy.flipud") {
    const int64_t a = node.op == "numpy.fliplr" ? 1 : 0;
    if (rank <= a) return Status::Unsupported(node.op + " of an array of rank " + std::to_string(rank));
    axes = {a};
  } else if (node.op.rfind("numpy.", 0) == 0 && call.IsNone("dims")) {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);  // np.flip(m): every axis
  } else {
    IVY_RETURN_IF_ERROR(Axes(call, call.Has("dims") ? "dims" : "dimensions", rank, &axes));
  }
  if (axes.empty()) {
    ctx.Emit("Identity", {ctx.In(x)}, {ctx.Out(result)});
    return Status::Ok();
  }
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  ctx.Emit("Slice", {ctx.In(x), ctx.Int64s(std::vector<int64_t>(axes.size(), -1)),
                     ctx.Int64s(std::vector<int64_t>(axes.size(), kMin)), ctx.Int64s(axes),
                     ctx.Int64s(std::vector<int64_t>(axes.size(), -1))},
           {ctx.Out(result)});
  return Status::Ok();
}

// lax.slice(x, start_indices, limit_indices, strides)
Status LowerSlice(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  // Bounds may be sizes computed from the inputs' shapes (recorder/jax_shapes.py): DynamicInts.
  const v1::Arg* starts = call.Get("start_indices");
  const v1::Arg* limits = call.Get("limit_indices");
  auto n = starts ? SequenceItems(*starts) : std::nullopt;
  if (!n || !limits || !SequenceItems(*limits) || SequenceItems(*limits)->size() != n->size()) {
    return Status::Unsupported("slice bounds are not lists of ints");
  }
  std::vector<int64_t> steps(n->size(), 1);
  if (!call.IsNone("strides")) {
    auto s = call.IntList("strides");
    if (!s) return Status::Unsupported("strides are not ints");
    steps = *s;
  }
  std::vector<int64_t> axes(n->size());
  std::iota(axes.begin(), axes.end(), 0);
  std::string lo, hi;
  IVY_RETURN_IF_ERROR(DynamicInts(ctx, *starts, &lo));
  IVY_RETURN_IF_ERROR(DynamicInts(ctx, *limits, &hi));
  ctx.Emit("Slice", {ctx.In(x), lo, hi, ctx.Int64s(axes), ctx.Int64s(steps)}, {ctx.Out(result)});
  return Status::Ok();
}

// --- gathering --------------------------------------------------------------------------------------

// take(input, index, dim): index_select and np.take (dim None: the flattened input).
Status LowerTake(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, index, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  std::string idx;
  if (auto t = call.Tensor("index")) {
    index = *t;
    idx = ctx.CastTo(ctx.In(index), ctx.DType(index), v1::INT64);
  } else if (const v1::Arg* a = call.Get("index"); a && AsInt(*a)) {
    idx = ctx.Scalar(Number::Int(*AsInt(*a)), v1::INT64);
  } else if (a && AsIntList(*a)) {
    idx = ctx.Int64s(*AsIntList(*a));
  } else {
    return Status::Unsupported("index is neither a tensor nor ints");
  }
  std::string in = ctx.In(x);
  int64_t axis = 0;
  if (call.IsNone("dim")) {
    in = ctx.EmitTemp("Reshape", {in, ctx.Int64s({-1})});
  } else {
    IVY_RETURN_IF_ERROR(NormalizeAxis(call.Int("dim").value_or(0), std::max(ctx.Rank(x), 1), &axis));
  }
  auto* n = ctx.Emit("Gather", {in, idx}, {ctx.Out(result)});
  SetAttr(n, "axis", axis);
  return Status::Ok();
}

// torch.gather(input, dim, index) -> GatherElements.
namespace {

// lax.gather in the form jnp.take(x, idx, axis=a) records (flax's Embed): indices [..., 1]
// selecting along one operand dim a, that dim collapsed, every other dim taken whole, the
// batch dims of the indices in a's place. An ONNX Gather on axis a; the out-of-bounds rule of
// the gather's mode is kept: FILL_OR_DROP gives fill_value (NaN for floats) where an index is
// out of [0, n) (a negative index too: ONNX would read it from the end), CLIP and
// PROMISE_IN_BOUNDS clamp it (as XLA does). jnp.take_along_axis's form (batching dims) is a
// GatherElements with the same out-of-bounds rules.
Status LowerLaxTake(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, indices, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "indices", &indices));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* dn = call.Get("dimension_numbers");
  const auto unsupported = [&] {
    return Status::Unsupported("lax.gather other than a take along one axis (dimension_numbers " +
                               (dn ? ArgToString(*dn, true) : std::string("missing")) + ")");
  };
  if (!dn || dn->kind_case() != v1::Arg::kDict) return unsupported();
  std::map<std::string, std::vector<int64_t>> f;
  const auto& dict = dn->dict();
  for (int i = 0; i < dict.keys_size() && i < dict.values_size(); ++i) {
    if (dict.keys(i) == "__type__") continue;
    auto l = AsIntList(dict.values(i));
    if (!l) return unsupported();
    f[dict.keys(i)] = *l;
  }
  const int rank = ctx.Rank(x), irank = ctx.Rank(indices);
  const auto& ishape = ctx.Shape(indices);
  if (irank < 1 || ishape.back() != 1 || f["start_index_map"].size() != 1 || f["collapsed_slice_dims"] != f["start_index_map"]) {
    return unsupported();
  }
  const int64_t a = f["start_index_map"][0];
  if (a < 0 || a >= rank) return unsupported();
  // jnp.take_along_axis(x, idx, axis=a): every other operand dim k is a batching dim, paired
  // with the indices' dim k; indices [..., 1] have the operand's rank before the index vector
  // dim, no offset dims, slices of 1. result[i] = x[i with i_a := idx[i]]: a GatherElements.
  bool along = false;
  if (!f["operand_batching_dims"].empty() || !f["start_indices_batching_dims"].empty()) {
    std::vector<int64_t> others;
    for (int64_t k = 0; k < rank; ++k) {
      if (k != a) others.push_back(k);
    }
    if (f["operand_batching_dims"] != others || f["start_indices_batching_dims"] != others || !f["offset_dims"].empty() ||
        irank != rank + 1) {
      return unsupported();
    }
    const auto slice = call.IntList("slice_sizes");
    if (!slice || std::any_of(slice->begin(), slice->end(), [](int64_t v) { return v != 1; })) return unsupported();
    along = true;
  }
  // slice_sizes: 1 on the gathered axis, the operand's dims elsewhere. A size computed from the
  // inputs' shapes (recorder/jax_shapes.py: `b` where x is [b, ...]) is the recorded dim there;
  // the gather takes that many from 0 along it, which a Slice of the result does exactly.
  const v1::Arg* sizes_arg = call.Get("slice_sizes");
  auto sizes = sizes_arg ? SequenceItems(*sizes_arg) : std::nullopt;
  if (!sizes || static_cast<int>(sizes->size()) != rank) return unsupported();
  std::vector<std::pair<int64_t, const v1::Arg*>> computed;  // (operand dim, size)
  for (int k = 0; k < rank && !along; ++k) {
    const v1::Arg& it = *(*sizes)[k];
    if (k != a && it.kind_case() == v1::Arg::kTensor && ctx.DType(it.tensor().value()) == v1::SYM_INT) {
      computed.emplace_back(k, &it);
      continue;
    }
    if (AsInt(it).value_or(-1) != (k == a ? 1 : ctx.Shape(x)[k])) return unsupported();
  }
  const int64_t b = irank - 1;  // batch dims of the indices
  std::vector<int64_t> offset, outer;
  for (int64_t k = 0; k < rank - 1; ++k) offset.push_back(k < a ? k : k + b);
  if (!along && f["offset_dims"] != offset) return unsupported();
  std::string out = ctx.Out(result);
  std::string gathered = computed.empty() ? out : ctx.Temp("gathered");
  if (!along) {
    for (int64_t k = 0; k < a; ++k) outer.push_back(k);
    for (int64_t k = a + b; k < a + b + (rank - 1 - a); ++k) outer.push_back(k);
  }
  const char* gather_op = along ? "GatherElements" : "Gather";
  std::string mode = "FILL_OR_DROP";
  if (const v1::Arg* m = call.Get("mode"); m && !IsNone(*m)) {
    const std::string t = ArgToString(*m, true);
    if (t.find("CLIP") != std::string::npos) mode = "CLIP";
    else if (t.find("PROMISE_IN_BOUNDS") != std::string::npos) mode = "PROMISE_IN_BOUNDS";
    else if (t.find("FILL_OR_DROP") == std::string::npos) return Status::Unsupported("lax.gather mode " + t);
  }
  if (mode != "FILL_OR_DROP") call.Get("fill_value");   // nothing is filled when indices are clamped
  std::string idx = ctx.Squeeze(ctx.CastTo(ctx.In(indices), ctx.DType(indices), v1::INT64), {irank - 1});
  onnx::NodeProto* g = nullptr;
  const std::string n = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {ctx.In(x)}), ctx.Scalar(Number::Int(a), v1::INT64)}, &g);
  SetAttr(g, "axis", int64_t{0});
  const std::string zero = ctx.Scalar(Number::Int(0), v1::INT64);
  std::string valid;
  // PROMISE_IN_BOUNDS (x[ids]) leaves an index out of bounds to XLA, which clamps it: so do we
  // (an ONNX Gather would read a negative index from the end, or fail).
  if (mode == "CLIP" || mode == "PROMISE_IN_BOUNDS") {
    idx = ctx.EmitTemp("Min", {ctx.EmitTemp("Max", {idx, zero}), ctx.EmitTemp("Sub", {n, ctx.Scalar(Number::Int(1), v1::INT64)})});
  } else if (mode == "FILL_OR_DROP") {
    valid = ctx.EmitTemp("And", {ctx.EmitTemp("GreaterOrEqual", {idx, zero}), ctx.EmitTemp("Less", {idx, n})});
    idx = ctx.EmitTemp("Where", {valid, idx, zero});
  }
  // The sizes computed from shapes: Slice [0, size) along their dims of the result.
  auto finish = [&]() -> Status {
    if (computed.empty()) return Status::Ok();
    v1::Arg ends;
    std::vector<int64_t> axes;
    for (const auto& [k, arg] : computed) {
      axes.push_back(offset[k < a ? k : k - 1]);
      *ends.mutable_list()->add_items() = *arg;
    }
    std::string e;
    IVY_RETURN_IF_ERROR(DynamicInts(ctx, ends, &e));
    ctx.Emit("Slice", {gathered, ctx.Int64s(std::vector<int64_t>(axes.size(), 0)), e, ctx.Int64s(axes)}, {out});
    return Status::Ok();
  };
  if (valid.empty()) {
    auto* gn = ctx.Emit(gather_op, {ctx.In(x), idx}, {gathered});
    SetAttr(gn, "axis", a);
    return finish();
  }
  const v1::DType d = ctx.DType(result);
  std::optional<double> fill;
  if (const v1::Arg* fv = call.Get("fill_value"); fv && !IsNone(*fv)) fill = AsDouble(*fv);
  else if (IsFloating(d)) fill = std::numeric_limits<double>::quiet_NaN();
  if (!fill) return Status::Unsupported("lax.gather FILL_OR_DROP of a non-float array without a fill_value");
  onnx::NodeProto* gn = nullptr;
  const std::string taken = ctx.EmitTemp(gather_op, {ctx.In(x), idx}, &gn);
  SetAttr(gn, "axis", a);
  const std::string mask = outer.empty() ? valid : ctx.Unsqueeze(valid, outer);
  ctx.Emit("Where", {mask, taken, ctx.Scalar(IsFloating(d) ? Number::Float(*fill) : Number::Int(static_cast<int64_t>(*fill)), d)},
           {gathered});
  return finish();
}

}  // namespace

Status LowerGather(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  if (node.op.rfind("jax.", 0) == 0) return LowerLaxTake(node, call, ctx);
  ValueId x, index, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "index", &index));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(call.Int("dim").value_or(0), ctx.Rank(x), &axis));
  auto* n = ctx.Emit("GatherElements", {ctx.In(x), ctx.CastTo(ctx.In(index), ctx.DType(index), v1::INT64)},
                     {ctx.Out(result)});
  SetAttr(n, "axis", axis);
  return Status::Ok();
}

// torch.scatter(input, dim, index, src | value) and scatter_add(input, dim, index, src) ->
// ScatterElements. torch reads only the part of src that index covers (src may be larger): src is
// sliced to index's run-time shape; a number is expanded to it. scatter_add accumulates duplicate
// indices (reduction "add", opset 16); scatter's `reduce` argument is refused.
Status LowerScatterElements(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, index, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "index", &index));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const bool add = ctx.canonical() == "scatter_elements_add";
  // scatter(..., reduce='add' | 'multiply'): ScatterElements' reduction add / mul (duplicates
  // accumulate, as torch's).
  std::string reduction = add ? "add" : "";
  if (!add && !call.IsNone("reduce")) {
    const v1::Arg* r = call.Get("reduce");
    if (r->kind_case() != v1::Arg::kS || (r->s() != "add" && r->s() != "multiply")) {
      return Status::Unsupported("scatter with reduce=" + ArgToString(*r, true));
    }
    reduction = r->s() == "add" ? "add" : "mul";
  }
  if (add && ctx.opset() < 16) return Status::Unsupported("scatter_add needs opset 16 (ScatterElements reduction)");
  const int rank = ctx.Rank(x);
  if (rank == 0 || ctx.Rank(index) != rank) return Status::Unsupported("scatter of a 0-d input or an index of another rank");
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(call.Int("dim").value_or(0), rank, &axis));
  const v1::DType d = ctx.DType(result);
  const std::string idx = ctx.CastTo(ctx.In(index), ctx.DType(index), v1::INT64);
  const std::string idx_shape = ctx.EmitTemp("Shape", {idx});
  const v1::Arg* src = call.IsNone("src") ? call.Get("value") : call.Get("src");
  if (!src || IsNone(*src)) return Status::Unsupported("scatter without src or value");
  std::string updates;
  if (src->kind_case() == v1::Arg::kTensor) {
    const ValueId s = src->tensor().value();
    if (ctx.Rank(s) != rank) return Status::Unsupported("scatter src of another rank than the index");
    std::vector<int64_t> zeros(static_cast<size_t>(rank), 0), axes(static_cast<size_t>(rank));
    for (int i = 0; i < rank; ++i) axes[static_cast<size_t>(i)] = i;
    updates = ctx.EmitTemp("Slice", {ctx.CastTo(ctx.In(s), ctx.DType(s), d), ctx.Int64s(zeros), idx_shape,
                                     ctx.Int64s(axes)});
  } else if (src->kind_case() == v1::Arg::kF || AsInt(*src)) {
    const Number n = src->kind_case() == v1::Arg::kF ? Number::Float(src->f()) : Number::Int(*AsInt(*src));
    const Number v = IsFloating(d) ? Number::Float(n.AsDouble()) : Number::Int(static_cast<int64_t>(n.AsDouble()));
    updates = ctx.EmitTemp("Expand", {ctx.Scalar(v, d), idx_shape});
  } else {
    return Status::Unsupported("scatter src " + ArgToString(*src, true));
  }
  auto* n = ctx.Emit("ScatterElements", {ctx.In(x), idx, updates}, {ctx.Out(result)});
  SetAttr(n, "axis", axis);
  if (!reduction.empty()) SetAttr(n, "reduction", reduction);
  return Status::Ok();
}

// bucketize(x, boundaries): how many boundaries lie below x (right=False: b < x; right=True:
// b <= x), counted as Not(x <= b) / Not(x < b) so that a NaN x counts every boundary, as in torch.
Status LowerBucketize(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, b, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "boundaries", &b));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (ctx.Rank(b) != 1) return Status::Unsupported("bucketize with boundaries that are not 1-D");
  const v1::DType dx = ctx.DType(x), db = ctx.DType(b);
  const v1::DType d = IsFloating(dx) ? dx : IsFloating(db) ? db : v1::INT64;
  const int rank = ctx.Rank(x);
  const std::string xe = ctx.Unsqueeze(ctx.CastTo(ctx.In(x), dx, d), {rank});
  const std::string bs = ctx.CastTo(ctx.In(b), db, d);
  const bool right = call.Bool("right").value_or(false);
  const std::string below = ctx.EmitTemp("Not", {ctx.EmitTemp(right ? "Less" : "LessOrEqual", {xe, bs})});
  auto* sum = ctx.Emit("ReduceSum", {ctx.CastTo(below, v1::BOOL, v1::INT64), ctx.Int64s({rank})},
                       {ctx.Temp("bucket")});
  SetAttr(sum, "keepdims", int64_t{0});
  const std::string count = sum->output(0);
  ctx.Emit("Identity", {ctx.CastTo(count, v1::INT64, ctx.DType(result))}, {ctx.Out(result)});
  return Status::Ok();
}

// grid_sample(x, grid, mode, padding_mode, align_corners) -> GridSample (opset 16, 4-D input).
Status LowerGridSample(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, grid, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "grid", &grid));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (ctx.opset() < 16 || ctx.Rank(x) != 4) return Status::Unsupported("grid_sample of a non-4-D input (or opset < 16)");
  const v1::Arg* mode = call.Get("mode");
  const v1::Arg* pad = call.Get("padding_mode");
  const std::string m = mode && mode->kind_case() == v1::Arg::kS ? mode->s() : "bilinear";
  const std::string p = pad && pad->kind_case() == v1::Arg::kS ? pad->s() : "zeros";
  // nearest: onnxruntime rounds half to even (nearbyint), as torch (checked at k + 0.5 positions).
  if (m != "bilinear" && m != "bicubic" && m != "nearest") return Status::Unsupported("grid_sample mode '" + m + "'");
  if (p != "zeros" && p != "border" && p != "reflection") return Status::Unsupported("grid_sample padding '" + p + "'");
  auto* n = ctx.Emit("GridSample", {ctx.In(x), ctx.CastTo(ctx.In(grid), ctx.DType(grid), ctx.DType(x))},
                     {ctx.Out(result)});
  SetAttr(n, "mode", m);
  SetAttr(n, "padding_mode", p);
  SetAttr(n, "align_corners", int64_t{call.Bool("align_corners").value_or(false) ? 1 : 0});
  return Status::Ok();
}

Status LowerEmbedding(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId ids, weight, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &ids));
  IVY_RETURN_IF_ERROR(TensorParam(call, "weight", &weight));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (!call.IsNone("max_norm")) return Status::Unsupported("embedding with max_norm renormalizes the weight in place");
  // These only shape the gradient; the forward is the lookup whatever they are.
  for (const char* p : {"padding_idx", "scale_grad_by_freq", "sparse", "norm_type"}) call.Get(p);
  auto* n = ctx.Emit("Gather", {ctx.In(weight), ctx.CastTo(ctx.In(ids), ctx.DType(ids), v1::INT64)}, {ctx.Out(result)});
  SetAttr(n, "axis", int64_t{0});
  return Status::Ok();
}

Status LowerTriangle(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const int64_t k = call.Int("diagonal").value_or(0);
  auto* n = ctx.Emit("Trilu", {ctx.In(x), ctx.Scalar(Number::Int(k), v1::INT64)}, {ctx.Out(result)});
  SetAttr(n, "upper", int64_t{ctx.canonical() == "triu" ? 1 : 0});
  return Status::Ok();
}

// --- factories --------------------------------------------------------------------------------------

namespace {

Status FillValue(const v1::Arg* v, v1::DType d, onnx::TensorProto* value) {
  Number n;
  if (!v) n = Number::Int(0);
  else if (v->kind_case() == v1::Arg::kF) n = Number::Float(v->f());
  else if (auto i = AsInt(*v)) n = Number::Int(*i);
  else return Status::Unsupported("fill value " + ArgToString(*v, true) + " is not a number");
  value->set_data_type(OnnxElemType(d));
  value->add_dims(1);
  std::string raw;
  IVY_RETURN_IF_ERROR(EncodeNumbers({n}, d, &raw));
  value->set_raw_data(raw);
  return Status::Ok();
}

}  // namespace

// full(size, value) / full_like / zeros_like / ones_like / fill_ / zero_: ConstantOfShape of the
// recorded result shape (the *_like forms take the input's shape at run time).
Status LowerFull(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const std::string& c = ctx.canonical();
  const v1::DType d = ctx.DType(result);
  const v1::Arg* value = nullptr;
  v1::Arg one;
  one.set_i(1);
  if (c == "ones_like" || c == "new_ones") value = &one;
  else if (c == "full" || c == "full_like") value = call.Has("fill_value") ? call.Get("fill_value") : call.Get("value");
  if (value && value->kind_case() == v1::Arg::kTensor) {
    // fill_(tensor) / full_like(x, t): Expand the 0-d value.
    ValueId t = value->tensor().value();
    std::string shape = call.Tensor("input") ? ctx.EmitTemp("Shape", {ctx.In(*call.Tensor("input"))})
                                             : ctx.Int64s(ctx.Shape(result));
    ctx.Emit("Expand", {ctx.CastTo(ctx.In(t), ctx.DType(t), d), shape}, {ctx.Out(result)});
    return Status::Ok();
  }
  onnx::TensorProto v;
  IVY_RETURN_IF_ERROR(FillValue(value, d, &v));
  std::string shape;
  const bool like = c != "new_ones" && c != "new_zeros" && c != "full";
  // The size: `size` (full), or the variadic `args` of new_zeros/new_ones, given as one sequence
  // (x.new_zeros(x.shape)) or as ints (x.new_zeros(b, t)).
  const v1::Arg* size = call.Get("size");
  if (!size && !like) {
    if (const v1::ArgList* args = Items(call.Get("args"))) {
      size = call.Get("args");
      if (args->items_size() == 1 && Items(&args->items(0))) size = &args->items(0);
    }
  }
  if (auto in = call.Tensor("input"); in && like) shape = ctx.EmitTemp("Shape", {ctx.In(*in)});
  else if (size && IsSymbolicArg(ctx, *size))
    IVY_RETURN_IF_ERROR(DynamicInts(ctx, *size, &shape));  // full((b, t), v), x.new_zeros(x.shape): sizes read from shapes
  else shape = ctx.Int64s(ctx.Shape(result));  // new_ones(2, 3): the recorded (constant) size
  auto* n = ctx.Emit("ConstantOfShape", {shape}, {ctx.Out(result)});
  SetAttr(n, "value", v);
  return Status::Ok();
}

// eye(n[, m]) (torch.eye, np.eye, np.identity): EyeLike of a zero matrix whose sizes may be read
// from shapes (XLNet: torch.eye(qlen)).
Status LowerEye(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  std::vector<const v1::Arg*> nm;
  if (const v1::ArgList* args = Items(call.Get("args"))) {
    for (const auto& it : args->items()) nm.push_back(&it);
  } else {
    for (const char* p : {"N", "n", "M"}) {
      if (call.Has(p) && !call.IsNone(p)) nm.push_back(call.Get(p));
    }
  }
  if (nm.empty() || nm.size() > 2) return Status::Unsupported("eye with " + std::to_string(nm.size()) + " sizes");
  if (nm.size() == 2 && IsNone(*nm[1])) nm.pop_back();
  v1::Arg size;
  *size.mutable_list()->add_items() = *nm[0];
  *size.mutable_list()->add_items() = *nm.back();
  std::string shape;
  IVY_RETURN_IF_ERROR(DynamicInts(ctx, size, &shape));
  // The result's dtype (np.eye(n, dtype=...)); EyeLike has CPU kernels for a few types only: the
  // others (bool, float16, small ints) are made as float32 and cast.
  const v1::DType d = ctx.DType(result);
  const bool direct = d == v1::FLOAT32 || d == v1::FLOAT64 || d == v1::INT32 || d == v1::INT64;
  const v1::DType w = direct ? d : v1::FLOAT32;
  onnx::TensorProto zero;
  IVY_RETURN_IF_ERROR(FillValue(nullptr, w, &zero));
  auto* z = static_cast<onnx::NodeProto*>(nullptr);
  const std::string zeros = ctx.EmitTemp("ConstantOfShape", {shape}, &z);
  SetAttr(z, "value", zero);
  if (!call.IsNone("k") && !call.Int("k")) return Status::Unsupported("eye with a k that is not an int");
  const int64_t k = call.Int("k").value_or(0);  // np.eye's diagonal offset
  onnx::NodeProto* eye = nullptr;
  if (direct) {
    eye = ctx.Emit("EyeLike", {zeros}, {ctx.Out(result)});
  } else {
    const std::string e = ctx.EmitTemp("EyeLike", {zeros}, &eye);
    auto* c = ctx.Emit("Cast", {e}, {ctx.Out(result)});
    SetAttr(c, "to", static_cast<int64_t>(OnnxElemType(d)));
  }
  if (k != 0) SetAttr(eye, "k", k);
  return Status::Ok();
}

// arange(end) / arange(start, end[, step]) -> Range in the result's dtype.
Status LowerArange(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  std::vector<const v1::Arg*> nums;
  if (const v1::ArgList* items = Items(call.Get("args"))) {
    for (const auto& it : items->items()) nums.push_back(&it);
  } else {
    for (const char* p : {"start", "stop", "step"}) {
      if (!call.IsNone(p)) nums.push_back(call.Get(p));
    }
  }
  if (nums.empty() || nums.size() > 3) return Status::Unsupported("arange with " + std::to_string(nums.size()) + " bounds");
  const v1::DType d = ctx.DType(result);
  v1::Arg zero, unit;
  zero.set_i(0);
  unit.set_i(1);
  const v1::Arg* start = nums.size() == 1 ? &zero : nums[0];
  const v1::Arg* stop = nums.size() == 1 ? nums[0] : nums[1];
  const v1::Arg* step = nums.size() == 3 ? nums[2] : &unit;
  std::string s, e, st;
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *start, d, &s));
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *stop, d, &e));
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *step, d, &st));
  // Range's inputs are 0-d; a tensor bound (a 0-d tensor) is already.
  ctx.Emit("Range", {s, e, st}, {ctx.Out(result)});
  return Status::Ok();
}

// diff(input, n, dim, prepend, append): x[1:] - x[:-1] along dim, n times, after concatenating
// prepend and append (logical xor for bools, as torch).
Status LowerDiff(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const int rank = ctx.Rank(x);
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(call.Int("dim").value_or(-1), rank, &axis));
  const int64_t n = call.Int("n").value_or(1);
  if (n < 0) return Status::Unsupported("diff with n < 0");
  const v1::DType d = ctx.DType(result);
  std::vector<std::string> parts;
  for (const char* p : {"prepend", "input", "append"}) {
    if (call.IsNone(p)) continue;
    auto t = call.Tensor(p);
    if (!t) return Status::Unsupported(std::string("diff: ") + p + " is not a tensor");
    parts.push_back(ctx.CastTo(ctx.In(*t), ctx.DType(*t), d));
  }
  std::string cur = parts[0];
  if (parts.size() > 1) {
    onnx::NodeProto* c = nullptr;
    cur = ctx.EmitTemp("Concat", parts, &c);
    SetAttr(c, "axis", axis);
  }
  const std::string ax = ctx.Int64s({axis}), one = ctx.Int64s({1}), zero = ctx.Int64s({0}),
                    minus1 = ctx.Int64s({-1}), end = ctx.Int64s({std::numeric_limits<int64_t>::max()});
  for (int64_t i = 0; i < n; ++i) {
    std::string hi = ctx.EmitTemp("Slice", {cur, one, end, ax});
    std::string lo = ctx.EmitTemp("Slice", {cur, zero, minus1, ax});
    const bool last = i + 1 == n;
    std::string out = last ? ctx.Out(result) : ctx.Temp("diff");
    ctx.Emit(d == v1::BOOL ? "Xor" : "Sub", {hi, lo}, {out});
    cur = out;
  }
  if (n == 0) ctx.Emit("Identity", {cur}, {ctx.Out(result)});
  return Status::Ok();
}

// lax.iota(dtype, shape, dimension): Range along `dimension`, broadcast to `shape`.
Status LowerIota(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  // Sizes may be computed from the inputs' shapes (recorder/jax_shapes.py): read at run time.
  const v1::Arg* shape_arg = call.Get("shape");
  auto items = shape_arg ? SequenceItems(*shape_arg) : std::nullopt;
  auto dim = call.Int("dimension");
  if (!items || !dim || *dim < 0 || *dim >= static_cast<int64_t>(items->size())) {
    return Status::Unsupported("iota shape/dimension are not ints");
  }
  const v1::DType d = ctx.DType(result);
  const v1::Arg& len = *(*items)[*dim];
  std::string limit;
  if (len.kind_case() == v1::Arg::kTensor && ctx.Rank(len.tensor().value()) == 0 &&
      ctx.DType(len.tensor().value()) == v1::SYM_INT) {  // a sym int is an int64 in ONNX
    limit = ctx.CastTo(ctx.In(len.tensor().value()), v1::INT64, d);
  } else if (auto n = AsInt(len)) {
    limit = ctx.Scalar(Number::Int(*n), d);
  } else {
    return Status::Unsupported("iota shape/dimension are not ints");
  }
  std::string r = ctx.EmitTemp("Range", {ctx.Scalar(Number::Int(0), d), limit, ctx.Scalar(Number::Int(1), d)});
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < static_cast<int64_t>(items->size()); ++i) {
    if (i != *dim) axes.push_back(i);
  }
  if (!axes.empty()) r = ctx.Unsqueeze(r, axes);
  std::string shape;
  IVY_RETURN_IF_ERROR(DynamicInts(ctx, *shape_arg, &shape));
  ctx.Emit("Expand", {r, shape}, {ctx.Out(result)});
  return Status::Ok();
}

// one_hot(input, num_classes) -> OneHot with values [0, 1] as int64.
Status LowerOneHot(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  // num_classes=-1 (torch's default) is one more than the largest index: read from the data at
  // run time, not the recorded depth.
  std::string depth;
  const auto classes = call.Int("num_classes");
  if (classes && *classes >= 0) {
    depth = ctx.Scalar(Number::Int(*classes), v1::INT64);
  } else {
    onnx::NodeProto* m = nullptr;
    std::string mx = ctx.EmitTemp("ReduceMax", {ctx.CastTo(ctx.In(x), ctx.DType(x), v1::INT64)}, &m);
    SetAttr(m, "keepdims", int64_t{0});
    depth = ctx.EmitTemp("Add", {mx, ctx.Scalar(Number::Int(1), v1::INT64)});
  }
  auto* n = ctx.Emit("OneHot", {ctx.In(x), depth, ctx.Int64s({0, 1})}, {ctx.Out(result)});
  SetAttr(n, "axis", int64_t{-1});
  return Status::Ok();
}

}  // namespace onnx_export
}  // namespace ivytrace
