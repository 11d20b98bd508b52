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
#include <string>
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

// Which dims of the region's inputs an exported model declares dynamic.
struct InputDims {
  // Per input tensor (ForEachTensor order over graph.inputs), per dim: a group id >= 0 for a
  // dynamic dim (dims of one group share a name), -1 for a static dim.
  std::vector<std::vector<int>> group;
  bool IsDynamic(size_t input, int64_t dim) const {
    return input < group.size() && dim >= 0 && dim < static_cast<int64_t>(group[input].size()) &&
           group[input][dim] >= 0;
  }
};
struct InputDimsOptions {
  bool all_static = false;    // every dim static (export --static, or a JAX graph)
  bool static_batch = false;  // dim 0 of every input static
};

// Chooses the dynamic input dims: every dim but those recorded as 0 or 1 (broadcasting and
// squeezing give them another meaning, and the graph was recorded with it), dim 0 under
// static_batch, dims a weight fixes that the program never read (an MLP's features), and dims a
// guard pins to their recorded size (`x.shape[1] == 32` recorded True),
// whose guards it drops (they hold by construction in a model declaring the dim static). Dims
// recorded with one size share a group.
InputDims ChooseInputDims(Graph* graph, const InputDimsOptions& options);
// The same choice without touching the graph; `drop_guards[i]` says whether guard i holds by
// construction under it (ChooseInputDims drops those).
InputDims AnalyzeInputDims(const Graph& graph, const InputDimsOptions& options, std::vector<bool>* drop_guards);
// The names of the region's input tensors, in InputDims order: "x", or "x.0", "x.1", ... when an
// input is a list, tuple or dict of tensors.
std::vector<std::string> InputTensorNames(const Graph& graph);
// The dim_param of each dim of each input ("" for a static dim): a group's first dim names it,
// "batch" for a dim 0, else "<input>_dim<d>".
std::vector<std::vector<std::string>> InputDimNames(const std::vector<std::string>& input_names,
                                                    const std::vector<std::vector<int>>& groups);

// Drops the guards on symbolic values computed only from static dims: the exported model accepts
// only inputs on which such a guard holds (`d ** 0.5` on a feature size, say).
void DropGuardsOnStaticDims(Graph* graph, const InputDims& dims);

// Replaces the symbolic values computed only from static dims by their recorded values (they are
// the same on every input the model accepts), so constant-fold can fold what they feed.
Status SpecializeStaticSymbols(Graph* graph, const InputDims& dims, size_t* replaced);

}  // namespace ivytrace
