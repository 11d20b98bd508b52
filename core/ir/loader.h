// One entry point for every command: a trace or a graph file in, a Graph out.
#pragma once

#include <string>

#include "core/io/file_kind.h"
#include "core/ir/graph.h"
#include "core/ir/graph_builder.h"
#include "core/util/status.h"

namespace ivytrace {

struct LoadedGraph {
  Graph graph;
  FileKind kind = FileKind::kTrace;  // what the file was
  BuildSummary build;                // for traces
};

// Reads `path`: a trace is built into the graph of the region `options.region` selects; a graph
// file (written by `optimize`) is read as is. Plans and other files are refused with a message
// that says what was expected.
Status LoadGraph(const std::string& path, const BuildOptions& options, LoadedGraph* out);

}  // namespace ivytrace
