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

}  // namespace
}  // namespace ivytrace
