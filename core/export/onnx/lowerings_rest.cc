// Lowerings of schema ops that were refused though opset 17 computes them (issue 11 item 2):
// torch.norm_except_dim (weight norm's norm), torch.histogram / histogramdd, np.histogram2d /
// histogramdd, np.insert, np.kaiser, the combine step of lax.scatter_max / scatter_min, and
// lax.select_and_scatter_add (max pooling's gradient as JAX emits it). Each follows the
// framework's own algorithm (ATen's histogramdd kernel, NumPy's histogramdd and insert) and
// refuses what it does not reproduce.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

#include "core/export/onnx/lowerings.h"
#include "core/ir/arg.h"

namespace ivytrace {
namespace onnx_export {

namespace {

std::string I64(LoweringContext& ctx, int64_t v) { return ctx.Scalar(Number::Int(v), v1::INT64); }
std::string F(LoweringContext& ctx, double v, v1::DType d) { return ctx.Scalar(Number::Float(v), d); }

// ReduceSum takes its axes as an input (opset 13), the others as an attribute (until opset 18).
std::string Reduce(LoweringContext& ctx, const char* op, const std::string& x, const std::vector<int64_t>& axes, bool keep) {
  onnx::NodeProto* n = nullptr;
  std::string out;
  if (std::string_view(op) == "ReduceSum") {
    out = ctx.EmitTemp(op, {x, ctx.Int64s(axes)}, &n);
  } else {
    out = ctx.EmitTemp(op, {x}, &n);
    SetAttr(n, "axes", axes);
  }
  SetAttr(n, "keepdims", int64_t{keep ? 1 : 0});
  return out;
}

std::string Concat(LoweringContext& ctx, const std::vector<std::string>& parts, int64_t axis) {
  if (parts.size() == 1) return parts[0];
  onnx::NodeProto* c = nullptr;
  const std::string out = ctx.EmitTemp("Concat", parts, &c);
  SetAttr(c, "axis", axis);
  return out;
}

std::string GatherAt(LoweringContext& ctx, const std::string& x, const std::string& index, int64_t axis) {
  onnx::NodeProto* g = nullptr;
  const std::string out = ctx.EmitTemp("Gather", {x, index}, &g);
  SetAttr(g, "axis", axis);
  return out;
}

std::string Transpose(LoweringContext& ctx, const std::string& x, const std::vector<int64_t>& perm) {
  onnx::NodeProto* t = nullptr;
  const std::string out = ctx.EmitTemp("Transpose", {x}, &t);
  SetAttr(t, "perm", perm);
  return out;
}

// A 1-D initializer of the given numbers as `d`.
std::string Numbers(LoweringContext& ctx, const std::vector<double>& v, v1::DType d, const char* hint) {
  std::vector<Number> nums;
  for (double x : v) nums.push_back(Number::Float(x));
  onnx::TensorProto t;
  t.set_data_type(OnnxElemType(d));
  t.add_dims(static_cast<int64_t>(v.size()));
  std::string raw;
  (void)EncodeNumbers(nums, d, &raw);
  t.set_raw_data(raw);
  return ctx.AddInitializer(std::move(t), hint);
}

// Counts (or weight sums) of samples per bin: `pos[k]` the bin of each sample along dim k
// (int64 [M]), `valid` where every dim's bin exists (bool [M]), `n[k]` the bins of dim k. Returns
// the histogram [n0, n1, ...] in `d` (row-major flat index, one-hot [M, prod n] summed over M).
std::string EmitBinSums(LoweringContext& ctx, const std::vector<std::string>& pos, const std::string& valid,
                        const std::vector<int64_t>& n, const std::string& weights, v1::DType d) {
  std::string flat;
  for (size_t k = 0; k < pos.size(); ++k) {
    flat = flat.empty() ? pos[k] : ctx.EmitTemp("Add", {ctx.EmitTemp("Mul", {flat, I64(ctx, n[k])}), pos[k]});
  }
  const int64_t total = std::accumulate(n.begin(), n.end(), int64_t{1}, std::multiplies<int64_t>());
  const std::string ids = ctx.EmitTemp("Range", {I64(ctx, 0), I64(ctx, total), I64(ctx, 1)});
  const std::string hit = ctx.EmitTemp("And", {ctx.EmitTemp("Equal", {ctx.Unsqueeze(flat, {1}), ctx.Unsqueeze(ids, {0})}),
                                               ctx.Unsqueeze(valid, {1})});
  std::string terms = ctx.CastTo(hit, v1::BOOL, d);
  if (!weights.empty()) terms = ctx.EmitTemp("Mul", {terms, ctx.Unsqueeze(weights, {1})});
  return ctx.EmitTemp("Reshape", {Reduce(ctx, "ReduceSum", terms, {0}, false), ctx.Int64s(n)});
}

// hist / hist.sum() / each dim's bin widths (NumPy divides by the widths first, then the sum;
// torch the sum first: the same numbers to a rounding).
std::string Density(LoweringContext& ctx, std::string hist, const std::vector<std::string>& edges, const std::vector<int64_t>& n) {
  const int D = static_cast<int>(n.size());
  std::vector<int64_t> all(D);
  for (int k = 0; k < D; ++k) all[k] = k;
  const std::string sum = Reduce(ctx, "ReduceSum", hist, all, false);
  hist = ctx.EmitTemp("Div", {hist, sum});
  for (int k = 0; k < D; ++k) {
    const int64_t m = n[k];
    const std::string w = ctx.EmitTemp("Sub", {ctx.EmitTemp("Slice", {edges[k], ctx.Int64s({1}), ctx.Int64s({m + 1})}),
                                               ctx.EmitTemp("Slice", {edges[k], ctx.Int64s({0}), ctx.Int64s({m})})});
    std::vector<int64_t> shape(D, 1);
    shape[k] = m;
    hist = ctx.EmitTemp("Div", {hist, ctx.EmitTemp("Reshape", {w, ctx.Int64s(shape)})});
  }
  return hist;
}

// The items of a sequence argument, or the argument itself D times (an int or a tensor for every dim).
std::vector<const v1::Arg*> PerDim(const v1::Arg& a, int64_t D) {
  if (a.kind_case() != v1::Arg::kTensor) {
    if (auto items = SequenceItems(a)) return *items;
  }
  return std::vector<const v1::Arg*>(static_cast<size_t>(D), &a);
}

}  // namespace

// x.new_tensor(data, dtype=): torch.tensor(data) in x's dtype (or dtype): the factory lowering
// with the first positional as the data (x gives only the defaults the recorded result shows).
Status LowerNewTensor(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  const v1::Arg* args = call.Get("args");
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (!args || args->kind_case() != v1::Arg::kList || args->list().items_size() < 1) {
    return Status::Unsupported("new_tensor other than x.new_tensor(data)");
  }
  // The variadic binds a single list positional as the list itself: args is the data then, or
  // holds it (x.new_tensor(2.5), x.new_tensor(t)). The one whose nesting gives the result's rank.
  std::function<int(const v1::Arg&)> rank_of = [&](const v1::Arg& a) -> int {
    if (a.kind_case() == v1::Arg::kTensor) return ctx.Rank(a.tensor().value());
    if (auto items = SequenceItems(a)) return 1 + (items->empty() ? 0 : rank_of(*(*items)[0]));
    return 0;
  };
  const v1::Arg* data = nullptr;
  if (args->list().items_size() == 1 && rank_of(args->list().items(0)) == ctx.Rank(result)) {
    data = &args->list().items(0);
  } else if (rank_of(*args) == ctx.Rank(result)) {
    data = args;
  } else {
    return Status::Unsupported("new_tensor data of another rank than its result");
  }
  (void)call.Get("input");
  (void)call.Get("device");
  (void)call.Get("requires_grad");  // autograd state: no effect on the values
  BoundCall data_call = call;
  data_call.Set("data", *data);
  ctx.SetCanonical("asarray");
  return LowerFactory(node, data_call, ctx);
}

// torch.norm_except_dim(v, pow, dim): ATen's norm of v over every dim but `dim` (kept as size 1),
// the whole tensor's (0-d) for dim == -1: v.norm(pow) = (sum |v|^pow)^(1/pow), pow 0 counting the
// nonzeros.
Status LowerNormExceptDim(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId v, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "v", &v));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  auto p = call.Int("pow");
  auto dim = call.Int("dim");
  if (!p || !dim) return Status::Unsupported("norm_except_dim with pow or dim that is not an int");
  const v1::DType d = ctx.DType(result);
  if (!IsFloating(d)) return Status::Unsupported(std::string("norm_except_dim of a ") + DTypeName(d) + " tensor");
  const int r = ctx.Rank(v);
  if (r < 1) return Status::Unsupported("norm_except_dim of a 0-d tensor");
  std::string in = ctx.CastTo(ctx.In(v), ctx.DType(v), d);
  std::vector<int64_t> axes;
  bool keep = true;
  if (*dim == -1) {
    for (int k = 0; k < r; ++k) axes.push_back(k);
    keep = false;
  } else {
    int64_t kept;
    IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, r, &kept));
    for (int k = 0; k < r; ++k) {
      if (k != kept) axes.push_back(k);
    }
    if (axes.empty()) {  // a 1-D v: ATen views it [n, 1] and takes the norm of each row of one
      in = ctx.Unsqueeze(in, {r});
      axes = {r};
      keep = false;
    }
  }
  const std::string a = ctx.EmitTemp("Abs", {in});
  std::string out;
  if (*p == 0) {
    out = Reduce(ctx, "ReduceSum", ctx.CastTo(ctx.EmitTemp("Not", {ctx.EmitTemp("Equal", {in, F(ctx, 0, d)})}), v1::BOOL, d), axes, keep);
  } else if (*p == 1) {
    out = Reduce(ctx, "ReduceSum", a, axes, keep);
  } else if (*p == 2) {
    out = ctx.EmitTemp("Sqrt", {Reduce(ctx, "ReduceSumSquare", in, axes, keep)});
  } else {
    const std::string s = Reduce(ctx, "ReduceSum", ctx.EmitTemp("Pow", {a, F(ctx, static_cast<double>(*p), d)}), axes, keep);
    out = ctx.EmitTemp("Pow", {s, F(ctx, 1.0 / static_cast<double>(*p), d)});
  }
  ctx.Emit("Identity", {out}, {ctx.Out(result)});
  return Status::Ok();
}

