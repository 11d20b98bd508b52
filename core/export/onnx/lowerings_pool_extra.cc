// Lowerings of torch's pooling with indices and its neighbours (issue 11): max_pool{1,2,3}d with
// indices (ONNX MaxPool's Indices are flat over N x C x spatial: torch's index is the position in
// its own plane, the remainder by the plane's size), adaptive max pooling with indices (and
// without, where the windows vary in size), max_unpool{1,2,3}d (ScatterElements into zeros), F.fold (col2im: a
// ScatterElements-add of every column item to its place), F.affine_grid, F.pdist,
// torch.unravel_index, F.multi_margin_loss, F.multilabel_margin_loss and F.embedding_bag.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/export/onnx/lowerings.h"
#include "core/ir/arg.h"
#include "core/passes/recorded_values.h"

namespace ivytrace {
namespace onnx_export {

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

std::string I64(LoweringContext& ctx, int64_t v) { return ctx.Scalar(Number::Int(v), v1::INT64); }
std::string F(LoweringContext& ctx, double v, v1::DType d) { return ctx.Scalar(Number::Float(v), d); }

// An int or a list of n ints (one broadcast to n); Unsupported otherwise.
Status IntsN(const BoundCall& call, const char* p, int n, std::vector<int64_t>* out) {
  auto v = call.IntList(p, n);
  if (!v || static_cast<int>(v->size()) != n) return Status::Unsupported(std::string(p) + " is not " + std::to_string(n) + " ints");
  *out = *v;
  return Status::Ok();
}

// The spatial rank from a canonical op ending in "<n>d" (before any suffix such as _with_indices).
int SpatialRankOf(const std::string& c) {
  for (int n = 1; n <= 3; ++n) {
    if (c.find(std::to_string(n) + "d") != std::string::npos) return n;
  }
  return 0;
}

// x.shape[from:to] as 1-D int64.
std::string ShapeSlice(LoweringContext& ctx, const std::string& x, int64_t from, int64_t to) {
  return ctx.EmitTemp("Slice", {ctx.EmitTemp("Shape", {x}), ctx.Int64s({from}), ctx.Int64s({to}), ctx.Int64s({0})});
}

std::string Transpose(LoweringContext& ctx, const std::string& v, const std::vector<int64_t>& perm) {
  onnx::NodeProto* t = nullptr;
  const std::string o = ctx.EmitTemp("Transpose", {v}, &t);
  SetAttr(t, "perm", perm);
  return o;
}

std::string Reduce(LoweringContext& ctx, const char* op, const std::string& v, const std::vector<int64_t>& axes, bool keep) {
  onnx::NodeProto* r = nullptr;
  const std::string o = ctx.EmitTemp(op, {v, ctx.Int64s(axes)}, &r);  // ReduceSum: axes input (opset 13)
  SetAttr(r, "keepdims", int64_t{keep ? 1 : 0});
  return o;
}

// ReduceMax/ReduceMin take axes as an attribute up to opset 17.
std::string ReduceAttr(LoweringContext& ctx, const char* op, const std::string& v, const std::vector<int64_t>& axes, bool keep) {
  onnx::NodeProto* r = nullptr;
  const std::string o = ctx.EmitTemp(op, {v}, &r);
  SetAttr(r, "axes", axes);
  SetAttr(r, "keepdims", int64_t{keep ? 1 : 0});
  return o;
}

// Emits MaxPool with its Indices output on batched `in` of float dtype `d`; returns (values,
// torch's per-plane indices). onnxruntime's MaxPool skips NaN; torch takes a NaN as the window's
// max (the last one it visits, in row-major order): NaN is pooled as +inf, and where a window holds
// a NaN the value is NaN and the index the largest NaN position (a second MaxPool over the NaN
// positions, as float32: exact up to 2^24 items per plane).
void EmitMaxPoolWithIndices(LoweringContext& ctx, const std::string& in, v1::DType d, int n, const std::vector<int64_t>& kernel,
                            const std::vector<int64_t>& stride, const std::vector<int64_t>& pads,
                            const std::vector<int64_t>& dilation, bool ceil_mode, std::string* values, std::string* indices) {
  auto pool = [&](const std::string& x, std::string* v, std::string* i) {
    *v = ctx.Temp("pool");
    std::vector<std::string> outs = {*v};
    if (i) {
      *i = ctx.Temp("pool_idx");
      outs.push_back(*i);
    }
    auto* p = ctx.Emit("MaxPool", {x}, outs);
    SetAttr(p, "kernel_shape", kernel);
    SetAttr(p, "strides", stride);
    SetAttr(p, "pads", pads);
    SetAttr(p, "dilations", dilation);
    SetAttr(p, "ceil_mode", int64_t{ceil_mode ? 1 : 0});
  };
  const std::string nan = ctx.EmitTemp("IsNaN", {in});
  const std::string no_nan = ctx.EmitTemp("Where", {nan, F(ctx, std::numeric_limits<double>::infinity(), d), in});
  std::string v, flat;
  pool(no_nan, &v, &flat);
  // ONNX: ((n * C + c) * plane + position in the plane); torch: the position in the plane.
  const std::string spatial = ShapeSlice(ctx, in, 2, 2 + n);
  const std::string plane = ctx.EmitTemp("ReduceProd", {spatial});
  const std::string idx = ctx.EmitTemp("Mod", {flat, plane});
  // The last NaN of each window: the max over Where(NaN, position, -1).
  const std::string pos = ctx.EmitTemp("Expand", {ctx.EmitTemp("Reshape", {ctx.EmitTemp("Range", {I64(ctx, 0), ctx.EmitTemp("Squeeze", {plane}), I64(ctx, 1)}),
                                                                          spatial}),
                                                  ctx.EmitTemp("Shape", {in})});
  const std::string marked = ctx.EmitTemp("Where", {nan, ctx.CastTo(pos, v1::INT64, v1::FLOAT32), F(ctx, -1.0, v1::FLOAT32)});
  std::string last;
  pool(marked, &last, nullptr);
  const std::string has_nan = ctx.EmitTemp("GreaterOrEqual", {last, F(ctx, 0.0, v1::FLOAT32)});
  *values = ctx.EmitTemp("Where", {has_nan, F(ctx, std::nan(""), d), v});
  *indices = ctx.EmitTemp("Where", {has_nan, ctx.CastTo(last, v1::FLOAT32, v1::INT64), idx});
}

}  // namespace

// F.max_pool{1,2,3}d_with_indices / torch.max_pool1d_with_indices (values, indices) and
// F.adaptive_max_pool{1,2,3}d_with_indices / torch.adaptive_max_pool1d: disjoint windows (every
// output size divides the input's) as one MaxPool, else one Slice per window; the model checks
// the recorded spatial sizes the windows were computed from.
Status LowerMaxPoolWithIndices(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  const std::string& c = ctx.canonical();
  const bool adaptive = c.rfind("adaptive", 0) == 0;
  const int n = SpatialRankOf(c);
  if (n == 0) return Status::Unsupported("unknown pooling " + c);
  ValueId x;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  const std::vector<ValueId> res = ResultTensors(node);
  // (values only: F.adaptive_max_pool*d with windows of varying size, LowerMaxPoolMaybeIndices.)
  if (res.size() != 2 && !(adaptive && res.size() == 1)) return Status::Unsupported(c + " without its (values, indices) results");
  const v1::DType d = ctx.DType(x);
  if (!IsFloating(d)) return Status::Unsupported(c + " of a " + std::string(DTypeName(d)) + " tensor");
  call.Get("return_indices");  // the _with_indices functions return them whatever it says
  const auto& shape = ctx.Shape(x);
  const int rank = static_cast<int>(shape.size());
  if (rank != n + 1 && rank != n + 2) return Status::Unsupported(c + " of an input of rank " + std::to_string(rank));
  std::string in = ctx.In(x);
  const bool unbatched = rank == n + 1;
  if (unbatched) in = ctx.Unsqueeze(in, {0});
  std::vector<int64_t> kernel, stride, padding(n, 0), dilation(n, 1);
  bool ceil_mode = false;
  if (adaptive) {
    const v1::Arg* os = call.Get("output_size");
    if (!os) return Status::Unsupported("missing output_size");
    std::vector<int64_t> target(n), spatial(shape.end() - n, shape.end());
    if (auto i = AsInt(*os)) {
      std::fill(target.begin(), target.end(), *i);
    } else if (auto items = SequenceItems(*os); items && static_cast<int>(items->size()) == n) {
      for (int k = 0; k < n; ++k) {
        if (IsNone(*(*items)[k])) target[k] = spatial[k];
        else if (auto v = AsInt(*(*items)[k])) target[k] = *v;
        else return Status::Unsupported("output_size " + ArgToString(*os, true));
      }
    } else {
      return Status::Unsupported("output_size " + ArgToString(*os, true));
    }
    for (int k = 0; k < n; ++k) {
      if (target[k] <= 0 || spatial[k] <= 0) return Status::Unsupported(c + ": an empty input or output size");
    }
    // The windows are computed from the recorded spatial sizes: the model checks them.
    const std::string sh = ctx.EmitTemp("Shape", {in});
    const std::string sizes = ShapeSlice(ctx, in, 2, 2 + n);
    const std::string same = ReduceAttr(ctx, "ReduceMin", ctx.CastTo(ctx.EmitTemp("Equal", {sizes, ctx.Int64s(spatial)}), v1::BOOL, v1::INT32), {0}, false);
    const std::string to = ctx.EmitTemp("Where", {ctx.CastTo(same, v1::INT32, v1::BOOL), sh, ctx.Int64s(std::vector<int64_t>(n + 2, -2))});
    onnx::NodeProto* chk = nullptr;
    in = ctx.EmitTemp("Reshape", {in, to}, &chk);
    chk->set_name("ivytrace guard (" + c + " input size) " + ctx.Temp("check") + ": " + node.op + " at " +
                  (node.loc.file().empty() ? std::string("an unknown line") : node.loc.file() + ":" + std::to_string(node.loc.line())) +
                  ": the pooling windows were computed for the recorded spatial sizes");
    bool divisible = true;
    for (int k = 0; k < n; ++k) divisible = divisible && spatial[k] % target[k] == 0;
    if (!divisible) {
      // Windows of varying size (ATen: [floor(i * in / out), ceil((i + 1) * in / out))), one per
      // output item: each a Slice, its max (ReduceMax) and first max (ArgMax, as torch's strict >),
      // NaN handled as in EmitMaxPoolWithIndices; the items concatenated in row-major order.
      int64_t cells = 1, plane = 1;
      for (int k = 0; k < n; ++k) {
        cells *= target[k];
        plane *= spatial[k];
      }
      if (cells > 1024) return Status::Unsupported(c + " to more than 1024 windows of varying size");
      if (plane > (int64_t{1} << 24)) return Status::Unsupported(c + " of a plane larger than 2^24 items");
      std::vector<int64_t> pos_shape = {1, 1};
      pos_shape.insert(pos_shape.end(), spatial.begin(), spatial.end());
      const std::string pos = ctx.EmitTemp("Reshape", {ctx.CastTo(ctx.EmitTemp("Range", {I64(ctx, 0), I64(ctx, plane), I64(ctx, 1)}), v1::INT64, v1::FLOAT32),
                                                       ctx.Int64s(pos_shape)});
      const std::string nan = ctx.EmitTemp("IsNaN", {in});
      const std::string no_nan = ctx.EmitTemp("Where", {nan, F(ctx, std::numeric_limits<double>::infinity(), d), in});
      const std::string marked = ctx.EmitTemp("Where", {nan, pos, F(ctx, -1.0, v1::FLOAT32)});
      std::vector<int64_t> axes;
      for (int k = 0; k < n; ++k) axes.push_back(2 + k);
      std::vector<std::string> vals, idxs;
      for (int64_t cell = 0; cell < cells; ++cell) {
        std::vector<int64_t> starts(n), ends(n);
        int64_t rest = cell;
        for (int k = n - 1; k >= 0; --k) {
          const int64_t o = rest % target[k];
          rest /= target[k];
          starts[k] = (o * spatial[k]) / target[k];
          ends[k] = ((o + 1) * spatial[k] + target[k] - 1) / target[k];
        }
        auto window = [&](const std::string& v) {
          return ctx.EmitTemp("Reshape", {ctx.EmitTemp("Slice", {v, ctx.Int64s(starts), ctx.Int64s(ends), ctx.Int64s(axes)}), ctx.Int64s({0, 0, -1})});
        };
        const std::string w = window(no_nan);
        std::string v = ReduceAttr(ctx, "ReduceMax", w, {2}, true);
        onnx::NodeProto* am = nullptr;
        const std::string first = ctx.EmitTemp("ArgMax", {w}, &am);
        SetAttr(am, "axis", int64_t{2});
        SetAttr(am, "keepdims", int64_t{1});
        const std::string wpos = ctx.EmitTemp("Reshape", {window(pos), ctx.Int64s({-1})});
        std::string i = ctx.EmitTemp("Gather", {wpos, first});  // the plane position of the first max
        const std::string last = ReduceAttr(ctx, "ReduceMax", window(marked), {2}, true);
        const std::string has_nan = ctx.EmitTemp("GreaterOrEqual", {last, F(ctx, 0.0, v1::FLOAT32)});
        vals.push_back(ctx.EmitTemp("Where", {has_nan, F(ctx, std::nan(""), d), v}));
        idxs.push_back(ctx.CastTo(ctx.EmitTemp("Where", {has_nan, last, i}), v1::FLOAT32, v1::INT64));
      }
      std::vector<int64_t> out_shape = {0, 0};
      out_shape.insert(out_shape.end(), target.begin(), target.end());
      auto gather_cells = [&](const std::vector<std::string>& parts) {
        std::string all = parts[0];
        if (parts.size() > 1) {
          onnx::NodeProto* cc = nullptr;
          all = ctx.EmitTemp("Concat", parts, &cc);
          SetAttr(cc, "axis", int64_t{2});
        }
        std::string r = ctx.EmitTemp("Reshape", {all, ctx.Int64s(out_shape)});
        return unbatched ? ctx.Squeeze(r, {0}) : r;
      };
      ctx.Emit("Identity", {gather_cells(vals)}, {ctx.Out(res[0])});
      if (res.size() > 1) ctx.Emit("Identity", {ctx.CastTo(gather_cells(idxs), v1::INT64, ctx.DType(res[1]))}, {ctx.Out(res[1])});
      return Status::Ok();
    }
    kernel.resize(n);
    for (int k = 0; k < n; ++k) kernel[k] = spatial[k] / target[k];
    stride = kernel;
  } else {
    IVY_RETURN_IF_ERROR(IntsN(call, "kernel_size", n, &kernel));
    const v1::Arg* s = call.Get("stride");
    auto sl = s ? AsIntList(*s) : std::nullopt;
    if (!s || IsNone(*s) || (sl && sl->empty())) stride = kernel;
    else IVY_RETURN_IF_ERROR(IntsN(call, "stride", n, &stride));
    IVY_RETURN_IF_ERROR(IntsN(call, "padding", n, &padding));
    IVY_RETURN_IF_ERROR(IntsN(call, "dilation", n, &dilation));
    auto cm = call.Bool("ceil_mode");
    if (!cm) return Status::Unsupported("ceil_mode is not a bool");
    ceil_mode = *cm;
    for (int k = 0; k < n; ++k) {
      if (padding[k] * 2 > kernel[k]) return Status::Unsupported("padding larger than half the kernel (torch refuses it)");
    }
  }
  std::vector<int64_t> pads = padding;
  pads.insert(pads.end(), padding.begin(), padding.end());
  std::string values, indices;
  EmitMaxPoolWithIndices(ctx, in, d, n, kernel, stride, pads, dilation, ceil_mode, &values, &indices);
  if (unbatched) {
    values = ctx.Squeeze(values, {0});
    indices = ctx.Squeeze(indices, {0});
  }
  ctx.Emit("Identity", {values}, {ctx.Out(res[0])});
  if (res.size() > 1) ctx.Emit("Identity", {ctx.CastTo(indices, v1::INT64, ctx.DType(res[1]))}, {ctx.Out(res[1])});
  return Status::Ok();
}

// F.max_pool{1,2,3}d and F.adaptive_max_pool{1,2,3}d: with return_indices=True the pooling with
// indices above; otherwise the canonical op's own lowering (LowerPool, LowerAdaptivePool).
Status LowerMaxPoolMaybeIndices(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  const std::string c = ctx.canonical();
  if (call.Bool("return_indices").value_or(false)) {
    ctx.SetCanonical(c + "_with_indices");
    return LowerMaxPoolWithIndices(node, call, ctx);
  }
  if (c.rfind("adaptive", 0) != 0) return LowerPool(node, call, ctx);
  // Adaptive: windows of varying size (an output size that does not divide the input's) go to the
  // pooling above (values only); disjoint windows to LowerAdaptivePool.
  const int n = SpatialRankOf(c);
  ValueId x;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  const auto& shape = ctx.Shape(x);
  const v1::Arg* os = call.Get("output_size");
  bool varying = false;
  if (os && n > 0 && static_cast<int>(shape.size()) >= n) {
    auto items = SequenceItems(*os);
    for (int k = 0; k < n; ++k) {
      const int64_t in = shape[shape.size() - n + k];
      std::optional<int64_t> t = AsInt(*os);
      if (items && static_cast<int>(items->size()) == n) t = IsNone(*(*items)[k]) ? std::optional<int64_t>(in) : AsInt(*(*items)[k]);
      if (t && *t > 0 && in > 0 && in % *t != 0) varying = true;
    }
  }
  if (!varying) return LowerAdaptivePool(node, call, ctx);
  ctx.SetCanonical(c + "_with_indices");
  return LowerMaxPoolWithIndices(node, call, ctx);
}

// F.max_unpool{1,2,3}d(input, indices, kernel_size, stride, padding, output_size): zeros of the
// output's size with input[n, c, k] at position indices[n, c, k] of plane (n, c) (ScatterElements
// along the flattened plane). The output size: output_size's last n items, or per dim
// (in - 1) * stride - 2 * padding + kernel from the run-time input size.
Status LowerMaxUnpool(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  const std::string& c = ctx.canonical();
  const int n = SpatialRankOf(c);
  if (n == 0) return Status::Unsupported("unknown unpooling " + c);
  ValueId x, idx, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "indices", &idx));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(x);
  if (OnnxElemType(d) == 0 || d == v1::BOOL) return Status::Unsupported(c + " of a " + std::string(DTypeName(d)) + " tensor");
  const int rank = ctx.Rank(x);
  if (rank != n + 1 && rank != n + 2) return Status::Unsupported(c + " of an input of rank " + std::to_string(rank));
  if (ctx.Rank(idx) != rank) return Status::Unsupported(c + " with indices of another rank than the input");
  std::vector<int64_t> kernel, stride, padding;
  IVY_RETURN_IF_ERROR(IntsN(call, "kernel_size", n, &kernel));
  const v1::Arg* s = call.Get("stride");
  if (!s || IsNone(*s)) stride = kernel;
  else IVY_RETURN_IF_ERROR(IntsN(call, "stride", n, &stride));
  IVY_RETURN_IF_ERROR(IntsN(call, "padding", n, &padding));
  const bool unbatched = rank == n + 1;
  std::string in = ctx.In(x);
  std::string ix = ctx.CastTo(ctx.In(idx), ctx.DType(idx), v1::INT64);
  if (unbatched) {
    in = ctx.Unsqueeze(in, {0});
    ix = ctx.Unsqueeze(ix, {0});
  }
  std::string out_sizes;
  if (!call.IsNone("output_size")) {
    // Ints, or sizes read from shapes (output_size=x.shape[-2:]): the last n items.
    const v1::Arg* os = call.Get("output_size");
    auto items = SequenceItems(*os);
    if (!items || static_cast<int>(items->size()) < n) return Status::Unsupported("output_size is not a list of sizes");
    std::string all;
    IVY_RETURN_IF_ERROR(DynamicInts(ctx, *os, &all));
    const int64_t k = static_cast<int64_t>(items->size());
    out_sizes = ctx.EmitTemp("Slice", {all, ctx.Int64s({k - n}), ctx.Int64s({k})});
  } else {
    std::vector<int64_t> kk(n), ss(n);
    for (int k = 0; k < n; ++k) {
      ss[k] = stride[k];
      kk[k] = kernel[k] - 2 * padding[k] - stride[k];  // (in - 1) * s - 2p + k = in * s + (k - 2p - s)
    }
    out_sizes = ctx.EmitTemp("Add", {ctx.EmitTemp("Mul", {ShapeSlice(ctx, in, 2, 2 + n), ctx.Int64s(ss)}), ctx.Int64s(kk)});
  }
  const std::string nc = ShapeSlice(ctx, in, 0, 2);
  const std::string plane = ctx.EmitTemp("ReduceProd", {out_sizes});  // keepdims: [1]
  onnx::NodeProto* cc = nullptr;
  const std::string flat_shape = ctx.EmitTemp("Concat", {nc, plane}, &cc);
  SetAttr(cc, "axis", int64_t{0});
  const std::string zeros = ctx.EmitTemp("Expand", {ctx.Scalar(IsFloating(d) ? Number::Float(0) : Number::Int(0), d), flat_shape});
  const std::string v3 = ctx.EmitTemp("Reshape", {in, ctx.Int64s({0, 0, -1})});
  const std::string i3 = ctx.EmitTemp("Reshape", {ix, ctx.Int64s({0, 0, -1})});
  onnx::NodeProto* sc = nullptr;
  const std::string put = ctx.EmitTemp("ScatterElements", {zeros, i3, v3}, &sc);
  SetAttr(sc, "axis", int64_t{2});
  onnx::NodeProto* c2 = nullptr;
  const std::string full_shape = ctx.EmitTemp("Concat", {nc, out_sizes}, &c2);
  SetAttr(c2, "axis", int64_t{0});
  std::string out = ctx.EmitTemp("Reshape", {put, full_shape});
  if (unbatched) out = ctx.Squeeze(out, {0});
  ctx.Emit("Identity", {out}, {ctx.Out(result)});
  return Status::Ok();
}

