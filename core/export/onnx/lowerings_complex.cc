// Complex values inside an exported model (issue 11 item 2). ONNX has no complex tensor type an
// operator computes with, so a complex64 (complex128) value is carried as a float32 (float64)
// tensor of its shape plus a trailing dim of 2: (real, imag), the layout ONNX's DFT reads and
// writes. A lowering that does not know this would misread that trailing dim (a negative axis
// shifts, a reshape's sizes are off by the pair), so the exporter sends a node that reads or
// defines a complex value only to the lowerings of kComplexTable below, which declare that they
// handle the pairs; any other such node is refused (LowerNode in onnx_exporter.cc). Complex graph
// inputs and outputs are refused (ValueType): the model's interface keeps ONNX's real types, and
// a program returns torch.view_as_real(z) (or z.real, z.abs(), ...) to export.
//
// Here: the FFT family of torch.fft / numpy.fft / jax.numpy.fft (c2c by DFT, r2c by a onesided DFT
// of the real signal, c2r by an inverse DFT of the Hermitian extension), torch.stft (ONNX STFT),
// the complex parts (real, imag, abs, angle, conj), view_as_real/view_as_complex, complex, polar
// and add/sub/mul/div with complex or real operands. Sizes are read when the model runs, never
// taken from the recorded shapes.
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/export/onnx/lowering_table.h"
#include "core/export/onnx/lowerings.h"
#include "core/ir/arg.h"

