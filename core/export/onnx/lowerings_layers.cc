// Layer lowerings: matmul family (matmul, dot, outer, addmm/baddbmm, einsum, lax.dot_general),
// N-d convolutions and transposed convolutions, N-d pooling, group/instance/RMS norm, normalize,
// pad (every mode), interpolate, scaled_dot_product_attention.
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "core/export/onnx/lowerings.h"
#include "core/ir/arg.h"
#include "core/passes/recorded_values.h"

namespace ivytrace {
namespace onnx_export {

namespace {

std::string F(LoweringContext& ctx, double v, v1::DType d) { return ctx.Scalar(Number::Float(v), d); }

// Spatial rank from a canonical name ending in "1d"/"2d"/"3d".
int SpatialRank(const std::string& canonical) {
  if (canonical.size() >= 2 && canonical.back() == 'd') {
    const char n = canonical[canonical.size() - 2];
    if (n >= '1' && n <= '3') return n - '0';
  }
  return 0;
}

Status IntN(const BoundCall& call, const char* param, int n, std::vector<int64_t>* out) {
  auto l = call.IntList(param, n);
  if (!l || static_cast<int>(l->size()) != n) {
    const v1::Arg* a = call.Get(param);
    return Status::Unsupported(std::string(param) + "=" + (a ? ArgToString(*a, true) : "?") + " is not an int or " +
                               std::to_string(n) + " ints");
  }
  *out = *l;
  return Status::Ok();
}

// Runs `emit` on a batched input: an unbatched one (rank spatial+1) is unsqueezed, and squeezed back.
Status Batched(LoweringContext& ctx, const char* what, ValueId x, ValueId result, int spatial,
               const std::function<void(const std::string&, const std::string&)>& emit) {
  const int rank = ctx.Rank(x);
  if (rank == spatial + 2) {
    emit(ctx.In(x), ctx.Out(result));
    return Status::Ok();
  }
  if (rank == spatial + 1) {
    std::string tmp = ctx.Temp("batched");
    emit(ctx.Unsqueeze(ctx.In(x), {0}), tmp);
    ctx.Emit("Squeeze", {tmp, ctx.Int64s({0})}, {ctx.Out(result)});
    return Status::Ok();
  }
  return Status::Unsupported(std::string(what) + " expects an input of rank " + std::to_string(spatial + 1) +
                             " or " + std::to_string(spatial + 2) + ", got " + std::to_string(rank));
}

std::vector<int64_t> Twice(const std::vector<int64_t>& p) {
  std::vector<int64_t> r = p;
  r.insert(r.end(), p.begin(), p.end());
  return r;
}

const v1::ArgList* Items(const v1::Arg* a) {
  if (!a) return nullptr;
  if (a->kind_case() == v1::Arg::kList) return &a->list();
  if (a->kind_case() == v1::Arg::kTuple) return &a->tuple();
  return nullptr;
}

}  // namespace

// --- matmul family ----------------------------------------------------------------------------------

Status LowerMatmul(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId a, b, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &a));
  IVY_RETURN_IF_ERROR(TensorParam(call, "other", &b));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(result);
  std::string x = ctx.CastTo(ctx.In(a), ctx.DType(a), d), y = ctx.CastTo(ctx.In(b), ctx.DType(b), d);
  const std::string& c = ctx.canonical();
  if (c == "outer") {
    ctx.Emit("Mul", {ctx.EmitTemp("Reshape", {x, ctx.Int64s({-1, 1})}), ctx.EmitTemp("Reshape", {y, ctx.Int64s({1, -1})})},
             {ctx.Out(result)});
    return Status::Ok();
  }
  if (c == "dot" && (ctx.Rank(a) == 0 || ctx.Rank(b) == 0)) {
    ctx.Emit("Mul", {x, y}, {ctx.Out(result)});
    return Status::Ok();
  }
  if (c == "dot" && (ctx.Rank(a) > 2 || ctx.Rank(b) > 2) && ctx.Rank(b) != 1) {
    return Status::Unsupported("numpy.dot of N-d arrays (a sum over the last axis of a and the second-to-last of b)");
  }
  ctx.Emit("MatMul", {x, y}, {ctx.Out(result)});
  return Status::Ok();
}

// addmm / baddbmm: beta * input + alpha * (mat1 @ mat2).
Status LowerAddmm(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId c, m1, m2, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &c));
  IVY_RETURN_IF_ERROR(TensorParam(call, "mat1", &m1));
  IVY_RETURN_IF_ERROR(TensorParam(call, "mat2", &m2));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(result);
  const double beta = call.Double("beta").value_or(1.0), alpha = call.Double("alpha").value_or(1.0);
  // Matrices of float32/float64 (addmm, as GPT-2's Conv1D calls it): one Gemm, whose C broadcasts
  // like addmm's input and whose alpha/beta are addmm's. Half types keep MatMul+Add: onnxruntime's
  // CPU provider has no Gemm kernel for bfloat16, nor one for float16 in every version.
  const bool floating = d == v1::FLOAT32 || d == v1::FLOAT64;
  if (floating && ctx.Rank(m1) == 2 && ctx.Rank(m2) == 2 && ctx.Rank(c) <= 2 && beta != 0.0) {
    auto* n = ctx.Emit("Gemm", {ctx.In(m1), ctx.In(m2), ctx.In(c)}, {ctx.Out(result)});
    if (alpha != 1.0) SetAttr(n, "alpha", static_cast<float>(alpha));
    if (beta != 1.0) SetAttr(n, "beta", static_cast<float>(beta));
    return Status::Ok();
  }
  std::string prod = ctx.EmitTemp("MatMul", {ctx.In(m1), ctx.In(m2)});
  if (alpha != 1.0) prod = ctx.EmitTemp("Mul", {prod, F(ctx, alpha, d)});
  if (beta == 0.0) {
    ctx.Emit("Identity", {prod}, {ctx.Out(result)});
    return Status::Ok();
  }
  std::string bias = ctx.In(c);
  if (beta != 1.0) bias = ctx.EmitTemp("Mul", {bias, F(ctx, beta, d)});
  ctx.Emit("Add", {bias, prod}, {ctx.Out(result)});
  return Status::Ok();
}

Status LowerEinsum(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* eq = call.Get("equation");
  if (!eq || eq->kind_case() != v1::Arg::kS) return Status::Unsupported("einsum without an equation string");
  std::string equation;
  for (char ch : eq->s()) {
    if (ch != ' ') equation += ch;
  }
  const v1::ArgList* items = Items(call.Get("operands"));
  if (!items) return Status::Unsupported("einsum operands are not a list");
  const v1::DType d = ctx.DType(result);
  std::vector<std::string> ins;
  for (const auto& it : items->items()) {
    if (it.kind_case() != v1::Arg::kTensor) return Status::Unsupported("einsum of a non-tensor operand");
    ValueId v = it.tensor().value();
    ins.push_back(ctx.CastTo(ctx.In(v), ctx.DType(v), d));
  }
  auto* n = ctx.Emit("Einsum", ins, {ctx.Out(result)});
  SetAttr(n, "equation", equation);
  return Status::Ok();
}

