// Reading and writing plan files (magic + one v1::Plan). Writes are atomic.
// Graph files are streamed to and from the in-memory Graph: see graph_file.h.
#pragma once

#include <string>

#include "core/util/status.h"
#include "ivytrace/v1/plan.pb.h"

namespace ivytrace {

Status WritePlanFile(const std::string& path, const v1::Plan& plan);
Status ReadPlanFile(const std::string& path, v1::Plan* plan);

}  // namespace ivytrace