// torch.histogram(input, bins, range=, weight=, density=) and torch.histogramdd: ATen's
// histogramdd kernel. Int bins: edges = torch.linspace(lo, hi, n + 1) in the input's dtype (start
// + step * i for the first half, end - step * (n - i) for the rest), lo and hi from range or the
// data's min and max (widened by 0.5 when equal); a sample counts where first <= x <= last edge
// (NaN never), in bin p: the linear estimate trunc((x - first) * n / (last - first)) corrected by
// upper_bound over the edges at p - 1 .. p + 1, exactly ATen's local search; tensor bins:
// upper_bound over every edge. The last edge belongs to the last bin. Weights are summed, density
// divides by the total and by each dim's bin widths.
Status LowerTorchHistogram(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  const bool dd = ctx.canonical() == "torch_histogramdd";
  const std::vector<ValueId> results = ResultTensors(node);
  if (results.empty()) return Status::Unsupported("histogram without results");
  const v1::DType d = ctx.DType(results[0]);
  if (!IsFloating(d)) return Status::Unsupported(std::string("histogram of a ") + DTypeName(d) + " tensor");
  int64_t D = 1;
  if (dd) {
    if (ctx.Rank(x) < 1 || ctx.Shape(x).back() < 1) return Status::Unsupported("histogramdd of an input without a static last dim");
    D = ctx.Shape(x).back();
  }
  if (static_cast<int64_t>(results.size()) != D + 1) return Status::Unsupported("histogram results other than (hist, edges per dim)");
  const v1::Arg* bins = call.Get("bins");
  if (!bins) return Status::Unsupported("histogram without bins");
  const std::vector<const v1::Arg*> per_dim = dd ? PerDim(*bins, D) : std::vector<const v1::Arg*>{bins};
  if (static_cast<int64_t>(per_dim.size()) != D) return Status::Unsupported("histogramdd bins of another length than the input's last dim");
  std::vector<double> range;
  if (!call.IsNone("range")) {
    auto items = SequenceItems(*call.Get("range"));
    if (!items || static_cast<int64_t>(items->size()) != 2 * D) return Status::Unsupported("histogram range that is not 2 numbers per dim");
    for (const v1::Arg* it : *items) {
      auto v = AsDouble(*it);
      if (!v || HasTensor(*it)) return Status::Unsupported("histogram range that is not numbers");
      range.push_back(*v);
    }
  }
  const std::string xs = ctx.EmitTemp("Reshape", {ctx.CastTo(ctx.In(x), ctx.DType(x), d), ctx.Int64s({-1, D})});
  std::vector<std::string> pos, edges;
  std::vector<int64_t> n;
  std::string valid;
  for (int64_t k = 0; k < D; ++k) {
    const std::string col = ctx.EmitTemp("Squeeze", {GatherAt(ctx, xs, ctx.Int64s({k}), 1), ctx.Int64s({1})});   // [M]
    const v1::Arg* b = per_dim[static_cast<size_t>(k)];
    std::string e;
    int64_t nb;
    bool linear = false;
    if (b->kind_case() == v1::Arg::kTensor) {
      const ValueId bv = b->tensor().value();
      if (ctx.Rank(bv) != 1 || ctx.Shape(bv)[0] < 2) return Status::Unsupported("histogram bin edges that are not a 1-D tensor of 2 or more");
      nb = ctx.Shape(bv)[0];
      e = ctx.CastTo(ctx.In(bv), ctx.DType(bv), d);
    } else {
      auto cnt = AsInt(*b);
      if (!cnt || *cnt < 1 || b->kind_case() == v1::Arg::kB) return Status::Unsupported("histogram bins that are not a positive int or a tensor");
      linear = true;
      nb = *cnt + 1;
      std::string s, t;
      if (!range.empty()) {
        double lo = range[static_cast<size_t>(2 * k)], hi = range[static_cast<size_t>(2 * k + 1)];
        if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi) return Status::Unsupported("histogram range that is not finite and ordered (torch refuses it)");
        if (lo == hi) lo -= 0.5, hi += 0.5;
        s = F(ctx, lo, d);
        t = F(ctx, hi, d);
      } else {
        // The data's min and max (torch refuses a non-finite one), widened when equal.
        const std::string mn = Reduce(ctx, "ReduceMin", col, {0}, false), mx = Reduce(ctx, "ReduceMax", col, {0}, false);
        const std::string same = ctx.EmitTemp("Equal", {mn, mx});
        s = ctx.EmitTemp("Where", {same, ctx.EmitTemp("Sub", {mn, F(ctx, 0.5, d)}), mn});
        t = ctx.EmitTemp("Where", {same, ctx.EmitTemp("Add", {mx, F(ctx, 0.5, d)}), mx});
      }
      // torch.linspace(s, t, nb) in d: step = (t - s) / (nb - 1); i < nb / 2: s + step * i, else
      // t - step * (nb - 1 - i).
      const int64_t half = nb / 2;
      const std::string step = ctx.EmitTemp("Div", {ctx.EmitTemp("Sub", {t, s}), F(ctx, static_cast<double>(nb - 1), d)});
      std::vector<double> lo_i, hi_i;
      for (int64_t i = 0; i < nb; ++i) (i < half ? lo_i : hi_i).push_back(static_cast<double>(i < half ? i : nb - 1 - i));
      std::vector<std::string> parts;
      if (!lo_i.empty()) parts.push_back(ctx.EmitTemp("Add", {s, ctx.EmitTemp("Mul", {step, Numbers(ctx, lo_i, d, "linspace_i")})}));
      parts.push_back(ctx.EmitTemp("Sub", {t, ctx.EmitTemp("Mul", {step, Numbers(ctx, hi_i, d, "linspace_i")})}));
      e = Concat(ctx, parts, 0);
    }
    edges.push_back(e);
    n.push_back(nb - 1);
    const std::string first = GatherAt(ctx, e, I64(ctx, 0), 0), last = GatherAt(ctx, e, I64(ctx, nb - 1), 0);
    const std::string ok = ctx.EmitTemp("And", {ctx.EmitTemp("GreaterOrEqual", {col, first}), ctx.EmitTemp("LessOrEqual", {col, last})});
    valid = valid.empty() ? ok : ctx.EmitTemp("And", {valid, ok});
    const std::string safe = ctx.EmitTemp("Where", {ok, col, first});
    std::string le = ctx.EmitTemp("LessOrEqual", {ctx.Unsqueeze(e, {0}), ctx.Unsqueeze(safe, {1})});   // [M, nb]
    std::string base = I64(ctx, 0);
    if (linear) {
      const std::string est = ctx.CastTo(
          ctx.EmitTemp("Div", {ctx.EmitTemp("Mul", {ctx.EmitTemp("Sub", {safe, first}), F(ctx, static_cast<double>(nb - 1), d)}),
                               ctx.EmitTemp("Sub", {last, first})}),
          d, v1::INT64);
      base = ctx.EmitTemp("Max", {ctx.EmitTemp("Sub", {est, I64(ctx, 1)}), I64(ctx, 0)});
      const std::string top = ctx.EmitTemp("Min", {ctx.EmitTemp("Add", {est, I64(ctx, 2)}), I64(ctx, nb)});
      const std::string j = ctx.Unsqueeze(ctx.EmitTemp("Range", {I64(ctx, 0), I64(ctx, nb), I64(ctx, 1)}), {0});
      const std::string window = ctx.EmitTemp("And", {ctx.EmitTemp("GreaterOrEqual", {j, ctx.Unsqueeze(base, {1})}),
                                                      ctx.EmitTemp("Less", {j, ctx.Unsqueeze(top, {1})})});
      le = ctx.EmitTemp("And", {le, window});
    }
    std::string p = ctx.EmitTemp("Sub", {ctx.EmitTemp("Add", {base, Reduce(ctx, "ReduceSum", ctx.CastTo(le, v1::BOOL, v1::INT64), {1}, false)}),
                                         I64(ctx, 1)});
    p = ctx.EmitTemp("Sub", {p, ctx.CastTo(ctx.EmitTemp("Equal", {p, I64(ctx, nb - 1)}), v1::BOOL, v1::INT64)});
    pos.push_back(ctx.EmitTemp("Where", {ok, p, I64(ctx, 0)}));
  }
  std::string w;
  if (!call.IsNone("weight")) {
    auto wv = call.Tensor("weight");
    if (!wv) return Status::Unsupported("histogram weight that is not a tensor");
    w = ctx.EmitTemp("Reshape", {ctx.CastTo(ctx.In(*wv), ctx.DType(*wv), d), ctx.Int64s({-1})});
  }
  std::string hist = EmitBinSums(ctx, pos, valid, n, w, d);
  if (call.Bool("density").value_or(false)) hist = Density(ctx, hist, edges, n);
  ctx.Emit("Identity", {hist}, {ctx.Out(results[0])});
  for (int64_t k = 0; k < D; ++k) {
    const ValueId ev = results[static_cast<size_t>(k + 1)];
    ctx.Emit("Identity", {ctx.CastTo(edges[static_cast<size_t>(k)], d, ctx.DType(ev))}, {ctx.Out(ev)});
  }
  return Status::Ok();
}

