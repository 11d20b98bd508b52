// ivytrace diff A B: what changed between two traces, graphs, ONNX models, plans or baselines
// written by `inspect --json`, and gates (--fail-on) a CI job can fail on.
//
// Both sides are first described as `inspect --json` documents (cli/graph_description.h); the
// comparison works on those, so a committed baseline compares like the file it was made from.
// Nodes are matched by (module path, canonical op, position): the K-th node with a given module
// and op in A pairs with the K-th such node in B. Matching is linear in the nodes (no edit
// distance over a million-node graph); a node inserted in a module shows as added there, and
// later nodes of the same module and op pair up one place off, showing as changed only if their
// signature or shapes differ.
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>

#include "cli/artifact.h"
#include "cli/common.h"
#include "cli/exit_status.h"
#include "cli/graph_description.h"

namespace ivytrace::cli {
namespace {

using nlohmann::json;

inline constexpr const char* kDiffSchema = "ivytrace.diff/1";

struct DiffOptions {
  std::string a, b;
  std::string region;
  bool json = false;
  std::string fail_on;
  int max_lines = 20;
};

}  // namespace

namespace {

std::string NodeKey(const json& n) {
  const std::string canonical = n.value("canonical", std::string());
  return n.value("module", std::string()) + '\x1f' + (canonical.empty() ? n.value("op", std::string()) : canonical);
}

std::string NodeText(const json& n) {
  std::string s = n.value("op", std::string());
  const std::string module = n.value("module", std::string());
  if (!module.empty()) s += " [" + module + "]";
  s += n.value("args", std::string());
  if (n.contains("outputs") && !n["outputs"].empty()) s += " -> " + n["outputs"].dump();
  const std::string loc = n.value("loc", std::string());
  if (!loc.empty()) s += "  # " + loc;
  return s;
}

json Counts(const json& d, const char* key) { return d.contains(key) ? d[key] : json::object(); }

json Compare(const json& a, const json& b) {
  json r;
  r["schema"] = kDiffSchema;
  auto side = [](const json& d) {
    json s = {{"file", d.value("file", std::string())}, {"kind", d.value("kind", std::string())}};
    if (d.contains("baseline_of")) s["baseline_of"] = d["baseline_of"];
    return s;
  };
  r["a"] = side(a);
  r["b"] = side(b);
  const json& an = a["nodes"];
  const json& bn = b["nodes"];
  std::map<std::string, std::vector<size_t>> by_key;
  for (size_t i = 0; i < an.size(); ++i) by_key[NodeKey(an[i])].push_back(i);
  std::map<std::string, size_t> seen;
  std::vector<bool> a_matched(an.size(), false);
  json added = json::array(), removed = json::array(), changed = json::array();
  bool shape_change = false;
  for (size_t j = 0; j < bn.size(); ++j) {
    const std::string key = NodeKey(bn[j]);
    const size_t k = seen[key]++;
    auto it = by_key.find(key);
    if (it == by_key.end() || k >= it->second.size()) {
      added.push_back({{"b_index", j}, {"node", bn[j]}});
      continue;
    }
    const size_t i = it->second[k];
    a_matched[i] = true;
    json fields = json::array();
    for (const char* f : {"op", "args", "outputs"}) {
      if (an[i].value(f, json()) != bn[j].value(f, json())) fields.push_back(f);
    }
    if (!fields.empty()) {
      if (an[i].value("outputs", json()) != bn[j].value("outputs", json())) shape_change = true;
      changed.push_back({{"a_index", i}, {"b_index", j}, {"fields", fields}, {"a", an[i]}, {"b", bn[j]}});
    }
  }
  for (size_t i = 0; i < an.size(); ++i) {
    if (!a_matched[i]) removed.push_back({{"a_index", i}, {"node", an[i]}});
  }
  r["added"] = added;
  r["removed"] = removed;
  r["changed"] = changed;
  const double na = static_cast<double>(an.size()), nb = static_cast<double>(bn.size());
  r["nodes"] = {{"a", an.size()}, {"b", bn.size()}, {"delta", static_cast<int64_t>(bn.size()) - static_cast<int64_t>(an.size())},
                {"percent", na > 0 ? (nb - na) * 100.0 / na : (nb > 0 ? 100.0 : 0.0)}};
  json op_deltas = json::object();
  const json ao = Counts(a, "ops"), bo = Counts(b, "ops");
  std::map<std::string, std::pair<int64_t, int64_t>> ops;
  for (auto& [op, c] : ao.items()) ops[op].first = c.get<int64_t>();
  for (auto& [op, c] : bo.items()) ops[op].second = c.get<int64_t>();
  for (auto& [op, c] : ops) {
    if (c.first != c.second) op_deltas[op] = {{"a", c.first}, {"b", c.second}, {"delta", c.second - c.first}};
  }
  r["op_deltas"] = op_deltas;
  const json pa = a.value("parameters", json::object()), pb = b.value("parameters", json::object());
  const int64_t ea = pa.value("elements", int64_t{0}), eb = pb.value("elements", int64_t{0});
  r["parameters"] = {{"a", ea}, {"b", eb}, {"delta", eb - ea},
                     {"tensors_a", pa.value("tensors", int64_t{0})}, {"tensors_b", pb.value("tensors", int64_t{0})},
                     {"percent", ea > 0 ? (eb - ea) * 100.0 / ea : (eb > 0 ? 100.0 : 0.0)}};
  // Guards compare as multisets of (op, observed value); where they sit in the source does not count.
  std::map<std::string, std::vector<json>> ga, gb;
  for (const auto& g : a.value("guards", json::array())) ga[g.value("op", "") + "=" + g.value("observed", "")].push_back(g);
  for (const auto& g : b.value("guards", json::array())) gb[g.value("op", "") + "=" + g.value("observed", "")].push_back(g);
  json g_added = json::array(), g_removed = json::array();
  for (auto& [k, v] : gb) {
    const size_t have = ga.count(k) ? ga[k].size() : 0;
    for (size_t i = have; i < v.size(); ++i) g_added.push_back(v[i]);
  }
  for (auto& [k, v] : ga) {
    const size_t have = gb.count(k) ? gb[k].size() : 0;
    for (size_t i = have; i < v.size(); ++i) g_removed.push_back(v[i]);
  }
  r["guards"] = {{"added", g_added}, {"removed", g_removed}};
  auto types = [](const json& d, const char* key) {
    json t = json::array();
    for (const auto& x : d.value(key, json::array())) t.push_back(x.contains("tensors") ? x["tensors"] : x);
    return t;
  };
  const bool inputs_changed = types(a, "inputs") != types(b, "inputs");
  const bool outputs_changed = types(a, "outputs") != types(b, "outputs");
  r["inputs_changed"] = inputs_changed;
  r["outputs_changed"] = outputs_changed;
  r["shape_change"] = shape_change || inputs_changed || outputs_changed;
  r["identical"] = added.empty() && removed.empty() && changed.empty() && op_deltas.empty() && ea == eb &&
                   g_added.empty() && g_removed.empty() && !inputs_changed && !outputs_changed;
  return r;
}

// One --fail-on item: does it trip on this diff? `why` says what it saw.
Status EvaluateGate(const std::string& gate, const json& d, bool* tripped, std::string* why) {
  static const std::regex kThreshold(R"(^(nodes|params)([<>])([+-]?)([0-9]+(\.[0-9]+)?)(%?)$)");
  std::smatch m;
  if (gate == "added-ops") {
    *tripped = !d["added"].empty();
    *why = std::to_string(d["added"].size()) + " node(s) added";
  } else if (gate == "removed-ops") {
    *tripped = !d["removed"].empty();
    *why = std::to_string(d["removed"].size()) + " node(s) removed";
  } else if (gate == "changed-nodes") {
    *tripped = !d["changed"].empty();
    *why = std::to_string(d["changed"].size()) + " node(s) changed";
  } else if (gate == "shape-change") {
    *tripped = d["shape_change"].get<bool>();
    *why = *tripped ? "a node's, input's or output's shape or dtype changed" : "no shape changed";
  } else if (gate == "guards") {
    const size_t n = d["guards"]["added"].size() + d["guards"]["removed"].size();
    *tripped = n > 0;
    *why = std::to_string(n) + " guard(s) added or removed";
  } else if (gate == "params") {
    *tripped = d["parameters"]["delta"].get<int64_t>() != 0;
    *why = "parameter elements " + std::to_string(d["parameters"]["delta"].get<int64_t>()) + " changed";
  } else if (std::regex_match(gate, m, kThreshold)) {
    const json& counts = m[1] == "nodes" ? d["nodes"] : d["parameters"];
    const bool percent = m[6] == "%";
    double limit = std::stod(m[4]);
    if (m[3] == "-") limit = -limit;
    const double value = percent ? counts["percent"].get<double>() : static_cast<double>(counts["delta"].get<int64_t>());
    *tripped = m[2] == ">" ? value > limit : value < limit;
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s changed by %+g%s (limit %s%s%g%s)", m[1].str().c_str(), value, percent ? "%" : "",
                  m[2].str().c_str(), limit >= 0 ? "+" : "", limit, percent ? "%" : "");
    *why = buf;
  } else {
    return Status::InvalidArgument("--fail-on: unknown gate '" + gate +
                                   "' (expected added-ops, removed-ops, changed-nodes, shape-change, guards, params, "
                                   "or nodes/params with >+N, >+N%, <-N, <-N%)");
  }
  return Status::Ok();
}

void PrintNodes(const char* title, const char* mark, const json& list, const char* key, int max_lines) {
  if (list.empty()) return;
  std::printf("  %s %zu node(s):\n", title, list.size());
  int shown = 0;
  for (const auto& e : list) {
    if (shown++ == max_lines) {
      std::printf("    ... %zu more (--json lists all)\n", list.size() - max_lines);
      break;
    }
    std::printf("    %s #%llu %s\n", mark, static_cast<unsigned long long>(e[key].get<uint64_t>()), NodeText(e["node"]).c_str());
  }
}

void PrintText(const json& d, int max_lines) {
  auto side = [](const json& s) {
    std::string kind = s["kind"].get<std::string>();
    if (s.contains("baseline_of")) kind = "baseline of " + s["baseline_of"].get<std::string>() + ", a " + kind;
    return s["file"].get<std::string>() + " (" + kind + ")";
  };
  std::printf("diff %s %s\n", side(d["a"]).c_str(), side(d["b"]).c_str());
  const auto& n = d["nodes"];
  std::printf("  nodes       %lld -> %lld (%+lld, %+.1f%%)\n", (long long)n["a"].get<int64_t>(), (long long)n["b"].get<int64_t>(),
              (long long)n["delta"].get<int64_t>(), n["percent"].get<double>());
  const auto& p = d["parameters"];
  std::printf("  parameters  %lld -> %lld elements (%+lld) in %lld -> %lld tensors\n", (long long)p["a"].get<int64_t>(),
              (long long)p["b"].get<int64_t>(), (long long)p["delta"].get<int64_t>(), (long long)p["tensors_a"].get<int64_t>(),
              (long long)p["tensors_b"].get<int64_t>());
  if (d["inputs_changed"].get<bool>()) std::printf("  inputs      changed (names, dtypes or shapes)\n");
  if (d["outputs_changed"].get<bool>()) std::printf("  outputs     changed (dtypes or shapes)\n");
  PrintNodes("added", "+", d["added"], "b_index", max_lines);
  PrintNodes("removed", "-", d["removed"], "a_index", max_lines);
  if (!d["changed"].empty()) {
    std::printf("  changed %zu node(s):\n", d["changed"].size());
    int shown = 0;
    for (const auto& c : d["changed"]) {
      if (shown++ == max_lines) {
        std::printf("    ... %zu more (--json lists all)\n", d["changed"].size() - max_lines);
        break;
      }
      std::string fields;
      for (const auto& f : c["fields"]) fields += (fields.empty() ? "" : ",") + f.get<std::string>();
      std::printf("    ~ #%llu -> #%llu (%s)\n      - %s\n      + %s\n", (unsigned long long)c["a_index"].get<uint64_t>(),
                  (unsigned long long)c["b_index"].get<uint64_t>(), fields.c_str(), NodeText(c["a"]).c_str(),
                  NodeText(c["b"]).c_str());
    }
  }
  if (!d["op_deltas"].empty()) {
    std::printf("  op counts:\n");
    for (auto& [op, c] : d["op_deltas"].items()) {
      std::printf("    %+5lld  %s (%lld -> %lld)\n", (long long)c["delta"].get<int64_t>(), op.c_str(),
                  (long long)c["a"].get<int64_t>(), (long long)c["b"].get<int64_t>());
    }
  }
  for (const auto& g : d["guards"]["added"]) {
    std::printf("  guard added   %s observed %s  # %s\n", g.value("op", "").c_str(), g.value("observed", "").c_str(),
                g.value("loc", "").c_str());
  }
  for (const auto& g : d["guards"]["removed"]) {
    std::printf("  guard removed %s observed %s  # %s\n", g.value("op", "").c_str(), g.value("observed", "").c_str(),
                g.value("loc", "").c_str());
  }
  std::printf("%s\n", d["identical"].get<bool>() ? "identical" : "different");
  for (const auto& g : d.value("gates", json::array())) {
    std::printf("gate %-14s %s: %s\n", g["gate"].get<std::string>().c_str(), g["tripped"].get<bool>() ? "TRIPPED" : "ok",
                g["why"].get<std::string>().c_str());
  }
}

int RunDiff(const DiffOptions& o) {
  std::vector<std::string> gates;
  std::stringstream ss(o.fail_on);
  for (std::string g; std::getline(ss, g, ',');) {
    if (!g.empty()) gates.push_back(g);
  }
  json a, b;
  Status st = DescribeFile(o.a, o.region, &a);
  if (!st.ok()) return Fail("diff", st, InputErrorCode(st));
  st = DescribeFile(o.b, o.region, &b);
  if (!st.ok()) return Fail("diff", st, InputErrorCode(st));
  json d = Compare(a, b);
  bool any_tripped = false;
  json gate_results = json::array();
  for (const auto& g : gates) {
    bool tripped = false;
    std::string why;
    st = EvaluateGate(g, d, &tripped, &why);
    if (!st.ok()) return Fail("diff", st, kExitUsage);
    any_tripped |= tripped;
    gate_results.push_back({{"gate", g}, {"tripped", tripped}, {"why", why}});
  }
  d["gates"] = gate_results;
  d["tripped"] = any_tripped;
  if (o.json) std::cout << d.dump(2) << "\n";
  else PrintText(d, o.max_lines);
  std::fflush(stdout);
  return any_tripped ? kExitGateTripped : kExitOk;
}

}  // namespace

