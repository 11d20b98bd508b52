// The graph builder and the default pass pipeline (with the IR verifier after every pass) on
// arbitrary trace bytes. A graph the builder accepts must verify and survive every pass.
#include <cstdlib>

#include "core/ir/graph_builder.h"
#include "core/ir/verifier.h"
#include "core/passes/pass_registry.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ivytrace::fuzz::Quiet();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ivytrace::fuzz::InputFile in(data, size);
  ivytrace::Graph g;
  if (!ivytrace::BuildGraphFromTrace(in.path(), {}, &g).ok()) return 0;
  if (!ivytrace::VerifyGraph(g).ok()) std::abort();  // the builder made a broken graph
  ivytrace::PipelineOptions po;
  po.verify = true;
  po.enable.push_back("bake-generators");
  (void)ivytrace::RunPipeline(po, &g, nullptr);
  return 0;
}
