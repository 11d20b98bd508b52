// Lowering a graph to an executable plan: straight-line steps over slots, replayed by the Python
// runtime. Every step must name a function schemas/ knows (the runtime's allow-list); ops that
// are not there are all listed in one Unsupported error, with counts and source lines.
#pragma once

#include "core/ir/graph.h"
#include "core/util/status.h"
#include "ivytrace/v1/plan.pb.h"

namespace ivytrace {

Status ExportPlan(const Graph& graph, v1::Plan* plan);

}  // namespace ivytrace
