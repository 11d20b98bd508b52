// The clean-ups of an exported ONNX graph (core/export/onnx/simplify_exported.h), on graphs built
// by hand: what they drop, what they must keep, and the dims they must not take for others.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/export/onnx/float64_kernels.h"
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

TEST(DropRedundantGates, AGateOfMoreChecksImpliesTheGatesOfFewer) {
  onnx::GraphProto g;
  ScalarInit(&g, "one", 1);
  ScalarInit(&g, "two", 2);
  Add(&g, "Size", {"check0"}, {"count0"});
  Add(&g, "Equal", {"count0", "one"}, {"gate0"});           // waits on check0
  Add(&g, "Concat", {"check0", "check1"}, {"all"});
  Add(&g, "Size", {"all"}, {"count1"});
  Add(&g, "Equal", {"count1", "two"}, {"gate1"});           // waits on check0 and check1
  Add(&g, "Where", {"gate1", "x", "x"}, {"x_gated"});
  Add(&g, "Relu", {"x_gated"}, {"h"});                      // computed after both gates
  Add(&g, "Where", {"gate0", "h", "h"}, {"h_gated"});       // so this one orders nothing: dropped
  Add(&g, "Relu", {"h_gated"}, {"h2"});
  Add(&g, "Where", {"gate1", "y", "y"}, {"y_gated"});
  Add(&g, "Relu", {"y_gated"}, {"k"});                      // after gate1...
  Add(&g, "Where", {"gate0", "k", "k"}, {"k_gated"});       // ...so after gate0 too: dropped
  Add(&g, "Where", {"gate0", "z", "z"}, {"z_gated"});
  Add(&g, "Relu", {"z_gated"}, {"m"});                      // after gate0 only...
  Add(&g, "Where", {"gate1", "m", "m"}, {"m_gated"});       // ...not gate1: kept
  Add(&g, "Sum", {"h2", "k_gated", "m_gated"}, {"out"});
  g.add_output()->set_name("out");
  EXPECT_EQ(DropRedundantGates(&g), 2);
  EXPECT_EQ(g.node(g.node_size() - 1).input(1), "k");
  EXPECT_EQ(g.node(g.node_size() - 1).input(2), "m_gated");
}

TEST(DedupeGateChecks, RepeatedChecksAreCountedOnceSoEqualGatesMerge) {
  onnx::GraphProto g;
  ScalarInit(&g, "two", 2);
  ScalarInit(&g, "three", 3);
  ScalarInit(&g, "four", 4);
  Add(&g, "Concat", {"c0", "c1"}, {"all1"});
  Add(&g, "Size", {"all1"}, {"n1"});
  Add(&g, "Equal", {"n1", "two"}, {"gate1"});
  Add(&g, "Concat", {"c0", "c1", "c0", "c1"}, {"all2"});   // layer 2 repeats layer 1's checks
  Add(&g, "Size", {"all2"}, {"n2"});
  Add(&g, "Equal", {"n2", "four"}, {"gate2"});
  Add(&g, "Concat", {"c0", "c1", "c1"}, {"all3"});         // its count is not the Concat's: not a gate
  Add(&g, "Size", {"all3"}, {"n3"});
  Add(&g, "Equal", {"n3", "two"}, {"gate3"});
  Add(&g, "Concat", {"c0", "c0", "c2"}, {"all4"});         // a gate, but its Concat is read elsewhere
  Add(&g, "Size", {"all4"}, {"n4"});
  Add(&g, "Equal", {"n4", "three"}, {"gate4"});
  Add(&g, "Identity", {"all4"}, {"seen4"});
  ScalarInit(&g, "passed", 0);                             // a check folded to a constant...
  Add(&g, "Concat", {"passed", "c0"}, {"all5"});           // ...goes from its gate
  Add(&g, "Size", {"all5"}, {"n5"});
  Add(&g, "Equal", {"n5", "two"}, {"gate5"});
  std::vector<int64_t> made;
  auto scalar = [&](int64_t n) {
    made.push_back(n);
    return n == 2 ? std::string("two") : "count" + std::to_string(n);  // interned, as LoweringContext's
  };
  EXPECT_EQ(DedupeGateChecks(&g, scalar), 2);
  EXPECT_EQ(made, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(g.node(13).input_size(), 1);
  EXPECT_EQ(g.node(13).input(0), "c0");
  EXPECT_EQ(g.node(15).input(1), "count1");
  EXPECT_EQ(std::vector<std::string>(g.node(3).input().begin(), g.node(3).input().end()),
            (std::vector<std::string>{"c0", "c1"}));
  EXPECT_EQ(g.node(5).input(1), "two");
  EXPECT_EQ(g.node(6).input_size(), 3);
  EXPECT_EQ(g.node(9).input_size(), 3);
  EXPECT_EQ(MergeDuplicateNodes(&g), 3);  // gate2's Concat, Size and Equal are gate1's
}

TEST(AnnotateRangeLengths, ARangeOverAnInputDimHasItsLength) {
  onnx::GraphProto g;
  Input(&g, "ids", {"batch", "seq"});
  ScalarInit(&g, "zero", 0);
  ScalarInit(&g, "one", 1);
  ScalarInit(&g, "two", 2);
  Add(&g, "Shape", {"ids"}, {"ids.shape"});
  Add(&g, "Gather", {"ids.shape", "one"}, {"dim.seq"});  // the read ReplaceKnownDimReads makes
  auto* cast = Add(&g, "Cast", {"dim.seq"}, {"n"});      // cast
  auto* to = cast->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::INT64);
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

void IntsInit(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> v) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(v.size()));
  std::string raw(v.size() * sizeof(int64_t), '\0');
  if (!v.empty()) std::memcpy(raw.data(), v.data(), raw.size());
  t->set_raw_data(raw);
}

