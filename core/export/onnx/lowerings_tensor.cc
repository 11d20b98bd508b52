// Shape and indexing lowerings (flatten, reshape, transpose, permute, concat, getitem) and
// reductions (sum, mean).
#include <algorithm>
#include <numeric>
#include <limits>
#include <map>

#include "core/export/onnx/lowerings.h"
#include "core/ir/arg.h"

namespace ivytrace {
namespace onnx_export {

namespace {

constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();

void EmitReshape(LoweringContext& ctx, const std::string& in, std::vector<int64_t> shape, bool allow_zero,
                 const std::string& out) {
  auto* n = ctx.Emit("Reshape", {in, ctx.Int64s(shape)}, {out});
  if (allow_zero) SetAttr(n, "allowzero", int64_t{1});
}

void EmitTranspose(LoweringContext& ctx, const std::string& in, const std::vector<int64_t>& perm,
                   const std::string& out) {
  auto* n = ctx.Emit("Transpose", {in}, {out});
  SetAttr(n, "perm", perm);
}

// The reshape's target as a constant ONNX shape, when every size the program read from a shape is
// the same dim of the reshaped tensor at the same position (`x.view(b, t, h, d)` of an x of shape
// (b, t, c), with b, t = x.shape[:2]): ONNX's 0 copies that dim. Nothing else may be 0 then (with
// allowzero off, a 0 means "copy"), so a literal 0 or any other symbolic size gives nullopt.
std::optional<std::vector<int64_t>> CopiedDimsShape(LoweringContext& ctx, const v1::Arg& shape, ValueId x) {
  const auto seq = SequenceItems(shape);
  if (!seq) return std::nullopt;
  const std::vector<const v1::Arg*>& items = *seq;
  const Graph& g = ctx.graph();
  const int rank = ctx.Rank(x);
  std::vector<int64_t> out;
  for (size_t pos = 0; pos < items.size(); ++pos) {
    const v1::Arg& it = *items[pos];
    if (it.kind_case() != v1::Arg::kTensor) {
      const auto i = AsInt(it);
      if (!i || *i == 0 || *i < -1) return std::nullopt;
      out.push_back(*i);
      continue;
    }
    const Value& v = g.values[it.tensor().value()];
    if (v.kind != v1::NODE_OUTPUT || v.producer < 0) return std::nullopt;
    const Node& p = g.nodes[v.producer];
    if (p.op != "ivytrace.sym.size" || p.inputs.empty() || p.inputs[0] != x) return std::nullopt;
    const v1::Arg* dim = p.args.size() > 1 ? &p.args[1] : nullptr;
    for (const auto& kw : p.kwargs) {
      if (kw.name() == "dim") dim = &kw.value();
    }
    if (!dim || dim->kind_case() != v1::Arg::kI) return std::nullopt;
    const int64_t d = dim->i() < 0 ? dim->i() + rank : dim->i();
    if (d != static_cast<int64_t>(pos)) return std::nullopt;
    out.push_back(0);
  }
  if (std::count(out.begin(), out.end(), -1) > 1) return std::nullopt;
  return out;
}

}  // namespace

Status LowerFlatten(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const auto& shape = ctx.Shape(x);
  const int rank = static_cast<int>(shape.size());
  if (rank == 0) {
    EmitReshape(ctx, ctx.In(x), {1}, false, ctx.Out(result));
    return Status::Ok();
  }
  int64_t start, end;
  IVY_RETURN_IF_ERROR(NormalizeAxis(call.Int("start_dim").value_or(0), rank, &start));
  IVY_RETURN_IF_ERROR(NormalizeAxis(call.Int("end_dim").value_or(-1), rank, &end));
  if (start > end) return Status::Unsupported("flatten with start_dim after end_dim");
  if (start == end) {
    ctx.Emit("Identity", {ctx.In(x)}, {ctx.Out(result)});
    return Status::Ok();
  }
  if (start == 1 && end == rank - 1) {  // ONNX Flatten always makes a 2-D result
    auto* n = ctx.Emit("Flatten", {ctx.In(x)}, {ctx.Out(result)});
    SetAttr(n, "axis", int64_t{1});
    return Status::Ok();
  }
  // Leading dims are copied (0), the flattened run is inferred (-1), trailing dims are read from
  // the input's run-time shape (one of them may be dynamic).
  std::vector<int64_t> target(static_cast<size_t>(start), 0);
  target.push_back(-1);
  if (end + 1 >= rank) {
    EmitReshape(ctx, ctx.In(x), target, false, ctx.Out(result));
    return Status::Ok();
  }
  std::string trailing = ctx.EmitTemp("Slice", {ctx.EmitTemp("Shape", {ctx.In(x)}), ctx.Int64s({end + 1}),
                                                ctx.Int64s({rank})});
  onnx::NodeProto* c = nullptr;
  std::string shape_in = ctx.EmitTemp("Concat", {ctx.Int64s(target), trailing}, &c);
  SetAttr(c, "axis", int64_t{0});
  ctx.Emit("Reshape", {ctx.In(x), shape_in}, {ctx.Out(result)});
  return Status::Ok();
}

Status LowerReshape(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (const v1::Arg* order = call.Get("order"); order && order->kind_case() == v1::Arg::kS && order->s() != "C") {
    return Status::Unsupported("reshape in order '" + order->s() + "' (ONNX Reshape reads and writes in C order)");
  }
  if (auto other = call.Tensor("other")) {   // view_as / reshape_as: the other tensor's run-time shape
    ctx.Emit("Reshape", {ctx.In(x), ctx.EmitTemp("Shape", {ctx.In(*other)})}, {ctx.Out(result)});
    return Status::Ok();
  }
  const v1::Arg* s = call.Get("shape");
  // No shape at all is not "reshape to a 0-d": refused rather than a Reshape to [] (which made
  // reshape_as a 0-d value, or a Reshape that fails in shape inference).
  if (!s) return Status::Unsupported("reshape without a shape");
  if (IsSymbolicArg(ctx, *s)) {
    if (auto copied = CopiedDimsShape(ctx, *s, x)) {
      EmitReshape(ctx, ctx.In(x), *copied, false, ctx.Out(result));
      return Status::Ok();
    }
    // view(b, t, -1): the sizes the program read from shapes are computed from the inputs. A
    // computed 0 means an empty dim, as in torch (allowzero), not "copy".
    std::string shape;
    IVY_RETURN_IF_ERROR(DynamicInts(ctx, *s, &shape));
    auto* n = ctx.Emit("Reshape", {ctx.In(x), shape}, {ctx.Out(result)});
    if (ctx.opset() >= 14) SetAttr(n, "allowzero", int64_t{1});
    return Status::Ok();
  }
  auto target = AsIntList(*s);
  if (!target) return Status::Unsupported("shape " + ArgToString(*s, true) + " is not a list of ints");
  const auto& in_shape = ctx.Shape(x);
  const bool has_zero = std::count(target->begin(), target->end(), 0) > 0;
  const bool has_infer = std::count(target->begin(), target->end(), -1) > 0;
  if (has_zero) {  // a zero-size dim: ONNX needs allowzero, and then 0 cannot mean "copy"
    if (ctx.opset() < 14) return Status::Unsupported("reshape to a zero-size dimension needs opset 14");
    EmitReshape(ctx, ctx.In(x), *target, true, ctx.Out(result));
    return Status::Ok();
  }
  // The target's ints are the program's own literals: a size it read from a shape is symbolic
  // (above) or guarded, so no recorded size is mistaken for the batch here.
  (void)in_shape;
  (void)has_infer;
  EmitReshape(ctx, ctx.In(x), *target, false, ctx.Out(result));
  return Status::Ok();
}

Status LowerTranspose(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const int rank = ctx.Rank(x);
  int64_t d0 = 0, d1 = 1;
  if (call.Has("dim0")) {
    auto a = call.Int("dim0"), b = call.Int("dim1");
    if (!a || !b) return Status::Unsupported("transpose dims are not ints");
    if (rank == 0) {
      ctx.Emit("Identity", {ctx.In(x)}, {ctx.Out(result)});
      return Status::Ok();
    }
    IVY_RETURN_IF_ERROR(NormalizeAxis(*a, rank, &d0));
    IVY_RETURN_IF_ERROR(NormalizeAxis(*b, rank, &d1));
  } else if (rank > 2) {
    return Status::Unsupported("t() of a tensor of rank " + std::to_string(rank));
  }
  if (rank < 2 || d0 == d1) {
    ctx.Emit("Identity", {ctx.In(x)}, {ctx.Out(result)});
    return Status::Ok();
  }
  std::vector<int64_t> perm(rank);
  for (int i = 0; i < rank; ++i) perm[i] = i;
  std::swap(perm[d0], perm[d1]);
  EmitTranspose(ctx, ctx.In(x), perm, ctx.Out(result));
  return Status::Ok();
}

Status LowerPermute(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  auto dims = call.IntList("dims");
  const int rank = ctx.Rank(x);
  if (call.IsNone("dims")) {  // np.transpose(a) / a.T: reverse the axes
    dims = std::vector<int64_t>(rank);
    for (int i = 0; i < rank; ++i) (*dims)[i] = rank - 1 - i;
  }
  if (!dims || static_cast<int>(dims->size()) != rank) {
    return Status::Unsupported("permute dims do not list the " + std::to_string(rank) + " dims of the input");
  }
  for (auto& d : *dims) IVY_RETURN_IF_ERROR(NormalizeAxis(d, rank, &d));
  EmitTranspose(ctx, ctx.In(x), *dims, ctx.Out(result));
  return Status::Ok();
}

Status LowerConcat(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* tensors = call.Get("tensors");
  const v1::ArgList* items = nullptr;
  if (tensors && tensors->kind_case() == v1::Arg::kList) items = &tensors->list();
  if (tensors && tensors->kind_case() == v1::Arg::kTuple) items = &tensors->tuple();
  if (!items || items->items_size() == 0) return Status::Unsupported("concat of something that is not a list of tensors");
  const int rank = ctx.Rank(result);
  int64_t axis;
  // np.concatenate(arrays, axis=None): the arrays flattened, one after the other.
  if (node.op == "numpy.concatenate" && call.Has("dim") && call.IsNone("dim")) {
    std::vector<std::string> flat;
    for (const auto& it : items->items()) {
      if (it.kind_case() != v1::Arg::kTensor) return Status::Unsupported("concat of a non-tensor item");
      const ValueId v = it.tensor().value();
      flat.push_back(ctx.EmitTemp("Reshape", {ctx.CastTo(ctx.In(v), ctx.DType(v), ctx.DType(result)), ctx.Int64s({-1})}));
    }
    auto* n = ctx.Emit("Concat", flat, {ctx.Out(result)});
    SetAttr(n, "axis", int64_t{0});
    return Status::Ok();
  }
  // torch.cat(tensors, axis=k): torch's alias of dim.
  const char* dim_param = call.Has("axis") && !call.IsNone("axis") ? "axis" : "dim";
  IVY_RETURN_IF_ERROR(NormalizeAxis(call.Int(dim_param).value_or(0), rank, &axis));
  std::vector<std::string> ins;
  for (const auto& it : items->items()) {
    if (it.kind_case() != v1::Arg::kTensor) return Status::Unsupported("concat of a non-tensor item");
    ValueId v = it.tensor().value();
    // torch.cat skips 1-D empty tensors whatever the other ranks are.
    if (rank > 1 && ctx.Shape(v).size() == 1 && ctx.Shape(v)[0] == 0) continue;
    ins.push_back(ctx.CastTo(ctx.In(v), ctx.DType(v), ctx.DType(result)));
  }
  if (ins.empty()) return Status::Unsupported("concat of only empty tensors");
  auto* n = ctx.Emit("Concat", ins, {ctx.Out(result)});
  SetAttr(n, "axis", axis);
  return Status::Ok();
}

// A slice whose tensor bounds are each a sym value or a 0-d integer tensor: its bounds are read
// when the model runs (DeBERTa's rel_embeddings[m - span : m + span] with span =
// torch.tensor(min(seq_len, m)), a tensor rather than an int). A step stays a constant.
static bool IsRuntimeSliceBound(const LoweringContext& ctx, const v1::Slice& s) {
  if (s.has_step() && HasTensor(s.step())) return false;
  for (const v1::Arg* a : {s.has_start() ? &s.start() : nullptr, s.has_stop() ? &s.stop() : nullptr}) {
    if (!a || !HasTensor(*a)) continue;
    if (a->kind_case() != v1::Arg::kTensor) return false;
    const ValueId v = a->tensor().value();
    const v1::DType d = ctx.DType(v);
    if (ctx.Rank(v) != 0 || IsFloating(d) || d == v1::BOOL || d == v1::SYM_BOOL || d == v1::SYM_FLOAT) return false;
  }
  return true;
}

// torch.nonzero(x) / torch.argwhere(x) / np.argwhere(x): the [N, rank] indices of x's nonzero
// elements in row-major order (ONNX NonZero gives them as [rank, N]). With as_tuple (torch.where(c),
// np.nonzero, np.where(c)): one [N] index tensor per dim. N is a run-time length.
Status LowerNonzero(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  std::vector<ValueId> results;
  ForEachTensor(node.result, [&](const v1::TensorRef& t) { results.push_back(t.value()); });
  const int rank = ctx.Rank(x);
  if (rank == 0) return Status::Unsupported("nonzero of a 0-d tensor");
  const bool tuple = node.result.kind_case() == v1::Arg::kTuple || node.result.kind_case() == v1::Arg::kList ||
                     call.Bool("as_tuple").value_or(false);
  std::string in = ctx.In(x);
  const std::string nz = ctx.EmitTemp("NonZero", {in});   // [rank, N] int64
  auto cast = [&](const std::string& v, ValueId r) {
    const v1::DType d = ctx.DType(r);
    return d == v1::INT64 || d == v1::DTYPE_UNSPECIFIED ? v : ctx.CastTo(v, v1::INT64, d);
  };
  if (!tuple) {
    if (results.size() != 1) return Status::Unsupported("nonzero with an unexpected result");
    onnx::NodeProto* t = nullptr;
    const std::string tr = ctx.EmitTemp("Transpose", {nz}, &t);
    SetAttr(t, "perm", std::vector<int64_t>{1, 0});
    ctx.Emit("Identity", {cast(tr, results[0])}, {ctx.Out(results[0])});
    return Status::Ok();
  }
  if (static_cast<int>(results.size()) != rank) return Status::Unsupported("nonzero as a tuple of another length");
  for (int i = 0; i < rank; ++i) {
    onnx::NodeProto* g = nullptr;
    const std::string row = ctx.EmitTemp("Gather", {nz, ctx.Scalar(Number::Int(i), v1::INT64)}, &g);
    SetAttr(g, "axis", int64_t{0});
    ctx.Emit("Identity", {cast(row, results[i])}, {ctx.Out(results[i])});
  }
  return Status::Ok();
}

// index_add(input, dim, index, source, alpha) (and index_add_): input with alpha * source[..., i, ...]
// added at input[..., index[i], ...] along dim, repeated indices summed: ScatterElements with
// reduction add (opset 16), the index broadcast to source's shape.
Status LowerIndexAdd(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, index, source, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "index", &index));
  IVY_RETURN_IF_ERROR(TensorParam(call, "source", &source));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (ctx.opset() < 16) return Status::Unsupported("index_add needs opset 16 (ScatterElements with reduction add)");
  const int rank = ctx.Rank(x);
  if (rank == 0 || ctx.Rank(source) != rank || ctx.Rank(index) > 1) {
    return Status::Unsupported("index_add of a 0-d tensor, a source of another rank, or an index that is not 1-D");
  }
  auto dim = call.Int("dim");
  if (!dim) return Status::Unsupported("index_add with dim " + ArgToString(*call.Get("dim"), true));
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, rank, &axis));
  const v1::DType d = ctx.DType(result);
  if (d == v1::BOOL) return Status::Unsupported("index_add of bools");
  std::string src = ctx.CastTo(ctx.In(source), ctx.DType(source), d);
  if (const v1::Arg* a = call.Get("alpha"); a && !call.IsNone("alpha")) {
    if (!(a->kind_case() == v1::Arg::kI && a->i() == 1)) {
      std::string alpha;
      IVY_RETURN_IF_ERROR(OperandAs(ctx, *a, d, &alpha));
      src = ctx.EmitTemp("Mul", {src, alpha});
    }
  }
  std::vector<int64_t> shape(static_cast<size_t>(rank), 1);
  shape[static_cast<size_t>(axis)] = -1;
  const std::string idx = ctx.EmitTemp(
      "Expand", {ctx.EmitTemp("Reshape", {ctx.CastTo(ctx.In(index), ctx.DType(index), v1::INT64), ctx.Int64s(shape)}),
                 ctx.EmitTemp("Shape", {src})});
  auto* n = ctx.Emit("ScatterElements", {ctx.CastTo(ctx.In(x), ctx.DType(x), d), idx, src}, {ctx.Out(result)});
  SetAttr(n, "axis", axis);
  SetAttr(n, "reduction", std::string("add"));
  return Status::Ok();
}