// F.fold (col2im)(input [N, C * kh * kw, L], output_size, kernel_size, dilation, padding, stride):
// item (c, i, j, l) of the columns adds into output (c, bh * sh + i * dh - ph, bw * sw + j * dw - pw)
// with (bh, bw) = divmod(l, blocks along w). A ScatterElements-add into the padded output's
// flattened plane, at positions computed here from the (static) sizes, then the padding cut off.
Status LowerCol2im(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(x);
  if (!IsFloating(d)) return Status::Unsupported("fold of a " + std::string(DTypeName(d)) + " tensor");
  const int rank = ctx.Rank(x);
  if (rank != 2 && rank != 3) return Status::Unsupported("fold of an input of rank " + std::to_string(rank));
  std::vector<int64_t> out, kernel, dilation, padding, stride;
  IVY_RETURN_IF_ERROR(IntsN(call, "output_size", 2, &out));
  IVY_RETURN_IF_ERROR(IntsN(call, "kernel_size", 2, &kernel));
  IVY_RETURN_IF_ERROR(IntsN(call, "dilation", 2, &dilation));
  IVY_RETURN_IF_ERROR(IntsN(call, "padding", 2, &padding));
  IVY_RETURN_IF_ERROR(IntsN(call, "stride", 2, &stride));
  int64_t blocks[2];
  for (int k = 0; k < 2; ++k) {
    if (kernel[k] < 1 || stride[k] < 1 || dilation[k] < 1 || padding[k] < 0) return Status::Unsupported("fold with a non-positive size");
    blocks[k] = (out[k] + 2 * padding[k] - dilation[k] * (kernel[k] - 1) - 1) / stride[k] + 1;
    if (blocks[k] < 1) return Status::Unsupported("fold whose kernel does not fit the output");
  }
  const int64_t L = blocks[0] * blocks[1], K = kernel[0] * kernel[1];
  const auto& shape = ctx.Shape(x);
  if (shape[rank - 1] != L || shape[rank - 2] % K != 0) {
    return Status::Unsupported("fold input of shape that does not match its blocks");
  }
  const int64_t hp = out[0] + 2 * padding[0], wp = out[1] + 2 * padding[1];
  std::vector<int64_t> pos;
  pos.reserve(static_cast<size_t>(K * L));
  for (int64_t i = 0; i < kernel[0]; ++i) {
    for (int64_t j = 0; j < kernel[1]; ++j) {
      for (int64_t l = 0; l < L; ++l) {
        const int64_t bh = l / blocks[1], bw = l % blocks[1];
        pos.push_back((bh * stride[0] + i * dilation[0]) * wp + bw * stride[1] + j * dilation[1]);
      }
    }
  }
  std::string in = ctx.In(x);
  if (rank == 2) in = ctx.Unsqueeze(in, {0});
  const std::string v3 = ctx.EmitTemp("Reshape", {in, ctx.Int64s({0, -1, K * L})});  // [N, C, K * L]
  const std::string idx = ctx.EmitTemp("Expand", {ctx.EmitTemp("Reshape", {ctx.Int64s(pos), ctx.Int64s({1, 1, K * L})}),
                                                  ctx.EmitTemp("Shape", {v3})});
  onnx::NodeProto* cc = nullptr;
  const std::string zshape = ctx.EmitTemp("Concat", {ShapeSlice(ctx, v3, 0, 2), ctx.Int64s({hp * wp})}, &cc);
  SetAttr(cc, "axis", int64_t{0});
  const std::string zeros = ctx.EmitTemp("Expand", {F(ctx, 0.0, d), zshape});
  onnx::NodeProto* sc = nullptr;
  const std::string summed = ctx.EmitTemp("ScatterElements", {zeros, idx, v3}, &sc);
  SetAttr(sc, "axis", int64_t{2});
  SetAttr(sc, "reduction", std::string("add"));
  std::string img = ctx.EmitTemp("Reshape", {summed, ctx.Int64s({0, 0, hp, wp})});
  img = ctx.EmitTemp("Slice", {img, ctx.Int64s({padding[0], padding[1]}), ctx.Int64s({padding[0] + out[0], padding[1] + out[1]}),
                               ctx.Int64s({2, 3})});
  if (rank == 2) img = ctx.Squeeze(img, {0});
  ctx.Emit("Identity", {img}, {ctx.Out(result)});
  return Status::Ok();
}

