// Lowering a graph to an ONNX model.
//
// Each node is lowered through its schema's `onnx` entry: either a one-to-one op_type (inputs in
// order) or a named lowering function (lowerings.cc) for ops that need attribute logic.
// Constants become initializers named after them (parameter names such as
// "layer1.0.conv1.weight"); region inputs and outputs become graph inputs and outputs, named after
// the region's input names ("x") and "output" / "output.<i>".
#pragma once

#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/util/status.h"
#include "onnx/onnx_pb.h"

namespace ivytrace {

struct OnnxExportOptions {
  int opset = 17;            // libonnx 1.12's checker knows opsets up to 17
  bool dynamic_batch = true; // first dimension of inputs/outputs is symbolic ("batch")
  // A graph with guards (values the program's control flow read) is specialized on them, and
  // an ONNX model cannot check them: refused unless this is set; then each guard is written into
  // the model's metadata_props as "ivytrace.guard.<i>" = "<op> at <file>:<line>: recorded <value>".
  bool allow_specialized = false;
  // Which input dims are dynamic (core/passes/specialize_symbols.h ChooseInputDims): per input
  // tensor in order, per dim, a group id (dims of one group share a dim_param) or -1 (static).
  // Empty: dim 0 of the inputs whose dim 0 has the first input's recorded size is "batch" when
  // dynamic_batch, the others static.
  std::vector<std::vector<int>> dim_groups;
  // Guards on shape arithmetic (and, with allow_specialized, on tensor values) are compiled into
  // the model as checks: onnxruntime fails with the guard's file:line in the failing node's name
  // when an input breaks one, instead of computing the recorded path's answer.
  bool guard_checks = true;
  // Strict ONNX type/shape inference runs on models of up to this many nodes (see
  // the note at the top of onnx_exporter.cc for why it is skipped above); tests lower it.
  int max_inferred_nodes = 250000;
  // The exported graph's own constants (`&graph.constants`), for a caller that is done with them
  // once the model is built: each initializer then takes its constant's bytes instead of copying
  // them, and the constant is left without data. The weights are most of a model's bytes, and a
  // copy of them was a tenth of exporting ResNet-50 (page faults on fresh memory). Null: copy.
  std::vector<v1::Tensor>* take_constant_data = nullptr;
};

// One line per guard: "<op> at <file>:<line>: recorded <value>".
std::vector<std::string> DescribeGuards(const Graph& graph);

// onnx::checker::check_model's checks, in a form that scales to millions of nodes (see
// onnx_exporter.cc): throws onnx::checker::ValidationError as it does. `model` is left as it was
// (its nodes and initializers are set aside during the call).
void CheckOnnxModel(onnx::ModelProto* model);

// Lowers `graph` into `model` and checks the result with CheckOnnxModel.
// When some ops cannot be lowered, returns Unsupported whose message lists every such op with
// its count and the source lines that called it, and leaves `model` unspecified.
Status ExportOnnx(const Graph& graph, const OnnxExportOptions& options, onnx::ModelProto* model);

}  // namespace ivytrace
