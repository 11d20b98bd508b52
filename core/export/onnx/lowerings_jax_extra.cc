// More lax primitives (issue 11): the shifts, population_count and clz (bit arithmetic with
// BitShift, ONNX opset 17's only bit op: it takes unsigned integers, so signed values are shifted
// as their unsigned bit patterns), and reduce_xor of bools. cbrt and cummax/cummin share the
// NumPy lowerings (lowerings_numpy_extra.cc, lowerings_ufunc_methods.cc).
#include <algorithm>
#include <limits>
#include <map>

#include "core/export/onnx/lowerings.h"
#include "core/ir/arg.h"

namespace ivytrace {
namespace onnx_export {

namespace {

// The unsigned dtype with `d`'s bits, and the bit width; false for non-integers.
bool Unsigned(v1::DType d, v1::DType* u, int* bits) {
  switch (d) {
    case v1::INT8: case v1::UINT8: *u = v1::UINT8, *bits = 8; return true;
    case v1::INT16: case v1::UINT16: *u = v1::UINT16, *bits = 16; return true;
    case v1::INT32: case v1::UINT32: *u = v1::UINT32, *bits = 32; return true;
    case v1::INT64: case v1::UINT64: *u = v1::UINT64, *bits = 64; return true;
    default: return false;
  }
}

bool IsSigned(v1::DType d) { return d == v1::INT8 || d == v1::INT16 || d == v1::INT32 || d == v1::INT64; }

// Each bit of `u` (unsigned, `bits` wide) as int64 0/1, along a new last axis (bit 0 first).
std::string Bits(LoweringContext& ctx, const std::string& u, v1::DType ud, int bits) {
  std::vector<int64_t> ks(bits);
  for (int k = 0; k < bits; ++k) ks[k] = k;
  const std::string shifts = ctx.CastTo(ctx.Int64s(ks), v1::INT64, ud);
  auto* s = ctx.Emit("BitShift", {ctx.Unsqueeze(u, {-1}), shifts}, {ctx.Temp("shifted")});
  SetAttr(s, "direction", std::string("RIGHT"));
  // (A uint64 pattern above 2^63 becomes a negative int64; its floor Mod 2 is still its low bit.)
  return ctx.EmitTemp("Mod", {ctx.CastTo(s->output(0), ud, v1::INT64), ctx.Scalar(Number::Int(2), v1::INT64)});
}

}  // namespace

// shift_left_p / shift_right_logical_p / shift_right_arithmetic_p(x, y) with XLA's semantics: a
// shift by y < 0 or y >= the bit width gives 0 (left, logical) or the sign (arithmetic). Signed
// values shift as their unsigned bit patterns; an arithmetic shift of a negative x is
// ~(~x >>> y), a logical shift of the non-negative ~x.
Status LowerShift(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* a = call.Get("input");
  const v1::Arg* b = call.Get("other");
  if (!a || !b || (!HasTensor(*a) && !HasTensor(*b))) return Status::Unsupported("a shift without an integer array");
  const std::string& c = ctx.canonical();
  const v1::DType d = ctx.DType(result);
  v1::DType ud;
  int bits;
  if (!Unsigned(d, &ud, &bits)) return Status::Unsupported(c + " with a " + DTypeName(d) + " result");
  for (const v1::Arg* op : {a, b}) {
    if (op->kind_case() == v1::Arg::kTensor && !Unsigned(ctx.DType(op->tensor().value()), &ud, &bits)) {
      return Status::Unsupported(c + " of " + DTypeName(ctx.DType(op->tensor().value())));
    }
  }
  Unsigned(d, &ud, &bits);
  // np.right_shift: arithmetic for signed integers, logical for unsigned ones (NumPy's loops).
  const bool arithmetic = c == "shift_right_arithmetic" || (c == "right_shift" && IsSigned(d));
  if (arithmetic && !IsSigned(d)) return Status::Unsupported("shift_right_arithmetic of unsigned integers");
  // Operands in the result's dtype (NumPy promotes them to it), shift counts in int64 (every count
  // fits; a uint64 count above 2^63 becomes negative, out of range as it should be), checked there.
  std::string in, y64;
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *a, d, &in));
  IVY_RETURN_IF_ERROR(OperandAs(ctx, *b, v1::INT64, &y64));
  const std::string zero64 = ctx.Scalar(Number::Int(0), v1::INT64);
  const std::string in_range = ctx.EmitTemp("And", {ctx.EmitTemp("Less", {y64, ctx.Scalar(Number::Int(bits), v1::INT64)}),
                                                    ctx.EmitTemp("GreaterOrEqual", {y64, zero64})});
  const std::string count = ctx.CastTo(
      ctx.EmitTemp("Where", {in_range, y64, arithmetic ? ctx.Scalar(Number::Int(bits - 1), v1::INT64) : zero64}), v1::INT64, ud);
  std::string neg;
  if (arithmetic) {
    const std::string zero = ctx.Scalar(Number::Int(0), d), minus_one = ctx.Scalar(Number::Int(-1), d);
    neg = ctx.EmitTemp("Less", {in, zero});
    const std::string flipped = ctx.Temp("flipped");
    EmitWhere(ctx, neg, ctx.EmitTemp("Sub", {minus_one, in}), in, d, flipped);
    in = flipped;
  }
  auto* s = ctx.Emit("BitShift", {ctx.CastTo(in, d, ud), count}, {ctx.Temp("shifted")});
  SetAttr(s, "direction", std::string(c == "shift_left" || c == "left_shift" ? "LEFT" : "RIGHT"));
  std::string out = ctx.CastTo(s->output(0), ud, d);
  if (arithmetic) {
    EmitWhere(ctx, neg, ctx.EmitTemp("Sub", {ctx.Scalar(Number::Int(-1), d), out}), out, d, ctx.Out(result));
    return Status::Ok();
  }
  EmitWhere(ctx, in_range, out, ctx.Scalar(Number::Int(0), d), d, ctx.Out(result));
  return Status::Ok();
}

