#include "core/export/onnx/onnx_exporter.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <absl/container/flat_hash_set.h>

#include "core/export/onnx/lowering_context.h"
#include "core/export/onnx/lowering_table.h"
#include "core/export/onnx/lowerings.h"
#include "core/export/onnx/float64_kernels.h"
#include "core/export/onnx/simplify_exported.h"
#include "core/export/unsupported_ops.h"
#include "core/ir/arg.h"
#include "core/ir/guard_expr.h"
#include "core/passes/specialize_symbols.h"
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
// outputs then take the recorded shapes in a model without dynamic dims, and unknown dims in one
// with dynamic dims, as for the dims inference cannot tell. The checker still runs on every model. Graphs of real models are far
// below the size (ResNet-50 and BERT-large export at most a few thousand nodes).

std::string Location(const Node& n) {
  if (n.loc.file().empty()) return "";
  return n.loc.file() + ":" + std::to_string(n.loc.line());
}

// Each output tensor's path in the returned structure, in ForEachTensor order: dict keys and list
// indices joined by "."; "" for tensors not under a dict (the caller names those "output.<i>").
void CollectOutputNames(const v1::Arg& arg, const std::string& path, bool under_dict, std::vector<std::string>* out) {
  switch (arg.kind_case()) {
    case v1::Arg::kTensor: out->push_back(under_dict ? path : ""); break;
    case v1::Arg::kList:
    case v1::Arg::kTuple: {
      const auto& items = arg.kind_case() == v1::Arg::kList ? arg.list().items() : arg.tuple().items();
      for (int i = 0; i < items.size(); ++i) {
        CollectOutputNames(items[i], path.empty() ? std::to_string(i) : path + "." + std::to_string(i), under_dict, out);
      }
      break;
    }
    case v1::Arg::kDict:
      for (int i = 0; i < arg.dict().values_size(); ++i) {
        const std::string key = i < arg.dict().keys_size() ? arg.dict().keys(i) : std::to_string(i);
        CollectOutputNames(arg.dict().values(i), path.empty() ? key : path + "." + key, true, out);
      }
      break;
    default: ForEachTensor(arg, [&](const v1::TensorRef&) { out->push_back(""); });
  }
}

std::vector<std::string> OutputNames(const v1::Arg& outputs) {
  std::vector<std::string> names;
  CollectOutputNames(outputs, "", false, &names);
  // Under a returned tuple the path starts with the item's index: `return logits, cache` names
  // the cache's tensors "output.1.layers.0.keys", beside "output.0" (not "1.layers.0.keys").
  if (outputs.kind_case() == v1::Arg::kTuple || outputs.kind_case() == v1::Arg::kList) {
    for (auto& n : names) {
      if (!n.empty()) n = "output." + n;
    }
  }
  return names;
}

// Nodes whose results reach a graph output; the others cannot affect the ONNX model.
std::vector<bool> LiveNodes(const Graph& g, const std::vector<ValueId>& extra_roots) {
  std::vector<bool> live_value(g.values.size(), false), live(g.nodes.size(), false);
  for (ValueId v : g.OutputValues()) {
    if (v < live_value.size()) live_value[v] = true;
  }
  for (ValueId v : extra_roots) {
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

Status ValueType(const Graph& g, ValueId v, const std::string& what, const std::vector<std::string>& dim_names,
                 onnx::ValueInfoProto* info) {
  const Value& value = g.values[v];
  const int elem = onnx_export::OnnxElemType(value.dtype);
  if (elem == 0) {
    return Status::Unsupported(what + " has dtype " + DTypeName(value.dtype) + ", which ONNX cannot represent");
  }
  if (onnx_export::IsComplexDType(value.dtype)) {
    return Status::Unsupported(what + " is " + DTypeName(value.dtype) + ": complex graph inputs and outputs are "
                               "not exported (inside the model complex values are float pairs [..., 2], which no "
                               "ONNX operator reads as complex); pass and return torch.view_as_real(z) (or the "
                               "real part, abs, ...) instead");
  }
  auto* tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(elem);
  auto* shape = tensor->mutable_shape();
  for (size_t i = 0; i < value.shape.size(); ++i) {
    auto* dim = shape->add_dim();
    if (i < dim_names.size() && !dim_names[i].empty()) {
      dim->set_dim_param(dim_names[i]);
    } else if (value.shape[i] >= 0) {
      dim->set_dim_value(value.shape[i]);
    }
  }
  return Status::Ok();
}

// The declared shape of an output: what ONNX shape inference derives from the inputs (with their
// dim_params), checked against the recorded shape; dims inference cannot tell stay unknown when
// the model has dynamic dims, and are the recorded sizes when it has none.
Status SetOutputShape(const std::vector<int64_t>& recorded, const onnx::ValueInfoProto& inferred,
                      bool any_dynamic, onnx::ValueInfoProto* out) {
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
      if (!any_dynamic) dim->set_dim_value(recorded[i]);
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
    } else if (!any_dynamic) {
      dim->set_dim_value(recorded[i]);
    }
  }
  return Status::Ok();
}

