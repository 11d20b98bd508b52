#include "core/export/onnx/onnx_exporter.h"

#include <set>

#include "core/export/onnx/lowering_context.h"
#include "core/export/onnx/lowering_table.h"
#include "core/export/onnx/lowerings.h"
#include "core/export/unsupported_ops.h"
#include "core/ir/arg.h"
#include "core/schema/binding.h"
#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"

#ifndef IVYTRACE_VERSION
#define IVYTRACE_VERSION "dev"
#endif

namespace ivytrace {

namespace {

using onnx_export::LoweringContext;

constexpr int kMinOpset = 13;  // Squeeze/Unsqueeze/ReduceSum/Slice take axes as inputs

// Strict ONNX type/shape inference runs on models up to OnnxExportOptions::max_inferred_nodes
// (default 250,000) nodes, and is skipped above. Why: libonnx 1.12's inference keeps a
// std::unordered_map from every value's name to a TypeProto and writes a value_info per value; at
// a million nodes it was 30% of `export --to onnx` and grew faster than the graph (hash tables
// past the cache), while issue 16 asks for exports that scale linearly.
// What is lost above the size: the type mismatches inference finds and the checker does not (a
// lowering bug; onnxruntime would refuse such a model when loading it), and inferred output dims:
// outputs then take the recorded shapes, dim 0 "batch" when it has the batch size, as for the dims
// inference cannot tell. The checker still runs on every model. Graphs of real models are far
// below the size (ResNet-50 and BERT-large export at most a few thousand nodes).

std::string Location(const Node& n) {
  if (n.loc.file().empty()) return "";
  return n.loc.file() + ":" + std::to_string(n.loc.line());
}

// Nodes whose results reach a graph output; the others cannot affect the ONNX model.
std::vector<bool> LiveNodes(const Graph& g) {
  std::vector<bool> live_value(g.values.size(), false), live(g.nodes.size(), false);
  for (ValueId v : g.OutputValues()) {
    if (v < live_value.size()) live_value[v] = true;
  }
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    if (n.erased) continue;
    for (ValueId v : n.outputs) {
      if (v < live_value.size() && live_value[v]) live[i] = true;
    }
    if (!live[i]) continue;
    for (ValueId v : n.inputs) {
      if (v < live_value.size()) live_value[v] = true;
    }
  }
  return live;
}

Status ValueType(const Graph& g, ValueId v, const std::string& what, bool dynamic_dim0,
                 onnx::ValueInfoProto* info) {
  const Value& value = g.values[v];
  const int elem = onnx_export::OnnxElemType(value.dtype);
  if (elem == 0) {
    return Status::Unsupported(what + " has dtype " + DTypeName(value.dtype) + ", which ONNX cannot represent");
  }
  auto* tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(elem);
  auto* shape = tensor->mutable_shape();
  for (size_t i = 0; i < value.shape.size(); ++i) {
    auto* dim = shape->add_dim();
    if (i == 0 && dynamic_dim0) {
      dim->set_dim_param("batch");
    } else if (value.shape[i] >= 0) {
      dim->set_dim_value(value.shape[i]);
    }
  }
  return Status::Ok();
}

// The declared shape of an output: what ONNX shape inference derives from the (symbolic-batch)
// inputs, checked against the recorded shape; dims inference cannot tell stay unknown, and
// without inference dim 0 is "batch" when it has the recorded batch size.
Status SetOutputShape(const std::vector<int64_t>& recorded, const onnx::ValueInfoProto& inferred,
                      const OnnxExportOptions& options, int64_t batch, onnx::ValueInfoProto* out) {
  auto* shape = out->mutable_type()->mutable_tensor_type()->mutable_shape();
  const auto& tt = inferred.type().tensor_type();
  auto show = [&] {
    std::string s = "[";
    for (size_t i = 0; i < recorded.size(); ++i) s += (i ? ", " : "") + std::to_string(recorded[i]);
    return s + "]";
  };
  if (!tt.has_shape()) {
    for (size_t i = 0; i < recorded.size(); ++i) {
      auto* dim = shape->add_dim();
      if (!options.dynamic_batch) dim->set_dim_value(recorded[i]);
      else if (i == 0 && recorded[0] == batch) dim->set_dim_param("batch");
      else if (i > 0) dim->set_dim_value(recorded[i]);
    }
    return Status::Ok();
  }
  if (tt.shape().dim_size() != static_cast<int>(recorded.size())) {
    return Status::InvalidArgument("output '" + out->name() + "' has rank " + std::to_string(tt.shape().dim_size()) +
                                   " in the exported model but the program produced shape " + show() +
                                   " (a lowering bug)");
  }
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto& d = tt.shape().dim(i);
    auto* dim = shape->add_dim();
    if (d.has_dim_value()) {
      if (d.dim_value() != recorded[i]) {
        return Status::InvalidArgument("output '" + out->name() + "' has size " + std::to_string(d.dim_value()) +
                                       " in dim " + std::to_string(i) + " in the exported model but the program "
                                       "produced shape " + show() + " (a lowering bug)");
      }
      dim->set_dim_value(d.dim_value());
    } else if (d.has_dim_param()) {
      dim->set_dim_param(d.dim_param());
    } else if (!options.dynamic_batch) {
      dim->set_dim_value(recorded[i]);
    }
  }
  return Status::Ok();
}

