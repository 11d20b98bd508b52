// Clean-ups of an exported ONNX graph, after every node is lowered: dims read from shapes that
// are known without running the model, nodes computed twice, and nodes nothing reads.
//
// Why here and not in the ivytrace graph's passes: what they remove is made by the lowerings
// themselves (each `sym_size` becomes a Shape and a Gather, each reshape to symbolic sizes its own
// Unsqueeze/Concat of them), after those passes ran; and which dims are known is what ONNX shape
// inference derives from the model's declared input dims.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "onnx/onnx_pb.h"

namespace ivytrace {
namespace onnx_export {

// What ONNX shape inference gave a value (its type, with the graph's inputs), or null.
using InferredTypes = std::function<const onnx::TypeProto*(const std::string&)>;
// The name of an int64 initializer holding the values: 1-d, and 0-d (a scalar).
using Int64sInitializer = std::function<std::string(const std::vector<int64_t>&)>;
using ScalarInitializer = std::function<std::string(int64_t)>;

// Whether a node of the graph has a subgraph (If, Loop, Scan): its nodes read names of the outer
// graph, which the passes below do not follow, so they are not run on such a graph.
bool HasSubgraphs(const onnx::GraphProto& graph);

// A dim read from a shape, `Gather(Shape(v), i)` with a constant i, is replaced where ONNX shape
// inference (`inferred`: value name -> its inferred value_info, the graph's inputs included)
// knows that dim of v: by a constant (`constant(n)` gives the name of a 0-d int64 initializer
// holding n) when it is static, and by the same dim read from a graph input when it is that
// input's dim_param and no other input dim has that name (onnxruntime does not check that dims
// of one name are equal). The values are the same when the model runs; only the order in which
// onnxruntime may run nodes is freer. Returns how many dim reads were replaced.
int ReplaceKnownDimReads(onnx::GraphProto* graph,
                         const std::function<const onnx::TypeProto*(const std::string&)>& inferred,
                         const std::function<std::string(int64_t)>& constant);

// Shapes the graph computes from sizes that ONNX shape inference shows to be dims of the values
// they apply to (`inferred`, as above; only dims named after one graph input dim count) become
// constants, so that inference knows what follows them, and the dim reads and Concats go:
//  - Reshape to [b, t, -1, d] (allowzero=1) of a value whose dims 0 and 1 are b and t: the shape
//    [0, 0, -1, d], 0 copying those dims (allowzero=0); a literal 0 leaves it as it is;
//  - Expand to [b, t] of a value of dims b and t: those entries become 1;
//  - Slice(x, [0], [n]) with n an input dim: Gather(x, Range(0, n, 1)) on that axis (an end past
//    the dim, which Slice clamps, makes the Gather fail instead: an error, never another value).
// `int64s` names a 1-d int64 initializer of the values, `scalar` a 0-d one. Returns how many.
int ConstantKnownShapes(onnx::GraphProto* graph, const InferredTypes& inferred, const Int64sInitializer& int64s,
                        const ScalarInitializer& scalar);

// The shapes of Reshape outputs (constant target shapes) that ONNX shape inference leaves partly
// unknown but that follow from the data's dims (`inferred`, only input dims named once count):
// 0 copies a dim, and a -1 stands for the element count left over, when that is a constant or
// exactly one input dim (`x.view(-1, c)` of a (1, t, c) value is (t, c)). libonnx 1.12 gives up
// on -1 over symbolic dims. The caller declares them as value_info for the next inference round.
std::vector<onnx::ValueInfoProto> DeclareReshapeShapes(const onnx::GraphProto& graph, const InferredTypes& inferred);

// Folds the int64 shape arithmetic whose inputs are all small constants (Add, Sub, Mul, Div, Mod,
// Max, Min, Neg, Abs, Identity, Cast, Unsqueeze, Squeeze, Concat and Gather, as ONNX defines them)
// and the Shape of a value whose shape inference knows to be static (`inferred`, as above): each
// becomes an initializer (`int64s` names a 1-d one, `scalar` a 0-d one) and its readers read it.
// `x.shape[-1] // 2` of a static dim is then a constant, and so is the Slice it bounds.
// Returns how many nodes were folded.
int FoldIntConstants(onnx::GraphProto* graph, const InferredTypes& inferred, const Int64sInitializer& int64s,
                     const ScalarInitializer& scalar);

// Drops each Mul by an initializer of ones (either side) and each Div by one, whose broadcast
// keeps the other input's shape (`inferred`, as above; their types equal): the product is that
// input, bit for bit. (A randomly initialized RMSNorm's weight is all ones.) Returns how many.
int DropMultipliesByOne(onnx::GraphProto* graph, const InferredTypes& inferred);

// Drops every node that repeats an earlier node (same op, domain, inputs and attributes; outputs
// renamed in the nodes after it) where that is safe: the op is deterministic, has no subgraph,
// and none of the node's outputs is a graph output. Returns how many nodes were dropped.
int MergeDuplicateNodes(onnx::GraphProto* graph);

// Drops the nodes none of whose outputs is read by a later node or is a graph output (in reverse
// order, so chains go at once). Returns how many.
int RemoveUnreadNodes(onnx::GraphProto* graph);
// onnxruntime's extended optimizations (GatherToSliceFusion) turn Gather(x, Range(s, l, d)) into
// Slice(x, s, l, d), which differs wherever the indices count from the end: Range(n-1, -1, -1)
// reverses x, Slice(n-1, -1, -1) is empty (its end -1 means the last element). Each Gather of a
// Range not known to start at >= 0 with a positive step gets its negative indices wrapped,
// Where(i < 0, i + dim, i) (what Gather does with them): the fusion no longer applies and the
// values are Gather's. Returns how many.
int ProtectRangeGathers(onnx::GraphProto* graph);
// Each Expand whose output shape inference knows to be static and empty (a dim of 0) becomes an
// empty initializer of that shape. onnxruntime's constant folding expands a constant (1, 1) to
// (0, 1) as (1, 1), and its shape inference then refuses to load the model (a Concat of the
// index grid of `x[:, 1:] += 1` on a (0, 2) input). Returns how many.
int FoldEmptyExpands(onnx::GraphProto* graph, const InferredTypes& inferred);
// A length check of a lowering (`ivytrace guard (split sizes)`, `(unbind count)`: the input
// reshaped to itself when a dim has its recorded length, else to an invalid shape) whose dim is
// now a constant equal to the recorded length holds on every input: its Reshape goes, and its
// readers read the input. Returns how many.
int DropHeldLengthGuards(onnx::GraphProto* graph);

// Folds a Transpose of an initializer that nothing else reads (a linear layer's constant weight)
// into the initializer: it then holds the transposed bytes, under its name with ".T" appended,
// and the node goes. A weight that is read elsewhere too (tied embeddings) keeps its Transpose,
// so no weight is stored twice. Returns how many were folded.
int FoldInitializerTransposes(onnx::GraphProto* graph);

// In each gate CombineGuardChecks made, `Equal(Size(Concat(checks...)), n)` with n the number of
// checks, drops the checks that repeat (after MergeDuplicateNodes, the same guard's check in every
// layer is one value) and those FoldIntConstants made constants (they pass on every input), and
// sets n to the count left, so that gates of the same checks are the same nodes for the next
// MergeDuplicateNodes. Returns how many gates changed.
int DedupeGateChecks(onnx::GraphProto* graph, const ScalarInitializer& scalar);

// Drops each `Where(gate, v, v)` (GateOn) whose v is already computed after that gate, i.e. reads
// it, directly or through other values: the gate orders nothing more. After MergeDuplicateNodes,
// the same guard check in every layer is one gate, and each layer's q, k and v were gated on it
// again. Gates are the 0-d bools CombineGuardChecks makes. Returns how many.
int DropRedundantGates(onnx::GraphProto* graph);

// Declares the length of each `Range(0, n, 1)` whose n is an input dim that ReplaceKnownDimReads
// read (`dim.<param>`, maybe cast): a value_info of shape [<param>], which ONNX shape inference
// (libonnx 1.12) cannot work out itself, so that the dims after it (GPT-2's position embedding,
// then every activation) are known to the next ReplaceKnownDimReads. Returns how many.
int AnnotateRangeLengths(onnx::GraphProto* graph);

// MatMuls of one input by 2-d weights of the same row count and type, each weight read by its
// MatMul alone (attention's query, key and value projections), become one MatMul by the weights
// side by side and a Split of its result into the outputs (with each MatMul's own 1-d bias Add,
// when every one has one, joined too). The weights' bytes are copied once into the joined
// initializer; the old ones are left for RemoveUnreadInitializers. `int64s` names the split
// sizes. Returns how many groups were fused.
int FuseParallelMatMuls(onnx::GraphProto* graph, const Int64sInitializer& int64s);

// Drops initializers that no node reads and that are not graph outputs (a scalar a lowering made
// for a node that was later merged or dropped). Returns how many.
int RemoveUnreadInitializers(onnx::GraphProto* graph);

}  // namespace onnx_export
}  // namespace ivytrace
