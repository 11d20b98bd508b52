// Lowerings of torch.linalg / numpy.linalg functions that ONNX opset 17 can express: the
// determinant family (Det; slogdet and logdet from it), linalg.norm's vector and matrix forms,
// and the torch spellings of ops whose canonical lowering was written for NumPy (multi_dot,
// vander, matrix_power, msort, sum_to_size). Each torch form renames its arguments into the
// canonical op's parameters on a copy of the call (the copy shares which parameters were read).
// The matrix decompositions (svd, qr, eig, cholesky, lu, solve, inverse, ...) have no fixed ONNX
// form: they are refused in lowering_table.cc's kRefused.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/export/onnx/lowerings.h"
#include "core/ir/arg.h"

namespace ivytrace {
namespace onnx_export {

namespace {

v1::Arg IntArgOf(int64_t v) {
  v1::Arg a;
  a.set_i(v);
  return a;
}

// The axes of a dim/axis argument (None -> empty, an int -> one, a list/tuple of ints), normalized.
Status DimList(const BoundCall& call, const char* param, int rank, bool* given, std::vector<int64_t>* axes) {
  axes->clear();
  *given = false;
  const v1::Arg* a = call.Get(param);
  if (!a || IsNone(*a)) return Status::Ok();
  *given = true;
  std::vector<int64_t> raw;
  if (auto i = AsInt(*a)) {
    raw.push_back(*i);
  } else if (auto l = AsIntList(*a)) {
    raw = *l;
  } else {
    return Status::Unsupported(std::string(param) + "=" + ArgToString(*a, true) + " is not an int or ints");
  }
  for (int64_t v : raw) {
    int64_t n;
    IVY_RETURN_IF_ERROR(NormalizeAxis(v, rank, &n));
    axes->push_back(n);
  }
  return Status::Ok();
}

// A square-matrix stack [..., n, n] of float32 (onnxruntime's Det has a float kernel only).
Status CheckDetInput(LoweringContext& ctx, ValueId x, const std::string& what) {
  const int r = ctx.Rank(x);
  if (r < 2) return Status::Unsupported(what + " of a tensor of rank < 2");
  const int64_t m = ctx.Shape(x)[r - 2], n = ctx.Shape(x)[r - 1];
  if (m != n || n < 1) return Status::Unsupported(what + " of matrices that are not square (or empty)");
  if (ctx.DType(x) != v1::FLOAT32) {
    return Status::Unsupported(what + " of a " + DTypeName(ctx.DType(x)) +
                               " tensor (onnxruntime implements ONNX Det for float32 only)");
  }
  return Status::Ok();
}

}  // namespace

// det(A) (torch.det, Tensor.det, torch.linalg.det, np.linalg.det), slogdet (sign, log|det|) and
// logdet (log det: NaN for a negative determinant, -inf for a singular matrix), all from ONNX Det.
// A singular matrix gives det 0, sign 0 and log|det| -inf, as torch and NumPy do.
Status LowerDet(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x;
  IVY_RETURN_IF_ERROR(TensorParam(call, call.Has("input") ? "input" : "a", &x));
  const std::string& c = ctx.canonical();
  IVY_RETURN_IF_ERROR(CheckDetInput(ctx, x, c));
  const std::vector<ValueId> results = ResultTensors(node);
  const std::string det = ctx.EmitTemp("Det", {ctx.In(x)});
  if (c == "det") {
    if (results.size() != 1) return Status::Unsupported("det with an unexpected result");
    ctx.Emit("Identity", {ctx.CastTo(det, v1::FLOAT32, ctx.DType(results[0]))}, {ctx.Out(results[0])});
  } else if (c == "logdet") {
    if (results.size() != 1) return Status::Unsupported("logdet with an unexpected result");
    ctx.Emit("Identity", {ctx.CastTo(ctx.EmitTemp("Log", {det}), v1::FLOAT32, ctx.DType(results[0]))}, {ctx.Out(results[0])});
  } else if (c == "slogdet") {
    if (results.size() != 2) return Status::Unsupported("slogdet without (sign, logabsdet)");
    ctx.Emit("Identity", {ctx.CastTo(ctx.EmitTemp("Sign", {det}), v1::FLOAT32, ctx.DType(results[0]))}, {ctx.Out(results[0])});
    ctx.Emit("Identity", {ctx.CastTo(ctx.EmitTemp("Log", {ctx.EmitTemp("Abs", {det})}), v1::FLOAT32, ctx.DType(results[1]))},
             {ctx.Out(results[1])});
  } else {
    return Status::Unsupported("'det' lowering does not know canonical op '" + c + "'");
  }
  return Status::Ok();
}

// linalg.norm (torch.linalg.norm, np.linalg.norm): with ord None the 2-norm of the flattened
// values (dim None), of vectors (one dim) or the Frobenius norm (two dims); with an ord, a vector
// norm over one dim (or of a 1-D input when dim is None) and a matrix norm over two dims (or of a
// 2-D input). Vector norms go to vector_norm, matrix norms to matrix_norm (which refuses the
// singular-value norms 2, -2 and 'nuc').
Status LowerLinalgNorm(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  const int rank = ctx.Rank(x);
  bool dim_given = false;
  std::vector<int64_t> axes;
  IVY_RETURN_IF_ERROR(DimList(call, "dim", rank, &dim_given, &axes));
  call.Get("dtype");  // the result's dtype: both lowerings compute in it
  const bool ord_none = call.IsNone("ord");
  const v1::Arg* ord = call.Get("ord");
  bool matrix;
  if (dim_given) {
    if (axes.size() == 1) matrix = false;
    else if (axes.size() == 2) matrix = true;
    else return Status::Unsupported("linalg.norm over " + std::to_string(axes.size()) + " dims");
  } else if (ord_none) {
    matrix = false;  // the 2-norm of the flattened values
  } else if (rank == 1 || rank == 2) {
    matrix = rank == 2;
    axes = rank == 2 ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{0};
  } else {
    return Status::Unsupported("linalg.norm with an ord and no dim of a tensor of rank " + std::to_string(rank));
  }
  if (!matrix && ord && ord->kind_case() == v1::Arg::kS) {
    return Status::Unsupported("linalg.norm with ord " + ArgToString(*ord, true) + " of vectors (the frameworks refuse it)");
  }
  BoundCall c = call;
  if (!matrix || ord_none) {
    // A vector norm, or the Frobenius norm of two dims (the 2-norm of their values).
    if (ord_none) c.Set("ord", [] { v1::Arg a; a.set_f(2.0); return a; }());
    if (dim_given || !axes.empty()) {
      v1::Arg l;
      for (int64_t a : axes) l.mutable_list()->add_items()->set_i(a);
      c.Set("dim", std::move(l));
    }
    const std::string keep = ctx.canonical();
    ctx.SetCanonical("vector_norm");
    Status s = LowerVectorNorm(node, c, ctx);
    ctx.SetCanonical(keep);
    return s;
  }
  // A matrix norm over the last two dims (in order; other dims are refused).
  const auto ord_num = ord ? AsDouble(*ord) : std::nullopt;
  if ((ord && ord->kind_case() == v1::Arg::kS && ord->s() == "nuc") || (ord_num && std::fabs(*ord_num) == 2.0)) {
    return Status::Unsupported("a matrix norm with ord " + ArgToString(*ord, true) + " needs singular values (an SVD)");
  }
  if (!(axes[0] == rank - 2 && axes[1] == rank - 1)) {
    return Status::Unsupported("a matrix norm over dims other than the last two, in order");
  }
  return LowerMatrixNorm(node, c, ctx);
}

// torch.linalg.matrix_norm(A, ord='fro', dim=(-2, -1), keepdim, dtype) and np.linalg.matrix_norm:
// matrix_norm over the last two dims.
Status LowerMatrixNormByFramework(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  if (FromTorch(node)) {
    bool given = false;
    std::vector<int64_t> axes;
    IVY_RETURN_IF_ERROR(DimList(call, "dim", ctx.Rank(x), &given, &axes));
    if (axes.size() != 2 || axes[0] != ctx.Rank(x) - 2 || axes[1] != ctx.Rank(x) - 1) {
      return Status::Unsupported("matrix_norm over dims other than the last two, in order");
    }
    call.Get("dtype");  // the result's dtype: the lowering computes in it
  }
  return LowerMatrixNorm(node, call, ctx);
}

// torch.linalg.multi_dot(tensors) is np.linalg.multi_dot(arrays).
Status LowerMultiDotByFramework(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  if (!FromTorch(node)) return LowerMultiDot(node, call, ctx);
  const v1::Arg* t = call.Get("tensors");
  if (!t) return Status::Unsupported("multi_dot without tensors");
  BoundCall c = call;
  c.Set("arrays", *t);
  return LowerMultiDot(node, c, ctx);
}

// torch.linalg.vander(x, N): the increasing powers x^0 .. x^(N-1) of x (..., n) in a new last dim,
// each the previous one times x (ATen's cumprod), in the result's dtype; N defaults to n, which
// is then pinned (another length would ask for another N). np.vander(x, N, increasing) as is.
Status LowerVanderByFramework(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  if (!FromTorch(node)) return LowerVander(node, call, ctx);
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "x", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const int r = ctx.Rank(x);
  if (r < 1) return Status::Unsupported("linalg.vander of a 0-d tensor");
  const v1::DType d = ctx.DType(result);
  if (d == v1::BOOL || d == v1::DTYPE_UNSPECIFIED) return Status::Unsupported(std::string("linalg.vander in ") + DTypeName(d));
  std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  int64_t n;
  if (call.IsNone("N")) {
    n = ctx.Shape(x)[r - 1];
    if (n < 0) return Status::Unsupported("linalg.vander without N of a tensor of unknown length");
    std::vector<int64_t> pin(static_cast<size_t>(r), 0);  // 0: keep the dim (Reshape), the last pinned
    pin[r - 1] = n;
    in = ctx.EmitTemp("Reshape", {in, ctx.Int64s(pin)});
  } else {
    auto v = call.Int("N");
    if (!v) return Status::Unsupported("linalg.vander N is not an int");
    n = *v;
  }
  if (n < 2 || n > 64) return Status::Unsupported("linalg.vander with N " + std::to_string(n) + " (torch needs N > 1)");
  in = ctx.Unsqueeze(in, {r});
  std::vector<std::string> cols;
  // x^0 as x's shape: x * 0 + 1 would turn inf into NaN, so an Expand of a 1.
  cols.push_back(ctx.EmitTemp("Expand", {ctx.Scalar(Number::Int(1), d), ctx.EmitTemp("Shape", {in})}));
  std::string p = in;
  for (int64_t k = 1; k < n; ++k) {
    cols.push_back(p);
    if (k + 1 < n) p = ctx.EmitTemp("Mul", {p, in});
  }
  auto* c = ctx.Emit("Concat", cols, {ctx.Out(result)});
  SetAttr(c, "axis", int64_t{r});
  return Status::Ok();
}

// torch.matrix_power / Tensor.matrix_power / torch.linalg.matrix_power(input, n), n a Python int
// >= 0: np.linalg.matrix_power's products (torch multiplies in the same order: binary
// decomposition from the least significant bit). A negative n needs an inverse: refused.
Status LowerMatrixPowerByFramework(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  if (!FromTorch(node)) return LowerMatrixPower(node, call, ctx);
  const v1::Arg* in = call.Get("input");
  if (!in) return Status::Unsupported("matrix_power without input");
  BoundCall c = call;
  c.Set("a", *in);
  return LowerMatrixPower(node, c, ctx);
}

// torch.msort(input): torch.sort(input, dim=0)'s values.
Status LowerMsort(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  BoundCall c = call;
  c.Set("dim", IntArgOf(0));
  const std::string keep = ctx.canonical();
  ctx.SetCanonical("sort");
  Status s = LowerTopK(node, c, ctx);
  ctx.SetCanonical(keep);
  return s;
}

namespace {

// `v` (a graph value of recorded shape `shape`) reshaped to that shape: onnxruntime fails the
// model when a run brings another size, where a lowering built from the recorded sizes (index
// tables, pads) would otherwise compute something else.
std::string PinShape(LoweringContext& ctx, const std::string& v, const std::vector<int64_t>& shape) {
  return ctx.EmitTemp("Reshape", {v, ctx.Int64s(shape)});
}

bool StaticShape(const std::vector<int64_t>& shape) {
  for (int64_t s : shape) {
    if (s < 0) return false;
  }
  return true;
}

// The tensors of a variadic/list parameter.
Status TensorItems(const BoundCall& call, const char* param, std::vector<ValueId>* out) {
  const v1::Arg* a = call.Get(param);
  if (!a) return Status::Unsupported(std::string("missing ") + param);
  auto items = SequenceItems(*a);
  if (!items) return Status::Unsupported(std::string(param) + " is not a list of tensors");
  // One list given as the variadic's only item: torch.block_diag(*[a, b]) binds [a, b]; a list
  // inside the list is not a torch form.
  for (const v1::Arg* it : *items) {
    if (it->kind_case() != v1::Arg::kTensor) return Status::Unsupported(std::string(param) + " holds a non-tensor item");
    out->push_back(it->tensor().value());
  }
  return Status::Ok();
}

std::string ConcatOn(LoweringContext& ctx, const std::vector<std::string>& parts, int64_t axis) {
  if (parts.size() == 1) return parts[0];
  onnx::NodeProto* n = nullptr;
  const std::string r = ctx.EmitTemp("Concat", parts, &n);
  SetAttr(n, "axis", axis);
  return r;
}

}  // namespace

// torch.block_diag(*tensors): each tensor (0-D as 1 x 1, 1-D as a row) on the diagonal of a
// zero matrix, in the result's dtype. The sizes are the recorded ones (pinned with a Reshape).
Status LowerBlockDiag(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  std::vector<ValueId> ts;
  IVY_RETURN_IF_ERROR(TensorItems(call, "tensors", &ts));
  const v1::DType d = ctx.DType(result);
  if (ts.empty()) return Status::Unsupported("block_diag of no tensors");
  std::vector<int64_t> rows, cols;
  for (ValueId t : ts) {
    const std::vector<int64_t>& sh = ctx.Shape(t);
    if (sh.size() > 2 || !StaticShape(sh)) return Status::Unsupported("block_diag of a tensor of rank > 2 or unknown size");
    rows.push_back(sh.size() == 2 ? sh[0] : 1);
    cols.push_back(sh.empty() ? 1 : sh.back());
  }
  int64_t total = 0;
  for (int64_t c : cols) total += c;
  std::vector<std::string> blocks;
  int64_t left = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    const std::string b = PinShape(ctx, ctx.CastTo(ctx.In(ts[i]), ctx.DType(ts[i]), d), {rows[i], cols[i]});
    const int64_t right = total - left - cols[i];
    if (left == 0 && right == 0) {
      blocks.push_back(b);
    } else {
      const std::string zero = ctx.Scalar(Number::Int(0), d);
      blocks.push_back(ctx.EmitTemp("Pad", {b, ctx.Int64s({0, left, 0, right}), zero}));
    }
    left += cols[i];
  }
  ctx.Emit("Identity", {ConcatOn(ctx, blocks, 0)}, {ctx.Out(result)});
  return Status::Ok();
}

// torch.cartesian_prod(*tensors) of 1-D tensors: every combination, the last tensor varying
// fastest, as rows of a [n1 * n2 * ..., k] tensor (one tensor: itself).
Status LowerCartesianProd(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  std::vector<ValueId> ts;
  IVY_RETURN_IF_ERROR(TensorItems(call, "tensors", &ts));
  const v1::DType d = ctx.DType(result);
  const size_t k = ts.size();
  if (k == 0) return Status::Unsupported("cartesian_prod of no tensors");
  for (ValueId t : ts) {
    if (ctx.Rank(t) != 1) return Status::Unsupported("cartesian_prod of a tensor that is not 1-D");
  }
  if (k == 1) {
    ctx.Emit("Identity", {ctx.CastTo(ctx.In(ts[0]), ctx.DType(ts[0]), d)}, {ctx.Out(result)});
    return Status::Ok();
  }
  std::vector<std::string> sizes;
  for (ValueId t : ts) sizes.push_back(ctx.EmitTemp("Shape", {ctx.In(t)}));
  const std::string grid = ConcatOn(ctx, sizes, 0);
  std::vector<std::string> cols;
  for (size_t i = 0; i < k; ++i) {
    std::vector<int64_t> shape(k, 1);
    shape[i] = -1;
    const std::string v = ctx.EmitTemp("Reshape", {ctx.CastTo(ctx.In(ts[i]), ctx.DType(ts[i]), d), ctx.Int64s(shape)});
    cols.push_back(ctx.EmitTemp("Reshape", {ctx.EmitTemp("Expand", {v, grid}), ctx.Int64s({-1, 1})}));
  }
  ctx.Emit("Identity", {ConcatOn(ctx, cols, 1)}, {ctx.Out(result)});
  return Status::Ok();
}

// torch.combinations(input, r, with_replacement) of a 1-D tensor: itertools.combinations(_with_
// replacement)'s index tuples, enumerated at export for the recorded length (pinned), gathered.
Status LowerCombinations(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (ctx.Rank(x) != 1 || ctx.Shape(x)[0] < 0) return Status::Unsupported("combinations of a tensor that is not 1-D of known size");
  auto r = call.Int("r");
  if (!r || *r < 0) return Status::Unsupported("combinations with an r that is not an int >= 0");
  const bool repl = call.Bool("with_replacement").value_or(false);
  const int64_t n = ctx.Shape(x)[0];
  if (*r == 0) return Status::Unsupported("combinations with r=0 (torch returns an empty tensor)");
  std::vector<int64_t> flat;
  int64_t count = 0;
  std::vector<int64_t> idx(*r);
  // Lexicographic enumeration of increasing (non-decreasing with replacement) index tuples.
  std::function<void(int64_t, int64_t)> rec = [&](int64_t pos, int64_t start) {
    if (pos == *r) {
      flat.insert(flat.end(), idx.begin(), idx.end());
      ++count;
      return;
    }
    for (int64_t i = start; i < n; ++i) {
      idx[pos] = i;
      rec(pos + 1, repl ? i : i + 1);
    }
  };
  rec(0, 0);
  if (count == 0) return Status::Unsupported("combinations with no tuple (an empty result)");
  if (count > 1000000) return Status::Unsupported("combinations with more than a million tuples");
  const std::string in = PinShape(ctx, ctx.CastTo(ctx.In(x), ctx.DType(x), ctx.DType(result)), {n});
  const std::string table = ctx.EmitTemp("Reshape", {ctx.Int64s(flat), ctx.Int64s({count, *r})});
  std::string out = ctx.EmitTemp("Gather", {in, table});
  if (ctx.Rank(result) != 2) return Status::Unsupported("combinations with an unexpected result rank");
  ctx.Emit("Identity", {out}, {ctx.Out(result)});
  return Status::Ok();
}

// torch.diag_embed(input, offset) with dims (-2, -1): the last dim of input on the offset-th
// diagonal of [..., m, m] matrices, m = n + |offset|, zeros elsewhere.
Status LowerDiagEmbed(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  auto off = call.Int("diagonal");
  if (!off) return Status::Unsupported("diag_embed offset is not an int");
  if (ctx.Rank(x) < 1) return Status::Unsupported("diag_embed of a 0-d tensor");
  const v1::DType d = ctx.DType(result);
  const int64_t k = *off, ak = k < 0 ? -k : k;
  std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  const int r = ctx.Rank(x);
  // x followed by |offset| zeros along the last dim: [..., m]
  if (ak > 0) {
    std::vector<int64_t> pads(2 * r, 0);
    pads[2 * r - 1] = ak;
    in = ctx.EmitTemp("Pad", {in, ctx.Int64s(pads), ctx.Scalar(Number::Int(0), d)});
  }
  onnx::NodeProto* g = nullptr;
  const std::string m = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {in}), ctx.Scalar(Number::Int(-1), v1::INT64)}, &g);
  const std::string pos = ctx.EmitTemp("Range", {ctx.Scalar(Number::Int(0), v1::INT64), m, ctx.Scalar(Number::Int(1), v1::INT64)});
  // on[i, j]: j - i == offset
  const std::string on = ctx.EmitTemp("Equal", {ctx.EmitTemp("Sub", {ctx.Unsqueeze(pos, {0}), ctx.Unsqueeze(pos, {1})}),
                                                ctx.Scalar(Number::Int(k), v1::INT64)});
  // offset >= 0: row i holds x[i]; offset < 0: column j holds x[j].
  const std::string src = ctx.Unsqueeze(in, {k >= 0 ? r : r - 1});
  EmitWhere(ctx, on, src, ctx.Scalar(Number::Int(0), d), d, ctx.Out(result));
  return Status::Ok();
}

