// Lowerings of writes into tensors and of torch's ATen spellings of ops that already lower
// (issue 11):
//   - ATen aliases (torch.kl_div and the other losses with an int reduction, torch.embedding,
//     torch.convolution, torch.grid_sampler, torch.constant_pad_nd, the *_copy ops whose
//     parameters differ from their view's): the arguments become the canonical op's, then the
//     canonical op's own lowering runs (one formula per op, nothing copied);
//   - Tensor.copy_, put/put_ (and np.put), index_put(_), masked_scatter(_) (and np.place,
//     np.putmask), scatter_reduce(_), index_reduce(_), fill_diagonal_ (and np.fill_diagonal),
//     diagonal_scatter, np.copyto, ndarray.fill, sum_to_size, torch.linspace.
// Each computes the framework's result with a fixed graph: positions are computed from the
// run-time shapes (ScatterND / ScatterElements / Where), never from the recorded ones.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/export/onnx/lowering_table.h"
#include "core/export/onnx/lowerings.h"
#include "core/ir/arg.h"

namespace ivytrace {
namespace onnx_export {

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

v1::Arg StrArg(std::string v) {
  v1::Arg a;
  a.set_s(std::move(v));
  return a;
}

v1::Arg NoneArg() {
  v1::Arg a;
  a.set_none(true);
  return a;
}

// Runs the lowering of canonical op `canonical` on `call` (already in that op's parameters).
Status Dispatch(const std::string& canonical, const Node& node, const BoundCall& call, LoweringContext& ctx) {
  const CanonicalLowering* l = FindCanonicalLowering(canonical);
  if (!l) return Status::Unsupported("no lowering for canonical op '" + canonical + "'");
  ctx.SetCanonical(canonical);
  return l->fn(node, call, ctx);
}

// The written tensor's new value: the result when the call returns the tensor (torch's in-place
// ops), else the last value the node defines (NumPy's in-place functions return None).
Status WrittenResult(const Node& node, const BoundCall& call, LoweringContext& ctx, ValueId* out) {
  if (auto r = LoweringContext::ResultTensor(node)) {
    *out = *r;
    return Status::Ok();
  }
  if (node.outputs.empty()) return Status::Unsupported("the write defines no new value");
  *out = node.outputs.back();
  if (const v1::Arg* in = call.Get("input"); in && in->kind_case() == v1::Arg::kTensor) {
    for (ValueId o : node.outputs) {
      if (ctx.graph().values[o].tensor_id == in->tensor().id()) *out = o;
    }
  }
  return Status::Ok();
}

std::string I64(LoweringContext& ctx, int64_t v) { return ctx.Scalar(Number::Int(v), v1::INT64); }

// `v` flattened to 1-D.
std::string Flat(LoweringContext& ctx, const std::string& v) { return ctx.EmitTemp("Reshape", {v, ctx.Int64s({-1})}); }

// An int64 value (tensor or Python int/list) for an index parameter; Unsupported for floats/bools.
Status IndexOperand(LoweringContext& ctx, const v1::Arg& a, std::string* out) {
  if (a.kind_case() == v1::Arg::kTensor) {
    const ValueId t = a.tensor().value();
    const v1::DType d = ctx.DType(t);
    if (IsFloating(d) || d == v1::BOOL || d == v1::SYM_BOOL) return Status::Unsupported("an index that is not integer");
    *out = ctx.CastTo(ctx.In(t), d == v1::SYM_INT ? v1::INT64 : d, v1::INT64);
    return Status::Ok();
  }
  if (auto i = AsInt(a)) {
    *out = I64(ctx, *i);
    return Status::Ok();
  }
  if (auto l = AsIntList(a)) {
    *out = ctx.Int64s(*l);
    return Status::Ok();
  }
  return Status::Unsupported("index " + ArgToString(a, true) + " is not integers");
}

// A value operand as a tensor of `d` (a number, a tensor, or a list of numbers).
Status ValuesOperand(LoweringContext& ctx, const v1::Arg& a, v1::DType d, std::string* out) {
  if (a.kind_case() == v1::Arg::kList || a.kind_case() == v1::Arg::kTuple) {
    auto items = SequenceItems(a);
    std::vector<Number> nums;
    for (const v1::Arg* it : *items) {
      if (it->kind_case() == v1::Arg::kF) nums.push_back(Number::Float(it->f()));
      else if (auto i = AsInt(*it)) nums.push_back(Number::Int(*i));
      else if (auto b = AsBool(*it)) nums.push_back(Number::Int(*b ? 1 : 0));
      else return Status::Unsupported("values " + ArgToString(a, true) + " are not numbers");
    }
    if (!IsFloating(d)) {
      for (Number& n : nums) n = Number::Int(static_cast<int64_t>(n.AsDouble()));
    } else {
      for (Number& n : nums) n = Number::Float(n.AsDouble());
    }
    onnx::TensorProto t;
    t.set_data_type(OnnxElemType(d));
    t.add_dims(static_cast<int64_t>(nums.size()));
    std::string raw;
    IVY_RETURN_IF_ERROR(EncodeNumbers(nums, d, &raw));
    t.set_raw_data(raw);
    *out = ctx.AddInitializer(std::move(t), "values");
    return Status::Ok();
  }
  return OperandAs(ctx, a, d, out);
}

// x.shape[axis] as a 0-d int64.
std::string DimAt(LoweringContext& ctx, const std::string& x, int64_t axis) {
  onnx::NodeProto* g = nullptr;
  const std::string out = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {x}), I64(ctx, axis)}, &g);
  SetAttr(g, "axis", int64_t{0});
  return out;
}

// A float result dtype, or Unsupported.
Status NeedNumeric(LoweringContext& ctx, v1::DType d) {
  if (OnnxElemType(d) == 0 || d == v1::BOOL) {
    return Status::Unsupported(ctx.canonical() + " of a " + std::string(DTypeName(d)) + " tensor");
  }
  return Status::Ok();
}

}  // namespace

// --- ATen spellings ----------------------------------------------------------------------------

// torch.kl_div, torch.cosine_embedding_loss, ...: ATen's reduction is an int (0 none, 1 mean,
// 2 sum); the F.* loss of the same name computes the rest.
Status LowerAtenLoss(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  const std::string prefix = "torch.";
  if (node.op.rfind(prefix, 0) != 0) return Status::Unsupported("aten_loss of " + node.op);
  const std::string loss = node.op.substr(prefix.size());
  BoundCall c = call;
  const v1::Arg* r = call.Get("reduction");
  auto ri = r ? AsInt(*r) : std::nullopt;
  if (!ri || *ri < 0 || *ri > 2) return Status::Unsupported("reduction " + (r ? ArgToString(*r, true) : "") + " is not 0, 1 or 2");
  static const char* kNames[] = {"none", "mean", "sum"};
  c.Set("reduction", StrArg(kNames[*ri]));
  return Dispatch(loss, node, c, ctx);
}

