#include "sealed_bytes.h"
#include "temp_path.h"
#include "core/export/plan_exporter.h"

#include <gtest/gtest.h>

#include <google/protobuf/util/message_differencer.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/io/file_kind.h"
#include "core/ir/graph_builder.h"
#include "trace_fixture.h"

namespace ivytrace {
namespace {

using testing::Ref;
using testing::TensorArg;

using testing::TempPath;

// y = torch.from_numpy(x.numpy() @ W), W a NumPy constant: a mixed program's region.
std::string WriteMixedTrace(const std::string& path) {
  TraceWriter w;
  w.Open(path, v1::Header());
  v1::Record rb;
  rb.mutable_region_begin()->set_region(1);
  rb.mutable_region_begin()->set_name("f");
  auto* in = rb.mutable_region_begin()->add_inputs();
  in->set_name("x");
  *in->mutable_value() = TensorArg(Ref(1, 0, {2, 3}));
  w.Write(rb);
  testing::WriteOp(w, "torch.Tensor.numpy", {TensorArg(Ref(1, 0, {2, 3}))}, TensorArg(Ref(2, 0, {2, 3})), {}, 2);
  v1::Record c;
  auto* td = c.mutable_tensor();
  *td->mutable_ref() = Ref(3, 0, {3, 1});
  auto* t = td->mutable_value();
  t->set_dtype(v1::FLOAT32);
  t->add_shape(3);
  t->add_shape(1);
  t->set_role(v1::CONSTANT);
  t->set_framework("numpy");
  t->set_data(std::string(12, '\0'));
  td->set_total_bytes(12);
  w.Write(c);
  testing::WriteOp(w, "numpy.matmul", {TensorArg(Ref(2, 0, {2, 3})), TensorArg(Ref(3, 0, {3, 1}))},
                   TensorArg(Ref(4, 0, {2, 1})), {}, 3);
  testing::WriteOp(w, "torch.from_numpy", {TensorArg(Ref(4, 0, {2, 1}))}, TensorArg(Ref(5, 0, {2, 1})), {}, 4);
  v1::Record re;
  re.mutable_region_end()->set_region(1);
  *re.mutable_region_end()->mutable_result() = TensorArg(Ref(5, 0, {2, 1}));
  w.Write(re);
  w.Close();
  return path;
}

TEST(PlanExporter, AMixedProgramsPlanNamesBothFrameworksAndItsConstantsKeepTheirs) {
  Graph g;
  ASSERT_TRUE(BuildGraphFromTrace(WriteMixedTrace(TempPath("mixed.ivt")), {}, &g).ok());
  v1::Plan plan;
  Status st = ExportPlan(g, &plan);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(plan.framework(), "torch,numpy");
  ASSERT_EQ(plan.steps_size(), 3);
  EXPECT_EQ(plan.steps(0).function(), "torch.Tensor.numpy");
  EXPECT_EQ(plan.steps(2).function(), "torch.from_numpy");
  ASSERT_EQ(plan.constants_size(), 1);
  EXPECT_EQ(plan.constants(0).value().framework(), "numpy");
}

TEST(PlanExporter, APlanOfOneFrameworkNamesOnlyIt) {
  Graph g;
  ASSERT_TRUE(BuildGraphFromTrace(testing::WriteSeedsTrace(TempPath("seeds_plan.ivt")), {}, &g).ok());
  v1::Plan plan;
  ASSERT_TRUE(ExportPlan(g, &plan).ok());
  EXPECT_EQ(plan.framework(), "torch");
}


// ---------------------------------------------------------------------------------------------
// Plan files written streaming (ExportPlanFile): the bytes are the magic and then exactly what
// the in-memory ExportPlan's v1::Plan serializes to.

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// x -> c = x.clone(); c[0] = 5 (writes c, returns None); c.add_(w) (writes c, returns it);
// return (c * x, c), with w a parameter: steps with `written` entries, frees and a constant.
std::string WriteInPlaceTrace(const std::string& path) {
  using testing::IntArg;
  TraceWriter w;
  v1::Header h;
  h.set_producer("plan_exporter_test");
  w.Open(path, h);
  v1::Record rb;
  rb.mutable_region_begin()->set_region(1);
  rb.mutable_region_begin()->set_name("inplace");
  auto* in = rb.mutable_region_begin()->add_inputs();
  in->set_name("x");
  *in->mutable_value() = TensorArg(Ref(1, 0));
  w.Write(rb);
  testing::WriteOp(w, "torch.Tensor.clone", {TensorArg(Ref(1, 0))}, TensorArg(Ref(2, 0)), {}, 2);
  testing::WriteConstant(w, Ref(3, 0), "layer.weight", {1, 2, 3});
  v1::Arg none;
  none.set_none(true);
  testing::WriteOp(w, "torch.Tensor.__setitem__", {TensorArg(Ref(2, 0)), IntArg(0), IntArg(5)}, none, {Ref(2, 1)}, 3);
  testing::WriteOp(w, "torch.Tensor.add_", {TensorArg(Ref(2, 1)), TensorArg(Ref(3, 0))}, TensorArg(Ref(2, 2)),
                   {Ref(2, 2)}, 4);
  testing::WriteOp(w, "torch.Tensor.mul", {TensorArg(Ref(2, 2)), TensorArg(Ref(1, 0))}, TensorArg(Ref(4, 0)), {}, 5);
  v1::Record re;
  re.mutable_region_end()->set_region(1);
  auto* out = re.mutable_region_end()->mutable_result()->mutable_tuple();
  *out->add_items() = TensorArg(Ref(4, 0));
  *out->add_items() = TensorArg(Ref(2, 2));
  w.Write(re);
  w.Close();
  return path;
}

// The bytes of a format 02 plan file (plan.proto) holding `plan`: the magic, the data section's
// size, zeros to byte 64, each constant's bytes at a 64-byte aligned offset, then the Plan with
// each constant's data replaced by its place (what the sealed file holds before its checksum).
std::string Format02(v1::Plan plan) {
  std::string section;
  for (auto& c : *plan.mutable_constants()) {
    c.set_data_offset(section.size());
    c.set_data_bytes(c.value().data().size());
    section += c.value().data();
    section.append((64 - section.size() % 64) % 64, '\0');
    c.mutable_value()->clear_data();
  }
  std::string head(kPlanMagic, 8);
  for (int i = 0; i < 8; ++i) head.push_back(static_cast<char>((section.size() >> (8 * i)) & 0xff));
  head.append(64 - head.size(), '\0');
  return head + section + plan.SerializeAsString();
}

// A format 02 file read back into the plan ExportPlan builds: constants' bytes from the section.
v1::Plan ReadBack(const std::string& bytes) {
  v1::Plan got;
  uint64_t section = 0;
  for (int i = 7; i >= 0; --i) section = section << 8 | static_cast<unsigned char>(bytes[8 + i]);
  EXPECT_TRUE(got.ParseFromString(bytes.substr(64 + section)));
  for (auto& c : *got.mutable_constants()) {
    EXPECT_EQ(c.data_offset() % 64, 0u);
    EXPECT_LE(c.data_offset() + c.data_bytes(), section);
    c.mutable_value()->set_data(bytes.substr(64 + c.data_offset(), c.data_bytes()));
    c.clear_data_offset();
    c.clear_data_bytes();
  }
  got.clear_crc32();
  return got;
}

void ExpectStreamedPlanIsTheInMemoryOne(const Graph& g, const std::string& name) {
  SCOPED_TRACE(name);
  v1::Plan want;
  Status st = ExportPlan(g, &want);
  ASSERT_TRUE(st.ok()) << st.ToString();
  const std::string path = TempPath(name + ".plan");
  std::filesystem::remove(path);
  st = ExportPlanFile(g, path);
  ASSERT_TRUE(st.ok()) << st.ToString();
  const std::string bytes = ReadBytes(path);
  ASSERT_GE(bytes.size(), 8u);
  EXPECT_EQ(bytes.substr(0, 8), std::string(kPlanMagic, 8));
  v1::Plan got = ReadBack(bytes);
  std::string diff;
  google::protobuf::util::MessageDifferencer d;
  d.ReportDifferencesToString(&diff);
  EXPECT_TRUE(d.Compare(got, want)) << diff;
  // The data section, then the Plan's fields in field-number order, presence as the generated
  // serializer decides: the same bytes. Then the checksum of all of it, as the last field.
  EXPECT_TRUE(bytes == testing::Sealed(Format02(want)));
}

TEST(PlanFile, StreamedBytesAreWhatTheInMemoryPlanSerializesTo) {
  Graph seeds;
  ASSERT_TRUE(BuildGraphFromTrace(testing::WriteSeedsTrace(TempPath("seeds_file.ivt")), {}, &seeds).ok());
  ExpectStreamedPlanIsTheInMemoryOne(seeds, "seeds");

  Graph mixed;
  ASSERT_TRUE(BuildGraphFromTrace(WriteMixedTrace(TempPath("mixed_file.ivt")), {}, &mixed).ok());
  ExpectStreamedPlanIsTheInMemoryOne(mixed, "mixed");
  // The data section is exercised: constants whose sizes are not multiples of 64 get padding.
  int unaligned = 0;
  for (const Graph* graph : {&seeds, &mixed}) {
    v1::Plan with_constants;
    ASSERT_TRUE(ExportPlan(*graph, &with_constants).ok());
    for (const auto& c : with_constants.constants()) unaligned += c.value().data().size() % 64 != 0;
  }
  EXPECT_GT(unaligned, 0);

  Graph g;
  Status st = BuildGraphFromTrace(WriteInPlaceTrace(TempPath("inplace.ivt")), {}, &g);
  ASSERT_TRUE(st.ok()) << st.ToString();
  v1::Plan plan;
  ASSERT_TRUE(ExportPlan(g, &plan).ok());
  int written = 0, freed = 0;
  for (const auto& step : plan.steps()) {
    written += step.written_size();
    freed += step.free_after_size();
  }
  EXPECT_EQ(written, 1);  // __setitem__ returns None
  EXPECT_GT(freed, 0);
  ASSERT_EQ(plan.constants_size(), 1);
  EXPECT_NE(plan.constants(0).slot(), 0u);
  ExpectStreamedPlanIsTheInMemoryOne(g, "inplace");

  // With what a trace cannot give the builder: a guard, a name, an erased node, a constant in slot 0.
  v1::Guard guard;
  guard.mutable_tensor()->set_value(g.InputValues().at(0));
  guard.set_op("torch.Tensor.item");
  guard.mutable_observed()->set_f(0.5);
  g.guards.push_back(guard);
  g.name = "inplace";
  g.nodes.back().erased = true;
  ExpectStreamedPlanIsTheInMemoryOne(g, "inplace_guarded");

  Graph empty;
  ExpectStreamedPlanIsTheInMemoryOne(empty, "empty");
}

TEST(PlanFile, AGraphThatCannotBeExportedWritesNothing) {
  Graph g;
  ASSERT_TRUE(BuildGraphFromTrace(testing::WriteSeedsTrace(TempPath("seeds_bad.ivt")), {}, &g).ok());
  g.nodes[0].schema = nullptr;  // as an op schemas/ does not know
  const std::string path = TempPath("unsupported.plan");
  std::filesystem::remove(path);
  const Status st = ExportPlanFile(g, path);
  EXPECT_EQ(st.kind(), Status::Kind::kUnsupported) << st.ToString();
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(PlanFile, AnUnwritablePathLeavesNothingAndNamesTheFile) {
  Graph g;
  ASSERT_TRUE(BuildGraphFromTrace(testing::WriteSeedsTrace(TempPath("seeds_unwritable.ivt")), {}, &g).ok());
  const std::string dir = TempPath("plan_dir");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);

  const std::string missing = dir + "/no/such/dir/p.plan";
  Status st = ExportPlanFile(g, missing);
  EXPECT_EQ(st.kind(), Status::Kind::kIOError) << st.ToString();
  EXPECT_NE(st.message().find(missing), std::string::npos) << st.message();

  // A directory where the file should go: the rename fails, the temporary file goes away.
  const std::string taken = dir + "/taken.plan";
  std::filesystem::create_directories(taken + "/inside");
  st = ExportPlanFile(g, taken);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find(taken), std::string::npos) << st.message();
  EXPECT_TRUE(std::filesystem::is_directory(taken + "/inside"));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()), 1);
}

