#include "core/ir/loader.h"

#include "core/io/graph_file.h"
#include "core/ir/stable_graph.h"

namespace ivytrace {

Status LoadGraph(const std::string& path, const BuildOptions& options, LoadedGraph* out) {
  IVY_RETURN_IF_ERROR(SniffFile(path, &out->kind));
  switch (out->kind) {
    case FileKind::kTrace: {
      IVY_RETURN_IF_ERROR(BuildGraphFromTrace(path, options, &out->graph, &out->build));
      StabilizeGraph(&out->graph);
      return Status::Ok();
    }
    case FileKind::kGraph:
      return ReadGraphFile(path, &out->graph);
    default:
      return Status::InvalidArgument("'" + path +
                                     "' is an executable plan; give the trace or the optimized "
                                     "graph it was exported from");
  }
}

}  // namespace ivytrace