// torch.embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse): F.embedding's lookup
// (padding_idx and the rest only shape the gradient).
Status LowerAtenEmbedding(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  BoundCall c = call;
  const v1::Arg* ids = call.Get("indices");
  if (!ids) return Status::Unsupported("embedding without indices");
  c.Set("input", *ids);
  c.Set("max_norm", NoneArg());
  call.Get("padding_idx");
  return Dispatch("embedding", node, c, ctx);
}

// torch.convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
// groups): conv{1,2,3}d or conv_transpose{1,2,3}d by the weight's rank.
Status LowerAtenConvolution(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId w;
  IVY_RETURN_IF_ERROR(TensorParam(call, "weight", &w));
  auto transposed = call.Bool("transposed");
  if (!transposed) return Status::Unsupported("transposed is not a bool");
  const int n = ctx.Rank(w) - 2;
  if (n < 1 || n > 3) return Status::Unsupported("convolution weight of rank " + std::to_string(ctx.Rank(w)));
  if (!*transposed) {
    auto op = call.IntList("output_padding", n);
    if (!op) return Status::Unsupported("output_padding is not ints");
    for (int64_t v : *op) {
      if (v != 0) return Status::Unsupported("a non-transposed convolution with output_padding");
    }
  }
  return Dispatch(std::string(*transposed ? "conv_transpose" : "conv") + std::to_string(n) + "d", node, call, ctx);
}

// torch.grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners): the modes are
// ints (0 bilinear, 1 nearest, 2 bicubic; 0 zeros, 1 border, 2 reflection).
Status LowerAtenGridSampler(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  auto m = call.Int("interpolation_mode"), p = call.Int("padding_mode");
  if (!m || !p || *m < 0 || *m > 2 || *p < 0 || *p > 2) return Status::Unsupported("grid_sampler modes are not 0, 1 or 2");
  static const char* kModes[] = {"bilinear", "nearest", "bicubic"};
  static const char* kPads[] = {"zeros", "border", "reflection"};
  BoundCall c = call;
  c.Set("mode", StrArg(kModes[*m]));
  c.Set("padding_mode", StrArg(kPads[*p]));
  return Dispatch("grid_sample", node, c, ctx);
}

// torch.constant_pad_nd(input, pad, value): F.pad in constant mode.
Status LowerConstantPadNd(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  BoundCall c = call;
  c.Set("mode", StrArg("constant"));
  return Dispatch("pad", node, c, ctx);
}

// torch.rrelu / F.rrelu outside training: leaky_relu with the slope (lower + upper) / 2, as ATen
// (in training the slopes are random: refused).
Status LowerRrelu(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  auto training = call.Bool("training");
  if (!training || *training) return Status::Unsupported("rrelu in training mode draws random slopes");
  auto lower = call.Double("lower"), upper = call.Double("upper");
  if (!lower || !upper) return Status::Unsupported("lower or upper is not a number");
  v1::Arg slope;
  slope.set_f((*lower + *upper) / 2);
  BoundCall c = call;
  c.Set("negative_slope", slope);
  return Dispatch("leaky_relu", node, c, ctx);
}

// torch.alpha_dropout / feature_alpha_dropout / feature_dropout(input, p, train): the identity
// outside training (train=False or p=0); random otherwise.
Status LowerAtenDropout(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  const v1::Arg* train = call.Get("train");
  if (!train) return Status::Unsupported("dropout without train");
  BoundCall c = call;
  c.Set("training", *train);
  return Dispatch("dropout", node, c, ctx);
}

// torch.view_copy(input, size) is Tensor.view's reshape; the dtype overload (a bitcast) is refused.
// torch.split_copy(input, split_size, dim) is torch.split.
Status LowerAtenCopyOf(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  BoundCall c = call;
  if (ctx.canonical() == "view_copy") {
    const v1::Arg* size = call.Get("size");
    if (!size) return Status::Unsupported("view_copy without size");
    if (ArgDType(*size)) return Status::Unsupported("view_copy(dtype) reinterprets the bytes (a bitcast has no ONNX op)");
    c.Set("shape", *size);
    return Dispatch("reshape", node, c, ctx);
  }
  if (ctx.canonical() == "split_copy") {
    const v1::Arg* s = call.Get("split_size");
    if (!s) return Status::Unsupported("split_copy without split_size");
    c.Set("split_size_or_sections", *s);
    return Dispatch("split", node, c, ctx);
  }
  return Status::Unsupported("'aten copy' lowering does not know " + ctx.canonical());
}

// torch.slice_copy(input, dim, start, end, step): input[..., start:end:step] along dim.
Status LowerSliceCopy(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(call.Int("dim").value_or(0), ctx.Rank(x), &axis));
  auto bound = [&](const char* p, int64_t dflt, int64_t* out) -> Status {
    if (call.IsNone(p)) {
      *out = dflt;
      return Status::Ok();
    }
    auto v = call.Int(p);
    if (!v) return Status::Unsupported(std::string(p) + " is not an int");
    *out = *v;
    return Status::Ok();
  };
  int64_t start, end, step;
  IVY_RETURN_IF_ERROR(bound("start", 0, &start));
  IVY_RETURN_IF_ERROR(bound("end", kMax, &end));
  IVY_RETURN_IF_ERROR(bound("step", 1, &step));
  if (step < 1) return Status::Unsupported("slice_copy with step < 1");
  // ONNX Slice clamps start/end into [0, n] after counting negatives from the end, as torch.
  ctx.Emit("Slice", {ctx.In(x), ctx.Int64s({start}), ctx.Int64s({end}), ctx.Int64s({axis}), ctx.Int64s({step})},
           {ctx.Out(result)});
  return Status::Ok();
}

