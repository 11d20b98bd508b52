// ivytrace ops [--framework F] [--json]: every op in schemas/, per framework, with its canonical op
// and what ivytrace does with it: replays (in its own framework, through the plan), lowers to
// ONNX (the canonical op has a row in core/export/onnx/lowering_table.cc), or is refused by the
// ONNX exporter, with the reason. "lowers" is per op: a call can still be refused for its
// arguments (dropout in training mode, a NumPy where=), and the exporter then says why.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <map>

#include "cli/common.h"
#include "core/export/onnx/lowering_table.h"
#include "core/schema/schema_registry.h"

namespace ivytrace::cli {
namespace {

struct OpsOptions {
  std::string framework;
  bool json = false;
};

struct Row {
  std::string name, canonical, lowering_canonical, onnx, reason;
  bool lowers = false;
};

Row Describe(const std::string& name, const v1::OpSchema& s) {
  Row r;
  r.name = name;
  r.canonical = s.canonical();
  if (s.canonical().empty()) {
    // As the exporter says (LowerNode): a random op first, whatever its canonical op.
    r.reason = s.random() ? "a random op: export needs its draws baked (--bake-generators)"
                          : "no canonical op (an opaque framework call)";
    return r;
  }
  r.lowering_canonical = onnx_export::NormalizedCanonical(name, s.canonical());
  if (const auto* row = onnx_export::FindCanonicalLowering(r.lowering_canonical)) {
    r.lowers = true;
    r.onnx = std::string(row->onnx);
    return r;
  }
  if (s.random()) {
    r.reason = "a random op: export needs its draws baked (--bake-generators)";
  } else if (auto why = onnx_export::RefusalReason(r.lowering_canonical); !why.empty()) {
    r.reason = std::string(why);
  } else {
    r.reason = "canonical op '" + r.lowering_canonical + "' has no ONNX lowering";
  }
  return r;
}

int RunOps(const OpsOptions& o) {
  const SchemaRegistry& reg = SchemaRegistry::Default();
  nlohmann::json out = nlohmann::json::object();
  bool found = false;
  std::string text;
  size_t all_ops = 0, all_lower = 0;
  for (const v1::SchemaFile& f : reg.files()) {
    if (!o.framework.empty() && f.framework() != o.framework) continue;
    found = true;
    std::vector<Row> rows;
    for (const auto& s : f.op()) {
      for (const auto& n : s.name()) rows.push_back(Describe(n, s));
    }
    size_t lowers = 0;
    for (const auto& r : rows) lowers += r.lowers;
    all_ops += rows.size();
    all_lower += lowers;
    if (o.json) {
      nlohmann::json ops = nlohmann::json::array();
      for (const auto& r : rows) {
        nlohmann::json j = {{"op", r.name}, {"canonical", r.canonical}, {"replays", true},
                            {"onnx", r.lowers ? "lowers" : "refused"}};
        if (r.lowers) {
          j["onnx_lowering"] = r.lowering_canonical;
          j["onnx_ops"] = r.onnx;
        } else {
          j["reason"] = r.reason;
        }
        ops.push_back(std::move(j));
      }
      out[f.framework()] = {{"ops", std::move(ops)},
                            {"totals", {{"ops", rows.size()}, {"replays", rows.size()}, {"onnx_lowers", lowers},
                                        {"onnx_refused", rows.size() - lowers}}}};
      continue;
    }
    text += f.framework() + ": " + std::to_string(rows.size()) + " ops, all replay; " + std::to_string(lowers) +
            " lower to ONNX, " + std::to_string(rows.size() - lowers) + " refused\n";
    for (const auto& r : rows) {
      char line[512];
      std::snprintf(line, sizeof(line), "  %-48s %-28s %s\n", r.name.c_str(),
                    r.canonical.empty() ? "-" : r.canonical.c_str(),
                    r.lowers ? ("onnx: " + r.onnx).c_str() : ("refused: " + r.reason).c_str());
      text += line;
    }
  }
  if (!found) {
    return Fail("ops", Status::InvalidArgument("no schemas for framework '" + o.framework +
                                               "' (known: torch, numpy, jax)"), kExitUsage);
  }
  if (o.json) {
    std::fputs((out.dump(1) + "\n").c_str(), stdout);
  } else {
    text += "total: " + std::to_string(all_ops) + " ops, " + std::to_string(all_lower) + " lower to ONNX\n";
    std::fputs(text.c_str(), stdout);
  }
  return kExitOk;
}

}  // namespace

void SetupOps(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<OpsOptions>();
  auto* sub = app.add_subcommand("ops", "List every op in schemas/ with its canonical op and whether it "
                                        "replays, lowers to ONNX, or is refused (and why)");
  sub->add_option("--framework", opts->framework, "Only this framework: torch, numpy or jax");
  sub->add_flag("--json", opts->json, "Machine-readable output");
  sub->footer(kExitStatusHelp);
  sub->callback([opts, exit_code] { *exit_code = RunOps(*opts); });
}

}  // namespace ivytrace::cli
