// Reading and writing graph files (magic + one v1::Graph) and plan files (magic + one v1::Plan).
// Writes are atomic.
#pragma once

#include <string>

#include "core/util/status.h"
#include "ivytrace/v1/graph.pb.h"
#include "ivytrace/v1/plan.pb.h"

namespace ivytrace {

Status ReadGraphFile(const std::string& path, v1::Graph* graph);
Status WriteGraphFile(const std::string& path, const v1::Graph& graph);
Status WritePlanFile(const std::string& path, const v1::Plan& plan);
Status ReadPlanFile(const std::string& path, v1::Plan* plan);

}  // namespace ivytrace
