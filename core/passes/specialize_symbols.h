// Replaces every symbolic shape value (dtype SYM_INT/SYM_BOOL, made by ivytrace.sym.* ops) that a
// node reads by the value it had while recording, and drops the guards on such values.
//
// For an exporter that cannot compute shapes from its inputs: what it writes is then specialized
// on the recorded shapes, exactly as a graph without symbolic shapes was. The caller says so to the
// user (the guards it drops name the lines). Calls that read only constants and shapes
// (OpFlag SHAPE_FOLDABLE) become foldable. Run constant-fold and dead-code elimination
// afterwards: the ivytrace.sym.* nodes no longer feed anything.
#pragma once

#include <cstddef>

#include "core/ir/graph.h"
#include "core/util/status.h"

namespace ivytrace {

// REQUIRES: every symbolic value a node reads has its OBSERVED record (the recorder writes one for
// each). `*replaced` counts the arguments replaced.
Status SpecializeSymbols(Graph* graph, size_t* replaced);

}  // namespace ivytrace
