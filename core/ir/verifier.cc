#include "core/ir/verifier.h"

#include <string>
#include <vector>

namespace ivytrace {

Status VerifyGraph(const Graph& g) {
  const size_t nv = g.values.size();
  std::vector<char> defined(nv, 0);
  auto bad = [&](const std::string& m) { return Status::Corruption("graph '" + g.name + "': " + m); };
  for (ValueId id : g.InputValues()) {
    if (id >= nv) return bad("input refers to value %" + std::to_string(id) + " out of range");
    defined[id] = 1;
  }
  for (size_t i = 0; i < nv; ++i) {
    const Value& v = g.values[i];
    if (v.kind == v1::CONSTANT_VALUE) {
      if (v.constant < 0 || static_cast<size_t>(v.constant) >= g.constants.size()) {
        return bad("constant value %" + std::to_string(i) + " has no stored tensor");
      }
      defined[i] = 1;
    }
  }
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    if (node.erased) continue;
    if (!g.MayHoldFlags(node.flags) ||
        (node.schema ? !g.MayHoldSchema(node.schema) : !g.MayHoldUnknownOps())) {
      return bad("node #" + std::to_string(n) + " (" + node.op + ") is missing from the op census " +
                 "(its schema or flags changed without Graph::Recount)");
    }
    if (node.writes != !node.mutated.empty()) {
      return bad("node #" + std::to_string(n) + " (" + node.op + ") was changed without Graph::IndexNode " +
                 "(its writes flag disagrees with its in-place writes)");
    }
    for (ValueId in : node.inputs) {
      if (in >= nv) return bad("node #" + std::to_string(n) + " (" + node.op + ") reads %" + std::to_string(in) + ", out of range");
      if (!defined[in]) {
        return bad("node #" + std::to_string(n) + " (" + node.op + ") reads %" + std::to_string(in) +
                   " before it is defined");
      }
    }
    for (ValueId out : node.outputs) {
      if (out >= nv) return bad("node #" + std::to_string(n) + " defines %" + std::to_string(out) + ", out of range");
      if (defined[out]) return bad("value %" + std::to_string(out) + " is defined twice (node #" + std::to_string(n) + ")");
      if (g.values[out].producer != static_cast<int32_t>(n)) {
        return bad("value %" + std::to_string(out) + " names node #" + std::to_string(g.values[out].producer) +
                   " as producer, but node #" + std::to_string(n) + " defines it");
      }
      defined[out] = 1;
    }
  }
  for (ValueId out : g.OutputValues()) {
    if (out >= nv || !defined[out]) return bad("the result refers to undefined value %" + std::to_string(out));
  }
  for (const auto& guard : g.guards) {
    const ValueId v = guard.tensor().value();
    if (v >= nv || !defined[v]) return bad("a guard refers to undefined value %" + std::to_string(v));
  }
  return Status::Ok();
}

}  // namespace ivytrace