// Tensor.sum_to_size(*size): the sum over the leading dims size lacks and over the dims where size
// is 1 (a ReduceSum over a dim that is already 1 changes nothing, so no recorded size is trusted).
// A size read from a shape (x.sum_to_size(y.shape)) is 1 or the dim's own size when the model
// runs: Where(size == 1, the sum broadcast back, x), then sliced to the size.
Status LowerSumToSize(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* size_arg = call.Get("size");
  auto items = size_arg ? SequenceItems(*size_arg) : std::nullopt;
  if (!items) return Status::Unsupported("sum_to_size without a list of sizes");
  const int rank = ctx.Rank(x);
  const int lead = rank - static_cast<int>(items->size());
  if (lead < 0) return Status::Unsupported("sum_to_size to more dims than the tensor has");
  std::string v = ctx.In(x);
  std::vector<int64_t> ones;
  std::string dyn;  // the sizes as 1-D int64, when one is read from a shape
  for (size_t i = 0; i < items->size(); ++i) {
    const v1::Arg& it = *(*items)[i];
    const int64_t axis = lead + static_cast<int64_t>(i);
    if (auto c = AsInt(it)) {
      if (*c == 1) ones.push_back(axis);
      continue;
    }
    if (it.kind_case() != v1::Arg::kTensor || ctx.DType(it.tensor().value()) != v1::SYM_INT) {
      return Status::Unsupported("sum_to_size size " + ArgToString(*size_arg, true));
    }
    if (dyn.empty()) IVY_RETURN_IF_ERROR(DynamicInts(ctx, *size_arg, &dyn));
    onnx::NodeProto* g = nullptr;
    const std::string target = ctx.EmitTemp("Gather", {dyn, I64(ctx, static_cast<int64_t>(i))}, &g);
    SetAttr(g, "axis", int64_t{0});
    onnx::NodeProto* r = nullptr;
    const std::string summed = ctx.EmitTemp("ReduceSum", {v, ctx.Int64s({axis})}, &r);
    SetAttr(r, "keepdims", int64_t{1});
    const std::string picked = ctx.EmitTemp("Where", {ctx.EmitTemp("Equal", {target, I64(ctx, 1)}),
                                                      ctx.EmitTemp("Expand", {summed, ctx.EmitTemp("Shape", {v})}), v});
    v = ctx.EmitTemp("Slice", {picked, ctx.Int64s({0}), ctx.Unsqueeze(target, {0}), ctx.Int64s({axis})});
  }
  if (!ones.empty()) {
    onnx::NodeProto* r = nullptr;
    v = ctx.EmitTemp("ReduceSum", {v, ctx.Int64s(ones)}, &r);
    SetAttr(r, "keepdims", int64_t{1});
  }
  if (lead > 0) {
    std::vector<int64_t> axes;
    for (int i = 0; i < lead; ++i) axes.push_back(i);
    onnx::NodeProto* r = nullptr;
    v = ctx.EmitTemp("ReduceSum", {v, ctx.Int64s(axes)}, &r);
    SetAttr(r, "keepdims", int64_t{0});
  }
  ctx.Emit("Identity", {v}, {ctx.Out(result)});
  return Status::Ok();
}

// torch.linspace(start, end, steps): ATen's kernel, a constant: step = (end - start) / (steps - 1)
// in the result's dtype (double for integer dtypes); the first half start + step * i, the second
// half end - step * (steps - 1 - i), converted to the result's dtype as C++ does (truncation).
Status LowerTorchLinspace(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* args = call.Get("args");
  auto items = args ? SequenceItems(*args) : std::nullopt;
  if (!items || items->size() != 3) return Status::Unsupported("linspace other than (start, end, steps) positionally");
  auto start = AsDouble(*(*items)[0]), end = AsDouble(*(*items)[1]);
  auto steps = AsInt(*(*items)[2]);
  if (!start || !end || !steps || HasTensor(*(*items)[0]) || HasTensor(*(*items)[1])) {
    return Status::Unsupported("linspace with tensor or non-number bounds");
  }
  if (*steps < 0 || *steps > (int64_t{1} << 24)) return Status::Unsupported("linspace steps out of range");
  const v1::DType d = ctx.DType(result);
  std::vector<Number> vals;
  const int64_t n = *steps, half = n / 2;
  if (d == v1::FLOAT32) {
    const float s = static_cast<float>(*start), e = static_cast<float>(*end);
    const float step = n > 1 ? (e - s) / static_cast<float>(n - 1) : 0.0f;
    for (int64_t i = 0; i < n; ++i) {
      volatile float prod = step * static_cast<float>(i < half ? i : n - 1 - i);  // no fused multiply-add
      vals.push_back(Number::Float(i < half ? s + prod : e - prod));
    }
    if (n == 1) vals[0] = Number::Float(s);
  } else if (d == v1::FLOAT64 || d == v1::INT64 || d == v1::INT32 || d == v1::INT16 || d == v1::INT8 || d == v1::UINT8) {
    // Integer dtypes: start and end converted to the dtype first, the step a double.
    double s = *start, e = *end;
    const bool integral = d != v1::FLOAT64;
    if (integral) {
      s = std::trunc(s);
      e = std::trunc(e);
    }
    const double step = n > 1 ? (e - s) / static_cast<double>(n - 1) : 0.0;
    for (int64_t i = 0; i < n; ++i) {
      volatile double prod = step * static_cast<double>(i < half ? i : n - 1 - i);
      double v = i < half ? s + prod : e - prod;
      if (n == 1) v = s;
      vals.push_back(integral ? Number::Int(static_cast<int64_t>(v)) : Number::Float(v));
    }
  } else {
    return Status::Unsupported(std::string("linspace in ") + DTypeName(d));
  }
  onnx::TensorProto t;
  t.set_data_type(OnnxElemType(d));
  t.add_dims(n);
  std::string raw;
  IVY_RETURN_IF_ERROR(EncodeNumbers(vals, d, &raw));
  t.set_raw_data(raw);
  ctx.Emit("Identity", {ctx.AddInitializer(std::move(t), "linspace")}, {ctx.Out(result)});
  return Status::Ok();
}

// --- writes -------------------------------------------------------------------------------------

