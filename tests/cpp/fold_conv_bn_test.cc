// fold-conv-bn on hand-built graphs: the folded constants' values, and the cases it must leave.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/ir/arg.h"
#include "core/ir/verifier.h"
#include "core/passes/pass_registry.h"
#include "core/schema/schema_registry.h"
#include "graph_fixture.h"

namespace ivytrace {
namespace {

using namespace testing_graph;  // NOLINT


// x[1,1,1,2] -> conv2d(W = [[2]], b = [1] or none) (1x1 kernel, 1 channel) -> batch_norm -> returned.
struct ConvBn {
  Graph g;
  ValueId conv, bn;
  ConvBn(bool conv_bias, bool training, bool second_reader) {
    Value x;
    x.kind = v1::INPUT;
    x.dtype = v1::FLOAT32;
    x.shape = {1, 1, 1, 2};
    x.storage = 1;
    const ValueId xv = g.AddValue(x);
    v1::GraphInput in;
    in.set_name("x");
    *in.mutable_value() = Ref(g, xv);
    g.inputs.push_back(in);
    std::vector<v1::Arg> cargs = {Ref(g, xv), Ref(g, g.AddConstant(Floats({2}, {1, 1, 1, 1}, "c.weight")))};
    if (conv_bias) cargs.push_back(Ref(g, g.AddConstant(Floats({1}, {1}, "c.bias"))));
    conv = AddNode(&g, "torch.nn.functional.conv2d", cargs, {1, 1, 1, 2});
    bn = AddNode(&g, "torch.nn.functional.batch_norm",
                 {Ref(g, conv), Ref(g, g.AddConstant(Floats({0.5f}, {1}, "bn.running_mean"))),
                  Ref(g, g.AddConstant(Floats({3.0f}, {1}, "bn.running_var"))),
                  Ref(g, g.AddConstant(Floats({4.0f}, {1}, "bn.weight"))),
                  Ref(g, g.AddConstant(Floats({-1.0f}, {1}, "bn.bias"))), Bool(training)},
                 {1, 1, 1, 2});
    auto* t = g.outputs.mutable_tuple();
    *t->add_items() = Ref(g, bn);
    if (second_reader) *t->add_items() = Ref(g, conv);
  }
  size_t Run() {
    PipelineOptions o;
    o.passes = {"fold-conv-bn", "dce"};
    o.verify = true;
    std::vector<PassReport> report;
    EXPECT_TRUE(RunPipeline(o, &g, &report).ok());
    return report[0].removed;
  }
};

TEST(FoldConvBn, FoldsStatsIntoWeightAndBias) {
  for (bool bias : {false, true}) {
    ConvBn c(bias, /*training=*/false, /*second_reader=*/false);
    ASSERT_EQ(c.Run(), 1u);
    ASSERT_EQ(c.g.nodes.size(), 1u);
    const Node& conv = c.g.nodes[0];
    ASSERT_EQ(conv.canonical(), "conv2d");
    ASSERT_EQ(conv.inputs.size(), 3u);
    const double s = 4.0 / std::sqrt(3.0 + 1e-5);
    const ValueId w = conv.inputs[1], b = conv.inputs[2];
    EXPECT_EQ(c.g.values[w].name, "c.weight.folded_bn");
    EXPECT_EQ(c.g.values[b].name, "c.bias.folded_bn");
    EXPECT_FLOAT_EQ(DataOf(c.g, w)[0], static_cast<float>(2 * s));
    EXPECT_FLOAT_EQ(DataOf(c.g, b)[0], static_cast<float>(((bias ? 1 : 0) - 0.5) * s - 1));
    // The region now returns the conv's result.
    EXPECT_EQ(c.g.OutputValues(), std::vector<ValueId>{conv.outputs[0]});
    EXPECT_TRUE(VerifyGraph(c.g).ok());
  }
}

TEST(FoldConvBn, LeavesTrainingModeAndConvOutputsWithOtherReaders) {
  ConvBn training(false, /*training=*/true, false);
  EXPECT_EQ(training.Run(), 0u);
  EXPECT_EQ(training.g.nodes.size(), 2u);
  ConvBn shared(false, false, /*second_reader=*/true);
  EXPECT_EQ(shared.Run(), 0u);
  EXPECT_EQ(shared.g.nodes.size(), 2u);
}

}  // namespace
}  // namespace ivytrace
