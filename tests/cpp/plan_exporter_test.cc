#include "core/export/plan_exporter.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/ir/graph_builder.h"
#include "trace_fixture.h"

namespace ivytrace {
namespace {

using testing::Ref;
using testing::TensorArg;

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("ivytrace_test_" + name)).string();
}

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

}  // namespace
}  // namespace ivytrace