// Tensor.copy_(src) (the tensor takes src broadcast to its shape, converted to its dtype),
// np.copyto(dst, src) (where=True only: normalize.cc refuses a mask) and ndarray.fill(value).
// torch.nn.init.constant_(tensor, val) is a fill too.
Status LowerCopy(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  const bool init = call.Has("tensor");
  IVY_RETURN_IF_ERROR(TensorParam(call, init ? "tensor" : "input", &x));
  IVY_RETURN_IF_ERROR(WrittenResult(node, call, ctx, &result));
  const v1::DType d = ctx.DType(x);
  IVY_RETURN_IF_ERROR(NeedNumeric(ctx, d));
  const bool fill = ctx.canonical() == "fill";
  const v1::Arg* src = call.Get(init ? "val" : fill ? "value" : "src");
  if (!src) return Status::Unsupported("copy without a source");
  call.Get("non_blocking");  // a device transfer hint
  call.Get("casting");       // checked by NumPy when the program ran
  std::string s;
  if (src->kind_case() == v1::Arg::kTensor) {
    const ValueId t = src->tensor().value();
    if (OnnxElemType(ctx.DType(t)) == 0) return Status::Unsupported(std::string("a copy from a ") + DTypeName(ctx.DType(t)) + " tensor");
    s = ctx.CastTo(ctx.In(t), ctx.DType(t) == v1::SYM_INT ? v1::INT64 : ctx.DType(t), d);
  } else {
    IVY_RETURN_IF_ERROR(ValuesOperand(ctx, *src, d, &s));
  }
  const std::string shape = ctx.EmitTemp("Shape", {ctx.In(x)});
  if (const v1::Arg* w = call.Get("where"); w && !IsNone(*w) && AsBool(*w) != true) {
    // np.copyto(..., where=mask): mask broadcast to dst; False keeps dst.
    if (w->kind_case() != v1::Arg::kTensor) return Status::Unsupported("copyto where= that is neither True nor an array");
    const ValueId m = w->tensor().value();
    const std::string mask = ctx.EmitTemp("Expand", {ctx.CastTo(ctx.In(m), ctx.DType(m), v1::BOOL), shape});
    EmitWhere(ctx, mask, ctx.EmitTemp("Expand", {s, shape}), ctx.In(x), d, ctx.Out(result));
    return Status::Ok();
  }
  ctx.Emit("Expand", {s, shape}, {ctx.Out(result)});
  return Status::Ok();
}

// torch.put / Tensor.put(_)(index, source, accumulate): input.flatten()[index] = source (negative
// indices from the end; accumulate adds, repeated indices included). np.put(a, ind, v, mode):
// a.flat[ind] = v, v repeated to len(ind); mode raise (negatives from the end), wrap, clip.
Status LowerPut(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(WrittenResult(node, call, ctx, &result));
  const v1::DType d = ctx.DType(x);
  IVY_RETURN_IF_ERROR(NeedNumeric(ctx, d));
  const bool numpy = call.Has("ind");
  const v1::Arg* ind = call.Get(numpy ? "ind" : "index");
  const v1::Arg* v = call.Get(numpy ? "v" : "source");
  if (!ind || !v) return Status::Unsupported("put without indices or values");
  std::string idx;
  IVY_RETURN_IF_ERROR(IndexOperand(ctx, *ind, &idx));
  idx = Flat(ctx, idx);
  std::string vals;
  IVY_RETURN_IF_ERROR(ValuesOperand(ctx, *v, d, &vals));
  vals = Flat(ctx, vals);
  const std::string in = ctx.In(x);
  const std::string n = ctx.EmitTemp("Size", {in});
  std::string mode = "raise";
  bool accumulate = false;
  if (numpy) {
    const v1::Arg* m = call.Get("mode");
    if (m && m->kind_case() == v1::Arg::kS) mode = m->s();
    if (mode != "raise" && mode != "wrap" && mode != "clip") return Status::Unsupported("np.put mode '" + mode + "'");
    // v repeated (or cut) to len(ind).
    const std::string k = ctx.EmitTemp("Size", {idx});
    const std::string pos = ctx.EmitTemp("Mod", {ctx.EmitTemp("Range", {I64(ctx, 0), k, I64(ctx, 1)}),
                                                 ctx.EmitTemp("Size", {vals})});
    vals = ctx.EmitTemp("Gather", {vals, pos});
  } else {
    auto acc = call.Bool("accumulate");
    if (!acc) return Status::Unsupported("accumulate is not a bool");
    accumulate = *acc;
  }
  if (mode == "raise") {
    idx = ctx.EmitTemp("Where", {ctx.EmitTemp("Less", {idx, I64(ctx, 0)}), ctx.EmitTemp("Add", {idx, n}), idx});
  } else if (mode == "wrap") {
    idx = ctx.EmitTemp("Mod", {idx, n});  // fmod=0: the divisor's sign, as Python's %
  } else {
    idx = ctx.EmitTemp("Max", {ctx.EmitTemp("Min", {idx, ctx.EmitTemp("Sub", {n, I64(ctx, 1)})}), I64(ctx, 0)});
  }
  auto* sc = ctx.Emit("ScatterND", {Flat(ctx, in), ctx.Unsqueeze(idx, {1}), vals}, {ctx.Temp("put")});
  if (accumulate) SetAttr(sc, "reduction", std::string("add"));
  ctx.Emit("Reshape", {sc->output(0), ctx.EmitTemp("Shape", {in})}, {ctx.Out(result)});
  return Status::Ok();
}

// index_put(_)(indices, values, accumulate): x[indices] = values (accumulate: +=). Integer index
// tensors for the leading dims (broadcast together), written with ScatterND (reduction add when
// accumulating, which sums repeated coordinates as torch does); or one bool mask of x's shape
// with a single value (Where).
Status LowerIndexPut(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(WrittenResult(node, call, ctx, &result));
  const v1::DType d = ctx.DType(x);
  IVY_RETURN_IF_ERROR(NeedNumeric(ctx, d));
  auto acc = call.Bool("accumulate");
  if (!acc) return Status::Unsupported("accumulate is not a bool");
  const v1::Arg* indices = call.Get("indices");
  const v1::Arg* values = call.Get("values");
  if (!indices || !values) return Status::Unsupported("index_put without indices or values");
  auto items = SequenceItems(*indices);
  if (!items || items->empty()) return Status::Unsupported("indices is not a list of tensors");
  std::string v;
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *values, d, &v));
  const std::string in = ctx.In(x);
  const int rank = ctx.Rank(x);
  for (const v1::Arg* it : *items) {
    if (it->kind_case() != v1::Arg::kTensor) return Status::Unsupported("an index that is not a tensor (None)");
  }
  if (items->size() == 1 && ctx.DType((*items)[0]->tensor().value()) == v1::BOOL) {
    const ValueId m = (*items)[0]->tensor().value();
    if (ctx.Shape(m) != ctx.Shape(x)) return Status::Unsupported("a bool mask of another shape than the tensor");
    if (values->kind_case() == v1::Arg::kTensor && ctx.Rank(values->tensor().value()) > 0) {
      // One value per True, in mask order.
      EmitMaskedPut(ctx, in, ctx.In(m), v, d, *acc, ctx.Out(result));
      return Status::Ok();
    }
    const std::string nv = *acc ? ctx.EmitTemp("Add", {in, v}) : v;
    EmitWhere(ctx, ctx.In(m), nv, in, d, ctx.Out(result));
    return Status::Ok();
  }
  if (static_cast<int>(items->size()) > rank) return Status::Unsupported("more indices than dims");
  std::vector<std::string> idx;
  for (const v1::Arg* it : *items) {
    std::string i;
    IVY_RETURN_IF_ERROR(IndexOperand(ctx, *it, &i));
    idx.push_back(i);
  }
  std::string sum = idx[0];
  for (size_t i = 1; i < idx.size(); ++i) sum = ctx.EmitTemp("Add", {sum, idx[i]});
  const std::string bshape = ctx.EmitTemp("Shape", {sum});
  const std::string shape_x = ctx.EmitTemp("Shape", {in});
  std::vector<std::string> parts;
  for (size_t k = 0; k < idx.size(); ++k) {
    // Negative indices count from the end of their dim.
    const std::string n = DimAt(ctx, in, static_cast<int64_t>(k));
    const std::string i = ctx.EmitTemp("Expand", {idx[k], bshape});
    const std::string w = ctx.EmitTemp("Where", {ctx.EmitTemp("Less", {i, I64(ctx, 0)}), ctx.EmitTemp("Add", {i, n}), i});
    parts.push_back(ctx.Unsqueeze(w, {-1}));
  }
  std::string coords = parts[0];
  if (parts.size() > 1) {
    onnx::NodeProto* c = nullptr;
    coords = ctx.EmitTemp("Concat", parts, &c);
    SetAttr(c, "axis", int64_t{-1});
  }
  std::string ushape = bshape;
  if (static_cast<int>(items->size()) < rank) {
    const std::string rest = ctx.EmitTemp("Slice", {shape_x, ctx.Int64s({static_cast<int64_t>(items->size())}), ctx.Int64s({kMax})});
    onnx::NodeProto* c = nullptr;
    ushape = ctx.EmitTemp("Concat", {bshape, rest}, &c);
    SetAttr(c, "axis", int64_t{0});
  }
  // Repeated coordinates without accumulate: torch keeps one of the writes, undefined which.
  auto* sc = ctx.Emit("ScatterND", {in, coords, ctx.EmitTemp("Expand", {v, ushape})}, {ctx.Out(result)});
  if (*acc) SetAttr(sc, "reduction", std::string("add"));
  return Status::Ok();
}

