// Checks the IR's invariants: every value read is defined before the read (inputs, constants or
// an earlier node), every value is defined once, producers and constant indices are in range.
// Passes run it between steps in tests (`optimize --verify`).
#pragma once

#include "core/ir/graph.h"
#include "core/util/status.h"

namespace ivytrace {

Status VerifyGraph(const Graph& graph);

}  // namespace ivytrace
