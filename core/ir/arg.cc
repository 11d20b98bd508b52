#include "core/ir/arg.h"

#include <cmath>
#include <sstream>

namespace ivytrace {

void ForEachTensor(const v1::Arg& arg, const std::function<void(const v1::TensorRef&)>& fn) {
  switch (arg.kind_case()) {
    case v1::Arg::kTensor: fn(arg.tensor()); break;
    case v1::Arg::kList:
      for (const auto& a : arg.list().items()) ForEachTensor(a, fn);
      break;
    case v1::Arg::kTuple:
      for (const auto& a : arg.tuple().items()) ForEachTensor(a, fn);
      break;
    case v1::Arg::kDict:
      for (const auto& a : arg.dict().values()) ForEachTensor(a, fn);
      break;
    case v1::Arg::kSlice:
      if (arg.slice().has_start()) ForEachTensor(arg.slice().start(), fn);
      if (arg.slice().has_stop()) ForEachTensor(arg.slice().stop(), fn);
      if (arg.slice().has_step()) ForEachTensor(arg.slice().step(), fn);
      break;
    default: break;
  }
}

void ForEachTensorMutable(v1::Arg* arg, const std::function<void(v1::TensorRef*)>& fn) {
  switch (arg->kind_case()) {
    case v1::Arg::kTensor: fn(arg->mutable_tensor()); break;
    case v1::Arg::kList:
      for (auto& a : *arg->mutable_list()->mutable_items()) ForEachTensorMutable(&a, fn);
      break;
    case v1::Arg::kTuple:
      for (auto& a : *arg->mutable_tuple()->mutable_items()) ForEachTensorMutable(&a, fn);
      break;
    case v1::Arg::kDict:
      for (auto& a : *arg->mutable_dict()->mutable_values()) ForEachTensorMutable(&a, fn);
      break;
    case v1::Arg::kSlice: {
      auto* s = arg->mutable_slice();
      if (s->has_start()) ForEachTensorMutable(s->mutable_start(), fn);
      if (s->has_stop()) ForEachTensorMutable(s->mutable_stop(), fn);
      if (s->has_step()) ForEachTensorMutable(s->mutable_step(), fn);
      break;
    }
    default: break;
  }
}

bool HasTensor(const v1::Arg& arg) {
  bool found = false;
  ForEachTensor(arg, [&](const v1::TensorRef&) { found = true; });
  return found;
}

std::optional<int64_t> AsInt(const v1::Arg& arg) {
  if (arg.kind_case() == v1::Arg::kI) return arg.i();
  if (arg.kind_case() == v1::Arg::kB) return arg.b() ? 1 : 0;
  return std::nullopt;
}

std::optional<double> AsDouble(const v1::Arg& arg) {
  if (arg.kind_case() == v1::Arg::kF) return arg.f();
  if (auto i = AsInt(arg)) return static_cast<double>(*i);
  return std::nullopt;
}

std::optional<bool> AsBool(const v1::Arg& arg) {
  if (arg.kind_case() == v1::Arg::kB) return arg.b();
  if (arg.kind_case() == v1::Arg::kI) return arg.i() != 0;
  return std::nullopt;
}

std::optional<std::vector<int64_t>> AsIntList(const v1::Arg& arg, int broadcast) {
  if (auto i = AsInt(arg)) {
    return std::vector<int64_t>(broadcast > 0 ? broadcast : 1, *i);
  }
  const v1::ArgList* items = nullptr;
  if (arg.kind_case() == v1::Arg::kList) items = &arg.list();
  if (arg.kind_case() == v1::Arg::kTuple) items = &arg.tuple();
  if (!items) return std::nullopt;
  std::vector<int64_t> out;
  for (const auto& a : items->items()) {
    auto i = AsInt(a);
    if (!i) return std::nullopt;
    out.push_back(*i);
  }
  if (broadcast > 0 && out.size() == 1) out.assign(broadcast, out[0]);
  return out;
}

bool IsNone(const v1::Arg& arg) {
  return arg.kind_case() == v1::Arg::kNone || arg.kind_case() == v1::Arg::KIND_NOT_SET;
}

namespace {

void Render(const v1::Arg& arg, bool graph_refs, std::ostringstream& os) {
  auto render_items = [&](const v1::ArgList& l, const char* open, const char* close) {
    os << open;
    for (int i = 0; i < l.items_size(); ++i) {
      if (i) os << ", ";
      Render(l.items(i), graph_refs, os);
    }
    if (l.items_size() == 1 && std::string(open) == "(") os << ",";
    os << close;
  };
  switch (arg.kind_case()) {
    case v1::Arg::kTensor:
      if (graph_refs) {
        os << "%" << arg.tensor().value();
      } else {
        os << "t" << arg.tensor().id() << ".v" << arg.tensor().version();
      }
      break;
    case v1::Arg::kNone:
    case v1::Arg::KIND_NOT_SET: os << "None"; break;
    case v1::Arg::kB: os << (arg.b() ? "True" : "False"); break;
    case v1::Arg::kI: os << arg.i(); break;
    case v1::Arg::kF: {
      double f = arg.f();
      if (std::isfinite(f) && f == std::floor(f) && std::fabs(f) < 1e15) {
        os << static_cast<int64_t>(f) << ".0";
      } else {
        os << f;
      }
      break;
    }
    case v1::Arg::kS: os << "'" << arg.s() << "'"; break;
    case v1::Arg::kDtype: os << DTypeName(arg.dtype()); break;
    case v1::Arg::kDevice: os << "device('" << arg.device() << "')"; break;
    case v1::Arg::kList: render_items(arg.list(), "[", "]"); break;
    case v1::Arg::kTuple: render_items(arg.tuple(), "(", ")"); break;
    case v1::Arg::kDict:
      os << "{";
      for (int i = 0; i < arg.dict().keys_size() && i < arg.dict().values_size(); ++i) {
        if (i) os << ", ";
        os << "'" << arg.dict().keys(i) << "': ";
        Render(arg.dict().values(i), graph_refs, os);
      }
      os << "}";
      break;
    case v1::Arg::kSlice: {
      const auto& s = arg.slice();
      auto part = [&](bool has, const v1::Arg& a) {
        if (has && !IsNone(a)) Render(a, graph_refs, os);
      };
      part(s.has_start(), s.start());
      os << ":";
      part(s.has_stop(), s.stop());
      if (s.has_step() && !IsNone(s.step())) {
        os << ":";
        Render(s.step(), graph_refs, os);
      }
      break;
    }
    case v1::Arg::kEllipsis: os << "..."; break;
    case v1::Arg::kSymbol: os << arg.symbol(); break;
    case v1::Arg::kC: os << "(" << arg.c().real() << "+" << arg.c().imag() << "j)"; break;
    case v1::Arg::kOpaque: os << "<" << arg.opaque() << ">"; break;
  }
}

}  // namespace

std::string ArgToString(const v1::Arg& arg, bool graph_refs) {
  std::ostringstream os;
  Render(arg, graph_refs, os);
  return os.str();
}

const char* DTypeName(v1::DType d) {
  switch (d) {
    case v1::FLOAT32: return "float32";
    case v1::FLOAT64: return "float64";
    case v1::FLOAT16: return "float16";
    case v1::BFLOAT16: return "bfloat16";
    case v1::INT8: return "int8";
    case v1::INT16: return "int16";
    case v1::INT32: return "int32";
    case v1::INT64: return "int64";
    case v1::UINT8: return "uint8";
    case v1::BOOL: return "bool";
    case v1::COMPLEX64: return "complex64";
    case v1::COMPLEX128: return "complex128";
    case v1::UINT16: return "uint16";
    case v1::UINT32: return "uint32";
    case v1::UINT64: return "uint64";
    case v1::SYM_INT: return "sym_int";
    case v1::SYM_BOOL: return "sym_bool";
    case v1::SYM_FLOAT: return "sym_float";
    default: return "?";
  }
}

size_t DTypeSize(v1::DType d) {
  switch (d) {
    case v1::FLOAT64: case v1::INT64: case v1::UINT64: case v1::COMPLEX64: case v1::SYM_INT:
    case v1::SYM_FLOAT: return 8;
    case v1::FLOAT32: case v1::INT32: case v1::UINT32: return 4;
    case v1::FLOAT16: case v1::BFLOAT16: case v1::INT16: case v1::UINT16: return 2;
    case v1::INT8: case v1::UINT8: case v1::BOOL: case v1::SYM_BOOL: return 1;
    case v1::COMPLEX128: return 16;
    default: return 0;
  }
}

}  // namespace ivytrace