// population_count_p / clz_p: the bits of x's pattern, summed, or the width minus the position of
// the highest set bit.
Status LowerBitCount(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(x);
  v1::DType ud;
  int bits;
  if (!Unsigned(d, &ud, &bits)) return Status::Unsupported(ctx.canonical() + " of " + DTypeName(d));
  std::string in = ctx.In(x);
  if (ctx.canonical() == "bitwise_count" && IsSigned(d)) in = ctx.EmitTemp("Abs", {in});  // NumPy counts |x|'s bits
  const std::string b = Bits(ctx, ctx.CastTo(in, d, ud), ud, bits);
  onnx::NodeProto* r = nullptr;
  std::string out;
  if (ctx.canonical() != "clz") {
    out = ctx.EmitTemp("ReduceSum", {b, ctx.Int64s({-1})}, &r);
  } else {
    std::vector<int64_t> ks(bits);
    for (int k = 0; k < bits; ++k) ks[k] = k + 1;
    out = ctx.EmitTemp("ReduceMax", {ctx.EmitTemp("Mul", {b, ctx.Int64s(ks)})}, &r);
    SetAttr(r, "axes", std::vector<int64_t>{-1});
    out = ctx.EmitTemp("Sub", {ctx.Scalar(Number::Int(bits), v1::INT64), out});
  }
  SetAttr(r, "keepdims", int64_t{0});
  ctx.Emit("Identity", {ctx.CastTo(out, v1::INT64, ctx.DType(result))}, {ctx.Out(result)});
  return Status::Ok();
}

// reduce_xor_p(x, axes) of bools: whether an odd number of items is True.
Status LowerReduceXor(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (ctx.DType(x) != v1::BOOL) {
    return Status::Unsupported("reduce_xor of integers (ONNX opset 17 has no bitwise Xor)");
  }
  auto axes = call.IntList("dim");
  if (!axes) return Status::Unsupported("axes is not ints");
  for (int64_t& a : *axes) IVY_RETURN_IF_ERROR(NormalizeAxis(a, ctx.Rank(x), &a));
  std::string out = ctx.CastTo(ctx.In(x), v1::BOOL, v1::INT64);
  if (!axes->empty()) {
    onnx::NodeProto* r = nullptr;
    out = ctx.EmitTemp("ReduceSum", {out, ctx.Int64s(*axes)}, &r);
    SetAttr(r, "keepdims", int64_t{0});
  }
  const std::string odd = ctx.EmitTemp("Equal", {ctx.EmitTemp("Mod", {out, ctx.Scalar(Number::Int(2), v1::INT64)}),
                                                 ctx.Scalar(Number::Int(1), v1::INT64)});
  ctx.Emit("Identity", {ctx.CastTo(odd, v1::BOOL, ctx.DType(result))}, {ctx.Out(result)});
  return Status::Ok();
}