// Lowers one node: its schema's canonical op, after argument normalization, through the table.
Status LowerNode(const Node& node, LoweringContext& ctx) {
  if (!node.schema) return Status::Unsupported("not in schemas/: no canonical op, so no ONNX lowering");
  if (node.schema->random() && !onnx_export::FindCanonicalLowering(node.canonical())) {
    return Status::Unsupported("a random op: ONNX export needs its draws baked (export --bake-generators)");
  }
  if (node.canonical().empty()) {
    return Status::Unsupported("no canonical op in schemas/ (an opaque framework call), so no ONNX lowering");
  }
  BoundCall call;
  Status st = BoundCall::Bind(node, &call);
  if (!st.ok()) return Status::Unsupported(st.message());
  std::string canonical;
  IVY_RETURN_IF_ERROR(onnx_export::NormalizeCall(node, &call, &canonical));
  const onnx_export::CanonicalLowering* row = onnx_export::FindCanonicalLowering(canonical);
  if (!row && node.schema->random()) {
    return Status::Unsupported("a random op: ONNX export needs its draws baked (export --bake-generators)");
  }
  if (!row) {
    std::string_view why = onnx_export::RefusalReason(canonical);
    return Status::Unsupported("canonical op '" + canonical + "' has no ONNX lowering" +
                               (why.empty() ? std::string() : ": " + std::string(why)));
  }
  ctx.SetCanonical(canonical);
  return row->fn(node, call, ctx);
}

}  // namespace

std::vector<std::string> DescribeGuards(const Graph& graph) {
  std::vector<std::string> out;
  for (const auto& g : graph.guards) {
    std::string where = g.loc().file().empty() ? "an unknown line" : g.loc().file() + ":" + std::to_string(g.loc().line());
    out.push_back(g.op() + " at " + where + ": recorded " + ArgToString(g.observed(), true));
  }
  return out;
}