Status LowerGetitem(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* index = call.Get("index");
  if (!index) return Status::Unsupported("missing index");
  std::vector<const v1::Arg*> items;
  if (index->kind_case() == v1::Arg::kTuple) {
    for (const auto& it : index->tuple().items()) items.push_back(&it);
  } else {
    items.push_back(index);
  }
  // One tensor index among full slices (x[idx], x[:, idx], x[..., idx]): a Gather on that dim;
  // a bool mask of x's shape: Compress of the flattened array.
  {
    int tensors = 0, tensor_at = -1, ellipsis_at = -1, n = 0;
    bool simple = true;
    for (const v1::Arg* it : items) {
      if (it->kind_case() == v1::Arg::kTensor) {
        ++tensors;
        tensor_at = n;
      } else if (it->kind_case() == v1::Arg::kEllipsis) {
        ellipsis_at = n;
      } else if (it->kind_case() == v1::Arg::kSlice) {
        const v1::Slice& sl = it->slice();
        simple = simple && (!sl.has_start() || IsNone(sl.start())) && (!sl.has_stop() || IsNone(sl.stop())) &&
                 (!sl.has_step() || IsNone(sl.step()));
      } else {
        simple = false;
      }
      ++n;
    }
    // Integer tensors indexing the leading dims (mask[batch_idx, kv_idx]), then only full slices
    // and None (weights[token_idx, k_idx, None]): the tensors broadcast together, GatherND reads x
    // at the stacked coordinates (the broadcast dims first, then x's other dims, as torch lays
    // out adjacent leading advanced indices), and each None is a new axis at its place among the
    // trailing dims.
    int leading = 0;
    while (leading < n && items[leading]->kind_case() == v1::Arg::kTensor) ++leading;
    bool all_int_tensors = tensors == leading && leading >= 2;
    for (int i = 0; i < leading; ++i) {
      all_int_tensors = all_int_tensors && ctx.DType(items[i]->tensor().value()) != v1::BOOL;
    }
    std::vector<int64_t> new_axes;
    int trailing_slices = 0;
    if (all_int_tensors) {
      int b = 0;
      for (int i = 0; i < leading; ++i) b = std::max(b, ctx.Rank(items[i]->tensor().value()));
      int64_t o = b;
      for (int i = leading; i < n && all_int_tensors; ++i) {
        if (items[i]->kind_case() == v1::Arg::kNone) {
          new_axes.push_back(o++);
        } else if (items[i]->kind_case() == v1::Arg::kSlice && simple) {
          ++o;
          ++trailing_slices;
        } else {
          all_int_tensors = false;
        }
      }
    }
    if (all_int_tensors && leading + trailing_slices <= ctx.Rank(x)) {
      std::vector<std::string> idx;
      for (int i = 0; i < leading; ++i) {
        const ValueId t = items[i]->tensor().value();
        idx.push_back(ctx.CastTo(ctx.In(t), ctx.DType(t), v1::INT64));
      }
      std::string sum = idx[0];
      for (size_t i = 1; i < idx.size(); ++i) sum = ctx.EmitTemp("Add", {sum, idx[i]});
      std::string shape = ctx.EmitTemp("Shape", {sum});
      std::vector<std::string> parts;
      for (const auto& i : idx) parts.push_back(ctx.Unsqueeze(ctx.EmitTemp("Expand", {i, shape}), {-1}));
      onnx::NodeProto* c = nullptr;
      std::string coords = ctx.EmitTemp("Concat", parts, &c);
      SetAttr(c, "axis", int64_t{-1});
      if (new_axes.empty()) {
        ctx.Emit("GatherND", {ctx.In(x), coords}, {ctx.Out(result)});
      } else {
        ctx.Emit("Unsqueeze", {ctx.EmitTemp("GatherND", {ctx.In(x), coords}), ctx.Int64s(new_axes)}, {ctx.Out(result)});
      }
      return Status::Ok();
    }
    if (tensors == 1 && simple) {
      const ValueId idx = items[tensor_at]->tensor().value();
      const int rank = ctx.Rank(x);
      if (ctx.DType(idx) == v1::BOOL) {
        if (items.size() != 1 || ctx.Shape(idx) != ctx.Shape(x)) {
          return Status::Unsupported("indexing with a bool mask of another shape than the tensor");
        }
        std::string flat_x = ctx.EmitTemp("Reshape", {ctx.In(x), ctx.Int64s({-1})});
        std::string flat_m = ctx.EmitTemp("Reshape", {ctx.In(idx), ctx.Int64s({-1})});
        ctx.Emit("Compress", {flat_x, flat_m}, {ctx.Out(result)});
        return Status::Ok();
      }
      int64_t axis = tensor_at;
      if (ellipsis_at >= 0 && ellipsis_at < tensor_at) axis = rank - (static_cast<int64_t>(items.size()) - tensor_at);
      if (axis < 0 || axis >= rank) return Status::Unsupported("a tensor index out of the tensor's dims");
      auto* g = ctx.Emit("Gather", {ctx.In(x), ctx.CastTo(ctx.In(idx), ctx.DType(idx), v1::INT64)}, {ctx.Out(result)});
      SetAttr(g, "axis", axis);
      return Status::Ok();
    }
  }
  // One list of ints among ints, slices and an Ellipsis, no None (falcon: x[..., [-2], :]): a
  // Gather of those positions on its dim (rank kept, negative positions from the end), then the
  // rest of the index with the list read as a full slice.
  std::string src = ctx.In(x);
  v1::Arg full_slice;
  full_slice.mutable_slice();
  {
    int lists = 0, list_at = -1, ellipsis_at = -1, n = 0;
    bool plain = true;
    for (const v1::Arg* it : items) {
      if (it->kind_case() == v1::Arg::kList) {
        ++lists;
        list_at = n;
      } else if (it->kind_case() == v1::Arg::kEllipsis) {
        ellipsis_at = n;
      } else if (it->kind_case() != v1::Arg::kI && it->kind_case() != v1::Arg::kSlice) {
        plain = false;
      }
      ++n;
    }
    if (lists == 1 && plain) {
      const int rank = ctx.Rank(x);
      const auto positions = AsIntList(*items[list_at]);
      if (!positions || positions->empty()) return Status::Unsupported("indexing with a list that is not of ints");
      int64_t axis = list_at;
      if (ellipsis_at >= 0 && ellipsis_at < list_at) axis = rank - (static_cast<int64_t>(items.size()) - list_at);
      if (axis < 0 || axis >= rank) return Status::Unsupported("a list index out of the tensor's dims");
      onnx::NodeProto* g = nullptr;
      src = ctx.EmitTemp("Gather", {src, ctx.Int64s(*positions)}, &g);
      SetAttr(g, "axis", axis);
      items[list_at] = &full_slice;
    }
  }
  int consumed = 0, ellipses = 0;
  for (const v1::Arg* it : items) {
    switch (it->kind_case()) {
      case v1::Arg::kI: ++consumed; break;
      case v1::Arg::kSlice:
        if (HasTensor(*it) && !IsRuntimeSliceBound(ctx, it->slice())) {
          return Status::Unsupported("indexing with a slice whose bounds are tensors other than 0-d ints");
        }
        ++consumed;
        break;
      case v1::Arg::kNone: break;
      case v1::Arg::kEllipsis: ++ellipses; break;
      case v1::Arg::kTensor: return Status::Unsupported("indexing with a tensor (advanced indexing)");
      case v1::Arg::kB: return Status::Unsupported("indexing with a bool");
      case v1::Arg::kList: return Status::Unsupported("indexing with a list (advanced indexing)");
      default: return Status::Unsupported("index " + ArgToString(*it, true));
    }
  }
  const int rank = ctx.Rank(x);
  if (ellipses > 1) return Status::Unsupported("an index with more than one Ellipsis");
  if (consumed > rank) return Status::Unsupported("too many indices for a tensor of rank " + std::to_string(rank));

  std::vector<int64_t> starts, ends, axes, steps, squeeze, unsqueeze;
  // Slice bounds read from shapes (x[:, :t]), by position in starts/ends: computed at run time.
  std::map<size_t, v1::Arg> sym_starts, sym_ends;
  struct BackwardStart {
    size_t position;  // in starts/ends
    int64_t dim;      // of the input
    v1::Arg start;    // a negative int or a run-time value
  };
  std::vector<BackwardStart> backward_starts;
  int64_t d = 0, o = 0;  // input dim, output dim
  for (const v1::Arg* it : items) {
    if (it->kind_case() == v1::Arg::kNone) {
      unsqueeze.push_back(o++);
    } else if (it->kind_case() == v1::Arg::kEllipsis) {
      d += rank - consumed;
      o += rank - consumed;
    } else if (it->kind_case() == v1::Arg::kI) {
      const int64_t i = it->i();
      const int64_t size = ctx.Shape(x)[d];
      if (i >= size || i < -size) {
        return Status::Unsupported("index " + std::to_string(i) + " is out of range for size " + std::to_string(size));
      }
      starts.push_back(i);  // negative indices stay relative to the end (dynamic batch)
      ends.push_back(i == -1 ? kEnd : i + 1);
      axes.push_back(d);
      steps.push_back(1);
      squeeze.push_back(d++);
    } else {
      const v1::Slice& s = it->slice();
      auto bound = [](bool has, const v1::Arg& a, int64_t dflt, std::optional<int64_t>* out) {
        *out = (!has || IsNone(a)) ? std::optional<int64_t>(dflt) : AsInt(a);
      };
      std::optional<int64_t> start, stop, step;
      bound(s.has_step(), s.step(), 1, &step);
      if (!step) return Status::Unsupported("slice " + ArgToString(*it, true));
      if (*step == 0) return Status::Unsupported("slice with a step of 0");
      // A negative step (NumPy, JAX; torch refuses one) walks from start down to stop: omitted,
      // they are the last item and "past the first" (INT64_MIN: Slice clamps it to -1).
      const bool backward = *step < 0;
      bound(s.has_start(), s.start(), backward ? kEnd : 0, &start);
      bound(s.has_stop(), s.stop(), backward ? std::numeric_limits<int64_t>::min() : kEnd, &stop);
      const bool sym_start = s.has_start() && HasTensor(s.start());
      const bool sym_stop = s.has_stop() && HasTensor(s.stop());
      // Slice clamps a start below -n to 0 where Python clamps it to -1 (nothing to take): such
      // starts, known only at run time, get an empty range there (see below).
      if (backward && (sym_start || (start && *start < 0))) backward_starts.push_back({starts.size(), d, s.start()});
      if (sym_start || sym_stop) {
        if (sym_start) sym_starts[starts.size()] = s.start();
        if (sym_stop) sym_ends[ends.size()] = s.stop();
        starts.push_back(start.value_or(0));
        ends.push_back(stop.value_or(kEnd));
        axes.push_back(d);
        steps.push_back(*step);
        ++d;
        ++o;
        continue;
      }
      if (!start || !stop) return Status::Unsupported("slice " + ArgToString(*it, true));
      if (!(*start == 0 && *stop == kEnd && *step == 1)) {
        starts.push_back(*start);
        ends.push_back(*stop);
        axes.push_back(d);
        steps.push_back(*step);
      }
      ++d;
      ++o;
    }
  }

  std::string cur = src;
  const int stages = !axes.empty() + !squeeze.empty() + !unsqueeze.empty();
  if (stages == 0) {
    ctx.Emit("Identity", {cur}, {ctx.Out(result)});
    return Status::Ok();
  }
  int done = 0;
  auto target = [&]() { return ++done == stages ? ctx.Out(result) : ctx.Temp("index"); };
  if (!axes.empty()) {
    std::string out = target();
    auto bounds = [&](const std::vector<int64_t>& ints, const std::map<size_t, v1::Arg>& syms, std::string* name) {
      if (syms.empty()) {
        *name = ctx.Int64s(ints);
        return Status::Ok();
      }
      v1::Arg list;
      for (size_t i = 0; i < ints.size(); ++i) {
        auto it = syms.find(i);
        if (it != syms.end()) *list.mutable_list()->add_items() = it->second;
        else list.mutable_list()->add_items()->set_i(ints[i]);
      }
      return DynamicInts(ctx, list, name);
    };
    std::string st, en;
    IVY_RETURN_IF_ERROR(bounds(starts, sym_starts, &st));
    IVY_RETURN_IF_ERROR(bounds(ends, sym_ends, &en));
    // A negative step from a start s with s + n < 0 (n the dim's run-time size) takes nothing in
    // Python; Slice would start at 0. There the end becomes 0: from 0 down to 0 is empty.
    for (const BackwardStart& b : backward_starts) {
      v1::Arg one;
      *one.mutable_list()->add_items() = b.start;
      std::string s;
      IVY_RETURN_IF_ERROR(DynamicInts(ctx, one, &s));
      onnx::NodeProto* g = nullptr;
      const std::string n = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {cur}), ctx.Int64s({b.dim})}, &g);
      SetAttr(g, "axis", int64_t{0});
      const std::string none = ctx.EmitTemp("Less", {ctx.EmitTemp("Add", {s, n}), ctx.Int64s({0})});
      std::vector<int64_t> at(ends.size(), 0);
      at[b.position] = 1;
      const std::string here =
          ctx.EmitTemp("And", {ctx.EmitTemp("Equal", {ctx.Int64s(at), ctx.Int64s({1})}), none});
      en = ctx.EmitTemp("Where", {here, ctx.Int64s(std::vector<int64_t>(ends.size(), 0)), en});
    }
    ctx.Emit("Slice", {cur, st, en, ctx.Int64s(axes), ctx.Int64s(steps)}, {out});
    cur = out;
  }
  if (!squeeze.empty()) {
    std::string out = target();
    ctx.Emit("Squeeze", {cur, ctx.Int64s(squeeze)}, {out});
    cur = out;
  }
  if (!unsqueeze.empty()) ctx.Emit("Unsqueeze", {cur, ctx.Int64s(unsqueeze)}, {target()});
  return Status::Ok();
}