// lax.scatter_p / scatter-add in the forms jnp's `x.at[idx].set(u)` / `.add(u)` record: each index
// vector (the indices' last dim) addresses distinct operand dims (scatter_dims_to_operand_dims,
// all of them inserted window dims), the updates are [batch..., window...] with the window the
// operand's other dims whole. A Transpose brings the addressed dims first, ScatterND writes (or
// adds, reduction "add"), and a Transpose puts them back. Out-of-bounds index vectors are dropped
// (FILL_OR_DROP, PROMISE_IN_BOUNDS) by sending them to one extra slot padded onto each addressed
// dim and sliced off after, or clamped (CLIP). Other dimension numbers (batching dims, partial
// windows) and the other combiners are refused.
Status LowerLaxScatter(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, indices, updates, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(TensorParam(call, "indices", &indices));
  IVY_RETURN_IF_ERROR(TensorParam(call, "updates", &updates));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const bool add = ctx.canonical() == "scatter_add", mul = ctx.canonical() == "scatter_mul";
  const bool extreme = ctx.canonical() == "scatter_max" || ctx.canonical() == "scatter_min";
  // scatter_p's combiner is "replace" whatever jaxpr it carries (None for x.at[].set).
  call.Get("update_jaxpr");
  call.Get("update_consts");
  const v1::Arg* dn = call.Get("dimension_numbers");
  const auto unsupported = [&](const std::string& why) {
    return Status::Unsupported("lax.scatter other than jnp's x.at[idx] form: " + why + " (dimension_numbers " +
                               (dn ? ArgToString(*dn, true) : std::string("missing")) + ")");
  };
  if (!dn || dn->kind_case() != v1::Arg::kDict) return unsupported("no dimension numbers");
  std::map<std::string, std::vector<int64_t>> f;
  const auto& dict = dn->dict();
  for (int i = 0; i < dict.keys_size() && i < dict.values_size(); ++i) {
    if (dict.keys(i) == "__type__") continue;
    auto l = AsIntList(dict.values(i));
    if (!l) return unsupported("a dimension number that is not ints");
    f[dict.keys(i)] = *l;
  }
  const int r = ctx.Rank(x), ri = ctx.Rank(indices), ru = ctx.Rank(updates);
  if (ri < 1) return unsupported("0-d indices");
  const int64_t q = ctx.Shape(indices).back();
  const int nb = ri - 1;
  if (!f["operand_batching_dims"].empty() || !f["scatter_indices_batching_dims"].empty()) return unsupported("batching dims");
  std::vector<int64_t> sd = f["scatter_dims_to_operand_dims"];
  if (static_cast<int64_t>(sd.size()) != q || q > r) return unsupported("index vectors of another length");
  std::vector<int64_t> sorted_sd = sd;
  std::sort(sorted_sd.begin(), sorted_sd.end());
  if (std::adjacent_find(sorted_sd.begin(), sorted_sd.end()) != sorted_sd.end() || (q > 0 && (sorted_sd[0] < 0 || sorted_sd.back() >= r)) ||
      f["inserted_window_dims"] != sorted_sd) {
    return unsupported("addressed dims that are not all inserted window dims");
  }
  std::vector<int64_t> window_dims, perm = sd;
  for (int64_t k = 0; k < r; ++k) {
    if (!std::binary_search(sorted_sd.begin(), sorted_sd.end(), k)) perm.push_back(k);
  }
  for (int64_t k = 0; k < r - q; ++k) window_dims.push_back(nb + k);
  if (ru != nb + r - q || f["update_window_dims"] != window_dims) return unsupported("update window dims that are not the last");
  for (int64_t k = 0; k < r - q; ++k) {
    if (ctx.Shape(updates)[nb + k] != ctx.Shape(x)[perm[q + k]]) return unsupported("a window smaller than the operand");
  }
  for (int k = 0; k < nb; ++k) {
    if (ctx.Shape(updates)[k] != ctx.Shape(indices)[k]) return unsupported("updates and indices of other batch shapes");
  }
  std::string mode = "FILL_OR_DROP";
  if (const v1::Arg* m = call.Get("mode"); m && !IsNone(*m)) {
    const std::string t = ArgToString(*m, true);
    if (t.find("CLIP") != std::string::npos) mode = "CLIP";
    else if (t.find("PROMISE_IN_BOUNDS") == std::string::npos && t.find("FILL_OR_DROP") == std::string::npos) {
      return Status::Unsupported("lax.scatter mode " + t);
    }
  }
  const v1::DType d = ctx.DType(result);
  if (OnnxElemType(d) == 0) return Status::Unsupported(std::string("lax.scatter in ") + DTypeName(d));
  if ((add || mul || extreme) && d == v1::BOOL) return Status::Unsupported("lax." + ctx.canonical() + " of bools");
  const v1::DType work = d == v1::BOOL ? v1::UINT8 : d;  // Pad has no bool kernel
  bool identity = true;
  for (int k = 0; k < r; ++k) identity = identity && perm[k] == k;
  std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), work);
  if (!identity) {
    onnx::NodeProto* t = nullptr;
    in = ctx.EmitTemp("Transpose", {in}, &t);
    SetAttr(t, "perm", perm);
  }
  const std::string upd = ctx.CastTo(ctx.In(updates), ctx.DType(updates), work);
  std::string idx = ctx.CastTo(ctx.In(indices), ctx.DType(indices), v1::INT64);
  // The addressed dims' lengths, int64 [q].
  const std::string lens = ctx.EmitTemp("Slice", {ctx.EmitTemp("Shape", {in}), ctx.Int64s({0}), ctx.Int64s({q})});
  const std::string zero = ctx.Scalar(Number::Int(0), v1::INT64);
  std::string target = in;
  if (mode == "CLIP") {
    idx = ctx.EmitTemp("Min", {ctx.EmitTemp("Max", {idx, zero}), ctx.EmitTemp("Sub", {lens, ctx.Scalar(Number::Int(1), v1::INT64)})});
  } else if (q > 0) {
    const std::string oob = ctx.EmitTemp("Or", {ctx.EmitTemp("Less", {idx, zero}), ctx.EmitTemp("GreaterOrEqual", {idx, lens})});
    onnx::NodeProto* rm = nullptr;
    const std::string any = ctx.EmitTemp("ReduceMax", {ctx.CastTo(oob, v1::BOOL, v1::INT32)}, &rm);
    SetAttr(rm, "axes", std::vector<int64_t>{-1});
    SetAttr(rm, "keepdims", int64_t{1});
    idx = ctx.EmitTemp("Where", {ctx.CastTo(any, v1::INT32, v1::BOOL), ctx.EmitTemp("Expand", {lens, ctx.EmitTemp("Shape", {idx})}), idx});
    std::vector<int64_t> pads(2 * r, 0);
    for (int64_t k = 0; k < q; ++k) pads[r + k] = 1;
    target = ctx.EmitTemp("Pad", {in, ctx.Int64s(pads)});
  }
  std::string out;
  if (extreme) {
    // ScatterND's max/min reductions are opset 18: a one-hot max over every update (lowerings_rest.cc).
    IVY_RETURN_IF_ERROR(EmitScatterExtreme(ctx, target, idx, upd, q, nb, r - static_cast<int>(q), ctx.canonical() == "scatter_max", work, &out));
  } else {
    onnx::NodeProto* s = nullptr;
    out = ctx.EmitTemp("ScatterND", {target, idx, upd}, &s);
    if (add) SetAttr(s, "reduction", std::string("add"));
    if (mul) SetAttr(s, "reduction", std::string("mul"));
  }
  if (mode != "CLIP" && q > 0) {
    std::vector<int64_t> axes(q);
    for (int64_t k = 0; k < q; ++k) axes[k] = k;
    out = ctx.EmitTemp("Slice", {out, ctx.Int64s(std::vector<int64_t>(q, 0)), lens, ctx.Int64s(axes)});
  }
  if (!identity) {
    std::vector<int64_t> inv(r);
    for (int k = 0; k < r; ++k) inv[perm[k]] = k;
    onnx::NodeProto* t = nullptr;
    out = ctx.EmitTemp("Transpose", {out}, &t);
    SetAttr(t, "perm", inv);
  }
  ctx.Emit("Identity", {ctx.CastTo(out, work, d)}, {ctx.Out(result)});
  return Status::Ok();
}

}  // namespace onnx_export
}  // namespace ivytrace

