#include "core/ir/loader.h"

#include "core/io/graph_io.h"

namespace ivytrace {

Status LoadGraph(const std::string& path, const BuildOptions& options, LoadedGraph* out) {
  IVY_RETURN_IF_ERROR(SniffFile(path, &out->kind));
  switch (out->kind) {
    case FileKind::kTrace:
      return BuildGraphFromTrace(path, options, &out->graph, &out->build);
    case FileKind::kGraph: {
      v1::Graph g;
      IVY_RETURN_IF_ERROR(ReadGraphFile(path, &g));
      out->graph = Graph::FromProto(g);
      return Status::Ok();
    }
    default:
      return Status::InvalidArgument("'" + path +
                                     "' is an executable plan; give the trace or the optimized "
                                     "graph it was exported from");
  }
}

}  // namespace ivytrace
