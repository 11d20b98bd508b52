#include "core/export/onnx/lowering_context.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "core/ir/arg.h"

namespace ivytrace {
namespace onnx_export {

static_assert(std::endian::native == std::endian::little,
              "tensor data is stored little-endian and copied as is");

int OnnxElemType(v1::DType d) {
  using T = onnx::TensorProto;
  switch (d) {
    case v1::FLOAT32: return T::FLOAT;
    case v1::FLOAT64: return T::DOUBLE;
    case v1::FLOAT16: return T::FLOAT16;
    case v1::BFLOAT16: return T::BFLOAT16;
    case v1::INT8: return T::INT8;
    case v1::INT16: return T::INT16;
    case v1::INT32: return T::INT32;
    case v1::INT64: return T::INT64;
    case v1::UINT8: return T::UINT8;
    case v1::UINT16: return T::UINT16;
    case v1::UINT32: return T::UINT32;
    case v1::UINT64: return T::UINT64;
    case v1::BOOL: return T::BOOL;
    case v1::COMPLEX64: return T::COMPLEX64;
    case v1::COMPLEX128: return T::COMPLEX128;
    case v1::SYM_INT: return T::INT64;   // a shape-derived int: a 0-d int64 tensor
    case v1::SYM_BOOL: return T::BOOL;
    case v1::SYM_FLOAT: return T::DOUBLE;  // a float argument of a traced function: a 0-d double
    default: return T::UNDEFINED;
  }
}

bool IsFloating(v1::DType d) {
  return d == v1::FLOAT32 || d == v1::FLOAT64 || d == v1::FLOAT16 || d == v1::BFLOAT16;
}

namespace {

uint16_t FloatToHalf(float value) {
  uint32_t x = std::bit_cast<uint32_t>(value);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t raw_exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (raw_exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
  int32_t exp = static_cast<int32_t>(raw_exp) - 127 + 15;
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    int shift = 14 - exp;
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // a carry rounds up the exponent
  return static_cast<uint16_t>(half);
}

uint16_t FloatToBFloat16(float value) {
  uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

template <typename T>
void Append(std::string* raw, T v) {
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  raw->append(buf, sizeof(T));
}

}  // namespace

Status EncodeNumbers(const std::vector<Number>& values, v1::DType dtype, std::string* raw) {
  for (const Number& n : values) {
    const int64_t i = n.i;  // Number::Float truncated it (0 when out of int64 range: no UB)
    const double f = n.AsDouble();
    switch (dtype) {
      case v1::FLOAT32: Append(raw, static_cast<float>(f)); break;
      case v1::FLOAT64: Append(raw, f); break;
      case v1::FLOAT16: Append(raw, FloatToHalf(static_cast<float>(f))); break;
      case v1::BFLOAT16: Append(raw, FloatToBFloat16(static_cast<float>(f))); break;
      case v1::INT8: Append(raw, static_cast<int8_t>(i)); break;
      case v1::INT16: Append(raw, static_cast<int16_t>(i)); break;
      case v1::INT32: Append(raw, static_cast<int32_t>(i)); break;
      case v1::INT64: Append(raw, i); break;
      case v1::UINT8: Append(raw, static_cast<uint8_t>(i)); break;
      case v1::UINT16: Append(raw, static_cast<uint16_t>(i)); break;
      case v1::UINT32: Append(raw, static_cast<uint32_t>(i)); break;
      case v1::UINT64: Append(raw, static_cast<uint64_t>(i)); break;
      case v1::BOOL: Append(raw, static_cast<uint8_t>(f != 0.0 ? 1 : 0)); break;
      default:
        return Status::Unsupported(std::string("cannot write a number as ") + DTypeName(dtype));
    }
  }
  return Status::Ok();
}

void SetAttr(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void SetAttr(onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

void SetAttr(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void SetAttr(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

void SetAttr(onnx::NodeProto* n, const std::string& name, const onnx::TensorProto& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = v;
}

LoweringContext::LoweringContext(const Graph& graph, const OnnxExportOptions& options,
                                 onnx::GraphProto* out)
    : graph_(graph),
      options_(options),
      out_(out),
      value_names_(graph.values.size()),
      plain_result_name_(graph.values.size(), false) {
  names_.Reserve(graph.nodes.size() / 4 + 64);
}

bool LoweringContext::IsPlainResultName(std::string_view s) const {
  if (s.size() < 2 || s.size() > 11 || s[0] != 'v' || (s[1] == '0' && s.size() > 2)) return false;
  uint64_t id = 0;
  for (char c : s.substr(1)) {
    if (c < '0' || c > '9') return false;
    id = id * 10 + static_cast<uint64_t>(c - '0');
  }
  return id < plain_result_name_.size() && plain_result_name_[id];
}

std::optional<ValueId> LoweringContext::ResultTensor(const Node& node) {
  if (node.result.kind_case() != v1::Arg::kTensor) return std::nullopt;
  return node.result.tensor().value();
}

std::string_view LoweringContext::Unique(std::string_view base) {
  if (base.empty()) base = "t";
  std::string candidate(base);
  for (int i = 1;; ++i) {
    if (!IsPlainResultName(candidate)) {
      auto [kept, added] = names_.Insert(candidate);
      if (added) return kept;
    }
    candidate.assign(base);
    candidate += '_';
    candidate += std::to_string(i);
  }
}

Status LoweringContext::ReserveName(const std::string& name) {
  if (IsPlainResultName(name) || !names_.Insert(name).second) {
    return Status::InvalidArgument("the ONNX graph would have two values named '" + name + "'");
  }
  return Status::Ok();
}

bool LoweringContext::IsDefined(ValueId v) const {
  return v < value_names_.size() && !value_names_[v].empty();
}

std::string LoweringContext::In(ValueId v) {
  if (v >= graph_.values.size()) {
    if (error_.ok()) error_ = Status::InvalidArgument("reference to unknown value %" + std::to_string(v));
    return "undefined." + std::to_string(v);
  }
  if (!value_names_[v].empty()) return std::string(value_names_[v]);
  if (graph_.values[v].kind == v1::CONSTANT_VALUE) return ConstantInitializer(v);
  if (error_.ok()) {
    error_ = Status::InvalidArgument("value %" + std::to_string(v) + " is read before it is defined");
  }
  return "undefined." + std::to_string(v);
}

std::string LoweringContext::ConstantInitializer(ValueId v) {
  const Value& value = graph_.values[v];
  auto it = constant_inits_.find(value.constant);
  if (it != constant_inits_.end()) {
    value_names_[v] = names_.Store(it->second);
    return it->second;
  }
  if (value.constant < 0 || static_cast<size_t>(value.constant) >= graph_.constants.size()) {
    if (error_.ok()) {
      error_ = Status::InvalidArgument("constant value %" + std::to_string(v) + " has no stored tensor");
    }
    return "undefined." + std::to_string(v);
  }
  const v1::Tensor& t = graph_.constants[value.constant];
  std::string label = !t.name().empty() ? t.name() : value.name;
  size_t count = 1;
  for (int64_t d : t.shape()) count *= static_cast<size_t>(d < 0 ? 0 : d);
  const size_t expected = count * DTypeSize(t.dtype());
  if (OnnxElemType(t.dtype()) == 0 || DTypeSize(t.dtype()) == 0 || t.data().size() != expected) {
    if (error_.ok()) {
      error_ = Status::Unsupported(
          "constant '" + (label.empty() ? "%" + std::to_string(v) : label) + "' (" +
          DTypeName(t.dtype()) + ") has " + std::to_string(t.data().size()) + " bytes of data, expected " +
          std::to_string(expected) + (t.data().empty() ? " (its value was not recorded)" : ""));
    }
    return "undefined." + std::to_string(v);
  }
  // Built in place in the model (on its arena): a TensorProto built aside and moved in is
  // copied whole, since protobuf moves between arenas by copying, and the weights are most of
  // the model's bytes. The data is copied once from the graph's constant, or taken from it.
  std::string name(Unique(label.empty() ? "const_" + std::to_string(v) : label));
  onnx::TensorProto* init = out_->add_initializer();
  init->set_name(name);
  // A complex constant is carried as its float pairs [..., 2] (complex64's bytes are interleaved
  // float32 (real, imag), complex128's float64: the same bytes), as every complex value is.
  const bool complex = t.dtype() == v1::COMPLEX64 || t.dtype() == v1::COMPLEX128;
  init->set_data_type(!complex ? OnnxElemType(t.dtype())
                               : t.dtype() == v1::COMPLEX64 ? onnx::TensorProto::FLOAT : onnx::TensorProto::DOUBLE);
  for (int64_t d : t.shape()) init->add_dims(d);
  if (complex) init->add_dims(2);
  if (options_.take_constant_data != nullptr) {
    init->set_raw_data(std::move(*(*options_.take_constant_data)[value.constant].mutable_data()));
  } else {
    init->set_raw_data(t.data());
  }
  constant_inits_[value.constant] = name;
  constant_init_protos_[value.constant] = init;
  value_names_[v] = names_.Store(name);
  return name;
}

const std::string* LoweringContext::ConstantBytes(ValueId v) const {
  if (v >= graph_.values.size() || graph_.values[v].kind != v1::CONSTANT_VALUE) return nullptr;
  const int32_t c = graph_.values[v].constant;
  auto it = constant_init_protos_.find(c);
  if (it != constant_init_protos_.end()) return &it->second->raw_data();
  if (c < 0 || static_cast<size_t>(c) >= graph_.constants.size()) return nullptr;
  const std::string& data = graph_.constants[static_cast<size_t>(c)].data();
  return data.empty() ? nullptr : &data;
}

std::string LoweringContext::Out(ValueId v) {
  if (v >= value_names_.size()) return Temp("unknown");
  if (!value_names_[v].empty()) return std::string(value_names_[v]);
  auto it = output_names_.find(v);
  if (it != output_names_.end()) {
    value_names_[v] = names_.Store(it->second);
    return it->second;
  }
  std::string base = "v";
  base += std::to_string(v);
  if (!names_.Contains(base)) {  // no other name is "v<v>", and no other result takes it plainly
    plain_result_name_[v] = true;
    value_names_[v] = names_.Store(base);
    return base;
  }
  value_names_[v] = Unique(base);
  return std::string(value_names_[v]);
}

std::string LoweringContext::Temp(std::string_view hint) {
  std::string base = node_prefix_;
  base += '.';
  base += hint;
  return std::string(Unique(base));
}

void LoweringContext::BeginNode(const Node& node, size_t index) {
  node_prefix_ = "n" + std::to_string(index);
  node_names_.clear();
  scope_ = node.scope;
  doc_ = node.op;
  if (!node.loc.file().empty()) doc_ += " at " + node.loc.file() + ":" + std::to_string(node.loc.line());
}

onnx::NodeProto* LoweringContext::Emit(std::string_view op_type, const std::vector<std::string>& inputs,
                                       const std::vector<std::string>& outputs) {
  onnx::NodeProto* n = out_->add_node();
  n->set_op_type(std::string(op_type));
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  std::string base = (scope_.empty() ? "" : scope_ + "/") + node_prefix_ + "." + std::string(op_type);
  std::string name = base;
  auto taken = [&] { return std::find(node_names_.begin(), node_names_.end(), name) != node_names_.end(); };
  for (int i = 1; taken(); ++i) name = base + "_" + std::to_string(i);
  n->set_name(name);
  node_names_.push_back(std::move(name));
  if (!doc_.empty()) n->set_doc_string(doc_);
  return n;
}

std::string LoweringContext::EmitTemp(std::string_view op_type, const std::vector<std::string>& inputs,
                                      onnx::NodeProto** node) {
  std::string out = Temp(std::string(op_type));
  onnx::NodeProto* n = Emit(op_type, inputs, {out});
  if (node) *node = n;
  return out;
}

std::string LoweringContext::AddInitializer(onnx::TensorProto t, std::string_view hint) {
  std::string name(Unique(hint));
  t.set_name(name);
  *out_->add_initializer() = std::move(t);
  return name;
}

std::string LoweringContext::Scalar(Number value, v1::DType dtype) {
  std::string raw;
  Status st = EncodeNumbers({value}, dtype, &raw);
  if (!st.ok()) {
    if (error_.ok()) error_ = st;
    return "undefined.scalar";
  }
  std::string key = std::to_string(static_cast<int>(dtype)) + ":" + raw;
  auto it = scalar_inits_.find(key);
  if (it != scalar_inits_.end()) return it->second;
  onnx::TensorProto t;
  t.set_data_type(OnnxElemType(dtype));
  t.set_raw_data(raw);
  std::string text;
  if (value.is_int) {
    text = std::to_string(value.i);
  } else {
    text = std::to_string(value.f);
    while (text.size() > 1 && text.back() == '0' && text[text.size() - 2] != '.') text.pop_back();
  }
  std::string name = AddInitializer(std::move(t), std::string("scalar.") + DTypeName(dtype) + "." + text);
  scalar_inits_[key] = name;
  return name;
}

std::string LoweringContext::Int64s(const std::vector<int64_t>& values) {
  auto it = int64s_inits_.find(values);
  if (it != int64s_inits_.end()) return it->second;
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(static_cast<int64_t>(values.size()));
  std::string raw;
  for (int64_t v : values) Append(&raw, v);
  t.set_raw_data(raw);
  std::string text = "ints";
  for (size_t i = 0; i < values.size() && i < 6; ++i) text += (i ? "_" : ".") + std::to_string(values[i]);
  if (values.size() > 6) text += "_etc";
  std::string name = AddInitializer(std::move(t), text);
  int64s_inits_[values] = name;
  return name;
}

std::string LoweringContext::CastTo(const std::string& name, v1::DType from, v1::DType to) {
  if (from == to || to == v1::DTYPE_UNSPECIFIED || OnnxElemType(to) == 0) return name;
  onnx::NodeProto* n = nullptr;
  std::string out = EmitTemp("Cast", {name}, &n);
  SetAttr(n, "to", static_cast<int64_t>(OnnxElemType(to)));
  return out;
}

std::string LoweringContext::Unsqueeze(const std::string& name, const std::vector<int64_t>& axes) {
  return EmitTemp("Unsqueeze", {name, Int64s(axes)});
}

std::string LoweringContext::Squeeze(const std::string& name, const std::vector<int64_t>& axes) {
  return EmitTemp("Squeeze", {name, Int64s(axes)});
}

Status LoweringContext::TakeError() {
  Status st = error_;
  error_ = Status::Ok();
  return st;
}

}  // namespace onnx_export
}  // namespace ivytrace