// ---------------------------------------------------------------------------------------------
// Retargeting (PlanOptions::target, `export --to plan --framework X`).

TEST(PlanExporter, ARetargetedPlanKeepsItsStepsAndRecordsTheTarget) {
  Graph g;
  ASSERT_TRUE(BuildGraphFromTrace(testing::WriteSeedsTrace(TempPath("seeds_target.ivt")), {}, &g).ok());
  PlanOptions o;
  o.target = "numpy";
  v1::Plan plan;
  Status st = ExportPlan(g, &plan, o);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(plan.framework(), "torch");
  EXPECT_EQ(plan.target(), "numpy");
  v1::Plan native;
  ASSERT_TRUE(ExportPlan(g, &native).ok());
  EXPECT_EQ(native.target(), "");
  ASSERT_EQ(plan.steps_size(), native.steps_size());
  for (int i = 0; i < plan.steps_size(); ++i) EXPECT_EQ(plan.steps(i).function(), native.steps(i).function());
  // The streamed file says the same.
  const std::string path = TempPath("seeds_target.plan");
  std::filesystem::remove(path);
  st = ExportPlanFile(g, path, o);
  ASSERT_TRUE(st.ok()) << st.ToString();
  v1::Plan got = ReadBack(ReadBytes(path));
  EXPECT_EQ(got.target(), "numpy");
  EXPECT_EQ(got.framework(), "torch");
}

