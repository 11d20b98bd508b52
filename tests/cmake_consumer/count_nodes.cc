// Loads a trace or graph through the installed library and prints its node count.
#include <cstdio>

#include "core/ir/loader.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: count_nodes TRACE_OR_GRAPH\n");
    return 2;
  }
  ivytrace::LoadedGraph lg;
  ivytrace::Status st = ivytrace::LoadGraph(argv[1], {}, &lg);
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.message().c_str());
    return 3;
  }
  std::printf("nodes=%zu\n", lg.graph.LiveNodeCount());
  return 0;
}
