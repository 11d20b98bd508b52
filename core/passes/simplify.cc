#include "core/passes/simplify.h"

#include <optional>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "core/ir/arg.h"
#include "core/schema/binding.h"

namespace ivytrace {
namespace {

// "input" when `call`'s other operand is the Python scalar `identity`, else nothing.
std::optional<ValueId> ScalarIdentity(const BoundCall& call, double identity) {
  const v1::Arg* other = call.Get("other");
  if (!other || HasTensor(*other)) return std::nullopt;
  const auto v = AsDouble(*other);
  if (!v || *v != identity) return std::nullopt;
  return call.Tensor("input");
}

struct Rule {
  std::string_view canonical;
  // The value the call's result equals, or nothing when the rule does not apply.
  std::optional<ValueId> (*forward)(const BoundCall& call);
};

// Rewrite rules as data: (canonical op, what its result forwards to).
const Rule kRules[] = {
    {"identity", [](const BoundCall& c) { return c.Tensor("input"); }},
    {"dropout",
     [](const BoundCall& c) -> std::optional<ValueId> {
       if (c.Bool("training") != false || c.Bool("inplace") == true) return std::nullopt;
       return c.Tensor("input");
     }},
    {"mul", [](const BoundCall& c) { return ScalarIdentity(c, 1); }},
    {"add",
     [](const BoundCall& c) { return ScalarIdentity(c, 0); }},
    {"sub", [](const BoundCall& c) { return ScalarIdentity(c, 0); }},
    {"div",
     [](const BoundCall& c) -> std::optional<ValueId> {
       if (c.Has("rounding_mode") && !c.IsNone("rounding_mode")) return std::nullopt;
       return ScalarIdentity(c, 1);
     }},
    // Same shape: the recorded shapes are compared below, for every rule.
    {"reshape", [](const BoundCall& c) { return c.Tensor("input"); }},
};

std::optional<ValueId> Match(const Node& n) {
  if (!n.schema || n.schema->side_effect() || !n.mutated.empty() || n.outputs.size() != 1 ||
      n.result.kind_case() != v1::Arg::kTensor) {
    return std::nullopt;
  }
  for (const Rule& rule : kRules) {
    if (rule.canonical != n.canonical()) continue;
    // Random ops are only ever forwarded by a rule that proved them deterministic (dropout off).
    if (n.schema->random() && rule.canonical != "dropout") return std::nullopt;
    BoundCall call;
    if (!BoundCall::Bind(n, &call).ok()) return std::nullopt;
    return rule.forward(call);
  }
  return std::nullopt;
}

}  // namespace

Status Simplify::Run(Graph* g, PassResult* result) {
  std::unordered_set<uint64_t> written;
  for (const Node& n : g->nodes) {
    if (n.erased) continue;
    for (const auto& m : n.mutated) written.insert(m.storage());
  }
  std::unordered_set<ValueId> region_outputs;
  std::unordered_set<uint64_t> output_storage;
  for (ValueId v : g->OutputValues()) {
    region_outputs.insert(v);
    if (g->values[v].storage) output_storage.insert(g->values[v].storage);
  }
  // Memory a returned tensor must not share once forwarded: the caller's and the plan's.
  std::unordered_set<uint64_t> visible;
  for (const Value& v : g->values) {
    if ((v.kind == v1::INPUT || v.kind == v1::CONSTANT_VALUE) && v.storage) visible.insert(v.storage);
  }

  std::vector<ValueId> rename(g->values.size());
  for (size_t v = 0; v < rename.size(); ++v) rename[v] = static_cast<ValueId>(v);
  bool renamed = false;
  auto apply = [&](v1::TensorRef* r) { r->set_value(rename[r->value()]); };
  for (Node& n : g->nodes) {
    if (n.erased) continue;
    if (renamed) {
      for (auto& a : n.args) ForEachTensorMutable(&a, apply);
      for (auto& k : n.kwargs) ForEachTensorMutable(k.mutable_value(), apply);
      Graph::IndexNode(&n);
    }
    const auto in = Match(n);
    if (!in) continue;
    const ValueId out = n.outputs[0];
    const Value& from = g->values[*in];
    const Value& to = g->values[out];
    if (from.dtype != to.dtype || from.shape != to.shape) continue;
    if ((from.storage && written.count(from.storage)) || (to.storage && written.count(to.storage))) continue;
    if (region_outputs.count(out) &&
        (from.kind != v1::NODE_OUTPUT || region_outputs.count(*in) ||
         (from.storage && (visible.count(from.storage) || output_storage.count(from.storage))))) {
      continue;
    }
    rename[out] = *in;
    renamed = true;
    n.erased = true;
    ++result->nodes_removed;
    if (region_outputs.erase(out)) {
      region_outputs.insert(*in);
      if (from.storage) output_storage.insert(from.storage);
    }
  }
  if (renamed) {
    ForEachTensorMutable(&g->outputs, apply);
    for (auto& guard : g->guards) apply(guard.mutable_tensor());
  }
  return Status::Ok();
}

}  // namespace ivytrace
