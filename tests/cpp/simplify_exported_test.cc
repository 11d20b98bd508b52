// The clean-ups of an exported ONNX graph (core/export/onnx/simplify_exported.h), on graphs built
// by hand: what they drop, what they must keep, and the dims they must not take for others.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/export/onnx/simplify_exported.h"

namespace ivytrace {
namespace onnx_export {
namespace {

onnx::NodeProto* Add(onnx::GraphProto* g, const std::string& op, std::vector<std::string> in,
                     std::vector<std::string> out) {
  auto* n = g->add_node();
  n->set_op_type(op);
  for (auto& i : in) n->add_input(i);
  for (auto& o : out) n->add_output(o);
  return n;
}

void Input(onnx::GraphProto* g, const std::string& name, std::vector<std::string> dims) {
  auto* in = g->add_input();
  in->set_name(name);
  auto* t = in->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  for (const auto& d : dims) {
    auto* dim = t->mutable_shape()->add_dim();
    if (!d.empty() && d[0] >= '0' && d[0] <= '9') {
      dim->set_dim_value(std::stoll(d));
    } else {
      dim->set_dim_param(d);
    }
  }
}

void ScalarInit(onnx::GraphProto* g, const std::string& name, int64_t v) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  std::string raw(sizeof v, '\0');
  std::memcpy(raw.data(), &v, sizeof v);
  t->set_raw_data(raw);
}

std::vector<std::string> Ops(const onnx::GraphProto& g) {
  std::vector<std::string> ops;
  for (const auto& n : g.node()) ops.push_back(n.op_type());
  return ops;
}

TEST(MergeDuplicateNodes, DropsRepeatsAndRenamesTheirReaders) {
  onnx::GraphProto g;
  Add(&g, "Shape", {"x"}, {"s1"});
  Add(&g, "Shape", {"x"}, {"s2"});
  Add(&g, "Gather", {"s1", "i0"}, {"d1"});
  Add(&g, "Gather", {"s2", "i0"}, {"d2"});   // the same as d1 once s2 is s1
  Add(&g, "Add", {"d1", "d2"}, {"y"});
  g.add_output()->set_name("y");
  EXPECT_EQ(MergeDuplicateNodes(&g), 2);
  EXPECT_EQ(Ops(g), (std::vector<std::string>{"Shape", "Gather", "Add"}));
  EXPECT_EQ(g.node(2).input(0), "d1");
  EXPECT_EQ(g.node(2).input(1), "d1");
}

TEST(MergeDuplicateNodes, KeepsRandomOpsOutputsAndDifferentAttributes) {
  onnx::GraphProto g;
  Add(&g, "RandomNormalLike", {"x"}, {"r1"});
  Add(&g, "RandomNormalLike", {"x"}, {"r2"});
  auto* a = Add(&g, "Transpose", {"x"}, {"t1"});
  auto* at = a->add_attribute();
  at->set_name("perm");
  at->set_type(onnx::AttributeProto::INTS);
  at->add_ints(1);
  at->add_ints(0);
  Add(&g, "Transpose", {"x"}, {"t2"});        // no perm: another op
  Add(&g, "Identity", {"x"}, {"out1"});
  Add(&g, "Identity", {"x"}, {"out2"});       // a graph output of its own
  g.add_output()->set_name("out1");
  g.add_output()->set_name("out2");
  EXPECT_EQ(MergeDuplicateNodes(&g), 0);
  EXPECT_EQ(g.node_size(), 6);
}

TEST(RemoveUnreadNodes, DropsChainsNothingReads) {
  onnx::GraphProto g;
  Add(&g, "Shape", {"x"}, {"s"});
  Add(&g, "Gather", {"s", "i0"}, {"d"});      // read by nothing but the dead Unsqueeze
  Add(&g, "Unsqueeze", {"d", "axes"}, {"u"});
  Add(&g, "Relu", {"x"}, {"y"});
  g.add_output()->set_name("y");
  EXPECT_EQ(RemoveUnreadNodes(&g), 3);
  EXPECT_EQ(Ops(g), (std::vector<std::string>{"Relu"}));
}

// `x` of type [batch, 3]; `y` [n, n] (two dims of one name); the values read are x itself, and
// `h`, which inference says is [batch, n, 3].
struct DimGraph {
  onnx::GraphProto g;
  std::unordered_map<std::string, onnx::TypeProto> types;
  std::vector<int64_t> constants;

  DimGraph() {
    Input(&g, "x", {"batch", "3"});
    Input(&g, "y", {"n", "n"});
    for (int i = 0; i < 3; ++i) ScalarInit(&g, "i" + std::to_string(i), i);
    for (const auto& in : g.input()) types[in.name()] = in.type();
    auto& h = types["h"];
    auto* shape = h.mutable_tensor_type()->mutable_shape();
    shape->add_dim()->set_dim_param("batch");
    shape->add_dim()->set_dim_param("n");
    shape->add_dim()->set_dim_value(3);
    Add(&g, "Shape", {"h"}, {"sh"});
    Add(&g, "Gather", {"sh", "i0"}, {"h0"});   // batch: x's dim 0
    Add(&g, "Gather", {"sh", "i1"}, {"h1"});   // n: shared by two dims of y, kept
    Add(&g, "Gather", {"sh", "i2"}, {"h2"});   // 3: a constant
    Add(&g, "Concat", {"h0", "h1", "h2"}, {"out"});
    g.add_output()->set_name("out");
  }

  int Run() {
    return ReplaceKnownDimReads(
        &g,
        [&](const std::string& name) -> const onnx::TypeProto* {
          auto it = types.find(name);
          return it == types.end() ? nullptr : &it->second;
        },
        [&](int64_t n) {
          constants.push_back(n);
          return "const." + std::to_string(n);
        });
  }
};

TEST(ReplaceKnownDimReads, StaticDimsAndUniqueInputDimsOnly) {
  DimGraph d;
  EXPECT_EQ(d.Run(), 2);
  const auto& concat = d.g.node(d.g.node_size() - 1);
  ASSERT_EQ(concat.op_type(), "Concat");
  EXPECT_EQ(concat.input(0), "dim.batch");   // read from x, at the top of the graph
  EXPECT_EQ(concat.input(1), "h1");          // "n" names two dims of y: not trusted
  EXPECT_EQ(concat.input(2), "const.3");
  EXPECT_EQ(d.g.node(0).op_type(), "Shape");
  EXPECT_EQ(d.g.node(0).input(0), "x");
  EXPECT_EQ(d.g.node(1).output(0), "dim.batch");
  EXPECT_EQ(d.constants, (std::vector<int64_t>{0, 3}));   // x's axis 0, then the static dim
}

TEST(ReplaceKnownDimReads, UnknownShapesAreLeftAlone) {
  DimGraph d;
  d.types.erase("h");
  EXPECT_EQ(d.Run(), 0);
  EXPECT_EQ(d.g.node_size(), 5);
}

TEST(HasSubgraphs, SeesIfBranches) {
  onnx::GraphProto g;
  Add(&g, "Relu", {"x"}, {"y"});
  EXPECT_FALSE(HasSubgraphs(g));
  auto* n = Add(&g, "If", {"c"}, {"z"});
  auto* a = n->add_attribute();
  a->set_name("then_branch");
  a->set_type(onnx::AttributeProto::GRAPH);
  EXPECT_TRUE(HasSubgraphs(g));
}

}  // namespace
}  // namespace onnx_export
}  // namespace ivytrace