// np.histogramdd(sample, bins, range, density, weights) and np.histogram2d(x, y, ...), as NumPy
// computes them: int bins give edges np.linspace(lo, hi, n + 1) (i * step + lo, the last edge hi)
// in the edges' dtype, lo and hi from range or the data's min and max (widened by 0.5 when
// equal); array bins are the edges. A sample's bin along a dim is searchsorted(edges, x, 'right')
// - 1 (the count of edges <= x, compared in the promoted dtype), one less on the last edge;
// samples outside (and NaN) are dropped. Counts (or the float64 sums of the weights) in float64;
// density divides by each dim's widths and the total.
Status LowerNumpyHistogramdd(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  const bool two = call.Has("x");
  const std::vector<ValueId> results = ResultTensors(node);
  std::vector<std::string> cols;
  std::vector<v1::DType> col_types;
  if (two) {
    ValueId a, b;
    IVY_RETURN_IF_ERROR(TensorParam(call, "x", &a));
    IVY_RETURN_IF_ERROR(TensorParam(call, "y", &b));
    for (ValueId v : {a, b}) {
      if (ctx.Rank(v) != 1) return Status::Unsupported("histogram2d of x or y that is not 1-D");
      cols.push_back(ctx.In(v));
      col_types.push_back(ctx.DType(v));
    }
  } else {
    const v1::Arg* s = call.Get("sample");
    if (!s) return Status::Unsupported("histogramdd without sample");
    if (s->kind_case() == v1::Arg::kTensor) {
      const ValueId v = s->tensor().value();
      if (ctx.Rank(v) == 1) {
        cols.push_back(ctx.In(v));
      } else if (ctx.Rank(v) == 2 && ctx.Shape(v)[1] >= 1) {
        for (int64_t k = 0; k < ctx.Shape(v)[1]; ++k) {
          cols.push_back(ctx.EmitTemp("Squeeze", {GatherAt(ctx, ctx.In(v), ctx.Int64s({k}), 1), ctx.Int64s({1})}));
        }
      } else {
        return Status::Unsupported("histogramdd of a sample that is not [N, D] with a static D");
      }
      col_types.assign(cols.size(), ctx.DType(v));
    } else if (auto items = SequenceItems(*s)) {
      for (const v1::Arg* it : *items) {
        if (it->kind_case() != v1::Arg::kTensor || ctx.Rank(it->tensor().value()) != 1) {
          return Status::Unsupported("histogramdd of a sequence that is not 1-D arrays");
        }
        cols.push_back(ctx.In(it->tensor().value()));
        col_types.push_back(ctx.DType(it->tensor().value()));
      }
    } else {
      return Status::Unsupported("histogramdd of a sample that is not an array or a sequence of arrays");
    }
  }
  const int64_t D = static_cast<int64_t>(cols.size());
  if (D < 1 || static_cast<int64_t>(results.size()) != D + 1) return Status::Unsupported("histogramdd results other than (hist, edges per dim)");
  const v1::DType hd = ctx.DType(results[0]);
  if (!IsFloating(hd)) return Status::Unsupported("histogramdd counts that are not float");
  // bins: an int for every dim, one per dim (ints or arrays); histogram2d also takes one array of
  // edges for both dims (any length but 1 and 2).
  const v1::Arg* bins = call.Get("bins");
  if (!bins) return Status::Unsupported("histogramdd without bins");
  std::vector<const v1::Arg*> per_dim;
  if (bins->kind_case() == v1::Arg::kTensor) {
    const ValueId bv = bins->tensor().value();
    if (!two || ctx.Rank(bv) != 1 || ctx.Shape(bv)[0] == 1 || ctx.Shape(bv)[0] == 2) {
      return Status::Unsupported("histogramdd bins as one array (histogram2d's shared edges of other than 1 or 2 items only)");
    }
    per_dim.assign(2, bins);
  } else {
    per_dim = PerDim(*bins, D);
  }
  if (static_cast<int64_t>(per_dim.size()) != D) return Status::Unsupported("histogramdd bins of another length than the sample's dims");
  std::vector<const v1::Arg*> ranges(static_cast<size_t>(D), nullptr);
  if (!call.IsNone("range")) {
    auto items = SequenceItems(*call.Get("range"));
    if (!items || static_cast<int64_t>(items->size()) != D) return Status::Unsupported("histogramdd range that is not one entry per dim");
    ranges = *items;
  }
  std::vector<std::string> pos, edges;
  std::vector<int64_t> n;
  std::string valid;
  for (int64_t k = 0; k < D; ++k) {
    const v1::Arg* b = per_dim[static_cast<size_t>(k)];
    const v1::DType et = ctx.DType(results[static_cast<size_t>(k + 1)]);
    const v1::DType st = col_types[static_cast<size_t>(k)];
    std::string e;
    int64_t nb;
    if (b->kind_case() == v1::Arg::kTensor) {
      const ValueId bv = b->tensor().value();
      if (ctx.Rank(bv) != 1 || ctx.Shape(bv)[0] < 1) return Status::Unsupported("histogramdd edges that are not a 1-D array");
      nb = ctx.Shape(bv)[0];
      e = ctx.CastTo(ctx.In(bv), ctx.DType(bv), et);
    } else {
      auto cnt = AsInt(*b);
      if (!cnt || *cnt < 1 || b->kind_case() == v1::Arg::kB) return Status::Unsupported("histogramdd bins that are not positive ints or arrays");
      if (!IsFloating(et)) return Status::Unsupported("histogramdd edges that are not float");
      nb = *cnt + 1;
      std::string s, t;
      const v1::Arg* r = ranges[static_cast<size_t>(k)];
      if (r && !IsNone(*r)) {
        auto rr = SequenceItems(*r);
        std::optional<double> lo, hi;
        if (rr && rr->size() == 2 && !HasTensor(*r)) lo = AsDouble(*(*rr)[0]), hi = AsDouble(*(*rr)[1]);
        if (!lo || !hi) return Status::Unsupported("histogramdd range entry that is not (lo, hi) numbers");
        if (!std::isfinite(*lo) || !std::isfinite(*hi) || *lo > *hi) return Status::Unsupported("histogramdd range that is not finite and ordered (NumPy refuses it)");
        double a = *lo, z = *hi;
        if (a == z) a -= 0.5, z += 0.5;
        s = F(ctx, a, et);
        t = F(ctx, z, et);
      } else {
        // The data's min and max (NumPy refuses non-finite ones), in the edges' dtype.
        const std::string col = cols[static_cast<size_t>(k)];
        const std::string mn = ctx.CastTo(Reduce(ctx, "ReduceMin", col, {0}, false), st, et);
        const std::string mx = ctx.CastTo(Reduce(ctx, "ReduceMax", col, {0}, false), st, et);
        const std::string same = ctx.EmitTemp("Equal", {mn, mx});
        s = ctx.EmitTemp("Where", {same, ctx.EmitTemp("Sub", {mn, F(ctx, 0.5, et)}), mn});
        t = ctx.EmitTemp("Where", {same, ctx.EmitTemp("Add", {mx, F(ctx, 0.5, et)}), mx});
      }
      // np.linspace(s, t, nb): arange(nb - 1) * ((t - s) / (nb - 1)) + s, then the last edge t.
      const std::string step = ctx.EmitTemp("Div", {ctx.EmitTemp("Sub", {t, s}), F(ctx, static_cast<double>(nb - 1), et)});
      std::vector<double> ids;
      for (int64_t i = 0; i + 1 < nb; ++i) ids.push_back(static_cast<double>(i));
      e = Concat(ctx, {ctx.EmitTemp("Add", {ctx.EmitTemp("Mul", {Numbers(ctx, ids, et, "linspace_i"), step}), s}), ctx.Unsqueeze(t, {0})}, 0);
    }
    edges.push_back(ctx.CastTo(e, et, hd));
    n.push_back(nb - 1);
    ctx.Emit("Identity", {e}, {ctx.Out(results[static_cast<size_t>(k + 1)])});
    // searchsorted compares in the promoted dtype (an integer sample with float edges: float64).
    const v1::DType cd = (et == v1::FLOAT64 || st == v1::FLOAT64 || !IsFloating(st)) ? v1::FLOAT64 : et;
    const std::string col = ctx.CastTo(cols[static_cast<size_t>(k)], st, cd);
    const std::string ec = ctx.CastTo(e, et, cd);
    const std::string le = ctx.EmitTemp("LessOrEqual", {ctx.Unsqueeze(ec, {0}), ctx.Unsqueeze(col, {1})});
    std::string p = ctx.EmitTemp("Sub", {Reduce(ctx, "ReduceSum", ctx.CastTo(le, v1::BOOL, v1::INT64), {1}, false), I64(ctx, 1)});
    const std::string on_last = ctx.EmitTemp("Equal", {col, GatherAt(ctx, ec, I64(ctx, nb - 1), 0)});
    p = ctx.EmitTemp("Sub", {p, ctx.CastTo(on_last, v1::BOOL, v1::INT64)});
    const std::string ok = ctx.EmitTemp("And", {ctx.EmitTemp("GreaterOrEqual", {p, I64(ctx, 0)}), ctx.EmitTemp("Less", {p, I64(ctx, nb - 1)})});
    valid = valid.empty() ? ok : ctx.EmitTemp("And", {valid, ok});
    pos.push_back(ctx.EmitTemp("Where", {ok, p, I64(ctx, 0)}));
  }
  std::string w;
  if (!call.IsNone("weights")) {
    auto wv = call.Tensor("weights");
    if (!wv) return Status::Unsupported("histogramdd weights that are not an array");
    w = ctx.EmitTemp("Reshape", {ctx.CastTo(ctx.In(*wv), ctx.DType(*wv), hd), ctx.Int64s({-1})});
  }
  std::string hist = EmitBinSums(ctx, pos, valid, n, w, hd);
  if (call.Bool("density").value_or(false)) hist = Density(ctx, hist, edges, n);
  ctx.Emit("Identity", {hist}, {ctx.Out(results[0])});
  return Status::Ok();
}