// torch.unravel_index(indices, shape): one int64 tensor per dim, (i // stride) % size, negative
// indices first counted from the end (torch accepts [-prod, prod)).
Status LowerUnravelIndex(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x;
  IVY_RETURN_IF_ERROR(TensorParam(call, "indices", &x));
  const v1::DType d = ctx.DType(x);
  if (IsFloating(d) || d == v1::BOOL || OnnxElemType(d) == 0) return Status::Unsupported("unravel_index of non-integer indices");
  auto shape = call.IntList("shape");
  if (!shape) return Status::Unsupported("shape is not constant ints");
  const std::vector<ValueId> res = ResultTensors(node);
  if (res.size() != shape->size()) return Status::Unsupported("unravel_index results do not match its shape");
  int64_t total = 1;
  for (int64_t s : *shape) {
    if (s < 0) return Status::Unsupported("a negative size");
    total *= s;
  }
  std::string i = ctx.CastTo(ctx.In(x), d, v1::INT64);
  i = ctx.EmitTemp("Where", {ctx.EmitTemp("Less", {i, I64(ctx, 0)}), ctx.EmitTemp("Add", {i, I64(ctx, total)}), i});
  int64_t stride = total;
  for (size_t k = 0; k < shape->size(); ++k) {
    const int64_t size = (*shape)[k];
    stride = size == 0 ? 0 : stride / size;
    std::string v = stride > 1 ? ctx.EmitTemp("Div", {i, I64(ctx, stride)}) : i;
    if (k > 0) v = ctx.EmitTemp("Mod", {v, I64(ctx, std::max<int64_t>(size, 1))});
    ctx.Emit("Identity", {ctx.CastTo(v, v1::INT64, ctx.DType(res[k]))}, {ctx.Out(res[k])});
  }
  return Status::Ok();
}

