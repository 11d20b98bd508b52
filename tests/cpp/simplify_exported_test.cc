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

onnx::TensorProto* FloatInit(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  size_t n = 1;
  for (int64_t d : dims) {
    t->add_dims(d);
    n *= static_cast<size_t>(d);
  }
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), n * sizeof(float)));
  return t;
}

float At(const onnx::TensorProto& t, size_t i) {
  float f;
  std::memcpy(&f, t.raw_data().data() + i * sizeof f, sizeof f);
  return f;
}

void Perm(onnx::NodeProto* n, std::vector<int64_t> perm) {
  auto* a = n->add_attribute();
  a->set_name("perm");
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t p : perm) a->add_ints(p);
}

TEST(FoldInitializerTransposes, AWeightReadOnlyByItsTransposeIsStoredTransposed) {
  onnx::GraphProto g;
  FloatInit(&g, "fc.weight", {2, 3});          // [[0 1 2] [3 4 5]]
  Add(&g, "Transpose", {"fc.weight"}, {"wt"});  // no perm: reversed
  Add(&g, "MatMul", {"x", "wt"}, {"y"});
  FloatInit(&g, "cube", {2, 3, 4});
  Perm(Add(&g, "Transpose", {"cube"}, {"ct"}), {1, 2, 0});
  Add(&g, "Add", {"y", "ct"}, {"z"});
  g.add_output()->set_name("z");
  EXPECT_EQ(FoldInitializerTransposes(&g), 2);
  EXPECT_EQ(Ops(g), (std::vector<std::string>{"MatMul", "Add"}));
  EXPECT_EQ(g.node(0).input(1), "fc.weight.T");
  EXPECT_EQ(g.node(1).input(1), "cube.T");
  const auto& w = g.initializer(0);
  EXPECT_EQ(w.name(), "fc.weight.T");
  ASSERT_EQ(w.dims_size(), 2);
  EXPECT_EQ(w.dims(0), 3);
  EXPECT_EQ(w.dims(1), 2);
  const std::vector<float> want = {0, 3, 1, 4, 2, 5};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(At(w, i), want[i]) << i;
  // cube [2,3,4] with perm (1,2,0): out[j][k][i] = in[i][j][k] = i*12 + j*4 + k, out dims [3,4,2].
  const auto& c = g.initializer(1);
  EXPECT_EQ(std::vector<int64_t>(c.dims().begin(), c.dims().end()), (std::vector<int64_t>{3, 4, 2}));
  for (size_t j = 0; j < 3; ++j) {
    for (size_t k = 0; k < 4; ++k) {
      for (size_t i = 0; i < 2; ++i) EXPECT_EQ(At(c, (j * 4 + k) * 2 + i), static_cast<float>(i * 12 + j * 4 + k));
    }
  }
}

TEST(FoldInitializerTransposes, TiedWeightsOutputsAndOddTransposesAreLeftAlone) {
  onnx::GraphProto g;
  FloatInit(&g, "wte", {4, 2});
  Add(&g, "Gather", {"wte", "ids"}, {"emb"});   // the weight is read as it is, too
  Add(&g, "Transpose", {"wte"}, {"wte_t"});
  FloatInit(&g, "out_w", {2, 2});
  Add(&g, "Transpose", {"out_w"}, {"o"});        // its result is a graph output
  FloatInit(&g, "bad", {2, 2});
  Perm(Add(&g, "Transpose", {"bad"}, {"b"}), {0, 0});  // not a permutation
  g.add_output()->set_name("o");
  EXPECT_EQ(FoldInitializerTransposes(&g), 0);
  EXPECT_EQ(g.node_size(), 4);
}

TEST(DropRedundantGates, AValueComputedAfterTheGateIsNotGatedAgain) {
  onnx::GraphProto g;
  ScalarInit(&g, "two", 2);
  Add(&g, "Concat", {"check0", "check1"}, {"all"});
  Add(&g, "Size", {"all"}, {"count"});
  Add(&g, "Equal", {"count", "two"}, {"gate"});
  Add(&g, "Where", {"gate", "x", "x"}, {"x_gated"});        // x is from before the gate: kept
  Add(&g, "Relu", {"x_gated"}, {"h"});
  Add(&g, "Where", {"gate", "h", "h"}, {"h_gated"});        // h is computed after it: dropped
  Add(&g, "Where", {"gate", "y", "y"}, {"y_gated"});        // y is not: kept
  Add(&g, "Where", {"cond", "h", "h"}, {"h_other"});        // not a gate: kept
  Add(&g, "Add", {"h_gated", "y_gated"}, {"out"});
  Add(&g, "Add", {"out", "h_other"}, {"out2"});
  g.add_output()->set_name("out2");
  EXPECT_EQ(DropRedundantGates(&g), 1);
  EXPECT_EQ(Ops(g), (std::vector<std::string>{"Concat", "Size", "Equal", "Where", "Relu", "Where", "Where", "Add",
                                              "Add"}));
  EXPECT_EQ(g.node(7).input(0), "h");  // the readers of the dropped gate read h
}

TEST(AnnotateRangeLengths, ARangeOverAnInputDimHasItsLength) {
  onnx::GraphProto g;
  Input(&g, "ids", {"batch", "seq"});
  ScalarInit(&g, "zero", 0);
  ScalarInit(&g, "one", 1);
  ScalarInit(&g, "two", 2);
  Add(&g, "Cast", {"dim.seq"}, {"n"});                   // the read ReplaceKnownDimReads made, cast
  Add(&g, "Range", {"zero", "n", "one"}, {"positions"});
  Add(&g, "Range", {"zero", "dim.seq", "two"}, {"evens"});  // step 2: not the dim's length
  Add(&g, "Range", {"one", "dim.seq", "one"}, {"from1"});   // starts at 1: neither
  Add(&g, "Range", {"zero", "dim.other", "one"}, {"x"});    // not an input's dim
  EXPECT_EQ(AnnotateRangeLengths(&g), 1);
  ASSERT_EQ(g.value_info_size(), 1);
  const auto& vi = g.value_info(0);
  EXPECT_EQ(vi.name(), "positions");
  EXPECT_EQ(vi.type().tensor_type().elem_type(), onnx::TensorProto::INT64);
  ASSERT_EQ(vi.type().tensor_type().shape().dim_size(), 1);
  EXPECT_EQ(vi.type().tensor_type().shape().dim(0).dim_param(), "seq");
  EXPECT_EQ(AnnotateRangeLengths(&g), 0);  // declared once
}

TEST(RemoveUnreadInitializers, DropsOnlyWhatNothingReads) {
  onnx::GraphProto g;
  ScalarInit(&g, "used", 1);
  ScalarInit(&g, "unused", 2);
  ScalarInit(&g, "out", 3);
  Add(&g, "Add", {"x", "used"}, {"y"});
  g.add_output()->set_name("y");
  g.add_output()->set_name("out");
  EXPECT_EQ(RemoveUnreadInitializers(&g), 1);
  ASSERT_EQ(g.initializer_size(), 2);
  EXPECT_EQ(g.initializer(0).name(), "used");
  EXPECT_EQ(g.initializer(1).name(), "out");
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
