// What a guard checks, as a Python-like expression of the region's inputs: the symbolic shape
// arithmetic (ivytrace.sym.*) that computed the guarded value, e.g. `input_ids.shape[0] != 1` for
// transformers' `if batch_size != position_ids.shape[0]`. Written into plans (Guard.expr), so a
// GuardError names the condition, not only `ivytrace.sym.__bool__`, and into ONNX refusals.
#pragma once

#include <string>
#include <vector>

#include "core/ir/graph.h"

namespace ivytrace {

// The expression of value `v`, or "" when it is not symbolic shape arithmetic (a tensor value
// read by Python) or too long to help (over a few hundred characters).
std::string GuardExpression(const Graph& graph, ValueId v);

// The live ivytrace.sym.shares_memory node whose value `guard` checks (the graph builder's guard on
// a reshape/flatten/contiguous call's view-or-copy decision), or null.
const Node* ViewOrCopyNode(const Graph& graph, const v1::Guard& guard);

// Whether a view-or-copy guard always holds on a replay of `graph` (this graph, after its
// passes: what the plan or ONNX model runs):
//  * neither array depends on the region's inputs (BEiT's relative position index from config
//    ints): every replay makes them alike;
//  * or the call's input is a temporary only it reads: made in fresh memory by an op that never
//    returns a view (its recorded storage is none of its inputs'), not a region input, output or
//    constant, and read by nothing else (BEiT at another image size: `(a - b).permute(1, 2,
//    0).contiguous()`, then written). A write through the result then lands in memory nothing
//    else sees, view or copy.
class ViewOrCopyFacts {
 public:
  explicit ViewOrCopyFacts(const Graph& graph) : g_(graph) {}
  bool Holds(const Node& shares_memory);

 private:
  void Build();
  const Graph& g_;
  std::vector<char> depends_;      // values the region's inputs decide
  std::vector<uint32_t> readers_;  // live nodes reading each value, plus 1 for a region output
};

}  // namespace ivytrace