// in[mask] = values (or += with accumulate), mask a bool of in's shape, values read in mask order:
// the k-th True takes values.flatten()[k] (a one-item values broadcasts), k from a CumSum of the
// mask. Shared with x[mask] = tensor (LowerSetitem).
void EmitMaskedPut(LoweringContext& ctx, const std::string& in, const std::string& mask, const std::string& values,
                   v1::DType d, bool accumulate, const std::string& out) {
  const std::string vf = Flat(ctx, values);
  const std::string mf = Flat(ctx, mask);
  std::string pos = ctx.EmitTemp("Sub", {ctx.EmitTemp("CumSum", {ctx.CastTo(mf, v1::BOOL, v1::INT64), I64(ctx, 0)}), I64(ctx, 1)});
  pos = ctx.EmitTemp("Max", {pos, I64(ctx, 0)});
  pos = ctx.EmitTemp("Min", {pos, ctx.EmitTemp("Sub", {ctx.EmitTemp("Size", {vf}), I64(ctx, 1)})});
  std::string picked = ctx.EmitTemp("Reshape", {ctx.EmitTemp("Gather", {vf, pos}), ctx.EmitTemp("Shape", {in})});
  if (accumulate) picked = ctx.EmitTemp("Add", {in, picked});
  EmitWhere(ctx, mask, picked, in, d, out);
}

// masked_scatter(_)(mask, source): the positions where mask (broadcast to the tensor) is True
// take source's elements in order: the k-th True takes source.flatten()[k], k from a CumSum of
// the mask. np.place(arr, mask, vals): the same with vals repeated; np.putmask(a, mask, values):
// a[i] = values.flat[i % len(values)] at each flat position i where mask is True.
Status LowerMaskedScatter(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, mask, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "mask", &mask));
  IVY_RETURN_IF_ERROR(WrittenResult(node, call, ctx, &result));
  const v1::DType d = ctx.DType(x);
  IVY_RETURN_IF_ERROR(NeedNumeric(ctx, d));
  const std::string& c = ctx.canonical();
  const char* sp = c == "place" ? "vals" : c == "putmask" ? "values" : "source";
  const v1::Arg* src = call.Get(sp);
  if (!src) return Status::Unsupported(std::string("missing ") + sp);
  std::string s;
  IVY_RETURN_IF_ERROR(ValuesOperand(ctx, *src, d, &s));
  s = Flat(ctx, s);
  const std::string in = ctx.In(x);
  const std::string shape = ctx.EmitTemp("Shape", {in});
  std::string m = ctx.In(mask);
  if (ctx.DType(mask) != v1::BOOL) m = ctx.CastTo(m, ctx.DType(mask), v1::BOOL);
  if (c == "masked_scatter") m = ctx.EmitTemp("Expand", {m, shape});
  else if (ctx.Shape(mask) != ctx.Shape(x)) return Status::Unsupported(c + " with a mask of another shape than the array");
  const std::string mf = Flat(ctx, m);
  std::string pos;
  if (c == "putmask") {
    pos = ctx.EmitTemp("Range", {I64(ctx, 0), ctx.EmitTemp("Size", {mf}), I64(ctx, 1)});
  } else {
    // 0 before the first True (read nowhere), then the count of Trues before each one.
    pos = ctx.EmitTemp("Sub", {ctx.EmitTemp("CumSum", {ctx.CastTo(mf, v1::BOOL, v1::INT64), I64(ctx, 0)}), I64(ctx, 1)});
    pos = ctx.EmitTemp("Max", {pos, I64(ctx, 0)});
  }
  if (c != "masked_scatter") {
    pos = ctx.EmitTemp("Mod", {pos, ctx.EmitTemp("Size", {s})});
  } else {
    // Positions past the source's end are where the mask is False (torch checks the source has
    // enough elements): clamped so the Gather reads in bounds.
    pos = ctx.EmitTemp("Min", {pos, ctx.EmitTemp("Sub", {ctx.EmitTemp("Size", {s}), I64(ctx, 1)})});
  }
  const std::string picked = ctx.EmitTemp("Reshape", {ctx.EmitTemp("Gather", {s, pos}), shape});
  EmitWhere(ctx, m, picked, in, d, ctx.Out(result));
  return Status::Ok();
}

