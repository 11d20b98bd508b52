// What a lowering function sees while the ONNX exporter turns one ivytrace node into ONNX nodes:
// the graph's values (dtype and recorded shape), the names they have in the ONNX graph, and
// helpers to emit nodes, scalar and shape constants, and casts.
//
// Lowering functions are keyed by canonical op in lowering_table.cc.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/export/onnx/onnx_exporter.h"
#include "core/ir/graph.h"
#include "core/schema/binding.h"
#include "core/util/status.h"
#include "core/util/string_set.h"
#include "onnx/onnx_pb.h"

namespace ivytrace {
namespace onnx_export {

// A Python number as recorded: ints stay exact (int64), floats are doubles.
struct Number {
  bool is_int = false;
  int64_t i = 0;
  double f = 0.0;
  static Number Int(int64_t v) { return Number{true, v, static_cast<double>(v)}; }
  // (i is only read for ints; a float out of int64's range, -inf in masked_fill, must not be
  // converted: that is undefined behaviour, found by UBSan.)
  static Number Float(double v) {
    return Number{false, v > -9.2e18 && v < 9.2e18 ? static_cast<int64_t>(v) : 0, v};
  }
  double AsDouble() const { return is_int ? static_cast<double>(i) : f; }
};

// ONNX TensorProto element type for an ivytrace dtype; 0 (UNDEFINED) when there is none.
int OnnxElemType(v1::DType d);
bool IsFloating(v1::DType d);  // float16/bfloat16/float32/float64
// Appends `values` to `raw` as little-endian elements of `dtype`. Fails for dtypes without a
// numeric encoding (complex, unspecified).
Status EncodeNumbers(const std::vector<Number>& values, v1::DType dtype, std::string* raw);

// Attribute helpers.
void SetAttr(onnx::NodeProto* n, const std::string& name, int64_t v);
void SetAttr(onnx::NodeProto* n, const std::string& name, float v);
void SetAttr(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v);
void SetAttr(onnx::NodeProto* n, const std::string& name, const std::string& v);
void SetAttr(onnx::NodeProto* n, const std::string& name, const onnx::TensorProto& v);

class LoweringContext {
 public:
  LoweringContext(const Graph& graph, const OnnxExportOptions& options, onnx::GraphProto* out);

  const Graph& graph() const { return graph_; }
  const OnnxExportOptions& options() const { return options_; }
  int opset() const { return options_.opset; }
  // The canonical op of the node being lowered, after argument normalization (normalize.cc).
  const std::string& canonical() const { return canonical_; }
  void SetCanonical(std::string c) { canonical_ = std::move(c); }
  onnx::GraphProto* onnx_graph() { return out_; }

  // --- ivytrace values ---------------------------------------------------------------------
  v1::DType DType(ValueId v) const { return graph_.values[v].dtype; }
  // The shape recorded for `v` (a hint: the ONNX graph keeps the batch dimension dynamic).
  const std::vector<int64_t>& Shape(ValueId v) const { return graph_.values[v].shape; }
  int Rank(ValueId v) const { return static_cast<int>(graph_.values[v].shape.size()); }
  // The node's result when it is a single tensor.
  static std::optional<ValueId> ResultTensor(const Node& node);

  // --- names -------------------------------------------------------------------------------
  // Name of `v` for reading. A constant becomes an initializer on first use. Reading a value that
  // has no definition yet records an error (see TakeError) and returns a placeholder.
  std::string In(ValueId v);
  // Name under which the current node defines `v`; marks it defined.
  std::string Out(ValueId v);
  bool IsDefined(ValueId v) const;
  // A fresh name for an intermediate result of the current node.
  std::string Temp(std::string_view hint);
  // The bytes of constant value `v` (as its dtype, row-major, the recorded shape), wherever they
  // are now (the graph's constant, or the initializer that took them); null when `v` is not a
  // constant with data.
  const std::string* ConstantBytes(ValueId v) const;

  // --- emitting ----------------------------------------------------------------------------
  onnx::NodeProto* Emit(std::string_view op_type, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs);
  // Emits a one-output node writing a fresh temporary; returns the temporary's name.
  std::string EmitTemp(std::string_view op_type, const std::vector<std::string>& inputs,
                       onnx::NodeProto** node = nullptr);
  // Rank-0 initializer holding `value` as `dtype` (deduplicated).
  std::string Scalar(Number value, v1::DType dtype);
  // 1-D int64 initializer (shapes, axes, starts/ends; deduplicated).
  std::string Int64s(const std::vector<int64_t>& values);
  // An initializer with the given contents, named `hint` made unique.
  std::string AddInitializer(onnx::TensorProto t, std::string_view hint);
  // `name` converted from `from` to `to` (no node when they are equal or `to` is unspecified).
  std::string CastTo(const std::string& name, v1::DType from, v1::DType to);
  // Unsqueeze / Squeeze with the axes as an input (opset 13+).
  std::string Unsqueeze(const std::string& name, const std::vector<int64_t>& axes);
  std::string Squeeze(const std::string& name, const std::vector<int64_t>& axes);

  // --- driver (used by the exporter) -------------------------------------------------------
  Status ReserveName(const std::string& name);  // exact name (graph inputs and outputs)
  void BindValue(ValueId v, const std::string& name) { value_names_[v] = names_.Store(name); }
  void SetOutputName(ValueId v, const std::string& name) { output_names_[v] = name; }
  void BeginNode(const Node& node, size_t index);
  // A problem found while lowering the current node (e.g. a constant without data); cleared.
  Status TakeError();

 private:
  // `base`, or base_1, base_2, ... : the first that names nothing yet. The result lives in names_.
  std::string_view Unique(std::string_view base);
  // `s` is "v<id>" (decimal, as std::to_string writes it) and value <id> took it as its name.
  bool IsPlainResultName(std::string_view s) const;
  std::string ConstantInitializer(ValueId v);

  const Graph& graph_;
  const OnnxExportOptions& options_;
  onnx::GraphProto* out_;
  // Every value name of the ONNX graph (inputs, outputs, initializers, node results); the views
  // below point into it.
  StringSet names_;
  // Node names are "<scope>/n<index>.<op type>[_k]": an op type has no '/' (it would fail the
  // checker anyway), so the text after the last '/' holds the ivytrace node's index, and two
  // ivytrace nodes never make the same name. Only the names of the current node can collide,
  // so only they are kept (a global set of a million names was most of the naming cost).
  std::vector<std::string> node_names_;
  std::vector<std::string_view> value_names_;       // empty = not defined yet
  // Results named plainly "v<id>" (almost all of them) are not put in names_: a name is taken
  // when names_ has it or IsPlainResultName says so. Probing a table of a million names, past
  // the cache, was 6% of exporting a million nodes; names_ now holds only the other names.
  std::vector<bool> plain_result_name_;
  std::map<ValueId, std::string> output_names_;     // node outputs that are graph outputs
  std::map<int32_t, std::string> constant_inits_;   // constant index -> initializer
  std::map<int32_t, const onnx::TensorProto*> constant_init_protos_;   // ... and the initializer itself
  std::map<std::string, std::string> scalar_inits_; // dtype + bytes -> initializer
  std::map<std::vector<int64_t>, std::string> int64s_inits_;
  std::string node_prefix_;
  std::string scope_;
  std::string doc_;  // "<op> at <file>:<line>", on every ONNX node of the current ivytrace node
  Status error_;
  std::string canonical_;
};

using LoweringFn = Status (*)(const Node&, const BoundCall&, LoweringContext&);

}  // namespace onnx_export
}  // namespace ivytrace
