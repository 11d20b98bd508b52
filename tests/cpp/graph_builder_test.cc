#include "temp_path.h"
#include "core/ir/graph_builder.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <filesystem>

#include "core/ir/verifier.h"
#include "core/passes/pass_registry.h"
#include "trace_fixture.h"

namespace ivytrace {
namespace {

using testing::IntArg;
using testing::Ref;
using testing::TensorArg;

using testing::TempPath;

TEST(GraphBuilder, SeedsExampleBuildsSsaAndDceKeepsOnlyThePower) {
  auto path = testing::WriteSeedsTrace(TempPath("seeds.ivt"));
  Graph g;
  ASSERT_TRUE(BuildGraphFromTrace(path, {}, &g).ok());
  ASSERT_TRUE(VerifyGraph(g).ok());
  EXPECT_EQ(g.name, "fn");
  ASSERT_EQ(g.inputs.size(), 2u);
  EXPECT_EQ(g.inputs[0].name(), "x");
  EXPECT_EQ(g.nodes.size(), 4u);
  ASSERT_NE(g.nodes[0].schema, nullptr);
  EXPECT_EQ(g.nodes[0].canonical(), "pow");
  std::vector<PassReport> report;
  ASSERT_TRUE(RunPipeline({}, &g, &report).ok());
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op, "torch.Tensor.__pow__");
  // constant-fold runs first and finds nothing here; dce's first round removes the three dead ops
  // and the round after it (the cleanups run to a fixed point) finds nothing more.
  const auto dce = std::find_if(report.begin(), report.end(), [](const PassReport& r) { return r.pass == "dce"; });
  ASSERT_NE(dce, report.end());
  EXPECT_EQ(dce->removed, 3u);
  EXPECT_EQ(report.back().pass, "dce");
  EXPECT_EQ(report.back().round, 2);
  EXPECT_EQ(report.back().removed, 0u);
  ASSERT_TRUE(VerifyGraph(g).ok());
}

// x (input) -> y = x * 2 -> y += w (w a named parameter) -> return y
std::string WriteInplaceTrace(const std::string& path, bool write_input) {
  TraceWriter w;
  w.Open(path, v1::Header());
  v1::Record rb;
  rb.mutable_region_begin()->set_region(7);
  rb.mutable_region_begin()->set_name("f");
  auto* in = rb.mutable_region_begin()->add_inputs();
  in->set_name("x");
  *in->mutable_value() = TensorArg(Ref(1, 0));
  w.Write(rb);
  testing::WriteConstant(w, Ref(9, 0), "fc.weight", {1, 2, 3});
  testing::WriteOp(w, "torch.Tensor.mul", {TensorArg(Ref(1, 0)), IntArg(2)}, TensorArg(Ref(2, 0)));
  testing::WriteOp(w, "torch.Tensor.add_", {TensorArg(Ref(2, 0)), TensorArg(Ref(9, 0))}, TensorArg(Ref(2, 1)),
                   {Ref(2, 1)});
  if (write_input) {
    // x.add_(1): writes the caller's tensor; nothing reads it afterwards.
    testing::WriteOp(w, "torch.Tensor.add_", {TensorArg(Ref(1, 0)), IntArg(1)}, TensorArg(Ref(1, 1)), {Ref(1, 1)});
  }
  // A temporary written in place that nothing reads: dead.
  testing::WriteOp(w, "torch.Tensor.mul", {TensorArg(Ref(1, 0)), IntArg(3)}, TensorArg(Ref(3, 0)));
  testing::WriteOp(w, "torch.Tensor.mul_", {TensorArg(Ref(3, 0)), IntArg(3)}, TensorArg(Ref(3, 1)), {Ref(3, 1)});
  v1::Record re;
  re.mutable_region_end()->set_region(7);
  *re.mutable_region_end()->mutable_result() = TensorArg(Ref(2, 1));
  w.Write(re);
  w.Close();
  return path;
}

TEST(GraphBuilder, InPlaceWritesDefineNewValuesAndConstantsKeepTheirNames) {
  Graph g;
  ASSERT_TRUE(BuildGraphFromTrace(WriteInplaceTrace(TempPath("inplace.ivt"), false), {}, &g).ok());
  ASSERT_TRUE(VerifyGraph(g).ok());
  ASSERT_EQ(g.nodes.size(), 4u);
  const Node& add = g.nodes[1];
  ASSERT_EQ(add.inputs.size(), 2u);
  ASSERT_EQ(add.outputs.size(), 1u);
  EXPECT_NE(add.inputs[0], add.outputs[0]) << "x.add_() must define a new SSA value";
  EXPECT_EQ(g.values[add.inputs[1]].kind, v1::CONSTANT_VALUE);
  EXPECT_EQ(g.values[add.inputs[1]].name, "fc.weight");
  EXPECT_EQ(g.OutputValues()[0], add.outputs[0]);
}

TEST(Dce, RemovesWritesToTemporariesButKeepsWritesToInputs) {
  Graph g;
  ASSERT_TRUE(BuildGraphFromTrace(WriteInplaceTrace(TempPath("inplace2.ivt"), true), {}, &g).ok());
  ASSERT_EQ(g.nodes.size(), 5u);
  ASSERT_TRUE(RunPipeline({{"dce"}, {}, true}, &g, nullptr).ok());
  std::vector<std::string> ops;
  for (const auto& n : g.nodes) ops.push_back(n.op);
  EXPECT_EQ(ops, (std::vector<std::string>{"torch.Tensor.mul", "torch.Tensor.add_", "torch.Tensor.add_"}));
  // The kept write to the input is the one reading the input value directly.
  EXPECT_EQ(g.values[g.nodes[2].inputs[0]].kind, v1::INPUT);
}

TEST(GraphBuilder, UnknownRegionListsTheRegionsThereAre) {
  Graph g;
  BuildOptions o;
  o.region = "nope";
  Status st = BuildGraphFromTrace(testing::WriteSeedsTrace(TempPath("seeds2.ivt")), o, &g);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.kind(), Status::Kind::kNotFound);
  EXPECT_NE(st.message().find("regions in the trace: fn"), std::string::npos) << st.message();
}

