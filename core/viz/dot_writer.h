// Graphviz DOT for a graph: inputs (green), parameters and constants (grey, with their names),
// ops (boxes: op name, shape, source line), outputs (blue); ops grouped by module scope.
#pragma once

#include <string>

#include "core/ir/graph.h"

namespace ivytrace {

std::string GraphToDot(const Graph& graph);

}  // namespace ivytrace
