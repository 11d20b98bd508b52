// Lowering a graph to an executable plan: straight-line steps over slots, replayed by the Python
// runtime. Every step must name a function schemas/ knows (the runtime's allow-list); ops that
// are not there are all listed in one Unsupported error, with counts and source lines.
#pragma once

#include <string>

#include "core/ir/graph.h"
#include "core/util/status.h"
#include "ivytrace/v1/plan.pb.h"

namespace ivytrace {

struct PlanOptions {
  // Replay in this framework ("torch", "numpy", "jax") instead of the recorded one: the plan's
  // steps still name the recorded functions and the plan records `target`; the runtime calls each
  // step's canonical op through the target's TargetImpl (schemas/). Ops whose canonical op has no
  // impl in the target are all listed in one Unsupported error, before anything is written. An
  // impl's conditions on argument values are checked by the runtime at load time. Empty: none.
  std::string target;
};

// Builds the whole plan in memory (tests, small graphs).
Status ExportPlan(const Graph& graph, v1::Plan* plan, const PlanOptions& options = {});

// Writes the plan of `graph` to the plan file `path` in format 02 (plan.proto: magic "IVYPLN02",
// the constants' bytes in an aligned data section a reader maps, then the Plan, which is
// ExportPlan's v1::Plan with each constant's data replaced by its place in that section) without
// building the v1::Plan: the steps are lowered and written one at a time, so the file is not bound
// by protobuf's 2 GB message limit and memory holds one step, not the plan. Graph that cannot be
// exported: Unsupported, before anything is written. The write is atomic (core/util/atomic_file.h):
// on failure nothing is left at `path` and an existing file keeps its contents.
Status ExportPlanFile(const Graph& graph, const std::string& path, const PlanOptions& options = {});

}  // namespace ivytrace
