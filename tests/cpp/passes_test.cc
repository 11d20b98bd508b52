// The optimizer passes on synthetic traces whose records (flags, recorded values) are chosen by
// hand; tests/e2e/test_passes_e2e.py runs them on recorded programs.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "temp_path.h"
#include "core/ir/arg.h"
#include "core/ir/graph_builder.h"
#include "core/ir/verifier.h"
#include "core/passes/pass_registry.h"
#include "trace_fixture.h"

namespace ivytrace {
namespace {

using testing::IntArg;
using testing::Ref;
using testing::TensorArg;

using testing::TempPath;

// A trace of one region `f` with input x = t1, written op by op.
class TraceBuilder {
 public:
  explicit TraceBuilder(const std::string& name) : path_(TempPath(name)) {
    w_.Open(path_, v1::Header());
    v1::Record rb;
    rb.mutable_region_begin()->set_region(1);
    rb.mutable_region_begin()->set_name("f");
    auto* in = rb.mutable_region_begin()->add_inputs();
    in->set_name("x");
    *in->mutable_value() = TensorArg(Ref(1, 0));
    w_.Write(rb);
  }
  // One op; `flags` are OpFlag bits; `value` is stored for the result (role from the flags).
  void Op(const std::string& op, std::vector<v1::Arg> args, const v1::TensorRef& result, uint32_t flags = 0,
          std::vector<float> value = {}, std::vector<v1::TensorRef> mutated = {}) {
    v1::Record r;
    auto* e = r.mutable_op();
    e->set_op(w_.Intern(op));
    for (auto& a : args) *e->add_args() = a;
    *e->mutable_result() = TensorArg(result);
    for (auto& m : mutated) *e->add_mutated() = m;
    e->set_flags(flags);
    e->set_file(w_.Intern("prog.py"));
    e->set_line(++line_);
    w_.Write(r);
    if (value.empty()) return;
    v1::Record t;
    auto* td = t.mutable_tensor();
    *td->mutable_ref() = result;
    auto* v = td->mutable_value();
    v->set_dtype(v1::FLOAT32);
    for (auto d : result.shape()) v->add_shape(d);
    v->set_role((flags & v1::RANDOM) ? v1::RANDOM_OUTPUT : v1::FOLDABLE);
    v->set_data(std::string(reinterpret_cast<const char*>(value.data()), value.size() * sizeof(float)));
    td->set_total_bytes(v->data().size());
    w_.Write(t);
  }
  void Constant(const v1::TensorRef& ref, const std::string& name, std::vector<float> values) {
    testing::WriteConstant(w_, ref, name, std::move(values));
  }
  std::string Finish(const v1::TensorRef& result) {
    v1::Record re;
    re.mutable_region_end()->set_region(1);
    *re.mutable_region_end()->mutable_result() = TensorArg(result);
    w_.Write(re);
    w_.Close();
    return path_;
  }