// torch.renorm(input, p, dim, maxnorm): each slice along dim (the other dims' values) whose
// p-norm exceeds maxnorm scaled by maxnorm / (norm + 1e-7), as ATen does.
Status LowerRenorm(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  auto p = call.Double("p");
  auto maxnorm = call.Double("maxnorm");
  auto dim = call.Int("dim");
  if (!p || !maxnorm || !dim) return Status::Unsupported("renorm with p, dim or maxnorm that is not a number");
  if (*p <= 0) return Status::Unsupported("renorm with p <= 0 (torch refuses it)");
  if (*maxnorm < 0) return Status::Unsupported("renorm with a negative maxnorm (torch refuses it)");
  const v1::DType d = ctx.DType(result);
  if (!IsFloating(d)) return Status::Unsupported(std::string("renorm of a ") + DTypeName(d) + " tensor");
  const int r = ctx.Rank(x);
  if (r < 1) return Status::Unsupported("renorm of a 0-d tensor");
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, r, &axis));
  std::vector<int64_t> others;
  for (int i = 0; i < r; ++i) {
    if (i != axis) others.push_back(i);
  }
  const std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  auto reduce = [&](const char* op, const std::string& v) {
    if (others.empty()) return v;
    onnx::NodeProto* n = nullptr;
    std::string out;
    if (std::string_view(op) == "ReduceSum") {
      out = ctx.EmitTemp(op, {v, ctx.Int64s(others)}, &n);
    } else {
      out = ctx.EmitTemp(op, {v}, &n);
      SetAttr(n, "axes", others);
    }
    SetAttr(n, "keepdims", int64_t{1});
    return out;
  };
  const double inf = std::numeric_limits<double>::infinity();
  const std::string ax = ctx.EmitTemp("Abs", {in});
  std::string norm;
  if (*p == 2.0) norm = others.empty() ? ax : reduce("ReduceL2", in);
  else if (*p == 1.0) norm = reduce("ReduceSum", ax);
  else if (*p == inf) norm = reduce("ReduceMax", ax);
  else norm = ctx.EmitTemp("Pow", {reduce("ReduceSum", ctx.EmitTemp("Pow", {ax, ctx.Scalar(Number::Float(*p), d)})),
                                   ctx.Scalar(Number::Float(1.0 / *p), d)});
  const std::string mx = ctx.Scalar(Number::Float(*maxnorm), d);
  const std::string scale = ctx.EmitTemp("Div", {mx, ctx.EmitTemp("Add", {norm, ctx.Scalar(Number::Float(1e-7), d)})});
  const std::string factor = ctx.EmitTemp("Where", {ctx.EmitTemp("Greater", {norm, mx}), scale, ctx.Scalar(Number::Float(1.0), d)});
  ctx.Emit("Mul", {in, factor}, {ctx.Out(result)});
  return Status::Ok();
}

