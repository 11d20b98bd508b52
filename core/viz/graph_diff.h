// The difference between two graphs (a trace and its optimized graph, or two versions of a
// model), as one view model to draw: the second graph's nodes, plus the first one's removed nodes
// placed in the module call group they came from.
//
// Nodes match by module call path, op and position: the k-th call of op X in group "layer1/0" of
// A matches the k-th call of X in the same group of B. Region inputs match by name, outputs by
// position. A matched pair is "changed" when its arguments (tensors compared by position only),
// dtype, shape or the constants it reads differ.
#pragma once

#include <string>
#include <vector>

#include "core/viz/view_model.h"

namespace ivytrace {

enum class DiffStatus : int { kSame = 0, kAdded = 1, kRemoved = 2, kChanged = 3 };

struct GraphDiff {
  ViewModel merged;                  // B's model + A's removed nodes (appended)
  std::vector<DiffStatus> status;    // per merged node
  std::vector<std::string> before;   // per merged node: A's side, for changed nodes ("" otherwise)
  size_t same = 0, added = 0, removed = 0, changed = 0;
  std::string a_name, b_name;        // what was compared, for the summary
};

GraphDiff DiffViewModels(const ViewModel& a, const ViewModel& b);

}  // namespace ivytrace