namespace ivytrace {
namespace onnx_export {

bool IsComplexDType(v1::DType d) { return d == v1::COMPLEX64 || d == v1::COMPLEX128; }

namespace {

// The float dtype of a complex dtype's parts (a real dtype is its own).
v1::DType PartDType(v1::DType d) {
  if (d == v1::COMPLEX64) return v1::FLOAT32;
  if (d == v1::COMPLEX128) return v1::FLOAT64;
  return d;
}

std::string F(LoweringContext& ctx, double v, v1::DType d) { return ctx.Scalar(Number::Float(v), d); }

// Part k (0 real, 1 imag) of a pair tensor: [..., 2] -> [...].
std::string Part(LoweringContext& ctx, const std::string& pair, int k) {
  onnx::NodeProto* g = nullptr;
  const std::string out = ctx.EmitTemp("Gather", {pair, ctx.Scalar(Number::Int(k), v1::INT64)}, &g);
  SetAttr(g, "axis", int64_t{-1});
  return out;
}

// The pair tensor of (re, im), two tensors of one shape.
std::string MakePair(LoweringContext& ctx, const std::string& re, const std::string& im) {
  auto* n = static_cast<onnx::NodeProto*>(nullptr);
  const std::string out = ctx.EmitTemp("Concat", {ctx.Unsqueeze(re, {-1}), ctx.Unsqueeze(im, {-1})}, &n);
  SetAttr(n, "axis", int64_t{-1});
  return out;
}

// A real tensor as a pair with a zero imaginary part (Pad, not x * 0: inf * 0 is NaN).
std::string RealToPair(LoweringContext& ctx, const std::string& x, int rank) {
  std::vector<int64_t> pads(2 * (rank + 1), 0);
  pads[2 * (rank + 1) - 1] = 1;
  return ctx.EmitTemp("Pad", {ctx.Unsqueeze(x, {-1}), ctx.Int64s(pads)});
}

// A complex tensor's pairs as `part` (float32/float64), cast when the dtypes differ.
Status PairOf(LoweringContext& ctx, ValueId v, v1::DType part, std::string* out) {
  const v1::DType d = ctx.DType(v);
  if (!IsComplexDType(d)) {
    return Status::Unsupported(std::string("expected a complex tensor, got ") + DTypeName(d));
  }
  *out = ctx.CastTo(ctx.In(v), PartDType(d), part);
  return Status::Ok();
}

// An operand of a complex binary op: `pair` set for a complex tensor or a Python complex number,
// `real` (with `rank`) for a real tensor or number, as `part` values.
struct Operand {
  std::string pair, real;
  int rank = 0;
};

Status OperandOf(LoweringContext& ctx, const v1::Arg& arg, v1::DType part, Operand* out) {
  if (arg.kind_case() == v1::Arg::kC) {
    onnx::TensorProto t;
    t.set_data_type(part == v1::FLOAT64 ? onnx::TensorProto::DOUBLE : onnx::TensorProto::FLOAT);
    t.add_dims(2);
    if (part == v1::FLOAT64) {
      t.add_double_data(arg.c().real());
      t.add_double_data(arg.c().imag());
    } else {
      t.add_float_data(static_cast<float>(arg.c().real()));
      t.add_float_data(static_cast<float>(arg.c().imag()));
    }
    out->pair = ctx.AddInitializer(std::move(t), "complex_scalar");
    return Status::Ok();
  }
  if (arg.kind_case() == v1::Arg::kTensor) {
    const ValueId v = arg.tensor().value();
    if (IsComplexDType(ctx.DType(v))) return PairOf(ctx, v, part, &out->pair);
    out->rank = ctx.Rank(v);
    out->real = ctx.CastTo(ctx.In(v), ctx.DType(v), part);
    return Status::Ok();
  }
  if (arg.kind_case() == v1::Arg::kI || arg.kind_case() == v1::Arg::kF || arg.kind_case() == v1::Arg::kB) {
    out->real = ctx.Scalar(Number::Float(*AsDouble(arg)), part);
    out->rank = 0;
    return Status::Ok();
  }
  return Status::Unsupported("operand " + ArgToString(arg, true) + " is not a tensor or a number");
}

std::string AsPair(LoweringContext& ctx, const Operand& o) {
  return o.pair.empty() ? RealToPair(ctx, o.real, o.rank) : o.pair;
}

Status ComplexResult(const Node& node, LoweringContext& ctx, ValueId* result, v1::DType* part) {
  IVY_RETURN_IF_ERROR(SingleResult(node, result));
  const v1::DType d = ctx.DType(*result);
  if (!IsComplexDType(d)) {
    return Status::Unsupported(ctx.canonical() + " with a " + DTypeName(d) + " result (expected complex)");
  }
  *part = PartDType(d);
  return Status::Ok();
}

// A float result (the real part, abs, ...) of a complex input.
Status RealResult(const Node& node, LoweringContext& ctx, ValueId* result) {
  IVY_RETURN_IF_ERROR(SingleResult(node, result));
  const v1::DType d = ctx.DType(*result);
  if (!IsFloating(d)) return Status::Unsupported(ctx.canonical() + " with a " + DTypeName(d) + " result");
  return Status::Ok();
}

// The input tensor of a one-operand op (torch's `input`, NumPy's `x`, ...).
Status InputTensor(const BoundCall& call, ValueId* x) {
  for (const char* p : {"input", "x", "a", "operand", "tensor", "self"}) {
    if (call.Tensor(p)) return TensorParam(call, p, x);
  }
  return TensorParam(call, "input", x);
}

// |re + i im| without overflow in re^2 + im^2: m * sqrt(1 + (n / m)^2), m = max(|re|, |im|),
// n = min; inf where either part is infinite (even with a NaN other part), as hypot.
std::string Hypot(LoweringContext& ctx, const std::string& re, const std::string& im, v1::DType d) {
  const std::string ar = ctx.EmitTemp("Abs", {re}), ai = ctx.EmitTemp("Abs", {im});
  const std::string m = ctx.EmitTemp("Max", {ar, ai}), n = ctx.EmitTemp("Min", {ar, ai});
  const std::string zero = F(ctx, 0.0, d), one = F(ctx, 1.0, d);
  const std::string safe = ctx.EmitTemp("Where", {ctx.EmitTemp("Equal", {m, zero}), one, m});
  const std::string q = ctx.EmitTemp("Div", {n, safe});
  const std::string h = ctx.EmitTemp("Mul", {m, ctx.EmitTemp("Sqrt", {ctx.EmitTemp("Add", {one, ctx.EmitTemp("Mul", {q, q})})})});
  const std::string inf = ctx.EmitTemp("Or", {ctx.EmitTemp("IsInf", {re}), ctx.EmitTemp("IsInf", {im})});
  const std::string nan = ctx.EmitTemp("Or", {ctx.EmitTemp("IsNaN", {re}), ctx.EmitTemp("IsNaN", {im})});
  const std::string h2 = ctx.EmitTemp("Where", {nan, ctx.EmitTemp("Add", {re, im}), h});
  return ctx.EmitTemp("Where", {inf, F(ctx, INFINITY, d), h2});
}

// (a + bi)(c + di) and (a + bi) / (c + di) on parts; division by Smith's method, as c10::complex.
void ComplexMul(LoweringContext& ctx, const std::string& a, const std::string& b, const std::string& c,
                const std::string& d, std::string* re, std::string* im) {
  *re = ctx.EmitTemp("Sub", {ctx.EmitTemp("Mul", {a, c}), ctx.EmitTemp("Mul", {b, d})});
  *im = ctx.EmitTemp("Add", {ctx.EmitTemp("Mul", {a, d}), ctx.EmitTemp("Mul", {b, c})});
}

void ComplexDiv(LoweringContext& ctx, v1::DType t, const std::string& a, const std::string& b, const std::string& c,
                const std::string& d, std::string* re, std::string* im) {
  const std::string one = F(ctx, 1.0, t);
  const std::string ac = ctx.EmitTemp("Abs", {c}), ad = ctx.EmitTemp("Abs", {d});
  const std::string c_big = ctx.EmitTemp("GreaterOrEqual", {ac, ad});
  // |c| >= |d|: rat = d / c, scl = 1 / (c + d rat), re = (a + b rat) scl, im = (b - a rat) scl
  const std::string rat1 = ctx.EmitTemp("Div", {d, c});
  const std::string scl1 = ctx.EmitTemp("Div", {one, ctx.EmitTemp("Add", {c, ctx.EmitTemp("Mul", {d, rat1})})});
  const std::string re1 = ctx.EmitTemp("Mul", {ctx.EmitTemp("Add", {a, ctx.EmitTemp("Mul", {b, rat1})}), scl1});
  const std::string im1 = ctx.EmitTemp("Mul", {ctx.EmitTemp("Sub", {b, ctx.EmitTemp("Mul", {a, rat1})}), scl1});
  // else: rat = c / d, scl = 1 / (d + c rat), re = (a rat + b) scl, im = (b rat - a) scl
  const std::string rat2 = ctx.EmitTemp("Div", {c, d});
  const std::string scl2 = ctx.EmitTemp("Div", {one, ctx.EmitTemp("Add", {d, ctx.EmitTemp("Mul", {c, rat2})})});
  const std::string re2 = ctx.EmitTemp("Mul", {ctx.EmitTemp("Add", {ctx.EmitTemp("Mul", {a, rat2}), b}), scl2});
  const std::string im2 = ctx.EmitTemp("Mul", {ctx.EmitTemp("Sub", {ctx.EmitTemp("Mul", {b, rat2}), a}), scl2});
  // both zero: a / |c|, b / |d| (inf or NaN, as c10::complex)
  const std::string zero = F(ctx, 0.0, t);
  const std::string both_zero = ctx.EmitTemp("And", {ctx.EmitTemp("Equal", {ac, zero}), ctx.EmitTemp("Equal", {ad, zero})});
  *re = ctx.EmitTemp("Where", {both_zero, ctx.EmitTemp("Div", {a, ac}), ctx.EmitTemp("Where", {c_big, re1, re2})});
  *im = ctx.EmitTemp("Where", {both_zero, ctx.EmitTemp("Div", {b, ad}), ctx.EmitTemp("Where", {c_big, im1, im2})});
}

// Dim `axis` of `x`'s run-time shape as a 1-D int64 of one item.
std::string DimOf(LoweringContext& ctx, const std::string& x, int64_t axis) {
  onnx::NodeProto* g = nullptr;
  std::string d = ctx.EmitTemp("Gather", {ctx.EmitTemp("Shape", {x}), ctx.Int64s({axis})}, &g);
  SetAttr(g, "axis", int64_t{0});
  return d;
}

// `x` (a pair tensor of rank `rank` + 1, or a real one of rank `rank` when `pair` is false) cut or
// zero-padded along `axis` to `n` items (a 1-D int64 of one item), as torch/NumPy's n= and s=.
std::string ResizeAxis(LoweringContext& ctx, const std::string& x, int rank, bool pair, int64_t axis,
                       const std::string& n) {
  const std::string cut = ctx.EmitTemp("Slice", {x, ctx.Int64s({0}), n, ctx.Int64s({axis})});
  const std::string missing = ctx.EmitTemp("Max", {ctx.EmitTemp("Sub", {n, DimOf(ctx, x, axis)}), ctx.Int64s({0})});
  const int full = rank + (pair ? 1 : 0);
  // pads: begins (all 0), then ends (0 but `missing` at axis)
  std::vector<std::string> parts;
  if (full + axis > 0) parts.push_back(ctx.Int64s(std::vector<int64_t>(full + axis, 0)));
  parts.push_back(missing);
  if (full - axis - 1 > 0) parts.push_back(ctx.Int64s(std::vector<int64_t>(full - axis - 1, 0)));
  onnx::NodeProto* c = nullptr;
  const std::string pads = ctx.EmitTemp("Concat", parts, &c);
  SetAttr(c, "axis", int64_t{0});
  return ctx.EmitTemp("Pad", {cut, pads});
}

// The normalization of a transform of length n (a 1-D int64 of one item) as a float factor:
// `inverse_scaled` says whether the values are already divided by n (ONNX's inverse DFT is).
// forward-type scaling: backward 1, ortho 1/sqrt(n), forward 1/n; inverse-type: backward 1/n,
// ortho 1/sqrt(n), forward 1.
std::string Scale(LoweringContext& ctx, const std::string& x, const std::string& n, v1::DType part,
                  const std::string& norm, bool inverse_type, bool divided_by_n) {
  double power;  // x * n^power
  if (norm == "ortho") {
    power = -0.5;
  } else if ((norm == "backward") == inverse_type) {
    power = -1.0;
  } else {
    power = 0.0;
  }
  if (divided_by_n) power += 1.0;
  if (power == 0.0) return x;
  const std::string nf = ctx.CastTo(ctx.Squeeze(n, {0}), v1::INT64, part);
  std::string f = power == 1.0 ? nf : power == -1.0 ? ctx.EmitTemp("Reciprocal", {nf})
                : power == 0.5 ? ctx.EmitTemp("Sqrt", {nf}) : ctx.EmitTemp("Reciprocal", {ctx.EmitTemp("Sqrt", {nf})});
  return ctx.EmitTemp("Mul", {x, f});
}

// A DFT of a pair (or [..., 1] real) tensor along `axis`.
std::string Dft(LoweringContext& ctx, const std::string& x, int64_t axis, bool inverse, bool onesided) {
  onnx::NodeProto* n = nullptr;
  const std::string out = ctx.EmitTemp("DFT", {x}, &n);
  SetAttr(n, "axis", axis);
  if (inverse) SetAttr(n, "inverse", int64_t{1});
  if (onesided) SetAttr(n, "onesided", int64_t{1});
  return out;
}

std::string Conj(LoweringContext& ctx, const std::string& pair, v1::DType part) {
  onnx::TensorProto t;
  t.set_data_type(part == v1::FLOAT64 ? onnx::TensorProto::DOUBLE : onnx::TensorProto::FLOAT);
  t.add_dims(2);
  if (part == v1::FLOAT64) {
    t.add_double_data(1.0);
    t.add_double_data(-1.0);
  } else {
    t.add_float_data(1.0f);
    t.add_float_data(-1.0f);
  }
  return ctx.EmitTemp("Mul", {pair, ctx.AddInitializer(std::move(t), "conj_sign")});
}

// The real signal of length n (a 1-D int64 of one item) whose onesided spectrum along `axis` is
// the pair tensor `x` (rank `rank` + 1), divided by n: the inverse DFT of the Hermitian extension
// (the first n // 2 + 1 bins, cut or zero-padded, then the conj of bins (n - 1) // 2 down to 1),
// its real part (which drops the imaginary parts of bin 0 and of bin n / 2, as pocketfft's c2r).
std::string C2RDividedByN(LoweringContext& ctx, const std::string& x, int rank, int64_t a, const std::string& n,
                          v1::DType part) {
  const std::string k = ctx.EmitTemp("Add", {ctx.EmitTemp("Div", {n, ctx.Int64s({2})}), ctx.Int64s({1})});
  const std::string head = ResizeAxis(ctx, x, rank, true, a, k);
  const std::string t_start = ctx.EmitTemp("Div", {ctx.EmitTemp("Sub", {n, ctx.Int64s({1})}), ctx.Int64s({2})});
  const std::string tail = Conj(ctx, ctx.EmitTemp("Slice", {head, t_start, ctx.Int64s({0}), ctx.Int64s({a}), ctx.Int64s({-1})}), part);
  onnx::NodeProto* cn = nullptr;
  const std::string full = ctx.EmitTemp("Concat", {head, tail}, &cn);
  SetAttr(cn, "axis", a);
  return Part(ctx, Dft(ctx, full, a, true, false), 0);
}

// An int argument (a Python int or a shape-derived value) as a 1-D int64 of one item.
Status LengthArg(LoweringContext& ctx, const v1::Arg& a, std::string* out, const std::string& what) {
  if (auto i = AsInt(a)) {
    if (*i < 1) return Status::Unsupported(what + "=" + std::to_string(*i) + " (torch refuses a length below 1)");
    *out = ctx.Int64s({*i});
    return Status::Ok();
  }
  if (IsSymbolicArg(ctx, a)) {
    std::string v;
    IVY_RETURN_IF_ERROR(DynamicInts(ctx, a, &v));
    *out = ctx.EmitTemp("Reshape", {v, ctx.Int64s({1})});
    return Status::Ok();
  }
  return Status::Unsupported(what + " " + ArgToString(a, true) + " is not an int");
}

}  // namespace

// The FFT family. canonical: fft ifft rfft irfft hfft ihfft (one dim: n, dim) and fftn ifftn rfftn
// irfftn hfftn ihfftn (s, dim; torch's fft2 & co. are fftn with their dim default). torch's
// definitions: rfftn is a onesided r2c along the last dim, then c2c along the others; irfftn c2c
// along all but the last dim, then c2r along the last (n = s[-1], default 2 (m - 1)); hfft(n)(x) is
// irfft(n)(conj x) with forward-type scaling; ihfft(n)(x) is conj(rfft(n)(x)) with inverse-type
// scaling. norm: None/"backward", "ortho", "forward".
Status LowerFft(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  const std::string c = ctx.canonical();
  const bool nd = c.size() >= 4 && c.compare(c.size() - 4, 4, "fftn") == 0;
  const std::string base = nd ? c.substr(0, c.size() - 1) : c;
  if (base != "fft" && base != "ifft" && base != "rfft" && base != "irfft" && base != "hfft" && base != "ihfft") {
    return Status::Unsupported("'fft' lowering does not know canonical op '" + c + "'");
  }
  ValueId x, result;
  IVY_RETURN_IF_ERROR(InputTensor(call, &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType xd = ctx.DType(x), rd = ctx.DType(result);
  const bool real_in = base == "rfft" || base == "ihfft";
  const bool real_out = base == "irfft" || base == "hfft";
  if (real_out ? !IsFloating(rd) : !IsComplexDType(rd)) {
    return Status::Unsupported(c + " with a " + std::string(DTypeName(rd)) + " result");
  }
  if (real_in && IsComplexDType(xd)) return Status::Unsupported(c + " of a complex tensor (torch refuses it)");
  const v1::DType part = real_out ? rd : PartDType(rd);
  if (part != v1::FLOAT32 && part != v1::FLOAT64) return Status::Unsupported(c + " in " + DTypeName(rd));
  const bool inverse_type = base == "ifft" || base == "irfft" || base == "ihfft";
  std::string norm = "backward";
  if (const v1::Arg* a = call.Get("norm"); a && !IsNone(*a)) {
    if (a->kind_case() != v1::Arg::kS || (a->s() != "backward" && a->s() != "ortho" && a->s() != "forward")) {
      return Status::Unsupported("norm " + ArgToString(*a, true));
    }
    norm = a->s();
  }
  const int rank = ctx.Rank(x);
  if (rank == 0) return Status::Unsupported(c + " of a 0-d tensor");
  // The transformed dims and their lengths (nullptr-like "" = the input's size).
  std::vector<int64_t> dims;
  std::vector<const v1::Arg*> lengths;
  if (!nd) {
    const v1::Arg* n = call.Get("n");
    auto dim = call.Int(call.Has("dim") ? "dim" : "axis");
    if (!dim) return Status::Unsupported(c + ": dim is not an int");
    int64_t a;
    IVY_RETURN_IF_ERROR(NormalizeAxis(*dim, rank, &a));
    dims = {a};
    lengths = {n && !IsNone(*n) ? n : nullptr};
  } else {
    const char* dp = call.Has("dim") ? "dim" : "axes";
    const v1::Arg* s = call.Get("s");
    std::vector<const v1::Arg*> s_items;
    const bool has_s = s && !IsNone(*s);
    if (has_s) {
      auto items = SequenceItems(*s);
      if (!items) return Status::Unsupported(c + ": s " + ArgToString(*s, true) + " is not a sequence");
      s_items = *items;
    }
    if (call.IsNone(dp)) {
      // torch/NumPy: every dim, or the last len(s) dims when s is given.
      const int k = has_s ? static_cast<int>(s_items.size()) : rank;
      if (k > rank) return Status::Unsupported(c + ": s has more items than the input has dims");
      for (int i = rank - k; i < rank; ++i) dims.push_back(i);
    } else {
      auto l = call.IntList(dp);
      if (!l) return Status::Unsupported(c + ": dim is not an int or a list of ints");
      for (int64_t d : *l) {
        int64_t a;
        IVY_RETURN_IF_ERROR(NormalizeAxis(d, rank, &a));
        dims.push_back(a);
      }
    }
    if (dims.empty()) return Status::Unsupported(c + " over no dims");
    for (size_t i = 0; i < dims.size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        if (dims[i] == dims[j]) return Status::Unsupported(c + ": dim repeats a dim");
      }
    }
    if (has_s) {
      if (s_items.size() != dims.size()) return Status::Unsupported(c + ": s and dim differ in length");
      for (const v1::Arg* it : s_items) {
        lengths.push_back(AsInt(*it) && *AsInt(*it) == -1 ? nullptr : it);
      }
    } else {
      lengths.assign(dims.size(), nullptr);
    }
  }
  std::vector<std::string> len(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    if (lengths[i]) IVY_RETURN_IF_ERROR(LengthArg(ctx, *lengths[i], &len[i], nd ? "s" : "n"));
  }

  // hfft: conj of the input; ihfft: conj of the result (at the end).
  std::string cur;
  if (real_in) {
    cur = ctx.CastTo(ctx.In(x), xd, part);
  } else if (IsComplexDType(xd)) {
    IVY_RETURN_IF_ERROR(PairOf(ctx, x, part, &cur));
  } else {
    cur = RealToPair(ctx, ctx.CastTo(ctx.In(x), xd, part), rank);
  }
  if (base == "hfft") cur = Conj(ctx, cur, part);
  const bool exp_inverse = base == "ifft" || base == "irfft" || base == "hfft";
  const size_t last = dims.size() - 1;
  if (real_in) {  // r2c along the last dim first
    const int64_t a = dims[last];
    if (!len[last].empty()) cur = ResizeAxis(ctx, cur, rank, false, a, len[last]);
    const std::string n = len[last].empty() ? DimOf(ctx, cur, a) : len[last];
    cur = Dft(ctx, ctx.Unsqueeze(cur, {-1}), a, false, true);
    cur = Scale(ctx, cur, n, part, norm, inverse_type, false);
  }
  // c2c along the others (all for fft/ifft)
  for (size_t i = 0; i < dims.size(); ++i) {
    if ((real_in || real_out) && i == last) continue;
    const int64_t a = dims[i];
    if (!len[i].empty()) cur = ResizeAxis(ctx, cur, rank, true, a, len[i]);
    cur = Dft(ctx, cur, a, exp_inverse, false);
    cur = Scale(ctx, cur, DimOf(ctx, cur, a), part, norm, inverse_type, exp_inverse);
  }
  if (real_out) {  // c2r along the last dim: the Hermitian extension's inverse DFT, its real part
    const int64_t a = dims[last];
    std::string n = len[last];
    if (n.empty()) {  // 2 (m - 1)
      n = ctx.EmitTemp("Mul", {ctx.EmitTemp("Sub", {DimOf(ctx, cur, a), ctx.Int64s({1})}), ctx.Int64s({2})});
    }
    cur = C2RDividedByN(ctx, cur, rank, a, n, part);
    cur = Scale(ctx, cur, n, part, norm, inverse_type, true);
  }
  if (base == "ihfft") cur = Conj(ctx, cur, part);  // conj(rfftn(x)), after every dim's transform
  ctx.Emit("Identity", {real_out ? ctx.CastTo(cur, part, rd) : cur}, {ctx.Out(result)});
  return Status::Ok();
}

// torch.stft of a real 1-D or 2-D signal: ONNX STFT (frames of n_fft every hop_length samples,
// the window zero-padded to n_fft at its centre, as torch does), after center's padding (reflect,
// replicate or constant: ONNX Pad's reflect, edge and constant modes); [batch, frames, bins, 2]
// transposed to torch's [batch, bins, frames]. normalized multiplies by n_fft^-1/2.
// return_complex=False gives the pairs as a real [..., 2] tensor.
Status LowerStft(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType xd = ctx.DType(x), rd = ctx.DType(result);
  if (IsComplexDType(xd)) return Status::Unsupported("stft of a complex signal (ONNX STFT is onesided for real signals only here)");
  const v1::DType part = PartDType(rd);
  if (part != v1::FLOAT32 && part != v1::FLOAT64) return Status::Unsupported(std::string("stft with a ") + DTypeName(rd) + " result");
  const int rank = ctx.Rank(x);
  if (rank != 1 && rank != 2) return Status::Unsupported("stft of a " + std::to_string(rank) + "-d signal");
  auto n_fft = call.Int("n_fft");
  if (!n_fft || *n_fft < 1) return Status::Unsupported("stft with n_fft that is not a positive int");
  int64_t hop = *n_fft / 4, win = *n_fft;
  if (!call.IsNone("hop_length")) {
    auto h = call.Int("hop_length");
    if (!h || *h < 1) return Status::Unsupported("stft with hop_length that is not a positive int");
    hop = *h;
  }
  if (!call.IsNone("win_length")) {
    auto w = call.Int("win_length");
    if (!w || *w < 1 || *w > *n_fft) return Status::Unsupported("stft with win_length that is not an int in [1, n_fft]");
    win = *w;
  }
  const bool center = call.Bool("center").value_or(true);
  std::string pad_mode = "reflect";
  if (const v1::Arg* pm = call.Get("pad_mode"); pm && !IsNone(*pm)) {
    if (pm->kind_case() != v1::Arg::kS) return Status::Unsupported("stft pad_mode is not a string");
    pad_mode = pm->s();
  }
  const bool normalized = call.Bool("normalized").value_or(false);
  if (const v1::Arg* os = call.Get("onesided"); os && !IsNone(*os) && !AsBool(*os).value_or(false)) {
    return Status::Unsupported("stft with onesided=False (only the onesided spectrum of a real signal lowers)");
  }
  const v1::Arg* rc = call.Get("return_complex");
  const bool return_complex = rc && !IsNone(*rc) && AsBool(*rc).value_or(false);
  if (return_complex != IsComplexDType(rd)) return Status::Unsupported("stft: return_complex does not match the result's dtype");
  if (const v1::Arg* al = call.Get("align_to_window"); al && !IsNone(*al) && AsBool(*al).value_or(false)) {
    return Status::Unsupported("stft with align_to_window=True");
  }
  std::string sig = ctx.CastTo(ctx.In(x), xd, part);
  if (rank == 1) sig = ctx.Unsqueeze(sig, {0});
  if (center) {
    const int64_t p = *n_fft / 2;
    onnx::NodeProto* pn = nullptr;
    if (pad_mode == "constant") {
      sig = ctx.EmitTemp("Pad", {sig, ctx.Int64s({0, p, 0, p})}, &pn);
    } else if (pad_mode == "reflect" || pad_mode == "replicate") {
      sig = ctx.EmitTemp("Pad", {sig, ctx.Int64s({0, p, 0, p})}, &pn);
      SetAttr(pn, "mode", std::string(pad_mode == "reflect" ? "reflect" : "edge"));
    } else {
      return Status::Unsupported("stft with pad_mode='" + pad_mode + "' (opset 17's Pad has reflect, edge and constant)");
    }
  }
  // The window: given (win_length items) or all ones, zero-padded to n_fft at its centre.
  std::string window;
  if (call.IsNone("window")) {
    window = Filled(ctx, win, 1.0, part, "stft_window");
  } else {
    ValueId w;
    IVY_RETURN_IF_ERROR(TensorParam(call, "window", &w));
    if (IsComplexDType(ctx.DType(w))) return Status::Unsupported("stft with a complex window");
    if (ctx.Rank(w) != 1 || ctx.Shape(w)[0] != win) return Status::Unsupported("stft window is not 1-d of win_length items");
    window = ctx.CastTo(ctx.In(w), ctx.DType(w), part);
  }
  if (win < *n_fft) {
    const int64_t left = (*n_fft - win) / 2;
    window = ctx.EmitTemp("Pad", {window, ctx.Int64s({left, *n_fft - win - left})});
  }
  onnx::NodeProto* sn = nullptr;
  std::string spec = ctx.EmitTemp("STFT", {ctx.Unsqueeze(sig, {-1}), ctx.Scalar(Number::Int(hop), v1::INT64), window,
                                           ctx.Scalar(Number::Int(*n_fft), v1::INT64)}, &sn);
  SetAttr(sn, "onesided", int64_t{1});
  if (normalized) spec = ctx.EmitTemp("Mul", {spec, F(ctx, 1.0 / std::sqrt(static_cast<double>(*n_fft)), part)});
  onnx::NodeProto* tn = nullptr;
  spec = ctx.EmitTemp("Transpose", {spec}, &tn);  // [batch, frames, bins, 2] -> [batch, bins, frames, 2]
  SetAttr(tn, "perm", std::vector<int64_t>{0, 2, 1, 3});
  if (rank == 1) spec = ctx.Squeeze(spec, {0});
  ctx.Emit("Identity", {return_complex ? spec : ctx.CastTo(spec, part, rd)}, {ctx.Out(result)});
  return Status::Ok();
}

// torch.istft of a complex onesided spectrum [batch, n_fft // 2 + 1, frames] (or unbatched): each
// frame's c2r of length n_fft (1/n_fft, or 1/sqrt(n_fft) when normalized), times the window
// (zero-padded to n_fft at its centre), overlap-added every hop_length samples (shifted blocks
// added), divided by the overlap-added squared window, center's padding cut
// and the result cut or zero-padded to `length`. (Where torch's NOLA check fails, the envelope has
// a zero and torch raises: the model gives inf/NaN there.)
Status LowerIstft(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType xd = ctx.DType(x), rd = ctx.DType(result);
  if (!IsComplexDType(xd)) return Status::Unsupported("istft of a real tensor (a complex spectrum is needed)");
  if (!IsFloating(rd)) return Status::Unsupported(std::string("istft with a ") + DTypeName(rd) + " result (return_complex=True)");
  if (const v1::Arg* rc = call.Get("return_complex"); rc && AsBool(*rc).value_or(false)) {
    return Status::Unsupported("istft with return_complex=True");
  }
  const v1::DType part = PartDType(xd);
  const int rank = ctx.Rank(x);
  if (rank != 2 && rank != 3) return Status::Unsupported("istft of a " + std::to_string(rank) + "-d spectrum");
  auto n_fft = call.Int("n_fft");
  if (!n_fft || *n_fft < 1) return Status::Unsupported("istft with n_fft that is not a positive int");
  int64_t hop = *n_fft / 4, win = *n_fft;
  if (!call.IsNone("hop_length")) {
    auto h = call.Int("hop_length");
    if (!h || *h < 1) return Status::Unsupported("istft with hop_length that is not a positive int");
    hop = *h;
  }
  if (!call.IsNone("win_length")) {
    auto w = call.Int("win_length");
    if (!w || *w < 1 || *w > *n_fft) return Status::Unsupported("istft with win_length that is not an int in [1, n_fft]");
    win = *w;
  }
  const int64_t bins = ctx.Shape(x)[rank - 2];
  const bool onesided = call.IsNone("onesided") ? bins != *n_fft : call.Bool("onesided").value_or(true);
  if (!onesided) return Status::Unsupported("istft with onesided=False (a two-sided spectrum)");
  if (bins != *n_fft / 2 + 1) return Status::Unsupported("istft: the spectrum does not have n_fft // 2 + 1 bins");
  const bool center = call.Bool("center").value_or(true);
  const bool normalized = call.Bool("normalized").value_or(false);
  std::optional<int64_t> length;
  if (!call.IsNone("length")) {
    length = call.Int("length");
    if (!length || *length < 0) return Status::Unsupported("istft with a length that is not an int");
  }
  std::string window;
  if (call.IsNone("window")) {
    window = Filled(ctx, win, 1.0, part, "istft_window");
  } else {
    ValueId w;
    IVY_RETURN_IF_ERROR(TensorParam(call, "window", &w));
    if (IsComplexDType(ctx.DType(w))) return Status::Unsupported("istft with a complex window");
    if (ctx.Rank(w) != 1 || ctx.Shape(w)[0] != win) return Status::Unsupported("istft window is not 1-d of win_length items");
    window = ctx.CastTo(ctx.In(w), ctx.DType(w), part);
  }
  if (win < *n_fft) {
    const int64_t left = (*n_fft - win) / 2;
    window = ctx.EmitTemp("Pad", {window, ctx.Int64s({left, *n_fft - win - left})});
  }
  std::string spec;
  IVY_RETURN_IF_ERROR(PairOf(ctx, x, part, &spec));
  if (rank == 2) spec = ctx.Unsqueeze(spec, {0});
  onnx::NodeProto* tn = nullptr;
  spec = ctx.EmitTemp("Transpose", {spec}, &tn);  // [batch, frames, bins, 2]
  SetAttr(tn, "perm", std::vector<int64_t>{0, 2, 1, 3});
  std::string frames = C2RDividedByN(ctx, spec, 3, 2, ctx.Int64s({*n_fft}), part);   // [batch, frames, n_fft]
  if (normalized) frames = ctx.EmitTemp("Mul", {frames, F(ctx, std::sqrt(static_cast<double>(*n_fft)), part)});
  frames = ctx.EmitTemp("Mul", {frames, window});
  // Overlap-add without a kernel of n_fft^2 (and for float64, which onnxruntime's ConvTranspose
  // lacks): frames zero-padded to r = ceil(n_fft / hop) blocks of hop samples, [batch, frames, r,
  // hop]; block i of frame t lands in output block t + i, so the output's blocks are the sum over
  // i of block i of every frame, shifted by i (Pad along the frames), then cut to
  // n_fft + hop (frames - 1) samples.
  const int64_t r = (*n_fft + hop - 1) / hop;
  if (r > 256) return Status::Unsupported("istft with n_fft / hop_length > 256 (the overlap-add adds that many shifted copies)");
  auto overlap_add = [&](const std::string& v) {  // [batch, frames, n_fft] -> [batch, n_fft + hop (frames - 1)]
    std::string p = v;
    if (r * hop > *n_fft) p = ctx.EmitTemp("Pad", {p, ctx.Int64s({0, 0, 0, 0, 0, r * hop - *n_fft})});
    p = ctx.EmitTemp("Reshape", {p, ctx.Int64s({0, 0, r, hop})});
    std::string sum;
    for (int64_t b = 0; b < r; ++b) {
      onnx::NodeProto* g = nullptr;
      const std::string block = ctx.EmitTemp("Gather", {p, ctx.Scalar(Number::Int(b), v1::INT64)}, &g);  // [batch, frames, hop]
      SetAttr(g, "axis", int64_t{2});
      const std::string shifted = ctx.EmitTemp("Pad", {block, ctx.Int64s({0, b, 0, 0, r - 1 - b, 0})});
      sum = sum.empty() ? shifted : ctx.EmitTemp("Add", {sum, shifted});
    }
    std::string flat = ctx.EmitTemp("Reshape", {sum, ctx.Int64s({0, -1})});
    if (r * hop > *n_fft) {
      flat = ctx.EmitTemp("Slice", {flat, ctx.Int64s({0}), ctx.Int64s({*n_fft - r * hop}), ctx.Int64s({1})});
    }
    return flat;
  };
  const std::string y = overlap_add(frames);
  // The envelope: the squared window in every frame, overlap-added ([1, frames, n_fft]).
  onnx::NodeProto* cc = nullptr;
  const std::string env_shape = ctx.EmitTemp("Concat", {ctx.Int64s({1}), DimOf(ctx, frames, 1), ctx.Int64s({*n_fft})}, &cc);
  SetAttr(cc, "axis", int64_t{0});
  const std::string w2 = ctx.EmitTemp("Mul", {window, window});
  const std::string env = overlap_add(ctx.EmitTemp("Expand", {w2, env_shape}));
  const int64_t start = center ? *n_fft / 2 : 0;
  const int64_t end = length ? start + *length : center ? -(*n_fft / 2) : std::numeric_limits<int64_t>::max();
  auto cut = [&](const std::string& v) {
    return ctx.EmitTemp("Slice", {v, ctx.Int64s({start}), ctx.Int64s({end}), ctx.Int64s({1})});
  };
  std::string out = ctx.EmitTemp("Div", {cut(y), cut(env)});
  if (length) out = ResizeAxis(ctx, out, 2, false, 1, ctx.Int64s({*length}));
  if (rank == 2) out = ctx.Squeeze(out, {0});
  ctx.Emit("Identity", {ctx.CastTo(out, part, rd)}, {ctx.Out(result)});
  return Status::Ok();
}

// real, imag, abs, angle, conj (and JAX's real_of_complex, conj_to_complex), view_as_real,
// view_as_complex, complex, polar of complex pairs.
Status LowerComplexUnary(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  const std::string& c = ctx.canonical();
  ValueId result;
  if (c == "complex" || c == "polar") {
    v1::DType part;
    IVY_RETURN_IF_ERROR(ComplexResult(node, ctx, &result, &part));
    const bool polar = c == "polar";
    ValueId a, b;
    IVY_RETURN_IF_ERROR(TensorParam(call, polar ? "abs" : (call.Has("real") ? "real" : "x"), &a));
    IVY_RETURN_IF_ERROR(TensorParam(call, polar ? "ang" : (call.Has("imag") ? "imag" : "y"), &b));
    if (IsComplexDType(ctx.DType(a)) || IsComplexDType(ctx.DType(b))) return Status::Unsupported(c + " of complex tensors");
    std::string ra = ctx.CastTo(ctx.In(a), ctx.DType(a), part), rb = ctx.CastTo(ctx.In(b), ctx.DType(b), part);
    if (polar) {
      std::string re = ctx.EmitTemp("Mul", {ra, ctx.EmitTemp("Cos", {rb})});
      std::string im = ctx.EmitTemp("Mul", {ra, ctx.EmitTemp("Sin", {rb})});
      ctx.Emit("Identity", {MakePair(ctx, re, im)}, {ctx.Out(result)});
    } else {  // both broadcast to their common shape (Expand broadcasts both ways)
      const std::string ea = ctx.EmitTemp("Expand", {ra, ctx.EmitTemp("Shape", {rb})});
      const std::string eb = ctx.EmitTemp("Expand", {rb, ctx.EmitTemp("Shape", {ea})});
      ctx.Emit("Identity", {MakePair(ctx, ea, eb)}, {ctx.Out(result)});
    }
    return Status::Ok();
  }
  ValueId x;
  IVY_RETURN_IF_ERROR(InputTensor(call, &x));
  const v1::DType xd = ctx.DType(x);
  if (c == "view_as_complex" || c == "view_as_complex_copy") {
    v1::DType part;
    IVY_RETURN_IF_ERROR(ComplexResult(node, ctx, &result, &part));
    if (ctx.Rank(x) < 1 || ctx.Shape(x).back() != 2) return Status::Unsupported("view_as_complex of a tensor whose last dim is not 2");
    ctx.Emit("Identity", {ctx.CastTo(ctx.In(x), xd, part)}, {ctx.Out(result)});
    return Status::Ok();
  }
  if (c == "conj_to_complex" && !IsComplexDType(xd)) {
    (void)call.Get("input_dtype");  // JAX's: the input's own dtype
    v1::DType part;
    IVY_RETURN_IF_ERROR(ComplexResult(node, ctx, &result, &part));
    ctx.Emit("Identity", {RealToPair(ctx, ctx.CastTo(ctx.In(x), xd, part), ctx.Rank(x))}, {ctx.Out(result)});
    return Status::Ok();
  }
  if (c == "imag" && !IsComplexDType(xd) && OnnxElemType(xd) != 0) {  // np.imag of a real array: zeros
    IVY_RETURN_IF_ERROR(SingleResult(node, &result));
    const v1::DType rd = ctx.DType(result);
    if (OnnxElemType(rd) == 0) return Status::Unsupported(std::string("imag with a ") + DTypeName(rd) + " result");
    ctx.Emit("Expand", {ctx.Scalar(Number::Int(0), rd), ctx.EmitTemp("Shape", {ctx.In(x)})}, {ctx.Out(result)});
    return Status::Ok();
  }
  if (!IsComplexDType(xd)) return Status::Unsupported(c + " lowering of complex pairs given a " + DTypeName(xd) + " tensor");
  if (c == "resolve_conj" || c == "resolve_neg") {  // the values as they read (the bits made real)
    v1::DType part;
    IVY_RETURN_IF_ERROR(ComplexResult(node, ctx, &result, &part));
    std::string p;
    IVY_RETURN_IF_ERROR(PairOf(ctx, x, part, &p));
    ctx.Emit("Identity", {p}, {ctx.Out(result)});
    return Status::Ok();
  }
  if (c == "conj" || c == "conj_to_complex") {
    if (c == "conj_to_complex") (void)call.Get("input_dtype");  // JAX's: the input's own dtype
    v1::DType part;
    IVY_RETURN_IF_ERROR(ComplexResult(node, ctx, &result, &part));
    std::string p;
    IVY_RETURN_IF_ERROR(PairOf(ctx, x, part, &p));
    ctx.Emit("Identity", {Conj(ctx, p, part)}, {ctx.Out(result)});
    return Status::Ok();
  }
  IVY_RETURN_IF_ERROR(RealResult(node, ctx, &result));
  const v1::DType rd = ctx.DType(result);
  const v1::DType part = PartDType(xd) == v1::FLOAT64 || rd == v1::FLOAT64 ? v1::FLOAT64 : v1::FLOAT32;
  std::string p;
  IVY_RETURN_IF_ERROR(PairOf(ctx, x, part, &p));
  std::string out;
  if (c == "view_as_real" || c == "view_as_real_copy") {
    out = p;
  } else if (c == "real" || c == "real_of_complex") {
    out = Part(ctx, p, 0);
  } else if (c == "imag") {
    out = Part(ctx, p, 1);
  } else if (c == "abs") {
    out = Hypot(ctx, Part(ctx, p, 0), Part(ctx, p, 1), part);
  } else if (c == "angle") {
    out = EmitAtan2(ctx, Part(ctx, p, 1), Part(ctx, p, 0), part);
  } else {
    return Status::Unsupported("the complex-pair lowering does not know canonical op '" + c + "'");
  }
  ctx.Emit("Identity", {ctx.CastTo(out, part, rd)}, {ctx.Out(result)});
  return Status::Ok();
}

// add, sub (with alpha), mul, div of complex operands, or complex and real ones (tensors or
// Python numbers); the result complex.
Status LowerComplexBinary(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  const std::string& c = ctx.canonical();
  ValueId result;
  v1::DType part;
  IVY_RETURN_IF_ERROR(ComplexResult(node, ctx, &result, &part));
  const v1::Arg* a = call.Get(call.Has("input") ? "input" : "x");
  const v1::Arg* b = call.Get(call.Has("other") ? "other" : "y");
  if (!a || !b) return Status::Unsupported(c + ": missing operand");
  if (c == "div" && !call.IsNone("rounding_mode")) return Status::Unsupported("div of complex tensors with a rounding_mode");
  Operand x, y;
  IVY_RETURN_IF_ERROR(OperandOf(ctx, *a, part, &x));
  IVY_RETURN_IF_ERROR(OperandOf(ctx, *b, part, &y));
  if ((c == "add" || c == "sub") && call.Has("alpha") && !call.IsNone("alpha")) {
    const v1::Arg* al = call.Get("alpha");
    if (al->kind_case() == v1::Arg::kC) return Status::Unsupported(c + " with a complex alpha");
    auto v = AsDouble(*al);
    if (!v) return Status::Unsupported(c + ": alpha is not a number");
    if (*v != 1.0) {
      const std::string s = F(ctx, *v, part);
      if (!y.pair.empty()) y.pair = ctx.EmitTemp("Mul", {y.pair, s});
      else y.real = ctx.EmitTemp("Mul", {y.real, s});
    }
  }
  std::string out;
  if (c == "add" || c == "sub") {
    out = ctx.EmitTemp(c == "add" ? "Add" : "Sub", {AsPair(ctx, x), AsPair(ctx, y)});
  } else if (c == "mul" || c == "div") {
    if (x.pair.empty() && c == "mul") std::swap(x, y);  // real * complex = complex * real
    if (y.pair.empty()) {  // complex op real: both parts by the real
      out = ctx.EmitTemp(c == "mul" ? "Mul" : "Div", {x.pair, ctx.Unsqueeze(y.real, {-1})});
    } else {
      const std::string xp = AsPair(ctx, x);
      const std::string xr = Part(ctx, xp, 0), xi = Part(ctx, xp, 1), yr = Part(ctx, y.pair, 0), yi = Part(ctx, y.pair, 1);
      std::string re, im;
      if (c == "mul") ComplexMul(ctx, xr, xi, yr, yi, &re, &im);
      else ComplexDiv(ctx, part, xr, xi, yr, yi, &re, &im);
      out = MakePair(ctx, re, im);
    }
  } else {
    return Status::Unsupported("the complex-pair lowering does not know canonical op '" + c + "'");
  }
  ctx.Emit("Identity", {out}, {ctx.Out(result)});
  return Status::Ok();
}

// Shape ops and casts of complex values: permute_dims and transpose (the pair dim stays last),
// cast (real to complex: a zero imaginary part; complex to complex: the parts cast; complex to a
// float: the real part, as torch's .to(float), NumPy's astype and lax.convert_element_type).
Status LowerComplexShape(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  const std::string& c = ctx.canonical();
  ValueId x, result;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(SingleResult(node, &result));
  const v1::DType xd = ctx.DType(x), rd = ctx.DType(result);
  if (c == "cast") {
    if (IsComplexDType(rd)) {
      const v1::DType part = PartDType(rd);
      std::string out;
      if (IsComplexDType(xd)) {
        IVY_RETURN_IF_ERROR(PairOf(ctx, x, part, &out));
      } else {
        if (OnnxElemType(xd) == 0) return Status::Unsupported(std::string("a cast from ") + DTypeName(xd) + " to complex");
        out = RealToPair(ctx, ctx.CastTo(ctx.In(x), xd, part), ctx.Rank(x));
      }
      ctx.Emit("Identity", {out}, {ctx.Out(result)});
      return Status::Ok();
    }
    if (!IsFloating(rd)) {
      return Status::Unsupported(std::string("a cast of a complex tensor to ") + DTypeName(rd) +
                                 " (only to complex or float types, which keep the real part)");
    }
    std::string p;
    IVY_RETURN_IF_ERROR(PairOf(ctx, x, PartDType(xd), &p));
    ctx.Emit("Identity", {ctx.CastTo(Part(ctx, p, 0), PartDType(xd), rd)}, {ctx.Out(result)});
    return Status::Ok();
  }
  v1::DType part;
  IVY_RETURN_IF_ERROR(ComplexResult(node, ctx, &result, &part));
  std::string p;
  IVY_RETURN_IF_ERROR(PairOf(ctx, x, part, &p));
  const int rank = ctx.Rank(x);
  std::vector<int64_t> perm(rank);
  for (int i = 0; i < rank; ++i) perm[i] = i;
  if (c == "permute_dims") {
    auto dims = call.IntList("dims");
    if (call.IsNone("dims")) {
      dims = std::vector<int64_t>(rank);
      for (int i = 0; i < rank; ++i) (*dims)[i] = rank - 1 - i;
    }
    if (!dims || static_cast<int>(dims->size()) != rank) {
      return Status::Unsupported("permute dims do not list the " + std::to_string(rank) + " dims of the input");
    }
    for (int i = 0; i < rank; ++i) IVY_RETURN_IF_ERROR(NormalizeAxis((*dims)[i], rank, &perm[i]));
  } else if (c == "transpose") {
    int64_t d0 = 0, d1 = 1;
    if (call.Has("dim0")) {
      auto a = call.Int("dim0"), b = call.Int("dim1");
      if (!a || !b) return Status::Unsupported("transpose dims are not ints");
      if (rank > 0) {
        IVY_RETURN_IF_ERROR(NormalizeAxis(*a, rank, &d0));
        IVY_RETURN_IF_ERROR(NormalizeAxis(*b, rank, &d1));
      }
    } else if (rank > 2) {
      return Status::Unsupported("t() of a tensor of rank " + std::to_string(rank));
    }
    if (rank >= 2) std::swap(perm[d0], perm[d1]);
  } else {
    return Status::Unsupported("the complex-pair lowering does not know canonical op '" + c + "'");
  }
  perm.push_back(rank);
  onnx::NodeProto* t = nullptr;
  const std::string out = ctx.EmitTemp("Transpose", {p}, &t);
  SetAttr(t, "perm", perm);
  ctx.Emit("Identity", {out}, {ctx.Out(result)});
  return Status::Ok();
}

// lax.fft_p: fft_type FFT, IFFT, RFFT or IRFFT over the last len(fft_lengths) dims, unnormalized
// forward and 1/n inverse (norm "backward"): torch's fftn, ifftn, rfftn, irfftn with s =
// fft_lengths.
Status LowerLaxFft(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  const v1::Arg* t = call.Get("fft_type");
  if (!t || t->kind_case() != v1::Arg::kSymbol) return Status::Unsupported("lax.fft with fft_type " + (t ? ArgToString(*t, true) : std::string("missing")));
  const std::string& sym = t->symbol();
  const std::string kind = sym.substr(sym.rfind('.') + 1);
  const char* canonical = kind == "FFT" ? "fftn" : kind == "IFFT" ? "ifftn" : kind == "RFFT" ? "rfftn" : kind == "IRFFT" ? "irfftn" : nullptr;
  if (!canonical) return Status::Unsupported("lax.fft with fft_type " + sym);
  // The lengths: ints, or sizes JAX's symbolic shapes proved follow an input dim (ivytrace.sym).
  const v1::Arg* fl = call.Get("fft_lengths");
  auto lengths = fl ? SequenceItems(*fl) : std::nullopt;
  if (!lengths || lengths->empty()) return Status::Unsupported("lax.fft: fft_lengths is not a non-empty tuple");
  ValueId x;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  const int rank = ctx.Rank(x);
  const int k = static_cast<int>(lengths->size());
  if (k > rank) return Status::Unsupported("lax.fft over more dims than the input has");
  BoundCall c2 = call;
  v1::Arg s, dim;
  for (int i = 0; i < k; ++i) {
    *s.mutable_tuple()->add_items() = *(*lengths)[i];
    dim.mutable_tuple()->add_items()->set_i(rank - k + i);
  }
  c2.Set("s", s);
  c2.Set("dim", dim);
  v1::Arg none;
  none.set_none(true);
  c2.Set("norm", none);
  const std::string saved = ctx.canonical();
  ctx.SetCanonical(canonical);
  Status st = LowerFft(node, c2, ctx);
  ctx.SetCanonical(saved);
  return st;
}

// Basic indexing of a complex tensor (ints, slices, None, one Ellipsis; bounds ints or sizes read
// from shapes), which addresses the leading dims only: the pair dim stays last. A tensor or bool
// index is refused.
Status LowerComplexGetitem(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  ValueId x, result;
  v1::DType part;
  IVY_RETURN_IF_ERROR(TensorParam(call, "input", &x));
  IVY_RETURN_IF_ERROR(ComplexResult(node, ctx, &result, &part));
  const v1::Arg* index = call.Get("index");
  if (!index) return Status::Unsupported("getitem without an index");
  std::vector<const v1::Arg*> items;
  if (index->kind_case() == v1::Arg::kTuple) {
    for (const auto& it : index->tuple().items()) items.push_back(&it);
  } else {
    items.push_back(index);
  }
  const int rank = ctx.Rank(x);
  int consumed = 0, ellipses = 0;
  for (const v1::Arg* it : items) {
    switch (it->kind_case()) {
      case v1::Arg::kEllipsis: ++ellipses; break;
      case v1::Arg::kNone: break;
      case v1::Arg::kSlice: ++consumed; break;
      case v1::Arg::kI: ++consumed; break;
      default:
        if (IsSymbolicArg(ctx, *it)) {
          ++consumed;
          break;
        }
        return Status::Unsupported("getitem of a complex tensor with index " + ArgToString(*it, true) +
                                   " (only ints, slices, None and Ellipsis index complex pairs)");
    }
  }
  if (ellipses > 1 || consumed > rank) return Status::Unsupported("getitem index does not fit the complex tensor's dims");
  std::string cur;
  IVY_RETURN_IF_ERROR(PairOf(ctx, x, part, &cur));
  auto bound = [&](const v1::Arg* a, int64_t dflt, std::string* out) -> Status {
    if (!a || IsNone(*a)) {
      *out = ctx.Int64s({dflt});
    } else if (auto i = AsInt(*a)) {
      *out = ctx.Int64s({*i});
    } else if (IsSymbolicArg(ctx, *a)) {
      std::string v;
      IVY_RETURN_IF_ERROR(DynamicInts(ctx, *a, &v));
      *out = ctx.EmitTemp("Reshape", {v, ctx.Int64s({1})});
    } else {
      return Status::Unsupported("slice bound " + ArgToString(*a, true) + " is not an int");
    }
    return Status::Ok();
  };
  int64_t axis = 0;
  for (const v1::Arg* it : items) {
    if (it->kind_case() == v1::Arg::kEllipsis) {
      axis += rank - consumed;
    } else if (it->kind_case() == v1::Arg::kNone) {
      cur = ctx.Unsqueeze(cur, {axis});
      ++axis;
    } else if (it->kind_case() == v1::Arg::kSlice) {
      const v1::Slice& sl = it->slice();
      int64_t step = 1;
      if (sl.has_step() && !IsNone(sl.step())) {
        auto st = AsInt(sl.step());
        if (!st || *st == 0) return Status::Unsupported("slice step " + ArgToString(sl.step(), true));
        step = *st;
      }
      const bool full = (!sl.has_start() || IsNone(sl.start())) && (!sl.has_stop() || IsNone(sl.stop())) && step == 1;
      if (!full) {
        constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
        std::string start, stop;
        IVY_RETURN_IF_ERROR(bound(sl.has_start() ? &sl.start() : nullptr, step > 0 ? 0 : kMax, &start));
        IVY_RETURN_IF_ERROR(bound(sl.has_stop() ? &sl.stop() : nullptr, step > 0 ? kMax : kMin, &stop));
        cur = ctx.EmitTemp("Slice", {cur, start, stop, ctx.Int64s({axis}), ctx.Int64s({step})});
      }
      ++axis;
    } else {  // an int (or a size read from a shape): Gather drops the dim
      std::string i;
      IVY_RETURN_IF_ERROR(bound(it, 0, &i));
      onnx::NodeProto* g = nullptr;
      cur = ctx.EmitTemp("Gather", {cur, ctx.Squeeze(i, {0})}, &g);
      SetAttr(g, "axis", axis);
    }
  }
  ctx.Emit("Identity", {cur}, {ctx.Out(result)});
  return Status::Ok();
}

// cat / stack of complex tensors (real ones given a zero imaginary part) along a dim of the
// complex result: the pair dim stays last.
Status LowerComplexConcat(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  const std::string& c = ctx.canonical();
  ValueId result;
  v1::DType part;
  IVY_RETURN_IF_ERROR(ComplexResult(node, ctx, &result, &part));
  const v1::Arg* tensors = call.Get("tensors");
  auto items = tensors ? SequenceItems(*tensors) : std::nullopt;
  if (!items || items->empty()) return Status::Unsupported(c + " of something that is not a list of tensors");
  if (node.op == "numpy.concatenate" && call.Has("dim") && call.IsNone("dim")) {
    return Status::Unsupported("np.concatenate(axis=None) of complex arrays");
  }
  const char* dim_param = call.Has("axis") && !call.IsNone("axis") ? "axis" : "dim";
  auto d = call.Has(dim_param) && !call.IsNone(dim_param) ? call.Int(dim_param) : std::optional<int64_t>(0);
  if (!d) return Status::Unsupported(c + ": dim is not an int");
  int64_t axis;
  IVY_RETURN_IF_ERROR(NormalizeAxis(*d, ctx.Rank(result), &axis));
  std::vector<std::string> parts;
  for (const v1::Arg* it : *items) {
    Operand o;
    if (it->kind_case() != v1::Arg::kTensor) return Status::Unsupported(c + " of a non-tensor item");
    IVY_RETURN_IF_ERROR(OperandOf(ctx, *it, part, &o));
    std::string p = AsPair(ctx, o);
    if (c == "stack") p = ctx.Unsqueeze(p, {axis});
    parts.push_back(p);
  }
  onnx::NodeProto* n = nullptr;
  const std::string out = ctx.EmitTemp("Concat", parts, &n);
  SetAttr(n, "axis", axis);
  ctx.Emit("Identity", {out}, {ctx.Out(result)});
  return Status::Ok();
}

// matmul (torch.matmul, @, NumPy's matmul) and einsum of one or two operands with a complex one:
// the product is bilinear, so it is that op on the parts, (ar br - ai bi) + i (ar bi + ai br),
// with a real operand's imaginary part left out (MatMul / Einsum on the float parts).
Status LowerComplexProduct(const Node& node, const BoundCall& call, LoweringContext& ctx) {
  const std::string& c = ctx.canonical();
  ValueId result;
  v1::DType part;
  IVY_RETURN_IF_ERROR(ComplexResult(node, ctx, &result, &part));
  std::vector<const v1::Arg*> operands;
  std::string equation;
  if (c == "einsum") {
    const v1::Arg* eq = call.Get("equation");
    if (!eq || eq->kind_case() != v1::Arg::kS) return Status::Unsupported("einsum without an equation string");
    for (char ch : eq->s()) {
      if (ch != ' ') equation += ch;
    }
    const v1::Arg* ops = call.Get("operands");
    auto items = ops ? SequenceItems(*ops) : std::nullopt;
    if (!items) return Status::Unsupported("einsum operands are not a list");
    operands = *items;
    if (operands.empty() || operands.size() > 2) return Status::Unsupported("einsum of complex tensors with more than two operands");
  } else if (c == "matmul") {
    operands = {call.Get("input"), call.Get("other")};
    if (!operands[0] || !operands[1]) return Status::Unsupported("matmul: missing operand");
  } else {
    return Status::Unsupported("the complex-pair lowering does not know canonical op '" + c + "'");
  }
  std::vector<std::string> re, im;  // im "" for a real operand
  for (const v1::Arg* a : operands) {
    if (a->kind_case() != v1::Arg::kTensor) return Status::Unsupported(c + " of a non-tensor operand");
    Operand o;
    IVY_RETURN_IF_ERROR(OperandOf(ctx, *a, part, &o));
    if (o.pair.empty()) {
      re.push_back(o.real);
      im.push_back("");
    } else {
      re.push_back(Part(ctx, o.pair, 0));
      im.push_back(Part(ctx, o.pair, 1));
    }
  }
  auto prod = [&](const std::vector<std::string>& ins) {
    onnx::NodeProto* n = nullptr;
    const std::string out = ctx.EmitTemp(c == "einsum" ? "Einsum" : "MatMul", ins, &n);
    if (c == "einsum") SetAttr(n, "equation", equation);
    return out;
  };
  std::string out_re, out_im;
  if (operands.size() == 1) {
    out_re = prod({re[0]});
    out_im = im[0].empty() ? "" : prod({im[0]});
  } else {
    out_re = prod({re[0], re[1]});
    if (!im[0].empty() && !im[1].empty()) out_re = ctx.EmitTemp("Sub", {out_re, prod({im[0], im[1]})});
    if (!im[1].empty()) out_im = prod({re[0], im[1]});
    if (!im[0].empty()) {
      const std::string t = prod({im[0], re[1]});
      out_im = out_im.empty() ? t : ctx.EmitTemp("Add", {out_im, t});
    }
  }
  if (out_im.empty()) return Status::Unsupported(c + " of real operands with a complex result");
  ctx.Emit("Identity", {MakePair(ctx, out_re, out_im)}, {ctx.Out(result)});
  return Status::Ok();
}

namespace {

// The lowerings that declare they handle complex values as pairs, sorted by canonical op.
const CanonicalLowering kComplexTable[] = {
    {"abs",              "Gather+Abs+Max+Min+Sqrt (hypot of the parts)", LowerComplexUnary},
    {"add",              "Add (pairs)",                  LowerComplexBinary},
    {"angle",            "Gather+Atan+Where (atan2 of the parts)", LowerComplexUnary},
    {"cast",             "Cast of the parts|Pad|Gather", LowerComplexShape},
    {"complex",          "Expand+Concat",                LowerComplexUnary},
    {"concat",           "Concat (pairs)",               LowerComplexConcat},
    {"conj",             "Mul by (1, -1)",               LowerComplexUnary},
    {"conj_to_complex",  "Mul by (1, -1)|Pad",           LowerComplexUnary},
    {"div",              "Smith's division on the parts", LowerComplexBinary},
    {"einsum",           "Einsum on the parts",          LowerComplexProduct},
    {"fft",              "DFT",                          LowerFft},
    {"fft_lax",          "DFT",                          LowerLaxFft},
    {"fftn",             "DFT",                          LowerFft},
    {"getitem",          "Slice|Gather|Unsqueeze (pairs)", LowerComplexGetitem},
    {"hfft",             "DFT (inverse, Hermitian extension)", LowerFft},
    {"hfftn",            "DFT (inverse, Hermitian extension)", LowerFft},
    {"ifft",             "DFT (inverse)",                LowerFft},
    {"ifftn",            "DFT (inverse)",                LowerFft},
    {"ihfft",            "DFT (onesided)",               LowerFft},
    {"ihfftn",           "DFT (onesided)",               LowerFft},
    {"imag",             "Gather",                       LowerComplexUnary},
    {"irfft",            "DFT (inverse, Hermitian extension)", LowerFft},
    {"irfftn",           "DFT (inverse, Hermitian extension)", LowerFft},
    {"istft",            "DFT+Pad+Add (overlap-add)+Div", LowerIstft},
    {"matmul",           "MatMul on the parts",          LowerComplexProduct},
    {"mul",              "Mul on the parts",             LowerComplexBinary},
    {"permute_dims",     "Transpose (pair dim last)",    LowerComplexShape},
    {"polar",            "Cos+Sin+Mul+Concat",           LowerComplexUnary},
    {"real",             "Gather",                       LowerComplexUnary},
    {"real_of_complex",  "Gather",                       LowerComplexUnary},
    {"resolve_conj",     "Identity",                     LowerComplexUnary},
    {"resolve_neg",      "Identity",                     LowerComplexUnary},
    {"rfft",             "DFT (onesided)",               LowerFft},
    {"rfftn",            "DFT (onesided)",               LowerFft},
    {"stack",            "Unsqueeze+Concat (pairs)",     LowerComplexConcat},
    {"stft",             "Pad+STFT+Transpose",           LowerStft},
    {"sub",              "Sub (pairs)",                  LowerComplexBinary},
    {"transpose",        "Transpose (pair dim last)",    LowerComplexShape},
    {"view_as_complex",  "Identity",                     LowerComplexUnary},
    {"view_as_complex_copy", "Identity",                 LowerComplexUnary},
    {"view_as_real",     "Identity",                     LowerComplexUnary},
    {"view_as_real_copy", "Identity",                    LowerComplexUnary},
};

}  // namespace

const CanonicalLowering* FindComplexLowering(std::string_view canonical) {
  for (const auto& row : kComplexTable) {
    if (row.canonical == canonical) return &row;
  }
  return nullptr;
}


}  // namespace onnx_export
}  // namespace ivytrace