// np.correlate(a, v, mode) / np.convolve(a, v, mode) / np.polymul(a1, a2) of 1-D arrays:
// c[k] = sum_n a[n + k] * v[n] over NumPy's lags for the mode (full, same, valid; NumPy swaps
// the operands when v is the longer one and reverses, which gives the same lags), as a Gather of
// a (a zero past its end) by a static lag table times v, summed. convolve is correlate with the
// shorter operand reversed; polymul is convolve's full mode. Sizes are the recorded ones (pinned).
Status LowerCorrelate(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId a, v, result;
  const std::string& c = ctx.canonical();
  const bool poly = c == "polymul";
  IVY_RETURN_IF_ERROR(TensorParam(call, poly ? "a1" : "a", &a));
  IVY_RETURN_IF_ERROR(TensorParam(call, poly ? "a2" : "v", &v));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  std::string mode = poly ? "full" : (c == "convolve" ? "full" : "valid");
  if (!poly) {
    const v1::Arg* m = call.Get("mode");
    if (m && m->kind_case() == v1::Arg::kS) mode = m->s();
    else if (m && !IsNone(*m)) return Status::Unsupported(c + " mode " + ArgToString(*m, true));
  }
  if (mode != "full" && mode != "same" && mode != "valid") return Status::Unsupported(c + " mode '" + mode + "'");
  const v1::DType d = ctx.DType(result);
  if (d == v1::BOOL || d == v1::DTYPE_UNSPECIFIED) return Status::Unsupported(c + " in " + DTypeName(d));
  for (ValueId t : {a, v}) {
    if (ctx.Rank(t) > 1 || (poly ? false : ctx.Rank(t) != 1)) return Status::Unsupported(c + " of an array that is not 1-D");
    if (!StaticShape(ctx.Shape(t))) return Status::Unsupported(c + " of an array of unknown length");
  }
  int64_t n1 = ctx.Rank(a) == 0 ? 1 : ctx.Shape(a)[0], n2 = ctx.Rank(v) == 0 ? 1 : ctx.Shape(v)[0];
  if (n1 == 0 || n2 == 0) return Status::Unsupported(c + " of an empty array (NumPy refuses it)");
  std::string sa = PinShape(ctx, ctx.CastTo(ctx.In(a), ctx.DType(a), d), {n1});
  std::string sv = PinShape(ctx, ctx.CastTo(ctx.In(v), ctx.DType(v), d), {n2});
  if (c == "convolve" || poly) {
    // np.convolve: the longer operand first, correlated with the other reversed.
    if (n2 > n1) {
      std::swap(sa, sv);
      std::swap(n1, n2);
    }
    std::vector<int64_t> rev(n2);
    for (int64_t i = 0; i < n2; ++i) rev[i] = n2 - 1 - i;
    sv = ctx.EmitTemp("Gather", {sv, ctx.Int64s(rev)});
  }
  int64_t lo, hi;  // lags
  if (mode == "full") {
    lo = -(n2 - 1);
    hi = n1 - 1;
  } else if (mode == "valid") {
    lo = std::min<int64_t>(0, n1 - n2);
    hi = std::max<int64_t>(0, n1 - n2);
  } else if (n1 >= n2) {
    lo = -(n2 / 2);
    hi = n1 - 1 - n2 / 2;
  } else {
    lo = -(n2 - 1 - n1 / 2);
    hi = n1 / 2;
  }
  const int64_t len = hi - lo + 1;
  if (len * n2 > 4000000) return Status::Unsupported(c + " of arrays too long for a lag table");
  std::vector<int64_t> table;
  table.reserve(len * n2);
  for (int64_t k = lo; k <= hi; ++k) {
    for (int64_t n = 0; n < n2; ++n) {
      const int64_t i = n + k;
      table.push_back(i >= 0 && i < n1 ? i : n1);  // n1: the zero appended to a
    }
  }
  onnx::NodeProto* cn = nullptr;
  const std::string ext = ctx.EmitTemp("Concat", {sa, ctx.EmitTemp("Reshape", {ctx.Scalar(Number::Int(0), d), ctx.Int64s({1})})}, &cn);
  SetAttr(cn, "axis", int64_t{0});
  const std::string windows = ctx.EmitTemp("Gather", {ext, ctx.EmitTemp("Reshape", {ctx.Int64s(table), ctx.Int64s({len, n2})})});
  onnx::NodeProto* rs = nullptr;
  const std::string sum = ctx.EmitTemp("ReduceSum", {ctx.EmitTemp("Mul", {windows, sv}), ctx.Int64s({1})}, &rs);
  SetAttr(rs, "keepdims", int64_t{0});
  ctx.Emit("Identity", {sum}, {ctx.Out(result)});
  return Status::Ok();
}

