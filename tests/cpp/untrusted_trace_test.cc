// A trace is untrusted input: every dim, index and count read from it is checked against what it
// indexes. These traces are what a recorder never writes (or writes for a 0-d tensor, the edge a
// rank-based loop forgets); each must build correctly or fail with Corruption naming the op.
#include <gtest/gtest.h>

#include <cstdint>

#include "core/ir/graph_builder.h"
#include "core/ir/verifier.h"
#include "core/passes/pass_registry.h"
#include "temp_path.h"
#include "trace_fixture.h"

namespace ivytrace {
namespace {

using testing::IntArg;
using testing::Ref;
using testing::TempPath;
using testing::TensorArg;

struct ViewCall {
  std::string op;
  std::vector<v1::Arg> extra;     // arguments after the tensor
  std::vector<int64_t> in_shape;  // the base's shape
  std::vector<int64_t> out_shape;
  bool write_view = false;        // view.add_(1) after it, then return the base
};

// x (input) -> view = op(x, extra...) sharing x's storage -> [view.add_(1)] -> return view + 1
// (or x when the view was written).
std::string WriteViewTrace(const std::string& path, const ViewCall& c) {
  TraceWriter w;
  w.Open(path, v1::Header());
  v1::Record rb;
  rb.mutable_region_begin()->set_region(1);
  rb.mutable_region_begin()->set_name("f");
  auto* in = rb.mutable_region_begin()->add_inputs();
  in->set_name("x");
  *in->mutable_value() = TensorArg(Ref(1, 0, c.in_shape));
  w.Write(rb);
  auto view = [&](uint32_t version) {
    v1::TensorRef r = Ref(2, version, c.out_shape);
    r.set_storage(1);
    return r;
  };
  std::vector<v1::Arg> args{TensorArg(Ref(1, 0, c.in_shape))};
  args.insert(args.end(), c.extra.begin(), c.extra.end());
  testing::WriteOp(w, c.op, args, TensorArg(view(0)), {}, 2);
  v1::Record re;
  re.mutable_region_end()->set_region(1);
  if (c.write_view) {
    testing::WriteOp(w, "torch.Tensor.add_", {TensorArg(view(0)), IntArg(1)}, TensorArg(view(1)), {view(1)}, 3);
    v1::TensorRef x1 = Ref(1, 1, c.in_shape);
    *re.mutable_region_end()->mutable_result() = TensorArg(x1);
  } else {
    testing::WriteOp(w, "torch.Tensor.add", {TensorArg(view(0)), IntArg(1)}, TensorArg(Ref(3, 0, c.out_shape)), {}, 3);
    *re.mutable_region_end()->mutable_result() = TensorArg(Ref(3, 0, c.out_shape));
  }
  w.Write(re);
  w.Close();
  return path;
}

Status Build(const ViewCall& c, const std::string& name, Graph* g) {
  return BuildGraphFromTrace(WriteViewTrace(TempPath(name), c), {}, g);
}

TEST(UntrustedTrace, TransposeOfAZeroDimTensorBuildsAndRuns) {
  for (int64_t d : {0, -1}) {
    Graph g;
    Status st = Build({"torch.Tensor.transpose", {IntArg(0), IntArg(d)}, {}, {}}, "t0d.ivt", &g);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_TRUE(VerifyGraph(g).ok());
    ASSERT_TRUE(RunPipeline({}, &g, nullptr).ok());
    EXPECT_EQ(g.values[g.OutputValues()[0]].shape, std::vector<int64_t>{});
  }
}

TEST(UntrustedTrace, WriteThroughATransposeOfAZeroDimTensorIsCarriedBack) {
  Graph g;
  Status st = Build({"torch.Tensor.transpose", {IntArg(0), IntArg(0)}, {}, {}, true}, "t0dw.ivt", &g);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(VerifyGraph(g).ok());
  EXPECT_EQ(g.nodes.back().op, "torch.permute");
}

void ExpectDamage(const Status& st, const std::string& op) {
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.kind(), Status::Kind::kCorruption) << st.message();
  EXPECT_NE(st.message().find("'" + op + "' at prog.py:2"), std::string::npos) << st.message();
}

TEST(UntrustedTrace, TransposeDimsOutOfRangeAreDamage) {
  Graph g;
  ExpectDamage(Build({"torch.Tensor.transpose", {IntArg(0), IntArg(100000)}, {2, 3}, {3, 2}}, "tbad.ivt", &g),
               "torch.Tensor.transpose");
  ExpectDamage(Build({"torch.transpose", {IntArg(-3), IntArg(0)}, {2, 3}, {3, 2}}, "tbad2.ivt", &g),
               "torch.transpose");
  ExpectDamage(Build({"torch.Tensor.transpose", {IntArg(0), IntArg(1)}, {}, {}}, "tbad3.ivt", &g),
               "torch.Tensor.transpose");
}

TEST(UntrustedTrace, PermuteDimsOutOfRangeOrRepeatedAreDamage) {
  Graph g;
  ExpectDamage(Build({"torch.Tensor.permute", {IntArg(5), IntArg(0)}, {2, 3}, {3, 2}, true}, "pbad.ivt", &g),
               "torch.Tensor.permute");
  ExpectDamage(Build({"torch.permute", {IntArg(-9), IntArg(0)}, {2, 3}, {3, 2}, true}, "pbad2.ivt", &g),
               "torch.permute");
  ExpectDamage(Build({"torch.Tensor.permute", {IntArg(1), IntArg(1)}, {2, 3}, {3, 2}, true}, "pbad3.ivt", &g),
               "torch.Tensor.permute");
}

TEST(UntrustedTrace, ValidPermuteWriteIsStillCarriedBack) {
  Graph g;
  Status st = Build({"torch.Tensor.permute", {IntArg(-1), IntArg(0)}, {2, 3}, {3, 2}, true}, "pok.ivt", &g);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(VerifyGraph(g).ok());
  EXPECT_EQ(g.nodes.back().op, "torch.permute");
}

TEST(UntrustedTrace, SelectAndNarrowDimsOutOfRangeAreDamage) {
  Graph g;
  ExpectDamage(Build({"torch.Tensor.select", {IntArg(int64_t{1} << 40), IntArg(0)}, {2, 3}, {3}}, "sbad.ivt", &g),
               "torch.Tensor.select");
  ExpectDamage(Build({"torch.select", {IntArg(INT64_MIN), IntArg(0)}, {2, 3}, {3}}, "sbad2.ivt", &g),
               "torch.select");
  ExpectDamage(Build({"torch.Tensor.narrow", {IntArg(7), IntArg(0), IntArg(1)}, {2, 3}, {2, 1}}, "nbad.ivt", &g),
               "torch.Tensor.narrow");
  ExpectDamage(Build({"torch.Tensor.narrow", {IntArg(0), IntArg(INT64_MAX), IntArg(INT64_MAX)}, {2, 3}, {1, 3}},
                     "nbad2.ivt", &g),
               "torch.Tensor.narrow");
}

TEST(UntrustedTrace, SelectInRangeIsWrittenBackThroughAnIndex) {
  Graph g;
  Status st = Build({"torch.Tensor.select", {IntArg(-1), IntArg(2)}, {2, 3}, {2}, true}, "sok.ivt", &g);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(VerifyGraph(g).ok());
  // clone + __setitem__ of the input's copy, then one copy_ back into the input.
  ASSERT_GE(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[g.nodes.size() - 2].op, "torch.Tensor.__setitem__");
  EXPECT_EQ(g.nodes.back().op, "torch.Tensor.copy_");
}

TEST(UntrustedTrace, AHugeRegionIndexMatchesNoRegion) {
  Graph g;
  BuildOptions o;
  o.region = "f:99999999999999999999999999";
  Status st = BuildGraphFromTrace(
      WriteViewTrace(TempPath("region.ivt"), {"torch.Tensor.view", {IntArg(-1)}, {2, 3}, {6}}), o, &g);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.kind(), Status::Kind::kNotFound) << st.message();
}

}  // namespace
}  // namespace ivytrace