// lax.dot_general(lhs, rhs, dimension_numbers=((lc, rc), (lb, rb))) as an Einsum: batch dims,
// then lhs free dims, then rhs free dims, which is dot_general's output order.
Status LowerDotGeneral(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId a, b, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &a));
  IVY_RETURN_IF_ERROR(TensorParam(call, "other", &b));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::ArgList* dn = Items(call.Get("dimension_numbers"));
  if (!dn || dn->items_size() != 2) return Status::Unsupported("dimension_numbers is not ((lc, rc), (lb, rb))");
  const v1::ArgList* contract = Items(&dn->items(0));
  const v1::ArgList* batch = Items(&dn->items(1));
  if (!contract || !batch || contract->items_size() != 2 || batch->items_size() != 2) {
    return Status::Unsupported("dimension_numbers is not ((lc, rc), (lb, rb))");
  }
  auto lc = AsIntList(contract->items(0)), rc = AsIntList(contract->items(1));
  auto lb = AsIntList(batch->items(0)), rb = AsIntList(batch->items(1));
  if (!lc || !rc || !lb || !rb) return Status::Unsupported("dimension_numbers holds non-ints");
  const int ra = ctx.Rank(a), rb_rank = ctx.Rank(b);
  if (ra + rb_rank > 26) return Status::Unsupported("dot_general of too many dims");
  std::string la(ra, '?'), lbl(rb_rank, '?');
  char next = 'a';
  std::string out;
  for (size_t i = 0; i < lb->size(); ++i) {
    la[(*lb)[i]] = lbl[(*rb)[i]] = next;
    out += next++;
  }
  for (size_t i = 0; i < lc->size(); ++i) la[(*lc)[i]] = lbl[(*rc)[i]] = next++;
  for (char& ch : la) {
    if (ch == '?') out += (ch = next++);
  }
  for (char& ch : lbl) {
    if (ch == '?') out += (ch = next++);
  }
  const v1::DType d = ctx.DType(result);
  auto* n = ctx.Emit("Einsum", {ctx.CastTo(ctx.In(a), ctx.DType(a), d), ctx.CastTo(ctx.In(b), ctx.DType(b), d)},
                     {ctx.Out(result)});
  SetAttr(n, "equation", la + "," + lbl + "->" + out);
  return Status::Ok();
}

// --- convolution and pooling ------------------------------------------------------------------------

// conv{1,2,3}d and conv_transpose{1,2,3}d.
Status LowerConv(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, w, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "weight", &w));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const bool transposed = ctx.canonical().rfind("conv_transpose", 0) == 0;
  const auto& wshape = ctx.Shape(w);
  const int n = static_cast<int>(wshape.size()) - 2;
  if (n < 1 || n > 3) return Status::Unsupported("convolution weight of rank " + std::to_string(wshape.size()));
  std::vector<int64_t> stride, dilation, kernel(wshape.begin() + 2, wshape.end());
  IVY_RETURN_IF_ERROR(IntN(call, "stride", n, &stride));
  IVY_RETURN_IF_ERROR(IntN(call, "dilation", n, &dilation));
  auto groups = call.Int("groups");
  if (const v1::Arg* g = call.Get("groups"); !groups && g && g->kind_case() == v1::Arg::kTensor &&
                                             ctx.DType(g->tensor().value()) == v1::SYM_INT) {
    // groups read from a shape (Mamba's depthwise conv: groups=x.shape[1]): the recorded value.
    // ONNX's group is an attribute; the conv then needs x's channels == group * weight.shape[1],
    // as the program's conv did with its own groups, so no other value passes in silence.
    groups = RecordedScalar(ctx.graph(), g->tensor().value());
  }
  if (!groups) return Status::Unsupported("groups is not an int");
  std::vector<int64_t> pads;
  const v1::Arg* padding = call.Get("padding");
  if (padding && padding->kind_case() == v1::Arg::kS) {
    if (padding->s() == "valid") {
      pads.assign(2 * n, 0);
    } else if (padding->s() == "same" && !transposed) {  // torch puts the odd pixel at the end
      std::vector<int64_t> begin(n), end(n);
      for (int i = 0; i < n; ++i) {
        const int64_t total = dilation[i] * (kernel[i] - 1);
        begin[i] = total / 2;
        end[i] = total - begin[i];
      }
      pads = begin;
      pads.insert(pads.end(), end.begin(), end.end());
    } else {
      return Status::Unsupported("padding='" + padding->s() + "'");
    }
  } else {
    std::vector<int64_t> p;
    IVY_RETURN_IF_ERROR(IntN(call, "padding", n, &p));
    pads = Twice(p);
  }
  std::vector<int64_t> output_padding(n, 0);
  if (transposed) IVY_RETURN_IF_ERROR(IntN(call, "output_padding", n, &output_padding));
  std::vector<std::string> ins = {"", ctx.In(w)};
  if (!call.IsNone("bias")) {
    auto b = call.Tensor("bias");
    if (!b) return Status::Unsupported("bias is not a tensor");
    ins.push_back(ctx.In(*b));
  }
  return Batched(ctx, ctx.canonical().c_str(), x, result, n, [&](const std::string& in, const std::string& out) {
    ins[0] = in;
    auto* node_proto = ctx.Emit(transposed ? "ConvTranspose" : "Conv", ins, {out});
    SetAttr(node_proto, "kernel_shape", kernel);
    SetAttr(node_proto, "strides", stride);
    SetAttr(node_proto, "pads", pads);
    SetAttr(node_proto, "dilations", dilation);
    SetAttr(node_proto, "group", *groups);
    if (transposed && std::any_of(output_padding.begin(), output_padding.end(), [](int64_t v) { return v != 0; })) {
      SetAttr(node_proto, "output_padding", output_padding);
    }
  });
}

// max_pool{1,2,3}d / avg_pool{1,2,3}d.
Status LowerPool(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  const std::string& c = ctx.canonical();
  const bool is_max = c.rfind("max_pool", 0) == 0;
  const int n = SpatialRank(c);
  if (n == 0) return Status::Unsupported("'pool' lowering does not know '" + c + "'");
  if (is_max && call.Bool("return_indices").value_or(false)) return Status::Unsupported("max_pool with return_indices=True");
  if (!is_max && !call.IsNone("divisor_override")) return Status::Unsupported("avg_pool with divisor_override");
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  std::vector<int64_t> kernel, stride, padding, dilation(n, 1);
  IVY_RETURN_IF_ERROR(IntN(call, "kernel_size", n, &kernel));
  const v1::Arg* s = call.Get("stride");
  auto sl = s ? AsIntList(*s) : std::nullopt;
  if (!s || IsNone(*s) || (sl && sl->empty())) stride = kernel;
  else IVY_RETURN_IF_ERROR(IntN(call, "stride", n, &stride));
  IVY_RETURN_IF_ERROR(IntN(call, "padding", n, &padding));
  if (is_max) IVY_RETURN_IF_ERROR(IntN(call, "dilation", n, &dilation));
  const bool ceil_mode = call.Bool("ceil_mode").value_or(false);
  const bool include_pad = call.Bool("count_include_pad").value_or(true);
  return Batched(ctx, c.c_str(), x, result, n, [&](const std::string& in, const std::string& out) {
    auto* p = ctx.Emit(is_max ? "MaxPool" : "AveragePool", {in}, {out});
    SetAttr(p, "kernel_shape", kernel);
    SetAttr(p, "strides", stride);
    SetAttr(p, "pads", Twice(padding));
    SetAttr(p, "ceil_mode", int64_t{ceil_mode ? 1 : 0});
    if (is_max) SetAttr(p, "dilations", dilation);
    else SetAttr(p, "count_include_pad", int64_t{include_pad ? 1 : 0});
  });
}

