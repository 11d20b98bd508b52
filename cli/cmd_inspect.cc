// ivytrace inspect FILE: what a trace or graph holds (header, counts, regions, op histogram).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>

#include "cli/artifact.h"
#include "cli/common.h"
#include "cli/exit_status.h"
#include "cli/graph_description.h"
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
    j["schema"] = "ivytrace.inspect.trace/1";
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
    std::cout << DescribeGraph(g, lg.kind == FileKind::kTrace ? "trace" : "graph", o.file).dump(2, ' ', /*ensure_ascii=*/true, nlohmann::json::error_handler_t::replace) << "\n";
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

// Plans and ONNX models: their description (cli/graph_description.h) as JSON, or a summary.
int InspectArtifact(const InspectOptions& o) {
  nlohmann::json d;
  Status st = DescribeFile(o.file, o.region, &d);
  if (!st.ok()) return Fail("inspect", st, InputErrorCode(st));
  if (o.json) {
    std::cout << d.dump(2) << "\n";
    return kExitOk;
  }
  const std::string kind = d["kind"];
  std::printf("%s %s: %s, %zu %s, %zu constants (%llu elements)\n", kind == "onnx" ? "ONNX model" : "plan",
              o.file.c_str(), d["name"].get<std::string>().c_str(), d["nodes"].size(), kind == "onnx" ? "nodes" : "steps",
              d["constants"].size(), (unsigned long long)d["parameters"]["elements"].get<uint64_t>());
  if (kind == "onnx") {
    std::printf("  opset %lld, producer %s\n", (long long)d["opset"].get<int64_t>(), d["producer"].get<std::string>().c_str());
  } else {
    std::printf("  framework %s, %llu slots, %zu guards\n", d["framework"].get<std::string>().c_str(),
                (unsigned long long)d["slots"].get<uint64_t>(), d["guards"].size());
  }
  for (const auto& in : d["inputs"]) {
    std::printf("  input  %s: %s\n", in["name"].get<std::string>().c_str(), in["tensors"].dump().c_str());
  }
  for (const auto& out : d.value("outputs", nlohmann::json::array())) std::printf("  output %s\n", out.dump().c_str());
  if (o.graph) {
    for (const auto& n : d["nodes"]) {
      std::printf("  %s%s%s\n", n["op"].get<std::string>().c_str(), n["args"].get<std::string>().c_str(),
                  n.contains("result") ? (" -> " + n["result"].get<std::string>()).c_str() : "");
    }
  }
  PrintHistogram(d["ops"].get<std::map<std::string, uint64_t>>());
  return kExitOk;
}

}  // namespace

void SetupInspect(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<InspectOptions>();
  auto* sub = app.add_subcommand("inspect", "Show what a trace, graph, plan or ONNX model holds: header, counts, regions, op histogram");
  sub->add_option("file", opts->file, "Trace, graph, plan or ONNX file")->required();
  sub->add_flag("--json", opts->json, "Print one JSON object: a trace's summary, or the whole graph (nodes, shapes, guards, modules) of a graph, plan, ONNX model or trace with --graph (schema in the README); \"ops\" maps each op to its count");
  sub->add_flag("--graph", opts->graph, "Print the region's graph, one op per line");
  sub->add_option("--region", opts->region, "Region to show with --graph: NAME or NAME:K (default: the first)");
  sub->footer(ExitStatusFooter({kExitOk, kExitUsage, kExitBadInput, kExitInternal}));
  sub->callback([opts, exit_code] {
    FileKind kind;
    Status st = SniffArtifact(opts->file, &kind);
    if (!st.ok()) {
      *exit_code = Fail("inspect", st, InputErrorCode(st));
      return;
    }
    if (kind == FileKind::kPlan || kind == FileKind::kOnnx) *exit_code = InspectArtifact(*opts);
    else if (kind == FileKind::kTrace && !opts->graph) *exit_code = InspectTrace(*opts);
    else *exit_code = InspectGraph(*opts);
  });
}

}  // namespace ivytrace::cli