// masked_fill(x, mask, value) -> Where(mask, value, x); value a number or a rank-0 tensor.
Status LowerMaskedFill(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, mask, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "mask", &mask));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (ctx.DType(mask) != v1::BOOL) return Status::Unsupported("the mask is not a bool tensor");
  const v1::DType dtype = ctx.DType(x);
  std::string value;
  if (const auto t = call.Tensor("value")) {
    if (ctx.Rank(*t) != 0) return Status::Unsupported("value is a tensor of rank > 0");
    value = ctx.CastTo(ctx.In(*t), ctx.DType(*t), dtype);
  } else {
    const v1::Arg* v = call.Get("value");
    const auto number = v ? AsDouble(*v) : std::nullopt;
    if (!number) return Status::Unsupported("value is neither a number nor a tensor");
    value = ctx.Scalar(IsFloating(dtype) ? Number::Float(*number) : Number::Int(static_cast<int64_t>(*number)), dtype);
  }
  ctx.Emit("Where", {ctx.In(mask), value, ctx.In(x)}, {ctx.Out(result)});
  return Status::Ok();
}

}  // namespace onnx_export
}  // namespace ivytrace

namespace ivytrace {
namespace onnx_export {

// x[index] = value (torch __setitem__, NumPy __setitem__, and the builder's indexing write backs).
// A bool mask of x's shape becomes a Where; ints, slices and Ellipsis select a box whose
// coordinates are computed from x's shape when the model runs, written with ScatterND.
Status LowerSetitem(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  if (node.outputs.empty()) return Status::Unsupported("the write defines no new value");
  // The written array's new value: NumPy lists the other arrays on its memory as written too.
  ValueId result = node.outputs.back();
  if (const v1::Arg* in = call.Get("input"); in && in->kind_case() == v1::Arg::kTensor) {
    for (ValueId o : node.outputs) {
      if (ctx.graph().values[o].tensor_id == in->tensor().id()) result = o;
    }
  }
  const v1::Arg* index = call.Get("index");
  const v1::Arg* value = call.Get("value");
  if (!index || !value) return Status::Unsupported("missing index or value");
  const v1::DType d = ctx.DType(x);
  std::string v;
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *value, d, &v));
  const auto& shape = ctx.Shape(x);
  const int rank = static_cast<int>(shape.size());
  if (index->kind_case() == v1::Arg::kTensor && ctx.DType(index->tensor().value()) == v1::BOOL) {
    const ValueId m = index->tensor().value();
    if (ctx.Shape(m) != shape) return Status::Unsupported("a bool mask index of another shape than the array");
    if (value->kind_case() == v1::Arg::kTensor && ctx.Rank(value->tensor().value()) > 0) {
      // The values are consumed in mask order (lowerings_scatter.cc).
      EmitMaskedPut(ctx, ctx.In(x), ctx.In(m), v, d, false, ctx.Out(result));
      return Status::Ok();
    }
    ctx.Emit("Where", {ctx.In(m), v, ctx.In(x)}, {ctx.Out(result)});
    return Status::Ok();
  }
  std::vector<const v1::Arg*> items;
  if (index->kind_case() == v1::Arg::kTuple) {
    for (const auto& it : index->tuple().items()) items.push_back(&it);
  } else {
    items.push_back(index);
  }
  // Only integer tensors, indexing the leading dims (weight[idx, idx] = kernel in diffusers'
  // Downsample1d): they broadcast together to the shape B; ScatterND writes at the stacked
  // coordinates a value broadcast to B + the remaining dims.
  {
    bool int_tensors = items.size() >= 1 && static_cast<int>(items.size()) <= rank;
    for (const v1::Arg* it : items) {
      int_tensors = int_tensors && it->kind_case() == v1::Arg::kTensor &&
                    ctx.DType(it->tensor().value()) != v1::BOOL && ctx.DType(it->tensor().value()) != v1::SYM_BOOL &&
                    !IsFloating(ctx.DType(it->tensor().value())) && ctx.Rank(it->tensor().value()) > 0;
    }
    if (int_tensors) {
      std::vector<std::string> idx;
      for (const v1::Arg* it : items) {
        const ValueId t = it->tensor().value();
        idx.push_back(ctx.CastTo(ctx.In(t), ctx.DType(t), v1::INT64));
      }
      std::string sum = idx[0];
      for (size_t i = 1; i < idx.size(); ++i) sum = ctx.EmitTemp("Add", {sum, idx[i]});
      const std::string bshape = ctx.EmitTemp("Shape", {sum});
      std::vector<std::string> parts;
      for (const auto& i : idx) parts.push_back(ctx.Unsqueeze(ctx.EmitTemp("Expand", {i, bshape}), {-1}));
      std::string coords = parts[0];
      if (parts.size() > 1) {
        onnx::NodeProto* c = nullptr;
        coords = ctx.EmitTemp("Concat", parts, &c);
        SetAttr(c, "axis", int64_t{-1});
      }
      std::string ushape = bshape;
      if (static_cast<int>(items.size()) < rank) {
        const std::string rest = ctx.EmitTemp("Slice", {ctx.EmitTemp("Shape", {ctx.In(x)}),
                                                        ctx.Int64s({static_cast<int64_t>(items.size())}),
                                                        ctx.Int64s({std::numeric_limits<int64_t>::max()})});
        onnx::NodeProto* c = nullptr;
        ushape = ctx.EmitTemp("Concat", {bshape, rest}, &c);
        SetAttr(c, "axis", int64_t{0});
      }
      // Repeated coordinates: torch keeps one of the writes, ScatterND's result is undefined; both
      // are what the program asked for only when the written values agree, as for x[i, i] = v.
      ctx.Emit("ScatterND", {ctx.In(x), coords, ctx.EmitTemp("Expand", {v, ushape})}, {ctx.Out(result)});
      return Status::Ok();
    }
  }
  // An int index: a Python int, or a 0-d integer tensor or shape value (x[:, n - 1] = v).
  auto is_int_index = [&](const v1::Arg* it) {
    if (it->kind_case() == v1::Arg::kI) return true;
    if (it->kind_case() != v1::Arg::kTensor) return false;
    const ValueId t = it->tensor().value();
    const v1::DType td = ctx.DType(t);
    return ctx.Rank(t) == 0 && td != v1::BOOL && td != v1::SYM_BOOL && !IsFloating(td);
  };
  int consumed = 0;
  for (const v1::Arg* it : items) {
    if (is_int_index(it) || it->kind_case() == v1::Arg::kSlice) ++consumed;
    else if (it->kind_case() != v1::Arg::kEllipsis) return Status::Unsupported("index " + ArgToString(*index, true));
  }
  if (consumed > rank) return Status::Unsupported("too many indices");
  // The written box is computed from x's shape when the model runs, not from the recorded shape:
  // an exported model's dims are dynamic, and indices made for the recorded sizes would write
  // only part of a larger input (or the wrong places: x[:, -1] of a longer sequence).
  // Per dim: the 1-D positions written, and whether the dim is kept in the value's shape.
  const std::string shape_x = ctx.EmitTemp("Shape", {ctx.In(x)});
  auto dim_size = [&](int k) {  // 0-d int64
    auto* g = static_cast<onnx::NodeProto*>(nullptr);
    std::string n = ctx.EmitTemp("Gather", {shape_x, ctx.Scalar(Number::Int(k), v1::INT64)}, &g);
    SetAttr(g, "axis", int64_t{0});
    return n;
  };
  auto int0d = [&](const v1::Arg& a, std::string* out) -> Status {  // a 0-d int64 operand
    if (a.kind_case() == v1::Arg::kTensor) {
      const ValueId t = a.tensor().value();
      if (ctx.Rank(t) != 0) return Status::Unsupported("a slice bound or index that is not 0-d");
      *out = ctx.CastTo(ctx.In(t), ctx.DType(t) == v1::SYM_INT ? v1::INT64 : ctx.DType(t), v1::INT64);
      return Status::Ok();
    }
    const auto i = AsInt(a);
    if (!i) return Status::Unsupported("a slice bound " + ArgToString(a, true) + " that is not an int");
    *out = ctx.Scalar(Number::Int(*i), v1::INT64);
    return Status::Ok();
  };
  const std::string zero = ctx.Scalar(Number::Int(0), v1::INT64), one = ctx.Scalar(Number::Int(1), v1::INT64);
  auto whole = [&](int k) { return ctx.EmitTemp("Range", {zero, dim_size(k), one}); };
  std::vector<std::string> pos;
  std::vector<bool> kept;
  int dim = 0;
  for (const v1::Arg* it : items) {
    if (it->kind_case() == v1::Arg::kEllipsis) {
      for (int k = 0; k < rank - consumed; ++k, ++dim) {
        pos.push_back(whole(dim));
        kept.push_back(true);
      }
    } else if (is_int_index(it)) {
      // ScatterND reads a negative index from the end and fails on one out of range, as torch.
      std::string i;
      IVY_RETURN_IF_ERROR(int0d(*it, &i));
      pos.push_back(ctx.Unsqueeze(i, {0}));
      kept.push_back(false);
      ++dim;
    } else {
      const v1::Slice& sl = it->slice();
      auto has = [](bool h, const v1::Arg& a) { return h && !IsNone(a); };
      int64_t step = 1;
      if (has(sl.has_step(), sl.step())) {
        const auto st = AsInt(sl.step());
        if (!st) return Status::Unsupported("a slice step that is not a constant int");
        step = *st;
      }
      if (step <= 0) return Status::Unsupported("a slice with a step <= 0");
      const std::string n = dim_size(dim);
      // Python's bound: b < 0 counts from the end; then clamped to [0, n].
      auto bound = [&](bool h, const v1::Arg& a, const std::string& dflt, std::string* out) -> Status {
        if (!has(h, a)) {
          *out = dflt;
          return Status::Ok();
        }
        std::string b;
        IVY_RETURN_IF_ERROR(int0d(a, &b));
        const std::string neg = ctx.EmitTemp("Less", {b, zero});
        const std::string from_end = ctx.EmitTemp("Add", {b, n});
        const std::string v = ctx.EmitTemp("Where", {neg, from_end, b});
        *out = ctx.EmitTemp("Min", {ctx.EmitTemp("Max", {v, zero}), n});
        return Status::Ok();
      };
      std::string start, stop;
      IVY_RETURN_IF_ERROR(bound(sl.has_start(), sl.start(), zero, &start));
      IVY_RETURN_IF_ERROR(bound(sl.has_stop(), sl.stop(), n, &stop));
      pos.push_back(ctx.EmitTemp("Range", {start, stop, ctx.Scalar(Number::Int(step), v1::INT64)}));
      kept.push_back(true);
      ++dim;
    }
  }
  for (; dim < rank; ++dim) {
    pos.push_back(whole(dim));
    kept.push_back(true);
  }
  if (rank == 0) {  // x[...] = v on a 0-d x
    ctx.Emit("Expand", {v, ctx.Int64s({})}, {ctx.Out(result)});
    return Status::Ok();
  }
  // The box's shape, and the value's (the kept dims).
  std::vector<std::string> lengths, kept_lengths;
  for (int k = 0; k < rank; ++k) {
    lengths.push_back(ctx.EmitTemp("Shape", {pos[k]}));
    if (kept[k]) kept_lengths.push_back(lengths.back());
  }
  auto concat = [&](const std::vector<std::string>& parts) {
    if (parts.empty()) return ctx.Int64s({});
    if (parts.size() == 1) return parts[0];
    onnx::NodeProto* c = nullptr;
    std::string out = ctx.EmitTemp("Concat", parts, &c);
    SetAttr(c, "axis", int64_t{0});
    return out;
  };
  const std::string box = concat(lengths);
  // indices[i0, ..., i_{r-1}] = (pos_0[i0], ..., pos_{r-1}[i_{r-1}]): each dim's positions laid
  // along its own axis, broadcast to the box, stacked on a last axis.
  std::vector<std::string> coords;
  for (int k = 0; k < rank; ++k) {
    std::vector<int64_t> along(rank, 1);
    along[k] = -1;
    const std::string laid = ctx.EmitTemp("Reshape", {pos[k], ctx.Int64s(along)});
    coords.push_back(ctx.Unsqueeze(ctx.EmitTemp("Expand", {laid, box}), {rank}));
  }
  std::string indices = coords[0];
  if (rank > 1) {
    onnx::NodeProto* c = nullptr;
    indices = ctx.EmitTemp("Concat", coords, &c);
    SetAttr(c, "axis", int64_t{rank});
  }
  std::string updates = ctx.EmitTemp("Reshape", {ctx.EmitTemp("Expand", {v, concat(kept_lengths)}), box});
  ctx.Emit("ScatterND", {ctx.In(x), indices, updates}, {ctx.Out(result)});
  return Status::Ok();
}

}  // namespace onnx_export
}  // namespace ivytrace
