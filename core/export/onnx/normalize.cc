// Argument normalization: the one place where a framework's spelling of an op becomes the
// canonical op's parameters, before the lowering table (lowering_table.cc) is consulted.
//
// Why this exists: the schemas in schemas/ must name parameters the way the framework takes them,
// because the runtime replays a plan step with the recorded keywords (`np.sum(a, axis=1)`,
// `reduce_sum_p.bind(x, axes=(1,))`). The canonical ops, and the lowerings keyed by them, use the
// torch-style names of the Python Array API (`input`, `other`, `dim`, `keepdim`, `dtype`). So:
//   - NumPy says `axis`/`keepdims`/`axes`; its ufuncs take `out=`/`where=`.
//   - JAX primitives take their params as always-present keywords (`axes` as a tuple, `new_dtype`,
//     `permutation`, `dimension`, `y`), never keepdim, and some canonical names differ because the
//     primitive is one member of a family (`integer_pow` is `pow` with a Python-int exponent).
//   - A few canonical names differ between the three schema files for the same op (NumPy's `neg`,
//     `clamp`, `to_dtype`, ...); passes key some rules on those names, so they are mapped here
//     rather than renamed in schemas/.
// Every rule below is a rename of canonical op and/or parameters plus, where needed, a value
// rewrite; nothing here emits ONNX.
#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "core/export/onnx/lowering_table.h"
#include "core/export/onnx/lowerings.h"
#include "core/ir/arg.h"

