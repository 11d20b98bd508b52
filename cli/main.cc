// ivytrace: record numerical programs, then optimize, draw and export their graphs.
// main only wires the subcommands together; each lives in its own cmd_*.cc.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <malloc.h>

#include <climits>

#include <google/protobuf/stubs/common.h>

#include "cli/common.h"

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
  app.footer(kExitStatusHelp);
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
  app.parse_complete_callback([&] { spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::warn); });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  google::protobuf::ShutdownProtobufLibrary();
  return exit_code;
}
