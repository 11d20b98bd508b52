// The interactive viewer: one self-contained HTML file (no network, no server) holding the view
// model as compact JSON and the viewer's own CSS and JavaScript (core/viz/viewer.{html,css,js},
// written for this project and embedded at build time). Constants' values are never written,
// only their names and types: the file grows with the node count (about 100-150 bytes a node).
#pragma once

#include <string>

#include "core/viz/graph_diff.h"
#include "core/viz/view_model.h"

namespace ivytrace {

// `diff` (optional) marks each node of `vm` (then diff->merged) added/removed/changed.
std::string ViewModelToHtml(const ViewModel& vm, const GraphDiff* diff);

}  // namespace ivytrace
