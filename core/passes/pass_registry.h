// The registry of passes and the optimizer pipeline that runs them.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/passes/pass.h"

namespace ivytrace {

struct PassInfo {
  std::string name;
  std::string description;
};

// Every registered pass, in registry order.
std::vector<PassInfo> RegisteredPasses();
// A new instance of pass `name`, or null when there is none.
std::unique_ptr<Pass> CreatePass(const std::string& name, const PassOptions& options = {});
// A stage of a pipeline: passes run in order; a stage `to_fixed_point` runs again while its last
// round changed the graph (nodes removed or added), at most kMaxRounds rounds in all.
struct PipelineStage {
  std::vector<std::string> passes;
  bool to_fixed_point = false;
};
inline constexpr int kMaxRounds = 4;

// The default pipeline, as data.
const std::vector<PipelineStage>& DefaultPipeline();
// The pipeline written out for a person, e.g. "constant-fold fold-conv-bn (simplify cse dce)*".
std::string DescribePipeline(const std::vector<PipelineStage>& stages);

struct PipelineOptions {
  std::vector<std::string> passes;   // empty = DefaultPipeline(); given: one stage, run once
  std::vector<std::string> disable;  // names removed from `passes`
  bool verify = false;               // run the IR verifier after each pass
  std::vector<std::string> enable;   // names put in front of `passes` (e.g. bake-generators)
  PassOptions pass_options;
  // Called with the graph after each pass named here (e.g. to print it); "all" = every pass.
  std::vector<std::string> print_after;
  std::function<void(const std::string& pass, const Graph& graph)> on_print_after;
};

struct PassReport {
  std::string pass;
  int round = 1;                     // > 1 for the later rounds of a fixed-point stage
  size_t nodes_before = 0;
  size_t nodes_after = 0;
  size_t removed = 0;
  size_t added = 0;
  double seconds = 0;
};

// Runs the pipeline; InvalidArgument for an unknown pass name (listing the known ones).
Status RunPipeline(const PipelineOptions& options, Graph* graph, std::vector<PassReport>* report);

}  // namespace ivytrace
