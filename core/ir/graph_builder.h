// Builds the SSA graph of one region from a trace, streaming its records.
//
// (tensor id, version) pairs become SSA values: every op output and every in-place write defines
// a new value; reads resolve to the latest definition. Tensors the region reads but did not make
// become constants with the values the recorder stored (parameters keep their names).
#pragma once

#include <string>

#include "core/ir/graph.h"
#include "core/util/status.h"

namespace ivytrace {

struct BuildOptions {
  // Which region to build: "" = the first region in the trace; "name" = the first instance of
  // that name; "name:K" = its K-th instance (0-based). A trace without regions builds every op.
  std::string region;
};

struct BuildSummary {
  size_t regions_in_trace = 0;     // region instances seen
  std::string region_chosen;       // "name:K", or "" for a trace without regions
  size_t ops_read = 0;             // op records in the trace
  // Shape reads (x.shape, x.dim(), ...) in the chosen region: events, not nodes, so they keep
  // nothing alive and are not in the graph.
  size_t shape_reads_dropped = 0;
  // The trace's footer says a recording limit (--max-ops/--max-bytes) stopped it: its last
  // records are the program's state at that point, not its end. Empty otherwise.
  std::string stopped_by_limit;    // e.g. "--max-ops 1000, hit by op 1001 (torch.add at p.py:7); ..."
};

Status BuildGraphFromTrace(const std::string& path, const BuildOptions& options, Graph* graph,
                           BuildSummary* summary = nullptr);

}  // namespace ivytrace