// lax.reduce_window_{max,sum}: pooling over the dims whose window or stride is not 1; the other
// dims are moved to the front and folded into ONNX's (N, C), then moved back.
// JAX returns an empty result where a window (a conv's dilated kernel, a pooling window) is larger
// than the padded input; onnxruntime's Conv fails on such an input without naming why, and its
// pools give a non-empty result. As the replay's guards do: `in` is reshaped to its own shape while
// each dim i is at least need[i], and to an invalid shape otherwise, in a node named as an ivytrace
// guard, so onnxruntime refuses the input there. No check where no non-empty input can be too small
// (every need <= 1: a 3x3 kernel under SAME padding).
static std::string CheckWindowFits(const Node& node, LoweringContext& ctx, const std::string& in,
                                   const std::vector<int64_t>& need, const std::string& what) {
  if (std::none_of(need.begin(), need.end(), [](int64_t v) { return v > 1; })) return in;
  const std::string shape = ctx.EmitTemp("Shape", {in});
  const std::string ok = ctx.EmitTemp("GreaterOrEqual", {shape, ctx.Int64s(need)});
  const std::string to = ctx.EmitTemp("Where", {ok, shape, ctx.Int64s(std::vector<int64_t>(need.size(), -2))});
  onnx::NodeProto* r = nullptr;
  const std::string out = ctx.EmitTemp("Reshape", {in, to}, &r);
  r->set_name("ivytrace guard (" + what + " input size) " + ctx.Temp("check") + ": " + node.op + " at " +
              (node.loc.file().empty() ? std::string("an unknown line")
                                       : node.loc.file() + ":" + std::to_string(node.loc.line())) +
              ": an input smaller than the " + what + " window (the program's result is empty)");
  return out;
}

// A recorded result with an empty dim among `dims` (JAX's window larger than the input): refused.
static Status RefuseEmptyWindowResult(LoweringContext& ctx, ValueId result, const std::vector<int64_t>& dims,
                                      const std::string& what) {
  const auto& out_shape = ctx.Shape(result);
  for (int64_t d : dims) {
    if (d >= 0 && static_cast<size_t>(d) < out_shape.size() && out_shape[d] == 0) {
      return Status::Unsupported("a " + what + " whose recorded result is empty (its input is smaller than the "
                                 "window): onnxruntime cannot run it");
    }
  }
  return Status::Ok();
}

// lax's `padding`, one (lo, hi) pair per dim: ints, or 0-d ints the graph computes from the
// input's size (flax's "SAME" with a stride over a symbolic size follows the size's remainder).
// A computed amount is in `dyn` (a 1-element int64 tensor name, at i for dim i's lo and at
// count + i for its hi), its `pads` entry 0. ONNX's pads attributes are static, so such padding
// is an explicit Pad whose amounts the model computes (a negative one crops, as in lax).
static Status PadPairs(const BoundCall& call, LoweringContext& ctx, int count, std::vector<int64_t>* pads,
                       std::vector<std::string>* dyn) {
  const v1::ArgList* padding = Items(call.Get("padding"));
  if (!padding || padding->items_size() != count) {
    return Status::Unsupported("padding is not one (lo, hi) pair per dim: " + ArgToString(*call.Get("padding"), true));
  }
  pads->assign(2 * count, 0);
  dyn->assign(2 * count, "");
  for (int i = 0; i < count; ++i) {
    auto items = SequenceItems(padding->items(i));
    if (!items || items->size() != 2) {
      return Status::Unsupported("padding is not (lo, hi) pairs: " + ArgToString(*call.Get("padding"), true));
    }
    for (int side = 0; side < 2; ++side) {
      const v1::Arg& a = *(*items)[side];
      if (a.kind_case() != v1::Arg::kTensor) {
        auto v = AsInt(a);
        if (!v) return Status::Unsupported("padding is not (lo, hi) pairs of ints: " + ArgToString(*call.Get("padding"), true));
        (*pads)[i + side * count] = *v;
        continue;
      }
      const ValueId v = a.tensor().value();
      if (ctx.Rank(v) != 0 || IsFloating(ctx.DType(v)) || ctx.DType(v) == v1::BOOL) {
        return Status::Unsupported("padding is not (lo, hi) pairs of ints: " + ArgToString(*call.Get("padding"), true));
      }
      (*dyn)[i + side * count] = ctx.EmitTemp("Reshape", {ctx.CastTo(ctx.In(v), ctx.DType(v), v1::INT64), ctx.Int64s({1})});
    }
  }
  return Status::Ok();
}

static bool AnyDynamic(const std::vector<std::string>& dyn) {
  return std::any_of(dyn.begin(), dyn.end(), [](const std::string& s) { return !s.empty(); });
}

// `in` padded by `pads` (begins, then ends, over its rank), each amount static or from `dyn`, with
// `value` (a 0-d initializer; "" for zeros).
static std::string PadBy(LoweringContext& ctx, const std::string& in, const std::vector<int64_t>& pads,
                         const std::vector<std::string>& dyn, const std::string& value = "") {
  std::vector<std::string> amounts;
  for (size_t i = 0; i < pads.size(); ++i) amounts.push_back(dyn[i].empty() ? ctx.Int64s({pads[i]}) : dyn[i]);
  onnx::NodeProto* cat = nullptr;
  const std::string all = ctx.EmitTemp("Concat", amounts, &cat);
  SetAttr(cat, "axis", int64_t{0});
  return value.empty() ? ctx.EmitTemp("Pad", {in, all}) : ctx.EmitTemp("Pad", {in, all, value});
}