namespace {

// ScatterElements of `updates` into `base` along `axis` (reduction "none", "add" or "mul").
std::string Scatter(LoweringContext& ctx, const std::string& base, const std::string& idx, const std::string& updates,
                    int64_t axis, const char* reduction) {
  onnx::NodeProto* n = nullptr;
  const std::string out = ctx.EmitTemp("ScatterElements", {base, idx, updates}, &n);
  SetAttr(n, "axis", axis);
  if (std::string(reduction) != "none") SetAttr(n, "reduction", std::string(reduction));
  return out;
}

// The reduction of scatter_reduce / index_reduce: `idx` and `src` of one shape (positions along
// `axis` of x). sum and prod scatter with reduction add / mul; mean divides the sum by the count
// (1 for x's own value when include_self); amax/amin compare every updated position with every
// source element along the axis (a one-hot [.., n, .., m] mask; ScatterElements max/min is
// opset 18). include_self=False: the positions written start from the reduction's identity.
Status EmitScatterReduce(LoweringContext& ctx, const std::string& x, const std::string& idx, const std::string& src,
                         int64_t axis, int rank, const std::string& reduce, bool include_self, v1::DType d,
                         const std::string& out) {
  auto touched_base = [&](double identity) {
    // x with the written positions set to `identity`.
    const std::string fill = ctx.EmitTemp("Expand", {ctx.Scalar(IsFloating(d) ? Number::Float(identity) : Number::Int(static_cast<int64_t>(identity)), d),
                                                     ctx.EmitTemp("Shape", {idx})});
    return Scatter(ctx, x, idx, fill, axis, "none");
  };
  if (reduce == "sum" || reduce == "prod") {
    const bool sum = reduce == "sum";
    const std::string base = include_self ? x : touched_base(sum ? 0.0 : 1.0);
    ctx.Emit("Identity", {Scatter(ctx, base, idx, src, axis, sum ? "add" : "mul")}, {out});
    return Status::Ok();
  }
  if (reduce == "mean") {
    if (!IsFloating(d)) return Status::Unsupported("scatter/index reduce 'mean' of an integer tensor (a floor division)");
    const std::string base = include_self ? x : touched_base(0.0);
    const std::string total = Scatter(ctx, base, idx, src, axis, "add");
    const std::string ones = ctx.EmitTemp("Expand", {ctx.Scalar(Number::Float(1.0), d), ctx.EmitTemp("Shape", {idx})});
    const std::string start = ctx.EmitTemp("Expand", {ctx.Scalar(Number::Float(include_self ? 1.0 : 0.0), d),
                                                      ctx.EmitTemp("Shape", {x})});
    const std::string count = Scatter(ctx, start, idx, ones, axis, "add");
    // Untouched positions without include_self keep x (count 0): divide by max(count, 1).
    const std::string safe = ctx.EmitTemp("Max", {count, ctx.Scalar(Number::Float(1.0), d)});
    const std::string mean = ctx.EmitTemp("Div", {total, safe});
    ctx.Emit("Where", {ctx.EmitTemp("Equal", {count, ctx.Scalar(Number::Float(0.0), d)}), x, mean}, {out});
    return Status::Ok();
  }
  if (reduce == "amax" || reduce == "amin") {
    const bool is_max = reduce == "amax";
    // With the axis moved last (x [..., n], idx and src [..., m]): hit[..., p, j] = idx[..., j] == p
    // for each position p of x's axis; the reduction of src over the hits of p is p's new value.
    // idx's other dims may be smaller than x's (torch requires index.size(d) <= x.size(d)): the
    // box of x they cover is reduced, the rest of x is kept.
    std::vector<int64_t> perm;
    for (int i = 0; i < rank; ++i) if (i != axis) perm.push_back(i);
    perm.push_back(axis);
    std::vector<int64_t> inv(rank);
    for (int i = 0; i < rank; ++i) inv[perm[i]] = i;
    auto tr = [&](const std::string& v, const std::vector<int64_t>& p) {
      onnx::NodeProto* t = nullptr;
      const std::string o = ctx.EmitTemp("Transpose", {v}, &t);
      SetAttr(t, "perm", p);
      return o;
    };
    const std::string xt = tr(x, perm), it = tr(idx, perm), st = tr(src, perm);
    // x cut to idx's shape on the other dims (the box the reduction can touch).
    const std::string ishape = ctx.EmitTemp("Shape", {it});
    const std::string xshape = ctx.EmitTemp("Shape", {xt});
    std::vector<int64_t> lead_axes;
    for (int i = 0; i < rank - 1; ++i) lead_axes.push_back(i);
    std::string box = xt;
    if (rank > 1) {
      box = ctx.EmitTemp("Slice", {xt, ctx.Int64s(std::vector<int64_t>(rank - 1, 0)),
                                   ctx.EmitTemp("Slice", {ishape, ctx.Int64s({0}), ctx.Int64s({rank - 1})}),
                                   ctx.Int64s(lead_axes)});
    }
    const std::string n = DimAt(ctx, xt, rank - 1);
    const std::string p = ctx.EmitTemp("Range", {I64(ctx, 0), n, I64(ctx, 1)});               // [n]
    const std::string hit = ctx.EmitTemp("Equal", {ctx.Unsqueeze(it, {rank - 1}), ctx.Unsqueeze(p, {1})});  // [..., n, m]
    const double far = is_max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    std::string far_v;
    if (IsFloating(d)) {
      far_v = ctx.Scalar(Number::Float(far), d);
    } else if (d == v1::INT64) {
      far_v = ctx.Scalar(Number::Int(is_max ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max()), d);
    } else if (d == v1::INT32) {
      far_v = ctx.Scalar(Number::Int(is_max ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int32_t>::max()), d);
    } else {
      return Status::Unsupported(std::string("scatter amax/amin of a ") + DTypeName(d) + " tensor");
    }
    const std::string cand = ctx.EmitTemp("Where", {hit, ctx.Unsqueeze(st, {rank - 1}), far_v});  // [..., n, m]
    onnx::NodeProto* r = nullptr;
    std::string red = ctx.EmitTemp(is_max ? "ReduceMax" : "ReduceMin", {cand}, &r);
    SetAttr(r, "axes", std::vector<int64_t>{rank});
    SetAttr(r, "keepdims", int64_t{0});
    // NaN: torch's max/min propagate it; ReduceMax may not, so a NaN among the hits is put back.
    if (IsFloating(d)) {
      onnx::NodeProto* r2 = nullptr;
      const std::string nan_hit = ctx.EmitTemp("ReduceMax", {ctx.CastTo(ctx.EmitTemp("And", {hit, ctx.EmitTemp("IsNaN", {ctx.Unsqueeze(st, {rank - 1})})}), v1::BOOL, v1::INT32)}, &r2);
      SetAttr(r2, "axes", std::vector<int64_t>{rank});
      SetAttr(r2, "keepdims", int64_t{0});
      red = ctx.EmitTemp("Where", {ctx.CastTo(nan_hit, v1::INT32, v1::BOOL), ctx.Scalar(Number::Float(std::nan("")), d), red});
    }
    onnx::NodeProto* r3 = nullptr;
    const std::string any = ctx.EmitTemp("ReduceMax", {ctx.CastTo(hit, v1::BOOL, v1::INT32)}, &r3);
    SetAttr(r3, "axes", std::vector<int64_t>{rank});
    SetAttr(r3, "keepdims", int64_t{0});
    const std::string any_b = ctx.CastTo(any, v1::INT32, v1::BOOL);
    std::string merged = red;
    if (include_self) {
      // max(x, red) with NaN from either side, as torch.
      std::string both = ctx.EmitTemp(is_max ? "Max" : "Min", {box, red});
      if (IsFloating(d)) {
        both = ctx.EmitTemp("Where", {ctx.EmitTemp("IsNaN", {box}), box, both});
        both = ctx.EmitTemp("Where", {ctx.EmitTemp("IsNaN", {red}), red, both});
      }
      merged = both;
    }
    const std::string new_box = ctx.EmitTemp("Where", {any_b, merged, box});
    // Put the box back into x: pad with x's values beyond the box on the leading dims.
    std::string full = new_box;
    if (rank > 1) {
      // Where(position inside the box, box padded with zeros, x).
      const std::string pad_end = ctx.EmitTemp("Sub", {xshape, ctx.EmitTemp("Shape", {new_box})});
      onnx::NodeProto* c = nullptr;
      const std::string pads = ctx.EmitTemp("Concat", {ctx.Int64s(std::vector<int64_t>(rank, 0)), pad_end}, &c);
      SetAttr(c, "axis", int64_t{0});
      const std::string padded = ctx.EmitTemp("Pad", {new_box, pads});
      const std::string inside = ctx.EmitTemp("Pad", {ctx.EmitTemp("Expand", {ctx.Scalar(Number::Int(1), v1::INT32), ctx.EmitTemp("Shape", {new_box})}), pads});
      full = ctx.EmitTemp("Where", {ctx.CastTo(inside, v1::INT32, v1::BOOL), padded, xt});
    }
    auto* back = ctx.Emit("Transpose", {full}, {out});
    SetAttr(back, "perm", inv);
    return Status::Ok();
  }
  return Status::Unsupported("reduce '" + reduce + "'");
}

}  // namespace

