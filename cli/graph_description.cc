#include "cli/graph_description.h"

#include <map>
#include <set>
#include <sstream>
#include <utility>

#include <cctype>
#include <climits>
#include <cstdint>
#include <fstream>

#include "cli/artifact.h"
#include "cli/common.h"
#include "core/io/file_kind.h"
#include "core/ir/arg.h"

namespace ivytrace::cli {
namespace {

using nlohmann::json;

json Type(v1::DType dtype, const std::vector<int64_t>& shape) {
  return {{"dtype", DTypeName(dtype)}, {"shape", shape}};
}

std::string TypeText(v1::DType dtype, const std::vector<int64_t>& shape) {
  std::string s = std::string(DTypeName(dtype)) + "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// An argument with each tensor shown by its type (and a parameter by its name), so that the same
// call in two graphs renders the same whatever the value numbering.
void Signature(const Graph& g, const v1::Arg& a, std::ostringstream& os) {
  switch (a.kind_case()) {
    case v1::Arg::kTensor: {
      const uint32_t v = a.tensor().value();
      if (v >= g.values.size()) {
        os << "%?";
        return;
      }
      const Value& val = g.values[v];
      if (val.kind == v1::CONSTANT_VALUE && !val.name.empty()) os << val.name << ":";
      os << TypeText(val.dtype, val.shape);
      return;
    }
    case v1::Arg::kList:
    case v1::Arg::kTuple: {
      const auto& items = a.kind_case() == v1::Arg::kList ? a.list().items() : a.tuple().items();
      os << (a.kind_case() == v1::Arg::kList ? "[" : "(");
      for (int i = 0; i < items.size(); ++i) {
        if (i) os << ", ";
        Signature(g, items[i], os);
      }
      os << (a.kind_case() == v1::Arg::kList ? "]" : ")");
      return;
    }
    case v1::Arg::kDict: {
      os << "{";
      for (int i = 0; i < a.dict().keys_size() && i < a.dict().values_size(); ++i) {
        os << (i ? ", " : "") << a.dict().keys(i) << ": ";
        Signature(g, a.dict().values(i), os);
      }
      os << "}";
      return;
    }
    default: os << ArgToString(a, true);
  }
}

std::string Location(const v1::SourceLocation& loc) {
  return loc.file().empty() ? "" : loc.file() + ":" + std::to_string(loc.line());
}

json Parameters(uint64_t tensors, uint64_t elements, uint64_t bytes) {
  return {{"tensors", tensors}, {"elements", elements}, {"bytes", bytes}};
}

}  // namespace

json DescribeGraph(const Graph& g, const std::string& kind, const std::string& file) {
  json j;
  j["schema"] = kInspectSchema;
  j["file"] = file;
  j["kind"] = kind;
  j["name"] = g.name;
  json inputs = json::array();
  for (const auto& in : g.inputs) {
    json tensors = json::array();
    ForEachTensor(in.value(), [&](const v1::TensorRef& r) {
      if (r.value() < g.values.size()) tensors.push_back(Type(g.values[r.value()].dtype, g.values[r.value()].shape));
    });
    inputs.push_back({{"name", in.name()}, {"tensors", tensors}});
  }
  j["inputs"] = std::move(inputs);
  json outputs = json::array();
  for (ValueId v : g.OutputValues()) outputs.push_back(Type(g.values[v].dtype, g.values[v].shape));
  j["outputs"] = outputs;

  json nodes = json::array();
  std::map<std::string, uint64_t> ops, modules;
  for (const Node& n : g.nodes) {
    if (n.erased) continue;
    ++ops[n.op];
    ++modules[n.scope];
    std::ostringstream sig;
    sig << "(";
    bool comma = false;
    for (const auto& a : n.args) {
      sig << (comma ? ", " : "");
      Signature(g, a, sig);
      comma = true;
    }
    for (const auto& kw : n.kwargs) {
      sig << (comma ? ", " : "") << kw.name() << "=";
      Signature(g, kw.value(), sig);
      comma = true;
    }
    sig << ")";
    json outs = json::array();
    for (ValueId v : n.outputs) outs.push_back(Type(g.values[v].dtype, g.values[v].shape));
    nodes.push_back({{"op", n.op},
                     {"canonical", n.canonical()},
                     {"module", n.scope},
                     {"args", sig.str()},
                     {"reads", std::vector<ValueId>(n.inputs.begin(), n.inputs.end())},
                     {"defines", std::vector<ValueId>(n.outputs.begin(), n.outputs.end())},
                     {"outputs", std::move(outs)},
                     {"loc", Location(n.loc)}});
  }
  j["node_count"] = nodes.size();
  j["nodes"] = std::move(nodes);  // (a copy here was a third of `diff` at a million nodes)
  j["ops"] = ops;
  j["modules"] = modules;
  uint64_t elements = 0, bytes = 0;
  json constants = json::array();
  for (const auto& c : g.constants) {
    uint64_t n = 1;
    for (int64_t d : c.shape()) n *= static_cast<uint64_t>(d);
    elements += n;
    bytes += c.data().size();
    constants.push_back({{"name", c.name()},
                         {"dtype", DTypeName(c.dtype())},
                         {"shape", std::vector<int64_t>(c.shape().begin(), c.shape().end())},
                         {"role", v1::TensorRole_Name(c.role())}});
  }
  j["constants"] = std::move(constants);
  j["parameters"] = Parameters(g.constants.size(), elements, bytes);
  json guards = json::array();
  for (const auto& gd : g.guards) {
    guards.push_back({{"op", gd.op()}, {"observed", ArgToString(gd.observed(), true)}, {"loc", Location(gd.loc())}});
  }
  j["guards"] = guards;
  j["passes_applied"] = g.passes_applied;
  return j;
}

json DescribeOnnx(const onnx::ModelProto& model, const std::string& file) {
  const auto& g = model.graph();
  auto type_of = [](const onnx::ValueInfoProto& vi) {
    json shape = json::array();
    const auto& tt = vi.type().tensor_type();
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value()) shape.push_back(d.dim_value());
      else shape.push_back(d.dim_param().empty() ? "?" : d.dim_param());
    }
    return json{{"dtype", onnx::TensorProto_DataType_Name(tt.elem_type())}, {"shape", shape}};
  };
  std::map<std::string, json> value_types;
  for (const auto& vi : g.value_info()) value_types[vi.name()] = type_of(vi);
  for (const auto& vi : g.output()) value_types[vi.name()] = type_of(vi);
  json j;
  j["schema"] = kInspectSchema;
  j["file"] = file;
  j["kind"] = "onnx";
  j["name"] = g.name();
  j["opset"] = model.opset_import_size() ? model.opset_import(0).version() : 0;
  j["producer"] = model.producer_name() + " " + model.producer_version();
  std::set<std::string> initializers;
  for (const auto& t : g.initializer()) initializers.insert(t.name());
  json inputs = json::array();
  for (const auto& in : g.input()) {
    if (!initializers.count(in.name())) inputs.push_back({{"name", in.name()}, {"tensors", json::array({type_of(in)})}});
  }
  j["inputs"] = std::move(inputs);
  json outputs = json::array();
  for (const auto& o : g.output()) outputs.push_back(type_of(o));
  j["outputs"] = outputs;
  json nodes = json::array();
  std::map<std::string, uint64_t> ops, modules;
  for (const auto& n : g.node()) {
    const std::string op = (n.domain().empty() ? "onnx" : n.domain()) + "." + n.op_type();
    // Exporters name nodes by module path ("/layer1/conv/Conv" from torch.onnx, "layer1.conv/n3.Conv"
    // from ivytrace): the part before the last '/'.
    std::string path = n.name();
    if (!path.empty() && path[0] == '/') path = path.substr(1);
    const size_t slash = path.rfind('/');
    std::string module = slash == std::string::npos ? "" : path.substr(0, slash);
    for (char& c : module) c = c == '/' ? '.' : c;
    // ivytrace's doc strings say "<op> at <file>:<line>".
    const size_t at = n.doc_string().rfind(" at ");
    const std::string loc = at == std::string::npos ? "" : n.doc_string().substr(at + 4);
    ++ops[op];
    ++modules[module];
    std::ostringstream sig;
    sig << "(";
    for (int i = 0; i < n.input_size(); ++i) {
      sig << (i ? ", " : "");
      if (initializers.count(n.input(i))) sig << n.input(i);
      else sig << "%";
    }
    for (const auto& a : n.attribute()) {
      onnx::AttributeProto copy = a;
      copy.clear_doc_string();
      sig << ", " << a.name() << "=" << copy.ShortDebugString();
    }
    sig << ")";
    json outs = json::array();
    for (const auto& o : n.output()) outs.push_back(value_types.count(o) ? value_types[o] : json{{"dtype", "?"}, {"shape", nullptr}});
    nodes.push_back({{"op", op},
                     {"canonical", n.op_type()},
                     {"module", module},
                     {"args", sig.str()},
                     {"outputs", std::move(outs)},
                     {"loc", loc}});
  }
  j["node_count"] = nodes.size();
  j["nodes"] = std::move(nodes);  // (a copy here was a third of `diff` at a million nodes)
  j["ops"] = ops;
  j["modules"] = modules;
  uint64_t elements = 0, bytes = 0;
  json constants = json::array();
  for (const auto& t : g.initializer()) {
    uint64_t n = 1;
    for (int64_t d : t.dims()) n *= static_cast<uint64_t>(d);
    elements += n;
    bytes += t.raw_data().size();
    constants.push_back({{"name", t.name()},
                         {"dtype", onnx::TensorProto_DataType_Name(t.data_type())},
                         {"shape", std::vector<int64_t>(t.dims().begin(), t.dims().end())},
                         {"role", "INITIALIZER"}});
  }
  j["constants"] = std::move(constants);
  j["parameters"] = Parameters(g.initializer_size(), elements, bytes);
  j["guards"] = json::array();
  j["passes_applied"] = json::array();
  return j;
}