void IntAttribute(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

std::vector<int64_t> InitValues(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& t : g.initializer()) {
    if (t.name() != name) continue;
    std::vector<int64_t> v(t.raw_data().size() / sizeof(int64_t));
    if (!v.empty()) std::memcpy(v.data(), t.raw_data().data(), t.raw_data().size());
    return v;
  }
  return {};
}

// `x` [b, t, 768] (b and t input dims), `u` [n] and `w` [n] (one name on two inputs); the shapes
// views build from sizes read off x (Shape, Gather, Unsqueeze, Concat).
struct ShapeGraph {
  onnx::GraphProto g;
  std::unordered_map<std::string, onnx::TypeProto> types;
  int made = 0;

  ShapeGraph() {
    Input(&g, "x", {"b", "t", "768"});
    Input(&g, "u", {"n"});
    Input(&g, "w", {"n"});
    for (const auto& in : g.input()) types[in.name()] = in.type();
    for (int i = 0; i < 3; ++i) ScalarInit(&g, "i" + std::to_string(i), i);
    IntsInit(&g, "axes0", {0});
    Add(&g, "Shape", {"x"}, {"xs"});
    Add(&g, "Gather", {"xs", "i0"}, {"b"});
    Add(&g, "Gather", {"xs", "i1"}, {"t"});
    Add(&g, "Unsqueeze", {"b", "axes0"}, {"b1"});
    Add(&g, "Unsqueeze", {"t", "axes0"}, {"t1"});
    Add(&g, "Shape", {"u"}, {"us"});
    Add(&g, "Gather", {"us", "i0"}, {"n"});
    Add(&g, "Unsqueeze", {"n", "axes0"}, {"n1"});
  }

  onnx::NodeProto* Reshape(const std::string& data, std::vector<std::string> pieces, const std::string& out) {
    Add(&g, "Concat", pieces, {out + ".shape"});
    IntAttribute(g.mutable_node(g.node_size() - 1), "axis", 0);
    auto* r = Add(&g, "Reshape", {data, out + ".shape"}, {out});
    IntAttribute(r, "allowzero", 1);
    return r;
  }

  int Run() {
    return ConstantKnownShapes(
        &g,
        [&](const std::string& name) -> const onnx::TypeProto* {
          auto it = types.find(name);
          return it == types.end() ? nullptr : &it->second;
        },
        [&](const std::vector<int64_t>& v) {
          std::string name = "made" + std::to_string(made++);
          IntsInit(&g, name, v);
          return name;
        },
        [&](int64_t v) {
          std::string name = "scalar" + std::to_string(v);
          ScalarInit(&g, name, v);
          return name;
        });
  }