// np.unwrap(p, discont, axis, period) of floats: NumPy's steps. dd = diff(p); ddmod = mod(dd +
// period / 2, period) - period / 2 (NumPy's floor mod: fmod, plus period where the signs differ),
// period / 2 where ddmod is -period / 2 and dd > 0; the correction ddmod - dd, 0 where |dd| <
// discont (period / 2 when None), summed along the axis and added to p after its first item.
Status LowerUnwrap(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "p", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType d = ctx.DType(result);
  if (d != v1::FLOAT32 && d != v1::FLOAT64) return Status::Unsupported(std::string("unwrap in ") + DTypeName(d));
  auto period = call.Double("period");
  if (!period) return Status::Unsupported("unwrap with a period that is not a number");
  double discont = *period / 2;
  if (!call.IsNone("discont")) {
    auto v = call.Double("discont");
    if (!v) return Status::Unsupported("unwrap with a discont that is not a number");
    discont = *v;  // below period / 2 it changes nothing but rounding: NumPy compares with it as given
  }
  auto axis_arg = call.Int("dim");
  if (!axis_arg) return Status::Unsupported("unwrap axis is not an int");
  const int r = ctx.Rank(x);
  if (r < 1) return Status::Unsupported("unwrap of a 0-d array");
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(*axis_arg, r, &axis));
  const std::string in = ctx.CastTo(ctx.In(x), ctx.DType(x), d);
  auto slice = [&](const std::string& v, int64_t b, int64_t e) {
    return ctx.EmitTemp("Slice", {v, ctx.Int64s({b}), ctx.Int64s({e}), ctx.Int64s({axis})});
  };
  auto num = [&](double v) { return ctx.Scalar(Number::Float(v), d); };
  const std::string rest = slice(in, 1, INT64_MAX);
  const std::string dd = ctx.EmitTemp("Sub", {rest, slice(in, 0, -1)});
  const double hi = *period / 2, lo = -hi;
  const std::string a = ctx.EmitTemp("Sub", {dd, num(lo)});
  onnx::NodeProto* mn = nullptr;
  std::string m = ctx.EmitTemp("Mod", {a, num(*period)}, &mn);
  SetAttr(mn, "fmod", int64_t{1});
  // floor mod: fmod, plus the period where it is nonzero and its sign differs from the period's
  const std::string fix = ctx.EmitTemp("And", {ctx.EmitTemp("Not", {ctx.EmitTemp("Equal", {m, num(0)})}),
                                               ctx.EmitTemp(*period > 0 ? "Less" : "Greater", {m, num(0)})});
  m = ctx.EmitTemp("Where", {fix, ctx.EmitTemp("Add", {m, num(*period)}), m});
  std::string ddmod = ctx.EmitTemp("Add", {m, num(lo)});
  const std::string at_low = ctx.EmitTemp("And", {ctx.EmitTemp("Equal", {ddmod, num(lo)}), ctx.EmitTemp("Greater", {dd, num(0)})});
  ddmod = ctx.EmitTemp("Where", {at_low, num(hi), ddmod});
  std::string ph = ctx.EmitTemp("Sub", {ddmod, dd});
  ph = ctx.EmitTemp("Where", {ctx.EmitTemp("Less", {ctx.EmitTemp("Abs", {dd}), num(discont)}), num(0), ph});
  const std::string cs = ctx.EmitTemp("CumSum", {ph, ctx.Scalar(Number::Int(axis), v1::INT64)});
  auto* c = ctx.Emit("Concat", {slice(in, 0, 1), ctx.EmitTemp("Add", {rest, cs})}, {ctx.Out(result)});
  SetAttr(c, "axis", axis);
  return Status::Ok();
}

