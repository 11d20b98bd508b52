// Helpers to build small Graphs by hand (no trace) for pass tests.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/schema/schema_registry.h"

namespace ivytrace::testing_graph {

inline v1::Tensor Floats(std::vector<float> data, std::vector<int64_t> shape, const std::string& name) {
  v1::Tensor t;
  t.set_dtype(v1::FLOAT32);
  for (auto d : shape) t.add_shape(d);
  t.set_name(name);
  t.set_data(std::string(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float)));
  return t;
}

inline std::vector<float> DataOf(const Graph& g, ValueId v) {
  const auto& t = g.constants[g.values[v].constant];
  std::vector<float> out(t.data().size() / sizeof(float));
  std::memcpy(out.data(), t.data().data(), t.data().size());
  return out;
}

inline v1::Arg Ref(const Graph& g, ValueId v) {
  v1::Arg a;
  a.mutable_tensor()->set_value(v);
  a.mutable_tensor()->set_dtype(g.values[v].dtype);
  for (auto d : g.values[v].shape) a.mutable_tensor()->add_shape(d);
  return a;
}

inline v1::Arg Bool(bool b) {
  v1::Arg a;
  a.set_b(b);
  return a;
}

inline v1::Arg Int(int64_t i) {
  v1::Arg a;
  a.set_i(i);
  return a;
}

inline v1::Arg Ints(std::vector<int64_t> is) {
  v1::Arg a;
  for (auto i : is) a.mutable_list()->add_items()->set_i(i);
  return a;
}

// A graph with one float32 input "x" of `shape`; returns its value.
inline ValueId AddInput(Graph* g, std::vector<int64_t> shape) {
  Value x;
  x.kind = v1::INPUT;
  x.dtype = v1::FLOAT32;
  x.shape = shape;
  x.storage = 1;
  const ValueId xv = g->AddValue(x);
  v1::GraphInput in;
  in.set_name("x");
  *in.mutable_value() = Ref(*g, xv);
  g->inputs.push_back(in);
  return xv;
}

// Makes `vs` the region's outputs (a tuple).
inline void Return(Graph* g, std::vector<ValueId> vs) {
  auto* t = g->outputs.mutable_tuple();
  for (auto v : vs) *t->add_items() = Ref(*g, v);
}

inline ValueId AddNode(Graph* g, const std::string& op, std::vector<v1::Arg> args, std::vector<int64_t> shape,
                       v1::DType dtype = v1::FLOAT32) {
  Value v;
  v.kind = v1::NODE_OUTPUT;
  v.dtype = dtype;
  v.shape = shape;
  v.producer = static_cast<int32_t>(g->nodes.size());
  v.storage = 1000 + g->values.size();
  const ValueId out = g->AddValue(v);
  Node n;
  n.op = op;
  n.schema = SchemaRegistry::Default().Find(op);
  n.args = std::move(args);
  n.result = Ref(*g, out);
  Graph::IndexNode(&n);
  g->nodes.push_back(std::move(n));
  return out;
}

}  // namespace ivytrace::testing_graph
