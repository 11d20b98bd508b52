// ivytrace export FILE --to onnx|plan -o OUT
#include <climits>
#include <cstring>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <spdlog/spdlog.h>

#include "cli/common.h"
#include "cli/exit_status.h"
#include "cli/progress.h"
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
  bool allow_empty = false;
  bool progress = false;
  PipelineFlags flags;
};

int RunExport(const ExportOptions& o) {
  Status st = CheckWritable(o.output);
  if (!st.ok()) return Fail("export", st, kExitOutput);
  Progress progress = PhaseProgress("export", o.file, o.progress);
  progress.Report("reading " + o.file + (o.no_optimize ? "" : ", building and optimizing the graph"), /*now=*/true);
  st = CheckNotSameFile(o.output, o.file, "the input");
  if (!st.ok()) return Fail("export", st, kExitUsage);
  LoadedGraph& lg = CommandGraph();
  PipelineOptions po;
  ApplyPipelineFlags(o.flags, &po);
  st = LoadForCommand(o.file, o.region, o.no_optimize ? nullptr : &po, &lg);
  if (!st.ok()) return Fail("export", st, InputErrorCode(st));
  // A CI gate must not pass on a model of nothing: an unmarked trace or an empty region.
  if (!o.allow_empty) {
    std::string empty = lg.kind == FileKind::kTrace && lg.build.region_chosen.empty() ? "marks no region"
                        : lg.graph.inputs.empty()                                      ? "has a region with no inputs"
                        : lg.graph.OutputValues().empty()                              ? "has a region with no outputs"
                                                                                       : "";
    if (!empty.empty()) {
      return Fail("export", Status::Unsupported("'" + o.file + "' " + empty + ": nothing to export. Mark the model's "
                  "part with `with ivytrace.region(\"name\", inputs={\"x\": x}) as r: ...; r.set_result(y)` or "
                  "`@ivytrace.region`, or record with ivytrace.trace_graph (--allow-empty exports it anyway)"),
                  kExitUnsupported);
    }
  }
  progress.Report("lowering " + Thousands(lg.graph.LiveNodeCount()) + " nodes and writing " + o.output, /*now=*/true);
  if (o.to == "plan") {
    // Lowered and written step by step (no whole v1::Plan); Unsupported comes before any write.
    st = ExportPlanFile(lg.graph, o.output);
    if (!st.ok()) return Fail("export", st, st.kind() == Status::Kind::kUnsupported ? kExitUnsupported : kExitOutput);
    return kExitOk;
  }
  bool static_inputs = false;
  {
    // An ONNX model's inputs have fixed ranks: the guards on the inputs' ranks hold in it. A
    // graph specialized on its inputs' shapes (JAX) is exported with those shapes, static.
    static_inputs = DropInputShapeGuards(&lg.graph);
    DropGuardsOnStaticDims(&lg.graph, /*dynamic_dim0=*/!o.static_batch && !static_inputs);
    // The ONNX exporter does not lower shape arithmetic yet: the model takes the recorded shapes
    // and the ivytrace.sym.* ops go. The guards on such values stay in the list (refused below
    // without --allow-specialized, else written into metadata_props).
    size_t replaced = 0;
    std::vector<v1::Guard> shape_guards;
    st = SpecializeSymbols(&lg.graph, &replaced, &shape_guards);
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
    for (auto& g : shape_guards) {
      g.clear_tensor();   // its value is gone from the graph; the guard is reported, not checked
      lg.graph.guards.push_back(std::move(g));
    }
  }
  OnnxExportOptions oo;
  oo.opset = o.opset;
  oo.dynamic_batch = !o.static_batch && !static_inputs;
  oo.allow_specialized = o.allow_specialized;
  if (o.allow_specialized && !lg.graph.guards.empty()) {
    spdlog::warn("the ONNX model is specialized on {} guard(s) (written into its metadata_props); inputs that "
                 "would fail them take the recorded path anyway", lg.graph.guards.size());
  }
  // On an arena: a million-node model is millions of small messages and strings, and an arena
  // makes building them cheap (bench/bench_scale.py). Like the graph (CommandGraph), it is left
  // to the OS at exit: freeing it was 4% of exporting a million nodes.
  static google::protobuf::Arena* const arena = new google::protobuf::Arena();
  onnx::ModelProto& model = *google::protobuf::Arena::CreateMessage<onnx::ModelProto>(arena);
  st = ExportOnnx(lg.graph, oo, &model);
  if (!st.ok()) return Fail("export", st, kExitUnsupported);
  // Streamed into the file rather than serialized into a string first (that string was 108 MB at a
  // million nodes, on top of the model).
  const size_t size = model.ByteSizeLong();
  if (size > static_cast<size_t>(INT_MAX)) {
    return Fail("export", Status::Unsupported("the ONNX model is too large to serialize (2 GB limit)"), kExitUnsupported);
  }
  st = WriteFileAtomically(o.output, [&](int fd) -> Status {
    google::protobuf::io::FileOutputStream file(fd);
    bool coded_error = false;
    {
      google::protobuf::io::CodedOutputStream out(&file);
      model.SerializeWithCachedSizes(&out);
      coded_error = out.HadError();
    }  // flushes what it buffered into `file`
    if (coded_error || !file.Flush()) {
      return Status::IOError("cannot write '" + o.output + "': " + std::strerror(file.GetErrno()));
    }
    return Status::Ok();
  });
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
  sub->add_flag("--allow-empty", opts->allow_empty,
                "Export a trace with no region, or a region with no inputs or no outputs (refused by default)");
  sub->add_flag("--progress", opts->progress, "Report each phase on stderr, also when not on a terminal");
  sub->add_flag("--static-batch", opts->static_batch, "ONNX: keep the recorded batch size instead of a symbolic one");
  sub->add_flag("--allow-specialized", opts->allow_specialized,
                "ONNX: export a graph that has guards (refused by default, exit 5); the guards go into the "
                "model's metadata_props");
  sub->footer(ExitStatusFooter({kExitOk, kExitUsage, kExitBadInput, kExitOutput, kExitUnsupported, kExitInternal}));
  sub->callback([opts, exit_code] { *exit_code = RunExport(*opts); });
}

}  // namespace ivytrace::cli
