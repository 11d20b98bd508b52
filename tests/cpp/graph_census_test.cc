// The graph's op census (what passes ask before walking a graph) and the per-node `writes` bit:
// both are copies of what the nodes say, so the verifier checks them; and ValueRenames, the
// rename table simplify, cse and fold-conv-bn share.
#include <gtest/gtest.h>

#include "core/ir/verifier.h"
#include "core/passes/value_renames.h"
#include "graph_fixture.h"

namespace ivytrace {
namespace {

using testing_graph::AddInput;
using testing_graph::AddNode;
using testing_graph::Ref;
using testing_graph::Return;

TEST(OpCensus, CountsNodesPushedDirectlyAndForgetsNodesCompactRemoves) {
  Graph g;
  const ValueId x = AddInput(&g, {2, 3});
  const ValueId r = AddNode(&g, "torch.relu", {Ref(g, x)}, {2, 3});
  EXPECT_TRUE(g.MayHoldCanonical("relu"));
  EXPECT_FALSE(g.MayHoldCanonical("batch_norm"));
  EXPECT_FALSE(g.MayHoldFlags(v1::FOLDABLE_OP));

  const ValueId s = AddNode(&g, "torch.sigmoid", {Ref(g, r)}, {2, 3});
  g.nodes.back().flags = v1::FOLDABLE_OP;  // before the census is next asked: still counted
  Return(&g, {r});
  EXPECT_TRUE(g.MayHoldCanonical("sigmoid"));
  EXPECT_TRUE(g.MayHoldFlags(v1::FOLDABLE_OP));
  (void)s;

  // Erased but not compacted: may still count (a superset is allowed); Compact() takes it anew.
  g.nodes.back().erased = true;
  g.Compact();
  EXPECT_FALSE(g.MayHoldCanonical("sigmoid"));
  EXPECT_FALSE(g.MayHoldFlags(v1::FOLDABLE_OP));
  EXPECT_TRUE(g.MayHoldCanonical("relu"));
  EXPECT_TRUE(VerifyGraph(g).ok());
}

TEST(OpCensus, TheVerifierFindsANodeChangedWithoutRecount) {
  Graph g;
  const ValueId x = AddInput(&g, {2, 3});
  Return(&g, {AddNode(&g, "torch.relu", {Ref(g, x)}, {2, 3})});
  ASSERT_TRUE(g.MayHoldCanonical("relu"));  // counted now
  g.nodes[0].schema = SchemaRegistry::Default().Find("torch.sigmoid");
  const Status st = VerifyGraph(g);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("op census"), std::string::npos) << st.message();
  g.Recount();
  EXPECT_TRUE(g.MayHoldCanonical("sigmoid"));
  EXPECT_TRUE(VerifyGraph(g).ok());
}

TEST(NodeWrites, IndexNodeSetsItAndTheVerifierFindsAStaleOne) {
  Graph g;
  const ValueId x = AddInput(&g, {2, 3});
  Return(&g, {AddNode(&g, "torch.relu", {Ref(g, x)}, {2, 3})});
  EXPECT_FALSE(g.nodes[0].writes);
  g.nodes[0].mutated.push_back(Ref(g, x).tensor());  // changed without IndexNode
  const Status st = VerifyGraph(g);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("IndexNode"), std::string::npos) << st.message();
  Graph::IndexNode(&g.nodes[0]);
  EXPECT_TRUE(g.nodes[0].writes);
}

TEST(ValueRenames, RewritesOnlyNodesThatReadARenamedValue) {
  Graph g;
  const ValueId x = AddInput(&g, {2, 3});
  const ValueId a = AddNode(&g, "torch.relu", {Ref(g, x)}, {2, 3});
  const ValueId b = AddNode(&g, "torch.relu", {Ref(g, x)}, {2, 3});
  const ValueId c = AddNode(&g, "torch.Tensor.add", {Ref(g, a), Ref(g, b)}, {2, 3});
  const ValueId d = AddNode(&g, "torch.sigmoid", {Ref(g, x)}, {2, 3});
  Return(&g, {b, c});

  ValueRenames renames;
  EXPECT_TRUE(renames.empty());
  EXPECT_EQ(renames(b), b);
  renames.Set(b, a);
  EXPECT_EQ(renames(b), a);
  EXPECT_EQ(renames(c), c);
  EXPECT_EQ(renames(1000), 1000u);  // past the table: not renamed

  renames.ApplyTo(&g.nodes[2]);
  EXPECT_EQ(g.nodes[2].args[1].tensor().value(), a);
  EXPECT_EQ(g.nodes[2].inputs, (ValueList{a, a}));
  renames.ApplyTo(&g.nodes[3]);
  EXPECT_EQ(g.nodes[3].inputs, (ValueList{x}));
  renames.ApplyToResultsAndGuards(&g);
  EXPECT_EQ(g.OutputValues(), (std::vector<ValueId>{a, c}));
  (void)d;
}

}  // namespace
}  // namespace ivytrace