Status LowerReduceWindow(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const int rank = ctx.Rank(x);
  auto window = call.IntList("window_dimensions"), strides = call.IntList("window_strides");
  if (!window || !strides) return Status::Unsupported("window dims/strides are not ints");
  for (const char* p : {"base_dilation", "window_dilation"}) {
    auto l = call.IntList(p);
    if (!l || std::any_of(l->begin(), l->end(), [](int64_t v) { return v != 1; })) {
      return Status::Unsupported(std::string(p) + " other than 1");
    }
  }
  std::vector<int64_t> all_pads;
  std::vector<std::string> dyn;
  IVY_RETURN_IF_ERROR(PadPairs(call, ctx, rank, &all_pads, &dyn));
  std::vector<int64_t> lo(all_pads.begin(), all_pads.begin() + rank), hi(all_pads.begin() + rank, all_pads.end());
  std::vector<int64_t> spatial, other;
  for (int i = 0; i < rank; ++i) {
    if ((*window)[i] != 1 || (*strides)[i] != 1 || lo[i] != 0 || hi[i] != 0 || !dyn[i].empty() || !dyn[i + rank].empty()) {
      spatial.push_back(i);
    } else {
      other.push_back(i);
    }
  }
  if (spatial.empty() || spatial.size() > 3) return Status::Unsupported("reduce_window over " + std::to_string(spatial.size()) + " dims");
  const auto& shape = ctx.Shape(x);
  std::vector<int64_t> perm = other;
  perm.insert(perm.end(), spatial.begin(), spatial.end());
  IVY_RETURN_IF_ERROR(RefuseEmptyWindowResult(ctx, result, spatial, "pooling"));
  std::string cur = ctx.In(x);
  onnx::NodeProto* t = nullptr;
  cur = ctx.EmitTemp("Transpose", {cur}, &t);
  SetAttr(t, "perm", perm);
  const bool is_max = ctx.canonical() == "reduce_window_max";
  const v1::DType d = ctx.DType(x);
  if (AnyDynamic(dyn)) {
    // Padded in the transposed order with the reduction's identity (lax pads with init_value:
    // -inf or the dtype's least value for max, 0 for sum); the pool then pads nothing.
    std::vector<int64_t> p2(2 * rank, 0);
    std::vector<std::string> d2(2 * rank);
    for (int i = 0; i < rank; ++i) {
      p2[i] = lo[perm[i]];
      p2[i + rank] = hi[perm[i]];
      d2[i] = dyn[perm[i]];
      d2[i + rank] = dyn[perm[i] + rank];
    }
    std::string fill;
    if (is_max) {
      if (IsFloating(d)) {
        fill = ctx.Scalar(Number::Float(-std::numeric_limits<double>::infinity()), d);
      } else if (d == v1::INT32) {
        fill = ctx.Scalar(Number::Int(std::numeric_limits<int32_t>::min()), d);
      } else if (d == v1::INT64) {
        fill = ctx.Scalar(Number::Int(std::numeric_limits<int64_t>::min()), d);
      } else {
        return Status::Unsupported(std::string("reduce_window_max of ") + DTypeName(d) + " with computed padding");
      }
    }
    cur = PadBy(ctx, cur, p2, d2, fill);
    std::fill(lo.begin(), lo.end(), 0);
    std::fill(hi.begin(), hi.end(), 0);
  }
  {
    std::vector<int64_t> need(static_cast<size_t>(rank), 0);

    for (size_t j = 0; j < spatial.size(); ++j) {
      const int64_t d = spatial[j];
      need[other.size() + j] = (*window)[d] - lo[d] - hi[d];
    }
    cur = CheckWindowFits(node, ctx, cur, need, "pooling");
  }
  int64_t folded = 1;
  for (int64_t o : other) folded *= shape[o];
  std::vector<int64_t> pooled_shape = {1, folded};
  std::vector<int64_t> k, s, pads_begin, pads_end;
  for (int64_t d : spatial) {
    pooled_shape.push_back(shape[d]);
    k.push_back((*window)[d]);
    s.push_back((*strides)[d]);
    pads_begin.push_back(lo[d]);
    pads_end.push_back(hi[d]);
  }
  // Two non-pooled dims (NHWC, NCHW...) are ONNX's (N, C) as they are; others fold into C.
  const bool fold = other.size() != 2;
  if (fold) cur = ctx.EmitTemp("Reshape", {cur, ctx.Int64s(pooled_shape)});
  onnx::NodeProto* p = nullptr;
  std::vector<int64_t> pads = pads_begin;
  pads.insert(pads.end(), pads_end.begin(), pads_end.end());
  if (!is_max && std::any_of(pads.begin(), pads.end(), [](int64_t v) { return v != 0; })) {
    // Sum over zero padding: pad explicitly, then pool without padding.
    std::vector<int64_t> full_pads(2 * (spatial.size() + 2), 0);
    for (size_t i = 0; i < spatial.size(); ++i) {
      full_pads[2 + i] = pads_begin[i];
      full_pads[2 + i + spatial.size() + 2] = pads_end[i];
    }
    cur = ctx.EmitTemp("Pad", {cur, ctx.Int64s(full_pads)});
    std::fill(pads.begin(), pads.end(), 0);
  }
  cur = ctx.EmitTemp(is_max ? "MaxPool" : "AveragePool", {cur}, &p);
  SetAttr(p, "kernel_shape", k);
  SetAttr(p, "strides", s);
  SetAttr(p, "pads", pads);
  if (!is_max) {
    int64_t count = 1;
    for (int64_t v : k) count *= v;
    cur = ctx.EmitTemp("Mul", {cur, F(ctx, static_cast<double>(count), d)});
  }
  // Back to the permuted shape, then the original order.
  std::vector<int64_t> back;
  for (int64_t o : other) back.push_back(shape[o]);
  const auto& rshape = ctx.Shape(result);
  for (int64_t dd : spatial) back.push_back(rshape[dd]);
  if (fold) cur = ctx.EmitTemp("Reshape", {cur, ctx.Int64s(back)});
  std::vector<int64_t> inverse(rank);
  for (int i = 0; i < rank; ++i) inverse[perm[i]] = i;
  auto* tb = ctx.Emit("Transpose", {cur}, {ctx.Out(result)});
  SetAttr(tb, "perm", inverse);
  return Status::Ok();
}

// lax.conv_general_dilated with dimension_numbers (lhs_spec, rhs_spec, out_spec) as recorded
// (each a permutation: batch/feature dims first, then spatial), by transposing to NCHW/OIHW.
Status LowerConvGeneralDilated(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, w, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "weight", &w));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const int rank = ctx.Rank(x), n = rank - 2;
  std::vector<int64_t> lhs_spec(rank), rhs_spec(rank), out_spec(rank);
  std::iota(lhs_spec.begin(), lhs_spec.end(), 0);
  rhs_spec = out_spec = lhs_spec;
  if (!call.IsNone("dimension_numbers")) {
    // A ConvDimensionNumbers: recorded as a dict (lhs_spec, rhs_spec, out_spec) or a 3-tuple.
    const v1::Arg* dna = call.Get("dimension_numbers");
    const v1::Arg* parts[3] = {nullptr, nullptr, nullptr};
    if (dna->kind_case() == v1::Arg::kDict) {
      const auto& dict = dna->dict();
      for (int i = 0; i < dict.keys_size() && i < dict.values_size(); ++i) {
        if (dict.keys(i) == "lhs_spec") parts[0] = &dict.values(i);
        if (dict.keys(i) == "rhs_spec") parts[1] = &dict.values(i);
        if (dict.keys(i) == "out_spec") parts[2] = &dict.values(i);
      }
    } else if (const v1::ArgList* dn = Items(dna); dn && dn->items_size() == 3) {
      for (int i = 0; i < 3; ++i) parts[i] = &dn->items(i);
    }
    if (!parts[0] || !parts[1] || !parts[2]) {
      return Status::Unsupported("dimension_numbers " + ArgToString(*dna, true));
    }
    auto l = AsIntList(*parts[0]), r = AsIntList(*parts[1]), o = AsIntList(*parts[2]);
    if (!l || !r || !o) return Status::Unsupported("dimension_numbers are not permutations");
    lhs_spec = *l;
    rhs_spec = *r;
    out_spec = *o;
  }
  for (const char* p : {"lhs_dilation"}) {
    auto l = call.IntList(p);
    if (!l || std::any_of(l->begin(), l->end(), [](int64_t v) { return v != 1; })) {
      return Status::Unsupported("lhs_dilation other than 1 (a transposed convolution)");
    }
  }
  if (call.Int("batch_group_count").value_or(1) != 1) return Status::Unsupported("batch_group_count other than 1");
  auto strides = call.IntList("window_strides"), dil = call.IntList("rhs_dilation");
  if (!strides || !dil) return Status::Unsupported("window_strides/rhs_dilation are not ints");
  std::vector<int64_t> pads;
  std::vector<std::string> dynamic_pads;
  IVY_RETURN_IF_ERROR(PadPairs(call, ctx, n, &pads, &dynamic_pads));
  const auto& wshape = ctx.Shape(w);
  std::vector<int64_t> kernel;
  for (int i = 0; i < n; ++i) kernel.push_back(wshape[rhs_spec[2 + i]]);
  std::vector<int64_t> out_spatial(out_spec.begin() + 2, out_spec.end());
  IVY_RETURN_IF_ERROR(RefuseEmptyWindowResult(ctx, result, out_spatial, "convolution"));
  auto transpose = [&](const std::string& in, const std::vector<int64_t>& perm) {
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
    if (identity) return in;
    onnx::NodeProto* t = nullptr;
    std::string out = ctx.EmitTemp("Transpose", {in}, &t);
    SetAttr(t, "perm", perm);
    return out;
  };
  std::string xin = transpose(ctx.In(x), lhs_spec);
  if (AnyDynamic(dynamic_pads)) {
    // (N, C) unpadded, then the spatial dims' amounts; the Conv then pads nothing.
    std::vector<int64_t> p2(2 * (n + 2), 0);
    std::vector<std::string> d2(2 * (n + 2));
    for (int i = 0; i < n; ++i) {
      p2[2 + i] = pads[i];
      p2[n + 4 + i] = pads[i + n];
      d2[2 + i] = dynamic_pads[i];
      d2[n + 4 + i] = dynamic_pads[i + n];
    }
    xin = PadBy(ctx, xin, p2, d2);
    std::fill(pads.begin(), pads.end(), 0);
  }
  {
    std::vector<int64_t> need(static_cast<size_t>(rank), 0);
    for (int i = 0; i < n; ++i) {
      const int64_t dilation = i < static_cast<int>(dil->size()) ? (*dil)[i] : 1;
      need[2 + i] = (kernel[i] - 1) * dilation + 1 - pads[i] - pads[i + n];
    }
    xin = CheckWindowFits(node, ctx, xin, need, "convolution");
  }
  std::string win = transpose(ctx.In(w), rhs_spec);
  const v1::DType d = ctx.DType(result);
  xin = ctx.CastTo(xin, ctx.DType(x), d);
  win = ctx.CastTo(win, ctx.DType(w), d);
  std::vector<int64_t> inverse(rank);
  for (int i = 0; i < rank; ++i) inverse[out_spec[i]] = i;
  bool out_identity = true;
  for (int i = 0; i < rank; ++i) out_identity = out_identity && out_spec[i] == i;
  std::string conv_out = out_identity ? ctx.Out(result) : ctx.Temp("conv");
  auto* c = ctx.Emit("Conv", {xin, win}, {conv_out});
  SetAttr(c, "kernel_shape", kernel);
  SetAttr(c, "strides", *strides);
  SetAttr(c, "pads", pads);
  SetAttr(c, "dilations", *dil);
  SetAttr(c, "group", call.Int("feature_group_count").value_or(1));
  if (!out_identity) {
    // The conv's output is in (N, C, spatial...) order; out_spec[i] says where dim i goes.
    auto* t = ctx.Emit("Transpose", {conv_out}, {ctx.Out(result)});
    SetAttr(t, "perm", inverse);
  }
  return Status::Ok();
}