Status ExportOnnx(const Graph& graph, const OnnxExportOptions& options, onnx::ModelProto* model) {
  const auto& versions = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto range = versions.find(onnx::ONNX_DOMAIN);
  const int max_opset = range != versions.end() ? range->second.second : 17;
  if (options.opset < kMinOpset || options.opset > max_opset) {
    return Status::InvalidArgument("ONNX opset " + std::to_string(options.opset) + " is not supported (use " +
                                   std::to_string(kMinOpset) + ".." + std::to_string(max_opset) + ")");
  }
  // Guards on a region input's rank (torch.Tensor.dim) or whole shape (jax.Array.shape) are what the
  // ONNX model's declared input types check: the rank always, and the shape when the input is
  // declared with its recorded dims (done below for jax.Array.shape guards). The others are
  // values the graph is specialized on, which ONNX cannot check.
  std::set<ValueId> input_values, static_inputs;
  for (const auto& in : graph.inputs) ForEachTensor(in.value(), [&](const v1::TensorRef& r) { input_values.insert(r.value()); });
  std::vector<std::string> guards;
  size_t checked_by_types = 0;
  {
    const std::vector<std::string> all = DescribeGuards(graph);
    std::vector<std::string> typed;
    for (size_t i = 0; i < graph.guards.size(); ++i) {
      const auto& g = graph.guards[i];
      const bool on_input = input_values.count(g.tensor().value()) > 0;
      const bool rank_guard = g.op() == "torch.Tensor.dim" || g.op() == "numpy.ndarray.ndim" || g.op() == "jax.Array.ndim";
      if (on_input && (rank_guard || g.op() == "jax.Array.shape")) {
        if (g.op() == "jax.Array.shape") static_inputs.insert(g.tensor().value());
        typed.push_back(all[i] + " (checked by the ONNX input's declared type)");
      } else {
        guards.push_back(all[i]);
      }
    }
    checked_by_types = typed.size();
    guards.insert(guards.end(), typed.begin(), typed.end());
  }
  if (guards.size() > checked_by_types && !options.allow_specialized) {
    guards.resize(guards.size() - checked_by_types);
    std::string msg = "cannot export to ONNX: the graph is specialized on " + std::to_string(guards.size()) +
                      " value(s) the program's control flow read, and an ONNX model cannot check them "
                      "(inputs that change them would silently take the recorded path):";
    for (const auto& g : guards) msg += "\n  " + g;
    msg += "\npass --allow-specialized to export anyway: the guards are then written into the model's "
           "metadata_props (ivytrace.guard.<i>)";
    return Status::Unsupported(msg);
  }
  model->Clear();
  model->set_ir_version(8);
  for (size_t i = 0; i < guards.size(); ++i) {
    auto* prop = model->add_metadata_props();
    prop->set_key("ivytrace.guard." + std::to_string(i));
    prop->set_value(guards[i]);
  }
  if (guards.size() > checked_by_types) {
    auto* prop = model->add_metadata_props();
    prop->set_key("ivytrace.specialized");
    prop->set_value(std::to_string(guards.size() - checked_by_types) +
                    " guard(s): the model is valid only for inputs that pass them");
  }
  model->set_producer_name("ivytrace");
  model->set_producer_version(IVYTRACE_VERSION);
  auto* opset = model->add_opset_import();
  opset->set_domain("");
  opset->set_version(options.opset);
  onnx::GraphProto* og = model->mutable_graph();
  og->set_name(graph.name.empty() ? "ivytrace" : graph.name);

  LoweringContext ctx(graph, options, og);
  auto check_value = [&](ValueId v) -> Status {
    if (v >= graph.values.size()) return Status::InvalidArgument("graph refers to unknown value %" + std::to_string(v));
    return Status::Ok();
  };

  // Graph inputs: one per tensor of each region input ("x", or "x.0", "x.1", ... when nested).
  int64_t batch = -1;  // recorded size of the first input's dim 0
  for (const auto& in : graph.inputs) {
    ForEachTensor(in.value(), [&](const v1::TensorRef& r) {
      if (batch < 0 && r.value() < graph.values.size() && !graph.values[r.value()].shape.empty()) {
        batch = graph.values[r.value()].shape[0];
      }
    });
  }
  std::set<ValueId> bound_inputs;
  for (const auto& in : graph.inputs) {
    std::vector<ValueId> vs;
    ForEachTensor(in.value(), [&](const v1::TensorRef& r) { vs.push_back(r.value()); });
    for (size_t i = 0; i < vs.size(); ++i) {
      IVY_RETURN_IF_ERROR(check_value(vs[i]));
      std::string name = vs.size() == 1 && in.value().kind_case() == v1::Arg::kTensor
                             ? in.name() : in.name() + "." + std::to_string(i);
      IVY_RETURN_IF_ERROR(ctx.ReserveName(name));
      auto* info = og->add_input();
      info->set_name(name);
      // Dim 0 is the symbolic batch only on inputs whose recorded dim 0 is the batch size (the
      // first input's): `x @ w` keeps w's rows. Per-dim names need symbolic shapes (issue 10).
      const auto& shape = graph.values[vs[i]].shape;
      const bool dyn = options.dynamic_batch && !shape.empty() && shape[0] == batch && !static_inputs.count(vs[i]);
      IVY_RETURN_IF_ERROR(ValueType(graph, vs[i], "input '" + name + "'", dyn, info));
      if (bound_inputs.insert(vs[i]).second) ctx.BindValue(vs[i], name);
    }
  }

  // Output names; a node result that is an output is written under the output's name directly.
  const std::vector<ValueId> outs = graph.OutputValues();
  std::vector<std::string> out_names;
  std::set<ValueId> named_outputs;
  std::vector<bool> needs_identity;
  for (size_t i = 0; i < outs.size(); ++i) {
    IVY_RETURN_IF_ERROR(check_value(outs[i]));
    std::string name = outs.size() == 1 ? "output" : "output." + std::to_string(i);
    IVY_RETURN_IF_ERROR(ctx.ReserveName(name));
    out_names.push_back(name);
    const bool direct = graph.values[outs[i]].kind == v1::NODE_OUTPUT && named_outputs.insert(outs[i]).second;
    if (direct) ctx.SetOutputName(outs[i], name);
    needs_identity.push_back(!direct);
  }

  // Nodes.
  const std::vector<bool> live = LiveNodes(graph);
  UnsupportedOps unsupported;  // every node that cannot be lowered, reported together
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    if (node.erased || !live[i]) continue;
    for (ValueId v : node.inputs) {
      IVY_RETURN_IF_ERROR(check_value(v));
      const Value& value = graph.values[v];
      if (value.kind == v1::CONSTANT_VALUE || ctx.IsDefined(v)) continue;
      return Status::InvalidArgument("node " + std::to_string(i) + " (" + node.op +
                                     (Location(node).empty() ? "" : " at " + Location(node)) + ") reads %" +
                                     std::to_string(v) + ", which " +
                                     (value.kind == v1::INPUT ? "is not bound to a region input"
                                                              : "is not defined before it"));
    }
    for (ValueId v : node.outputs) IVY_RETURN_IF_ERROR(check_value(v));
    ctx.BeginNode(node, i);
    Status st = LowerNode(node, ctx);
    if (st.ok()) st = ctx.TakeError();
    if (st.ok()) {
      // Values the node defines that its lowering did not (in-place writes aliasing the result).
      auto result = LoweringContext::ResultTensor(node);
      for (ValueId v : node.outputs) {
        if (ctx.IsDefined(v)) continue;
        if (result && ctx.IsDefined(*result)) {
          ctx.Emit("Identity", {ctx.In(*result)}, {ctx.Out(v)});
        } else {
          st = Status::Unsupported("its lowering does not define %" + std::to_string(v));
        }
      }
    }
    if (st.ok()) continue;
    (void)ctx.TakeError();
    for (ValueId v : node.outputs) ctx.Out(v);  // placeholders, so later nodes still lower
    unsupported.Add(node, st.message());
  }
  if (!unsupported.empty()) return Status::Unsupported(unsupported.Message("ONNX"));

  // Outputs: typed here; their shapes come from ONNX shape inference below.
  for (size_t i = 0; i < outs.size(); ++i) {
    const ValueId v = outs[i];
    if (needs_identity[i]) {
      if (graph.values[v].kind == v1::INPUT && !ctx.IsDefined(v)) {
        return Status::InvalidArgument("output " + out_names[i] + " is %" + std::to_string(v) +
                                       ", a region input that is not bound to an input name");
      }
      ctx.BeginNode(Node{}, graph.nodes.size() + i);
      ctx.Emit("Identity", {ctx.In(v)}, {out_names[i]});
      IVY_RETURN_IF_ERROR(ctx.TakeError());
    }
    auto* info = og->add_output();
    info->set_name(out_names[i]);
    IVY_RETURN_IF_ERROR(ValueType(graph, v, "output '" + out_names[i] + "'", false, info));
    info->mutable_type()->mutable_tensor_type()->clear_shape();
  }

  // Strict type and shape inference catches type mismatches the checker does not look at, and
  // tells which output dims follow the symbolic batch. It runs on the model itself, not a copy (a
  // copy of a million-node graph cost more than a tenth of the export, and twice its memory):
  // inference only adds value_info entries and fills in the outputs' types, and both are put
  // back as they were afterwards. (It reads only small integer initializers, and never copies
  // tensor data.)
  if (og->node_size() > options.max_inferred_nodes) {  // see the note at the top
    for (size_t i = 0; i < outs.size(); ++i) {
      IVY_RETURN_IF_ERROR(SetOutputShape(graph.values[outs[i]].shape, onnx::ValueInfoProto(), options, batch,
                                         og->mutable_output(i)));
    }
  } else {
    std::vector<onnx::ValueInfoProto> declared(og->output().begin(), og->output().end());
    const int value_info_before = og->value_info_size();
    try {
      onnx::ShapeInferenceOptions opts(/*check_type=*/true, /*error_mode=*/1, /*data_prop=*/false);
      onnx::shape_inference::InferShapes(*model, onnx::OpSchemaRegistry::Instance(), opts);
    } catch (const std::exception& e) {
      return Status::InvalidArgument(std::string("the exported ONNX model fails ONNX type/shape inference "
                                                 "(a lowering bug): ") + e.what());
    }
    og->mutable_value_info()->DeleteSubrange(value_info_before, og->value_info_size() - value_info_before);
    for (size_t i = 0; i < outs.size(); ++i) {
      onnx::ValueInfoProto inferred = std::move(*og->mutable_output(static_cast<int>(i)));
      *og->mutable_output(static_cast<int>(i)) = std::move(declared[i]);
      IVY_RETURN_IF_ERROR(SetOutputShape(graph.values[outs[i]].shape, inferred, options, batch,
                                         og->mutable_output(i)));
    }
  }
  try {
    onnx::checker::check_model(*model);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("the exported ONNX model does not pass the ONNX checker "
                                               "(a lowering bug): ") + e.what());
  }
  return Status::Ok();
}

}  // namespace ivytrace
