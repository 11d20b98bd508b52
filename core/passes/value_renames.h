// The renames a pass makes as it walks the nodes in order: a result it forwards or merges is
// replaced by the value it equals, in every later read.
#pragma once

#include <vector>

#include "core/ir/graph.h"

namespace ivytrace {

class ValueRenames {
 public:
  // From now on, reads of `from` read `to`.
  void Set(ValueId from, ValueId to);
  bool empty() const { return to_.empty(); }
  ValueId operator()(ValueId v) const { return v < to_.size() ? to_[v] : v; }

  // Rewrites `n`'s reads of renamed values and reindexes it. Looks at the node's inputs first, so
  // a node that reads nothing renamed (most of them) costs no more than its hot cache line.
  void ApplyTo(Node* n) const;
  // Rewrites the region's result and the guards: call once, after the walk.
  void ApplyToResultsAndGuards(Graph* g) const;

 private:
  // Identity except for renamed values; made on the first Set (most passes over most graphs
  // rename nothing, and a table for a million values is 4 MB to fill).
  std::vector<ValueId> to_;
};

}  // namespace ivytrace
