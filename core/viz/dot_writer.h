// Graphviz DOT for a view model: one nested cluster per module call, data flowing top to bottom,
// region inputs on the first rank and outputs on the last, each op node named as the viewer and
// `inspect --graph` name it ("%12", also the SVG <title>), labelled with op, arguments, dtype and
// shape and source line. Constants and parameters are hidden unless asked for (they took half the
// boxes); a node lists how many it reads.
#pragma once

#include <string>

#include "core/viz/view_model.h"

namespace ivytrace {

struct DotOptions {
  bool show_constants = false;
};

std::string ViewModelToDot(const ViewModel& vm, const DotOptions& options);

// Boxes the DOT text draws (nodes, plus constants when shown): what a Graphviz budget counts.
size_t DotNodeCount(const ViewModel& vm, const DotOptions& options);

}  // namespace ivytrace
