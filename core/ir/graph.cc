#include "core/ir/graph.h"

#include <cstddef>
#include <algorithm>

#include "core/ir/arg.h"
#include "core/schema/schema_registry.h"

namespace ivytrace {

// The hot fields must fill the first cache line and no more (see Node).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
static_assert(offsetof(Node, mutated) == 64, "Node's hot fields no longer fit its first cache line");
// Three cache lines: interning op, scope and loc.file as 32-bit numbers
// (core/util/interned_string.h) took it from five.
static_assert(sizeof(Node) == 192, "Node grew past three cache lines");
static_assert(sizeof(Value) == 96, "Value grew (a field padded?)");
#pragma GCC diagnostic pop

const std::string& Node::canonical() const {
  static const std::string kEmpty;
  return schema ? schema->canonical() : kEmpty;
}

ValueId Graph::AddValue(Value v) {
  values.push_back(std::move(v));
  return static_cast<ValueId>(values.size() - 1);
}

void Graph::AddNode(Node n) {
  CountNewNodes();
  Count(n);
  nodes.push_back(std::move(n));
  census_counted_ = nodes.size();
}

void Graph::Count(const Node& n) const {
  census_flags_ |= n.flags;
  if (n.schema) census_schemas_.insert(n.schema);
  else census_unknown_ = true;
}

void Graph::CountNewNodes() const {
  if (census_counted_ > nodes.size()) {  // nodes were taken away: count anew
    census_flags_ = 0;
    census_schemas_.clear();
    census_unknown_ = false;
    census_counted_ = 0;
  }
  for (; census_counted_ < nodes.size(); ++census_counted_) Count(nodes[census_counted_]);
}

bool Graph::MayHoldFlags(uint32_t flags) const {
  CountNewNodes();
  return (census_flags_ & flags) == flags;
}

bool Graph::MayHoldCanonical(std::string_view canonical) const {
  CountNewNodes();
  return std::any_of(census_schemas_.begin(), census_schemas_.end(),
                     [&](const v1::OpSchema* s) { return s->canonical() == canonical; });
}

bool Graph::MayHoldUnknownOps() const {
  CountNewNodes();
  return census_unknown_;
}

bool Graph::MayHoldSchema(const v1::OpSchema* schema) const {
  CountNewNodes();
  return census_schemas_.contains(schema);
}

void Graph::Recount() {
  census_flags_ = 0;
  census_schemas_.clear();
  census_unknown_ = false;
  census_counted_ = 0;
  CountNewNodes();
}

ValueId Graph::AddConstant(v1::Tensor t) {
  Value v;
  v.kind = v1::CONSTANT_VALUE;
  v.dtype = t.dtype();
  v.shape.assign(t.shape().begin(), t.shape().end());
  v.name = t.name();
  v.constant = static_cast<int32_t>(constants.size());
  constants.push_back(std::move(t));
  return AddValue(std::move(v));
}

void Graph::IndexNode(Node* node) {
  node->inputs.clear();
  node->outputs.clear();
  node->writes = !node->mutated.empty();
  auto read = [&](const v1::TensorRef& r) { node->inputs.push_back(r.value()); };
  for (const auto& a : node->args) ForEachTensor(a, read);
  for (const auto& kw : node->kwargs) ForEachTensor(kw.value(), read);
  auto define = [&](ValueId id) {
    if (std::find(node->outputs.begin(), node->outputs.end(), id) == node->outputs.end()) {
      node->outputs.push_back(id);
    }
  };
  ForEachTensor(node->result, [&](const v1::TensorRef& r) { define(r.value()); });
  for (const auto& m : node->mutated) define(m.value());
}

void Graph::Compact() {
  // In place: nodes before the first erased one do not move (a pass that erased nothing costs
  // one scan here).
  size_t w = 0;
  while (w < nodes.size() && !nodes[w].erased) ++w;
  if (w < nodes.size()) {
    for (size_t r = w + 1; r < nodes.size(); ++r) {
      if (!nodes[r].erased) nodes[w++] = std::move(nodes[r]);
    }
    nodes.erase(nodes.begin() + static_cast<std::ptrdiff_t>(w), nodes.end());
  }
  census_flags_ = 0;
  census_schemas_.clear();
  census_unknown_ = false;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (ValueId out : nodes[i].outputs) values[out].producer = static_cast<int32_t>(i);
    Count(nodes[i]);
  }
  census_counted_ = nodes.size();
  // Constants nothing reads any more go with their data; their values become dead.
  std::vector<char> used(constants.size(), 0);
  auto mark = [&](ValueId v) {
    if (v < values.size() && values[v].constant >= 0) used[values[v].constant] = 1;
  };
  for (const Node& n : nodes) {
    for (ValueId in : n.inputs) mark(in);
  }
  for (ValueId v : OutputValues()) mark(v);
  for (const auto& guard : guards) mark(guard.tensor().value());
  // Recorded values of live nodes' outputs stay: constant-fold and bake-generators may use them.
  std::vector<char> produced(values.size(), 0);
  for (const Node& n : nodes) {
    for (ValueId out : n.outputs) produced[out] = 1;
  }
  for (size_t i = 0; i < values.size(); ++i) {
    Value& v = values[i];
    if (v.recorded < 0) continue;
    if (produced[i] && static_cast<size_t>(v.recorded) < constants.size()) used[v.recorded] = 1;
    else v.recorded = -1;
  }
  std::vector<int32_t> remap(constants.size(), -1);
  std::vector<v1::Tensor> kept_constants;
  for (size_t c = 0; c < constants.size(); ++c) {
    if (!used[c]) continue;
    remap[c] = static_cast<int32_t>(kept_constants.size());
    kept_constants.push_back(std::move(constants[c]));
  }
  constants = std::move(kept_constants);
  for (Value& v : values) {
    if (v.recorded >= 0) v.recorded = remap[v.recorded];
    if (v.constant < 0) continue;
    v.constant = remap[v.constant];
    if (v.constant < 0) v.kind = v1::VALUE_KIND_UNSPECIFIED;
  }
}

