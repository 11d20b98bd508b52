// The simplify rules for casts, transpose/permute pairs, reshape chains and contiguous, on hand-built
// graphs.
#include <gtest/gtest.h>

#include <map>

#include "core/ir/arg.h"
#include "core/passes/pass_registry.h"
#include "graph_fixture.h"

namespace ivytrace {
namespace {

using namespace testing_graph;  // NOLINT

// Runs simplify + dce (verified) and returns the live ops with their counts.
std::map<std::string, int> Optimize(Graph* g) {
  PipelineOptions o;
  o.passes = {"simplify", "dce"};
  o.verify = true;
  std::vector<PassReport> report;
  EXPECT_TRUE(RunPipeline(o, g, &report).ok());
  std::map<std::string, int> ops;
  for (const auto& n : g->nodes) ++ops[n.op];
  return ops;
}

TEST(SimplifyRules, TransposePairThatComposesToIdentityReadsTheInput) {
  Graph g;
  const ValueId x = AddInput(&g, {2, 3, 4});
  const ValueId a = AddNode(&g, "torch.Tensor.transpose", {Ref(g, x), Int(0), Int(-2)}, {3, 2, 4});
  const ValueId b = AddNode(&g, "torch.Tensor.transpose", {Ref(g, a), Int(1), Int(0)}, {2, 3, 4});
  // Not the identity: (0,1) then (1,2).
  const ValueId c = AddNode(&g, "torch.Tensor.transpose", {Ref(g, x), Int(0), Int(1)}, {3, 2, 4});
  const ValueId d = AddNode(&g, "torch.Tensor.transpose", {Ref(g, c), Int(1), Int(2)}, {3, 4, 2});
  const ValueId r = AddNode(&g, "torch.relu", {Ref(g, b)}, {2, 3, 4});
  Return(&g, {r, d});
  const auto ops = Optimize(&g);
  // a, b forwarded; d = one permute of x (dims [1, 2, 0]: (0,1) then (1,2)); c had no other reader.
  EXPECT_EQ(ops.count("torch.Tensor.transpose"), 0u);
  ASSERT_EQ(ops.at("torch.permute"), 1);
  for (const auto& n : g.nodes) {
    if (n.op != "torch.permute") continue;
    EXPECT_EQ(n.inputs, ValueList{x});
    EXPECT_EQ(n.outputs, ValueList{d});
    ASSERT_EQ(n.args.size(), 2u);
    EXPECT_EQ(AsIntList(n.args[1]), (std::vector<int64_t>{1, 2, 0}));
  }
  EXPECT_EQ(g.nodes.back().op, "torch.relu");
  EXPECT_EQ(g.nodes.back().inputs, ValueList{x});
}

TEST(SimplifyRules, PermutePairThatComposesToIdentityReadsTheInput) {
  Graph g;
  const ValueId x = AddInput(&g, {2, 3, 4});
  const ValueId a = AddNode(&g, "torch.Tensor.permute", {Ref(g, x), Int(1), Int(2), Int(0)}, {3, 4, 2});
  const ValueId b = AddNode(&g, "torch.Tensor.permute", {Ref(g, a), Int(2), Int(0), Int(1)}, {2, 3, 4});
  const ValueId c = AddNode(&g, "torch.permute", {Ref(g, a), Ints({1, 2, 0})}, {4, 2, 3});  // not identity
  const ValueId r = AddNode(&g, "torch.relu", {Ref(g, b)}, {2, 3, 4});
  Return(&g, {r, c});
  const auto ops = Optimize(&g);
  // b forwarded to x; c = permute(a, [1,2,0]) of a = permute(x, [1,2,0]) is one permute(x, [2,0,1]),
  // and a, read by nothing else, goes.
  EXPECT_EQ(ops.count("torch.Tensor.permute"), 0u);
  ASSERT_EQ(ops.at("torch.permute"), 1);
  for (const auto& n : g.nodes) {
    if (n.op != "torch.permute") continue;
    EXPECT_EQ(n.inputs, ValueList{x});
    EXPECT_EQ(AsIntList(n.args[1]), (std::vector<int64_t>{2, 0, 1}));
  }
  EXPECT_EQ(g.nodes.back().inputs, ValueList{x});
}

// x.float() of a float32 x is the identity only while x stays float32: with x's dtype guarded
// (a dtype read, or the cast returned x itself) it goes; otherwise a replay may pass float64 and
// the cast converts, so it stays.
TEST(SimplifyRules, CastToTheRecordedDtypeGoesWhenItsInputDtypeIsGuardedOtherCastsStay) {
  for (const bool guarded : {true, false}) {
    Graph g;
    const ValueId x = AddInput(&g, {2});
    const ValueId f = AddNode(&g, "torch.Tensor.float", {Ref(g, x)}, {2});
    const ValueId d = AddNode(&g, "torch.Tensor.double", {Ref(g, f)}, {2}, v1::FLOAT64);
    const ValueId r = AddNode(&g, "torch.relu", {Ref(g, f)}, {2});
    Return(&g, {r, d});
    if (guarded) {
      v1::Guard guard;
      *guard.mutable_tensor() = Ref(g, x).tensor();
      guard.set_op("torch.Tensor.dtype");
      guard.mutable_observed()->set_dtype(v1::FLOAT32);
      g.guards.push_back(guard);
    }
    const auto ops = Optimize(&g);
    EXPECT_EQ(ops.count("torch.Tensor.float"), guarded ? 0u : 1u);
    EXPECT_EQ(ops.at("torch.Tensor.double"), 1);
    if (guarded) EXPECT_EQ(g.nodes[0].inputs, ValueList{x});
  }
}

TEST(SimplifyRules, ReshapeChainReadsTheChainSourceAndViewBecomesReshape) {
  Graph g;
  const ValueId x = AddInput(&g, {2, 3});
  const ValueId a = AddNode(&g, "torch.Tensor.flatten", {Ref(g, x)}, {6});
  const ValueId b = AddNode(&g, "torch.Tensor.view", {Ref(g, a), Int(3), Int(2)}, {3, 2});
  const ValueId r = AddNode(&g, "torch.relu", {Ref(g, b)}, {3, 2});
  Return(&g, {r});
  const auto ops = Optimize(&g);
  EXPECT_EQ(ops.count("torch.Tensor.flatten"), 0u);
  ASSERT_EQ(ops.at("torch.Tensor.reshape"), 1);  // x may not be viewable: view -> reshape
  EXPECT_EQ(g.nodes[0].inputs, ValueList{x});
}

// t = x.transpose(0, 1); c = t.contiguous(); s = c * 2; y = s.view(6): attention code's pattern.
// Returns y's producer's op after simplify, and whether the contiguous call is gone; `extra` adds
// a node before the return (an in-place write, an op schemas/ does not know) to the graph.
struct ContiguousCase {
  bool contiguous_gone = false;
  std::string view_op;
};
ContiguousCase OptimizeContiguous(bool return_contiguous, const std::string& extra = "") {
  Graph g;
  const ValueId x = AddInput(&g, {2, 3});
  const ValueId t = AddNode(&g, "torch.Tensor.transpose", {Ref(g, x), Int(0), Int(1)}, {3, 2});
  const ValueId c = AddNode(&g, "torch.Tensor.contiguous", {Ref(g, t)}, {3, 2});
  const ValueId s = AddNode(&g, "torch.Tensor.mul", {Ref(g, c), Int(2)}, {3, 2});
  const ValueId y = AddNode(&g, "torch.Tensor.view", {Ref(g, s), Int(6)}, {6});
  std::vector<ValueId> outs = {y};
  if (return_contiguous) outs.push_back(c);
  if (extra == "inplace") {
    const ValueId w = AddNode(&g, "torch.Tensor.mul", {Ref(g, x), Int(3)}, {2, 3});
    const ValueId w2 = AddNode(&g, "torch.Tensor.add_", {Ref(g, w), Int(1)}, {2, 3});
    g.nodes.back().mutated.push_back(Ref(g, w2).tensor());
    g.values[w2].storage = g.values[w].storage;
    Graph::IndexNode(&g.nodes.back());
    outs.push_back(w2);
  } else if (extra == "unknown") {
    outs.push_back(AddNode(&g, "mylib.custom_kernel", {Ref(g, x)}, {2, 3}));
  }
  Return(&g, outs);
  const auto ops = Optimize(&g);
  ContiguousCase out;
  out.contiguous_gone = ops.count("torch.Tensor.contiguous") == 0;
  for (const auto& n : g.nodes) {
    if (n.outputs[0] == y) out.view_op = n.op;
  }
  return out;
}

TEST(SimplifyRules, ContiguousGoesAndAViewOfWhatItMadeBecomesAReshape) {
  // Without the contiguous call s may be non-contiguous, which view refuses at replay.
  const auto c = OptimizeContiguous(false);
  EXPECT_TRUE(c.contiguous_gone);
  EXPECT_EQ(c.view_op, "torch.Tensor.reshape");
}

TEST(SimplifyRules, ContiguousStaysWhereTheLayoutCanMatter) {
  for (const auto& [returned, extra] : std::vector<std::pair<bool, std::string>>{
           {true, ""},           // the caller gets its result: the caller sees the layout
           {false, "unknown"}})  // an op schemas/ does not know may need contiguous memory
  {
    const auto c = OptimizeContiguous(returned, extra);
    EXPECT_FALSE(c.contiguous_gone) << extra;
    EXPECT_EQ(c.view_op, "torch.Tensor.view") << extra;
  }
  // An in-place write elsewhere in the graph does not keep it (torch view writes are explicit
  // write-back nodes in the graph, so a view turned into a reshape loses nothing).
  const auto c = OptimizeContiguous(false, "inplace");
  EXPECT_TRUE(c.contiguous_gone);
  EXPECT_EQ(c.view_op, "torch.Tensor.reshape");
}

}  // namespace
}  // namespace ivytrace
