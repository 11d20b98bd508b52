// What a guard checks, as a Python-like expression of the region's inputs: the symbolic shape
// arithmetic (ivytrace.sym.*) that computed the guarded value, e.g. `input_ids.shape[0] != 1` for
// transformers' `if batch_size != position_ids.shape[0]`. Written into plans (Guard.expr), so a
// GuardError names the condition, not only `ivytrace.sym.__bool__`, and into ONNX refusals.
#pragma once

#include <string>

#include "core/ir/graph.h"

namespace ivytrace {

// The expression of value `v`, or "" when it is not symbolic shape arithmetic (a tensor value
// read by Python) or too long to help (over a few hundred characters).
std::string GuardExpression(const Graph& graph, ValueId v);

}  // namespace ivytrace
