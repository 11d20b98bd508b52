// Reading and writing plan files (magic + one v1::Plan) from and to a whole v1::Plan. Writes are
// atomic. `ivytrace export --to plan` writes the same bytes streaming, from the Graph, without a
// v1::Plan: ExportPlanFile (core/export/plan_exporter.h). Graph files are streamed to and from
// the in-memory Graph: see graph_file.h.
#pragma once

#include <string>

#include "core/util/status.h"
#include "ivytrace/v1/plan.pb.h"

namespace ivytrace {

Status WritePlanFile(const std::string& path, const v1::Plan& plan);
Status ReadPlanFile(const std::string& path, v1::Plan* plan);

}  // namespace ivytrace
