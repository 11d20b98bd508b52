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

const std::vector<std::string>& DefaultPipeline() {
  static const std::vector<std::string> pipeline = {"constant-fold", "fold-conv-bn", "simplify", "cse", "dce"};
  return pipeline;
}

Status RunPipeline(const PipelineOptions& opts, Graph* graph, std::vector<PassReport>* report) {
  PipelineOptions options = opts;
  options.verify = options.verify || kAlwaysVerify;
  std::vector<std::string> names = options.passes.empty() ? DefaultPipeline() : options.passes;
  std::vector<std::unique_ptr<Pass>> passes;
  for (auto it = options.enable.rbegin(); it != options.enable.rend(); ++it) {
    if (std::find(names.begin(), names.end(), *it) == names.end()) names.insert(names.begin(), *it);
  }
  for (const auto& d : options.disable) {
    if (!CreatePass(d)) {
      return Status::InvalidArgument("--disable: unknown pass '" + d + "'");
    }
    names.erase(std::remove(names.begin(), names.end(), d), names.end());
  }
  for (const auto& n : names) {
    auto p = CreatePass(n, options.pass_options);
    if (!p) {
      std::string known;
      for (const auto& e : Registry()) known += std::string(known.empty() ? "" : ", ") + e.name;
      return Status::InvalidArgument("unknown pass '" + n + "' (known passes: " + known + ")");
    }
    passes.push_back(std::move(p));
  }
  for (const auto& n : options.print_after) {
    if (n != "all" && std::find(names.begin(), names.end(), n) == names.end()) {
      return Status::InvalidArgument("--print-after: pass '" + n + "' is not in the pipeline");
    }
  }
  if (options.verify) IVY_RETURN_IF_ERROR(VerifyGraph(*graph));
  for (auto& p : passes) {
    PassReport r;
    r.pass = std::string(p->name());
    r.nodes_before = graph->LiveNodeCount();
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
    if (report) report->push_back(r);
    if (options.on_print_after &&
        std::any_of(options.print_after.begin(), options.print_after.end(),
                    [&](const std::string& n) { return n == "all" || n == r.pass; })) {
      options.on_print_after(r.pass, *graph);
    }
  }
  return Status::Ok();
}

}  // namespace ivytrace