  const onnx::NodeProto& Producer(const std::string& name) const {
    for (const auto& n : g.node()) {
      for (const auto& o : n.output()) {
        if (o == name) return n;
      }
    }
    static onnx::NodeProto none;
    return none;
  }
};

TEST(ConstantKnownShapes, ReshapeSizesThatAreTheDataDimsBecomeCopies) {
  ShapeGraph s;
  IntsInit(&s.g, "rest", {-1, 64});
  IntsInit(&s.g, "zero", {0});
  s.Reshape("x", {"b1", "t1", "rest"}, "heads");   // view(b, t, -1, 64) of x: [0, 0, -1, 64]
  s.Reshape("x", {"t1", "b1", "rest"}, "swapped");  // t at x's dim 0: left alone
  s.Reshape("x", {"b1", "t1", "zero", "rest"}, "empty");  // a literal 0: left alone
  s.Reshape("x", {"n1", "t1", "rest"}, "shared");   // n names two input dims: proves nothing
  EXPECT_EQ(s.Run(), 1);
  const auto& heads = s.Producer("heads");
  EXPECT_EQ(InitValues(s.g, heads.input(1)), (std::vector<int64_t>{0, 0, -1, 64}));
  EXPECT_EQ(heads.attribute(0).i(), 0);   // allowzero off: 0 copies
  for (const char* kept : {"swapped", "empty", "shared"}) {
    EXPECT_EQ(s.Producer(kept).input(1), std::string(kept) + ".shape") << kept;
    EXPECT_EQ(s.Producer(kept).attribute(0).i(), 1) << kept;
  }
}

TEST(ConstantKnownShapes, OneOtherSizeBecomesMinusOneWhenNothingIsCopied) {
  ShapeGraph s;
  IntsInit(&s.g, "one", {1});
  IntsInit(&s.g, "n2304", {2304});
  IntsInit(&s.g, "minus1", {-1});
  // view(1, t, 2304) of a [t, 2304] matmul (GPT-2's Conv1D): [1, -1, 2304].
  s.types["mm"].mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_param("t");
  s.types["mm"].mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(2304);
  s.Reshape("mm", {"one", "t1", "n2304"}, "back");
  s.Reshape("mm", {"minus1", "t1", "n2304"}, "two");   // already a -1: t stays computed
  EXPECT_EQ(s.Run(), 1);
  EXPECT_EQ(InitValues(s.g, s.Producer("back").input(1)), (std::vector<int64_t>{1, -1, 2304}));
  EXPECT_EQ(s.Producer("two").input(1), "two.shape");
}

