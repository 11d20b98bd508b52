// The simplify rules for casts, transpose/permute pairs and reshape chains, on hand-built graphs.
#include <gtest/gtest.h>

#include <map>

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
  EXPECT_EQ(ops.at("torch.Tensor.transpose"), 2);  // c and d
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
  EXPECT_EQ(ops.at("torch.Tensor.permute"), 1);
  EXPECT_EQ(ops.at("torch.permute"), 1);
  EXPECT_EQ(g.nodes.back().inputs, ValueList{x});
}

TEST(SimplifyRules, CastToTheRecordedDtypeGoesOtherCastsStay) {
  Graph g;
  const ValueId x = AddInput(&g, {2});
  const ValueId f = AddNode(&g, "torch.Tensor.float", {Ref(g, x)}, {2});
  const ValueId d = AddNode(&g, "torch.Tensor.double", {Ref(g, f)}, {2}, v1::FLOAT64);
  const ValueId r = AddNode(&g, "torch.relu", {Ref(g, f)}, {2});
  Return(&g, {r, d});
  const auto ops = Optimize(&g);
  EXPECT_EQ(ops.count("torch.Tensor.float"), 0u);
  EXPECT_EQ(ops.at("torch.Tensor.double"), 1);
  EXPECT_EQ(g.nodes[0].inputs, ValueList{x});
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

}  // namespace
}  // namespace ivytrace
