#include "core/schema/binding.h"

#include <gtest/gtest.h>

#include "core/schema/schema_registry.h"

namespace ivytrace {
namespace {

v1::Arg Int(int64_t i) {
  v1::Arg a;
  a.set_i(i);
  return a;
}

v1::Arg Tensor(uint32_t value) {
  v1::Arg a;
  a.mutable_tensor()->set_value(value);
  return a;
}

TEST(SchemaRegistry, EmbeddedSchemasParseAndCoverTheFoundationOps) {
  const auto& reg = SchemaRegistry::Default();
  for (const char* op : {"torch.nn.functional.conv2d", "torch.nn.functional.linear", "torch.Tensor.add_",
                         "torch.Tensor.__getitem__", "torch.cat", "torch.nn.functional.batch_norm",
                         "torch.Tensor.view", "torch.flatten", "torch.rand"}) {
    EXPECT_NE(reg.Find(op), nullptr) << op;
  }
  EXPECT_EQ(reg.Find("os.system"), nullptr);
  EXPECT_TRUE(reg.Find("torch.rand")->random());
  EXPECT_EQ(reg.Find("torch.Tensor.add_")->writes(), 1u);
  EXPECT_TRUE(SchemaRegistry::IsPure(*reg.Find("torch.add")));
  EXPECT_TRUE(reg.IsAllowedSymbol("torch.float32"));
}

TEST(BoundCall, PositionalKeywordDefaultsAndVariadics) {
  const auto& reg = SchemaRegistry::Default();
  Node conv;
  conv.op = "torch.nn.functional.conv2d";
  conv.schema = reg.Find(conv.op);
  conv.args = {Tensor(0), Tensor(1)};
  v1::KwArg pad;
  pad.set_name("padding");
  *pad.mutable_value() = Int(1);
  conv.kwargs = {pad};
  BoundCall call;
  ASSERT_TRUE(BoundCall::Bind(conv, &call).ok());
  EXPECT_EQ(call.Tensor("weight"), 1u);
  EXPECT_TRUE(call.IsNone("bias"));
  EXPECT_EQ(call.IntList("padding", 2), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(call.IntList("stride", 2), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(call.Int("groups"), 1);

  Node view;
  view.op = "torch.Tensor.view";
  view.schema = reg.Find(view.op);
  view.args = {Tensor(0), Int(2), Int(-1)};
  ASSERT_TRUE(BoundCall::Bind(view, &call).ok());
  EXPECT_EQ(call.IntList("shape"), (std::vector<int64_t>{2, -1}));

  Node rsub;  // 1 - x arrives as x.__rsub__(1): "other" is x, "input" is 1
  rsub.op = "torch.Tensor.__rsub__";
  rsub.schema = reg.Find(rsub.op);
  rsub.args = {Tensor(4), Int(1)};
  ASSERT_TRUE(BoundCall::Bind(rsub, &call).ok());
  EXPECT_EQ(call.Tensor("other"), 4u);
  EXPECT_EQ(call.Int("input"), 1);

  Node bad = conv;
  v1::KwArg nope;
  nope.set_name("nope");
  bad.kwargs = {nope};
  Status st = BoundCall::Bind(bad, &call);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("nope"), std::string::npos);
}

TEST(BoundCall, AliasesBindTheFrameworksKeywordNames) {
  const auto& reg = SchemaRegistry::Default();
  Node clip;
  clip.op = "numpy.clip";
  clip.schema = reg.Find(clip.op);
  clip.args = {Tensor(0)};
  v1::KwArg lo, hi;
  lo.set_name("a_min");
  *lo.mutable_value() = Int(-1);
  hi.set_name("a_max");
  *hi.mutable_value() = Int(2);
  clip.kwargs = {lo, hi};
  BoundCall call;
  ASSERT_TRUE(BoundCall::Bind(clip, &call).ok());
  EXPECT_EQ(call.Int("min"), -1);
  EXPECT_EQ(call.Int("max"), 2);
  clip.kwargs[0].set_name("a_low");
  EXPECT_FALSE(BoundCall::Bind(clip, &call).ok());
}

TEST(BoundCall, UnreadGivenListsOnlyGivenNonDefaultArgumentsNothingAskedFor) {
  const auto& reg = SchemaRegistry::Default();
  Node mx;
  mx.op = "numpy.max";
  mx.schema = reg.Find(mx.op);
  mx.args = {Tensor(0), Int(1)};
  v1::KwArg initial, keepdims;
  initial.set_name("initial");
  *initial.mutable_value() = Int(3);
  keepdims.set_name("keepdims");
  keepdims.mutable_value()->set_b(false);   // given, but the default
  mx.kwargs = {initial, keepdims};
  BoundCall call;
  ASSERT_TRUE(BoundCall::Bind(mx, &call).ok());
  EXPECT_EQ(call.UnreadGiven(), (std::vector<std::string>{"input", "axis", "initial"}));
  call.Tensor("input");
  BoundCall copy = call;   // a lowering that copies the call to Set a parameter reads the original's
  copy.Set("dim", Int(1));
  copy.Int("axis");
  EXPECT_EQ(call.UnreadGiven(), (std::vector<std::string>{"initial"}));
  call.IsNone("initial");
  EXPECT_TRUE(call.UnreadGiven().empty());
}

}  // namespace
}  // namespace ivytrace