// Lowers one node: its schema's canonical op, after argument normalization, through the table.
// Shape arithmetic the exporter need not order after a guard's check: ops on ints and bools that
// give a value on every input (integer division and modulo, which fail on a zero, and powers are
// not among them).
bool UngatedShapeArithmetic(const std::string& op) {
  static const std::unordered_set<std::string_view> kOps = {
      "ivytrace.sym.size", "ivytrace.sym.dim", "ivytrace.sym.numel", "ivytrace.sym.add", "ivytrace.sym.sub",
      "ivytrace.sym.mul",  "ivytrace.sym.neg", "ivytrace.sym.abs",   "ivytrace.sym.min", "ivytrace.sym.max",
      "ivytrace.sym.eq",   "ivytrace.sym.ne",  "ivytrace.sym.lt",    "ivytrace.sym.le",  "ivytrace.sym.gt",
      "ivytrace.sym.ge",   "ivytrace.sym.not_", "ivytrace.sym.and_", "ivytrace.sym.or_"};
  return kOps.count(op) > 0;
}

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
  // A complex value is carried as float pairs [..., 2] (lowerings_complex.cc): only a lowering
  // that declares it handles the pairs may read or define one; any other would misread the
  // trailing dim of 2 (negative axes shift, reshape sizes double) and be silently wrong.
  for (const auto* ids : {&node.inputs, &node.outputs}) {
    auto complex = std::find_if(ids->begin(), ids->end(), [&](ValueId v) {
      return v < ctx.graph().values.size() && onnx_export::IsComplexDType(ctx.graph().values[v].dtype);
    });
    if (complex == ids->end()) continue;
    row = onnx_export::FindComplexLowering(canonical);
    if (!row) {
      return Status::Unsupported(
          "canonical op '" + canonical + "' " + (ids == &node.inputs ? "reads" : "defines") + " a complex value (%" +
          std::to_string(*complex) + ", " + DTypeName(ctx.graph().values[*complex].dtype) +
          "): the exported model carries complex values as float pairs [..., 2], and the lowering of '" +
          canonical + "' does not handle them (lowerings_complex.cc lists those that do)");
    }
    break;
  }
  ctx.SetCanonical(canonical);
  IVY_RETURN_IF_ERROR(row->fn(node, call, ctx));
  // An argument the lowering never asked for would be dropped in silence (numpy.max's `initial=`,
  // an `order='F'`, jax.lax.round's rounding_method): refused instead. These only place, type or
  // check the result, or are hints, never change its values: the result's dtype is the recorded
  // one, which every lowering writes (so `dtype=` and its kin need no reading), and a cast is its
  // result's dtype whatever spelled it (`.to(other)`, `.type_as(t)`).
  static const std::unordered_set<std::string_view> kValueNeutral = {
      "out", "device", "layout", "pin_memory", "requires_grad", "memory_format", "non_blocking", "copy",
      "like", "subok", "casting", "optimize", "names", "name", "generator", "check_finite", "inplace",
      "dtype", "index_dtype", "out_int32", "out_dtype", "preferred_element_type", "weak_type",
      "sharding", "out_sharding", "accuracy", "precision", "unique_indices", "indices_are_sorted",
      "_stacklevel", "sparse_grad", "force"};
  std::string unread;
  for (const std::string& p : call.UnreadGiven()) {
    if (kValueNeutral.count(p) || canonical == "cast") continue;
    unread += (unread.empty() ? "" : ", ") + p + "=" + ArgToString(*call.Get(p), false);
  }
  if (!unread.empty()) {
    return Status::Unsupported("the lowering of canonical op '" + canonical + "' does not read " + unread +
                               " (refused rather than dropped)");
  }
  return Status::Ok();
}

// onnx::checker::check_model, in a form that scales to a million nodes. libonnx 1.12's
// check_graph keeps every name the graph defines in a std::unordered_set<std::string> (a heap
// node and a copy of the string per name, a probe past the cache per input): about a fifth of a
// 1M-node export. Here the graph-level bookkeeping is ours, with the same rules and messages:
// inputs, then initializers (non-empty, unique names), then the nodes in order, each input
// defined before it and each output defined once (SSA); the names are views into the model, in
// one absl flat set reserved up front. Everything else is onnx's own code: each node is checked
// by onnx::checker::check_node (attributes, domain, schema), each initializer by check_tensor,
// and the model itself (IR version, opset imports, metadata keys, graph name, the inputs' and
// outputs' value infos, local functions) by check_model on the model with its nodes and
// initializers set aside for the call (two repeated fields swapped on the model's arena, not a
// copy; put back afterwards).
// A model this cannot check the same way goes to check_model whole: one with subgraphs (their
// nodes see the outer graph's names through onnx's LexicalScopeContext), sparse initializers, or
// IR version 3 or older (initializers must then be graph inputs).
bool NeedsWholeCheck(const onnx::ModelProto& model) {
  const onnx::GraphProto& g = model.graph();
  if (model.ir_version() <= 3 || g.sparse_initializer_size() > 0) return true;
  for (const auto& n : g.node()) {
    for (const auto& a : n.attribute()) {
      if (a.has_g() || a.graphs_size() > 0) return true;
    }
  }
  return false;
}

}  // namespace