namespace ivytrace {
namespace onnx_export {

namespace {

std::string_view FrameworkOf(const std::string& op) {
  if (op.rfind("numpy.", 0) == 0) return "numpy";
  if (op.rfind("jax.", 0) == 0) return "jax";
  return "torch";
}

struct Rename {
  std::string_view framework;  // "" = any
  std::string_view from;       // canonical op as the schema names it
  std::string_view to;         // canonical op the lowering table knows
  std::vector<std::pair<std::string_view, std::string_view>> params;  // framework name -> canonical name
};

// Renames of canonical ops and parameters, as data.
const std::vector<Rename>& Renames() {
  static const std::vector<Rename> kRenames = {
      // NumPy names of canonical ops that torch and JAX call otherwise.
      {"numpy", "neg", "negative", {}},
      {"numpy", "clamp", "clip", {}},
      {"numpy", "permute", "permute_dims", {{"axes", "dims"}}},
      {"numpy", "transpose", "transpose", {{"axis1", "dim0"}, {"axis2", "dim1"}}},
      {"numpy", "unsqueeze", "expand_dims", {{"axis", "dim"}}},
      {"numpy", "expand", "broadcast_to", {{"shape", "size"}}},
      {"numpy", "clone", "identity", {}},
      {"numpy", "to_dtype", "cast", {}},
      {"numpy", "tensor", "asarray", {{"object", "data"}}},
      {"numpy", "contiguous", "asarray", {{"object", "data"}}},
      {"numpy", "amax", "max", {}},
      {"numpy", "amin", "min", {}},
      {"numpy", "take", "take", {{"indices", "index"}, {"axis", "dim"}}},
      {"numpy", "zeros", "zeros", {{"shape", "size"}}},
      // empty(...) leaves its values undefined: zeros are one of the values it may leave.
      {"numpy", "empty", "zeros", {{"shape", "size"}}},
      {"torch", "empty", "zeros", {}},
      {"numpy", "ones", "ones", {{"shape", "size"}}},
      {"numpy", "full", "full", {{"shape", "size"}}},
      {"numpy", "full_like", "full_like", {{"fill_value", "value"}}},
      {"numpy", "pow", "pow", {{"other", "exponent"}}},
      {"numpy", "dot", "dot", {}},
      {"numpy", "floor_divide", "div", {}},
      // ufunc methods: np.add.reduce is sum, np.add.accumulate is cumsum, ...
      {"numpy", "add_reduce", "sum", {}},
      {"numpy", "mul_reduce", "prod", {}},
      {"numpy", "maximum_reduce", "max", {}},
      {"numpy", "minimum_reduce", "min", {}},
      {"numpy", "logical_and_reduce", "all", {}},
      {"numpy", "logical_or_reduce", "any", {}},
      {"numpy", "add_accumulate", "cumsum", {}},
      // torch.linspace computes otherwise (a symmetric formula in the output dtype): only NumPy's lowers.
      {"numpy", "linspace", "numpy_linspace", {}},
      {"numpy", "tril", "tril", {{"k", "diagonal"}}},
      {"numpy", "triu", "triu", {{"k", "diagonal"}}},
      {"numpy", "roll", "roll", {{"shift", "shifts"}, {"axis", "dims"}}},
      {"numpy", "flip", "flip", {{"axis", "dims"}}},
      {"numpy", "take_along_axis", "take_along_axis", {{"indices", "index"}}},
      {"numpy", "put_along_axis", "put_along_axis", {{"indices", "index"}}},
      // issue 11: more ufunc methods, and NumPy functions whose schemas keep NumPy's names.
      {"numpy", "mul_accumulate", "cumprod", {}},
      {"numpy", "fmax_reduce", "nanmax", {}},  // fmax skips NaN: NaN only where every item is NaN
      {"numpy", "fmin_reduce", "nanmin", {}},
      {"numpy", "nansum", "nansum", {{"a", "input"}}},
      {"numpy", "nanprod", "nanprod", {{"a", "input"}}},
      {"numpy", "nanmax", "nanmax", {{"a", "input"}}},
      {"numpy", "nanmin", "nanmin", {{"a", "input"}}},
      {"numpy", "nanargmax", "nanargmax", {{"a", "input"}}},
      {"numpy", "nanargmin", "nanargmin", {{"a", "input"}}},
      {"numpy", "nancumsum", "nancumsum", {{"a", "input"}}},
      {"numpy", "nancumprod", "nancumprod", {{"a", "input"}}},
      {"numpy", "nanmean", "nanmean", {{"a", "input"}}},
      {"numpy", "nanvar", "nanvar", {{"a", "input"}}},
      {"numpy", "nanstd", "nanstd", {{"a", "input"}}},
      {"numpy", "count_nonzero", "count_nonzero", {{"a", "input"}}},
      {"numpy", "isposinf", "isposinf", {{"x", "input"}}},
      {"numpy", "isneginf", "isneginf", {{"x", "input"}}},
      {"numpy", "rot90", "rot90", {{"axes", "dims"}}},
      {"numpy", "tensordot", "tensordot", {{"x1", "input"}, {"x2", "other"}, {"axes", "dims"}}},
      {"numpy", "inner", "inner", {{"a", "input"}, {"b", "other"}}},
      {"numpy", "vdot", "vdot", {{"a", "input"}, {"b", "other"}}},
      {"numpy", "vecdot", "vecdot", {{"x1", "input"}, {"x2", "other"}}},
      {"numpy", "cross", "cross", {{"a", "input"}, {"b", "other"}, {"x1", "input"}, {"x2", "other"}}},
      {"numpy", "diag", "diag", {{"v", "input"}, {"k", "diagonal"}}},
      {"numpy", "outer", "outer", {{"x1", "input"}, {"x2", "other"}}},         // np.linalg.outer
      {"numpy", "matrix_transpose", "transpose", {}},                           // dims -2 and -1, below
      {"numpy", "cumulative_sum", "cumsum", {{"x", "input"}}},
      {"numpy", "cumulative_prod", "cumprod", {{"x", "input"}}},
      {"numpy", "vector_norm", "vector_norm", {{"x", "input"}}},               // np.linalg.vector_norm
      {"numpy", "astype", "cast", {{"x", "input"}}},                          // np.astype(x, dtype)
      {"numpy", "unstack", "unbind", {{"x", "input"}}},
      {"numpy", "rollaxis", "rollaxis", {{"a", "input"}}},
      {"numpy", "average", "average", {{"a", "input"}}},
      {"numpy", "fftshift", "fftshift", {{"x", "input"}, {"axes", "dims"}}},
      {"numpy", "ifftshift", "ifftshift", {{"x", "input"}, {"axes", "dims"}}},
      {"numpy", "kron", "kron", {{"a", "input"}, {"b", "other"}}},
      {"numpy", "ediff1d", "ediff1d", {{"ary", "input"}}},
      {"numpy", "trapezoid", "trapezoid", {{"y", "input"}}},
      {"numpy", "median", "median", {{"a", "input"}}},
      {"numpy", "diagflat", "diagflat", {{"v", "input"}, {"k", "diagonal"}}},
      {"numpy", "quantile", "quantile", {{"a", "input"}}},
      {"numpy", "percentile", "percentile", {{"a", "input"}}},
      {"numpy", "nanmedian", "nanmedian", {{"a", "input"}}},
      {"numpy", "nanquantile", "nanquantile", {{"a", "input"}}},
      {"numpy", "nanpercentile", "nanpercentile", {{"a", "input"}}},
      {"numpy", "matrix_norm", "matrix_norm", {{"x", "input"}}},              // np.linalg.matrix_norm
      // Every other NumPy op: axis/keepdims are torch's dim/keepdim.
      {"numpy", "", "", {{"axis", "dim"}, {"keepdims", "keepdim"}}},
      // JAX primitives.
      {"jax", "pow", "pow", {{"other", "exponent"}}},
      {"jax", "integer_pow", "pow", {{"y", "exponent"}}},
      {"jax", "cast", "cast", {{"new_dtype", "dtype"}}},
      {"jax", "permute_dims", "permute_dims", {{"permutation", "dims"}}},
      {"jax", "concat", "concat", {{"operands", "tensors"}, {"dimension", "dim"}}},
      {"jax", "squeeze", "squeeze", {{"dimensions", "dim"}}},
      {"jax", "cumulative_sum", "cumsum", {{"axis", "dim"}}},
      {"jax", "cumprod", "cumprod", {{"axis", "dim"}}},
      {"jax", "sum", "sum", {{"axes", "dim"}}},
      {"jax", "max", "max", {{"axes", "dim"}}},
      {"jax", "min", "min", {{"axes", "dim"}}},
      {"jax", "prod", "prod", {{"axes", "dim"}}},
      {"jax", "argmax", "argmax", {{"axes", "dim"}}},
      {"jax", "argmin", "argmin", {{"axes", "dim"}}},
      {"jax", "reshape", "reshape", {{"new_sizes", "shape"}}},
      {"jax", "flip", "flip", {{"dimensions", "dims"}}},
      {"jax", "stack", "stack", {{"operands", "tensors"}, {"axis", "dim"}}},
      {"jax", "split", "split", {{"axis", "dim"}}},
      {"jax", "unbind", "unbind", {{"axis", "dim"}}},
      {"jax", "tile", "tile", {{"reps", "repeats"}}},
      {"jax", "top_k", "top_k", {{"axis", "dim"}}},
      {"jax", "sort", "lax_sort", {{"operands", "tensors"}, {"dimension", "dim"}, {"is_stable", "stable"}}},
      {"jax", "all", "all", {{"axes", "dim"}}},
      {"jax", "any", "any", {{"axes", "dim"}}},
      {"jax", "cummax", "cummax", {{"axis", "dim"}}},
      {"jax", "cummin", "cummin", {{"axis", "dim"}}},
      {"jax", "cumlogsumexp", "cumlogsumexp", {{"axis", "dim"}}},
      {"jax", "reduce_xor", "reduce_xor", {{"axes", "dim"}}},
      {"jax", "scatter_add", "scatter_add", {{"operand", "input"}, {"scatter_indices", "indices"}}},
      {"jax", "scatter_mul", "scatter_mul", {{"operand", "input"}, {"scatter_indices", "indices"}}},
      {"jax", "scatter_max", "scatter_max", {{"operand", "input"}, {"scatter_indices", "indices"}}},
      {"jax", "scatter_min", "scatter_min", {{"operand", "input"}, {"scatter_indices", "indices"}}},
      // torch spellings.
      {"torch", "matmul", "matmul", {{"mat2", "other"}, {"vec", "other"}}},  // torch.mm, torch.mv
      {"torch", "outer", "outer", {{"vec2", "other"}}},
      {"torch", "addmm", "addmm", {{"batch1", "mat1"}, {"batch2", "mat2"}}},
      {"torch", "addmv", "addmm", {{"mat", "mat1"}, {"vec", "mat2"}}},  // beta * input + alpha * (mat @ vec)
      {"torch", "take_along", "take", {}},  // index_select(input, dim, index)
      {"torch", "take_along_axis", "take_along_axis", {{"indices", "index"}}},  // torch.take_along_dim
      {"torch", "split", "split", {{"split_sizes", "split_size_or_sections"}}},  // torch.split_with_sizes
      {"torch", "diagonal", "diagonal", {{"dim1", "axis1"}, {"dim2", "axis2"}}},
      {"torch", "floor_divide", "div", {}},
      {"torch", "one_hot", "one_hot", {{"tensor", "input"}}},
      {"torch", "torch_norm", "vector_norm", {{"p", "ord"}}},  // torch.norm / Tensor.norm
      {"torch", "matrix_transpose", "transpose", {}},  // x.mT: dims -2 and -1, below
      {"torch", "transpose", "transpose", {{"axis0", "dim0"}, {"axis1", "dim1"}}},  // torch.swapdims(_)
  };
  return kRenames;
}

// Renames() by framework, for a lookup per node instead of a walk of the list (two walks per
// node, ~6% of exporting a million nodes): the first rule that renames a framework's op, and the
// framework's catch-alls in order. A rule with no framework applies to each of them.
struct RenameIndex {
  absl::flat_hash_map<std::pair<std::string_view, std::string_view>, const Rename*> first;  // (fw, op)
  absl::flat_hash_map<std::string_view, std::vector<const Rename*>> catch_alls;            // fw
  static const RenameIndex& Get() {
    static const RenameIndex kIndex = [] {
      RenameIndex index;
      for (std::string_view fw : {"torch", "numpy", "jax"}) {  // every FrameworkOf answer
        for (const Rename& r : Renames()) {
          if (!r.framework.empty() && r.framework != fw) continue;
          if (r.from.empty()) {
            index.catch_alls[fw].push_back(&r);
          } else {
            index.first.try_emplace(std::make_pair(fw, r.from), &r);  // the first rule wins
          }
        }
      }
      return index;
    }();
    return kIndex;
  }
};

void RenameParam(BoundCall* call, std::string_view from, std::string_view to) {
  if (const v1::Arg* a = call->Get(from)) {
    v1::Arg copy = *a;
    call->Set(to, std::move(copy));
  }
}

v1::Arg IntArg(int64_t v) {
  v1::Arg a;
  a.set_i(v);
  return a;
}

v1::Arg BoolArg(bool v) {
  v1::Arg a;
  a.set_b(v);
  return a;
}

v1::Arg StrArg(std::string v) {
  v1::Arg a;
  a.set_s(std::move(v));
  return a;
}

const v1::ArgList* Items(const v1::Arg& a) {  // NOLINT
  if (a.kind_case() == v1::Arg::kList) return &a.list();
  if (a.kind_case() == v1::Arg::kTuple) return &a.tuple();
  return nullptr;
}

}  // namespace

std::string NormalizedCanonical(const std::string& framework_op, const std::string& canonical) {
  const std::string_view fw = FrameworkOf(framework_op);
  for (const Rename& r : Renames()) {
    if (!r.framework.empty() && r.framework != fw) continue;
    if (!r.from.empty() && r.from != canonical) continue;
    if (!r.from.empty()) return std::string(r.to);
  }
  return canonical;
}

Status NormalizeCall(const Node& node, BoundCall* call, std::string* canonical) {
  const std::string_view fw = FrameworkOf(node.op);
  *canonical = node.canonical();
  // The first rule naming this op applies; then the framework's catch-all ("") renames.
  const RenameIndex& index = RenameIndex::Get();
  if (auto it = index.first.find(std::make_pair(fw, std::string_view(*canonical))); it != index.first.end()) {
    const Rename& r = *it->second;
    *canonical = std::string(r.to);
    for (const auto& [from, to] : r.params) RenameParam(call, from, to);
  }
  if (auto it = index.catch_alls.find(fw); it != index.catch_alls.end()) {
    for (const Rename* r : it->second) {
      if (r->framework != fw) continue;  // as before: a catch-all applies to its own framework only
      for (const auto& [from, to] : r->params) RenameParam(call, from, to);
    }
  }

  // torch takes axis= as an alias of dim= (x.sum(axis=1), torch.cat(ts, axis=0)).
  if (fw == "torch" && call->Has("axis") && !call->IsNone("axis")) {
    const v1::Arg axis = *call->Get("axis");
    call->Set("dim", axis);
  }
  if (fw == "numpy") {
    // A ufunc's where= keeps the old values of out= where it is False: not an ONNX op.
    // np.sum/np.prod(where=mask) leave the masked items out: the reduction's lowering reads it.
    const bool masked_reduction = *canonical == "sum" || *canonical == "prod" || *canonical == "nansum" ||
                                  *canonical == "nanprod";
    // (where=None is the nan-reductions' "no mask".)
    // np.copyto(dst, src, where=mask) writes where mask is True: its lowering reads it.
    if (const v1::Arg* w = call->Get("where"); w && !IsNone(*w) && AsBool(*w) != true && !masked_reduction &&
                                               *canonical != "copyto") {
      return Status::Unsupported("NumPy where= (a masked ufunc) has no ONNX lowering");
    }
  }
  if (fw == "jax") {
    // Reductions and arg-reductions never keep dims; argmax's axes is a 1-tuple.
    if (*canonical == "sum" || *canonical == "max" || *canonical == "min" || *canonical == "prod" ||
        *canonical == "all" || *canonical == "any" || *canonical == "argmax" || *canonical == "argmin") {
      call->Set("keepdim", BoolArg(false));
    }
    if ((*canonical == "argmax" || *canonical == "argmin") && call->Get("dim")) {
      const v1::ArgList* axes = Items(*call->Get("dim"));
      if (axes && axes->items_size() == 1) call->Set("dim", axes->items(0));
    }
    if (*canonical == "reshape" && !call->IsNone("dimensions")) {
      return Status::Unsupported("lax.reshape with dimensions= (a transpose first) is not supported");
    }
  }
  if (*canonical == "div" && node.canonical() == "floor_divide") call->Set("rounding_mode", StrArg("floor"));
  // np.linalg.diagonal / np.linalg.trace: np.diagonal / np.trace over the last two axes.
  if (node.op == "numpy.linalg.diagonal" || node.op == "numpy.linalg.trace") {
    call->Set("axis1", IntArg(-2));
    call->Set("axis2", IntArg(-1));
  }
  if ((fw == "torch" || fw == "numpy") && node.canonical() == "matrix_transpose") {
    call->Set("dim0", IntArg(-2));
    call->Set("dim1", IntArg(-1));
  }
  // torch.fliplr / torch.flipud: a flip of dim 1 / dim 0 (torch refuses a tensor without it).
  auto ends_with = [&](std::string_view tail) {
    const std::string& op = node.op;
    return op.size() >= tail.size() && op.compare(op.size() - tail.size(), tail.size(), tail) == 0;
  };
  if (fw == "torch" && *canonical == "flip" && (ends_with(".fliplr") || ends_with(".flipud"))) {
    v1::Arg dims;
    dims.mutable_list()->add_items()->set_i(ends_with(".fliplr") ? 1 : 0);
    call->Set("dims", std::move(dims));
  }
  // NumPy pad: pad_width ((before, after) per axis, or one pair, or one int) and mode "edge" become
  // torch's flat list, last axis first, and "replicate".
  if (*canonical == "pad" && fw == "numpy") {
    const v1::Arg* pw = call->Get("pad_width");
    if (!pw) return Status::Unsupported("numpy.pad without pad_width");
    std::vector<std::pair<int64_t, int64_t>> pairs;
    if (auto i = AsInt(*pw)) {
      pairs.push_back({*i, *i});
    } else if (const v1::ArgList* l = Items(*pw)) {
      for (const auto& it : l->items()) {
        if (auto i = AsInt(it)) {
          pairs.push_back({*i, *i});
        } else if (auto p = AsIntList(it); p && p->size() == 2) {
          pairs.push_back({(*p)[0], (*p)[1]});
        } else if (p && p->size() == 1) {
          pairs.push_back({(*p)[0], (*p)[0]});
        } else {
          return Status::Unsupported("numpy.pad pad_width " + ArgToString(*pw, true));
        }
      }
      // ((1, 2),) or (1, 2): one pair for every axis.
      if (l->items_size() == 2 && AsInt(l->items(0))) pairs = {{pairs[0].first, pairs[1].first}};
    }
    call->Set("pad_per_axis", BoolArg(true));
    v1::Arg flat;
    for (const auto& [b, a] : pairs) {
      flat.mutable_list()->add_items()->set_i(b);
      flat.mutable_list()->add_items()->set_i(a);
    }
    call->Set("pad", flat);
    if (const v1::Arg* m = call->Get("mode"); m && m->kind_case() == v1::Arg::kS) {
      std::string mode = m->s();
      if (mode == "edge") mode = "replicate";
      else if (mode == "wrap") mode = "circular";
      call->Set("mode", StrArg(mode));
    }
    // np.pad(x, w, constant_values=v): one number for every side (a pair per axis is refused).
    if (const v1::Arg* cv = call->Get("constant_values"); cv && !IsNone(*cv)) {
      if (!AsDouble(*cv) || HasTensor(*cv)) {
        return Status::Unsupported("numpy.pad constant_values " + ArgToString(*cv, true) + " (only one number lowers)");
      }
      v1::Arg copy = *cv;
      call->Set("value", copy);
    }
    if (!call->Has("value")) call->Set("value", IntArg(0));
  }
  // lax.pad: padding_config ((lo, hi, interior) per axis) and a padding_value operand.
  if (*canonical == "pad" && fw == "jax") {
    const v1::ArgList* config = Items(*call->Get("padding_config"));
    if (!config) return Status::Unsupported("padding_config is not a list");
    v1::Arg flat;
    for (const auto& it : config->items()) {
      auto p = AsIntList(it);
      if (!p || p->size() != 3) return Status::Unsupported("padding_config is not (lo, hi, interior) triples");
      if ((*p)[2] != 0) return Status::Unsupported("lax.pad with interior padding");
      flat.mutable_list()->add_items()->set_i((*p)[0]);
      flat.mutable_list()->add_items()->set_i((*p)[1]);
    }
    call->Set("pad", flat);
    call->Set("pad_per_axis", BoolArg(true));
    call->Set("mode", StrArg("constant"));
    if (const v1::Arg* v = call->Get("padding_value")) {
      v1::Arg copy = *v;
      call->Set("value", copy);
    }
  }
  return Status::Ok();
}

}  // namespace onnx_export
}  // namespace ivytrace
