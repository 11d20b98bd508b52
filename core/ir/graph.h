// The graph IR: one region of a recorded program as SSA values and nodes.
//
// Values come from region inputs, constants (with stored data) and node outputs. A node is one
// framework call; its arguments keep the call's Python structure (v1::Arg trees) with tensors
// replaced by value references (TensorRef.value), so a node can be replayed exactly as recorded,
// and `inputs`/`outputs` list the values it reads and defines for fast traversal.
// In-place ops are explicit: `x.add_(y)` reads value %a (x before) and defines a new value %b
// (x after); `mutated` names the arguments written.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <absl/container/flat_hash_set.h>
#include <absl/container/inlined_vector.h>

#include "core/util/huge_page_allocator.h"
#include "core/util/interned_string.h"
#include "ivytrace/v1/graph.pb.h"
#include "ivytrace/v1/schema.pb.h"

namespace ivytrace {

using ValueId = uint32_t;
// A node's inputs/outputs: almost always a few values, kept inside the node (same size as a
// std::vector) so passes that scan a million nodes do not chase a heap pointer for each.
using ValueList = absl::InlinedVector<ValueId, 4>;

struct Value {
  v1::ValueKind kind = v1::VALUE_KIND_UNSPECIFIED;
  v1::DType dtype = v1::DTYPE_UNSPECIFIED;
  std::vector<int64_t> shape;
  std::string name;         // input or parameter name; may be empty
  uint64_t tensor_id = 0;   // the recorder's identity, for messages and verification
  uint64_t storage = 0;     // shared by views of the same memory
  int32_t producer = -1;    // node index when kind == NODE_OUTPUT
  int32_t constant = -1;    // index into Graph::constants when kind == CONSTANT_VALUE
  uint32_t tensor_version = 0;
  // Index into Graph::constants of the value the recorder stored for this node output (the op's
  // inputs were all constants: array caching; or the op is random: baking generators); -1 = none.
  // (Fields ordered so that none is padded: 96 bytes, not 104.)
  int32_t recorded = -1;
};

// Field order matters for speed: the fields every pass reads for every node (schema, flags,
// erased, writes, inputs, outputs) fill exactly the node's first cache line, so a pass over a
// million-node graph (past the L3 cache) reads one line per node. Everything after that line is
// read only for the nodes a pass looks at closely. Three cache lines in all: op, scope and the
// file are 32-bit interned strings (core/util/interned_string.h); every byte of a node is
// memory the kernel zeroes once when a million-node graph is built.
struct alignas(64) Node {
  const v1::OpSchema* schema = nullptr;    // null when schemas/ does not know the op
  uint32_t flags = 0;                      // v1::OpFlag bits
  bool erased = false;                     // set by passes; Graph::Compact() removes it
  // !mutated.empty(), set by Graph::IndexNode: the hot loops of dce, cse and simplify ask this of
  // every node, and `mutated` sits on the second cache line (reading it there cost those passes
  // 40-80% of their time at a million nodes).
  bool writes = false;
  ValueList inputs;                        // values read, in argument order (may repeat)
  ValueList outputs;                       // values defined (result tensors, then mutated ones)
  std::vector<v1::TensorRef> mutated;      // arguments written in place, at their new values
  std::vector<v1::Arg> args;
  std::vector<v1::KwArg> kwargs;
  v1::Arg result;
  uint64_t duration_ns = 0;                // the recorded call's duration; 0 for nodes the builder made
  InternedString op;                       // qualified framework op
  InternedString scope;                    // module path ("" outside modules), interned as op is
  SourceLoc loc;                           // file interned as op is

  const std::string& canonical() const;    // schema's canonical op, or "" when unknown
};

class Graph {
 public:
  std::string name;
  v1::Header source;
  std::vector<Value, HugePageAllocator<Value>> values;
  std::vector<Node, HugePageAllocator<Node>> nodes;   // topological order
  std::vector<v1::Tensor> constants;
  std::vector<v1::GraphInput> inputs;
  v1::Arg outputs;                         // tree over values
  std::vector<v1::Guard> guards;
  std::vector<std::string> passes_applied;

  ValueId AddValue(Value v);
  // Appends a node (REQUIRES: indexed, see IndexNode) and counts it in the op census.
  void AddNode(Node n);
  // Adds a constant tensor and a value for it; returns the value.
  ValueId AddConstant(v1::Tensor t);

  // Rebuilds `inputs`/`outputs`/`writes` of a node from its args/kwargs/result/mutated. Whoever
  // changes those fields calls this.
  static void IndexNode(Node* node);
  // Removes erased nodes and renumbers producers. Values are kept (ids stay stable). Constants
  // nothing reads go, except the recorded values of live nodes' outputs.
  void Compact();

  // Values the region returns, in tree order.
  std::vector<ValueId> OutputValues() const;
  // Values bound to region inputs, in input order.
  std::vector<ValueId> InputValues() const;
  size_t LiveNodeCount() const;

  // The op census: what the live nodes may hold, so that a pass with nothing to do in a graph
  // (no batch norm, no foldable op) learns it without a walk over a million nodes. It may
  // over-count (a node erased since it was taken still counts) but never under-counts: AddNode
  // counts as it appends, a question first counts nodes pushed onto `nodes` directly, and
  // Compact() takes it anew. Whoever gives an existing node another schema or more flags calls
  // Recount(). VerifyGraph checks it.
  bool MayHoldFlags(uint32_t flags) const;  // each bit of `flags` may be set on some node
  bool MayHoldCanonical(std::string_view canonical) const;
  bool MayHoldSchema(const v1::OpSchema* schema) const;  // for the verifier
  bool MayHoldUnknownOps() const;                        // a node whose op schemas/ does not know
  void Recount();
  // Counts one node the caller gave another schema or more flags (cheaper than Recount()).
  void CountNode(const Node& n) { Count(n); }

  // Asks the CPU for node `i`'s first cache line, if there is such a node. A pass walking a graph
  // larger than the cache waits on each node's line; asking kPrefetchDistance nodes ahead of the
  // walk (i + d forwards, i - d backwards: out of range is a no-op) overlaps those waits.
  // Measured at 1M nodes: 64 -> 128 took dce 3.2 -> 2.3 ms and cse 3.7 -> 3.1 ms; 256 gained nothing.
  static constexpr size_t kPrefetchDistance = 128;
  void Prefetch(size_t i) const {
    if (i < nodes.size()) __builtin_prefetch(&nodes[i]);
  }

  // Proto form (what `optimize` writes) and back. FromProto resolves schemas by op name.
  v1::Graph ToProto() const;
  // Fills `out` (typically arena-allocated: a million-node graph is millions of small messages,
  // and an arena makes building and freeing them cheap).
  void ToProto(v1::Graph* out) const;
  static Graph FromProto(const v1::Graph& g);
  // One element of the proto form, taken apart (its strings and messages are moved out). Graph
  // files are read element by element through these (core/io/graph_file.cc).
  static Value ValueFromProto(v1::ValueInfo* vi);
  static Node NodeFromProto(v1::Node* pn);  // schema resolved by op name, indexed

 private:
  void Count(const Node& n) const;
  void CountNewNodes() const;

  // Mutable: questions are const, and bring the census up to date over nodes pushed directly.
  mutable uint32_t census_flags_ = 0;
  mutable absl::flat_hash_set<const v1::OpSchema*> census_schemas_;
  mutable bool census_unknown_ = false;
  mutable size_t census_counted_ = 0;  // nodes [0, census_counted_) are counted
};

}  // namespace ivytrace