// scatter_reduce(_)(dim, index, src, reduce, include_self): sum, prod, mean, amax, amin.
Status LowerScatterReduce(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, index, src, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "index", &index));
  IVY_RETURN_IF_ERROR(TensorParam(call, "src", &src));
  IVY_RETURN_IF_ERROR(WrittenResult(node, call, ctx, &result));
  const v1::DType d = ctx.DType(x);
  IVY_RETURN_IF_ERROR(NeedNumeric(ctx, d));
  const int rank = ctx.Rank(x);
  if (rank == 0 || ctx.Rank(index) != rank || ctx.Rank(src) != rank) {
    return Status::Unsupported("scatter_reduce of a 0-d tensor or with an index or src of another rank");
  }
  int64_t axis;
  auto dim = call.Int("dim");
  if (!dim) return Status::Unsupported("dim is not an int");
  IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, rank, &axis));
  const v1::Arg* r = call.Get("reduce");
  if (!r || r->kind_case() != v1::Arg::kS) return Status::Unsupported("reduce is not a string");
  auto include_self = call.Bool("include_self");
  if (!include_self) return Status::Unsupported("include_self is not a bool");
  std::string idx;
  IVY_RETURN_IF_ERROR(IndexOperand(ctx, *call.Get("index"), &idx));
  // Negative indices count from the end of the dim, as torch's scatter does.
  const std::string n = DimAt(ctx, ctx.In(x), axis);
  idx = ctx.EmitTemp("Where", {ctx.EmitTemp("Less", {idx, I64(ctx, 0)}), ctx.EmitTemp("Add", {idx, n}), idx});
  // torch reads the part of src that index covers.
  std::vector<int64_t> zeros(rank, 0), axes(rank);
  for (int i = 0; i < rank; ++i) axes[i] = i;
  const std::string s = ctx.EmitTemp("Slice", {ctx.CastTo(ctx.In(src), ctx.DType(src), d), ctx.Int64s(zeros),
                                               ctx.EmitTemp("Shape", {idx}), ctx.Int64s(axes)});
  return EmitScatterReduce(ctx, ctx.In(x), idx, s, axis, rank, r->s(), *include_self, d, ctx.Out(result));
}

// index_reduce(_)(dim, index, source, reduce, include_self): source's slice k along dim reduced
// into x's slice index[k]; prod, mean, amax, amin, as scatter_reduce with the index expanded.
Status LowerIndexReduce(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, index, src, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "index", &index));
  IVY_RETURN_IF_ERROR(TensorParam(call, "source", &src));
  IVY_RETURN_IF_ERROR(WrittenResult(node, call, ctx, &result));
  const v1::DType d = ctx.DType(x);
  IVY_RETURN_IF_ERROR(NeedNumeric(ctx, d));
  const int rank = ctx.Rank(x);
  if (rank == 0 || ctx.Rank(src) != rank || ctx.Rank(index) != 1) {
    return Status::Unsupported("index_reduce of a 0-d tensor, a source of another rank or an index that is not 1-D");
  }
  int64_t axis;
  auto dim = call.Int("dim");
  if (!dim) return Status::Unsupported("dim is not an int");
  IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, rank, &axis));
  const v1::Arg* r = call.Get("reduce");
  if (!r || r->kind_case() != v1::Arg::kS) return Status::Unsupported("reduce is not a string");
  auto include_self = call.Bool("include_self");
  if (!include_self) return Status::Unsupported("include_self is not a bool");
  std::string idx;
  IVY_RETURN_IF_ERROR(IndexOperand(ctx, *call.Get("index"), &idx));
  const std::string n = DimAt(ctx, ctx.In(x), axis);
  idx = ctx.EmitTemp("Where", {ctx.EmitTemp("Less", {idx, I64(ctx, 0)}), ctx.EmitTemp("Add", {idx, n}), idx});
  std::vector<int64_t> shape(rank, 1);
  shape[axis] = -1;
  const std::string s = ctx.CastTo(ctx.In(src), ctx.DType(src), d);
  idx = ctx.EmitTemp("Expand", {ctx.EmitTemp("Reshape", {idx, ctx.Int64s(shape)}), ctx.EmitTemp("Shape", {s})});
  return EmitScatterReduce(ctx, ctx.In(x), idx, s, axis, rank, r->s(), *include_self, d, ctx.Out(result));
}