// np.geomspace(start, stop, num, endpoint, dtype, axis=0) of two numbers: NumPy's steps in double
// at export (start and stop divided by start's sign, logspace of their log10s, the ends set to
// start and stop, times the sign), a constant of the result's dtype.
Status LowerGeomspace(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* sa = call.Get("start");
  const v1::Arg* sb = call.Get("stop");
  if (!sa || !sb || HasTensor(*sa) || HasTensor(*sb)) return Status::Unsupported("geomspace of start and stop that are not numbers");
  const std::optional<double> start_v = AsDouble(*sa), stop_v = AsDouble(*sb);
  if (!start_v.has_value() || !stop_v.has_value()) return Status::Unsupported("geomspace of start and stop that are not numbers");
  const double start0 = start_v.value(), stop0 = stop_v.value();
  auto num = call.Int("num");
  if (!num || *num < 0) return Status::Unsupported("geomspace num is not an int >= 0");
  if (*num > 10000000) return Status::Unsupported("geomspace of more than 10 million items");
  if (call.Int("dim").value_or(0) != 0) return Status::Unsupported("geomspace with an axis (of number ends)");
  call.Get("dtype");  // the result's dtype
  const bool endpoint = call.Bool("endpoint").value_or(true);
  if (start0 == 0 || stop0 == 0) return Status::Unsupported("geomspace with a zero end (NumPy refuses it)");
  const v1::DType d = ctx.DType(result);
  if (!IsFloating(d) && d != v1::INT32 && d != v1::INT64) return Status::Unsupported(std::string("geomspace in ") + DTypeName(d));
  const double sign = start0 > 0 ? 1.0 : -1.0;
  const double s0 = start0 / sign, s1 = stop0 / sign;
  if (s1 < 0) return Status::Unsupported("geomspace between numbers of different signs (a complex log)");
  const double ls = std::log10(s0), le = std::log10(s1);
  const int64_t n = *num;
  std::vector<Number> values;
  const int64_t div = endpoint ? n - 1 : n;
  const double delta = le - ls;
  const double step = div > 0 ? delta / div : std::numeric_limits<double>::quiet_NaN();
  for (int64_t i = 0; i < n; ++i) {
    double y = static_cast<double>(i);
    if (div > 0) y = step == 0 ? (y / div) * delta : y * step;
    else y = y * delta;  // NumPy: step NaN; y * delta (num 1 without endpoint: 0 * delta)
    y += ls;
    if (endpoint && n > 1 && i == n - 1) y = le;
    double v = std::pow(10.0, y);
    if (i == 0) v = s0;
    if (endpoint && n > 1 && i == n - 1) v = s1;
    v *= sign;
    values.push_back(IsFloating(d) ? Number::Float(v) : Number::Int(static_cast<int64_t>(v)));  // astype truncates
  }
  onnx::TensorProto t;
  std::string raw;
  IVY_RETURN_IF_ERROR(EncodeNumbers(values, d, &raw));
  t.set_data_type(OnnxElemType(d));
  t.add_dims(n);
  t.set_raw_data(raw);
  ctx.Emit("Identity", {ctx.AddInitializer(std::move(t), "geomspace")}, {ctx.Out(result)});
  return Status::Ok();
}