// F.pdist(input [N, M], p): the distances of the pairs i < j in row-major order, each torch's
// direct formula: p = 0 the count of differing items, p = inf the largest |difference|, else
// (sum |difference|^p)^(1/p) (p = 1, 2 without the powers). The pairs are kept with Compress.
Status LowerPdist(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(x);
  if (!IsFloating(d) || ctx.Rank(x) != 2) return Status::Unsupported("pdist of a non-float or non-2-D tensor");
  auto p = call.Double("p");
  if (!p || *p < 0) return Status::Unsupported("pdist p is not a non-negative number");
  const std::string in = ctx.In(x);
  const std::string diff = ctx.EmitTemp("Sub", {ctx.Unsqueeze(in, {1}), ctx.Unsqueeze(in, {0})});  // [N, N, M]
  const std::string a = ctx.EmitTemp("Abs", {diff});
  std::string dist;
  if (*p == 0) {
    dist = Reduce(ctx, "ReduceSum", ctx.CastTo(ctx.EmitTemp("Not", {ctx.EmitTemp("Equal", {a, F(ctx, 0, d)})}), v1::BOOL, d), {2}, false);
  } else if (std::isinf(*p)) {
    dist = ReduceAttr(ctx, "ReduceMax", a, {2}, false);
  } else if (*p == 1) {
    dist = Reduce(ctx, "ReduceSum", a, {2}, false);
  } else if (*p == 2) {
    dist = ctx.EmitTemp("Sqrt", {Reduce(ctx, "ReduceSum", ctx.EmitTemp("Mul", {a, a}), {2}, false)});
  } else {
    dist = ctx.EmitTemp("Pow", {Reduce(ctx, "ReduceSum", ctx.EmitTemp("Pow", {a, F(ctx, *p, d)}), {2}, false), F(ctx, 1.0 / *p, d)});
  }
  const std::string n = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {in}), I64(ctx, 0)});
  const std::string r = ctx.EmitTemp("Range", {I64(ctx, 0), n, I64(ctx, 1)});
  const std::string upper = ctx.EmitTemp("Less", {ctx.Unsqueeze(r, {1}), r});  // i < j
  auto* cp = ctx.Emit("Compress", {ctx.EmitTemp("Reshape", {dist, ctx.Int64s({-1})}), ctx.EmitTemp("Reshape", {upper, ctx.Int64s({-1})})},
                      {ctx.Out(result)});
  SetAttr(cp, "axis", int64_t{0});
  return Status::Ok();
}

