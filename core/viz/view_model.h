// What the viewers draw: a region's graph as nodes (region inputs, ops, outputs) nested in module
// call groups, with constants and parameters folded into the nodes that read them.
//
// Groups come from module scopes ("layer1.0.conv1" is layer1 > 0 > conv1). A group is one *call*
// of a module: the graph keeps the recorded (topological) order, and a call is a run of
// consecutive nodes under the same scope, so a reused `nn.ReLU` called twice makes two groups
// (`relu`, `relu #2`). Because each group is a contiguous run in topological order, the edges
// between the groups of one parent never form a cycle (the HTML viewer's layout relies on it).
// One limit: two calls of one module with nothing recorded between them read as one call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/graph.h"

namespace ivytrace {

struct ViewGroup {
  int parent = -1;      // -1 for the root (group 0)
  std::string name;     // scope segment, "relu #2" for a module's second call, "ops 200-399" for a chunk
  std::string path;     // names joined by '.', unique: the recorded scope ("layer1.0.relu"), "layer1.0.relu #2" for a second call
  std::string scope;    // the module scope ("layer1.0.relu"); "" for root and chunks of root
  std::vector<int> groups;  // child groups in order
  std::vector<int> nodes;   // child nodes in order
};

struct ViewNode {
  enum Kind { kInput = 0, kOp = 1, kOutput = 2 };
  Kind kind = kOp;
  int group = 0;
  std::string name;       // "%12": the value id of the first output, as `inspect --graph` prints
  std::string op;         // framework op; input/output name for inputs and outputs
  std::string canonical;  // schemas/' canonical op, "" if unknown
  std::string args;       // non-tensor and tensor arguments, rendered as `inspect --graph` does
  std::string dtype;
  std::string shape;      // "[2, 3]"
  std::string file;
  uint32_t line = 0;
  uint64_t duration_ns = 0;
  std::vector<int> inputs;       // producing view nodes, in argument order (deduplicated)
  std::vector<ValueId> consts;   // constants and parameters read (folded into this node)
  int graph_node = -1;           // index into Graph::nodes for ops
};

struct ViewModel {
  std::string name;
  std::vector<ViewGroup> groups;   // groups[0] is the root
  std::vector<ViewNode> nodes;     // inputs first, then ops in graph order, then outputs
  std::vector<std::string> const_names;  // by ValueId, only for constants read ("" otherwise)
  std::vector<std::string> const_types;
  size_t constant_count = 0;       // distinct constants read
};

// A group with more direct children than this is split into chunk groups of this many children,
// so that no level of the tree asks the browser (or Graphviz) to lay out thousands of boxes.
inline constexpr size_t kMaxGroupChildren = 200;

ViewModel BuildViewModel(const Graph& graph);

// "float32[2, 3]" (dtype and shape of a value), as `inspect --graph` prints it.
std::string ValueTypeString(const Value& v);

}  // namespace ivytrace
