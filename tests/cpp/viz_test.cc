// The viewers' model of a graph (module call groups, folded constants), the graph diff and the
// escaping of names in DOT and HTML.
#include <gtest/gtest.h>

#include "core/viz/dot_writer.h"
#include "core/viz/graph_diff.h"
#include "core/viz/html_writer.h"
#include "core/viz/render.h"
#include "core/viz/text_escape.h"
#include "core/viz/view_model.h"
#include "tests/cpp/graph_fixture.h"

namespace ivytrace {
namespace {

using namespace testing_graph;

ValueId Op(Graph* g, const std::string& op, ValueId in, const std::string& scope) {
  const ValueId v = AddNode(g, op, {Ref(*g, in)}, {2, 3});
  g->nodes.back().scope = scope;
  return v;
}

std::vector<std::string> Paths(const ViewModel& vm) {
  std::vector<std::string> out;
  for (size_t i = 1; i < vm.groups.size(); ++i) out.push_back(vm.groups[i].path);
  return out;
}

TEST(ViewModel, EachCallOfAReusedModuleIsItsOwnNestedGroup) {
  Graph g;
  ValueId x = AddInput(&g, {2, 3});
  x = Op(&g, "torch.relu", x, "layer1.0.relu");
  x = Op(&g, "torch.neg", x, "layer1.0");
  x = Op(&g, "torch.relu", x, "layer1.0.relu");  // the same nn.ReLU, called again
  x = Op(&g, "torch.relu", x, "layer1.1.relu");
  x = Op(&g, "torch.exp", x, "");
  Return(&g, {x});
  const ViewModel vm = BuildViewModel(g);
  EXPECT_EQ(Paths(vm), (std::vector<std::string>{"layer1", "layer1.0", "layer1.0.relu", "layer1.0.relu #2",
                                                  "layer1.1", "layer1.1.relu"}));
  ASSERT_EQ(vm.nodes.size(), 7u);  // input, 5 ops, output
  EXPECT_EQ(vm.nodes[0].kind, ViewNode::kInput);
  EXPECT_EQ(vm.groups[vm.nodes[3].group].path, "layer1.0.relu #2");
  EXPECT_EQ(vm.nodes[5].group, 0);  // top-level exp
  EXPECT_EQ(vm.nodes[6].kind, ViewNode::kOutput);
  EXPECT_EQ(vm.nodes[6].inputs, std::vector<int>{5});
  EXPECT_EQ(vm.nodes[2].name, "%" + std::to_string(g.nodes[1].outputs[0]));  // as inspect --graph names it
}

TEST(ViewModel, SymbolicDimsAreShownByName) {
  // x.view(b, t // 2, -1): the input's dims the graph follows carry their names, and each
  // shape-derived int shows its expression over them.
  Graph g;
  const ValueId x = AddInput(&g, {2, 8, 4});
  const ValueId b = AddNode(&g, "ivytrace.sym.size", {Ref(g, x), Int(0)}, {}, v1::SYM_INT);
  const ValueId t = AddNode(&g, "ivytrace.sym.size", {Ref(g, x), Int(1)}, {}, v1::SYM_INT);
  const ValueId h = AddNode(&g, "ivytrace.sym.floordiv", {Ref(g, t), Int(2)}, {}, v1::SYM_INT);
  const ValueId y = AddNode(&g, "torch.Tensor.view", {Ref(g, x), Ref(g, b), Ref(g, h), Int(-1)}, {2, 4, 8});
  const ValueId n = AddNode(&g, "ivytrace.sym.size", {Ref(g, y), Int(2)}, {}, v1::SYM_INT);
  const ValueId z = AddNode(&g, "torch.Tensor.mul", {Ref(g, y), Ref(g, n)}, {2, 4, 8});
  Return(&g, {z});
  const ViewModel vm = BuildViewModel(g);
  // Dim 2 is never read, but no weight fixes it either (`-1` takes it): it follows the input too.
  EXPECT_EQ(vm.nodes[0].shape, "[batch=2, x_dim1=8, x_dim2=4]");
  EXPECT_EQ(vm.nodes[1].shape, " = batch");
  EXPECT_EQ(vm.nodes[3].shape, " = x_dim1 // 2");
  EXPECT_EQ(vm.nodes[4].shape, "[2, 4, 8]");
  EXPECT_EQ(vm.nodes[5].shape, " = %" + std::to_string(y) + ".shape[2]");  // a computed tensor's dim
  EXPECT_EQ(vm.nodes[5].dtype + vm.nodes[5].shape, "sym_int = %" + std::to_string(y) + ".shape[2]");
}

TEST(ViewModel, ConstantsAreFoldedIntoTheirConsumers) {
  Graph g;
  const ValueId x = AddInput(&g, {2});
  const ValueId w = g.AddConstant(Floats({1, 2}, {2}, "fc.weight"));
  const ValueId y = AddNode(&g, "torch.mul", {Ref(g, x), Ref(g, w)}, {2});
  Return(&g, {y});
  const ViewModel vm = BuildViewModel(g);
  ASSERT_EQ(vm.nodes.size(), 3u);
  EXPECT_EQ(vm.nodes[1].consts, std::vector<ValueId>{w});
  EXPECT_EQ(vm.const_names[w], "fc.weight");
  EXPECT_EQ(vm.const_types[w], "float32[2]");
  EXPECT_EQ(vm.constant_count, 1u);
  const std::string dot = ViewModelToDot(vm, DotOptions{});
  EXPECT_EQ(dot.find("fc.weight"), std::string::npos);  // hidden by default
  EXPECT_NE(dot.find("+1 constant"), std::string::npos);
  EXPECT_NE(ViewModelToDot(vm, DotOptions{true}).find("fc.weight"), std::string::npos);
  EXPECT_EQ(ViewModelToHtml(vm, nullptr).find(std::string("\0\0\x80\x3f", 4)), std::string::npos);
}

TEST(ViewModel, WideGroupsAreSplitIntoChunks) {
  Graph g;
  ValueId x = AddInput(&g, {2, 3});
  for (size_t i = 0; i < 2 * kMaxGroupChildren + 5; ++i) x = Op(&g, "torch.relu", x, "");
  Return(&g, {x});
  const ViewModel vm = BuildViewModel(g);
  ASSERT_EQ(vm.groups[0].groups.size(), 3u);
  EXPECT_EQ(vm.groups[0].nodes.size(), 2u);  // the input and the output stay at the top level
  EXPECT_EQ(vm.groups[vm.groups[0].groups[0]].nodes.size(), kMaxGroupChildren);
  EXPECT_EQ(vm.groups[vm.groups[0].groups[2]].nodes.size(), 5u);
}

TEST(GraphDiff, MatchesByModuleOpAndPosition) {
  Graph a, b;
  ValueId x = AddInput(&a, {2, 3});
  x = Op(&a, "torch.relu", x, "block");
  x = Op(&a, "torch.neg", x, "block");
  x = Op(&a, "torch.exp", x, "block");
  Return(&a, {x});
  ValueId y = AddInput(&b, {2, 3});
  y = Op(&b, "torch.relu", y, "block");
  y = AddNode(&b, "torch.exp", {Ref(b, y)}, {3, 2});  // changed shape
  b.nodes.back().scope = "block";
  y = Op(&b, "torch.tanh", y, "block");               // added
  Return(&b, {y});
  const GraphDiff d = DiffViewModels(BuildViewModel(a), BuildViewModel(b));
  EXPECT_EQ(d.added, 1u);
  EXPECT_EQ(d.removed, 1u);
  EXPECT_EQ(d.changed, 1u);
  EXPECT_EQ(d.same, 3u);  // input, relu, output
  ASSERT_EQ(d.merged.nodes.size(), d.status.size());
  EXPECT_EQ(d.merged.nodes.back().op, "torch.neg");
  EXPECT_EQ(d.status.back(), DiffStatus::kRemoved);
  EXPECT_EQ(d.merged.groups[d.merged.nodes.back().group].path, "block");
}

TEST(TextEscape, ControlCharactersNulAndMarkupStayInert) {
  const std::string evil = std::string("a\0b\x01\"</script><b>\xff", 18);
  std::string json;
  AppendJsonString(evil, &json);
  EXPECT_EQ(json, "\"a\\u0000b\\u0001\\\"\\u003c/script\\u003e\\u003cb\\u003e\\ufffd\"");
  EXPECT_EQ(DotText(evil), "a\\\\x00b\\\\x01\\\"</script><b>\xEF\xBF\xBD");
  EXPECT_EQ(HtmlText(evil), "a\\x00b\\x01&quot;&lt;/script&gt;&lt;b&gt;\xEF\xBF\xBD");
  EXPECT_EQ(ValidUtf8("ok \xC3\xA9 \xC3"), "ok \xC3\xA9 \xEF\xBF\xBD");
}

TEST(TextEscape, GraphvizRendersAGraphWithAnEvilScope) {
  Graph g;
  ValueId x = AddInput(&g, {2, 3});
  x = Op(&g, "torch.relu", x, std::string("m\0\n\"x\\", 6));
  Return(&g, {x});
  std::string svg;
  ASSERT_TRUE(RenderDot(ViewModelToDot(BuildViewModel(g), DotOptions{}), "svg", &svg).ok());
  EXPECT_EQ(svg.find('\0'), std::string::npos);
  EXPECT_NE(svg.find("m\\x00"), std::string::npos);
}

}  // namespace
}  // namespace ivytrace