// np.insert(arr, obj, values, axis): obj an int, a list of ints or a slice, all known at export.
// One index (an int: values' first dim moved to `axis`; a list of one: as it is) puts values,
// broadcast to arr's shape with `numnew` items along axis, before arr[index]; several put value k
// before arr[obj[k]] (stable in obj's order). arr is flattened for axis=None. A negative index
// counts from the end of the axis at run time (one index only).
Status LowerInsert(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "arr", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(result);
  if (OnnxElemType(d) == 0) return Status::Unsupported(std::string("np.insert into ") + DTypeName(d));
  std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  int r = ctx.Rank(x);
  int64_t axis = 0;
  if (call.IsNone("axis")) {
    in = ctx.EmitTemp("Reshape", {in, ctx.Int64s({-1})});
    r = 1;
  } else {
    auto a = call.Int("axis");
    if (!a) return Status::Unsupported("np.insert axis that is not an int");
    IVY_RETURN_IF_ERROR(NormalizeAxis(*a, r, &axis));
  }
  const v1::Arg* obj = call.Get("obj");
  if (!obj) return Status::Unsupported("np.insert without obj");
  std::vector<int64_t> idx;
  bool scalar = false;
  if (obj->kind_case() == v1::Arg::kSlice) {
    return Status::Unsupported("np.insert with a slice obj");
  } else if (obj->kind_case() == v1::Arg::kB || HasTensor(*obj)) {
    return Status::Unsupported("np.insert of obj " + ArgToString(*obj, true) + " (ints known at export only)");
  } else if (auto i = AsInt(*obj); i && obj->kind_case() == v1::Arg::kI) {
    idx = {*i};
    scalar = true;
  } else if (auto l = AsIntList(*obj)) {
    idx = *l;
  } else {
    return Status::Unsupported("np.insert of obj " + ArgToString(*obj, true) + " (ints only)");
  }
  const v1::Arg* varg = call.Get("values");
  if (!varg) return Status::Unsupported("np.insert without values");
  std::string vals;
  int vr = 0;
  std::vector<int64_t> vshape;
  if (varg->kind_case() == v1::Arg::kTensor) {
    const ValueId vv = varg->tensor().value();
    vals = ctx.CastTo(ctx.In(vv), ctx.DType(vv), d);
    vr = ctx.Rank(vv);
    vshape = ctx.Shape(vv);
  } else if (AsDouble(*varg) && !HasTensor(*varg) && varg->kind_case() != v1::Arg::kB) {
    IVY_RETURN_IF_ERROR(OperandAs(ctx, *varg, d, &vals));
  } else {
    return Status::Unsupported("np.insert of values that are neither an array nor a number");
  }
  if (vr > r) return Status::Unsupported("np.insert of values of a higher rank than arr");
  const std::string shape = ctx.EmitTemp("Shape", {in});
  const std::string n = ctx.EmitTemp("Slice", {shape, ctx.Int64s({axis}), ctx.Int64s({axis + 1})});   // [1]
  // arr's shape with `count` items along axis.
  auto shape_with = [&](const std::string& count) {
    std::vector<std::string> parts;
    if (axis > 0) parts.push_back(ctx.EmitTemp("Slice", {shape, ctx.Int64s({0}), ctx.Int64s({axis})}));
    parts.push_back(count);
    if (axis + 1 < r) parts.push_back(ctx.EmitTemp("Slice", {shape, ctx.Int64s({axis + 1}), ctx.Int64s({r})}));
    return Concat(ctx, parts, 0);
  };
  auto slice = [&](const std::string& v, const std::string& from, const std::string& to) {
    return ctx.EmitTemp("Slice", {v, from, to, ctx.Int64s({axis})});
  };
  const int64_t kEnd = std::numeric_limits<int64_t>::max();
  if (idx.size() == 1) {
    // values = array(values, ndmin=arr.ndim); an int obj moves its first dim to axis.
    std::vector<int64_t> vs(static_cast<size_t>(r - vr), 1);
    vs.insert(vs.end(), vshape.begin(), vshape.end());
    if (vr < r) vals = ctx.EmitTemp("Reshape", {vals, ctx.Int64s(vs)});
    if (scalar && axis != 0) {
      std::vector<int64_t> perm;
      for (int64_t k = 1; k < r; ++k) perm.push_back(k);
      perm.insert(perm.begin() + axis, 0);
      vals = Transpose(ctx, vals, perm);
      std::vector<int64_t> moved(vs.begin() + 1, vs.end());
      moved.insert(moved.begin() + axis, vs[0]);
      vs = moved;
    }
    const int64_t numnew = vs[static_cast<size_t>(axis)];
    if (numnew < 0) return Status::Unsupported("np.insert of values of a dynamic size along axis");
    vals = ctx.EmitTemp("Expand", {vals, shape_with(ctx.Int64s({numnew}))});
    std::string at = ctx.Int64s({idx[0]});
    if (idx[0] < 0) at = ctx.EmitTemp("Add", {n, at});
    const std::string out = Concat(ctx, {slice(in, ctx.Int64s({0}), at), vals, slice(in, at, ctx.Int64s({kEnd}))}, axis);
    ctx.Emit("Identity", {out}, {ctx.Out(result)});
    return Status::Ok();
  }
  if (idx.empty()) {
    ctx.Emit("Identity", {in}, {ctx.Out(result)});
    return Status::Ok();
  }
  for (int64_t i : idx) {
    if (i < 0) return Status::Unsupported("np.insert at several indices with a negative one (its order depends on the length)");
  }
  const int64_t numnew = static_cast<int64_t>(idx.size());
  vals = ctx.EmitTemp("Expand", {vals, shape_with(ctx.Int64s({numnew}))});
  std::vector<int64_t> order(idx.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return idx[a] < idx[b]; });
  std::vector<std::string> parts;
  int64_t prev = 0;
  for (int64_t k : order) {
    const int64_t at = idx[static_cast<size_t>(k)];
    if (at > prev) parts.push_back(slice(in, ctx.Int64s({prev}), ctx.Int64s({at})));
    parts.push_back(slice(vals, ctx.Int64s({k}), ctx.Int64s({k + 1})));
    prev = at;
  }
  parts.push_back(slice(in, ctx.Int64s({prev}), ctx.Int64s({kEnd})));
  ctx.Emit("Identity", {Concat(ctx, parts, axis)}, {ctx.Out(result)});
  return Status::Ok();
}

