// ivytrace check ARTIFACT --against SOURCE: run an exported ONNX model or plan and compare its
// outputs with the recorded ones (and with a replay of the source's graph on random inputs).
//
// The numbers are computed in Python (python/ivytrace/check.py): onnxruntime and the plan runtime
// are Python packages. This file resolves the files and the region, exports the reference plan,
// runs the helper, and renders its JSON report as a table, JSON or JUnit XML.
#include <nlohmann/json.hpp>
#include <pugixml.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/artifact.h"
#include "cli/common.h"
#include "cli/exit_status.h"
#include "core/export/plan_exporter.h"
#include "core/util/atomic_file.h"

namespace ivytrace::cli {
namespace {

struct CheckOptions {
  std::string artifact;
  std::string source;
  std::string region;
  int random = -1;  // -1: 0 for a trace, 3 for a graph (which holds no recorded values)
  uint64_t seed = 0;
  std::vector<std::string> atol, rtol, stat;  // "VALUE" or "OUTPUT=VALUE"
  bool json = false;
  std::string junit;
  std::string python;
};

// A scratch directory removed when the command ends.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ivytrace-check-XXXXXX").string();
    if (mkdtemp(tmpl.data())) path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};

bool ValidStat(const std::string& s) {
  if (s == "max" || s == "mean" || s == "median") return true;
  if (s.rfind("quantile:", 0) != 0) return false;
  try {
    size_t used = 0;
    double q = std::stod(s.substr(9), &used);
    return used == s.size() - 9 && q >= 0 && q <= 1;
  } catch (...) {
    return false;
  }
}

// Fills {"default": {...}, "per_output": {name: {...}}} from the repeated flags.
Status ParseTolerances(const CheckOptions& o, nlohmann::json* tol) {
  (*tol)["default"] = {{"atol", 1e-5}, {"rtol", 1e-4}, {"stat", "max"}};
  (*tol)["per_output"] = nlohmann::json::object();
  auto apply = [&](const std::vector<std::string>& flags, const char* key) -> Status {
    for (const auto& f : flags) {
      const size_t eq = f.find('=');
      const std::string value = eq == std::string::npos ? f : f.substr(eq + 1);
      nlohmann::json& target = eq == std::string::npos ? (*tol)["default"] : (*tol)["per_output"][f.substr(0, eq)];
      if (std::string(key) == "stat") {
        if (!ValidStat(value)) {
          return Status::InvalidArgument("--error-stat " + f + ": expected max, mean, median or quantile:Q (0 <= Q <= 1)");
        }
        target[key] = value;
        continue;
      }
      try {
        size_t used = 0;
        double v = std::stod(value, &used);
        if (used != value.size() || v < 0) throw std::invalid_argument("");
        target[key] = v;
      } catch (...) {
        return Status::InvalidArgument(std::string("--") + key + " " + f + ": expected a number >= 0, or OUTPUT=NUMBER");
      }
    }
    return Status::Ok();
  };
  IVY_RETURN_IF_ERROR(apply(o.atol, "atol"));
  IVY_RETURN_IF_ERROR(apply(o.rtol, "rtol"));
  IVY_RETURN_IF_ERROR(apply(o.stat, "stat"));
  return Status::Ok();
}

std::string Shapes(const nlohmann::json& shapes) {
  std::string s;
  for (const auto& sh : shapes) {
    s += s.empty() ? "" : " ";
    s += "[";
    for (size_t i = 0; i < sh.size(); ++i) s += (i ? "," : "") + std::to_string(sh[i].get<int64_t>());
    s += "]";
  }
  return s;
}

void PrintTable(const nlohmann::json& r) {
  std::printf("check %s against %s%s\n", r["artifact"].get<std::string>().c_str(), r["source"].get<std::string>().c_str(),
              r["region"].is_string() ? (" (region " + r["region"].get<std::string>() + ")").c_str() : "");
  std::printf("  %-10s %-10s %-14s %-8s %11s %11s %11s  %s\n", "case", "output", "shape", "dtype", "max abs",
              "max rel", "stat/tol", "result");
  for (const auto& c : r["cases"]) {
    const std::string name = c["name"];
    if (c.contains("error")) {
      std::printf("  %-10s %-10s %-14s %-8s %11s %11s %11s  FAIL: %s\n", name.c_str(), "-", Shapes(c["inputs"]).c_str(),
                  "", "", "", "", c["error"].get<std::string>().c_str());
      continue;
    }
    for (const auto& o : c["outputs"]) {
      std::string shape = Shapes(nlohmann::json::array({o["shape"]}));
      if (o.contains("error_ratio")) {
        std::printf("  %-10s %-10s %-14s %-8s %11.3g %11.3g %11.3g  %s\n", name.c_str(),
                    o["name"].get<std::string>().c_str(), shape.c_str(), o["dtype"].get<std::string>().c_str(),
                    o["max_abs_error"].get<double>(), o["max_rel_error"].get<double>(), o["error_ratio"].get<double>(),
                    o["passed"].get<bool>() ? "ok" : ("FAIL: " + o.value("reason", std::string())).c_str());
      } else {
        std::printf("  %-10s %-10s %-14s %-8s %11s %11s %11s  FAIL: %s\n", name.c_str(), o["name"].get<std::string>().c_str(),
                    shape.c_str(), o["dtype"].get<std::string>().c_str(), "", "", "", o.value("reason", std::string()).c_str());
      }
    }
  }
  for (const auto& n : r["notes"]) std::printf("  note: %s\n", n.get<std::string>().c_str());
  const auto& d = r["tolerance"]["default"];
  std::printf("%s (atol %g, rtol %g, statistic %s of |got - expected| / (atol + rtol * |expected|) <= 1)\n",
              r["passed"].get<bool>() ? "PASSED" : "FAILED", d["atol"].get<double>(), d["rtol"].get<double>(),
              d["stat"].get<std::string>().c_str());
}

// One <testcase> per (case, output); a case that failed to run is one testcase with the error.
std::string JUnitXml(const nlohmann::json& r) {
  pugi::xml_document doc;
  auto decl = doc.append_child(pugi::node_declaration);
  decl.append_attribute("version") = "1.0";
  decl.append_attribute("encoding") = "UTF-8";
  auto suites = doc.append_child("testsuites");
  auto suite = suites.append_child("testsuite");
  suite.append_attribute("name") = ("ivytrace check " + r["artifact"].get<std::string>()).c_str();
  int tests = 0, failures = 0;
  for (const auto& c : r["cases"]) {
    const std::string cname = c["name"];
    auto add = [&](const std::string& name, bool passed, const std::string& message) {
      auto tc = suite.append_child("testcase");
      tc.append_attribute("classname") = ("ivytrace.check." + r["artifact"].get<std::string>()).c_str();
      tc.append_attribute("name") = name.c_str();
      ++tests;
      if (!passed) {
        ++failures;
        auto f = tc.append_child("failure");
        f.append_attribute("message") = message.c_str();
        f.text() = message.c_str();
      }
    };
    if (c.contains("error")) {
      add(cname, false, c["error"]);
      continue;
    }
    for (const auto& o : c["outputs"]) {
      add(cname + "/" + o["name"].get<std::string>(), o["passed"].get<bool>(), o.value("reason", std::string()));
    }
  }
  suite.append_attribute("tests") = tests;
  suite.append_attribute("failures") = failures;
  suite.append_attribute("errors") = 0;
  std::ostringstream out;
  doc.save(out, "  ");
  return out.str();
}

int RunCheck(const CheckOptions& o) {
  nlohmann::json tolerance;
  Status st = ParseTolerances(o, &tolerance);
  if (!st.ok()) return Fail("check", st, kExitUsage);
  if (!o.junit.empty()) {
    st = CheckWritable(o.junit);
    if (!st.ok()) return Fail("check", st, kExitOutput);
  }
  FileKind artifact_kind, source_kind;
  st = SniffArtifact(o.artifact, &artifact_kind);
  if (!st.ok()) return Fail("check", st, InputErrorCode(st));
  if (artifact_kind != FileKind::kOnnx && artifact_kind != FileKind::kPlan) {
    return Fail("check", Status::InvalidArgument("'" + o.artifact + "' is a " +
                                                 (artifact_kind == FileKind::kTrace ? "trace" : "graph") +
                                                 "; check takes an exported ONNX model or plan (ivytrace export)"),
                kExitUsage);
  }
  st = SniffArtifact(o.source, &source_kind);
  if (!st.ok()) return Fail("check", st, InputErrorCode(st));
  if (source_kind != FileKind::kTrace && source_kind != FileKind::kGraph) {
    return Fail("check", Status::InvalidArgument("--against '" + o.source + "' must be the trace or graph the "
                                                 "artifact was exported from"),
                kExitUsage);
  }
  const int random = o.random >= 0 ? o.random : source_kind == FileKind::kGraph ? 3 : 0;
  LoadedGraph& lg = CommandGraph();
  st = LoadForCommand(o.source, o.region, /*optimize=*/nullptr, &lg);
  if (!st.ok()) return Fail("check", st, InputErrorCode(st));
  if (source_kind == FileKind::kTrace && lg.build.region_chosen.empty() && random == 0) {
    return Fail("check", Status::InvalidArgument("'" + o.source + "' marks no region, so it holds no recorded "
                                                 "outputs to compare with; give --random N"),
                kExitUsage);
  }
  TempDir tmp;
  if (tmp.path.empty()) return Fail("check", Status::IOError("cannot make a temporary directory"), kExitOutput);
  nlohmann::json job;
  job["artifact"] = std::filesystem::absolute(o.artifact).string();
  job["artifact_display"] = o.artifact;
  job["artifact_kind"] = artifact_kind == FileKind::kOnnx ? "onnx" : "plan";
  job["source_display"] = o.source;
  job["trace"] = source_kind == FileKind::kTrace ? std::filesystem::absolute(o.source).string() : "";
  job["region"] = lg.build.region_chosen;
  job["random"] = random;
  job["seed"] = o.seed;
  job["tolerance"] = tolerance;
  job["reference_plan"] = "";
  if (random > 0) {
    // The reference: the source's graph exactly as recorded (no passes), replayed as a plan.
    const std::string ref = (tmp.path / "reference.plan").string();
    st = ExportPlanFile(lg.graph, ref);
    if (!st.ok()) {
      return Fail("check", Status::Unsupported("--random needs the graph of '" + o.source +
                                               "' as a plan to compare with, and it cannot be exported: " + st.message()),
                  kExitUnsupported);
    }
    job["reference_plan"] = ref;
  }
  const std::string job_path = (tmp.path / "job.json").string();
  st = WriteFileAtomically(job_path, job.dump());
  if (!st.ok()) return Fail("check", st, kExitOutput);

  const std::string python = FindPython(o.python);
  // An import failure of the package itself is reported as "missing" (8), like onnxruntime's.
  const std::string bootstrap =
      "import sys\n"
      "try:\n"
      "    import ivytrace.check as c\n"
      "except ImportError as e:\n"
      "    sys.stderr.write('the Python package ivytrace cannot be imported by ' + sys.executable + ': ' + str(e) + "
      "'; install it (pip install ivytrace) or name the interpreter with --python or $IVYTRACE_PYTHON\\n')\n"
      "    sys.exit(8)\n"
      "sys.exit(c.main(sys.argv[1:]))\n";
  std::vector<std::string> env;
  const std::string pkg = PackageDirBesideBinary();
  if (!pkg.empty()) {
    const char* pp = std::getenv("PYTHONPATH");
    env.push_back("PYTHONPATH=" + pkg + (pp && *pp ? ":" + std::string(pp) : ""));
  }
  std::string out;
  int status = 0;
  st = RunCollectingStdout({python, "-c", bootstrap, job_path}, env, &out, &status);
  if (!st.ok()) return Fail("check", st, kExitInternal);
  if (status == 127) {
    return Fail("check", Status::NotFound("cannot run the Python interpreter '" + python + "' (check runs onnxruntime "
                                          "and the plan runtime in Python; name one with --python or $IVYTRACE_PYTHON)"),
                kExitMissingTool);
  }
  if (status == kExitMissingTool) return kExitMissingTool;  // the helper said what is missing
  if (status == kExitBadInput) return kExitBadInput;
  if (status != 0) {
    return Fail("check", Status::IOError("the Python helper (ivytrace.check, run by " + python + ") failed with exit status " +
                                         std::to_string(status)),
                kExitInternal);
  }
  nlohmann::json report;
  try {
    report = nlohmann::json::parse(out);
  } catch (const std::exception& e) {
    return Fail("check", Status::IOError(std::string("the Python helper wrote no JSON report: ") + e.what()), kExitInternal);
  }
  if (!o.junit.empty()) {
    st = WriteFileAtomically(o.junit, JUnitXml(report));
    if (!st.ok()) return Fail("check", st, kExitOutput);
  }
  if (o.json) std::cout << report.dump(2) << "\n";
  else PrintTable(report);
  std::fflush(stdout);
  return report["passed"].get<bool>() ? kExitOk : kExitCheckFailed;
}

}  // namespace

