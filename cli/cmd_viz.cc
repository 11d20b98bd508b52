// ivytrace viz FILE -o OUT.dot|.svg: draw a region's graph.
#include "cli/common.h"
#include "core/util/atomic_file.h"
#include "core/viz/dot_writer.h"
#include "core/viz/render.h"

namespace ivytrace::cli {
namespace {

struct VizOptions {
  std::string file;
  std::string output;
  std::string region;
  bool optimize = false;
};

int RunViz(const VizOptions& o) {
  std::string format;
  const auto dot = o.output.rfind('.');
  if (dot != std::string::npos) format = o.output.substr(dot + 1);
  if (format != "dot" && format != "svg") {
    return Fail("viz", Status::InvalidArgument("output '" + o.output + "' must end in .dot or .svg"), kExitUsage);
  }
  Status st = CheckWritable(o.output);
  if (!st.ok()) return Fail("viz", st, kExitOutput);
  st = CheckNotSameFile(o.output, o.file, "the input");
  if (!st.ok()) return Fail("viz", st, kExitUsage);
  LoadedGraph& lg = CommandGraph();
  const PipelineOptions po;
  st = LoadForCommand(o.file, o.region, o.optimize ? &po : nullptr, &lg);
  if (!st.ok()) return Fail("viz", st, InputErrorCode(st));
  std::string text = GraphToDot(lg.graph);
  if (format == "svg") {
    std::string svg;
    st = RenderDot(text, "svg", &svg);
    if (!st.ok()) return Fail("viz", st, kExitInternal);
    text = std::move(svg);
  }
  st = WriteFileAtomically(o.output, text);
  if (!st.ok()) return Fail("viz", st, kExitOutput);
  return kExitOk;
}

}  // namespace

void SetupViz(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<VizOptions>();
  auto* sub = app.add_subcommand("viz", "Draw a region's graph as Graphviz DOT or SVG");
  sub->add_option("file", opts->file, "Trace or graph file")->required();
  sub->add_option("-o,--output", opts->output, "Output file: .dot or .svg")->required();
  sub->add_option("--region", opts->region, "Region to draw: NAME or NAME:K (default: the first)");
  sub->add_flag("--optimize", opts->optimize, "Run the default passes first when FILE is a trace");
  sub->footer(kExitStatusHelp);
  sub->callback([opts, exit_code] { *exit_code = RunViz(*opts); });
}

}  // namespace ivytrace::cli