// np.kaiser(M, beta): i0(beta * sqrt(1 - ((n - a) / a)^2)) / i0(beta), a = (M - 1) / 2, for M and
// beta known at export: a constant, computed in float64 (std::cyl_bessel_i is I0 to a few ulps).
Status LowerKaiser(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* m = call.Get("M");
  const v1::Arg* b = call.Get("beta");
  if (!m || !b || HasTensor(*m) || HasTensor(*b)) return Status::Unsupported("np.kaiser of M or beta that is an array");
  auto M = AsInt(*m);
  auto beta = AsDouble(*b);
  if (!M || !beta) return Status::Unsupported("np.kaiser of M or beta that is not a number");
  const v1::DType d = ctx.DType(result);
  if (!IsFloating(d)) return Status::Unsupported(std::string("np.kaiser as ") + DTypeName(d));
  if (*M > (int64_t{1} << 24)) return Status::Unsupported("np.kaiser of more than 2^24 points");
  std::vector<double> w;
  if (*M == 1) {
    w = {1.0};
  } else if (*M > 1) {
    const double alpha = (static_cast<double>(*M) - 1) / 2.0;
    const double den = std::cyl_bessel_i(0.0, std::fabs(*beta));
    for (int64_t i = 0; i < *M; ++i) {
      const double t = (static_cast<double>(i) - alpha) / alpha;
      w.push_back(std::cyl_bessel_i(0.0, std::fabs(*beta * std::sqrt(std::max(0.0, 1 - t * t)))) / den);
    }
  }
  if (!std::isfinite(*beta)) return Status::Unsupported("np.kaiser of a beta that is not finite");
  ctx.Emit("Identity", {Numbers(ctx, w, d, "kaiser")}, {ctx.Out(result)});
  return Status::Ok();
}

// The combine step of lax.scatter_max / scatter_min (ScatterND's max/min reductions are opset 18):
// target [L1..Lq, W...], idx [b..., q] (in bounds of L), upd [b..., W...]. Each target slot p takes
// max(target[p], every update whose index is p), NaN from either side propagating (lax.max).
Status EmitScatterExtreme(LoweringContext& ctx, const std::string& target, const std::string& idx, const std::string& upd,
                          int64_t q, int nb, int window_rank, bool is_max, v1::DType d, std::string* out) {
  std::string far;
  if (IsFloating(d)) {
    far = F(ctx, is_max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity(), d);
  } else if (d == v1::INT64) {
    far = ctx.Scalar(Number::Int(is_max ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max()), d);
  } else if (d == v1::INT32) {
    far = ctx.Scalar(Number::Int(is_max ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int32_t>::max()), d);
  } else {
    return Status::Unsupported(std::string("lax.scatter max/min of ") + DTypeName(d));
  }
  const std::string tshape = ctx.EmitTemp("Shape", {target});
  const std::string lens = ctx.EmitTemp("Slice", {tshape, ctx.Int64s({0}), ctx.Int64s({q})});
  const std::string wshape = ctx.EmitTemp("Slice", {tshape, ctx.Int64s({q}), ctx.Int64s({q + window_rank})});
  // Slots [P, W...], updates [U, W...], their slots [U].
  const std::string tflat = ctx.EmitTemp("Reshape", {target, Concat(ctx, {ctx.Int64s({-1}), wshape}, 0)});
  const std::string uflat = ctx.EmitTemp("Reshape", {upd, Concat(ctx, {ctx.Int64s({-1}), wshape}, 0)});
  const std::string iflat = ctx.EmitTemp("Reshape", {idx, ctx.Int64s({-1, q})});
  std::string lin;
  for (int64_t k = 0; k < q; ++k) {
    const std::string ik = ctx.EmitTemp("Squeeze", {GatherAt(ctx, iflat, ctx.Int64s({k}), 1), ctx.Int64s({1})});
    lin = lin.empty() ? ik : ctx.EmitTemp("Add", {ctx.EmitTemp("Mul", {lin, GatherAt(ctx, lens, I64(ctx, k), 0)}), ik});
  }
  if (lin.empty()) lin = ctx.EmitTemp("Mul", {ctx.EmitTemp("Squeeze", {ctx.EmitTemp("Slice", {ctx.EmitTemp("Shape", {iflat}), ctx.Int64s({0}), ctx.Int64s({1})}), ctx.Int64s({0})}), I64(ctx, 0)});
  (void)nb;
  const std::string P = ctx.EmitTemp("Squeeze", {ctx.EmitTemp("Slice", {ctx.EmitTemp("Shape", {tflat}), ctx.Int64s({0}), ctx.Int64s({1})}), ctx.Int64s({0})});
  const std::string slots = ctx.EmitTemp("Range", {I64(ctx, 0), P, I64(ctx, 1)});
  const std::string hit = ctx.EmitTemp("Equal", {ctx.Unsqueeze(slots, {1}), ctx.Unsqueeze(lin, {0})});   // [P, U]
  std::vector<int64_t> wax;
  for (int k = 0; k < window_rank; ++k) wax.push_back(2 + k);
  const std::string hitw = wax.empty() ? hit : ctx.Unsqueeze(hit, wax);                                  // [P, U, 1...]
  const std::string cand = ctx.EmitTemp("Where", {hitw, ctx.Unsqueeze(uflat, {0}), far});               // [P, U, W...]
  std::string red = Reduce(ctx, is_max ? "ReduceMax" : "ReduceMin", cand, {1}, false);
  if (IsFloating(d)) {
    const std::string nan_hit = Reduce(ctx, "ReduceMax", ctx.CastTo(ctx.EmitTemp("And", {hitw, ctx.EmitTemp("IsNaN", {ctx.Unsqueeze(uflat, {0})})}), v1::BOOL, v1::INT32), {1}, false);
    red = ctx.EmitTemp("Where", {ctx.CastTo(nan_hit, v1::INT32, v1::BOOL), F(ctx, std::nan(""), d), red});
  }
  std::string any = ctx.CastTo(Reduce(ctx, "ReduceMax", ctx.CastTo(hit, v1::BOOL, v1::INT32), {1}, false), v1::INT32, v1::BOOL);   // [P]
  if (!wax.empty()) {
    std::vector<int64_t> ax;
    for (int k = 0; k < window_rank; ++k) ax.push_back(1 + k);
    any = ctx.Unsqueeze(any, ax);
  }
  std::string both = ctx.EmitTemp(is_max ? "Max" : "Min", {tflat, red});
  if (IsFloating(d)) {
    both = ctx.EmitTemp("Where", {ctx.EmitTemp("IsNaN", {tflat}), tflat, both});
    both = ctx.EmitTemp("Where", {ctx.EmitTemp("IsNaN", {red}), red, both});
  }
  *out = ctx.EmitTemp("Reshape", {ctx.EmitTemp("Where", {any, both, tflat}), tshape});
  return Status::Ok();
}