// torch.gradient(input, spacing, dim, edge_order) is np.gradient(f, *varargs, axis, edge_order):
// spacing one number (or the same number for every dim); coordinate tensors are refused. torch
// divides the central difference by h and then by 2, NumPy by 2h: the same to rounding.
Status LowerGradientByFramework(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  if (!FromTorch(node)) return LowerGradient(node, call, ctx);
  const v1::Arg* in = call.Get("input");
  if (!in) return Status::Unsupported("gradient without input");
  BoundCall c = call;
  c.Set("f", *in);
  v1::Arg varargs;
  varargs.mutable_list();
  if (const v1::Arg* sp = call.Get("spacing"); sp && !IsNone(*sp)) {
    std::optional<double> h;
    if (auto v = AsDouble(*sp); v && !HasTensor(*sp)) {
      h = *v;
    } else if (auto items = SequenceItems(*sp)) {
      for (const v1::Arg* it : *items) {
        auto v = AsDouble(*it);
        if (!v || HasTensor(*it)) return Status::Unsupported("torch.gradient with coordinate tensors as spacing");
        if (h && *h != *v) return Status::Unsupported("torch.gradient with a different spacing per dim");
        h = *v;
      }
    }
    if (!h) return Status::Unsupported("torch.gradient spacing " + ArgToString(*sp, true));
    varargs.mutable_list()->add_items()->set_f(*h);
  }
  c.Set("varargs", std::move(varargs));
  return LowerGradient(node, c, ctx);
}

