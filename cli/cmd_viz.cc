// ivytrace viz FILE [FILE2] -o OUT.html|.svg|.dot: draw a region's graph, or the difference
// between two graphs (HTML only).
#include "cli/common.h"
#include "core/util/atomic_file.h"
#include "core/viz/dot_writer.h"
#include "core/viz/graph_diff.h"
#include "core/viz/html_writer.h"
#include "core/viz/render.h"
#include "core/viz/view_model.h"

namespace ivytrace::cli {
namespace {

struct VizOptions {
  std::string file;
  std::string against;  // second file: draw the difference file -> against
  std::string output;
  std::string region;
  bool optimize = false;
  bool show_constants = false;
  size_t max_nodes = 0;  // 0: the format's default budget
};

// Node budgets. Graphviz's dot layout is superlinear: 20k nodes took 23 s and 1M crashed it
// (exit 139 after 6.6 GB), so SVG stops at 5000 boxes. A DOT file is only text, but whoever lays
// it out meets the same wall. The HTML viewer opens collapsed by module and lays out only what
// is expanded; what bounds it is writing and parsing the embedded data: measured on a recorded
// trace of 1M ops, `viz` took 19 s and 1.9 GB and Chromium drew it collapsed 4.8 s after opening
// (bench/bench_viewer.py --flat 1000000).
size_t DefaultBudget(const std::string& format) {
  if (format == "svg") return 5000;
  if (format == "dot") return 20000;
  return 1500000;
}

int RunViz(const VizOptions& o) {
  std::string format;
  const auto dot = o.output.rfind('.');
  if (dot != std::string::npos) format = o.output.substr(dot + 1);
  if (format != "dot" && format != "svg" && format != "html") {
    return Fail("viz", Status::InvalidArgument("output '" + o.output + "' must end in .html, .svg or .dot"), kExitUsage);
  }
  if (!o.against.empty() && format != "html") {
    return Fail("viz", Status::InvalidArgument("a diff of two graphs is drawn only as .html (output '" + o.output + "')"),
                kExitUsage);
  }
  Status st = CheckWritable(o.output);
  if (!st.ok()) return Fail("viz", st, kExitOutput);
  st = CheckNotSameFile(o.output, o.file, "the input");
  if (!st.ok()) return Fail("viz", st, kExitUsage);
  LoadedGraph& lg = CommandGraph();
  const PipelineOptions po;
  st = LoadForCommand(o.file, o.region, o.optimize ? &po : nullptr, &lg);
  if (!st.ok()) return Fail("viz", st, InputErrorCode(st));
  // The budget is checked on the graph, before the view model (which holds a few strings per
  // node) is built: a million-node graph is refused without building it.
  const size_t budget = o.max_nodes ? o.max_nodes : DefaultBudget(format);
  size_t drawn = lg.graph.LiveNodeCount() + lg.graph.InputValues().size() + lg.graph.OutputValues().size();
  if (format != "html" && o.show_constants) {
    for (const Value& v : lg.graph.values) drawn += v.kind == v1::CONSTANT_VALUE;
  }
  if (drawn > budget) {
    std::string advice = format == "html"
        ? "draw one region (--region NAME) or a smaller part of the program, or raise --max-nodes (the browser must "
          "hold every node in memory)"
        : "use -o OUT.html, which opens large graphs collapsed by module, or raise --max-nodes (Graphviz's layout "
          "time and memory grow faster than the graph; it crashed on 100k nodes)";
    return Fail("viz", Status::InvalidArgument("'" + o.file + "' has " + std::to_string(drawn) + " nodes to draw; ." +
                                               format + " output is limited to " + std::to_string(budget) + ": " + advice),
                kExitUsage);
  }
  const ViewModel vm = BuildViewModel(lg.graph);
  const DotOptions dot_options{o.show_constants};
  std::string text;
  if (format == "html") {
    if (o.against.empty()) {
      text = ViewModelToHtml(vm, nullptr);
    } else {
      static LoadedGraph* other = new LoadedGraph();  // never freed, like CommandGraph()
      st = LoadForCommand(o.against, o.region, o.optimize ? &po : nullptr, other);
      if (!st.ok()) return Fail("viz", st, InputErrorCode(st));
      GraphDiff diff = DiffViewModels(vm, BuildViewModel(other->graph));
      diff.a_name = o.file;
      diff.b_name = o.against;
      if (diff.merged.nodes.size() > budget) {
        return Fail("viz", Status::InvalidArgument("the diff has " + std::to_string(diff.merged.nodes.size()) +
                                                   " nodes to draw; .html output is limited to " +
                                                   std::to_string(budget) + " (--max-nodes)"),
                    kExitUsage);
      }
      text = ViewModelToHtml(diff.merged, &diff);
    }
  } else {
    text = ViewModelToDot(vm, dot_options);
    if (format == "svg") {
      std::string svg;
      st = RenderDot(text, "svg", &svg);
      if (!st.ok()) return Fail("viz", st, kExitInternal);
      text = std::move(svg);
    }
  }
  st = WriteFileAtomically(o.output, text);
  if (!st.ok()) return Fail("viz", st, kExitOutput);
  return kExitOk;
}

}  // namespace

void SetupViz(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<VizOptions>();
  auto* sub = app.add_subcommand(
      "viz", "Draw a region's graph: an interactive HTML viewer (.html), or Graphviz SVG/DOT. With two files, an HTML "
             "diff of the first (before) against the second (after)");
  sub->add_option("file", opts->file, "Trace or graph file")->required();
  sub->add_option("against", opts->against, "Second trace or graph file: draw the difference (HTML only)");
  sub->add_option("-o,--output", opts->output, "Output file: .html, .svg or .dot")->required();
  sub->add_option("--region", opts->region, "Region to draw: NAME or NAME:K (default: the first)");
  sub->add_flag("--optimize", opts->optimize, "Run the default passes first when FILE is a trace");
  sub->add_flag("--show-constants", opts->show_constants, "SVG/DOT: draw constants and parameters as boxes");
  sub->add_option("--max-nodes", opts->max_nodes,
                  "Refuse graphs with more nodes than this (default: 5000 for .svg, 20000 for .dot, 1500000 for .html)");
  sub->footer(kExitStatusHelp);
  sub->callback([opts, exit_code] { *exit_code = RunViz(*opts); });
}

}  // namespace ivytrace::cli