// polygamma(n, x) for 2 <= n <= 30, as ATen: (-1)^(n+1) n! zeta(n + 1, x), in float64 (ATen's zeta
// accumulates in double). x > 0: zeta(s, z) = sum_{k<20} (z + k)^-s + the Euler-Maclaurin tail at
// w = z + 20, w^-s (w / (s - 1) + 1/2 + sum_{j<=10} B_2j / (2j)! s (s + 1) ... (s + 2j - 2) w^(1-2j))
// (relative error below 1e-10 for s <= 31). x <= 0 (the sum ATen runs from x up): the reflection
// psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi^(n+1) P_n(cot(pi x)), P_n the n-th derivative of cot as a
// polynomial in cot (P_0 = c, P_k+1 = -(1 + c^2) P_k'), cot of pi (x - round(x)) exact for every
// float. Non-positive integers and -inf give ATen's sign * inf, inf and NaN give NaN.
Status EmitPolygammaHigh(LoweringContext& ctx, const std::string& x_in, v1::DType d, int64_t n, std::string* out) {
  if (n < 2 || n > 30) return Status::Unsupported("polygamma with n=" + std::to_string(n) + " (n from 0 to 30 lower)");
  const v1::DType W = v1::FLOAT64;
  auto c = [&](double v) { return F(ctx, v, W); };
  auto e2 = [&](const char* o, const std::string& a, const std::string& b) { return ctx.EmitTemp(o, {a, b}); };
  const std::string x = ctx.CastTo(x_in, d, W);
  const double s = static_cast<double>(n + 1);
  const std::string neg = e2("LessOrEqual", x, c(0));
  const std::string z = ctx.EmitTemp("Where", {neg, e2("Sub", c(1), x), x});
  const std::string ms = c(-s);
  std::string sum = e2("Pow", z, ms);
  for (int k = 1; k < 20; ++k) sum = e2("Add", sum, e2("Pow", e2("Add", z, c(k)), ms));
  const std::string w = e2("Add", z, c(20));
  const std::string iw = e2("Div", c(1), w), iw2 = e2("Mul", iw, iw);
  static const double kB2j[] = {1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6, -3617.0 / 510, 43867.0 / 798, -174611.0 / 330};
  std::vector<double> coef;
  double fact2j = 1, rising = 1;   // (2j)!, s (s + 1) ... (s + 2j - 2)
  for (int j = 1; j <= 10; ++j) {
    fact2j *= (2.0 * j - 1) * (2.0 * j);
    rising *= (j == 1 ? s : (s + 2 * j - 3) * (s + 2 * j - 2));
    coef.push_back(kB2j[j - 1] / fact2j * rising);
  }
  std::string poly = c(coef.back());
  for (int j = static_cast<int>(coef.size()) - 2; j >= 0; --j) poly = e2("Add", c(coef[static_cast<size_t>(j)]), e2("Mul", poly, iw2));
  const std::string inner = e2("Add", e2("Add", e2("Div", w, c(s - 1)), c(0.5)), e2("Mul", iw, poly));
  const std::string zeta = e2("Add", sum, e2("Mul", e2("Pow", w, ms), inner));
  double fact = 1;
  for (int64_t k = 2; k <= n; ++k) fact *= static_cast<double>(k);
  const double sign = n % 2 ? 1.0 : -1.0;
  const std::string pos = e2("Mul", zeta, c(sign * fact));
  // P_n(c): coefficients by degree.
  std::vector<double> p = {0, 1};
  for (int64_t k = 0; k < n; ++k) {
    std::vector<double> dp(p.size() > 1 ? p.size() - 1 : 1, 0.0);
    for (size_t i = 1; i < p.size(); ++i) dp[i - 1] = p[i] * static_cast<double>(i);
    std::vector<double> q(dp.size() + 2, 0.0);
    for (size_t i = 0; i < dp.size(); ++i) q[i] -= dp[i], q[i + 2] -= dp[i];
    p = q;
  }
  const std::string r = e2("Mul", e2("Sub", x, ctx.EmitTemp("Round", {x})), c(M_PI));
  const std::string ct = e2("Div", ctx.EmitTemp("Cos", {r}), ctx.EmitTemp("Sin", {r}));
  std::string pn = c(p.back());
  for (int i = static_cast<int>(p.size()) - 2; i >= 0; --i) pn = e2("Add", c(p[static_cast<size_t>(i)]), e2("Mul", pn, ct));
  const std::string refl = e2("Sub", e2("Mul", pos, c(n % 2 ? -1.0 : 1.0)), e2("Mul", pn, c(std::pow(M_PI, static_cast<double>(n + 1)))));
  const std::string pole = e2("And", neg, e2("Equal", x, ctx.EmitTemp("Floor", {x})));
  const std::string res = ctx.EmitTemp("Where", {pole, c(sign * std::numeric_limits<double>::infinity()),
                                                 ctx.EmitTemp("Where", {neg, refl, pos})});
  *out = ctx.CastTo(res, W, d);
  return Status::Ok();
}