// np.trim_zeros(filt, trim='fb') of a 1-D array: the slice from the first to past the last
// nonzero item ('f' / 'b' trim one end only); empty when every item is zero. The bounds are
// read when the model runs.
Status LowerTrimZeros(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "filt", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (ctx.Rank(x) != 1) return Status::Unsupported("trim_zeros of an array that is not 1-D");
  if (!call.IsNone("dim")) {
    auto ax = call.IntList("dim");
    if (!ax || ax->size() != 1 || ((*ax)[0] != 0 && (*ax)[0] != -1)) return Status::Unsupported("trim_zeros with an axis");
  }
  std::string trim = "fb";
  if (const v1::Arg* t = call.Get("trim"); t && t->kind_case() == v1::Arg::kS) trim = t->s();
  std::string lower;
  for (char ch : trim) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const bool front = lower.find('f') != std::string::npos, back = lower.find('b') != std::string::npos;
  const v1::DType d = ctx.DType(x);
  if (d == v1::DTYPE_UNSPECIFIED) return Status::Unsupported("trim_zeros of an unknown dtype");
  const std::string in = ctx.In(x);
  onnx::NodeProto* g = nullptr;
  const std::string n = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {in}), ctx.Scalar(Number::Int(0), v1::INT64)}, &g);
  const std::string zero64 = ctx.Scalar(Number::Int(0), v1::INT64), one64 = ctx.Scalar(Number::Int(1), v1::INT64);
  const std::string pos = ctx.EmitTemp("Range", {zero64, n, one64});
  const std::string nz = d == v1::BOOL ? in : ctx.EmitTemp("Not", {ctx.EmitTemp("Equal", {in, ctx.Scalar(Number::Int(0), d)})});
  auto reduce = [&](const char* op, const std::string& v) {
    onnx::NodeProto* r = nullptr;
    const std::string out = ctx.EmitTemp(op, {v}, &r);
    SetAttr(r, "keepdims", int64_t{1});
    return out;
  };
  // ReduceMin/Max of an empty array: onnxruntime refuses it; an empty filt gives [0, 0].
  std::string first = zero64, end = n;
  if (front) first = reduce("ReduceMin", ctx.EmitTemp("Where", {nz, pos, ctx.EmitTemp("Reshape", {n, ctx.Int64s({1})})}));
  if (back) end = ctx.EmitTemp("Add", {reduce("ReduceMax", ctx.EmitTemp("Where", {nz, pos, ctx.Scalar(Number::Int(-1), v1::INT64)})), one64});
  first = ctx.EmitTemp("Reshape", {first, ctx.Int64s({1})});
  end = ctx.EmitTemp("Max", {ctx.EmitTemp("Reshape", {end, ctx.Int64s({1})}), first});
  ctx.Emit("Slice", {in, first, end, ctx.Int64s({0})}, {ctx.Out(result)});
  return Status::Ok();
}

