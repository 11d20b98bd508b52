// The graph file reader on arbitrary bytes; a graph it accepts goes through the verifier and the
// default passes, as `optimize` on a graph file does.
#include "core/io/graph_file.h"
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
  if (!ivytrace::ReadGraphFile(in.path(), &g).ok()) return 0;
  if (!ivytrace::VerifyGraph(g).ok()) return 0;  // refused by every command that runs passes
  ivytrace::PipelineOptions po;
  po.verify = true;
  (void)ivytrace::RunPipeline(po, &g, nullptr);
  return 0;
}