namespace ivytrace {
namespace onnx_export {

// lax.sort_p(*operands, dimension, is_stable, num_keys): every operand permuted by the
// lexicographic order of the first num_keys operands along `dimension` (jnp.sort is one operand;
// jnp.argsort sorts (x, iota) and keeps the second). jax on CPU orders NaN after every number
// (whatever its sign bit), takes -0.0 and 0.0 as equal, and keeps equal keys in index order (its
// unstable sort gives that order too). ONNX TopK orders equal values by index (the spec's
// tie-break), so each key is a stable ascending TopK; several keys (and a float key's NaN flag,
// which ONNX TopK does not place) are stable passes from the least significant key to the
// most significant, each composed with the permutation so far.
Status LowerLaxSort(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  const v1::Arg* ops = call.Get("tensors");
  auto items = ops ? SequenceItems(*ops) : std::nullopt;
  if (!items || items->empty()) return Status::Unsupported("lax.sort without operands");
  std::vector<ValueId> operands;
  for (const v1::Arg* a : *items) {
    if (a->kind_case() != v1::Arg::kTensor) return Status::Unsupported("lax.sort of an operand that is not an array");
    operands.push_back(a->tensor().value());
  }
  const std::vector<ValueId> results = ResultTensors(node);
  if (results.size() != operands.size()) return Status::Unsupported("lax.sort results do not match its operands");
  const int rank = ctx.Rank(operands[0]);
  if (rank == 0) return Status::Unsupported("lax.sort of a 0-d array");
  for (ValueId v : operands) {
    if (ctx.Shape(v) != ctx.Shape(operands[0])) return Status::Unsupported("lax.sort of operands of different shapes");
  }
  auto dim = call.Int("dim");
  auto keys = call.Int("num_keys");
  if (!dim || !keys) return Status::Unsupported("lax.sort dimension or num_keys is not an int");
  call.Get("stable");  // equal keys keep index order either way (above)
  if (*keys < 1 || *keys > static_cast<int64_t>(operands.size())) return Status::Unsupported("lax.sort num_keys out of range");
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, rank, &axis));