TEST(PlanExporter, RetargetingRefusesEveryOpTheTargetLacksBeforeWritingAnything) {
  Graph g;
  ASSERT_TRUE(BuildGraphFromTrace(WriteInPlaceTrace(TempPath("inplace_target.ivt")), {}, &g).ok());
  PlanOptions o;
  o.target = "jax";
  const std::string path = TempPath("inplace_target.plan");
  std::filesystem::remove(path);
  Status st = ExportPlanFile(g, path, o);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.kind(), Status::Kind::kUnsupported);
  EXPECT_NE(st.message().find("cannot export to a jax plan"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("torch.Tensor.__setitem__"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("has no jax implementation"), std::string::npos) << st.message();
  EXPECT_FALSE(std::filesystem::exists(path));
  // In torch itself the same graph exports.
  EXPECT_TRUE(ExportPlanFile(g, path).ok());
}

TEST(PlanExporter, RetargetingToAFrameworkTheSchemasDoNotDescribeIsRefused) {
  Graph g;
  ASSERT_TRUE(BuildGraphFromTrace(testing::WriteSeedsTrace(TempPath("seeds_tf.ivt")), {}, &g).ok());
  PlanOptions o;
  o.target = "tensorflow";
  v1::Plan plan;
  Status st = ExportPlan(g, &plan, o);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("tensorflow"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace ivytrace