// np.poly(seq_of_zeros) of a 1-D array of roots: NumPy's convolutions of [1] with [1, -r] for
// each root in turn (a[k] - r * a[k - 1]), unrolled for the recorded count (pinned). A square
// matrix (its eigenvalues' polynomial) is refused.
Status LowerPoly(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "seq_of_zeros", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  if (ctx.Rank(x) == 2) return Status::Unsupported("np.poly of a matrix (its eigenvalues: a decomposition)");
  if (ctx.Rank(x) != 1 || ctx.Shape(x)[0] < 0) return Status::Unsupported("np.poly of an array that is not 1-D of known length");
  const int64_t n = ctx.Shape(x)[0];
  if (n > 256) return Status::Unsupported("np.poly of more than 256 roots");
  const v1::DType d = ctx.DType(result);
  if (!IsFloating(d)) return Status::Unsupported(std::string("np.poly in ") + DTypeName(d));
  const std::string roots = PinShape(ctx, ctx.CastTo(ctx.In(x), ctx.DType(x), d), {n});
  const std::string zero = ctx.EmitTemp("Reshape", {ctx.Scalar(Number::Int(0), d), ctx.Int64s({1})});
  std::string a = ctx.EmitTemp("Reshape", {ctx.Scalar(Number::Int(1), d), ctx.Int64s({1})});
  for (int64_t i = 0; i < n; ++i) {
    const std::string r = ctx.EmitTemp("Gather", {roots, ctx.Int64s({i})});  // [1]
    // convolve(a, [1, -r]) = [a, 0] + [0, a] * (-r), summed as NumPy's correlate does (a[k] * 1 + a[k - 1] * -r)
    const std::string lhs = ConcatOn(ctx, {a, zero}, 0), rhs = ConcatOn(ctx, {zero, a}, 0);
    a = ctx.EmitTemp("Add", {lhs, ctx.EmitTemp("Mul", {rhs, ctx.EmitTemp("Neg", {r})})});
  }
  ctx.Emit("Identity", {a}, {ctx.Out(result)});
  return Status::Ok();
}

namespace {

// np.block's nesting: the list depth (every leaf at the same depth) and the largest leaf rank.
Status BlockDepth(const LoweringContext& ctx, const v1::Arg& a, int depth, int* list_depth, int* max_rank) {
  if (auto items = SequenceItems(a)) {
    if (items->empty()) return Status::Unsupported("np.block with an empty list");
    for (const v1::Arg* it : *items) IVY_RETURN_IF_ERROR(BlockDepth(ctx, *it, depth + 1, list_depth, max_rank));
    return Status::Ok();
  }
  if (*list_depth >= 0 && *list_depth != depth) return Status::Unsupported("np.block with lists of different depths");
  *list_depth = depth;
  if (a.kind_case() == v1::Arg::kTensor) *max_rank = std::max(*max_rank, ctx.Rank(a.tensor().value()));
  return Status::Ok();
}

Status BlockEmit(LoweringContext& ctx, const v1::Arg& a, int depth, int list_depth, int rank, v1::DType d, std::string* out) {
  if (auto items = SequenceItems(a)) {
    std::vector<std::string> parts;
    for (const v1::Arg* it : *items) {
      std::string p;
      IVY_RETURN_IF_ERROR(BlockEmit(ctx, *it, depth + 1, list_depth, rank, d, &p));
      parts.push_back(p);
    }
    *out = ConcatOn(ctx, parts, rank - (list_depth - depth));
    return Status::Ok();
  }
  std::string v;
  IVY_RETURN_IF_ERROR(OperandAs(ctx, a, d, &v));
  const int r = a.kind_case() == v1::Arg::kTensor ? ctx.Rank(a.tensor().value()) : 0;
  if (r < rank) {  // atleast_nd: leading 1s
    std::vector<int64_t> axes;
    for (int i = 0; i < rank - r; ++i) axes.push_back(i);
    v = ctx.Unsqueeze(v, axes);
  }
  *out = v;
  return Status::Ok();
}

}  // namespace

// np.block(arrays): the nested lists concatenated innermost first along the last axis, the next
// level along the one before, ...; every array first given leading 1s up to the result's rank
// (the list depth or the largest array rank, whichever is larger), in the result's dtype.
Status LowerBlock(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId result;
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::Arg* a = call.Get("arrays");
  if (!a) return Status::Unsupported("np.block without arrays");
  int list_depth = -1, max_rank = 0;
  IVY_RETURN_IF_ERROR(BlockDepth(ctx, *a, 0, &list_depth, &max_rank));
  const int rank = std::max(list_depth, max_rank);
  if (ctx.Rank(result) != rank) return Status::Unsupported("np.block with an unexpected result rank");
  const v1::DType d = ctx.DType(result);
  if (d == v1::DTYPE_UNSPECIFIED) return Status::Unsupported("np.block of an unknown dtype");
  std::string out;
  IVY_RETURN_IF_ERROR(BlockEmit(ctx, *a, 0, list_depth, rank, d, &out));
  ctx.Emit("Identity", {out}, {ctx.Out(result)});
  return Status::Ok();
}

}  // namespace onnx_export
}  // namespace ivytrace
