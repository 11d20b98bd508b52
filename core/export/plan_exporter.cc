#include "core/export/plan_exporter.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/export/unsupported_ops.h"
#include "core/ir/arg.h"
#include "core/schema/schema_registry.h"

namespace ivytrace {
namespace {

// First disallowed symbol in `arg`, or "".
std::string DisallowedSymbol(const v1::Arg& arg, const SchemaRegistry& reg) {
  switch (arg.kind_case()) {
    case v1::Arg::kSymbol: return reg.IsAllowedSymbol(arg.symbol()) ? "" : arg.symbol();
    case v1::Arg::kOpaque: return "<" + arg.opaque() + ">";
    case v1::Arg::kList:
      for (const auto& a : arg.list().items()) {
        if (auto s = DisallowedSymbol(a, reg); !s.empty()) return s;
      }
      return "";
    case v1::Arg::kTuple:
      for (const auto& a : arg.tuple().items()) {
        if (auto s = DisallowedSymbol(a, reg); !s.empty()) return s;
      }
      return "";
    case v1::Arg::kDict:
      for (const auto& a : arg.dict().values()) {
        if (auto s = DisallowedSymbol(a, reg); !s.empty()) return s;
      }
      return "";
    default: return "";
  }
}

}  // namespace

Status ExportPlan(const Graph& g, v1::Plan* plan) {
  const auto& reg = SchemaRegistry::Default();
  UnsupportedOps unsupported;
  for (const Node& n : g.nodes) {
    if (n.erased) continue;
    if (!n.schema) {
      unsupported.Add(n, "not in schemas/: the runtime's allow-list refuses it");
      continue;
    }
    std::string bad;
    for (const auto& a : n.args) {
      if (bad.empty()) bad = DisallowedSymbol(a, reg);
    }
    for (const auto& kw : n.kwargs) {
      if (bad.empty()) bad = DisallowedSymbol(kw.value(), reg);
    }
    if (!bad.empty()) unsupported.Add(n, "argument " + bad + " cannot be replayed");
  }
  if (!unsupported.empty()) return Status::Unsupported(unsupported.Message("a plan"));

  plan->Clear();
  plan->set_name(g.name);
  // The frameworks the steps call into: the first component of the live ops' names
  // ("numpy.add" -> "numpy"), in order of first use and joined by "," when a mixed program
  // converts between them ("torch,numpy"); "torch" when the plan has no steps. Constants carry
  // their own framework (Tensor.framework) in a mixed plan.
  std::vector<std::string> frameworks;
  for (const Node& n : g.nodes) {
    if (n.erased) continue;
    std::string f = n.op.substr(0, n.op.find('.'));
    if (std::find(frameworks.begin(), frameworks.end(), f) == frameworks.end()) frameworks.push_back(f);
  }
  std::string framework;
  for (const auto& f : frameworks) framework += (framework.empty() ? "" : ",") + f;
  plan->set_framework(framework.empty() ? "torch" : framework);
  plan->set_num_slots(static_cast<uint32_t>(g.values.size()));
  *plan->mutable_source() = g.source;
  for (const auto& in : g.inputs) *plan->add_inputs() = in;
  // Only constants something reads travel with the plan.
  std::vector<char> needed(g.values.size(), 0);
  for (const Node& n : g.nodes) {
    if (n.erased) continue;
    for (ValueId in : n.inputs) needed[in] = 1;
  }
  for (ValueId v : g.OutputValues()) needed[v] = 1;
  for (const auto& guard : g.guards) needed[guard.tensor().value()] = 1;
  for (size_t i = 0; i < g.values.size(); ++i) {
    const Value& v = g.values[i];
    if (v.kind != v1::CONSTANT_VALUE || !needed[i]) continue;
    auto* c = plan->add_constants();
    c->set_slot(static_cast<uint32_t>(i));
    *c->mutable_value() = g.constants[v.constant];
  }
  // A value an op wrote in place without returning it (x[i] = v, fill) is, on replay, the same
  // object as the argument it wrote: later steps read that argument's slot (the latest earlier
  // value with the same recorder tensor id). Framework-neutral; values are allocated in
  // definition order, so "earlier" is a smaller id.
  std::vector<ValueId> alias(g.values.size());
  for (size_t i = 0; i < alias.size(); ++i) alias[i] = static_cast<ValueId>(i);
  for (const Node& n : g.nodes) {
    if (n.erased) continue;
    std::vector<ValueId> returned;
    ForEachTensor(n.result, [&](const v1::TensorRef& r) { returned.push_back(r.value()); });
    for (const auto& m : n.mutated) {
      const ValueId mv = m.value();
      if (std::find(returned.begin(), returned.end(), mv) != returned.end()) continue;
      for (ValueId j = mv; j-- > 0;) {
        const Value& c = g.values[j];
        if (c.tensor_id != g.values[mv].tensor_id) continue;
        if (c.kind == v1::NODE_OUTPUT && (c.producer < 0 || g.nodes[c.producer].erased)) continue;
        alias[mv] = alias[j];
        break;
      }
    }
  }
  auto rename = [&](v1::Arg* a) { ForEachTensorMutable(a, [&](v1::TensorRef* r) { r->set_value(alias[r->value()]); }); };
  v1::Arg outputs = g.outputs;
  rename(&outputs);
  // Last step reading each slot, so the runtime can drop what it no longer needs.
  std::vector<int> last_use(g.values.size(), -1);
  std::vector<const Node*> live;
  for (const Node& n : g.nodes) {
    if (!n.erased) live.push_back(&n);
  }
  for (size_t s = 0; s < live.size(); ++s) {
    for (ValueId in : live[s]->inputs) last_use[alias[in]] = static_cast<int>(s);
  }
  ForEachTensor(outputs, [&](const v1::TensorRef& r) { last_use[r.value()] = static_cast<int>(live.size()); });
  for (ValueId v : g.OutputValues()) last_use[alias[v]] = static_cast<int>(live.size());  // never freed
  for (const auto& guard : g.guards) last_use[alias[guard.tensor().value()]] = static_cast<int>(live.size());
  for (ValueId v : g.InputValues()) {
    if (last_use[v] < 0) last_use[v] = static_cast<int>(live.size());
  }
  std::vector<std::vector<uint32_t>> frees(live.size());
  for (size_t v = 0; v < last_use.size(); ++v) {
    if (last_use[v] >= 0 && last_use[v] < static_cast<int>(live.size()) &&
        g.values[v].kind != v1::CONSTANT_VALUE) {
      frees[last_use[v]].push_back(static_cast<uint32_t>(v));
    }
  }
  for (size_t s = 0; s < live.size(); ++s) {
    const Node& n = *live[s];
    auto* step = plan->add_steps();
    step->set_function(n.op);
    for (const auto& a : n.args) rename(&(*step->add_args() = a));
    for (const auto& kw : n.kwargs) rename((*step->add_kwargs() = kw).mutable_value());
    *step->mutable_result() = n.result;
    *step->mutable_loc() = n.loc;
    // A written tensor the call does not return is the argument object it wrote.
    for (const auto& m : n.mutated) {
      bool returned = false;
      ForEachTensor(n.result, [&](const v1::TensorRef& r) { returned = returned || r.value() == m.value(); });
      if (returned) continue;
      int64_t arg_slot = -1;
      auto find = [&](const v1::TensorRef& r) {
        if (arg_slot < 0 && r.id() == m.id()) arg_slot = r.value();
      };
      for (const auto& a : n.args) ForEachTensor(a, find);
      for (const auto& kw : n.kwargs) ForEachTensor(kw.value(), find);
      // Another alias of the written storage (the NumPy recorder lists them all): later steps
      // already read it through the slot of its earlier value (see `alias` above).
      if (arg_slot < 0 && alias[m.value()] != m.value()) continue;
      if (arg_slot < 0) {
        return Status::Unsupported("cannot export to a plan: op '" + n.op + "' at " + n.loc.file() + ":" +
                                   std::to_string(n.loc.line()) + " writes tensor t" +
                                   std::to_string(m.id()) + " in place, which is neither an argument "
                                   "nor what it returns");
      }
      auto* w = step->add_written();
      w->set_slot(m.value());
      w->set_arg(static_cast<uint32_t>(arg_slot));
    }
    for (uint32_t f : frees[s]) step->add_free_after(f);
  }
  *plan->mutable_outputs() = outputs;
  for (const auto& gd : g.guards) {
    auto* pg = plan->add_guards();
    *pg = gd;
    pg->mutable_tensor()->set_value(alias[gd.tensor().value()]);
  }
  return Status::Ok();
}

}  // namespace ivytrace