// --- normalization ----------------------------------------------------------------------------------

Status LowerGroupNorm(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  auto groups = call.Int("num_groups");
  if (!groups) return Status::Unsupported("num_groups is not an int");
  const v1::DType d = ctx.DType(x);
  const int rank = ctx.Rank(x);
  const double eps = call.Double("eps").value_or(1e-5);
  std::string in = ctx.In(x);
  std::string g = ctx.EmitTemp("Reshape", {in, ctx.Int64s({0, *groups, -1})});
  onnx::NodeProto* m = nullptr;
  std::string mean = ctx.EmitTemp("ReduceMean", {g}, &m);
  SetAttr(m, "axes", std::vector<int64_t>{2});
  std::string dev = ctx.EmitTemp("Sub", {g, mean});
  std::string var = ctx.EmitTemp("ReduceMean", {ctx.EmitTemp("Mul", {dev, dev})}, &m);
  SetAttr(m, "axes", std::vector<int64_t>{2});
  std::string normed = ctx.EmitTemp("Div", {dev, ctx.EmitTemp("Sqrt", {ctx.EmitTemp("Add", {var, F(ctx, eps, d)})})});
  std::string y = ctx.EmitTemp("Reshape", {normed, ctx.EmitTemp("Shape", {in})});
  std::vector<int64_t> trailing;
  for (int i = 1; i < rank - 1; ++i) trailing.push_back(i);
  const bool has_w = !call.IsNone("weight"), has_b = !call.IsNone("bias");
  if (has_w) {
    auto w = call.Tensor("weight");
    if (!w) return Status::Unsupported("weight is not a tensor");
    std::string ws = trailing.empty() ? ctx.In(*w) : ctx.Unsqueeze(ctx.In(*w), trailing);
    y = has_b ? ctx.EmitTemp("Mul", {y, ws}) : (ctx.Emit("Mul", {y, ws}, {ctx.Out(result)}), std::string());
  }
  if (has_b) {
    auto b = call.Tensor("bias");
    if (!b) return Status::Unsupported("bias is not a tensor");
    std::string bs = trailing.empty() ? ctx.In(*b) : ctx.Unsqueeze(ctx.In(*b), trailing);
    ctx.Emit("Add", {y, bs}, {ctx.Out(result)});
  }
  if (!has_w && !has_b) ctx.Emit("Identity", {y}, {ctx.Out(result)});
  return Status::Ok();
}

Status LowerInstanceNorm(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  if (!call.Bool("use_input_stats").value_or(true)) {
    return Status::Unsupported("instance_norm with use_input_stats=False");
  }
  // With input stats, running stats given are updated in place (train mode): state this export
  // would drop. Without them momentum moves nothing.
  if (!call.IsNone("running_mean") || !call.IsNone("running_var")) {
    return Status::Unsupported("instance_norm updating running statistics (track_running_stats in train mode)");
  }
  call.Get("momentum");
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (ctx.Rank(x) < 3) return Status::Unsupported("instance_norm expects (N, C, ...)");
  const int64_t channels = ctx.Shape(x)[1];
  const v1::DType d = ctx.DType(x);
  auto w = call.Tensor("weight");
  auto b = call.Tensor("bias");
  std::string scale = w ? ctx.In(*w) : Filled(ctx, channels, 1.0, d, "instance_norm.ones");
  std::string bias = b ? ctx.In(*b) : Filled(ctx, channels, 0.0, d, "instance_norm.zeros");
  auto* n = ctx.Emit("InstanceNormalization", {ctx.In(x), scale, bias}, {ctx.Out(result)});
  SetAttr(n, "epsilon", static_cast<float>(call.Double("eps").value_or(1e-5)));
  return Status::Ok();
}

// rms_norm(x, normalized_shape, weight, eps): x / sqrt(mean(x^2) + eps) * weight.
Status LowerRmsNorm(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  auto normalized = call.IntList("normalized_shape");
  const int rank = ctx.Rank(x);
  if (!normalized || normalized->empty() || static_cast<int>(normalized->size()) > rank) {
    return Status::Unsupported("normalized_shape must be a non-empty list of at most rank(input) ints");
  }
  const v1::DType d = ctx.DType(x);
  // eps=None: torch uses the dtype's machine epsilon.
  const double eps = call.Double("eps").value_or(d == v1::FLOAT16 ? 0.0009765625 : d == v1::FLOAT64 ? 2.220446049250313e-16
                                                                                                   : 1.1920928955078125e-07);
  std::vector<int64_t> axes;
  for (int i = rank - static_cast<int>(normalized->size()); i < rank; ++i) axes.push_back(i);
  std::string in = ctx.In(x);
  onnx::NodeProto* m = nullptr;
  std::string ms = ctx.EmitTemp("ReduceMean", {ctx.EmitTemp("Mul", {in, in})}, &m);
  SetAttr(m, "axes", axes);
  std::string y = ctx.EmitTemp("Mul", {in, ctx.EmitTemp("Reciprocal", {ctx.EmitTemp("Sqrt", {ctx.EmitTemp("Add", {ms, F(ctx, eps, d)})})})});
  if (auto w = call.Tensor("weight")) {
    ctx.Emit("Mul", {y, ctx.In(*w)}, {ctx.Out(result)});
  } else {
    ctx.Emit("Identity", {y}, {ctx.Out(result)});
  }
  return Status::Ok();
}

// F.normalize(x, p, dim, eps): x / max(||x||_p, eps) along dim.
Status LowerNormalize(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const double p = call.Double("p").value_or(2.0);
  if (p != 1.0 && p != 2.0) return Status::Unsupported("normalize with p other than 1 or 2");
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(call.Int("dim").value_or(1), ctx.Rank(x), &axis));
  const v1::DType d = ctx.DType(x);
  onnx::NodeProto* r = nullptr;
  std::string norm = ctx.EmitTemp(p == 2.0 ? "ReduceL2" : "ReduceL1", {ctx.In(x)}, &r);
  SetAttr(r, "axes", std::vector<int64_t>{axis});
  SetAttr(r, "keepdims", int64_t{1});
  std::string denom = ctx.EmitTemp("Max", {norm, F(ctx, call.Double("eps").value_or(1e-12), d)});
  ctx.Emit("Div", {ctx.In(x), denom}, {ctx.Out(result)});
  return Status::Ok();
}