std::vector<ValueId> Graph::OutputValues() const {
  std::vector<ValueId> out;
  ForEachTensor(outputs, [&](const v1::TensorRef& r) { out.push_back(r.value()); });
  return out;
}

std::vector<ValueId> Graph::InputValues() const {
  std::vector<ValueId> out;
  for (const auto& in : inputs) {
    ForEachTensor(in.value(), [&](const v1::TensorRef& r) { out.push_back(r.value()); });
  }
  return out;
}

size_t Graph::LiveNodeCount() const {
  return std::count_if(nodes.begin(), nodes.end(), [](const Node& n) { return !n.erased; });
}

v1::Graph Graph::ToProto() const {
  v1::Graph g;
  ToProto(&g);
  return g;
}

void Graph::ToProto(v1::Graph* out) const {
  v1::Graph& g = *out;
  g.set_name(name);
  *g.mutable_source() = source;
  g.mutable_values()->Reserve(static_cast<int>(values.size()));
  g.mutable_nodes()->Reserve(static_cast<int>(nodes.size()));
  for (const auto& v : values) {
    auto* vi = g.add_values();
    vi->set_kind(v.kind);
    vi->set_dtype(v.dtype);
    for (int64_t d : v.shape) vi->add_shape(d);
    vi->set_name(v.name);
    if (v.constant >= 0) vi->set_constant(static_cast<uint32_t>(v.constant));
    if (v.producer >= 0) vi->set_producer(static_cast<uint32_t>(v.producer));
    vi->set_tensor_id(v.tensor_id);
    vi->set_tensor_version(v.tensor_version);
    vi->set_storage(v.storage);
    if (v.recorded >= 0) vi->set_recorded(static_cast<uint32_t>(v.recorded) + 1);
  }
  for (const auto& in : inputs) *g.add_inputs() = in;
  for (const auto& c : constants) *g.add_constants() = c;
  for (const auto& n : nodes) {
    if (n.erased) continue;
    auto* pn = g.add_nodes();
    pn->set_op(n.op);
    pn->set_canonical(n.canonical());
    for (const auto& a : n.args) *pn->add_args() = a;
    for (const auto& k : n.kwargs) *pn->add_kwargs() = k;
    *pn->mutable_result() = n.result;
    for (const auto& m : n.mutated) *pn->add_mutated() = m;
    *pn->mutable_loc() = n.loc;
    pn->set_scope(n.scope);
    pn->set_flags(n.flags);
    pn->set_duration_ns(n.duration_ns);
  }
  *g.mutable_outputs() = outputs;
  for (const auto& gd : guards) *g.add_guards() = gd;
  for (const auto& p : passes_applied) g.add_passes_applied(p);
}

Value Graph::ValueFromProto(v1::ValueInfo* vi) {
  Value v;
  v.kind = vi->kind();
  v.dtype = vi->dtype();
  v.shape.assign(vi->shape().begin(), vi->shape().end());
  v.name = std::move(*vi->mutable_name());
  if (vi->kind() == v1::CONSTANT_VALUE) v.constant = static_cast<int32_t>(vi->constant());
  v.tensor_id = vi->tensor_id();
  v.tensor_version = vi->tensor_version();
  v.storage = vi->storage();
  v.recorded = static_cast<int32_t>(vi->recorded()) - 1;
  return v;
}

Node Graph::NodeFromProto(v1::Node* pn) {
  // Moving a message that lives on no arena is a swap: nothing is copied.
  Node n;
  n.op = std::move(*pn->mutable_op());
  n.schema = SchemaRegistry::Default().Find(n.op);
  n.args.reserve(pn->args_size());
  for (auto& a : *pn->mutable_args()) n.args.push_back(std::move(a));
  n.kwargs.reserve(pn->kwargs_size());
  for (auto& k : *pn->mutable_kwargs()) n.kwargs.push_back(std::move(k));
  n.result = std::move(*pn->mutable_result());
  n.mutated.reserve(pn->mutated_size());
  for (auto& m : *pn->mutable_mutated()) n.mutated.push_back(std::move(m));
  n.loc = std::move(*pn->mutable_loc());
  n.scope = std::move(*pn->mutable_scope());
  n.flags = pn->flags();
  n.duration_ns = pn->duration_ns();
  IndexNode(&n);
  return n;
}

Graph Graph::FromProto(const v1::Graph& g) {
  Graph out;
  out.name = g.name();
  out.source = g.source();
  for (v1::ValueInfo vi : g.values()) out.values.push_back(ValueFromProto(&vi));
  out.inputs.assign(g.inputs().begin(), g.inputs().end());
  out.constants.assign(g.constants().begin(), g.constants().end());
  for (v1::Node pn : g.nodes()) out.nodes.push_back(NodeFromProto(&pn));
  out.outputs = g.outputs();
  out.guards.assign(g.guards().begin(), g.guards().end());
  out.passes_applied.assign(g.passes_applied().begin(), g.passes_applied().end());
  out.Compact();  // sets producers
  return out;
}

}  // namespace ivytrace
