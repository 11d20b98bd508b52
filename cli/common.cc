#include "cli/common.h"

#include "core/util/printable.h"

#include <spdlog/spdlog.h>

#include <cstdio>

namespace ivytrace::cli {

int Fail(const std::string& command, const Status& status, int code) {
  // Messages quote names from input files: control characters in them are shown escaped.
  // Our messages span lines (lists of ops, of guards); every other control character is escaped.
  std::fprintf(stderr, "ivytrace %s: error: %s\n", command.c_str(), Printable(status.message(), /*keep_newlines=*/true).c_str());
  return code;
}

int InputErrorCode(const Status& status) {
  switch (status.kind()) {
    case Status::Kind::kInvalidArgument: return kExitUsage;
    case Status::Kind::kUnsupported: return kExitUnsupported;
    default: return kExitBadInput;
  }
}

void AddPipelineFlags(CLI::App* sub, PipelineFlags* flags) {
  sub->add_flag("--no-array-caching", flags->no_array_caching,
                "Keep ops that read only constants instead of replacing them by their recorded values "
                "(leaves out the constant-fold pass)");
  sub->add_option("--fold-size-limit", flags->fold_size_limit,
                  "Fold only values of at most BYTES bytes (default: no limit)")
      ->type_name("BYTES");
  sub->add_flag("--bake-generators", flags->bake_generators,
                "Replace random ops (torch.rand, randint, ...) by the values they produced when recorded; "
                "refused for random ops that read a region input");
}

void ApplyPipelineFlags(const PipelineFlags& flags, PipelineOptions* options) {
  if (flags.no_array_caching) options->disable.push_back("constant-fold");
  options->pass_options.fold_size_limit = flags.fold_size_limit;
  if (flags.bake_generators) options->enable.push_back("bake-generators");
}

Status LoadForCommand(const std::string& path, const std::string& region, const PipelineOptions* optimize,
                      LoadedGraph* out) {
  BuildOptions options;
  options.region = region;
  IVY_RETURN_IF_ERROR(LoadGraph(path, options, out));
  if (out->kind == FileKind::kTrace) {
    if (region.empty() && out->build.regions_in_trace > 1) {
      spdlog::warn("trace '{}' has several regions; using '{}' (choose one with --region NAME[:K])",
                   path, out->build.region_chosen);
    }
    if (out->graph.outputs.kind_case() == v1::Arg::KIND_NOT_SET && !out->build.stopped_by_limit.empty()) {
      spdlog::warn("trace '{}' was stopped by a recording limit ({}): the graph holds only the ops "
                   "recorded before it",
                   path, out->build.stopped_by_limit);
    }
    if (out->graph.outputs.kind_case() == v1::Arg::KIND_NOT_SET) {
      spdlog::warn("trace '{}' marks no region, so nothing is an output: every op is kept "
                   "(mark one with ivytrace.region or record with ivytrace.trace_graph)",
                   path);
    }
    if (optimize) {
      IVY_RETURN_IF_ERROR(RunPipeline(*optimize, &out->graph, nullptr));
    }
  }
  return Status::Ok();
}

}  // namespace ivytrace::cli