json DescribePlan(const v1::Plan& plan, const std::string& file) {
  json j;
  j["schema"] = kInspectSchema;
  j["file"] = file;
  j["kind"] = "plan";
  j["name"] = plan.name();
  j["framework"] = plan.framework();
  j["slots"] = plan.num_slots();
  json inputs = json::array();
  for (const auto& in : plan.inputs()) {
    json tensors = json::array();
    ForEachTensor(in.value(), [&](const v1::TensorRef& r) {
      tensors.push_back(Type(r.dtype(), std::vector<int64_t>(r.shape().begin(), r.shape().end())));
    });
    inputs.push_back({{"name", in.name()}, {"tensors", tensors}});
  }
  j["inputs"] = std::move(inputs);
  json nodes = json::array();
  std::map<std::string, uint64_t> ops;
  for (const auto& s : plan.steps()) {
    ++ops[s.function()];
    std::string args;
    for (int i = 0; i < s.args_size(); ++i) args += (i ? ", " : "") + ArgToString(s.args(i), true);
    for (const auto& kw : s.kwargs()) args += (args.empty() ? "" : ", ") + kw.name() + "=" + ArgToString(kw.value(), true);
    nodes.push_back({{"op", s.function()}, {"args", "(" + args + ")"}, {"result", ArgToString(s.result(), true)},
                     {"loc", Location(s.loc())}});
  }
  j["node_count"] = nodes.size();
  j["nodes"] = std::move(nodes);  // (a copy here was a third of `diff` at a million nodes)
  j["ops"] = ops;
  uint64_t elements = 0, bytes = 0;
  json constants = json::array();
  for (const auto& c : plan.constants()) {
    uint64_t n = 1;
    for (int64_t d : c.value().shape()) n *= static_cast<uint64_t>(d);
    elements += n;
    bytes += c.value().data().size();
    constants.push_back({{"slot", c.slot()},
                         {"name", c.value().name()},
                         {"dtype", DTypeName(c.value().dtype())},
                         {"shape", std::vector<int64_t>(c.value().shape().begin(), c.value().shape().end())}});
  }
  j["constants"] = std::move(constants);
  j["parameters"] = Parameters(plan.constants_size(), elements, bytes);
  json guards = json::array();
  for (const auto& gd : plan.guards()) {
    guards.push_back({{"op", gd.op()}, {"observed", ArgToString(gd.observed(), true)}, {"loc", Location(gd.loc())}});
  }
  j["guards"] = guards;
  return j;
}