TEST(GraphBuilder, ReadOfAnUnrecordedTensorIsAClearError) {
  auto path = TempPath("unrecorded.ivt");
  TraceWriter w;
  w.Open(path, v1::Header());
  v1::Record rb;
  rb.mutable_region_begin()->set_region(1);
  rb.mutable_region_begin()->set_name("f");
  w.Write(rb);
  testing::WriteOp(w, "torch.Tensor.mul", {TensorArg(Ref(5, 0)), IntArg(2)}, TensorArg(Ref(6, 0)), {}, 12);
  v1::Record re;
  re.mutable_region_end()->set_region(1);
  *re.mutable_region_end()->mutable_result() = TensorArg(Ref(6, 0));
  w.Write(re);
  w.Close();
  Graph g;
  Status st = BuildGraphFromTrace(path, {}, &g);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("prog.py:12"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("t5"), std::string::npos) << st.message();
}

// Region "f:0" ends (y = x * 2), region "f:1" begins and is cut by --max-ops 2 before it ends.
std::string WriteTraceCutByALimit(const std::string& path) {
  TraceWriter w;
  w.Open(path, v1::Header());
  for (uint64_t region : {1, 2}) {
    v1::Record rb;
    rb.mutable_region_begin()->set_region(region);
    rb.mutable_region_begin()->set_name("f");
    auto* in = rb.mutable_region_begin()->add_inputs();
    in->set_name("x");
    *in->mutable_value() = TensorArg(Ref(10 * region, 0));
    w.Write(rb);
    testing::WriteOp(w, "torch.Tensor.mul", {TensorArg(Ref(10 * region, 0)), IntArg(2)},
                     TensorArg(Ref(10 * region + 1, 0)), {}, 5);
    if (region == 2) break;
    v1::Record re;
    re.mutable_region_end()->set_region(region);
    *re.mutable_region_end()->mutable_result() = TensorArg(Ref(10 * region + 1, 0));
    w.Write(re);
  }
  v1::Footer footer;
  auto* hit = footer.mutable_stopped_by_limit();
  hit->set_kind(v1::LimitHit::MAX_OPS);
  hit->set_value(2);
  hit->set_ops_recorded(2);
  hit->set_op("torch.Tensor.add");
  hit->set_file("prog.py");
  hit->set_line(6);
  w.Close(footer);
  return path;
}

