// The ONNX and plan exporters on graphs read from arbitrary graph-file bytes (what `export`
// does with a graph file). The plan is streamed to /dev/null, written through as a device.
#include "core/export/onnx/onnx_exporter.h"
#include "core/export/plan_exporter.h"
#include "core/io/graph_file.h"
#include "core/ir/verifier.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ivytrace::fuzz::Quiet();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ivytrace::fuzz::InputFile in(data, size);
  ivytrace::Graph g;
  if (!ivytrace::ReadGraphFile(in.path(), &g).ok()) return 0;
  if (!ivytrace::VerifyGraph(g).ok()) return 0;
  (void)ivytrace::ExportPlanFile(g, "/dev/null");
  ivytrace::OnnxExportOptions oo;
  oo.take_constant_data = &g.constants;  // as `export` does: the graph's last use
  onnx::ModelProto model;
  (void)ivytrace::ExportOnnx(g, oo, &model);
  return 0;
}