// F.unfold(x, kernel_size, dilation, padding, stride) (im2col) on a 4-D input: after the zero
// padding, one strided Slice per kernel offset (i, j), stacked so that the channel index is
// c * kh * kw + i * kw + j as in torch, then [N, C * kh * kw, L]. The slices end relative to
// the padded size, so the model follows the input's spatial size; no arithmetic on the values.
Status LowerIm2col(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (ctx.Rank(x) != 4) return Status::Unsupported("unfold of a tensor of rank other than 4");
  std::vector<int64_t> k, dil, pad, st;
  IVY_RETURN_IF_ERROR(IntN(call, "kernel_size", 2, &k));
  IVY_RETURN_IF_ERROR(IntN(call, "dilation", 2, &dil));
  IVY_RETURN_IF_ERROR(IntN(call, "padding", 2, &pad));
  IVY_RETURN_IF_ERROR(IntN(call, "stride", 2, &st));
  for (int a = 0; a < 2; ++a) {
    if (k[a] < 1 || dil[a] < 1 || st[a] < 1 || pad[a] < 0) return Status::Unsupported("unfold with sizes < 1");
  }
  std::string xp = ctx.In(x);
  if (pad[0] || pad[1]) {
    const v1::DType d = ctx.DType(x);
    xp = ctx.EmitTemp("Pad", {xp, ctx.Int64s({0, 0, pad[0], pad[1], 0, 0, pad[0], pad[1]}),
                              ctx.Scalar(IsFloating(d) ? Number::Float(0.0) : Number::Int(0), d)});
  }
  std::vector<std::string> pieces;
  for (int64_t i = 0; i < k[0]; ++i) {
    for (int64_t j = 0; j < k[1]; ++j) {
      // rows i*dil, i*dil + s, ... up to Hp - dil*(kh-1-i): exactly the output's rows.
      const int64_t end_h = dil[0] * (k[0] - 1 - i), end_w = dil[1] * (k[1] - 1 - j);
      const std::string piece = ctx.EmitTemp(
          "Slice", {xp, ctx.Int64s({i * dil[0], j * dil[1]}),
                    ctx.Int64s({end_h ? -end_h : std::numeric_limits<int64_t>::max(),
                                end_w ? -end_w : std::numeric_limits<int64_t>::max()}),
                    ctx.Int64s({2, 3}), ctx.Int64s({st[0], st[1]})});
      pieces.push_back(ctx.Unsqueeze(piece, {2}));
    }
  }
  std::string stacked = pieces[0];
  if (pieces.size() > 1) {
    onnx::NodeProto* c = nullptr;
    stacked = ctx.EmitTemp("Concat", pieces, &c);
    SetAttr(c, "axis", int64_t{2});
  }
  // [N, C, K, oh, ow] -> [N, C * K, oh * ow], C read when the model runs.
  const std::string shape = ctx.EmitTemp("Shape", {ctx.In(x)});
  const std::string ck = ctx.EmitTemp("Mul", {ctx.EmitTemp("Slice", {shape, ctx.Int64s({1}), ctx.Int64s({2})}),
                                              ctx.Int64s({k[0] * k[1]})});
  onnx::NodeProto* c = nullptr;
  const std::string target = ctx.EmitTemp("Concat", {ctx.EmitTemp("Slice", {shape, ctx.Int64s({0}), ctx.Int64s({1})}),
                                                      ck, ctx.Int64s({-1})}, &c);
  SetAttr(c, "axis", int64_t{0});
  ctx.Emit("Reshape", {stacked, target}, {ctx.Out(result)});
  return Status::Ok();
}

// --- pad, interpolate -------------------------------------------------------------------------------

// pad(input, pad, mode, value): torch's flat list pairs the last dim first; NumPy's pad_width
// is normalized (normalize.cc) into pairs in axis order with pad_per_axis set.
Status LowerPad(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const int rank = ctx.Rank(x);
  auto flat = call.IntList("pad");
  std::string sym_pads;  // pads computed at run time: F.pad(x, (0, w_pad, 0, h_pad)) with sizes read from shapes
  if (const v1::Arg* pad = call.Get("pad"); !flat && pad && IsSymbolicArg(ctx, *pad) &&
                                            !call.Bool("pad_per_axis").value_or(false)) {
    const v1::ArgList* items = Items(pad);
    if (!items || items->items_size() % 2 != 0 || items->items_size() / 2 > rank) {
      return Status::Unsupported("pad is not a list of (before, after) pairs");
    }
    // ONNX's order: every dim's begin, then every dim's end; torch pairs the last dim first.
    v1::Arg onnx_order;
    for (int k = 0; k < 2 * rank; ++k) onnx_order.mutable_list()->add_items()->set_i(0);
    for (int i = 0; i < items->items_size() / 2; ++i) {
      const int dim = rank - 1 - i;
      *onnx_order.mutable_list()->mutable_items(dim) = items->items(2 * i);
      *onnx_order.mutable_list()->mutable_items(rank + dim) = items->items(2 * i + 1);
    }
    IVY_RETURN_IF_ERROR(DynamicInts(ctx, onnx_order, &sym_pads));
    flat = std::vector<int64_t>();  // the recorded sizes are not used
  }
  if (!flat || flat->size() % 2 != 0) return Status::Unsupported("pad is not a list of (before, after) pairs");
  std::vector<int64_t> begin(rank, 0), end(rank, 0);
  const bool per_axis = call.Bool("pad_per_axis").value_or(false);
  const size_t pairs = flat->size() / 2;
  if (static_cast<int>(pairs) > rank && !(per_axis && pairs == 1)) return Status::Unsupported("pad lists more dims than the input has");
  for (size_t i = 0; i < pairs; ++i) {
    const int64_t dim = per_axis ? static_cast<int64_t>(i) : rank - 1 - static_cast<int64_t>(i);
    begin[dim] = (*flat)[2 * i];
    end[dim] = (*flat)[2 * i + 1];
  }
  if (per_axis && pairs == 1) {
    for (int i = 0; i < rank; ++i) {
      begin[i] = (*flat)[0];
      end[i] = (*flat)[1];
    }
  }
  std::string mode = "constant";
  if (const v1::Arg* m = call.Get("mode"); m && m->kind_case() == v1::Arg::kS) mode = m->s();
  const v1::DType d = ctx.DType(x);
  if (mode == "circular") {
    if (!sym_pads.empty()) return Status::Unsupported("circular pad with sizes read from shapes");
    std::string cur = ctx.In(x);
    for (int dim = 0; dim < rank; ++dim) {
      if (begin[dim] == 0 && end[dim] == 0) continue;
      if (begin[dim] < 0 || end[dim] < 0) return Status::Unsupported("circular pad with negative sizes");
      std::vector<std::string> parts;
      if (begin[dim] > 0) {
        parts.push_back(ctx.EmitTemp("Slice", {cur, ctx.Int64s({-begin[dim]}), ctx.Int64s({std::numeric_limits<int64_t>::max()}),
                                               ctx.Int64s({dim})}));
      }
      parts.push_back(cur);
      if (end[dim] > 0) parts.push_back(ctx.EmitTemp("Slice", {cur, ctx.Int64s({0}), ctx.Int64s({end[dim]}), ctx.Int64s({dim})}));
      onnx::NodeProto* c = nullptr;
      cur = ctx.EmitTemp("Concat", parts, &c);
      SetAttr(c, "axis", int64_t{dim});
    }
    ctx.Emit("Identity", {cur}, {ctx.Out(result)});
    return Status::Ok();
  }
  std::string onnx_mode;
  if (mode == "constant") onnx_mode = "constant";
  else if (mode == "reflect") onnx_mode = "reflect";
  else if (mode == "replicate") onnx_mode = "edge";
  else return Status::Unsupported("pad mode '" + mode + "'");
  std::vector<int64_t> pads = begin;
  pads.insert(pads.end(), end.begin(), end.end());
  std::vector<std::string> ins = {ctx.In(x), sym_pads.empty() ? ctx.Int64s(pads) : sym_pads};
  if (onnx_mode == "constant") {
    const v1::Arg* v = call.Get("value");
    if (v && v->kind_case() == v1::Arg::kTensor) {
      ins.push_back(ctx.CastTo(ctx.In(v->tensor().value()), ctx.DType(v->tensor().value()), d));
    } else {
      const double value = v ? AsDouble(*v).value_or(0.0) : 0.0;
      ins.push_back(ctx.Scalar(IsFloating(d) ? Number::Float(value) : Number::Int(static_cast<int64_t>(value)), d));
    }
  }
  auto* n = ctx.Emit("Pad", ins, {ctx.Out(result)});
  SetAttr(n, "mode", onnx_mode);
  return Status::Ok();
}