TEST(GraphBuilder, ARegionCutByARecordingLimitIsRefusedByName) {
  const auto path = WriteTraceCutByALimit(TempPath("cut_by_limit.ivt"));
  Graph g;
  BuildOptions o;
  o.region = "f:1";
  Status st = BuildGraphFromTrace(path, o, &g);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.kind(), Status::Kind::kCorruption);
  for (const char* part : {"region 'f:1' was cut by a recording limit", "--max-ops 2",
                           "op 3 (torch.Tensor.add at prog.py:6)"}) {
    EXPECT_NE(st.message().find(part), std::string::npos) << st.message();
  }
  EXPECT_NE(st.message().find(path), std::string::npos) << st.message();
  // A later region is not in the trace at all: the message says the limit is why.
  o.region = "f:2";
  st = BuildGraphFromTrace(path, o, &g);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("stopped early at a limit"), std::string::npos) << st.message();
  // The region that ended before the limit builds, and the summary names the limit.
  o.region = "f:0";
  BuildSummary summary;
  ASSERT_TRUE(BuildGraphFromTrace(path, o, &g, &summary).ok());
  EXPECT_EQ(g.nodes.size(), 1u);
  EXPECT_NE(summary.stopped_by_limit.find("--max-ops 2"), std::string::npos);
}

// y = x * 2; v = y.view(-1) (or y.diagonal()); v.add_(1); return y. The view shares y's storage.
std::string WriteViewWriteTrace(const std::string& path, const std::string& view_op) {
  TraceWriter w;
  w.Open(path, v1::Header());
  v1::Record rb;
  rb.mutable_region_begin()->set_region(1);
  rb.mutable_region_begin()->set_name("f");
  auto* in = rb.mutable_region_begin()->add_inputs();
  in->set_name("x");
  *in->mutable_value() = TensorArg(Ref(1, 0, {2, 3}));
  w.Write(rb);
  auto view = [&](uint32_t version) {
    v1::TensorRef r = Ref(3, version, view_op == "torch.Tensor.view" ? std::vector<int64_t>{6}
                                                                        : std::vector<int64_t>{2});
    r.set_storage(2);
    return r;
  };
  testing::WriteOp(w, "torch.Tensor.mul", {TensorArg(Ref(1, 0, {2, 3})), IntArg(2)},
                   TensorArg(Ref(2, 0, {2, 3})), {}, 2);
  std::vector<v1::Arg> args{TensorArg(Ref(2, 0, {2, 3}))};
  if (view_op == "torch.Tensor.view") args.push_back(IntArg(-1));
  testing::WriteOp(w, view_op, args, TensorArg(view(0)), {}, 3);
  testing::WriteOp(w, "torch.Tensor.add_", {TensorArg(view(0)), IntArg(1)}, TensorArg(view(1)), {view(1)}, 4);
  v1::Record re;
  re.mutable_region_end()->set_region(1);
  v1::TensorRef y1 = Ref(2, 1, {2, 3});
  *re.mutable_region_end()->mutable_result() = TensorArg(y1);
  w.Write(re);
  w.Close();
  return path;
}

TEST(GraphBuilder, WriteThroughAViewDefinesTheNextVersionOfTheBase) {
  Graph g;
  Status st = BuildGraphFromTrace(WriteViewWriteTrace(TempPath("viewwrite.ivt"), "torch.Tensor.view"), {}, &g);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(VerifyGraph(g).ok());
  ASSERT_EQ(g.nodes.size(), 4u);
  const Node& back = g.nodes[3];
  // reshape_as the base's old value, so that a replay at another shape writes back at that shape.
  EXPECT_EQ(back.op, "torch.Tensor.reshape_as");
  EXPECT_EQ(back.inputs[0], g.nodes[2].outputs[0]) << "the base's new value is made from the written view";
  EXPECT_EQ(g.values[back.inputs[1]].tensor_id, 2u) << "shaped like the base";
  EXPECT_EQ(g.values[back.inputs[1]].tensor_version, 0u);
  EXPECT_EQ(g.OutputValues()[0], back.outputs[0]);
  EXPECT_EQ(g.values[back.outputs[0]].tensor_id, 2u);
  EXPECT_EQ(g.values[back.outputs[0]].tensor_version, 1u);
  EXPECT_EQ(g.values[back.outputs[0]].shape, (std::vector<int64_t>{2, 3}));
}

TEST(GraphBuilder, WriteThroughAnUninvertibleViewIsAClearErrorWhenTheBaseIsRead) {
  Graph g;
  Status st = BuildGraphFromTrace(WriteViewWriteTrace(TempPath("viewwrite2.ivt"), "torch.Tensor.diagonal"), {}, &g);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("'torch.Tensor.diagonal' at prog.py:3"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("'torch.Tensor.add_' at prog.py:4"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace ivytrace
