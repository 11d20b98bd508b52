// NumPy writes through views, made functional for ONNX.
//
// The NumPy recorder lists every array on a written memory as written by the call (`t = x.T;
// t *= 5` writes t and x): a plan replays the write in NumPy's own memory, and every array on it
// sees it. An ONNX model has no shared memory: the new value of each other array on the storage
// must be computed from the written one. CarryNumpyWritesBack adds those computations to the graph,
// after the writing node, the way the graph builder does for torch views (graph_builder.cc):
//   * an array the written one was viewed from (up the chain of view ops): its new value is the
//     view's inverse applied to the child's new value: a transpose by the inverse permutation, a
//     reshape back to the parent's shape, `copy(parent); parent[index] = child` for a basic index,
//     the pieces concatenated again for np.split/np.array_split, a flip flipped back;
//   * another view of the same memory: its view op replayed on its parent's new value.
// An alias it cannot compute keeps its place among the node's outputs; the ONNX exporter refuses the
// model if anything reads it (never an Identity of another array). Only for ONNX export: plans
// replay NumPy's memory as it is.
#pragma once

#include <cstddef>

#include "core/ir/graph.h"
#include "core/util/status.h"

namespace ivytrace {

// Returns how many aliases were given their computed values.
Status CarryNumpyWritesBack(Graph* g, size_t* carried);

}  // namespace ivytrace