void CheckOnnxModel(onnx::ModelProto* model) {
  namespace checker = onnx::checker;
  if (NeedsWholeCheck(*model)) {
    checker::check_model(*model);
    return;
  }
  onnx::GraphProto* og = model->mutable_graph();
  // On the model's arena (when it has one), so that Swap only exchanges pointers.
  google::protobuf::Arena* arena = og->GetArena();
  std::unique_ptr<onnx::GraphProto> owned(arena ? nullptr : new onnx::GraphProto);
  onnx::GraphProto* held = arena ? google::protobuf::Arena::CreateMessage<onnx::GraphProto>(arena) : owned.get();
  auto swap_out = [&] {
    held->mutable_node()->Swap(og->mutable_node());
    held->mutable_initializer()->Swap(og->mutable_initializer());
  };
  swap_out();
  try {
    checker::check_model(*model);
  } catch (...) {
    swap_out();  // put back
    throw;
  }
  swap_out();  // put back

  checker::CheckerContext ctx;
  ctx.set_ir_version(static_cast<int>(model->ir_version()));
  std::unordered_map<std::string, int> opset_imports;
  for (const auto& imp : model->opset_import()) opset_imports[imp.domain()] = static_cast<int>(imp.version());
  ctx.set_opset_imports(std::move(opset_imports));
  const checker::LexicalScopeContext no_outer_scope;  // read only for subgraphs, which go whole above
  auto fail = [](const std::string& message) { throw checker::ValidationError(message); };

  absl::flat_hash_set<std::string_view> defined;
  defined.reserve(static_cast<size_t>(og->input_size()) + static_cast<size_t>(og->initializer_size()) +
                  static_cast<size_t>(og->node_size()) * 2);
  for (const auto& in : og->input()) defined.insert(in.name());  // unique: check_model saw them
  absl::flat_hash_set<std::string_view> initializers;
  for (const auto& init : og->initializer()) {
    if (!init.has_name()) fail("Field 'name' of init is required but missing.");
    const std::string& name = init.name();
    if (name.empty()) fail("Tensor initializers must have a non-empty name");
    if (!initializers.insert(name).second) fail(name + " initializer name is not unique");
    checker::check_tensor(init, ctx);
    defined.insert(name);  // may also be an input's name (IR version 4 and later)
  }
  for (const auto& node : og->node()) {
    for (const auto& input : node.input()) {
      if (input.empty() || defined.contains(input)) continue;  // "": an omitted optional input
      fail("Nodes in a graph must be topologically sorted, however input '" + input + "' of node: \nname: " +
           node.name() + " OpType: " + node.op_type() + "\n is not output of any previous nodes.");
    }
    try {
      checker::check_node(node, ctx, no_outer_scope);
    } catch (checker::ValidationError& e) {
      e.AppendContext("Bad node spec for node. Name: " + node.name() + " OpType: " + node.op_type());
      throw;
    }
    for (const auto& output : node.output()) {
      if (output.empty() || defined.insert(output).second) continue;
      fail("Graph must be in single static assignment (SSA) form, however '" + output +
           "' has been used as output names multiple times.");
    }
  }
}

std::vector<std::string> DescribeGuards(const Graph& graph) {
  std::vector<std::string> out;
  for (const auto& g : graph.guards) {
    std::string where = g.loc().file().empty() ? "an unknown line" : g.loc().file() + ":" + std::to_string(g.loc().line());
    const std::string expr = GuardExpression(graph, g.tensor().value());
    out.push_back(g.op() + " at " + where + ": recorded " + ArgToString(g.observed(), true) +
                  (expr.empty() ? "" : " for `" + expr + "`"));
  }
  return out;
}