namespace {

Status LossReduction(const BoundCall& call, std::string* out) {
  for (const char* legacy : {"size_average", "reduce"}) {
    if (call.Has(legacy) && !call.IsNone(legacy)) return Status::Unsupported(std::string("the deprecated ") + legacy + "= argument");
  }
  const v1::Arg* r = call.Get("reduction");
  *out = r && r->kind_case() == v1::Arg::kS ? r->s() : "mean";
  if (*out != "none" && *out != "mean" && *out != "sum") return Status::Unsupported("reduction '" + *out + "'");
  return Status::Ok();
}

void EmitLossReduced(LoweringContext& ctx, const std::string& loss, const std::string& reduction, const std::string& out) {
  if (reduction == "none") {
    ctx.Emit("Identity", {loss}, {out});
    return;
  }
  auto* n = ctx.Emit(reduction == "mean" ? "ReduceMean" : "ReduceSum", {loss}, {out});
  SetAttr(n, "keepdims", int64_t{0});
}

}  // namespace

// F.multi_margin_loss(input [N, C] or [C], target, p, margin, weight): per sample
// sum over i != y of max(0, margin - x[y] + x[i])^p (times weight[y]) / C (ATen's kernel).
Status LowerMultiMarginLoss(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, t, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "target", &t));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(result);
  if (!IsFloating(d)) return Status::Unsupported("multi_margin_loss in " + std::string(DTypeName(d)));
  std::string reduction;
  IVY_RETURN_IF_ERROR(LossReduction(call, &reduction));
  auto p = call.Int("p");
  auto margin = call.Double("margin");
  if (!p || (*p != 1 && *p != 2)) return Status::Unsupported("multi_margin_loss p other than 1 or 2 (torch refuses it)");
  if (!margin) return Status::Unsupported("margin is not a number");
  const int rank = ctx.Rank(x);
  if (rank != 1 && rank != 2) return Status::Unsupported("multi_margin_loss of an input of rank " + std::to_string(rank));
  std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  std::string y = ctx.CastTo(ctx.In(t), ctx.DType(t), v1::INT64);
  if (rank == 1) {
    in = ctx.Unsqueeze(in, {0});
    y = ctx.EmitTemp("Reshape", {y, ctx.Int64s({1})});
  }
  const std::string y2 = ctx.Unsqueeze(y, {1});                       // [N, 1]
  onnx::NodeProto* g = nullptr;
  const std::string xy = ctx.EmitTemp("GatherElements", {in, y2}, &g);  // [N, 1]
  SetAttr(g, "axis", int64_t{1});
  std::string z = ctx.EmitTemp("Add", {ctx.EmitTemp("Sub", {F(ctx, *margin, d), xy}), in});
  z = ctx.EmitTemp("Max", {z, F(ctx, 0.0, d)});
  if (*p == 2) z = ctx.EmitTemp("Mul", {z, z});
  if (!call.IsNone("weight")) {
    ValueId w;
    IVY_RETURN_IF_ERROR(TensorParam(call, "weight", &w));
    z = ctx.EmitTemp("Mul", {z, ctx.EmitTemp("Gather", {ctx.CastTo(ctx.In(w), ctx.DType(w), d), y2})});
  }
  const std::string classes = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {in}), I64(ctx, 1)});
  const std::string is_y = ctx.EmitTemp("Equal", {ctx.EmitTemp("Range", {I64(ctx, 0), classes, I64(ctx, 1)}), y2});
  z = ctx.EmitTemp("Where", {is_y, F(ctx, 0.0, d), z});
  std::string loss = ctx.EmitTemp("Div", {Reduce(ctx, "ReduceSum", z, {1}, false), ctx.CastTo(classes, v1::INT64, d)});
  if (rank == 1) loss = ctx.EmitTemp("Reshape", {loss, ctx.Int64s({})});
  EmitLossReduced(ctx, loss, reduction, ctx.Out(result));
  return Status::Ok();
}

