// A graph as readable text, one line per op (in the spirit of torch.fx's printed graphs):
//   graph fn(x: float32[3], y: float32[3]):
//     %2: float32[3] = torch.Tensor.__pow__(%0, %1)    # prog.py:5
//     return %2
#pragma once

#include <string>

#include "core/ir/graph.h"

namespace ivytrace {

std::string PrintGraph(const Graph& graph);

}  // namespace ivytrace