namespace {
// interpolate's scale_factor (a number or one per spatial dim) as `n` doubles.
Status ScaleFactors(const BoundCall& call, int n, std::vector<double>* s) {
  const v1::Arg* sf = call.Get("scale_factor");
  if (auto f = AsDouble(*sf)) s->assign(n, *f);
  else if (const v1::ArgList* l = Items(sf)) {
    for (const auto& it : l->items()) s->push_back(AsDouble(it).value_or(0.0));
  }
  if (static_cast<int>(s->size()) != n) return Status::Unsupported("scale_factor " + ArgToString(*sf, true));
  return Status::Ok();
}
}  // namespace

Status LowerInterpolate(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (call.Bool("antialias").value_or(false)) return Status::Unsupported("interpolate with antialias=True");
  const int rank = ctx.Rank(x), n = rank - 2;
  if (n < 1) return Status::Unsupported("interpolate expects (N, C, ...)");
  std::string mode = "nearest";
  if (const v1::Arg* m = call.Get("mode"); m && m->kind_case() == v1::Arg::kS) mode = m->s();
  const bool align = call.Bool("align_corners").value_or(false);
  std::string onnx_mode, ctm, nearest_mode;
  if (mode == "nearest") {
    onnx_mode = "nearest";
    ctm = "asymmetric";
    nearest_mode = "floor";
  } else if (mode == "nearest-exact") {
    onnx_mode = "nearest";
    ctm = "half_pixel";
    nearest_mode = "round_prefer_ceil";
  } else if (mode == "linear" || mode == "bilinear" || mode == "trilinear") {
    onnx_mode = "linear";
    ctm = align ? "align_corners" : "pytorch_half_pixel";
  } else if (mode == "bicubic") {
    onnx_mode = "cubic";
    ctm = align ? "align_corners" : "pytorch_half_pixel";
  } else {
    return Status::Unsupported("interpolate mode '" + mode + "'");
  }
  std::vector<std::string> ins = {ctx.In(x), ""};
  const bool by_scale = !call.IsNone("scale_factor") && !call.Bool("recompute_scale_factor").value_or(false);
  if (by_scale) {
    std::vector<double> s;
    IVY_RETURN_IF_ERROR(ScaleFactors(call, n, &s));
    std::vector<Number> values = {Number::Float(1.0), Number::Float(1.0)};
    for (double v : s) values.push_back(Number::Float(v));
    onnx::TensorProto t;
    t.set_data_type(onnx::TensorProto::FLOAT);
    t.add_dims(rank);
    std::string raw;
    IVY_RETURN_IF_ERROR(EncodeNumbers(values, v1::FLOAT32, &raw));
    t.set_raw_data(raw);
    ins.push_back(ctx.AddInitializer(std::move(t), "interpolate.scales"));
  } else {
    const auto& out_shape = ctx.Shape(result);
    std::vector<int64_t> recorded(out_shape.begin() + 2, out_shape.end());
    std::string shape_x = ctx.EmitTemp("Shape", {ctx.In(x)});
    std::string nc = ctx.EmitTemp("Slice", {shape_x, ctx.Int64s({0}), ctx.Int64s({2})});
    std::string spatial = ctx.Int64s(recorded);  // size given as ints: the program's literals
    const v1::Arg* size = call.Get("size");
    if (size && !IsNone(*size) && IsSymbolicArg(ctx, *size)) {
      // interpolate(x, size=(h * 2, w * 2)) with h, w read from shapes: computed at run time.
      v1::Arg list;
      if (size->kind_case() == v1::Arg::kList || size->kind_case() == v1::Arg::kTuple) {
        list = *size;
      } else {
        for (int i = 0; i < n; ++i) *list.mutable_list()->add_items() = *size;
      }
      IVY_RETURN_IF_ERROR(DynamicInts(ctx, list, &spatial));
    } else if (!call.IsNone("scale_factor")) {
      // recompute_scale_factor: the output size is floor(in * scale), from the run-time input size.
      std::vector<double> s;
      IVY_RETURN_IF_ERROR(ScaleFactors(call, n, &s));
      std::vector<Number> scales;
      for (double v : s) scales.push_back(Number::Float(v));
      onnx::TensorProto t;
      t.set_data_type(onnx::TensorProto::DOUBLE);
      t.add_dims(n);
      std::string raw;
      IVY_RETURN_IF_ERROR(EncodeNumbers(scales, v1::FLOAT64, &raw));
      t.set_raw_data(raw);
      std::string in_spatial = ctx.CastTo(ctx.EmitTemp("Slice", {shape_x, ctx.Int64s({2}), ctx.Int64s({rank})}),
                                          v1::INT64, v1::FLOAT64);
      std::string scaled = ctx.EmitTemp("Mul", {in_spatial, ctx.AddInitializer(std::move(t), "interpolate.scales")});
      spatial = ctx.CastTo(ctx.EmitTemp("Floor", {scaled}), v1::FLOAT64, v1::INT64);
    }
    onnx::NodeProto* c = nullptr;
    std::string sizes = ctx.EmitTemp("Concat", {nc, spatial}, &c);
    SetAttr(c, "axis", int64_t{0});
    ins.push_back("");
    ins.push_back(sizes);
  }
  auto* r = ctx.Emit("Resize", ins, {ctx.Out(result)});
  SetAttr(r, "mode", onnx_mode);
  SetAttr(r, "coordinate_transformation_mode", ctm);
  if (!nearest_mode.empty()) SetAttr(r, "nearest_mode", nearest_mode);
  if (onnx_mode == "cubic") SetAttr(r, "cubic_coeff_a", -0.75f);
  return Status::Ok();
}

// --- attention --------------------------------------------------------------------------------------

// softmax(q k^T * scale + mask) v, with is_causal a lower-triangular mask built from the run-time