// F.multilabel_margin_loss(input [N, C] or [C], target of class indices ended by the first -1):
// per sample sum over targets t and non-targets i of max(0, 1 - (x[t] - x[i])) / C.
Status LowerMultilabelMarginLoss(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, t, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "target", &t));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(result);
  if (!IsFloating(d)) return Status::Unsupported("multilabel_margin_loss in " + std::string(DTypeName(d)));
  std::string reduction;
  IVY_RETURN_IF_ERROR(LossReduction(call, &reduction));
  const int rank = ctx.Rank(x);
  if ((rank != 1 && rank != 2) || ctx.Rank(t) != rank) return Status::Unsupported("multilabel_margin_loss of inputs of rank " + std::to_string(rank));
  std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  std::string y = ctx.CastTo(ctx.In(t), ctx.DType(t), v1::INT64);
  if (rank == 1) {
    in = ctx.Unsqueeze(in, {0});
    y = ctx.Unsqueeze(y, {0});
  }
  // valid[k]: no -1 at or before k.
  const std::string ends = ctx.CastTo(ctx.EmitTemp("Equal", {y, I64(ctx, -1)}), v1::BOOL, v1::INT64);
  const std::string valid = ctx.EmitTemp("Equal", {ctx.EmitTemp("CumSum", {ends, I64(ctx, 1)}), I64(ctx, 0)});  // [N, C]
  const std::string yt = ctx.EmitTemp("Where", {valid, y, I64(ctx, 0)});
  const std::string classes = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {in}), I64(ctx, 1)});
  const std::string cls = ctx.EmitTemp("Range", {I64(ctx, 0), classes, I64(ctx, 1)});
  // is_target[n, i] = any_k valid[n, k] and yt[n, k] == i.
  const std::string hit = ctx.EmitTemp("And", {ctx.EmitTemp("Equal", {ctx.Unsqueeze(yt, {2}), cls}), ctx.Unsqueeze(valid, {2})});  // [N, K, C]
  const std::string is_target = ctx.CastTo(ReduceAttr(ctx, "ReduceMax", ctx.CastTo(hit, v1::BOOL, v1::INT32), {1}, false), v1::INT32, v1::BOOL);
  onnx::NodeProto* g = nullptr;
  const std::string xt = ctx.EmitTemp("GatherElements", {in, yt}, &g);  // [N, K]
  SetAttr(g, "axis", int64_t{1});
  std::string z = ctx.EmitTemp("Sub", {F(ctx, 1.0, d), ctx.EmitTemp("Sub", {ctx.Unsqueeze(xt, {2}), ctx.Unsqueeze(in, {1})})});  // [N, K, C]
  z = ctx.EmitTemp("Max", {z, F(ctx, 0.0, d)});
  const std::string keep = ctx.EmitTemp("And", {ctx.Unsqueeze(valid, {2}), ctx.EmitTemp("Not", {ctx.Unsqueeze(is_target, {1})})});
  z = ctx.EmitTemp("Where", {keep, z, F(ctx, 0.0, d)});
  std::string loss = ctx.EmitTemp("Div", {Reduce(ctx, "ReduceSum", z, {1, 2}, false), ctx.CastTo(classes, v1::INT64, d)});
  if (rank == 1) loss = ctx.EmitTemp("Reshape", {loss, ctx.Int64s({})});
  EmitLossReduced(ctx, loss, reduction, ctx.Out(result));
  return Status::Ok();
}