namespace {

Status ReadPlanFile(const std::string& path, v1::Plan* plan) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError("'" + path + "': cannot open");
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Format 02 (plan.proto): the Plan follows the data section, whose size is bytes 8-15; the
  // description needs no constant's bytes. Format 01: the Plan follows the magic.
  uint64_t at = 8;
  if (data.size() >= kPlanDataStart && data.compare(0, 8, kPlanMagic, 8) == 0) {
    uint64_t section = 0;
    for (int i = 7; i >= 0; --i) section = section << 8 | static_cast<unsigned char>(data[8 + i]);
    if (section > data.size() - kPlanDataStart) {
      return Status::Corruption("'" + path + "': byte offset 8: a data section of " + std::to_string(section) +
                                " bytes does not fit in the file (" + std::to_string(data.size()) + " bytes)");
    }
    at = kPlanDataStart + section;
  }
  if (data.size() < at || data.size() - at > static_cast<size_t>(INT_MAX) ||
      !plan->ParseFromArray(data.data() + at, static_cast<int>(data.size() - at))) {
    return Status::Corruption("'" + path + "': byte offset " + std::to_string(at) +
                              ": the plan does not parse as ivytrace.v1.Plan");
  }
  return Status::Ok();
}

}  // namespace

Status DescribeFile(const std::string& path, const std::string& region, json* out) {
  std::ifstream probe(path);
  char first = 0;
  while (probe && probe.get(first) && std::isspace(static_cast<unsigned char>(first))) {}
  if (probe && first == '{') {
    std::ifstream in(path);
    try {
      *out = json::parse(in);
    } catch (const json::parse_error& e) {
      return Status::Corruption("'" + path + "' is not valid JSON: " + e.what());
    }
    if (!out->is_object() || out->value("schema", std::string()) != kInspectSchema || !out->contains("nodes")) {
      return Status::Corruption("'" + path + "' is JSON but not a graph description from `ivytrace inspect --json` "
                                "(expected \"schema\": \"" + std::string(kInspectSchema) + "\" and \"nodes\"; "
                                "inspect a graph, an ONNX model or a trace with --graph)");
    }
    (*out)["baseline_of"] = out->value("file", std::string());
    (*out)["file"] = path;
    return Status::Ok();
  }
  FileKind kind;
  IVY_RETURN_IF_ERROR(SniffArtifact(path, &kind));
  if (kind == FileKind::kOnnx) {
    onnx::ModelProto model;
    IVY_RETURN_IF_ERROR(ReadOnnxModel(path, &model));
    *out = DescribeOnnx(model, path);
    return Status::Ok();
  }
  if (kind == FileKind::kPlan) {
    v1::Plan plan;
    IVY_RETURN_IF_ERROR(ReadPlanFile(path, &plan));
    *out = DescribePlan(plan, path);
    return Status::Ok();
  }
  // Never freed, like CommandGraph(): a diff holds two graphs and exits right after.
  auto* lg = new LoadedGraph();
  IVY_RETURN_IF_ERROR(LoadForCommand(path, region, /*optimize=*/nullptr, lg));
  *out = DescribeGraph(lg->graph, kind == FileKind::kTrace ? "trace" : "graph", path);
  return Status::Ok();
}

}  // namespace ivytrace::cli
