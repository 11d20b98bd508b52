// Shape and indexing lowerings (flatten, reshape, transpose, permute, concat, getitem) and
// reductions (sum, mean).
#include <algorithm>
#include <limits>

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
  // Leading dims are copied (0), the flattened run is inferred (-1), trailing dims are as recorded.
  std::vector<int64_t> target(static_cast<size_t>(start), 0);
  target.push_back(-1);
  for (int i = static_cast<int>(end) + 1; i < rank; ++i) target.push_back(shape[i]);
  EmitReshape(ctx, ctx.In(x), target, false, ctx.Out(result));
  return Status::Ok();
}

Status LowerReshape(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* s = call.Get("shape");
  auto target = s ? AsIntList(*s) : std::optional<std::vector<int64_t>>(std::vector<int64_t>{});
  if (!target) return Status::Unsupported("shape " + ArgToString(*s, true) + " is not a list of ints");
  const auto& in_shape = ctx.Shape(x);
  const bool has_zero = std::count(target->begin(), target->end(), 0) > 0;
  const bool has_infer = std::count(target->begin(), target->end(), -1) > 0;
  if (has_zero) {  // a zero-size dim: ONNX needs allowzero, and then 0 cannot mean "copy"
    if (ctx.opset() < 14) return Status::Unsupported("reshape to a zero-size dimension needs opset 14");
    EmitReshape(ctx, ctx.In(x), *target, true, ctx.Out(result));
    return Status::Ok();
  }
  if (ctx.options().dynamic_batch && !target->empty() && !in_shape.empty()) {
    // Keep the batch dynamic: copy it when the target keeps the input's first dim, else let the
    // first dim absorb it.
    if ((*target)[0] == in_shape[0]) {
      (*target)[0] = 0;
    } else if (!has_infer) {
      (*target)[0] = -1;
    }
  }
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
  IVY_RETURN_IF_ERROR(NormalizeAxis(call.Int("dim").value_or(0), rank, &axis));
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
  int consumed = 0, ellipses = 0;
  for (const v1::Arg* it : items) {
    switch (it->kind_case()) {
      case v1::Arg::kI: ++consumed; break;
      case v1::Arg::kSlice:
        if (HasTensor(*it)) return Status::Unsupported("indexing with a slice whose bounds are tensors");
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
      bound(s.has_start(), s.start(), 0, &start);
      bound(s.has_stop(), s.stop(), kEnd, &stop);
      if (!start || !stop || !step) return Status::Unsupported("slice " + ArgToString(*it, true));
      if (*step <= 0) return Status::Unsupported("slice with a step <= 0");
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

  std::string cur = ctx.In(x);
  const int stages = !axes.empty() + !squeeze.empty() + !unsqueeze.empty();
  if (stages == 0) {
    ctx.Emit("Identity", {cur}, {ctx.Out(result)});
    return Status::Ok();
  }
  int done = 0;
  auto target = [&]() { return ++done == stages ? ctx.Out(result) : ctx.Temp("index"); };
  if (!axes.empty()) {
    std::string out = target();
    ctx.Emit("Slice", {cur, ctx.Int64s(starts), ctx.Int64s(ends), ctx.Int64s(axes), ctx.Int64s(steps)}, {out});
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