// F.affine_grid(theta [N, 2, 3] / [N, 3, 4], size, align_corners) and
// torch.affine_grid_generator: the base grid (x, y[, z], 1) of torch's linspace(-1, 1, n)
// (times (n - 1) / n without align_corners), a constant, times theta transposed.
Status LowerAffineGrid(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId theta, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "theta", &theta));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(theta);
  if (d != v1::FLOAT32 && d != v1::FLOAT64) return Status::Unsupported("affine_grid of a " + std::string(DTypeName(d)) + " theta");
  // size: ints, or sizes read from shapes (F.affine_grid(theta, x.size())): the grid is built for
  // the recorded spatial sizes, and the model checks that they are the run-time ones.
  const v1::Arg* size_arg = call.Get("size");
  auto items = size_arg ? SequenceItems(*size_arg) : std::nullopt;
  if (!items || (items->size() != 4 && items->size() != 5)) return Status::Unsupported("size is not 4 or 5 sizes");
  std::vector<int64_t> size_v;
  bool symbolic_spatial = false;
  for (size_t k = 0; k < items->size(); ++k) {
    const v1::Arg& it = *(*items)[k];
    if (auto i = AsInt(it)) {
      size_v.push_back(*i);
    } else if (it.kind_case() == v1::Arg::kTensor && ctx.DType(it.tensor().value()) == v1::SYM_INT) {
      auto r = RecordedScalar(ctx.graph(), it.tensor().value());
      if (!r) return Status::Unsupported("a size read from a shape without a recorded value");
      size_v.push_back(*r);
      symbolic_spatial = symbolic_spatial || k >= 2;
    } else {
      return Status::Unsupported("size " + ArgToString(*size_arg, true));
    }
  }
  const std::vector<int64_t>* size = &size_v;
  const bool align = call.Bool("align_corners").value_or(false);
  const int nd = static_cast<int>(size->size()) - 2;  // 2: (H, W); 3: (D, H, W)
  // linspace(-1, 1, n) as ATen computes it in the dtype, then * (n - 1) / n; a size of 1 is [0].
  auto lin = [&](int64_t n) {
    std::vector<double> v(static_cast<size_t>(n));
    if (n <= 1) return std::vector<double>(static_cast<size_t>(std::max<int64_t>(n, 0)), 0.0);
    const int64_t half = n / 2;
    if (d == v1::FLOAT32) {
      const float step = n > 1 ? 2.0f / static_cast<float>(n - 1) : 0.0f;
      for (int64_t i = 0; i < n; ++i) {
        volatile float prod = step * static_cast<float>(i < half ? i : n - 1 - i);
        float x = n == 1 ? -1.0f : (i < half ? -1.0f + prod : 1.0f - prod);
        if (!align) {
          volatile float m = x * static_cast<float>(n - 1);
          x = m / static_cast<float>(n);
        }
        v[i] = x;
      }
    } else {
      const double step = n > 1 ? 2.0 / static_cast<double>(n - 1) : 0.0;
      for (int64_t i = 0; i < n; ++i) {
        volatile double prod = step * static_cast<double>(i < half ? i : n - 1 - i);
        double x = n == 1 ? -1.0 : (i < half ? -1.0 + prod : 1.0 - prod);
        if (!align) {
          volatile double m = x * static_cast<double>(n - 1);
          x = m / static_cast<double>(n);
        }
        v[i] = x;
      }
    }
    return v;
  };
  std::vector<int64_t> spatial(size->begin() + 2, size->end());
  std::vector<std::vector<double>> axes;
  for (int k = 0; k < nd; ++k) axes.push_back(lin(spatial[k]));
  int64_t points = 1;
  for (int64_t s : spatial) points *= s;
  std::vector<Number> grid;
  grid.reserve(static_cast<size_t>(points * (nd + 1)));
  for (int64_t p = 0; p < points; ++p) {
    std::vector<int64_t> at(nd);
    int64_t rest = p;
    for (int k = nd - 1; k >= 0; --k) {
      at[k] = rest % spatial[k];
      rest /= spatial[k];
    }
    // (x, y[, z], 1): x runs along the last dim (W), y along H, z along D.
    for (int k = nd - 1; k >= 0; --k) grid.push_back(Number::Float(axes[k][at[k]]));
    grid.push_back(Number::Float(1.0));
  }
  onnx::TensorProto base;
  base.set_data_type(OnnxElemType(d));
  base.add_dims(points);
  base.add_dims(nd + 1);
  std::string raw;
  IVY_RETURN_IF_ERROR(EncodeNumbers(grid, d, &raw));
  base.set_raw_data(raw);
  const std::string b = ctx.AddInitializer(std::move(base), "affine_base");
  std::string th = ctx.CastTo(ctx.In(theta), ctx.DType(theta), d);
  if (symbolic_spatial) {
    std::string all;
    IVY_RETURN_IF_ERROR(DynamicInts(ctx, *size_arg, &all));
    const int64_t k = static_cast<int64_t>(size->size());
    const std::string now = ctx.EmitTemp("Slice", {all, ctx.Int64s({2}), ctx.Int64s({k})});
    onnx::NodeProto* rmin = nullptr;
    const std::string same = ctx.EmitTemp("ReduceMin", {ctx.CastTo(ctx.EmitTemp("Equal", {now, ctx.Int64s(spatial)}), v1::BOOL, v1::INT32)}, &rmin);
    SetAttr(rmin, "keepdims", int64_t{0});
    const std::string to = ctx.EmitTemp("Where", {ctx.CastTo(same, v1::INT32, v1::BOOL), ctx.EmitTemp("Shape", {th}), ctx.Int64s({-2, -2, -2})});
    onnx::NodeProto* chk = nullptr;
    th = ctx.EmitTemp("Reshape", {th, to}, &chk);
    chk->set_name("ivytrace guard (affine_grid size) " + ctx.Temp("check") + ": " + node.op + " at " +
                  (node.loc.file().empty() ? std::string("an unknown line") : node.loc.file() + ":" + std::to_string(node.loc.line())) +
                  ": the grid was built for the recorded spatial sizes");
  }
  const std::string prod = ctx.EmitTemp("MatMul", {b, Transpose(ctx, th, {0, 2, 1})});  // [N, points, nd]
  std::vector<int64_t> out_shape = {0};
  out_shape.insert(out_shape.end(), spatial.begin(), spatial.end());
  out_shape.push_back(nd);
  ctx.Emit("Reshape", {prod, ctx.Int64s(out_shape)}, {ctx.Out(result)});
  return Status::Ok();
}