TEST(ConstantKnownShapes, ExpandToTheValuesOwnDimsAndSlicesToAnInputDim) {
  ShapeGraph s;
  auto* e = Add(&s.g, "Concat", {"b1", "t1"}, {"bt"});
  IntAttribute(e, "axis", 0);
  s.types["ids"].mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_param("b");
  s.types["ids"].mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_param("t");
  Add(&s.g, "Expand", {"ids", "bt"}, {"expanded"});      // expand(b, t) of a [b, t] value
  Add(&s.g, "Expand", {"other", "bt"}, {"unknown"});     // of a value of unknown shape: kept
  s.types["t"].mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
  IntsInit(&s.g, "starts", {0});
  IntsInit(&s.g, "axes1", {1});
  Add(&s.g, "Slice", {"table", "starts", "t1", "axes1"}, {"positions"});   // table[:, :t]
  EXPECT_EQ(s.Run(), 2);
  EXPECT_EQ(InitValues(s.g, s.Producer("expanded").input(1)), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(s.Producer("unknown").input(1), "bt");
  const auto& p = s.Producer("positions");
  ASSERT_EQ(p.op_type(), "Gather");
  EXPECT_EQ(p.input(0), "table");
  EXPECT_EQ(p.attribute(0).i(), 1);
  const auto& range = s.Producer(p.input(1));
  ASSERT_EQ(range.op_type(), "Range");
  EXPECT_EQ(range.input(1), "t");
  // The Range comes before the Gather that reads it.
  int range_at = -1, gather_at = -1;
  for (int i = 0; i < s.g.node_size(); ++i) {
    if (s.g.node(i).op_type() == "Range") range_at = i;
    if (s.g.node(i).output(0) == "positions") gather_at = i;
  }
  EXPECT_LT(range_at, gather_at);
}

TEST(DeclareReshapeShapes, MinusOneOverOneInputDimIsThatDim) {
  onnx::GraphProto g;
  Input(&g, "x", {"1", "t", "768"});
  Input(&g, "y", {"b", "t2", "4"});
  IntsInit(&g, "flat", {-1, 768});
  IntsInit(&g, "flat_all", {-1});
  Add(&g, "Reshape", {"x", "flat"}, {"rows"});      // [t, 768]
  Add(&g, "Reshape", {"y", "flat_all"}, {"all"});   // b * t2 * 4: two dims, not declared
  std::unordered_map<std::string, onnx::TypeProto> types;
  for (const auto& in : g.input()) types[in.name()] = in.type();
  const auto declared = DeclareReshapeShapes(g, [&](const std::string& name) -> const onnx::TypeProto* {
    auto it = types.find(name);
    return it == types.end() ? nullptr : &it->second;
  });
  ASSERT_EQ(declared.size(), 1u);
  EXPECT_EQ(declared[0].name(), "rows");
  const auto& shape = declared[0].type().tensor_type().shape();
  ASSERT_EQ(shape.dim_size(), 2);
  EXPECT_EQ(shape.dim(0).dim_param(), "t");
  EXPECT_EQ(shape.dim(1).dim_value(), 768);
}

// FoldIntConstants with no inferred shapes, its new initializers named v<n> and s<n>.
int Fold(onnx::GraphProto* g) {
  int made = 0;
  return FoldIntConstants(
      g, [](const std::string&) -> const onnx::TypeProto* { return nullptr; },
      [&](const std::vector<int64_t>& v) {
        std::string name = "v" + std::to_string(made++);
        IntsInit(g, name, v);
        return name;
      },
      [&](int64_t v) {
        std::string name = "s" + std::to_string(made++);
        ScalarInit(g, name, v);
        return name;
      });
}

TEST(FoldIntConstants, ShapeArithmeticOnConstantsBecomesInitializers) {
  onnx::GraphProto g;
  ScalarInit(&g, "d", 8);
  ScalarInit(&g, "two", 2);
  ScalarInit(&g, "minus7", -7);
  IntsInit(&g, "axes0", {0});
  IntsInit(&g, "tail", {-1, 64});
  Add(&g, "Mod", {"d", "two"}, {"m"});           // x.shape[-1] // 2 of a static 8: (8 - 8 % 2) / 2
  Add(&g, "Sub", {"d", "m"}, {"s"});
  Add(&g, "Div", {"s", "two"}, {"half"});
  Add(&g, "Unsqueeze", {"half", "axes0"}, {"half1"});
  auto* c = Add(&g, "Concat", {"half1", "tail"}, {"shape"});
  IntAttribute(c, "axis", 0);
  Add(&g, "Mod", {"minus7", "two"}, {"pymod"});  // fmod=0: the divisor's sign, 1
  Add(&g, "Div", {"minus7", "two"}, {"trunc"});  // Div truncates: -3
  Add(&g, "Div", {"d", "zero_input"}, {"unknown"});   // reads a non-constant: kept
  Add(&g, "Reshape", {"x", "shape"}, {"y"});
  Add(&g, "Mul", {"pymod", "trunc"}, {"out"});
  g.add_output()->set_name("y");
  g.add_output()->set_name("out");   // a graph output: kept (its node computes it)
  const int folded = Fold(&g);
  EXPECT_EQ(folded, 7);
  EXPECT_EQ(Ops(g), (std::vector<std::string>{"Div", "Reshape", "Mul"}));
  EXPECT_EQ(InitValues(g, g.node(1).input(1)), (std::vector<int64_t>{4, -1, 64}));
  EXPECT_EQ(InitValues(g, g.node(2).input(0)), (std::vector<int64_t>{1}));
  EXPECT_EQ(InitValues(g, g.node(2).input(1)), (std::vector<int64_t>{-3}));
}

TEST(FoldIntConstants, AGuardCheckOnConstantsGoesWithItsGate) {
  // EmitGuardCheck + CombineGuardChecks + GateOn of a guard on a static size (recorded 8): the
  // check always passes, so the gate is true and the gated value is the value itself.
  onnx::GraphProto g;
  ScalarInit(&g, "d", 8);
  ScalarInit(&g, "eight", 8);
  ScalarInit(&g, "one", 1);
  IntsInit(&g, "ok_shape", {1});
  IntsInit(&g, "fail_shape", {-2});
  IntsInit(&g, "zero", {0});
  Add(&g, "Equal", {"d", "eight"}, {"ok"});
  Add(&g, "Where", {"ok", "ok_shape", "fail_shape"}, {"shape"});
  Add(&g, "Reshape", {"zero", "shape"}, {"check"});
  Add(&g, "Size", {"check"}, {"count"});
  Add(&g, "Equal", {"count", "one"}, {"gate"});
  Add(&g, "Where", {"gate", "x", "x"}, {"x_gated"});
  Add(&g, "Relu", {"x_gated"}, {"y"});
  Add(&g, "Equal", {"d", "one"}, {"never"});           // false: a check that would fail is kept
  Add(&g, "Where", {"never", "ok_shape", "fail_shape"}, {"bad_shape"});
  Add(&g, "Reshape", {"zero", "bad_shape"}, {"bad_check"});
  g.add_output()->set_name("y");
  g.add_output()->set_name("bad_check");
  Fold(&g);
  RemoveUnreadNodes(&g);
  EXPECT_EQ(Ops(g), (std::vector<std::string>{"Relu", "Reshape"}));
  EXPECT_EQ(g.node(0).input(0), "x");
  EXPECT_EQ(InitValues(g, g.node(1).input(1)), (std::vector<int64_t>{-2}));   // still fails when run
}

TEST(ConstantKnownShapes, AZeroPadOnSpatialDimsMovesIntoTheConv) {
  ShapeGraph s;
  IntsInit(&s.g, "pads", {0, 0, 0, 1, 0, 0, 2, 3});   // H: 0 before, 2 after; W: 1 before, 3 after
  auto zero = s.g.add_initializer();
  zero->set_name("zero");
  zero->set_data_type(onnx::TensorProto::FLOAT);
  zero->set_raw_data(std::string(4, '\0'));
  auto one = s.g.add_initializer();
  one->set_name("one");
  one->set_data_type(onnx::TensorProto::FLOAT);
  float v = 1.0f;
  one->set_raw_data(std::string(reinterpret_cast<const char*>(&v), 4));
  Add(&s.g, "Pad", {"img", "pads", "zero"}, {"padded"});
  auto* conv = Add(&s.g, "Conv", {"padded", "w"}, {"y"});
  auto* a = conv->add_attribute();
  a->set_name("pads");
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t p : {1, 1, 1, 1}) a->add_ints(p);
  Add(&s.g, "Pad", {"img", "pads", "one"}, {"ones"});      // pads with 1: stays
  Add(&s.g, "Conv", {"ones", "w"}, {"z"});
  EXPECT_EQ(s.Run(), 1);
  const auto& fused = s.Producer("y");
  EXPECT_EQ(fused.input(0), "img");
  std::vector<int64_t> pads(fused.attribute(0).ints().begin(), fused.attribute(0).ints().end());
  EXPECT_EQ(pads, (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(s.Producer("padded").op_type(), "");   // gone
  EXPECT_EQ(s.Producer("ones").op_type(), "Pad");
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


onnx::TensorProto* Ones(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims, float value = 1) {
  auto* t = FloatInit(g, name, dims);
  std::vector<float> v(t->raw_data().size() / sizeof(float), value);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
  return t;
}

TEST(FoldIntConstants, AnIntComparedWithItselfIsKnown) {
  onnx::GraphProto g;
  Input(&g, "x", {"batch", "seq"});
  ScalarInit(&g, "one", 1);
  Add(&g, "Shape", {"x"}, {"s"});
  Add(&g, "Gather", {"s", "one"}, {"t"});           // the length, not known
  Add(&g, "Greater", {"t", "t"}, {"longer"});       // kv_length > q_length of the same dim: false
  ScalarInit(&g, "two", 2);
  Add(&g, "Where", {"longer", "one", "two"}, {"w"});  // so this is 2
  Add(&g, "Identity", {"w"}, {"out"});
  Add(&g, "Equal", {"f", "f"}, {"nan_or_not"});     // a float: NaN is not equal to itself
  Add(&g, "Greater", {"t", "one"}, {"unknown"});
  Add(&g, "Where", {"nan_or_not", "one", "two"}, {"w2"});
  Add(&g, "Where", {"unknown", "one", "two"}, {"w3"});
  g.add_output()->set_name("out");
  g.add_output()->set_name("w2");
  g.add_output()->set_name("w3");
  onnx::TypeProto i64, f32;
  i64.mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
  i64.mutable_tensor_type()->mutable_shape();
  f32.mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  f32.mutable_tensor_type()->mutable_shape();
  auto inferred = [&](const std::string& name) -> const onnx::TypeProto* {
    return name == "t" ? &i64 : name == "f" ? &f32 : nullptr;
  };
  int made = 0;
  const int folded = FoldIntConstants(
      &g, inferred, [&](const std::vector<int64_t>& v) { IntsInit(&g, "v" + std::to_string(made), v); return "v" + std::to_string(made++); },
      [&](int64_t v) { ScalarInit(&g, "s" + std::to_string(made), v); return "s" + std::to_string(made++); });
  // `longer` is known false, so w is 2 and its Where goes (the bool's node goes once nothing
  // reads it); the float compare and the compare with another value stay, and their Wheres.
  EXPECT_EQ(folded, 1);
  EXPECT_EQ(Ops(g), (std::vector<std::string>{"Shape", "Gather", "Greater", "Identity", "Equal", "Greater", "Where",
                                              "Where"}));
  int64_t w = 0;
  for (const auto& t : g.initializer()) {
    if (t.name() == g.node(3).input(0)) std::memcpy(&w, t.raw_data().data(), sizeof w);
  }
  EXPECT_EQ(w, 2);
}

TEST(FuseParallelMatMuls, QueryKeyAndValueProjectionsBecomeOneMatMulAndASplit) {
  onnx::GraphProto g;
  Input(&g, "x", {"batch", "2"});
  FloatInit(&g, "wq", {2, 3});   // [[0 1 2] [3 4 5]]
  FloatInit(&g, "wk", {2, 1});   // [[0] [1]]
  FloatInit(&g, "bq", {3});
  FloatInit(&g, "bk", {1});
  FloatInit(&g, "wo", {2, 2});   // also read elsewhere: not fused
  Add(&g, "Relu", {"x"}, {"h"});
  Add(&g, "MatMul", {"h", "wq"}, {"q0"});
  Add(&g, "Add", {"q0", "bq"}, {"q"});
  Add(&g, "Neg", {"q"}, {"nq"});                    // reads q before k is computed
  Add(&g, "MatMul", {"h", "wk"}, {"k0"});
  Add(&g, "Add", {"bk", "k0"}, {"k"});
  Add(&g, "MatMul", {"h", "wo"}, {"o"});
  Add(&g, "Identity", {"wo"}, {"wo_seen"});
  Add(&g, "Concat", {"nq", "k", "o"}, {"out"});
  g.add_output()->set_name("out");
  std::vector<std::vector<int64_t>> made;
  EXPECT_EQ(FuseParallelMatMuls(&g, [&](const std::vector<int64_t>& v) { made.push_back(v); return "sizes"; }), 1);
  EXPECT_EQ(Ops(g), (std::vector<std::string>{"Relu", "MatMul", "Add", "Split", "Neg", "MatMul", "Identity", "Concat"}));
  EXPECT_EQ(made, (std::vector<std::vector<int64_t>>{{3, 1}}));
  EXPECT_EQ(g.node(3).output(0), "q");   // the Split defines the Adds' outputs, before their readers
  EXPECT_EQ(g.node(3).output(1), "k");
  const onnx::TensorProto* joined = nullptr;
  for (const auto& t : g.initializer()) {
    if (t.name() == g.node(1).input(1)) joined = &t;
  }
  ASSERT_NE(joined, nullptr);
  EXPECT_EQ(std::vector<int64_t>(joined->dims().begin(), joined->dims().end()), (std::vector<int64_t>{2, 4}));
  std::vector<float> w(8);
  std::memcpy(w.data(), joined->raw_data().data(), sizeof(float) * 8);
  EXPECT_EQ(w, (std::vector<float>{0, 1, 2, 0, 3, 4, 5, 1}));   // row by row: wq's row, then wk's
}

TEST(FoldIntConstants, AnOutputGatedOnChecksThatAllFoldedIsAnIdentity) {
  onnx::GraphProto g;
  ScalarInit(&g, "n", 3);
  Add(&g, "Equal", {"n", "n"}, {"gate"});              // the checks' count, all folded
  Add(&g, "Relu", {"x"}, {"h"});
  Add(&g, "Where", {"gate", "h", "h"}, {"out"});       // GateOn writing the output itself
  Add(&g, "Greater", {"x", "h"}, {"b"});
  Add(&g, "And", {"gate", "b"}, {"flag"});
  g.add_output()->set_name("out");
  g.add_output()->set_name("flag");
  EXPECT_EQ(Fold(&g), 2);
  EXPECT_EQ(Ops(g), (std::vector<std::string>{"Equal", "Relu", "Identity", "Greater", "Identity"}));
  EXPECT_EQ(std::vector<std::string>(g.node(2).input().begin(), g.node(2).input().end()),
            (std::vector<std::string>{"h"}));
  EXPECT_EQ(g.node(4).input(0), "b");
  EXPECT_EQ(g.node(2).output(0), "out");
}

TEST(DropMultipliesByOne, AProductWithOnesThatKeepsTheShapeIsTheOtherInput) {
  onnx::GraphProto g;
  Ones(&g, "w", {4});           // an RMSNorm weight at its random init
  Ones(&g, "wide", {3, 4});     // broadcasts x of (2, 1, 4) to (2, 3, 4): kept
  Ones(&g, "half", {4}, 0.5f);  // not ones: kept
  Add(&g, "Mul", {"w", "x"}, {"a"});
  Add(&g, "Div", {"a", "w"}, {"b"});
  Add(&g, "Mul", {"b", "wide"}, {"c"});
  Add(&g, "Mul", {"c", "half"}, {"d"});
  Add(&g, "Div", {"w", "d"}, {"e"});     // ones / x is not x: kept
  Add(&g, "Mul", {"e", "w"}, {"out"});   // a graph output keeps its node
  g.add_output()->set_name("out");
  onnx::TypeProto x;
  x.mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {2, 1, 4}) x.mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
  auto inferred = [&](const std::string& name) -> const onnx::TypeProto* {
    return name == "x" || name == "a" || name == "b" ? &x : nullptr;
  };
  EXPECT_EQ(DropMultipliesByOne(&g, inferred), 2);
  EXPECT_EQ(Ops(g), (std::vector<std::string>{"Mul", "Mul", "Div", "Mul"}));
  EXPECT_EQ(g.node(0).input(0), "x");   // c = x * wide
}

TEST(ComputeWithoutMissingFloat64Kernels, RewritesOnlyFloat64InputsOfOpsOnnxruntimeLacks) {
  onnx::GraphProto g;
  Add(&g, "Atan", {"d"}, {"a"});    // float64: in float32, cast back
  Add(&g, "Sinh", {"d"}, {"s"});    // float64: exp formula
  Add(&g, "Atan", {"f"}, {"af"});   // float32: kept
  Add(&g, "Exp", {"d"}, {"e"});     // has a float64 kernel: kept
  onnx::TypeProto f64, f32;
  f64.mutable_tensor_type()->set_elem_type(onnx::TensorProto::DOUBLE);
  f32.mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  auto inferred = [&](const std::string& name) -> const onnx::TypeProto* {
    return name == "d" ? &f64 : name == "f" ? &f32 : nullptr;
  };
  EXPECT_EQ(ComputeWithoutMissingFloat64Kernels(&g, inferred), 2);
  EXPECT_EQ(Ops(g), (std::vector<std::string>{"Cast", "Atan", "Cast", "Exp", "Neg", "Exp", "Sub", "Mul", "Atan", "Exp"}));
  EXPECT_EQ(g.node(2).output(0), "a");
  EXPECT_EQ(g.node(7).output(0), "s");
  EXPECT_EQ(g.node(8).input(0), "f");
  EXPECT_EQ(ComputeWithoutMissingFloat64Kernels(&g, inferred), 0);   // nothing left to rewrite
}

}  // namespace
}  // namespace onnx_export
}  // namespace ivytrace
