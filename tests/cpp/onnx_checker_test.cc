// CheckOnnxModel (core/export/onnx/onnx_exporter.h) against onnx::checker::check_model: the same
// models pass, the same models fail (with onnx's message), and the model is left as it was.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include <google/protobuf/arena.h>

#include "core/export/onnx/onnx_exporter.h"
#include "onnx/checker.h"

namespace ivytrace {
namespace {

// x -> Relu -> r -> Add(r, one) -> y, with an initializer `one`.
onnx::ModelProto SmallModel() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* imp = m.add_opset_import();
  imp->set_domain("");
  imp->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto add_info = [](onnx::ValueInfoProto* v, const std::string& name) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_value(4);
  };
  add_info(g->add_input(), "x");
  add_info(g->add_output(), "y");
  auto* one = g->add_initializer();
  one->set_name("one");
  one->set_data_type(onnx::TensorProto::FLOAT);
  one->add_float_data(1.0f);
  auto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->set_name("n0.Relu");
  relu->add_input("x");
  relu->add_output("r");
  auto* add = g->add_node();
  add->set_op_type("Add");
  add->set_name("n1.Add");
  add->add_input("r");
  add->add_input("one");
  add->add_output("y");
  return m;
}

// "" when `check` passes, else its message.
std::string Outcome(const std::function<void()>& check) {
  try {
    check();
  } catch (const onnx::checker::ValidationError& e) {
    return e.what();
  }
  return "";
}

void ExpectSameAsOnnx(onnx::ModelProto m, bool valid) {
  const std::string before = m.SerializeAsString();
  const std::string onnx_says = Outcome([&] { onnx::checker::check_model(m); });
  const std::string we_say = Outcome([&] { CheckOnnxModel(&m); });
  EXPECT_EQ(onnx_says.empty(), valid) << onnx_says;
  EXPECT_EQ(we_say, onnx_says);
  EXPECT_EQ(m.SerializeAsString(), before) << "the model changed";
  // The same on an arena, as the exporter builds it.
  google::protobuf::Arena arena;
  auto* on_arena = google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
  on_arena->CopyFrom(m);
  EXPECT_EQ(Outcome([&] { CheckOnnxModel(on_arena); }), onnx_says);
  EXPECT_EQ(on_arena->SerializeAsString(), before) << "the model on the arena changed";
}

TEST(OnnxChecker, AValidModelPasses) { ExpectSameAsOnnx(SmallModel(), true); }

TEST(OnnxChecker, AnInputReadBeforeItIsDefinedFails) {
  auto m = SmallModel();
  m.mutable_graph()->mutable_node()->SwapElements(0, 1);
  ExpectSameAsOnnx(m, false);
}

TEST(OnnxChecker, AnUndefinedInputFails) {
  auto m = SmallModel();
  m.mutable_graph()->mutable_node(1)->set_input(1, "nowhere");
  ExpectSameAsOnnx(m, false);
}

TEST(OnnxChecker, AnOmittedOptionalInputPasses) {
  auto m = SmallModel();
  auto* clip = m.mutable_graph()->add_node();
  clip->set_op_type("Clip");
  clip->set_name("n2.Clip");
  clip->add_input("y");
  clip->add_input("");
  clip->add_input("one");
  clip->add_output("c");
  ExpectSameAsOnnx(m, true);
}

TEST(OnnxChecker, AValueDefinedTwiceFails) {
  auto m = SmallModel();
  m.mutable_graph()->mutable_node(1)->set_output(0, "r");
  ExpectSameAsOnnx(m, false);
  auto n = SmallModel();
  n.mutable_graph()->mutable_node(0)->set_output(0, "x");  // an input's name
  ExpectSameAsOnnx(n, false);
}

TEST(OnnxChecker, InitializersNeedUniqueNonEmptyNamesAndValidData) {
  auto m = SmallModel();
  *m.mutable_graph()->add_initializer() = m.graph().initializer(0);
  ExpectSameAsOnnx(m, false);
  auto n = SmallModel();
  n.mutable_graph()->mutable_initializer(0)->clear_float_data();
  ExpectSameAsOnnx(n, false);
  auto o = SmallModel();
  o.mutable_graph()->mutable_initializer(0)->set_name("x");  // may share an input's name
  o.mutable_graph()->mutable_node(1)->set_input(1, "x");
  ExpectSameAsOnnx(o, true);
}

TEST(OnnxChecker, BadNodesFailInOnnxsOwnNodeCheck) {
  auto m = SmallModel();
  m.mutable_graph()->mutable_node(1)->set_op_type("NoSuchOp");
  ExpectSameAsOnnx(m, false);
  auto n = SmallModel();
  n.mutable_graph()->mutable_node(1)->mutable_input()->RemoveLast();  // Add with one input
  ExpectSameAsOnnx(n, false);
  auto o = SmallModel();
  o.mutable_graph()->mutable_node(0)->set_domain("no.such.domain");
  ExpectSameAsOnnx(o, false);
}

TEST(OnnxChecker, ModelLevelChecksAreOnnxs) {
  auto m = SmallModel();
  m.clear_opset_import();
  ExpectSameAsOnnx(m, false);
  auto n = SmallModel();
  for (int i = 0; i < 2; ++i) {
    auto* p = n.add_metadata_props();
    p->set_key("k");
    p->set_value("v");
  }
  ExpectSameAsOnnx(n, false);
  auto o = SmallModel();
  o.mutable_graph()->mutable_output(0)->clear_type();
  ExpectSameAsOnnx(o, false);
  auto p = SmallModel();
  p.mutable_graph()->clear_name();
  ExpectSameAsOnnx(p, false);
}

TEST(OnnxChecker, AModelWithASubgraphIsCheckedWhole) {
  auto m = SmallModel();
  auto* g = m.mutable_graph();
  auto* cond = g->add_initializer();
  cond->set_name("cond");
  cond->set_data_type(onnx::TensorProto::BOOL);
  cond->add_int32_data(1);
  auto* node = g->add_node();
  node->set_op_type("If");
  node->set_name("n2.If");
  node->add_input("cond");
  node->add_output("z");
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* a = node->add_attribute();
    a->set_name(branch);
    a->set_type(onnx::AttributeProto::GRAPH);
    auto* sub = a->mutable_g();
    sub->set_name(branch);
    auto* out = sub->add_output();
    out->set_name(std::string(branch) + ".out");
    out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    auto* id = sub->add_node();
    id->set_op_type("Identity");
    id->add_input("y");  // the outer graph's value
    id->add_output(std::string(branch) + ".out");
  }
  ExpectSameAsOnnx(m, true);
  node->mutable_attribute(0)->mutable_g()->mutable_node(0)->set_input(0, "nowhere");
  ExpectSameAsOnnx(m, false);
}

}  // namespace
}  // namespace ivytrace