// F.embedding_bag(input, weight, offsets, ..., mode, per_sample_weights, include_last_offset,
// padding_idx): the rows of weight for the ids, reduced per bag (sum, mean, max). Bags: the rows
// of a 2-D input, or the runs of a 1-D input starting at each offset. A [bags, ids] one-hot of
// each id's bag selects them; padding_idx ids count for nothing; an empty bag is zeros.
Status LowerEmbeddingBag(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId ids, w;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &ids));
  IVY_RETURN_IF_ERROR(TensorParam(call, "weight", &w));
  const std::vector<ValueId> res = ResultTensors(node);
  if (res.empty()) return Status::Unsupported("embedding_bag without a result");
  const ValueId result = res[0];
  if (res.size() > 1) return Status::Unsupported("embedding_bag's extra results");
  const v1::DType d = ctx.DType(w);
  if (!IsFloating(d)) return Status::Unsupported("embedding_bag of a " + std::string(DTypeName(d)) + " weight");
  if (!call.IsNone("max_norm")) return Status::Unsupported("embedding_bag with max_norm renormalizes the weight in place");
  for (const char* p : {"norm_type", "scale_grad_by_freq", "sparse"}) call.Get(p);
  const v1::Arg* m = call.Get("mode");
  const std::string mode = m && m->kind_case() == v1::Arg::kS ? m->s() : "mean";
  if (mode != "sum" && mode != "mean" && mode != "max") return Status::Unsupported("embedding_bag mode '" + mode + "'");
  const bool psw = !call.IsNone("per_sample_weights");
  if (psw && mode != "sum") return Status::Unsupported("per_sample_weights with mode other than sum (torch refuses it)");
  const bool last_offset = call.Bool("include_last_offset").value_or(false);
  std::string flat_ids = ctx.CastTo(ctx.In(ids), ctx.DType(ids), v1::INT64);
  std::string weights;  // per id, [n]
  if (psw) {
    ValueId pw;
    IVY_RETURN_IF_ERROR(TensorParam(call, "per_sample_weights", &pw));
    weights = ctx.EmitTemp("Reshape", {ctx.CastTo(ctx.In(pw), ctx.DType(pw), d), ctx.Int64s({-1})});
  }
  std::string member;  // [bags, n] bool
  if (ctx.Rank(ids) == 2) {
    if (!call.IsNone("offsets")) return Status::Unsupported("embedding_bag of a 2-D input with offsets (torch refuses it)");
    // Bag b holds ids[b, :]: member[b, j] for flat j = b * cols + c.
    const std::string shape = ctx.EmitTemp("Shape", {flat_ids});
    const std::string bags = ctx.EmitTemp("Gather", {shape, I64(ctx, 0)});
    const std::string cols = ctx.EmitTemp("Gather", {shape, I64(ctx, 1)});
    const std::string j = ctx.EmitTemp("Range", {I64(ctx, 0), ctx.EmitTemp("Mul", {bags, cols}), I64(ctx, 1)});
    const std::string b = ctx.EmitTemp("Range", {I64(ctx, 0), bags, I64(ctx, 1)});
    member = ctx.EmitTemp("Equal", {ctx.Unsqueeze(b, {1}), ctx.EmitTemp("Div", {j, cols})});
    flat_ids = ctx.EmitTemp("Reshape", {flat_ids, ctx.Int64s({-1})});
  } else if (ctx.Rank(ids) == 1) {
    ValueId off;
    IVY_RETURN_IF_ERROR(TensorParam(call, "offsets", &off));
    std::string o = ctx.CastTo(ctx.In(off), ctx.DType(off), v1::INT64);
    if (last_offset) o = ctx.EmitTemp("Slice", {o, ctx.Int64s({0}), ctx.Int64s({-1})});
    const std::string n = ctx.EmitTemp("Size", {flat_ids});
    const std::string j = ctx.EmitTemp("Range", {I64(ctx, 0), n, I64(ctx, 1)});
    // Bag b: offsets[b] <= j < offsets[b + 1] (the last to the end).
    onnx::NodeProto* cat = nullptr;
    const std::string next = ctx.EmitTemp("Concat", {ctx.EmitTemp("Slice", {o, ctx.Int64s({1}), ctx.Int64s({kMax})}),
                                                     ctx.Unsqueeze(n, {0})}, &cat);
    SetAttr(cat, "axis", int64_t{0});
    member = ctx.EmitTemp("And", {ctx.EmitTemp("LessOrEqual", {ctx.Unsqueeze(o, {1}), j}),
                                  ctx.EmitTemp("Less", {j, ctx.Unsqueeze(next, {1})})});
  } else {
    return Status::Unsupported("embedding_bag of an input of rank " + std::to_string(ctx.Rank(ids)));
  }
  if (!call.IsNone("padding_idx")) {
    auto pi = call.Int("padding_idx");
    if (!pi) return Status::Unsupported("padding_idx is not an int");
    int64_t p = *pi;
    if (p < 0) p += ctx.Shape(w)[0];
    member = ctx.EmitTemp("And", {member, ctx.EmitTemp("Not", {ctx.EmitTemp("Equal", {flat_ids, I64(ctx, p)})})});
  }
  onnx::NodeProto* g = nullptr;
  const std::string rows = ctx.EmitTemp("Gather", {ctx.In(w), flat_ids}, &g);  // [n, D]
  SetAttr(g, "axis", int64_t{0});
  std::string out;
  if (mode == "max") {
    const std::string cand = ctx.EmitTemp("Where", {ctx.Unsqueeze(member, {2}), ctx.Unsqueeze(rows, {0}),
                                                    F(ctx, -std::numeric_limits<double>::infinity(), d)});  // [bags, n, D]
    const std::string mx = ReduceAttr(ctx, "ReduceMax", cand, {1}, false);
    const std::string any = ctx.CastTo(ReduceAttr(ctx, "ReduceMax", ctx.CastTo(member, v1::BOOL, v1::INT32), {1}, true), v1::INT32, v1::BOOL);
    out = ctx.EmitTemp("Where", {any, mx, F(ctx, 0.0, d)});
  } else {
    std::string sel = ctx.CastTo(member, v1::BOOL, d);  // [bags, n]
    std::string r = rows;
    if (psw) r = ctx.EmitTemp("Mul", {rows, ctx.Unsqueeze(weights, {1})});
    // Sum with Where and ReduceSum (not MatMul: an inf row times 0 would be NaN).
    const std::string picked = ctx.EmitTemp("Where", {ctx.Unsqueeze(member, {2}), ctx.Unsqueeze(r, {0}), F(ctx, 0.0, d)});
    out = Reduce(ctx, "ReduceSum", picked, {1}, false);
    if (mode == "mean") {
      const std::string count = Reduce(ctx, "ReduceSum", sel, {1}, true);
      out = ctx.EmitTemp("Div", {out, ctx.EmitTemp("Max", {count, F(ctx, 1.0, d)})});
    }
  }
  ctx.Emit("Identity", {out}, {ctx.Out(result)});
  return Status::Ok();
}

}  // namespace onnx_export
}  // namespace ivytrace
