// ivytrace export FILE --to onnx|plan -o OUT
#include <climits>
#include <cstring>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <spdlog/spdlog.h>

#include "cli/common.h"
#include "core/export/onnx/numpy_write_backs.h"
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
  std::string framework;  // plan: replay in this framework (retargeting)
  int opset = 17;
  bool no_optimize = false;
  bool static_batch = false;
  bool static_shapes = false;
  bool allow_specialized = false;
  bool allow_empty = false;
  bool progress = false;
  PipelineFlags flags;
};

int RunExport(const ExportOptions& o) {
  if (!o.framework.empty() && o.to != "plan") {
    return Fail("export", Status::InvalidArgument("--framework applies to --to plan only"), kExitUsage);
  }
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
    PlanOptions plan_options;
    plan_options.target = o.framework;
    st = ExportPlanFile(lg.graph, o.output, plan_options);
    if (!st.ok()) return Fail("export", st, st.kind() == Status::Kind::kUnsupported ? kExitUnsupported : kExitOutput);
    return kExitOk;
  }
  OnnxExportOptions oo;
  {
    // NumPy writes through views: every other array on the written memory gets its new value
    // computed (numpy_write_backs.h); a plan needs none of this, NumPy's memory does it.
    size_t carried = 0;
    st = CarryNumpyWritesBack(&lg.graph, &carried);
    if (!st.ok()) return Fail("export", st, kExitInternal);
    // An ONNX model's inputs have fixed ranks: the guards on the inputs' ranks hold in it. A
    // graph specialized on its inputs' shapes (JAX) is exported with those shapes, static.
    const bool static_inputs = DropInputShapeGuards(&lg.graph);
    InputDimsOptions dio;
    dio.all_static = o.static_shapes || static_inputs;
    dio.static_batch = o.static_batch;
    const InputDims dims = ChooseInputDims(&lg.graph, dio);
    DropGuardsOnStaticDims(&lg.graph, dims);
    // Shape arithmetic on static dims is what it was while recording: folded into constants. The
    // rest is lowered (ivytrace.sym.* -> Shape/Gather/integer ops), so the model follows its
    // inputs' shapes, and the guards on it become checks inside the model.
    size_t replaced = 0;
    st = SpecializeStaticSymbols(&lg.graph, dims, &replaced);
    if (!st.ok()) return Fail("export", st, kExitUnsupported);
    if (replaced) {
      PassResult pr;
      st = ConstantFold(PassOptions{}).Run(&lg.graph, &pr);
      if (st.ok()) st = DeadCodeElimination().Run(&lg.graph, &pr);
      if (!st.ok()) return Fail("export", st, kExitInternal);
      lg.graph.Compact();
    }
    oo.dim_groups = dims.group;
    oo.dynamic_batch = !dio.all_static && !o.static_batch;
  }
  oo.opset = o.opset;
  oo.allow_specialized = o.allow_specialized;
  if (!lg.graph.guards.empty()) {
    const auto described = DescribeGuards(lg.graph);
    std::string list;
    for (const auto& g : described) list += "\n  " + g;
    spdlog::info("the ONNX model is specialized on {} guard(s), written into its metadata_props; those whose "
                 "value the graph computes are checked by the model:{}", described.size(), list);
  }
  // On an arena: a million-node model is millions of small messages and strings, and an arena
  // makes building them cheap (bench/bench_scale.py). Like the graph (CommandGraph), it is left
  // to the OS at exit: freeing it was 4% of exporting a million nodes.
  static google::protobuf::Arena* const arena = new google::protobuf::Arena();
  onnx::ModelProto& model = *google::protobuf::Arena::CreateMessage<onnx::ModelProto>(arena);
  oo.take_constant_data = &lg.graph.constants;   // the graph is not read after the export
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
  sub->add_option("--framework", opts->framework,
                  "Plan: replay in this framework instead of the recorded one (torch, numpy, jax); ops it "
                  "does not implement are refused")
      ->check(CLI::IsMember({"torch", "numpy", "jax"}));
  sub->add_option("--opset", opts->opset, "ONNX opset (default 17, the newest libonnx 1.12 checks)")
      ->check(CLI::Range(13, 17));
  sub->add_flag("--no-optimize", opts->no_optimize, "Export a trace's graph without running the default passes");
  AddPipelineFlags(sub, &opts->flags);
  sub->add_flag("--allow-empty", opts->allow_empty,
                "Export a trace with no region, or a region with no inputs or no outputs (refused by default)");
  sub->add_flag("--progress", opts->progress, "Report each phase on stderr, also when not on a terminal");
  sub->add_flag("--static-batch", opts->static_batch, "ONNX: keep the recorded batch size (dim 0) instead of a symbolic one");
  sub->add_flag("--static", opts->static_shapes,
                "ONNX: export the recorded shapes: every input dim fixed, shape arithmetic folded into constants");
  sub->add_flag("--allow-specialized", opts->allow_specialized,
                "ONNX: export a graph that has guards (refused by default, exit 5); the guards go into the "
                "model's metadata_props");
  sub->footer(ExitStatusFooter({kExitOk, kExitUsage, kExitBadInput, kExitOutput, kExitUnsupported, kExitInternal}));
  sub->callback([opts, exit_code] { *exit_code = RunExport(*opts); });
}

}  // namespace ivytrace::cli
