#include "core/passes/pass_registry.h"

#include <algorithm>
#include <chrono>
#include <functional>

#include "core/ir/verifier.h"
#include "core/passes/bake_generators.h"
#include "core/passes/common_subexpression_elimination.h"
#include "core/passes/constant_fold.h"
#include "core/passes/dead_code_elimination.h"
#include "core/passes/fold_conv_bn.h"
#include "core/passes/simplify.h"

namespace ivytrace {
namespace {

// Debug builds check the IR between passes even when nobody asked.
#ifdef NDEBUG
constexpr bool kAlwaysVerify = false;
#else
constexpr bool kAlwaysVerify = true;
#endif

struct Entry {
  const char* name;
  std::function<std::unique_ptr<Pass>(const PassOptions&)> make;
};

const std::vector<Entry>& Registry() {
  static const std::vector<Entry> entries = {
      {"constant-fold", [](const PassOptions& o) { return std::make_unique<ConstantFold>(o); }},
      {"bake-generators", [](const PassOptions&) { return std::make_unique<BakeGenerators>(); }},
      {"fold-conv-bn", [](const PassOptions&) { return std::make_unique<FoldConvBatchNorm>(); }},
      {"simplify", [](const PassOptions&) { return std::make_unique<Simplify>(); }},
      {"cse", [](const PassOptions&) { return std::make_unique<CommonSubexpressionElimination>(); }},
      {"dce", [](const PassOptions&) { return std::make_unique<DeadCodeElimination>(); }},
  };
  return entries;
}

// Runs one pass (in round `round` of its stage), compacts what it erased, and fills `report`.
Status RunPass(Pass* p, int round, const PipelineOptions& options, Graph* graph, PassReport* report) {
  PassReport& r = *report;
  r.pass = std::string(p->name());
  r.round = round;
  // Passes compact what they erase (below), so between passes every node is live.
  r.nodes_before = graph->nodes.size();
  const auto start = std::chrono::steady_clock::now();
  PassResult result;
  const size_t constants_before = graph->constants.size();
  IVY_RETURN_IF_ERROR(p->Run(graph, &result));
  // A pass counts every node it erases (PassResult), so one that erased and added nothing
  // leaves nothing to compact; no walk over the nodes is needed to find out.
  if (result.changed() || graph->constants.size() != constants_before) graph->Compact();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.nodes_after = graph->nodes.size();
  r.removed = result.nodes_removed;
  r.added = result.nodes_added;
  graph->passes_applied.push_back(r.pass);
  if (options.verify) {
    Status st = VerifyGraph(*graph);
    if (!st.ok()) return Status::Corruption("after pass '" + r.pass + "': " + st.message());
  }
  if (options.on_print_after &&
      std::any_of(options.print_after.begin(), options.print_after.end(),
                  [&](const std::string& n) { return n == "all" || n == r.pass; })) {
    options.on_print_after(round > 1 ? r.pass + " (round " + std::to_string(round) + ")" : r.pass, *graph);
  }
  return Status::Ok();
}

}  // namespace

std::vector<PassInfo> RegisteredPasses() {
  std::vector<PassInfo> out;
  for (const auto& e : Registry()) {
    auto p = e.make(PassOptions{});
    out.push_back({std::string(p->name()), std::string(p->description())});
  }
  return out;
}

std::unique_ptr<Pass> CreatePass(const std::string& name, const PassOptions& options) {
  for (const auto& e : Registry()) {
    if (name == e.name) return e.make(options);
  }
  return nullptr;
}

const std::vector<PipelineStage>& DefaultPipeline() {
  // Folding first (it only ever removes work for the rest), then the cleanups to a fixed point:
  // each can uncover work for another (dce dropping a dead in-place write to a temporary lets
  // simplify forward a clone of it; a forward or a merge can make two calls equal for cse).
  static const std::vector<PipelineStage> pipeline = {
      {{"constant-fold", "fold-conv-bn"}, false},
      {{"simplify", "cse", "dce"}, true},
  };
  return pipeline;
}

std::string DescribePipeline(const std::vector<PipelineStage>& stages) {
  std::string out;
  for (const auto& stage : stages) {
    if (stage.passes.empty()) continue;
    std::string names;
    for (const auto& p : stage.passes) names += (names.empty() ? "" : " ") + p;
    if (stage.to_fixed_point) names = "(" + names + ")*";
    out += (out.empty() ? "" : " ") + names;
  }
  return out;
}

Status RunPipeline(const PipelineOptions& opts, Graph* graph, std::vector<PassReport>* report) {
  PipelineOptions options = opts;
  options.verify = options.verify || kAlwaysVerify;
  std::vector<PipelineStage> stages =
      options.passes.empty() ? DefaultPipeline() : std::vector<PipelineStage>{{options.passes, false}};
  auto in_pipeline = [&](const std::string& name) {
    return std::any_of(stages.begin(), stages.end(), [&](const PipelineStage& s) {
      return std::find(s.passes.begin(), s.passes.end(), name) != s.passes.end();
    });
  };
  for (auto it = options.enable.rbegin(); it != options.enable.rend(); ++it) {
    if (!in_pipeline(*it)) stages.insert(stages.begin(), PipelineStage{{*it}, false});
  }
  for (const auto& d : options.disable) {
    if (!CreatePass(d)) {
      return Status::InvalidArgument("--disable: unknown pass '" + d + "'");
    }
    for (auto& s : stages) s.passes.erase(std::remove(s.passes.begin(), s.passes.end(), d), s.passes.end());
  }
  std::vector<std::vector<std::unique_ptr<Pass>>> passes(stages.size());
  for (size_t s = 0; s < stages.size(); ++s) {
    for (const auto& n : stages[s].passes) {
      auto p = CreatePass(n, options.pass_options);
      if (!p) {
        std::string known;
        for (const auto& e : Registry()) known += std::string(known.empty() ? "" : ", ") + e.name;
        return Status::InvalidArgument("unknown pass '" + n + "' (known passes: " + known + ")");
      }
      passes[s].push_back(std::move(p));
    }
  }
  for (const auto& n : options.print_after) {
    if (n != "all" && !in_pipeline(n)) {
      return Status::InvalidArgument("--print-after: pass '" + n + "' is not in the pipeline");
    }
  }
  if (options.verify) IVY_RETURN_IF_ERROR(VerifyGraph(*graph));
  for (size_t s = 0; s < stages.size(); ++s) {
    const int rounds = stages[s].to_fixed_point ? kMaxRounds : 1;
    bool changed = true;
    for (int round = 1; round <= rounds && changed; ++round) {
      changed = false;
      for (auto& p : passes[s]) {
        PassReport r;
        IVY_RETURN_IF_ERROR(RunPass(p.get(), round, options, graph, &r));
        changed = changed || r.removed || r.added;
        if (report) report->push_back(r);
      }
    }
  }
  return Status::Ok();
}

}  // namespace ivytrace
