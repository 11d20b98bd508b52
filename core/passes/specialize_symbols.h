// Replaces every symbolic shape value (dtype SYM_INT/SYM_BOOL, made by ivytrace.sym.* ops) that a
// node reads by the value it had while recording, and moves the guards on such values out.
//
// For an exporter that cannot compute shapes from its inputs: what it writes is then specialized
// on the recorded shapes, exactly as a graph without symbolic shapes was. The caller says so to the
// user (the guards it drops name the lines). Calls that read only constants and shapes
// (OpFlag SHAPE_FOLDABLE) become foldable. Run constant-fold and dead-code elimination
// afterwards: the ivytrace.sym.* nodes no longer feed anything.
#pragma once

#include <cstddef>
#include <vector>

#include "core/ir/graph.h"
#include "core/util/status.h"

namespace ivytrace {

// REQUIRES: every symbolic value a node reads has its OBSERVED record (the recorder writes one for
// each). `*replaced` counts the arguments replaced.
// The guards on symbolic values are moved to `*moved_guards`.
Status SpecializeSymbols(Graph* graph, size_t* replaced, std::vector<v1::Guard>* moved_guards);

// Drops the guards on region inputs' ranks (op "<framework>.dim"/".ndim", recorded once a region
// reads a shape): they hold by construction in an exported model whose inputs have fixed ranks.
// Also drops the guards on inputs' whole shapes (op "<framework>.shape": a JAX graph is
// specialized on them) and returns true when there were any: the caller must then export the
// inputs with their recorded (static) shapes, where those guards hold by construction.
bool DropInputShapeGuards(Graph* graph);

// Drops the guards on symbolic values computed only from input dims an exported model declares
// static (all of them, but dim 0 when `dynamic_dim0`): such a model accepts only inputs on which
// the guard holds, so it holds by construction (`d ** 0.5` on a feature size, say).
void DropGuardsOnStaticDims(Graph* graph, bool dynamic_dim0);

}  // namespace ivytrace