 private:
  std::string path_;
  TraceWriter w_;
  int line_ = 0;
};

std::vector<std::string> Ops(const Graph& g) {
  std::vector<std::string> ops;
  for (const auto& n : g.nodes) {
    if (!n.erased) ops.push_back(n.op);
  }
  return ops;
}

float ConstantFloat(const Graph& g, ValueId v) {
  const Value& value = g.values[v];
  EXPECT_EQ(value.kind, v1::CONSTANT_VALUE);
  float f = 0;
  const std::string& data = g.constants.at(value.constant).data();
  EXPECT_GE(data.size(), sizeof f);
  std::memcpy(&f, data.data(), sizeof f);
  return f;
}

Graph Build(const std::string& path) {
  Graph g;
  Status st = BuildGraphFromTrace(path, {}, &g);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(VerifyGraph(g).ok());
  return g;
}

Status RunPasses(Graph* g, PipelineOptions o, std::vector<PassReport>* report = nullptr) {
  o.verify = true;
  return RunPipeline(o, g, report);
}

// The seeds' array-caching example: b = tensor([2]); a = tensor([2]); return x ** (a + b).
std::string WriteArrayCachingTrace(const std::string& name) {
  TraceBuilder t(name);
  t.Op("torch.tensor", {}, Ref(10, 0, {1}), v1::FOLDABLE_OP, {2});
  t.Op("torch.tensor", {}, Ref(11, 0, {1}), v1::FOLDABLE_OP, {2});
  t.Op("torch.Tensor.add", {TensorArg(Ref(11, 0, {1})), TensorArg(Ref(10, 0, {1}))}, Ref(12, 0, {1}),
       v1::FOLDABLE_OP, {4});
  t.Op("torch.Tensor.__pow__", {TensorArg(Ref(1, 0)), TensorArg(Ref(12, 0, {1}))}, Ref(13, 0));
  return t.Finish(Ref(13, 0));
}

TEST(ConstantFold, SeedsExampleFoldsToThePowerOfARecordedConstant) {
  Graph g = Build(WriteArrayCachingTrace("fold.ivt"));
  ASSERT_EQ(g.nodes.size(), 4u);
  std::vector<PassReport> report;
  ASSERT_TRUE(RunPasses(&g, {}, &report).ok());
  EXPECT_EQ(Ops(g), std::vector<std::string>{"torch.Tensor.__pow__"});
  EXPECT_EQ(ConstantFloat(g, g.nodes[0].inputs[1]), 4.0f);
  ASSERT_EQ(report.front().pass, "constant-fold");
  EXPECT_EQ(report.front().removed, 3u);
  // Only the folded value travels on.
  EXPECT_EQ(g.constants.size(), 1u);
}

TEST(ConstantFold, RecordedValuesAreKeptInATraceWithoutRegions) {
  const std::string path = TempPath("fold_noregion.ivt");
  TraceWriter w;
  w.Open(path, v1::Header());
  v1::Record r;
  auto* e = r.mutable_op();
  e->set_op(w.Intern("torch.ones"));
  *e->add_args() = IntArg(1);
  *e->mutable_result() = TensorArg(Ref(10, 0, {1}));
  e->set_flags(v1::FOLDABLE_OP);
  w.Write(r);
  const float one = 1;
  v1::Record v;
  *v.mutable_tensor()->mutable_ref() = Ref(10, 0, {1});
  auto* val = v.mutable_tensor()->mutable_value();
  val->set_dtype(v1::FLOAT32);
  val->add_shape(1);
  val->set_role(v1::FOLDABLE);
  val->set_data(std::string(reinterpret_cast<const char*>(&one), sizeof one));
  v.mutable_tensor()->set_total_bytes(sizeof one);
  w.Write(v);
  w.Close();
  Graph g;
  ASSERT_TRUE(BuildGraphFromTrace(path, {}, &g).ok());
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_GE(g.values[g.nodes[0].outputs[0]].recorded, 0);
}

TEST(ConstantFold, DisabledOrOverTheSizeLimitKeepsTheOps) {
  Graph g = Build(WriteArrayCachingTrace("fold_off.ivt"));
  PipelineOptions off;
  off.disable = {"constant-fold"};
  ASSERT_TRUE(RunPasses(&g, off).ok());
  EXPECT_EQ(Ops(g).size(), 4u);

  Graph small = Build(WriteArrayCachingTrace("fold_limit.ivt"));
  PipelineOptions limited;
  limited.pass_options.fold_size_limit = 3;  // each value is 4 bytes
  ASSERT_TRUE(RunPasses(&small, limited).ok());
  EXPECT_EQ(Ops(small).size(), 4u);
  limited.pass_options.fold_size_limit = 4;
  ASSERT_TRUE(RunPasses(&small, limited).ok());
  EXPECT_EQ(Ops(small).size(), 1u);
}

TEST(ConstantFold, RecordedValuesSurviveTheGraphFile) {
  Graph built = Build(WriteArrayCachingTrace("fold_file.ivt"));
  ASSERT_TRUE(RunPasses(&built, {{"dce"}}).ok());
  Graph g = Graph::FromProto(built.ToProto());
  ASSERT_EQ(g.nodes.size(), 4u);
  ASSERT_TRUE(RunPasses(&g, {}).ok());
  EXPECT_EQ(Ops(g), std::vector<std::string>{"torch.Tensor.__pow__"});
  EXPECT_EQ(ConstantFloat(g, g.nodes[0].inputs[1]), 4.0f);
}

TEST(ConstantFold, KeepsAConstantThatALaterOpWritesInPlace) {
  // c = zeros(3) (foldable); c.add_(x); return c * 2: a folded c would be written on every replay.
  TraceBuilder t("fold_inplace.ivt");
  t.Op("torch.zeros", {IntArg(3)}, Ref(10, 0), v1::FOLDABLE_OP, {0, 0, 0});
  t.Op("torch.Tensor.mul", {TensorArg(Ref(10, 0)), IntArg(2)}, Ref(11, 0), v1::FOLDABLE_OP, {0, 0, 0});
  t.Op("torch.Tensor.add_", {TensorArg(Ref(10, 0)), TensorArg(Ref(1, 0))}, Ref(10, 1), v1::INPLACE, {},
       {Ref(10, 1)});
  t.Op("torch.Tensor.add", {TensorArg(Ref(10, 1)), TensorArg(Ref(11, 0))}, Ref(12, 0));
  Graph g = Build(t.Finish(Ref(12, 0)));
  ASSERT_TRUE(RunPasses(&g, {}).ok());
  // mul's result is a fresh tensor: it folds; zeros stays for add_ to write.
  EXPECT_EQ(Ops(g), (std::vector<std::string>{"torch.zeros", "torch.Tensor.add_", "torch.Tensor.add"}));
}

TEST(ConstantFold, KeepsTheOpThatMakesARegionOutput) {
  // return tensor([2]) + tensor([2]): the add stays so every call returns a fresh tensor.
  TraceBuilder t("fold_output.ivt");
  t.Op("torch.tensor", {}, Ref(10, 0, {1}), v1::FOLDABLE_OP, {2});
  t.Op("torch.tensor", {}, Ref(11, 0, {1}), v1::FOLDABLE_OP, {2});
  t.Op("torch.Tensor.add", {TensorArg(Ref(11, 0, {1})), TensorArg(Ref(10, 0, {1}))}, Ref(12, 0, {1}),
       v1::FOLDABLE_OP, {4});
  Graph g = Build(t.Finish(Ref(12, 0, {1})));
  ASSERT_TRUE(RunPasses(&g, {}).ok());
  EXPECT_EQ(Ops(g), std::vector<std::string>{"torch.Tensor.add"});
  EXPECT_EQ(ConstantFloat(g, g.nodes[0].inputs[0]), 2.0f);
}

TEST(ConstantFold, KeepsAnInPlaceWriteToAParameter) {
  // w.mul_(2) reads only constants, but writing the parameter is state the caller sees.
  TraceBuilder t("fold_param.ivt");
  t.Constant(Ref(9, 0), "w", {1, 2, 3});
  t.Op("torch.Tensor.mul_", {TensorArg(Ref(9, 0)), IntArg(2)}, Ref(9, 1), v1::FOLDABLE_OP | v1::INPLACE, {2, 4, 6},
       {Ref(9, 1)});
  t.Op("torch.Tensor.add", {TensorArg(Ref(1, 0)), TensorArg(Ref(9, 1))}, Ref(12, 0));
  Graph g = Build(t.Finish(Ref(12, 0)));
  ASSERT_TRUE(RunPasses(&g, {}).ok());
  EXPECT_EQ(Ops(g), (std::vector<std::string>{"torch.Tensor.mul_", "torch.Tensor.add"}));
}

// a = rand(1); y = x * a; optionally also n = rand_like(x) (reads the input); return y (+ n).
std::string WriteGeneratorsTrace(const std::string& name, bool reads_input) {
  TraceBuilder t(name);
  t.Op("torch.rand", {IntArg(1)}, Ref(10, 0, {1}), v1::RANDOM, {0.25f});
  t.Op("torch.Tensor.mul", {TensorArg(Ref(1, 0)), TensorArg(Ref(10, 0, {1}))}, Ref(11, 0));
  if (!reads_input) return t.Finish(Ref(11, 0));
  t.Op("torch.Tensor.add", {TensorArg(Ref(1, 0)), IntArg(1)}, Ref(12, 0));
  t.Op("torch.rand_like", {TensorArg(Ref(12, 0))}, Ref(13, 0), v1::RANDOM, {0.5f, 0.5f, 0.5f});
  t.Op("torch.Tensor.add", {TensorArg(Ref(11, 0)), TensorArg(Ref(13, 0))}, Ref(14, 0));
  return t.Finish(Ref(14, 0));
}

TEST(BakeGenerators, NotByDefaultAndWhenEnabledReplacesRandomOpsByRecordedValues) {
  Graph g = Build(WriteGeneratorsTrace("gen.ivt", false));
  ASSERT_TRUE(RunPasses(&g, {}).ok());
  EXPECT_EQ(Ops(g), (std::vector<std::string>{"torch.rand", "torch.Tensor.mul"}));
  PipelineOptions bake;
  bake.enable = {"bake-generators"};
  std::vector<PassReport> report;
  ASSERT_TRUE(RunPasses(&g, bake, &report).ok());
  EXPECT_EQ(report.front().pass, "bake-generators");
  EXPECT_EQ(Ops(g), std::vector<std::string>{"torch.Tensor.mul"});
  EXPECT_EQ(ConstantFloat(g, g.nodes[0].inputs[1]), 0.25f);
}

TEST(BakeGenerators, RefusesARandomOpThatDependsOnARegionInput) {
  Graph g = Build(WriteGeneratorsTrace("gen_input.ivt", true));
  Status st = RunPasses(&g, {{"bake-generators"}});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.kind(), Status::Kind::kInvalidArgument);
  EXPECT_NE(st.message().find("'torch.rand_like' at prog.py:4"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("region input"), std::string::npos) << st.message();
}

TEST(BakeGenerators, DropoutOutsideTrainingIsNotADrawAndSimplifyRemovesIt) {
  TraceBuilder t("gen_dropout.ivt");
  v1::Arg off;
  off.set_b(false);
  v1::Arg p;
  p.set_f(0.5);
  t.Op("torch.nn.functional.dropout", {TensorArg(Ref(1, 0)), p, off}, Ref(10, 0), v1::RANDOM, {1, 2, 3});
  t.Op("torch.relu", {TensorArg(Ref(10, 0))}, Ref(11, 0));
  Graph g = Build(t.Finish(Ref(11, 0)));
  PipelineOptions bake;
  bake.enable = {"bake-generators"};
  Status st = RunPasses(&g, bake);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(Ops(g), std::vector<std::string>{"torch.relu"});
  EXPECT_EQ(g.values[g.nodes[0].inputs[0]].kind, v1::INPUT);
}

TEST(BakeGenerators, RefusesWhenALaterOpWritesTheDrawInPlace) {
  TraceBuilder t("gen_inplace.ivt");
  t.Op("torch.rand", {IntArg(3)}, Ref(10, 0), v1::RANDOM, {1, 2, 3});
  t.Op("torch.Tensor.mul_", {TensorArg(Ref(10, 0)), TensorArg(Ref(1, 0))}, Ref(10, 1), v1::INPLACE, {},
       {Ref(10, 1)});
  Graph g = Build(t.Finish(Ref(10, 1)));
  Status st = RunPasses(&g, {{"bake-generators"}});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("written in place by 'torch.Tensor.mul_' at prog.py:2"), std::string::npos)
      << st.message();
}

// y1 = x * 2; y2 = x * K; [y2.add_(1)]; return y1 + y2
std::string WriteDuplicateTrace(const std::string& name, int k, bool write_second) {
  TraceBuilder t(name);
  t.Op("torch.Tensor.mul", {TensorArg(Ref(1, 0)), IntArg(2)}, Ref(10, 0));
  t.Op("torch.Tensor.mul", {TensorArg(Ref(1, 0)), IntArg(k)}, Ref(11, 0));
  uint32_t v = 0;
  if (write_second) {
    t.Op("torch.Tensor.add_", {TensorArg(Ref(11, 0)), IntArg(1)}, Ref(11, 1), v1::INPLACE, {}, {Ref(11, 1)});
    v = 1;
  }
  t.Op("torch.Tensor.add", {TensorArg(Ref(10, 0)), TensorArg(Ref(11, v))}, Ref(12, 0));
  return t.Finish(Ref(12, 0));
}

TEST(Cse, MergesTheSecondIdenticalCallIntoTheFirst) {
  Graph g = Build(WriteDuplicateTrace("cse.ivt", 2, false));
  std::vector<PassReport> report;
  ASSERT_TRUE(RunPasses(&g, {}, &report).ok());
  EXPECT_EQ(Ops(g), (std::vector<std::string>{"torch.Tensor.mul", "torch.Tensor.add"}));
  EXPECT_EQ(g.nodes[1].inputs[0], g.nodes[1].inputs[1]);
  EXPECT_EQ(g.nodes[1].inputs[0], g.nodes[0].outputs[0]);
}

TEST(Cse, KeepsCallsWithOtherLiteralsOrWhoseResultIsWrittenInPlace) {
  Graph other = Build(WriteDuplicateTrace("cse_literal.ivt", 3, false));
  ASSERT_TRUE(RunPasses(&other, {}).ok());
  EXPECT_EQ(Ops(other).size(), 3u);
  Graph written = Build(WriteDuplicateTrace("cse_written.ivt", 2, true));
  ASSERT_TRUE(RunPasses(&written, {}).ok());
  EXPECT_EQ(Ops(written).size(), 4u);
}

TEST(Cse, RenamesRegionOutputsAndChainsMerges) {
  // a1 = x * 2; a2 = x * 2; b1 = relu(a1); b2 = relu(a2); c = b1 + x (dead); return b2
  TraceBuilder t("cse_chain.ivt");
  t.Op("torch.Tensor.mul", {TensorArg(Ref(1, 0)), IntArg(2)}, Ref(10, 0));
  t.Op("torch.Tensor.mul", {TensorArg(Ref(1, 0)), IntArg(2)}, Ref(11, 0));
  t.Op("torch.relu", {TensorArg(Ref(10, 0))}, Ref(12, 0));
  t.Op("torch.relu", {TensorArg(Ref(11, 0))}, Ref(13, 0));
  t.Op("torch.Tensor.add", {TensorArg(Ref(12, 0)), TensorArg(Ref(1, 0))}, Ref(14, 0));
  Graph g = Build(t.Finish(Ref(13, 0)));
  ASSERT_TRUE(RunPasses(&g, {}).ok());
  // The second relu reads the first mul after the merge, so it merges too; the add is dead.
  EXPECT_EQ(Ops(g), (std::vector<std::string>{"torch.Tensor.mul", "torch.relu"}));
  EXPECT_EQ(g.OutputValues()[0], g.nodes[1].outputs[0]);
}

TEST(Cse, FindsDuplicatesAmongManyUsersOfOneValue) {
  // x * k for k = 0..19, then the same twenty calls again, in reverse order, all summed: each
  // repeat merges into its first call, whether the first is among the value's earliest users or
  // past them (the pass keeps the first few users of a value in a list, later ones in a table).
  TraceBuilder t("cse_fanout.ivt");
  const int kCalls = 20;
  uint64_t id = 10;
  std::vector<uint64_t> products;
  for (int round = 0; round < 2; ++round) {
    for (int j = 0; j < kCalls; ++j) {
      const int k = round == 0 ? j : kCalls - 1 - j;
      t.Op("torch.Tensor.mul", {TensorArg(Ref(1, 0)), IntArg(k)}, Ref(id, 0));
      products.push_back(id++);
    }
  }
  uint64_t acc = products[0];
  for (size_t j = 1; j < products.size(); ++j) {
    t.Op("torch.Tensor.add", {TensorArg(Ref(acc, 0)), TensorArg(Ref(products[j], 0))}, Ref(id, 0));
    acc = id++;
  }
  Graph g = Build(t.Finish(Ref(acc, 0)));
  std::vector<PassReport> report;
  ASSERT_TRUE(RunPasses(&g, {{"cse"}}, &report).ok());
  ASSERT_EQ(report.size(), 1u);
  EXPECT_EQ(report[0].removed, static_cast<size_t>(kCalls));
  // Every add of the second half reads the product of the first half with the same k.
  for (const Node& n : g.nodes) {
    if (n.op != "torch.Tensor.add") continue;
    const Value& rhs = g.values[n.inputs[1]];
    ASSERT_EQ(rhs.kind, v1::NODE_OUTPUT);
    EXPECT_LT(static_cast<size_t>(rhs.producer), static_cast<size_t>(kCalls));
  }
}

v1::Arg FloatArg(double f) {
  v1::Arg a;
  a.set_f(f);
  return a;
}

TEST(Pipeline, CleanupsRunToAFixedPoint) {
  // y = x * 2; z = y.clone(); y.add_(1) (dead); return z * 3. Round 1: simplify must keep the
  // clone (y is written later), dce drops the add_. Round 2: simplify forwards the clone. Round 3
  // changes nothing, so the stage stops.
  TraceBuilder t("fixed_point.ivt");
  t.Op("torch.Tensor.mul", {TensorArg(Ref(1, 0)), IntArg(2)}, Ref(10, 0));
  t.Op("torch.Tensor.clone", {TensorArg(Ref(10, 0))}, Ref(11, 0));
  t.Op("torch.Tensor.add_", {TensorArg(Ref(10, 0)), IntArg(1)}, Ref(10, 1), v1::INPLACE, {}, {Ref(10, 1)});
  t.Op("torch.Tensor.mul", {TensorArg(Ref(11, 0)), IntArg(3)}, Ref(12, 0));
  const std::string path = t.Finish(Ref(12, 0));

  Graph g = Build(path);
  std::vector<PassReport> report;
  ASSERT_TRUE(RunPasses(&g, {}, &report).ok());
  EXPECT_EQ(Ops(g), (std::vector<std::string>{"torch.Tensor.mul", "torch.Tensor.mul"}));
  std::vector<std::string> runs;
  for (const auto& r : report) runs.push_back(r.pass + "#" + std::to_string(r.round) + "-" + std::to_string(r.removed));
  EXPECT_EQ(runs, (std::vector<std::string>{"constant-fold#1-0", "fold-conv-bn#1-0", "simplify#1-0", "cse#1-0",
                                            "dce#1-1", "simplify#2-1", "cse#2-0", "dce#2-0", "simplify#3-0",
                                            "cse#3-0", "dce#3-0"}));

  // Passes named on the command line run once each, in the order given.
  Graph once = Build(path);
  PipelineOptions o;
  o.passes = {"simplify", "cse", "dce"};
  ASSERT_TRUE(RunPasses(&once, o).ok());
  EXPECT_EQ(Ops(once), (std::vector<std::string>{"torch.Tensor.mul", "torch.Tensor.clone", "torch.Tensor.mul"}));
}

TEST(Simplify, ForwardsIdentityLikeCallsToTheirInput) {
  // d = x.detach(); m = d * 1; a = m + 0.0; r = a.reshape(3); y = r.relu(): y reads x through the
  // reshape only. reshape(3) of the recorded 3-element x is no identity on a replay where x has
  // another shape (x's rank is not even guarded: the program read no shape), so it stays.
  TraceBuilder t("simplify.ivt");
  t.Op("torch.Tensor.detach", {TensorArg(Ref(1, 0))}, Ref(10, 0));
  t.Op("torch.Tensor.mul", {TensorArg(Ref(10, 0)), IntArg(1)}, Ref(11, 0));
  t.Op("torch.Tensor.add", {TensorArg(Ref(11, 0)), FloatArg(0.0)}, Ref(12, 0));
  t.Op("torch.Tensor.reshape", {TensorArg(Ref(12, 0)), IntArg(3)}, Ref(13, 0));
  t.Op("torch.relu", {TensorArg(Ref(13, 0))}, Ref(14, 0));
  Graph g = Build(t.Finish(Ref(14, 0)));
  std::vector<PassReport> report;
  ASSERT_TRUE(RunPasses(&g, {}, &report).ok());
  EXPECT_EQ(Ops(g), (std::vector<std::string>{"torch.Tensor.reshape", "torch.relu"}));
  EXPECT_EQ(g.values[g.nodes[0].inputs[0]].kind, v1::INPUT);
}

TEST(Simplify, KeepsCallsThatChangeShapeValueOrAliasing) {
  TraceBuilder t("simplify_keep.ivt");
  t.Op("torch.Tensor.mul", {TensorArg(Ref(1, 0)), IntArg(2)}, Ref(10, 0));          // not the identity
  t.Op("torch.Tensor.add", {TensorArg(Ref(1, 0)), IntArg(0)}, Ref(11, 0, {2, 3}));  // broadcast
  t.Op("torch.Tensor.reshape", {TensorArg(Ref(10, 0)), IntArg(1), IntArg(3)}, Ref(12, 0, {1, 3}));
  t.Op("torch.Tensor.clone", {TensorArg(Ref(10, 0))}, Ref(13, 0));
  t.Op("torch.Tensor.add_", {TensorArg(Ref(13, 0)), IntArg(1)}, Ref(13, 1), v1::INPLACE, {}, {Ref(13, 1)});
  v1::Arg all;
  for (auto r : {Ref(11, 0, {2, 3}), Ref(12, 0, {1, 3}), Ref(13, 1)}) *all.mutable_list()->add_items() = TensorArg(r);
  t.Op("torch.Tensor.clone", {TensorArg(Ref(1, 0))}, Ref(14, 0));  // returned: stays a copy of x
  *all.mutable_list()->add_items() = TensorArg(Ref(14, 0));
  // x.view(1, 3).clone() returned: the view shares x's memory, so the copy stays.
  v1::TensorRef view = Ref(15, 0, {1, 3});
  view.set_storage(1);
  t.Op("torch.Tensor.view", {TensorArg(Ref(1, 0)), IntArg(1), IntArg(3)}, view);
  t.Op("torch.Tensor.clone", {TensorArg(view)}, Ref(16, 0, {1, 3}));
  *all.mutable_list()->add_items() = TensorArg(Ref(16, 0, {1, 3}));
  std::string path = t.Finish(Ref(14, 0));
  Graph g = Build(path);
  g.outputs = all;
  ForEachTensorMutable(&g.outputs, [&](v1::TensorRef* r) {
    for (size_t v = 0; v < g.values.size(); ++v) {
      if (g.values[v].tensor_id == r->id() && g.values[v].tensor_version == r->version()) r->set_value(v);
    }
  });
  ASSERT_TRUE(RunPasses(&g, {{"simplify", "dce"}}).ok());
  EXPECT_EQ(Ops(g), (std::vector<std::string>{"torch.Tensor.mul", "torch.Tensor.add", "torch.Tensor.reshape",
                                               "torch.Tensor.clone", "torch.Tensor.add_", "torch.Tensor.clone",
                                               "torch.Tensor.view", "torch.Tensor.clone"}));
}

}  // namespace
}  // namespace ivytrace
