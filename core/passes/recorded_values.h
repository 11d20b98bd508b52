// Shared by the passes that replace a node by the values the recorder stored for its outputs
// (constant-fold, bake-generators), and what memory the caller can see (also dce, simplify).
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_set>
#include <vector>

#include "core/ir/graph.h"

namespace ivytrace {

// Storage ids of memory the caller owns: region inputs and constants (parameters, buffers).
std::unordered_set<uint64_t> CallerVisibleStorage(const Graph& g);

// CallerVisibleStorage, worked out on the first question: most graphs never ask (no in-place
// write, no forwarded output), and the answer walks every value.
class LazyCallerVisibleStorage {
 public:
  explicit LazyCallerVisibleStorage(const Graph& g) : g_(g) {}
  bool Contains(uint64_t storage) {
    if (!set_) set_ = CallerVisibleStorage(g_);
    return set_->count(storage) > 0;
  }

 private:
  const Graph& g_;
  std::optional<std::unordered_set<uint64_t>> set_;
};

// Storage ids written in place by a live node, worked out on the first question: passes ask it
// only of the few nodes a rule matches, and the answer walks every node.
class WrittenStorage {
 public:
  explicit WrittenStorage(const Graph& g) : g_(g) {}
  bool Contains(uint64_t storage);

 private:
  const Graph& g_;
  std::optional<std::unordered_set<uint64_t>> set_;
};

// True when every output of `n` has a recorded value of at most `size_limit` bytes (0 = any).
bool HasRecordedOutputs(const Graph& g, const Node& n, uint64_t size_limit = 0);

// The value a symbolic int or bool (dtype SYM_INT/SYM_BOOL) had while recording, from its
// OBSERVED record; nullopt when the trace holds none.
std::optional<int64_t> RecordedScalar(const Graph& g, ValueId v);

// For each node marked in `replace`, the index of a node that stays and later writes in place
// into the memory of one of its outputs (a constant must never be written: a plan would carry
// the change into the next call), or -1.
std::vector<int> LaterInPlaceWriters(const Graph& g, const std::vector<char>& replace);

// REQUIRES: HasRecordedOutputs(g, g.nodes[i]). Makes the outputs of node `i` constants holding
// their recorded values and erases the node.
void ReplaceByRecordedValues(Graph* g, size_t i);

}  // namespace ivytrace