// fill_diagonal_(fill_value, wrap) and np.fill_diagonal(a, val, wrap): 2-D, the flat positions
// k * (cols + 1) (below row cols only with wrap); more dims (all of one size), the positions whose
// indices are all equal.
Status LowerFillDiagonal(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(WrittenResult(node, call, ctx, &result));
  const v1::DType d = ctx.DType(x);
  IVY_RETURN_IF_ERROR(NeedNumeric(ctx, d));
  const v1::Arg* val = call.Get(call.Has("fill_value") ? "fill_value" : "val");
  if (!val) return Status::Unsupported("fill_diagonal without a value");
  if (val->kind_case() == v1::Arg::kTensor && ctx.Rank(val->tensor().value()) > 0) {
    return Status::Unsupported("fill_diagonal with an array of values (repeated along the diagonal)");
  }
  if (val->kind_case() == v1::Arg::kList || val->kind_case() == v1::Arg::kTuple) {
    return Status::Unsupported("fill_diagonal with a list of values (repeated along the diagonal)");
  }
  std::string v;
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *val, d, &v));
  auto wrap = call.Bool("wrap");
  if (!wrap) return Status::Unsupported("wrap is not a bool");
  const int rank = ctx.Rank(x);
  if (rank < 2) return Status::Unsupported("fill_diagonal of a tensor of fewer than 2 dims");
  const std::string in = ctx.In(x);
  std::string mask;
  if (rank == 2) {
    const std::string rows = DimAt(ctx, in, 0), cols = DimAt(ctx, in, 1);
    const std::string f = ctx.EmitTemp("Range", {I64(ctx, 0), ctx.EmitTemp("Mul", {rows, cols}), I64(ctx, 1)});
    const std::string step = ctx.EmitTemp("Add", {cols, I64(ctx, 1)});
    mask = ctx.EmitTemp("Equal", {ctx.EmitTemp("Mod", {f, step}), I64(ctx, 0)});
    if (!*wrap) {
      // Rows below `cols` hold no diagonal item without wrap (NumPy: end = cols * cols; torch the same).
      mask = ctx.EmitTemp("And", {mask, ctx.EmitTemp("Less", {f, ctx.EmitTemp("Mul", {cols, cols})})});
    }
    mask = ctx.EmitTemp("Reshape", {mask, ctx.EmitTemp("Shape", {in})});
  } else {
    std::vector<std::string> pos;
    for (int k = 0; k < rank; ++k) {
      std::vector<int64_t> shape(rank, 1);
      shape[k] = -1;
      pos.push_back(ctx.EmitTemp("Reshape", {ctx.EmitTemp("Range", {I64(ctx, 0), DimAt(ctx, in, k), I64(ctx, 1)}), ctx.Int64s(shape)}));
    }
    mask = ctx.EmitTemp("Equal", {pos[1], pos[0]});
    for (int k = 2; k < rank; ++k) mask = ctx.EmitTemp("And", {mask, ctx.EmitTemp("Equal", {pos[k], pos[0]})});
    mask = ctx.EmitTemp("Expand", {mask, ctx.EmitTemp("Shape", {in})});
  }
  EmitWhere(ctx, mask, v, in, d, ctx.Out(result));
  return Status::Ok();
}

// diagonal_scatter(input, src, offset, dim1, dim2): input with its diagonal (offset, dim1, dim2)
// replaced by src (whose last dim runs along the diagonal). With dim1 and dim2 moved last, item
// (i, j) is on the diagonal when j - i == offset, and takes src[..., offset >= 0 ? i : j].
Status LowerDiagonalScatter(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, src, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "src", &src));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(x);
  IVY_RETURN_IF_ERROR(NeedNumeric(ctx, d));
  const int rank = ctx.Rank(x);
  if (rank < 2 || ctx.Rank(src) != rank - 1) return Status::Unsupported("diagonal_scatter of fewer than 2 dims");
  auto offset = call.Int("offset"), dim1 = call.Int("dim1"), dim2 = call.Int("dim2");
  if (!offset || !dim1 || !dim2) return Status::Unsupported("offset, dim1 or dim2 is not an int");
  int64_t a1, a2;
  IVY_RETURN_IF_ERROR(NormalizeAxis(*dim1, rank, &a1));
  IVY_RETURN_IF_ERROR(NormalizeAxis(*dim2, rank, &a2));
  if (a1 == a2) return Status::Unsupported("diagonal_scatter with dim1 == dim2");
  std::vector<int64_t> perm;
  for (int i = 0; i < rank; ++i) if (i != a1 && i != a2) perm.push_back(i);
  perm.push_back(a1);
  perm.push_back(a2);
  std::vector<int64_t> inv(rank);
  for (int i = 0; i < rank; ++i) inv[perm[i]] = i;
  onnx::NodeProto* t = nullptr;
  const std::string xt = ctx.EmitTemp("Transpose", {ctx.In(x)}, &t);
  SetAttr(t, "perm", perm);
  const std::string s = ctx.CastTo(ctx.In(src), ctx.DType(src), d);
  const std::string rows = DimAt(ctx, xt, rank - 2), cols = DimAt(ctx, xt, rank - 1);
  const std::string i = ctx.Unsqueeze(ctx.EmitTemp("Range", {I64(ctx, 0), rows, I64(ctx, 1)}), {1});  // [n, 1]
  const std::string j = ctx.EmitTemp("Range", {I64(ctx, 0), cols, I64(ctx, 1)});                      // [m]
  const std::string diff = ctx.EmitTemp("Sub", {j, i});                                                // [n, m]
  const std::string on = ctx.EmitTemp("Equal", {diff, I64(ctx, *offset)});
  const std::string k = ctx.EmitTemp("Add", {*offset >= 0 ? i : j, ctx.EmitTemp("Mul", {diff, I64(ctx, 0)})});
  const std::string len = DimAt(ctx, s, rank - 2);
  const std::string kc = ctx.EmitTemp("Max", {ctx.EmitTemp("Min", {k, ctx.EmitTemp("Sub", {len, I64(ctx, 1)})}), I64(ctx, 0)});
  onnx::NodeProto* g = nullptr;
  const std::string picked = ctx.EmitTemp("Gather", {s, kc}, &g);  // [..., n, m]
  SetAttr(g, "axis", int64_t{rank - 2});
  const std::string mixed = ctx.Temp("diag");
  EmitWhere(ctx, on, picked, xt, d, mixed);
  auto* back = ctx.Emit("Transpose", {mixed}, {ctx.Out(result)});
  SetAttr(back, "perm", inv);
  return Status::Ok();
}

}  // namespace onnx_export
}  // namespace ivytrace
