// ivytrace optimize TRACE -o OUT: build the graph of a region and run the pass pipeline.
#include <chrono>
#include <cstdio>

#include "cli/common.h"
#include "cli/exit_status.h"
#include "cli/progress.h"
#include "core/io/graph_file.h"
#include "core/ir/graph_printer.h"
#include "core/util/atomic_file.h"

namespace ivytrace::cli {
namespace {

struct OptimizeOptions {
  std::string file;
  std::string output;
  std::string region;
  std::vector<std::string> passes;
  std::vector<std::string> disable;
  bool report = false;
  bool verify = false;
  bool list = false;
  std::vector<std::string> print_after;
  PipelineFlags flags;
  bool progress = false;
};

int RunOptimize(const OptimizeOptions& o) {
  if (o.list) {
    for (const auto& p : RegisteredPasses()) std::printf("%-16s %s\n", p.name.c_str(), p.description.c_str());
    std::printf("default pipeline: %s\n", DescribePipeline(DefaultPipeline()).c_str());
    std::printf("(...)* runs again while its last round removed or added nodes, at most %d rounds\n", kMaxRounds);
    return kExitOk;
  }
  if (o.file.empty() || o.output.empty()) {
    return Fail("optimize", Status::InvalidArgument("give an input FILE and -o OUT (see --help)"), kExitUsage);
  }
  Status st = CheckWritable(o.output);
  if (!st.ok()) return Fail("optimize", st, kExitOutput);
  st = CheckNotSameFile(o.output, o.file, "the input");
  if (!st.ok()) return Fail("optimize", st, kExitUsage);
  using Clock = std::chrono::steady_clock;
  const auto ms_since = [](Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  };
  auto t = Clock::now();
  Progress progress = PhaseProgress("optimize", o.file, o.progress);
  progress.Report("reading " + o.file + " and building the graph", /*now=*/true);
  LoadedGraph& lg = CommandGraph();
  st = LoadForCommand(o.file, o.region, /*optimize=*/nullptr, &lg);
  if (!st.ok()) return Fail("optimize", st, InputErrorCode(st));
  PipelineOptions po;
  po.passes = o.passes;
  po.disable = o.disable;
  po.verify = o.verify;
  po.print_after = o.print_after;
  po.on_print_after = [](const std::string& pass, const Graph& g) {
    std::printf("// after %s\n%s", pass.c_str(), PrintGraph(g).c_str());
  };
  ApplyPipelineFlags(o.flags, &po);
  const double load_ms = ms_since(t);
  std::vector<PassReport> report;
  progress.Report(Thousands(lg.graph.LiveNodeCount()) + " nodes; running the passes", /*now=*/true);
  st = RunPipeline(po, &lg.graph, &report);
  if (!st.ok()) return Fail("optimize", st, st.kind() == Status::Kind::kInvalidArgument ? kExitUsage : kExitInternal);
  t = Clock::now();
  progress.Report(Thousands(lg.graph.LiveNodeCount()) + " nodes left; writing " + o.output, /*now=*/true);
  st = WriteGraphFile(o.output, lg.graph);  // streamed from the graph, no v1::Graph copy
  if (!st.ok()) return Fail("optimize", st, kExitOutput);
  const double write_ms = ms_since(t);
  if (o.report) {
    std::printf("%-16s %8s %8s %8s %8s %10s\n", "pass", "before", "after", "removed", "added", "ms");
    for (const auto& r : report) {
      const std::string name = r.round > 1 ? r.pass + "#" + std::to_string(r.round) : r.pass;
      std::printf("%-16s %8zu %8zu %8zu %8zu %10.3f\n", name.c_str(), r.nodes_before, r.nodes_after,
                  r.removed, r.added, r.seconds * 1e3);
    }
    double passes_ms = 0;
    for (const auto& r : report) passes_ms += r.seconds * 1e3;
    // A shape read in a region gives the program symbolic ints: what reaches the graph is an
    // ivytrace.sym.* op, what decides control flow a guard (python/ivytrace/recorder/sym.py).
    std::printf("shape reads: %zu (symbolic: ivytrace.sym.* ops where they reach the graph, guards where "
                "they decide control flow)\n", lg.build.shape_reads_dropped);
    std::printf("time: read + build %.1f ms, passes %.1f ms, write %.1f ms\n", load_ms, passes_ms, write_ms);
  }
  return kExitOk;
}

}  // namespace

void SetupOptimize(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<OptimizeOptions>();
  auto* sub = app.add_subcommand("optimize", "Build a region's graph from a trace and optimize it; writes a graph file");
  sub->add_option("file", opts->file, "Trace (or graph) file");
  sub->add_option("-o,--output", opts->output, "Graph file to write");
  sub->add_option("--region", opts->region, "Region to optimize: NAME or NAME:K (default: the first)");
  sub->add_option("--passes", opts->passes, "Passes to run, once each in this order, instead of the default pipeline")->delimiter(',');
  sub->add_option("--disable", opts->disable, "Passes to leave out")->delimiter(',');
  AddPipelineFlags(sub, &opts->flags);
  sub->add_flag("--report", opts->report, "Print nodes removed/added and time per pass");
  sub->add_flag("--verify", opts->verify, "Check the IR's invariants after every pass");
  sub->add_option("--print-after", opts->print_after, "Print the graph after these passes, after each round ('all' = every pass)")
      ->delimiter(',');
  sub->add_flag("--progress", opts->progress,
                "Report each phase on stderr, also when stderr is not a terminal or the input is small");
  sub->add_flag("--list-passes", opts->list, "List the passes and the default pipeline");
  sub->footer(ExitStatusFooter({kExitOk, kExitUsage, kExitBadInput, kExitOutput, kExitUnsupported, kExitInternal}));
  sub->callback([opts, exit_code] { *exit_code = RunOptimize(*opts); });
}

}  // namespace ivytrace::cli