  onnx::NodeProto* g = nullptr;
  const std::string n = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {ctx.In(operands[0])}), ctx.Int64s({axis})}, &g);
  SetAttr(g, "axis", int64_t{0});
  // The permutation that sorts `key` (ascending, equal items in index order).
  auto argsort = [&](const std::string& key) {
    onnx::NodeProto* t = nullptr;
    ctx.EmitTemp("TopK", {key, n}, &t);
    const std::string indices = ctx.Temp("order");
    t->add_output(indices);
    SetAttr(t, "axis", axis);
    SetAttr(t, "largest", int64_t{0});
    SetAttr(t, "sorted", int64_t{1});
    return indices;
  };
  auto permute = [&](const std::string& x, const std::string& perm) {
    onnx::NodeProto* ge = nullptr;
    const std::string out = ctx.EmitTemp("GatherElements", {x, perm}, &ge);
    SetAttr(ge, "axis", axis);
    return out;
  };
  // The sort keys, least significant first, each a dtype TopK takes.
  std::vector<std::string> passes;
  for (int64_t k = *keys - 1; k >= 0; --k) {
    const ValueId key = operands[k];
    const v1::DType d = ctx.DType(key);
    const std::string in = ctx.In(key);
    if (IsFloating(d)) {
      const std::string kd = d == v1::FLOAT64 ? in : ctx.CastTo(in, d, v1::FLOAT32);  // float16 keys exactly in float32
      const v1::DType kt = d == v1::FLOAT64 ? v1::FLOAT64 : v1::FLOAT32;
      const std::string nan = ctx.EmitTemp("IsNaN", {kd});
      passes.push_back(ctx.EmitTemp("Where", {nan, ctx.Scalar(Number::Float(std::numeric_limits<double>::infinity()), kt), kd}));
      passes.push_back(ctx.CastTo(nan, v1::BOOL, v1::INT32));  // NaN after everything
    } else if (d == v1::BOOL || d == v1::INT8 || d == v1::INT16 || d == v1::UINT8 || d == v1::UINT16) {
      passes.push_back(ctx.CastTo(in, d, v1::INT32));
    } else if (d == v1::INT32 || d == v1::INT64 || d == v1::UINT32) {
      passes.push_back(d == v1::UINT32 ? ctx.CastTo(in, d, v1::INT64) : in);
    } else {
      return Status::Unsupported(std::string("lax.sort by a key of ") + DTypeName(d));
    }
  }
  std::string perm;
  for (const std::string& key : passes) {
    if (perm.empty()) {
      perm = argsort(key);
    } else {
      perm = permute(perm, argsort(permute(key, perm)));
    }
  }
  for (size_t i = 0; i < operands.size(); ++i) {
    auto* ge = ctx.Emit("GatherElements", {ctx.In(operands[i]), perm}, {ctx.Out(results[i])});
    SetAttr(ge, "axis", axis);
  }
  return Status::Ok();
}

}  // namespace onnx_export
}  // namespace ivytrace
