// Outputs that depend only on what was recorded, not on the run that recorded it.
#pragma once

#include "core/ir/graph.h"

namespace ivytrace {

// Clears what differs between two recordings of one program (start time, pid, hostname) from
// the graph's copy of the trace header, and makes source files under the recording's working
// directory (Header.cwd) relative to it, in node and guard locations. Graph files, plans and ONNX
// models written from the graph are then byte-identical for two recordings of one program, and
// do not name the directory a checkout lives in. Idempotent.
void StabilizeGraph(Graph* graph);

}  // namespace ivytrace
