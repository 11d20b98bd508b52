// A graph pass: one small transformation with a name, run by the optimizer's pipeline.
// Adding a pass = one new file + one line in pass_registry.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/ir/graph.h"
#include "core/util/status.h"

namespace ivytrace {

// Settings some passes read; every pass gets the same struct.
struct PassOptions {
  uint64_t fold_size_limit = 0;  // constant-fold: largest value (bytes) to fold; 0 = no limit
};

struct PassResult {
  size_t nodes_removed = 0;
  size_t nodes_added = 0;
  bool changed() const { return nodes_removed || nodes_added; }
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view description() const = 0;
  // Transforms `graph` in place. May leave erased nodes; the pipeline compacts after each pass.
  virtual Status Run(Graph* graph, PassResult* result) = 0;
};

}  // namespace ivytrace
