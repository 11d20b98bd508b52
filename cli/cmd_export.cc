// ivytrace export FILE --to onnx|plan -o OUT
#include <spdlog/spdlog.h>

#include "cli/common.h"
#include "core/export/onnx/onnx_exporter.h"
#include "core/passes/constant_fold.h"
#include "core/passes/dead_code_elimination.h"
#include "core/passes/specialize_symbols.h"
#include "core/export/plan_exporter.h"
#include "core/util/atomic_file.h"

namespace ivytrace::cli {
namespace {

struct ExportOptions {
  std::string file;
  std::string to;
  std::string output;
  std::string region;
  int opset = 17;
  bool no_optimize = false;
  bool static_batch = false;
  bool allow_specialized = false;
  PipelineFlags flags;
};

int RunExport(const ExportOptions& o) {
  Status st = CheckWritable(o.output);
  if (!st.ok()) return Fail("export", st, kExitOutput);
  LoadedGraph& lg = CommandGraph();
  PipelineOptions po;
  ApplyPipelineFlags(o.flags, &po);
  st = LoadForCommand(o.file, o.region, o.no_optimize ? nullptr : &po, &lg);
  if (!st.ok()) return Fail("export", st, InputErrorCode(st));
  if (o.to == "plan") {
    // Lowered and written step by step (no whole v1::Plan); Unsupported comes before any write.
    st = ExportPlanFile(lg.graph, o.output);
    if (!st.ok()) return Fail("export", st, st.kind() == Status::Kind::kUnsupported ? kExitUnsupported : kExitOutput);
    return kExitOk;
  }
  {
    // The ONNX exporter does not lower shape arithmetic (ivytrace.sym.*) yet: the model takes the
    // recorded shapes, and says so.
    size_t replaced = 0;
    st = SpecializeSymbols(&lg.graph, &replaced);
    if (!st.ok()) return Fail("export", st, kExitUnsupported);
    if (replaced) {
      spdlog::warn("the ONNX model takes the recorded shapes: {} shape-derived value(s) the graph computes "
                   "from its inputs are fixed to what they were while recording (lowering ivytrace.sym.* ops "
                   "is not done yet)", replaced);
      PassResult pr;
      st = ConstantFold(PassOptions{}).Run(&lg.graph, &pr);
      if (st.ok()) st = DeadCodeElimination().Run(&lg.graph, &pr);
      if (!st.ok()) return Fail("export", st, kExitInternal);
      lg.graph.Compact();
    }
  }
  OnnxExportOptions oo;
  oo.opset = o.opset;
  oo.dynamic_batch = !o.static_batch;
  oo.allow_specialized = o.allow_specialized;
  if (o.allow_specialized && !lg.graph.guards.empty()) {
    spdlog::warn("the ONNX model is specialized on {} guard(s) (written into its metadata_props); inputs that "
                 "would fail them take the recorded path anyway", lg.graph.guards.size());
  }
  onnx::ModelProto model;
  st = ExportOnnx(lg.graph, oo, &model);
  if (!st.ok()) return Fail("export", st, kExitUnsupported);
  std::string bytes;
  if (!model.SerializeToString(&bytes)) {
    return Fail("export", Status::Unsupported("the ONNX model is too large to serialize (2 GB limit)"), kExitUnsupported);
  }
  st = WriteFileAtomically(o.output, bytes);
  if (!st.ok()) return Fail("export", st, kExitOutput);
  return kExitOk;
}

}  // namespace

void SetupExport(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<ExportOptions>();
  auto* sub = app.add_subcommand("export", "Export a region's graph as an ONNX model or an executable plan");
  sub->add_option("file", opts->file, "Trace or graph file")->required();
  sub->add_option("--to", opts->to, "Output format")->required()->check(CLI::IsMember({"onnx", "plan"}));
  sub->add_option("-o,--output", opts->output, "File to write")->required();
  sub->add_option("--region", opts->region, "Region to export: NAME or NAME:K (default: the first)");
  sub->add_option("--opset", opts->opset, "ONNX opset (default 17, the newest libonnx 1.12 checks)")
      ->check(CLI::Range(13, 17));
  sub->add_flag("--no-optimize", opts->no_optimize, "Export a trace's graph without running the default passes");
  AddPipelineFlags(sub, &opts->flags);
  sub->add_flag("--static-batch", opts->static_batch, "ONNX: keep the recorded batch size instead of a symbolic one");
  sub->add_flag("--allow-specialized", opts->allow_specialized,
                "ONNX: export a graph that has guards (refused by default, exit 5); the guards go into the "
                "model's metadata_props");
  sub->footer(kExitStatusHelp);
  sub->callback([opts, exit_code] { *exit_code = RunExport(*opts); });
}

}  // namespace ivytrace::cli
