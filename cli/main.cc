// ivytrace: record numerical programs, then optimize, draw and export their graphs.
// main only wires the subcommands together; each lives in its own cmd_*.cc.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <malloc.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <google/protobuf/stubs/common.h>

#include "cli/common.h"
#include "cli/exit_status.h"

namespace {

// protobuf logs its own view of a record that does not parse (e.g. "invalid UTF-8") straight to
// stderr; the reader already reports the file and byte offset, so those lines are detail for -v.
void ProtobufLogToSpdlog(google::protobuf::LogLevel level, const char* file, int line,
                         const std::string& message) {
  if (level >= google::protobuf::LOGLEVEL_FATAL) {
    spdlog::critical("protobuf ({}:{}): {}", file, line, message);
  } else {
    spdlog::debug("protobuf ({}:{}): {}", file, line, message);
  }
}

// ivytrace is a batch tool whose big graphs are built, freed and built again phase by phase (the
// builder's tables, each pass's tables, the output). glibc's default hands freed memory back to
// the kernel, and memory taken anew costs a page fault and a zeroed page per 4 KiB: on the test
// machine 0.38 ms per MB, which made a pass's first 8 MB table at a million nodes cost more than
// its work. Keeping freed memory in the heap (no trimming, large blocks from the heap, a generous
// top pad) lets each phase reuse the pages the one before it touched.
void KeepFreedMemoryForReuse() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest: blocks below 32 MiB come from the heap
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
  mallopt(M_TOP_PAD, 256 << 20);
}

// Edit distance, for suggesting a subcommand (a dozen short names: a library would be overkill).
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The first word that is not an option must name a subcommand. CLI11 alone says only "A
// subcommand is required"; this names the word and the closest subcommand. Returns false (after
// printing) when the word is unknown.
bool CheckSubcommandName(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.empty() || word[0] == '-') continue;
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
    if (std::find(names.begin(), names.end(), word) != names.end()) return true;
    std::string best;
    size_t best_d = SIZE_MAX;
    for (const auto& n : names) {
      size_t d = EditDistance(word, n);
      if (n.rfind(word, 0) == 0) d = 0;  // a prefix ("insp") is as good as a match
      if (d < best_d) best_d = d, best = n;
    }
    std::string all;
    for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
    std::fprintf(stderr, "ivytrace: error: unknown command '%s'%s (commands: %s; see ivytrace --help)\n", word.c_str(),
                 best_d <= std::max<size_t>(2, word.size() / 2) ? ("; did you mean '" + best + "'?").c_str() : "",
                 all.c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ivytrace::cli;
  KeepFreedMemoryForReuse();
  auto logger = spdlog::stderr_color_mt("ivytrace");
  logger->set_pattern("ivytrace: %^%l%$: %v");
  spdlog::set_default_logger(logger);
  google::protobuf::SetLogHandler(&ProtobufLogToSpdlog);

  CLI::App app{"ivytrace: turn a running PyTorch program into a clean computation graph, then "
               "optimize it, draw it and export it as ONNX or as an executable plan."};
  app.footer(ExitStatusFooter({kExitOk, kExitUsage, kExitBadInput, kExitOutput, kExitUnsupported, kExitCheckFailed,
                               kExitGateTripped, kExitMissingTool, kExitInternal}) +
             " `record` exits with the recorded program's status. Each command's --help lists its own.");
  app.set_version_flag("--version", std::string("ivytrace ") + IVYTRACE_VERSION);
  app.require_subcommand(1);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Log what each step does");

  int exit_code = kExitOk;
  SetupRecord(app, &exit_code);
  SetupInspect(app, &exit_code);
  SetupOptimize(app, &exit_code);
  SetupViz(app, &exit_code);
  SetupExport(app, &exit_code);
  SetupOps(app, &exit_code);
  SetupCheck(app, &exit_code);
  SetupDiff(app, &exit_code);
  app.parse_complete_callback([&] { spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::warn); });

  if (!CheckSubcommandName(app, argc, argv)) return kExitUsage;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  google::protobuf::ShutdownProtobufLibrary();
  return exit_code;
}
