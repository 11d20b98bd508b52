// ivytrace: record numerical programs, then optimize, draw and export their graphs.
// main only wires the subcommands together; each lives in its own cmd_*.cc.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

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

}  // namespace

int main(int argc, char** argv) {
  using namespace ivytrace::cli;
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