// lax.select_and_scatter_add(source, operand, select_prim, window_dimensions, window_strides,
// padding): each window of operand selects its first maximum (ge_p; le_p: its first minimum;
// padding is never selected) and source's value for that window is added there. The dims with a
// window of 1, stride 1 and no padding are brought first and flattened into MaxPool's batch; the
// others (1 to 3) are pooled: MaxPool's Indices (first maximum, as XLA's ge) address the flat
// operand, where ScatterElements adds the source.
Status LowerSelectAndScatterAdd(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId src, x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &src));
  IVY_RETURN_IF_ERROR(TensorParam(call, "other", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* sel = call.Get("select_prim");
  const std::string prim = sel ? ArgToString(*sel, true) : std::string();
  bool is_max;
  if (prim.find("ge") != std::string::npos && prim.find("gt") == std::string::npos) is_max = true;
  else if (prim.find("le") != std::string::npos && prim.find("lt") == std::string::npos) is_max = false;
  else return Status::Unsupported("select_and_scatter_add with select_prim " + prim + " (ge_p and le_p only)");
  auto win = call.IntList("window_dimensions");
  auto strides = call.IntList("window_strides");
  const v1::Arg* pad = call.Get("padding");
  const int r = ctx.Rank(x);
  if (!win || !strides || !pad || static_cast<int>(win->size()) != r || static_cast<int>(strides->size()) != r) {
    return Status::Unsupported("select_and_scatter_add with windows or strides that are not ints per dim");
  }
  auto pads = SequenceItems(*pad);
  if (!pads || static_cast<int>(pads->size()) != r) return Status::Unsupported("select_and_scatter_add padding that is not a pair per dim");
  std::vector<int64_t> lo, hi, pooled, kept;
  for (int k = 0; k < r; ++k) {
    auto pr = AsIntList(*(*pads)[k]);
    if (!pr || pr->size() != 2 || (*pr)[0] < 0 || (*pr)[1] < 0) return Status::Unsupported("select_and_scatter_add padding that is not non-negative pairs");
    if ((*win)[k] == 1 && (*strides)[k] == 1 && (*pr)[0] == 0 && (*pr)[1] == 0) {
      kept.push_back(k);
    } else {
      pooled.push_back(k);
      lo.push_back((*pr)[0]);
      hi.push_back((*pr)[1]);
    }
  }
  if (pooled.empty() || pooled.size() > 3) return Status::Unsupported("select_and_scatter_add pooling over no dim or more than 3");
  const v1::DType d = ctx.DType(result);
  if (d != v1::FLOAT32 && d != v1::FLOAT64) return Status::Unsupported(std::string("select_and_scatter_add of ") + DTypeName(d));
  std::vector<int64_t> perm = kept;
  perm.insert(perm.end(), pooled.begin(), pooled.end());
  std::vector<int64_t> inv(r);
  for (int k = 0; k < r; ++k) inv[perm[k]] = k;
  const std::string xin = ctx.CastTo(ctx.In(x), ctx.DType(x), d), sin = ctx.CastTo(ctx.In(src), ctx.DType(src), d);
  const std::string xt = Transpose(ctx, xin, perm), st = Transpose(ctx, sin, perm);
  const int nk = static_cast<int>(kept.size());
  auto pooled_shape = [&](const std::string& v) {   // [prod(kept), 1, pooled...]
    return Concat(ctx, {ctx.Int64s({-1, 1}), ctx.EmitTemp("Slice", {ctx.EmitTemp("Shape", {v}), ctx.Int64s({nk}), ctx.Int64s({r})})}, 0);
  };
  std::string x4 = ctx.EmitTemp("Reshape", {xt, pooled_shape(xt)});
  if (!is_max) x4 = ctx.EmitTemp("Neg", {x4});
  std::vector<int64_t> kernel, strd, onnx_pads = lo;
  for (int64_t k : pooled) kernel.push_back((*win)[k]), strd.push_back((*strides)[k]);
  onnx_pads.insert(onnx_pads.end(), hi.begin(), hi.end());
  const std::string y = ctx.Temp("pool"), indices = ctx.Temp("pool_indices");
  auto* mp = ctx.Emit("MaxPool", {x4}, {y, indices});
  SetAttr(mp, "kernel_shape", kernel);
  SetAttr(mp, "strides", strd);
  SetAttr(mp, "pads", onnx_pads);
  const std::string zeros = ctx.EmitTemp("Expand", {F(ctx, 0, d), ctx.EmitTemp("Reshape", {ctx.EmitTemp("Size", {xt}), ctx.Int64s({1})})});
  onnx::NodeProto* sc = nullptr;
  const std::string flat = ctx.EmitTemp("ScatterElements", {zeros, ctx.EmitTemp("Reshape", {indices, ctx.Int64s({-1})}),
                                                            ctx.EmitTemp("Reshape", {st, ctx.Int64s({-1})})}, &sc);
  SetAttr(sc, "axis", int64_t{0});
  SetAttr(sc, "reduction", std::string("add"));
  const std::string back = ctx.EmitTemp("Reshape", {flat, ctx.EmitTemp("Shape", {xt})});
  auto* t = ctx.Emit("Transpose", {back}, {ctx.Out(result)});
  SetAttr(t, "perm", inv);
  return Status::Ok();
}

// np.<comparison>.reduce / .accumulate (greater, less, greater_equal, less_equal, equal,
// not_equal; NumPy runs them on bool arrays only) and np.bitwise_and / bitwise_or.reduce of bools.
// NumPy folds in order: s = a0, then s = op(s, a_k). On bools each a_k makes the step one of four
// maps of s: a constant, s itself or not s (greater: a_k ? 0 : s; greater_equal: a_k ? s : 1;
// less: a_k ? !s : 0; less_equal: a_k ? 1 : !s; equal: a_k ? s : !s; not_equal: a_k ? !s : s).
// So s after step k is the value of the last constant step j <= k (a0 itself, or `initial` before
// it) flipped once per negating step in (j, k]: a running max of positions (a triangular mask)
// and a CumSum of the negations, for any length.
Status LowerCompareFold(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const std::string c = ctx.canonical();
  const bool reduce = c.size() > 7 && c.compare(c.size() - 7, 7, "_reduce") == 0;
  const std::string op = c.substr(0, c.rfind('_'));
  if (ctx.DType(x) != v1::BOOL) return Status::Unsupported("np." + op + (reduce ? ".reduce" : ".accumulate") + " of a " + DTypeName(ctx.DType(x)) + " array (NumPy folds bools only)" + (op.rfind("bitwise", 0) == 0 ? "; integers need a bitwise And/Or, which ONNX opset 17 lacks" : ""));
  if (!call.IsNone("out")) return Status::Unsupported("np." + op + " fold with out=");
  if (!call.IsNone("dtype")) {
    auto want = ArgDType(*call.Get("dtype"));
    if (!want || *want != v1::BOOL) return Status::Unsupported("np." + op + " fold with dtype " + ArgToString(*call.Get("dtype"), true));
  }
  if (reduce) {
    if (auto w = call.Bool("where"); !w || !*w) return Status::Unsupported("np." + op + ".reduce with where=");
  }
  std::optional<bool> initial;
  if (reduce && !call.IsNone("initial")) {
    auto iv = AsDouble(*call.Get("initial"));
    if (!iv || HasTensor(*call.Get("initial"))) return Status::Unsupported("np." + op + ".reduce with an initial that is not a number");
    initial = *iv != 0;
  }
  const bool keepdims = reduce && call.Bool("keepdim").value_or(call.Bool("keepdims").value_or(false));
  int rank = ctx.Rank(x);
  std::string in = ctx.In(x);
  int64_t axis = 0;
  const v1::Arg* dim = call.Has("dim") ? call.Get("dim") : call.Get("axis");
  if (reduce && (!dim || IsNone(*dim))) {
    in = ctx.EmitTemp("Reshape", {in, ctx.Int64s({-1})});
    rank = 1;
  } else {
    auto a = dim ? AsInt(*dim) : std::nullopt;
    if (!a || dim->kind_case() != v1::Arg::kI) return Status::Unsupported("np." + op + " fold over axis " + (dim ? ArgToString(*dim, true) : std::string("missing")) + " (one int axis)");
    if (rank == 0) return Status::Unsupported("np." + op + " fold of a 0-d array");
    IVY_RETURN_IF_ERROR(NormalizeAxis(*a, rank, &axis));
  }
  // The axis last: [..., L].
  std::vector<int64_t> perm;
  for (int k = 0; k < rank; ++k) if (k != axis) perm.push_back(k);
  perm.push_back(axis);
  std::vector<int64_t> inv(rank);
  for (int k = 0; k < rank; ++k) inv[perm[k]] = k;
  const std::string b = Transpose(ctx, in, perm);
  std::string out;
  if (op == "bitwise_and" || op == "bitwise_or") {
    if (!reduce) return Status::Unsupported("'compare fold' lowering does not know " + c);
    const bool and_ = op == "bitwise_and";
    std::string r = Reduce(ctx, and_ ? "ReduceMin" : "ReduceMax", ctx.CastTo(b, v1::BOOL, v1::INT32), {rank - 1}, true);
    if (initial) r = ctx.EmitTemp(and_ ? "Min" : "Max", {r, ctx.Scalar(Number::Int(*initial ? 1 : 0), v1::INT32)});
    out = ctx.CastTo(r, v1::INT32, v1::BOOL);
  } else {
    std::string is_const, cval, is_neg;
    const std::string nb = ctx.EmitTemp("Not", {b});
    const std::string t = ctx.EmitTemp("Equal", {b, b});   // all true
    const std::string f = ctx.EmitTemp("Not", {t});
    if (op == "greater") is_const = b, cval = f, is_neg = f;
    else if (op == "greater_equal") is_const = nb, cval = t, is_neg = f;
    else if (op == "less") is_const = nb, cval = f, is_neg = b;
    else if (op == "less_equal") is_const = b, cval = t, is_neg = nb;
    else if (op == "equal") is_const = f, cval = f, is_neg = nb;
    else if (op == "not_equal") is_const = f, cval = f, is_neg = b;
    else return Status::Unsupported("'compare fold' lowering does not know " + c);
    const std::string n = ctx.EmitTemp("Squeeze", {ctx.EmitTemp("Slice", {ctx.EmitTemp("Shape", {b}), ctx.Int64s({-1}), ctx.Int64s({std::numeric_limits<int64_t>::max()})}), ctx.Int64s({0})});
    const std::string pos = ctx.EmitTemp("Range", {I64(ctx, 0), n, I64(ctx, 1)});   // [L]
    const std::string first = ctx.EmitTemp("Equal", {pos, I64(ctx, 0)});
    if (!initial) {
      // a0 starts the fold: a constant step of value a0 that negates nothing.
      is_const = ctx.EmitTemp("Or", {is_const, first});
      // (Where has no bool kernel in onnxruntime.)
      cval = ctx.EmitTemp("Or", {ctx.EmitTemp("And", {first, b}), ctx.EmitTemp("And", {ctx.EmitTemp("Not", {first}), cval})});
      is_neg = ctx.EmitTemp("And", {is_neg, ctx.EmitTemp("Not", {first})});
    }
    // j[..., k] = the last constant step <= k (-1: none).
    const std::string upto = ctx.EmitTemp("LessOrEqual", {ctx.Unsqueeze(pos, {0}), ctx.Unsqueeze(pos, {1})});   // [k, i]: i <= k
    const std::string mask = ctx.EmitTemp("And", {upto, ctx.Unsqueeze(is_const, {rank - 1})});                // [..., k, i]
    const std::string j = Reduce(ctx, "ReduceMax", ctx.EmitTemp("Where", {mask, ctx.Unsqueeze(pos, {0}), I64(ctx, -1)}), {rank}, false);
    const std::string none = ctx.EmitTemp("Less", {j, I64(ctx, 0)});
    const std::string js = ctx.EmitTemp("Max", {j, I64(ctx, 0)});
    auto* cs = ctx.Emit("CumSum", {ctx.CastTo(is_neg, v1::BOOL, v1::INT64), I64(ctx, rank - 1)}, {ctx.Temp("negs")});
    const std::string negs = cs->output(0);
    onnx::NodeProto* g1 = nullptr;
    const std::string negs_j = ctx.EmitTemp("GatherElements", {negs, js}, &g1);
    SetAttr(g1, "axis", int64_t{rank - 1});
    onnx::NodeProto* g2 = nullptr;
    const std::string c_j = ctx.EmitTemp("GatherElements", {ctx.CastTo(cval, v1::BOOL, v1::INT64), js}, &g2);
    SetAttr(g2, "axis", int64_t{rank - 1});
    const std::string start = ctx.Scalar(Number::Int(initial.value_or(false) ? 1 : 0), v1::INT64);
    const std::string base = ctx.EmitTemp("Where", {none, start, c_j});
    const std::string flips = ctx.EmitTemp("Sub", {negs, ctx.EmitTemp("Where", {none, I64(ctx, 0), negs_j})});
    const std::string odd = ctx.EmitTemp("Mod", {flips, I64(ctx, 2)});
    out = ctx.EmitTemp("Xor", {ctx.CastTo(base, v1::INT64, v1::BOOL), ctx.CastTo(odd, v1::INT64, v1::BOOL)});   // [..., L]
    if (reduce) out = ctx.EmitTemp("Slice", {out, ctx.Int64s({-1}), ctx.Int64s({std::numeric_limits<int64_t>::max()}), ctx.Int64s({rank - 1})});
  }
  // [..., 1] for a reduce: back to the axis' place (kept or dropped), or the fold transposed back.
  out = Transpose(ctx, out, inv);
  if (reduce && !keepdims) out = ctx.Squeeze(out, {axis});
  if (reduce && keepdims && rank != ctx.Rank(x)) out = ctx.EmitTemp("Reshape", {out, ctx.Int64s(std::vector<int64_t>(static_cast<size_t>(ctx.Rank(x)), 1))});
  ctx.Emit("Identity", {ctx.CastTo(out, v1::BOOL, ctx.DType(result))}, {ctx.Out(result)});
  return Status::Ok();
}

// lax.linalg.lu_pivots_to_permutation(pivots [..., k], permutation_size=n): iota(n) with rows i and
// pivots[i] swapped for i = 0 .. k - 1 in order (LAPACK's row interchanges): k unrolled swaps, k
// the pivots' recorded last dim (a static shape under jit).
Status LowerLuPivotsToPermutation(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* ops = call.Get("operands");
  auto items = ops ? SequenceItems(*ops) : std::nullopt;
  if (!items || items->size() != 1 || (*items)[0]->kind_case() != v1::Arg::kTensor) return Status::Unsupported("lu_pivots_to_permutation of other than one pivots array");
  const ValueId piv = (*items)[0]->tensor().value();
  auto n = call.Int("permutation_size");
  const int r = ctx.Rank(piv);
  if (!n || *n < 0 || r < 1) return Status::Unsupported("lu_pivots_to_permutation without an int permutation_size or of 0-d pivots");
  const int64_t k = ctx.Shape(piv).back();
  if (k < 0 || k > *n || k > 4096) return Status::Unsupported("lu_pivots_to_permutation with a pivot count that is not static and at most permutation_size");
  const std::string p = ctx.CastTo(ctx.In(piv), ctx.DType(piv), v1::INT64);
  const std::string batch = ctx.EmitTemp("Slice", {ctx.EmitTemp("Shape", {p}), ctx.Int64s({0}), ctx.Int64s({r - 1})});
  std::string perm = ctx.EmitTemp("Expand", {ctx.EmitTemp("Range", {I64(ctx, 0), I64(ctx, *n), I64(ctx, 1)}), Concat(ctx, {batch, ctx.Int64s({*n})}, 0)});
  const std::string one_shape = Concat(ctx, {batch, ctx.Int64s({1})}, 0);
  auto scatter = [&](const std::string& data, const std::string& idx, const std::string& upd) {
    onnx::NodeProto* s = nullptr;
    const std::string o = ctx.EmitTemp("ScatterElements", {data, idx, upd}, &s);
    SetAttr(s, "axis", int64_t{r - 1});
    return o;
  };
  for (int64_t i = 0; i < k; ++i) {
    const std::string j = ctx.EmitTemp("Slice", {p, ctx.Int64s({i}), ctx.Int64s({i + 1}), ctx.Int64s({r - 1})});   // [..., 1]
    const std::string at_i = ctx.EmitTemp("Expand", {ctx.Int64s({i}), one_shape});
    const std::string a = ctx.EmitTemp("Slice", {perm, ctx.Int64s({i}), ctx.Int64s({i + 1}), ctx.Int64s({r - 1})});
    onnx::NodeProto* g = nullptr;
    const std::string b = ctx.EmitTemp("GatherElements", {perm, j}, &g);
    SetAttr(g, "axis", int64_t{r - 1});
    perm = scatter(scatter(perm, at_i, b), j, a);
  }
  ctx.Emit("Identity", {ctx.CastTo(perm, v1::INT64, ctx.DType(result))}, {ctx.Out(result)});
  return Status::Ok();
}

}  // namespace onnx_export
}  // namespace ivytrace
