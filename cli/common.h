// What every subcommand shares: exit statuses, error reporting, loading a trace or graph.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "core/ir/loader.h"
#include "core/passes/pass_registry.h"
#include "core/util/status.h"

namespace ivytrace::cli {

// Exit statuses, documented in --help and the README.
enum ExitCode : int {
  kExitOk = 0,
  kExitInternal = 1,     // a bug in ivytrace
  kExitUsage = 2,        // wrong flags or arguments
  kExitBadInput = 3,     // missing, unreadable, truncated or corrupt input
  kExitOutput = 4,       // the output cannot be written
  kExitUnsupported = 5,  // valid input that cannot be exported (ops without lowering)
};

inline constexpr const char* kExitStatusHelp =
    "Exit status: 0 success, 2 usage error, 3 bad input (missing, truncated or corrupt file), "
    "4 output cannot be written, 5 cannot export (unsupported ops), 1 internal error. "
    "`record` exits with the recorded program's status.";

// Prints "ivytrace <command>: error: <message>" to stderr and returns `code`.
int Fail(const std::string& command, const Status& status, int code);
// Exit status for an error that happened while reading input.
int InputErrorCode(const Status& status);

// The graph a command works on. It lives until the process exits and is deliberately never
// freed: tearing down a million-node graph (millions of small protobuf objects, one free() each)
// took a second or more at exit, for memory the OS takes back at once anyway.
inline LoadedGraph& CommandGraph() {
  static LoadedGraph* graph = new LoadedGraph();
  return *graph;
}

// Loads `path` (trace or graph). A trace is optimized with `optimize` when it is not null.
// Warns on stderr when the trace has several regions and none was chosen.
Status LoadForCommand(const std::string& path, const std::string& region, const PipelineOptions* optimize,
                      LoadedGraph* out);

// The flags `optimize` and `export` share to shape the pipeline (the seeds' trace_graph options).
struct PipelineFlags {
  bool no_array_caching = false;
  uint64_t fold_size_limit = 0;
  bool bake_generators = false;
};
void AddPipelineFlags(CLI::App* sub, PipelineFlags* flags);
// Applies `flags` to `options` (passes chosen elsewhere stay).
void ApplyPipelineFlags(const PipelineFlags& flags, PipelineOptions* options);

// Each subcommand registers itself on the app (see main.cc).
void SetupInspect(CLI::App& app, int* exit_code);
void SetupOptimize(CLI::App& app, int* exit_code);
void SetupViz(CLI::App& app, int* exit_code);
void SetupExport(CLI::App& app, int* exit_code);
void SetupOps(CLI::App& app, int* exit_code);
void SetupRecord(CLI::App& app, int* exit_code);
void SetupCheck(CLI::App& app, int* exit_code);  // cmd_check.cc
void SetupDiff(CLI::App& app, int* exit_code);   // cmd_diff.cc

}  // namespace ivytrace::cli