void SetupDiff(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<DiffOptions>();
  auto* sub = app.add_subcommand(
      "diff", "Compare two traces, graphs, ONNX models, plans or `inspect --json` baselines node by node");
  sub->add_option("a", opts->a, "The old side: trace, graph, ONNX model, plan, or baseline JSON from `inspect --json`")
      ->required();
  sub->add_option("b", opts->b, "The new side (any of the same kinds)")->required();
  sub->add_option("--region", opts->region, "Region of a trace: NAME or NAME:K (default: the first)");
  sub->add_flag("--json", opts->json, "Print the diff as JSON (schema \"ivytrace.diff/1\", see the README)");
  sub->add_option("--fail-on", opts->fail_on,
                  "Exit 7 when a gate trips; comma-separated: added-ops, removed-ops, changed-nodes, shape-change, "
                  "guards, params, nodes>+N%, nodes<-N%, nodes>+N, params>+N% ... (quote the > for the shell)")
      ->type_name("GATES");
  sub->add_option("--max-lines", opts->max_lines, "Nodes listed per section in the text report (default 20)");
  sub->footer("Nodes pair up by (module path, canonical op, position among the nodes with that module and op).\n" +
              ExitStatusFooter({kExitOk, kExitUsage, kExitBadInput, kExitGateTripped, kExitInternal}));
  sub->callback([opts, exit_code] { *exit_code = RunDiff(*opts); });
}

}  // namespace ivytrace::cli
