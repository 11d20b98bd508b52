// ivytrace export FILE --to onnx|plan -o OUT
#include <spdlog/spdlog.h>

#include "cli/common.h"
#include "core/export/onnx/onnx_exporter.h"
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
  PipelineFlags flags;
};

int RunExport(const ExportOptions& o) {
  Status st = CheckWritable(o.output);
  if (!st.ok()) return Fail("export", st, kExitOutput);
  st = CheckNotSameFile(o.output, o.file, "the input");
  if (!st.ok()) return Fail("export", st, kExitUsage);
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
  if (!lg.graph.guards.empty()) {
    // ONNX has no way to check these; say so rather than export a silently specialized model.
    std::string sites;
    for (size_t i = 0; i < lg.graph.guards.size() && i < 5; ++i) {
      const auto& g = lg.graph.guards[i];
      sites += (i ? ", " : "") + g.op() + " at " + g.loc().file() + ":" + std::to_string(g.loc().line());
    }
    spdlog::warn("the ONNX model is specialized on {} value(s) the program's control flow read ({}{}); "
                 "inputs that would change them take the recorded path anyway",
                 lg.graph.guards.size(), sites, lg.graph.guards.size() > 5 ? ", ..." : "");
  }
  OnnxExportOptions oo;
  oo.opset = o.opset;
  oo.dynamic_batch = !o.static_batch;
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
  sub->footer(kExitStatusHelp);
  sub->callback([opts, exit_code] { *exit_code = RunExport(*opts); });
}

}  // namespace ivytrace::cli