Status ExportOnnx(const Graph& graph, const OnnxExportOptions& options, onnx::ModelProto* model) {
  const auto& versions = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto range = versions.find(onnx::ONNX_DOMAIN);
  const int max_opset = range != versions.end() ? range->second.second : 17;
  if (options.take_constant_data != nullptr && options.take_constant_data != &graph.constants) {
    return Status::InvalidArgument("take_constant_data must be the exported graph's own constants");
  }
  if (options.opset < kMinOpset || options.opset > max_opset) {
    return Status::InvalidArgument("ONNX opset " + std::to_string(options.opset) + " is not supported (use " +
                                   std::to_string(kMinOpset) + ".." + std::to_string(max_opset) + ")");
  }
  // Guards on a region input's rank (torch.Tensor.dim) or whole shape (jax.Array.shape) are what the
  // ONNX model's declared input types check: the rank always, and the shape when the input is
  // declared with its recorded dims (done below for jax.Array.shape guards). The others are
  // values the graph is specialized on: compiled into the model as checks where the guard's value
  // is in the graph (always for shape arithmetic; for tensor values only with allow_specialized,
  // since a model that fails on a padded mask is rarely what the user wants), else only listed.
  std::set<ValueId> input_values, static_inputs;
  for (const auto& in : graph.inputs) ForEachTensor(in.value(), [&](const v1::TensorRef& r) { input_values.insert(r.value()); });
  bool all_dims_static = !options.dim_groups.empty() || !options.dynamic_batch;
  for (const auto& dims : options.dim_groups) {
    for (int d : dims) all_dims_static = all_dims_static && d < 0;
  }
  ViewOrCopyFacts view_facts(graph);
  std::vector<std::string> guards;       // every guard, as written into metadata_props
  std::vector<const v1::Guard*> checks;  // the guards compiled into the model
  size_t checked_by_types = 0;
  {
    const std::vector<std::string> all = DescribeGuards(graph);
    std::vector<std::string> typed, refused;
    for (size_t i = 0; i < graph.guards.size(); ++i) {
      const auto& g = graph.guards[i];
      const bool on_input = g.has_tensor() && input_values.count(g.tensor().value()) > 0;
      const bool rank_guard = g.op() == "torch.Tensor.dim" || g.op() == "numpy.ndarray.ndim" || g.op() == "jax.Array.ndim";
      const std::string_view op = g.op();
      if (const Node* view = ViewOrCopyNode(graph, g)) {
        // The graph builder's guard on whether a reshape/flatten/contiguous result (written, or
        // whose input is written) shares its input's memory. An ONNX input is a dense tensor, whose
        // reshape is always a view; with every input dim static, each layout is the recorded one;
        // between constants of the model, the recorded call's result is the constant.
        const bool of_input = view->args.size() == 2 && view->args[1].has_tensor() &&
                              input_values.count(view->args[1].tensor().value()) > 0;
        const bool constants = view_facts.Holds(*view);
        if ((of_input && g.observed().b()) || all_dims_static || constants) {
          typed.push_back(all[i] + " (holds: " +
                          (of_input ? "a reshape of a dense input is a view" : constants ? "no input decides it, or the call's input is a temporary only it reads" : "static shapes") + ")");
        } else {
          refused.push_back(all[i] + " (whether a reshape/flatten/contiguous result shares its input's memory, "
                            "which decides where a later write goes, depends on the input shapes)");
          guards.push_back(all[i]);
        }
        continue;
      }
      if (op.size() > 6 && op.substr(op.size() - 6) == ".dtype") {
        // A cast that returned its input (graph builder): every dtype in the model follows from
        // its declared input types.
        typed.push_back(all[i] + " (checked by the ONNX inputs' declared types)");
        continue;
      }
      if (on_input && (rank_guard || g.op() == "jax.Array.shape")) {
        if (g.op() == "jax.Array.shape") static_inputs.insert(g.tensor().value());
        typed.push_back(all[i] + " (checked by the ONNX input's declared type)");
        continue;
      }
      if (g.has_tensor() && g.tensor().value() < graph.values.size() &&
          graph.values[g.tensor().value()].kind == v1::CONSTANT_VALUE) {
        // Its value is an initializer of the model (a mask computed from the recorded shapes in
        // a static export): it holds on every input.
        typed.push_back(all[i] + " (holds: its value is a constant of the model)");
        continue;
      }
      const bool checkable = options.guard_checks && onnx_export::GuardCheckable(graph, g);
      const bool symbolic = checkable && onnx_export::IsSymbolicValue(graph, g.tensor().value());
      if (checkable && (symbolic || options.allow_specialized)) {
        checks.push_back(&g);
        guards.push_back(all[i] + " (checked by the model)");
      } else {
        if (!symbolic) refused.push_back(all[i]);
        guards.push_back(all[i]);
      }
    }
    checked_by_types = typed.size();
    if (!refused.empty() && !options.allow_specialized) {
      std::string msg = "cannot export to ONNX: the graph is specialized on " + std::to_string(refused.size()) +
                        " value(s) the program's control flow read, and the exported model would take the "
                        "recorded path on inputs that change them:";
      for (const auto& g : refused) msg += "\n  " + g;
      msg += "\npass --allow-specialized to export anyway: the guards are then written into the model's "
             "metadata_props (ivytrace.guard.<i>), and those whose value the graph computes are checked by "
             "the model (onnxruntime fails naming the guard's line when an input breaks one)";
      return Status::Unsupported(msg);
    }
    guards.insert(guards.end(), typed.begin(), typed.end());
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
    prop->set_value(std::to_string(guards.size() - checked_by_types) + " guard(s), " + std::to_string(checks.size()) +
                    " checked by the model: the model is valid only for inputs that pass them");
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
  const std::vector<ValueId> input_tensors = graph.InputValues();
  const std::vector<std::string> input_names = InputTensorNames(graph);
  for (ValueId v : input_tensors) IVY_RETURN_IF_ERROR(check_value(v));
  // Which dims are dynamic, and their names (core/passes/specialize_symbols.h); a JAX input
  // specialized on its whole shape stays static.
  std::vector<std::vector<int>> groups = options.dim_groups;
  if (groups.empty()) {
    int64_t batch = -1;  // recorded size of the first input's dim 0
    for (ValueId v : input_tensors) {
      if (batch < 0 && !graph.values[v].shape.empty()) batch = graph.values[v].shape[0];
    }
    for (ValueId v : input_tensors) {
      const auto& shape = graph.values[v].shape;
      groups.emplace_back(shape.size(), -1);
      if (options.dynamic_batch && !shape.empty() && shape[0] == batch) groups.back()[0] = 0;
    }
  }
  for (size_t k = 0; k < input_tensors.size() && k < groups.size(); ++k) {
    if (static_inputs.count(input_tensors[k])) std::fill(groups[k].begin(), groups[k].end(), -1);
  }
  const std::vector<std::vector<std::string>> dim_names = InputDimNames(input_names, groups);
  bool any_dynamic = false;
  std::set<ValueId> bound_inputs;
  for (size_t k = 0; k < input_tensors.size(); ++k) {
    const ValueId value = input_tensors[k];
    const std::string& name = input_names[k];
    IVY_RETURN_IF_ERROR(ctx.ReserveName(name));
    auto* info = og->add_input();
    info->set_name(name);
    const std::vector<std::string> names = k < dim_names.size() ? dim_names[k] : std::vector<std::string>{};
    for (const auto& n : names) any_dynamic = any_dynamic || !n.empty();
    IVY_RETURN_IF_ERROR(ValueType(graph, value, "input '" + name + "'", names, info));
    if (bound_inputs.insert(value).second) ctx.BindValue(value, name);
  }

  // Output names; a node result that is an output is written under the output's name directly.
  const std::vector<ValueId> outs = graph.OutputValues();
  std::vector<std::string> out_names;
  std::set<ValueId> named_outputs;
  std::vector<bool> needs_identity;
  const std::vector<std::string> paths = OutputNames(graph.outputs);
  std::set<std::string> used_names;
  for (const auto& n : input_names) used_names.insert(n);
  for (size_t i = 0; i < outs.size(); ++i) {
    IVY_RETURN_IF_ERROR(check_value(outs[i]));
    // The output's path in the returned structure ("logits", "pair.0"); "output"/"output.<i>" when
    // the function returned a tensor or a tuple, or a name is taken.
    std::string name = outs.size() == 1 ? "output" : "output." + std::to_string(i);
    if (i < paths.size() && !paths[i].empty() && used_names.insert(paths[i]).second) name = paths[i];
    IVY_RETURN_IF_ERROR(ctx.ReserveName(name));
    out_names.push_back(name);
    const bool direct = checks.empty() && graph.values[outs[i]].kind == v1::NODE_OUTPUT &&
                        named_outputs.insert(outs[i]).second;
    if (direct) ctx.SetOutputName(outs[i], name);
    needs_identity.push_back(!direct);
  }

  // Nodes.
  std::vector<ValueId> check_roots;
  for (const v1::Guard* g : checks) check_roots.push_back(g->tensor().value());
  const std::vector<bool> live = LiveNodes(graph, check_roots);
  const std::vector<bool> live_for_outputs = checks.empty() ? live : LiveNodes(graph, {});
  // Values something in the model reads: live nodes' inputs, the outputs, the guards' values.
  std::vector<char> read_values(graph.values.size(), 0);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (graph.nodes[i].erased || !live[i]) continue;
    for (ValueId v : graph.nodes[i].inputs) {
      if (v < read_values.size()) read_values[v] = 1;
    }
  }
  for (ValueId v : outs) read_values[v] = 1;
  for (ValueId v : check_roots) {
    if (v < read_values.size()) read_values[v] = 1;
  }
  // A node only a guard's check needs and that cannot be lowered costs that check, not the export.
  std::set<ValueId> unchecked;
  // Each check is emitted right after its guard's value (see onnx_export::EmitGuardCheck), and
  // starts a new epoch: a value defined in an earlier epoch is read through the newest gate.
  std::map<ValueId, std::vector<size_t>> checks_of;
  for (size_t k = 0; k < checks.size(); ++k) checks_of[checks[k]->tensor().value()].push_back(k);
  std::vector<std::string> check_outputs;
  std::string gate;
  uint32_t epoch = 0;
  std::vector<uint32_t> epoch_of(graph.values.size(), 0);  // when the value was defined or last gated
  // A gated value's name and epoch before its first gate.
  std::unordered_map<ValueId, std::pair<std::string, uint32_t>> before_gate;
  auto emit_checks_of = [&](ValueId v) {
    auto it = checks_of.find(v);
    if (it == checks_of.end()) return;
    std::vector<std::string> now;
    for (size_t k : it->second) now.push_back(onnx_export::EmitGuardCheck(ctx, *checks[k], k));
    check_outputs.insert(check_outputs.end(), now.begin(), now.end());
    // The gate waits on every check so far, not only this epoch's: a value from before an
    // earlier check, read only now, must not run ahead of that check either (it could fail first,
    // in a broadcast, naming no guard). The same checks repeated in every layer make gates of the
    // same checks once MergeDuplicateNodes merged them; DedupeGateChecks then makes them one.
    gate = onnx_export::CombineGuardChecks(ctx, check_outputs);
    ++epoch;
  };
  if (!checks.empty()) {  // guards on region inputs and constants, before any node
    ctx.BeginNode(Node{}, graph.nodes.size() + 1 + outs.size());
    for (const auto& [v, ks] : checks_of) {
      if (v < graph.values.size() && graph.values[v].kind != v1::NODE_OUTPUT) emit_checks_of(v);
    }
    IVY_RETURN_IF_ERROR(ctx.TakeError());
  }
  UnsupportedOps unsupported;  // every node that cannot be lowered, reported together
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    if (node.erased || !live[i]) continue;
    if (!live_for_outputs[i] &&
        std::any_of(node.inputs.begin(), node.inputs.end(), [&](ValueId v) { return unchecked.count(v) > 0; })) {
      for (ValueId v : node.outputs) unchecked.insert(v);
      continue;
    }
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
    // Shape arithmetic that cannot fail (dims compared, added, multiplied) reads its inputs as
    // they were before any gate, and its results count as computed in its inputs' epoch: a
    // tensor op reading them later still waits on the gate. A guard's check in every layer then
    // reads the same values, is one node after MergeDuplicateNodes, and so are the gates on it.
    const bool ungated = UngatedShapeArithmetic(node.op);
    std::vector<std::pair<ValueId, std::string>> gated_names;  // rebound back after the lowering
    uint32_t inputs_epoch = 0;
    for (ValueId v : node.inputs) {
      if (ungated) {
        auto before = before_gate.find(v);
        if (before == before_gate.end()) {
          inputs_epoch = std::max(inputs_epoch, epoch_of[v]);
        } else {
          gated_names.emplace_back(v, ctx.In(v));
          ctx.BindValue(v, before->second.first);
          inputs_epoch = std::max(inputs_epoch, before->second.second);
        }
        continue;
      }
      if (epoch_of[v] == epoch || graph.values[v].kind == v1::CONSTANT_VALUE) continue;
      before_gate.emplace(v, std::make_pair(ctx.In(v), epoch_of[v]));
      ctx.BindValue(v, onnx_export::GateOn(ctx, ctx.In(v), graph.values[v].dtype, gate));
      epoch_of[v] = epoch;
    }
    Status st = LowerNode(node, ctx);
    for (const auto& [v, name] : gated_names) ctx.BindValue(v, name);
    if (st.ok()) st = ctx.TakeError();
    if (st.ok()) {
      // Values the node defines that its lowering did not (in-place writes aliasing the result).
      // Only the written array itself is its result: another array on the same memory (a NumPy
      // view the recorder lists as written too, which numpy_write_backs.h could not compute) has
      // another shape or layout, so the model is refused if anything reads it.
      auto result = LoweringContext::ResultTensor(node);
      for (ValueId v : node.outputs) {
        if (ctx.IsDefined(v)) continue;
        const bool same_array = result && graph.values[v].tensor_id == graph.values[*result].tensor_id;
        if (result && ctx.IsDefined(*result) && same_array) {
          ctx.Emit("Identity", {ctx.In(*result)}, {ctx.Out(v)});
        } else if (!read_values[v]) {
          continue;   // nothing reads it
        } else if (result && !same_array) {
          st = Status::Unsupported("it writes through a view, and the new value of tensor t" +
                                   std::to_string(graph.values[v].tensor_id) + " (another array on the written "
                                   "memory, read later) cannot be computed from it");
        } else {
          st = Status::Unsupported("its lowering does not define %" + std::to_string(v));
        }
      }
    }
    if (st.ok()) {
      for (ValueId v : node.outputs) epoch_of[v] = ungated ? inputs_epoch : epoch;
      for (ValueId v : node.outputs) emit_checks_of(v);
      st = ctx.TakeError();
      if (st.ok()) continue;
    }
    (void)ctx.TakeError();
    if (!live_for_outputs[i]) {
      for (ValueId v : node.outputs) unchecked.insert(v);
      continue;
    }
    for (ValueId v : node.outputs) ctx.Out(v);  // placeholders, so later nodes still lower
    unsupported.Add(node, st.message());
  }
  if (!unsupported.empty()) return Status::Unsupported(unsupported.Message("ONNX"));

  // The guards' checks: every output waits on them.
  if (!unchecked.empty()) {
    std::vector<const v1::Guard*> kept;
    std::string lost;
    for (const v1::Guard* g : checks) {
      if (!unchecked.count(g->tensor().value())) {
        kept.push_back(g);
        continue;
      }
      lost += "\n  " + g->op() + " at " + g->loc().file() + ":" + std::to_string(g->loc().line());
      if (!options.allow_specialized) {
        return Status::Unsupported("cannot export to ONNX: a guard on shape arithmetic cannot be checked by the "
                                   "model (its value needs an op without a lowering):" + lost +
                                   "\npass --allow-specialized to export anyway (the guard is then only listed "
                                   "in the model's metadata_props), or --static for the recorded shapes");
      }
    }
    checks = std::move(kept);
    auto* prop = model->add_metadata_props();
    prop->set_key("ivytrace.unchecked");
    prop->set_value("guards listed but not checked by the model (their value needs an op without a lowering):" + lost);
  }
  std::string checked;
  if (!check_outputs.empty()) {
    ctx.BeginNode(Node{}, graph.nodes.size());
    checked = onnx_export::CombineGuardChecks(ctx, check_outputs);
    IVY_RETURN_IF_ERROR(ctx.TakeError());
  }
  // Outputs: typed here; their shapes come from ONNX shape inference below.
  for (size_t i = 0; i < outs.size(); ++i) {
    const ValueId v = outs[i];
    if (needs_identity[i]) {
      if (graph.values[v].kind == v1::INPUT && !ctx.IsDefined(v)) {
        return Status::InvalidArgument("output " + out_names[i] + " is %" + std::to_string(v) +
                                       ", a region input that is not bound to an input name");
      }
      ctx.BeginNode(Node{}, graph.nodes.size() + 1 + i);
      if (checked.empty()) {
        ctx.Emit("Identity", {ctx.In(v)}, {out_names[i]});
      } else {  // every output waits on every check
        const std::string gated = onnx_export::GateOn(ctx, ctx.In(v), graph.values[v].dtype, checked);
        onnx::NodeProto* last = og->node_size() ? og->mutable_node(og->node_size() - 1) : nullptr;
        if (last && last->output_size() == 1 && last->output(0) == gated) {
          last->set_output(0, out_names[i]);   // the gate's node writes the output itself
        } else {
          ctx.Emit("Identity", {gated}, {out_names[i]});
        }
      }
      IVY_RETURN_IF_ERROR(ctx.TakeError());
    }
    auto* info = og->add_output();
    info->set_name(out_names[i]);
    IVY_RETURN_IF_ERROR(ValueType(graph, v, "output '" + out_names[i] + "'", {}, info));
    info->mutable_type()->mutable_tensor_type()->clear_shape();
  }

  // Dims ONNX shape inference knows (static, or an input's dim_param) are not read from shapes;
  // then nodes computed twice and nodes nothing reads go, transposes of weights are folded into
  // them, and initializers nothing reads go (simplify_exported.h). Inference here
  // propagates shape values (data_prop) and never fails the export: the strict run below does.
  if (og->node_size() <= options.max_inferred_nodes && !onnx_export::HasSubgraphs(*og)) {
    std::vector<onnx::ValueInfoProto> declared(og->output().begin(), og->output().end());
    const int value_info_before = og->value_info_size();
    // Inputs whose dims share a name (input_ids and attention_mask, both [batch, seq]) are not
    // checked to agree by onnxruntime, so the passes below trust no shared name. For these rounds
    // every repeat of a name gets a name of its own ("<name>.<input>.<axis>"): inference then
    // tells the first input's dims from the others', and what follows from the first (nearly
    // everything, in a text model) is known. The declared names are put back after.
    std::vector<onnx::ValueInfoProto> declared_inputs(og->input().begin(), og->input().end());
    {
      std::set<std::string> seen;
      for (auto& in : *og->mutable_input()) {
        if (!in.type().has_tensor_type() || !in.type().tensor_type().has_shape()) continue;
        auto* shape = in.mutable_type()->mutable_tensor_type()->mutable_shape();
        for (int j = 0; j < shape->dim_size(); ++j) {
          auto* d = shape->mutable_dim(j);
          if (d->has_dim_param() && !seen.insert(d->dim_param()).second) {
            d->set_dim_param(d->dim_param() + "." + in.name() + "." + std::to_string(j));
          }
        }
      }
    }
    // One round: inference, then the dim reads and shapes it shows are known are replaced, and
    // the shapes this pass can prove but inference cannot see are noted for the next round
    // (value_info, dropped again at the end: the model keeps no value_info). Returns how many
    // changes were made (each can make more dims known to the next round).
    std::vector<onnx::ValueInfoProto> notes;
    std::unordered_set<std::string> noted;
    // The passes' constants: interned initializers (the same value is the same name).
    const onnx_export::ScalarInitializer scalar = [&](int64_t n) {
      return ctx.Scalar(onnx_export::Number::Int(n), v1::INT64);
    };
    const onnx_export::Int64sInitializer int64s = [&](const std::vector<int64_t>& v) { return ctx.Int64s(v); };
    bool first_round = true;
    auto infer_and_replace = [&]() -> int {
      if (!first_round) onnx_export::RemoveUnreadNodes(og);   // reads an earlier round replaced
      first_round = false;
      for (const auto& v : notes) *og->add_value_info() = v;
      onnx_export::AnnotateRangeLengths(og);
      int changed = 0;
      try {
        onnx::ShapeInferenceOptions opts(/*check_type=*/false, /*error_mode=*/0, /*data_prop=*/true);
        onnx::shape_inference::InferShapes(*model, onnx::OpSchemaRegistry::Instance(), opts);
      } catch (const std::exception&) {
        og->mutable_value_info()->DeleteSubrange(value_info_before, og->value_info_size() - value_info_before);
        return 0;
      }
      std::unordered_map<std::string, const onnx::TypeProto*> types;
      for (const auto& v : og->input()) types.emplace(v.name(), &v.type());
      for (const auto& v : og->value_info()) types.emplace(v.name(), &v.type());
      for (const auto& v : og->output()) types.emplace(v.name(), &v.type());
      auto inferred = [&](const std::string& name) -> const onnx::TypeProto* {
        auto it = types.find(name);
        return it == types.end() ? nullptr : it->second;
      };
      changed += onnx_export::ReplaceKnownDimReads(og, inferred, scalar);
      changed += onnx_export::FoldIntConstants(og, inferred, int64s, scalar);
      changed += onnx_export::DropHeldLengthGuards(og);
      changed += onnx_export::DedupeGateChecks(og, scalar);
      changed += onnx_export::DropMultipliesByOne(og, inferred);
      changed += onnx_export::FoldEmptyExpands(og, inferred);
      changed += onnx_export::ComputeWithoutMissingFloat64Kernels(og, inferred);
      changed += onnx_export::ConstantKnownShapes(og, inferred, int64s, scalar);
      for (auto& v : onnx_export::DeclareReshapeShapes(*og, inferred)) {
        if (!noted.insert(v.name()).second) continue;
        notes.push_back(std::move(v));
        ++changed;
      }
      og->mutable_value_info()->DeleteSubrange(value_info_before, og->value_info_size() - value_info_before);
      return changed;
    };
    // Rounds until one changes nothing (in a transformer, a reshape made constant makes the next
    // layer's dims known). Each round is an inference over the whole model, so their number is
    // bounded by the model's size (about 2M node-rounds, ~1 s of inference).
    const int max_rounds = std::max(2, std::min(64, 2'000'000 / std::max(1, og->node_size())));
    for (int round = 0; round < max_rounds; ++round) {
      if (infer_and_replace() == 0) break;
    }
    for (size_t i = 0; i < declared.size(); ++i) *og->mutable_output(static_cast<int>(i)) = std::move(declared[i]);
    for (size_t i = 0; i < declared_inputs.size(); ++i) {
      *og->mutable_input(static_cast<int>(i)) = std::move(declared_inputs[i]);
    }
    onnx_export::MergeDuplicateNodes(og);
    if (onnx_export::DedupeGateChecks(og, scalar)) {
      onnx_export::MergeDuplicateNodes(og);
    }
    onnx_export::DropRedundantGates(og);
    onnx_export::RemoveUnreadNodes(og);
    onnx_export::FoldInitializerTransposes(og);
    onnx_export::FuseParallelMatMuls(og, int64s);
    onnx_export::RemoveUnreadInitializers(og);
  }

  onnx_export::ProtectRangeGathers(og);

  // Strict type and shape inference catches type mismatches the checker does not look at, and
  // tells which output dims follow the symbolic batch. It runs on the model itself, not a copy (a
  // copy of a million-node graph cost more than a tenth of the export, and twice its memory):
  // inference only adds value_info entries and fills in the outputs' types, and both are put
  // back as they were afterwards. (It reads only small integer initializers, and never copies
  // tensor data.)
  if (og->node_size() > options.max_inferred_nodes) {  // see the note at the top
    for (size_t i = 0; i < outs.size(); ++i) {
      IVY_RETURN_IF_ERROR(SetOutputShape(graph.values[outs[i]].shape, onnx::ValueInfoProto(), any_dynamic,
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
      IVY_RETURN_IF_ERROR(SetOutputShape(graph.values[outs[i]].shape, inferred, any_dynamic,
                                         og->mutable_output(i)));
    }
  }
  try {
    CheckOnnxModel(model);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("the exported ONNX model does not pass the ONNX checker "
                                               "(a lowering bug): ") + e.what());
  }
  return Status::Ok();
}

}  // namespace ivytrace