namespace {
// Whether an attention mask that is a constant of the model (a static export's causal mask or
// position bias) leaves every query row at least one key: no row of its last dim is all -inf (a
// float mask, added to the scores) or all false (a bool mask). A row of one element broadcasts
// over the keys. False when the mask is not a constant, or its type is not one of these.
bool NoRowFullyMasked(const LoweringContext& ctx, ValueId mask) {
  const std::string* bytes = ctx.ConstantBytes(mask);
  const auto& shape = ctx.Shape(mask);
  if (!bytes || shape.empty() || shape.back() <= 0) return false;
  const size_t row = static_cast<size_t>(shape.back());
  const v1::DType d = ctx.DType(mask);
  const size_t elem = d == v1::FLOAT32 ? 4 : d == v1::FLOAT64 ? 8 : d == v1::BOOL ? 1 : 0;
  if (!elem || bytes->size() % (row * elem) != 0) return false;
  const char* p = bytes->data();
  for (size_t r = 0; r < bytes->size() / (row * elem); ++r) {
    bool all_masked = true;
    for (size_t k = 0; k < row && all_masked; ++k) {
      const char* e = p + (r * row + k) * elem;
      if (d == v1::BOOL) {
        all_masked = *e == 0;
      } else if (d == v1::FLOAT32) {
        float f;
        std::memcpy(&f, e, sizeof f);
        all_masked = std::isinf(f) && f < 0;
      } else {
        double f;
        std::memcpy(&f, e, sizeof f);
        all_masked = std::isinf(f) && f < 0;
      }
    }
    if (all_masked) return false;
  }
  return true;
}
}  // namespace

// sequence lengths (Trilu over ones of shape (L, S)).
Status LowerScaledDotProductAttention(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId q, k, v, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "query", &q));
  IVY_RETURN_IF_ERROR(TensorParam(call, "key", &k));
  IVY_RETURN_IF_ERROR(TensorParam(call, "value", &v));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (call.Double("dropout_p").value_or(0.0) != 0.0) {
    return Status::Unsupported("scaled_dot_product_attention with dropout_p > 0 is random");
  }
  const int rank = ctx.Rank(q);
  if (rank < 2 || ctx.Rank(k) != rank) return Status::Unsupported("query and key of different ranks");
  std::string key = ctx.In(k), value = ctx.In(v);
  if (call.Bool("enable_gqa").value_or(false) && rank >= 3 && ctx.Shape(q)[rank - 3] != ctx.Shape(k)[rank - 3]) {
    // Grouped query heads: each key/value head serves Hq / Hkv query heads (repeat_interleave on
    // the head dim): (..., Hkv, S, E) -> (..., Hkv, 1, S, E) -> expand -> (..., Hq, S, E).
    const int64_t hq = ctx.Shape(q)[rank - 3], hkv = ctx.Shape(k)[rank - 3];
    if (hkv <= 0 || hq % hkv != 0) return Status::Unsupported("enable_gqa with query heads not a multiple of key heads");
    auto repeat = [&](ValueId t) {
      std::string shape = ctx.EmitTemp("Shape", {ctx.In(t)});
      auto part = [&](int64_t b, int64_t e) { return ctx.EmitTemp("Slice", {shape, ctx.Int64s({b}), ctx.Int64s({e})}); };
      const int64_t r = ctx.Rank(t);
      onnx::NodeProto* c = nullptr;
      std::string expanded_shape = ctx.EmitTemp("Concat", {part(0, r - 2), ctx.Int64s({hq / hkv}), part(r - 2, r)}, &c);
      SetAttr(c, "axis", int64_t{0});
      std::string target = ctx.EmitTemp("Concat", {part(0, r - 3), ctx.Int64s({hq}), part(r - 2, r)}, &c);
      SetAttr(c, "axis", int64_t{0});
      std::string e = ctx.EmitTemp("Expand", {ctx.Unsqueeze(ctx.In(t), {r - 2}), expanded_shape});
      return ctx.EmitTemp("Reshape", {e, target});
    };
    key = repeat(k);
    value = repeat(v);
  }
  const v1::DType d = ctx.DType(q);
  const double scale = call.IsNone("scale") ? 1.0 / std::sqrt(static_cast<double>(ctx.Shape(q).back()))
                                            : call.Double("scale").value_or(1.0);
  std::vector<int64_t> perm(rank);
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[rank - 1], perm[rank - 2]);
  onnx::NodeProto* t = nullptr;
  std::string kt = ctx.EmitTemp("Transpose", {key}, &t);
  SetAttr(t, "perm", perm);
  std::string scores = ctx.EmitTemp("Mul", {ctx.EmitTemp("MatMul", {ctx.In(q), kt}), F(ctx, scale, d)});
  const std::string neg_inf = F(ctx, -std::numeric_limits<double>::infinity(), d);
  if (call.Bool("is_causal").value_or(false)) {
    // Each length a 0-d dim read (Gather), which the exporter's clean-up points at the input dim
    // it is (simplify_exported.h): then every layer's mask is the same one.
    auto dim = [&](ValueId val) {
      onnx::NodeProto* g = nullptr;
      std::string n = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {ctx.In(val)}),
                                              ctx.Scalar(Number::Int(-2), v1::INT64)}, &g);
      SetAttr(g, "axis", int64_t{0});
      return ctx.Unsqueeze(n, {0});
    };
    onnx::NodeProto* c = nullptr;
    std::string ls = ctx.EmitTemp("Concat", {dim(q), dim(k)}, &c);
    SetAttr(c, "axis", int64_t{0});
    onnx::NodeProto* fill = nullptr;
    std::string ones = ctx.EmitTemp("ConstantOfShape", {ls}, &fill);
    onnx::TensorProto one;
    one.set_data_type(onnx::TensorProto::FLOAT);
    one.add_dims(1);
    std::string raw;
    IVY_RETURN_IF_ERROR(EncodeNumbers({Number::Float(1.0)}, v1::FLOAT32, &raw));
    one.set_raw_data(raw);
    SetAttr(fill, "value", one);
    onnx::NodeProto* tri = nullptr;
    std::string lower = ctx.EmitTemp("Trilu", {ones}, &tri);
    SetAttr(tri, "upper", int64_t{0});
    std::string mask = ctx.CastTo(lower, v1::FLOAT32, v1::BOOL);
    scores = ctx.EmitTemp("Where", {mask, scores, neg_inf});
  }
  if (!call.IsNone("attn_mask")) {
    auto m = call.Tensor("attn_mask");
    if (!m) return Status::Unsupported("attn_mask is not a tensor");
    if (ctx.DType(*m) == v1::BOOL) {
      scores = ctx.EmitTemp("Where", {ctx.In(*m), scores, neg_inf});
    } else {
      scores = ctx.EmitTemp("Add", {scores, ctx.CastTo(ctx.In(*m), ctx.DType(*m), d)});
    }
  }
  onnx::NodeProto* sm = nullptr;
  std::string probs = ctx.EmitTemp("Softmax", {scores}, &sm);
  SetAttr(sm, "axis", int64_t{-1});
  if (!call.IsNone("attn_mask") && !NoRowFullyMasked(ctx, *call.Tensor("attn_mask"))) {
    // A query row that every key is masked out of (a fully padded row of a batch): torch's SDPA
    // gives 0 there (its _safe_softmax), a plain Softmax of all -inf gives NaN (0/0). So do as
    // torch does: zero the rows whose scores are all -inf, i.e. whose largest score is -inf (a
    // NaN score stays NaN, as in torch). is_causal alone never masks a whole row: row i keeps
    // keys 0..i.
    onnx::NodeProto* r = nullptr;
    std::string row_max;
    if (ctx.opset() >= 18) {
      row_max = ctx.EmitTemp("ReduceMax", {scores, ctx.Int64s({-1})}, &r);
    } else {
      row_max = ctx.EmitTemp("ReduceMax", {scores}, &r);
      SetAttr(r, "axes", std::vector<int64_t>{-1});
    }
    SetAttr(r, "keepdims", int64_t{1});
    probs = ctx.EmitTemp("Where", {ctx.EmitTemp("Equal", {row_max, neg_inf}), F(ctx, 0.0, d), probs});
  }
  ctx.Emit("MatMul", {probs, value}, {ctx.Out(result)});
  return Status::Ok();
}

}  // namespace onnx_export
}  // namespace ivytrace