void SetupCheck(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<CheckOptions>();
  auto* sub = app.add_subcommand(
      "check",
      "Verify an exported ONNX model or plan numerically against the trace or graph it came from");
  sub->add_option("artifact", opts->artifact, "ONNX model or plan to check")->required();
  sub->add_option("--against", opts->source, "The trace (or graph) the artifact was exported from")->required();
  sub->add_option("--region", opts->region, "Region of the trace: NAME or NAME:K (default: the first)");
  sub->add_option("--random", opts->random,
                  "Also compare on N random inputs of the recorded shapes and dtypes (symbolic ONNX dims take "
                  "other sizes) with a replay of the source's graph (default: 0 for a trace, 3 for a graph)")
      ->type_name("N")->check(CLI::NonNegativeNumber);
  sub->add_option("--seed", opts->seed, "Seed of the random inputs (default 0)");
  sub->add_option("--atol", opts->atol, "Absolute tolerance (default 1e-5); OUTPUT=VALUE for one output (e.g. output.1=1e-3)")
      ->type_name("[OUTPUT=]VALUE")->allow_extra_args(false);
  sub->add_option("--rtol", opts->rtol, "Relative tolerance (default 1e-4); OUTPUT=VALUE for one output")
      ->type_name("[OUTPUT=]VALUE")->allow_extra_args(false);
  sub->add_option("--error-stat", opts->stat,
                  "Statistic of the error ratio |got - expected| / (atol + rtol*|expected|) that must be <= 1: max "
                  "(default: every element, like allclose), mean, median or quantile:Q; OUTPUT=STAT for one output")
      ->type_name("[OUTPUT=]STAT")->allow_extra_args(false);
  sub->add_flag("--json", opts->json, "Print the report as JSON (schema \"ivytrace.check/1\", see the README)");
  sub->add_option("--junit-xml", opts->junit, "Also write a JUnit XML report (one testcase per case and output)")
      ->type_name("FILE");
  sub->add_option("--python", opts->python,
                  "Python interpreter with the ivytrace package, numpy and onnxruntime (default: $IVYTRACE_PYTHON, "
                  "else $VIRTUAL_ENV/bin/python, else the .venv of the checkout the binary was built in, else python3)");
  sub->footer(
      "The comparison runs in Python: `ivytrace check` starts the interpreter above on the module ivytrace.check, "
      "which runs ONNX models in onnxruntime and plans in ivytrace's runtime (torch for torch plans).\n" +
      ExitStatusFooter({kExitOk, kExitUsage, kExitBadInput, kExitOutput, kExitUnsupported, kExitCheckFailed,
                        kExitMissingTool, kExitInternal}));
  sub->callback([opts, exit_code] { *exit_code = RunCheck(*opts); });
}

}  // namespace ivytrace::cli
