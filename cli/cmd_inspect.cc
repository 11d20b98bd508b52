// ivytrace inspect FILE: what a trace or graph holds (header, counts, regions, op histogram).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>

#include "cli/common.h"
#include "core/util/printable.h"
#include "core/inspect/trace_stats.h"
#include "core/ir/graph_printer.h"

namespace ivytrace::cli {
namespace {

struct InspectOptions {
  std::string file;
  bool json = false;
  bool graph = false;
  std::string region;
};

std::string HumanBytes(uint64_t b) {
  char buf[32];
  if (b >= (1u << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", b / 1048576.0);
  else if (b >= 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  return buf;
}

void PrintHistogram(const std::map<std::string, uint64_t>& ops) {
  std::vector<std::pair<std::string, uint64_t>> sorted(ops.begin(), ops.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return a.second > b.second; });
  std::printf("ops:\n");
  for (const auto& [name, count] : sorted) {
    std::printf("  %8llu  %s\n", static_cast<unsigned long long>(count), Printable(name).c_str());
  }
}

int InspectTrace(const InspectOptions& o) {
  TraceStats s;
  Status st = CollectTraceStats(o.file, &s);
  if (!st.ok()) return Fail("inspect", st, InputErrorCode(st));
  if (o.json) {
    nlohmann::json j;
    j["file"] = o.file;
    j["kind"] = "trace";
    j["bytes"] = s.bytes;
    j["complete"] = s.complete;
    j["producer"] = s.header.producer();
    nlohmann::json fw = nlohmann::json::object();
    for (const auto& f : s.header.frameworks()) fw[f.name()] = f.version();
    j["frameworks"] = fw;
    j["argv"] = std::vector<std::string>(s.header.argv().begin(), s.header.argv().end());
    j["records"] = s.records;
    j["op_events"] = s.op_events;
    j["tensor_records"] = s.tensor_records;
    j["tensor_bytes"] = s.tensor_bytes;
    j["guards"] = s.guards;
    j["shape_reads"] = s.shape_reads;
    j["threads"] = s.threads;
    j["ops"] = s.ops;
    nlohmann::json regions = nlohmann::json::array();
    for (const auto& r : s.regions) {
      regions.push_back({{"name", r.name}, {"instance", r.instance}, {"ops", r.ops}, {"inputs", r.inputs},
                         {"ended", r.ended}});
    }
    j["regions"] = regions;
    if (!s.footer_error.empty()) j["error"] = s.footer_error;
    j["stopped_by_limit"] = nullptr;
    if (s.stopped_by_limit) {
      const auto& h = s.limit;
      j["stopped_by_limit"] = {{"limit", h.kind() == v1::LimitHit::MAX_OPS ? "max_ops" : "max_bytes"},
                               {"value", h.value()},
                               {"ops_recorded", h.ops_recorded()},
                               {"op", h.op()},
                               {"file", h.file()},
                               {"line", h.line()}};
    }
    std::cout << j.dump(2, ' ', /*ensure_ascii=*/true, nlohmann::json::error_handler_t::replace) << "\n";
    return kExitOk;
  }
  std::printf("trace %s (%s, %s)\n", Printable(o.file).c_str(), HumanBytes(s.bytes).c_str(),
              s.complete ? "complete" : "no footer: the program stopped before the trace was closed");
  std::string fws;
  for (const auto& f : s.header.frameworks()) fws += (fws.empty() ? "" : ", ") + f.name() + " " + f.version();
  std::printf("  producer  %s%s\n", Printable(s.header.producer()).c_str(),
              fws.empty() ? "" : Printable(" (" + fws + ")").c_str());
  std::string argv;
  for (const auto& a : s.header.argv()) argv += (argv.empty() ? "" : " ") + a;
  if (!argv.empty()) std::printf("  program   %s\n", Printable(argv).c_str());
  std::printf("  records   %llu: %llu ops, %llu tensor values (%s), %llu guards, %llu shape reads\n",
              (unsigned long long)s.records, (unsigned long long)s.op_events,
              (unsigned long long)s.tensor_records, HumanBytes(s.tensor_bytes).c_str(),
              (unsigned long long)s.guards, (unsigned long long)s.shape_reads);
  if (!s.footer_error.empty()) std::printf("  error     %s\n", Printable(s.footer_error).c_str());
  if (s.stopped_by_limit) {
    std::printf("  stopped   at a recording limit: %s (the program ran on unrecorded)\n",
                Printable(DescribeLimit(s.limit)).c_str());
  }
  if (s.regions.empty()) std::printf("  regions   none (mark one with ivytrace.region)\n");
  else std::printf("  regions   %zu\n", s.regions.size());
  for (const auto& r : s.regions) {
    std::printf("    %s:%llu  %llu ops, %llu inputs%s\n", Printable(r.name).c_str(), (unsigned long long)r.instance,
                (unsigned long long)r.ops, (unsigned long long)r.inputs,
                r.ended ? "" : s.stopped_by_limit ? "  (not ended: cut by the limit)" : "  (not ended)");
  }
  PrintHistogram(s.ops);
  return kExitOk;
}

int InspectGraph(const InspectOptions& o) {
  LoadedGraph& lg = CommandGraph();
  Status st = LoadForCommand(o.file, o.region, /*optimize=*/nullptr, &lg);
  if (!st.ok()) return Fail("inspect", st, InputErrorCode(st));
  const Graph& g = lg.graph;
  std::map<std::string, uint64_t> ops;
  for (const auto& n : g.nodes) {
    if (!n.erased) ++ops[n.op];
  }
  if (o.json) {
    nlohmann::json j;
    j["file"] = o.file;
    j["kind"] = lg.kind == FileKind::kTrace ? "trace" : "graph";
    j["name"] = g.name;
    j["nodes"] = g.LiveNodeCount();
    j["constants"] = g.constants.size();
    j["ops"] = ops;
    nlohmann::json inputs = nlohmann::json::array();
    for (const auto& in : g.inputs) inputs.push_back(in.name());
    j["inputs"] = inputs;
    j["outputs"] = g.OutputValues().size();
    j["guards"] = g.guards.size();
    j["passes_applied"] = g.passes_applied;
    std::cout << j.dump(2, ' ', /*ensure_ascii=*/true, nlohmann::json::error_handler_t::replace) << "\n";
    return kExitOk;
  }
  if (o.graph || lg.kind == FileKind::kGraph) std::fputs(Printable(PrintGraph(g), /*keep_newlines=*/true).c_str(), stdout);
  if (lg.kind == FileKind::kGraph) {
    std::printf("graph %s: %zu nodes, %zu constants, passes: ", Printable(g.name).c_str(), g.LiveNodeCount(),
                g.constants.size());
    for (size_t i = 0; i < g.passes_applied.size(); ++i) std::printf("%s%s", i ? "," : "", Printable(g.passes_applied[i]).c_str());
    std::printf("\n");
    PrintHistogram(ops);
  }
  return kExitOk;
}

}  // namespace

void SetupInspect(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<InspectOptions>();
  auto* sub = app.add_subcommand("inspect", "Show what a trace or graph holds: header, counts, regions, op histogram");
  sub->add_option("file", opts->file, "Trace or graph file")->required();
  sub->add_flag("--json", opts->json, "Print one JSON object; its \"ops\" maps each op name to its count");
  sub->add_flag("--graph", opts->graph, "Print the region's graph, one op per line");
  sub->add_option("--region", opts->region, "Region to show with --graph: NAME or NAME:K (default: the first)");
  sub->footer(kExitStatusHelp);
  sub->callback([opts, exit_code] {
    FileKind kind;
    Status st = SniffFile(opts->file, &kind);
    if (!st.ok()) {
      *exit_code = Fail("inspect", st, InputErrorCode(st));
      return;
    }
    if (kind == FileKind::kTrace && !opts->graph) *exit_code = InspectTrace(*opts);
    else *exit_code = InspectGraph(*opts);
  });
}

}  // namespace ivytrace::cli
