// ONNX export: graphs built by hand with the Graph API, exported, and checked op by op.
#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "core/export/onnx/onnx_exporter.h"
#include "core/export/onnx/lowering_table.h"
#include "core/ir/graph.h"
#include "core/schema/schema_registry.h"

namespace ivytrace {
namespace {

// --- building graphs -------------------------------------------------------------------------------

v1::Arg I(int64_t v) { v1::Arg a; a.set_i(v); return a; }
v1::Arg F(double v) { v1::Arg a; a.set_f(v); return a; }
v1::Arg B(bool v) { v1::Arg a; a.set_b(v); return a; }
v1::Arg S(const std::string& v) { v1::Arg a; a.set_s(v); return a; }
v1::Arg None() { v1::Arg a; a.set_none(true); return a; }
v1::Arg Ellipsis() { v1::Arg a; a.set_ellipsis(true); return a; }
v1::Arg Tuple(std::initializer_list<v1::Arg> items) {
  v1::Arg a;
  for (const auto& i : items) *a.mutable_tuple()->add_items() = i;
  return a;
}
v1::Arg List(std::initializer_list<v1::Arg> items) {
  v1::Arg a;
  for (const auto& i : items) *a.mutable_list()->add_items() = i;
  return a;
}
v1::Arg Slice(v1::Arg start, v1::Arg stop, v1::Arg step) {
  v1::Arg a;
  *a.mutable_slice()->mutable_start() = start;
  *a.mutable_slice()->mutable_stop() = stop;
  *a.mutable_slice()->mutable_step() = step;
  return a;
}

using Shape = std::vector<int64_t>;
using KwArgs = std::vector<std::pair<std::string, v1::Arg>>;

class Builder {
 public:
  Graph g;

  v1::Arg T(ValueId v) const {
    v1::Arg a;
    a.mutable_tensor()->set_value(v);
    a.mutable_tensor()->set_dtype(g.values[v].dtype);
    for (int64_t d : g.values[v].shape) a.mutable_tensor()->add_shape(d);
    return a;
  }

  ValueId Input(const std::string& name, const Shape& shape, v1::DType dtype = v1::FLOAT32) {
    Value v;
    v.kind = v1::INPUT;
    v.dtype = dtype;
    v.shape = shape;
    v.name = name;
    ValueId id = g.AddValue(v);
    v1::GraphInput in;
    in.set_name(name);
    *in.mutable_value() = T(id);
    g.inputs.push_back(in);
    return id;
  }

  // A float32 constant filled with 0.1, 0.2, ... (or `data` when given).
  ValueId Param(const std::string& name, const Shape& shape, std::vector<float> data = {}) {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    if (data.empty()) {
      for (size_t i = 0; i < n; ++i) data.push_back(0.1f * static_cast<float>(i % 7 + 1));
    }
    v1::Tensor t;
    t.set_dtype(v1::FLOAT32);
    for (int64_t d : shape) t.add_shape(d);
    t.set_data(std::string(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float)));
    t.set_name(name);
    t.set_role(name.empty() ? v1::CONSTANT : v1::PARAMETER);
    return g.AddConstant(t);
  }

  // Records `op(*args, **kwargs)` returning one tensor of `dtype`/`shape` at model.py:`line`.
  ValueId Call(const std::string& op, std::vector<v1::Arg> args, const Shape& shape, KwArgs kwargs = {},
               int line = 1, v1::DType dtype = v1::FLOAT32) {
    Value v;
    v.kind = v1::NODE_OUTPUT;
    v.dtype = dtype;
    v.shape = shape;
    v.producer = static_cast<int32_t>(g.nodes.size());
    ValueId out = g.AddValue(v);
    Node n;
    n.op = op;
    n.schema = SchemaRegistry::Default().Find(op);
    n.args = std::move(args);
    for (auto& [k, a] : kwargs) {
      v1::KwArg kw;
      kw.set_name(k);
      *kw.mutable_value() = a;
      n.kwargs.push_back(kw);
    }
    n.result = T(out);
    n.loc.set_file("model.py");
    n.loc.set_line(line);
    Graph::IndexNode(&n);
    g.nodes.push_back(std::move(n));
    return out;
  }

  void Output(ValueId v) { g.outputs = T(v); }
  void Outputs(std::initializer_list<ValueId> vs) {
    g.outputs.Clear();
    for (ValueId v : vs) *g.outputs.mutable_tuple()->add_items() = T(v);
  }
};

// --- inspecting models -----------------------------------------------------------------------------

std::vector<std::string> OpTypes(const onnx::ModelProto& m) {
  std::vector<std::string> out;
  for (const auto& n : m.graph().node()) out.push_back(n.op_type());
  return out;
}

const onnx::NodeProto* FindNode(const onnx::ModelProto& m, const std::string& op_type) {
  for (const auto& n : m.graph().node()) {
    if (n.op_type() == op_type) return &n;
  }
  return nullptr;
}

const onnx::AttributeProto* Attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

std::vector<int64_t> Ints(const onnx::NodeProto& n, const std::string& name) {
  const auto* a = Attr(n, name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
}

const onnx::TensorProto* Initializer(const onnx::ModelProto& m, const std::string& name) {
  for (const auto& t : m.graph().initializer()) {
    if (t.name() == name) return &t;
  }
  return nullptr;
}

std::vector<int64_t> Int64Data(const onnx::TensorProto& t) {
  std::vector<int64_t> v(t.raw_data().size() / 8);
  std::memcpy(v.data(), t.raw_data().data(), v.size() * 8);
  return v;
}

std::vector<std::string> InitializerNames(const onnx::ModelProto& m) {
  std::vector<std::string> out;
  for (const auto& t : m.graph().initializer()) out.push_back(t.name());
  return out;
}

onnx::ModelProto ExportOk(const Graph& g, OnnxExportOptions opts = {}) {
  onnx::ModelProto m;
  Status st = ExportOnnx(g, opts, &m);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return m;
}

using Strings = std::vector<std::string>;

// --- tests -----------------------------------------------------------------------------------------

TEST(OnnxExport, SmallCnnLowersToStandardOps) {
  Builder b;
  ValueId x = b.Input("x", {2, 3, 8, 8});
  ValueId w = b.Param("conv1.weight", {4, 3, 3, 3});
  ValueId cb = b.Param("conv1.bias", {4});
  ValueId c = b.Call("torch.nn.functional.conv2d", {b.T(x), b.T(w), b.T(cb), Tuple({I(2), I(2)}), I(1)},
                     {2, 4, 4, 4});
  ValueId rm = b.Param("bn1.running_mean", {4}), rv = b.Param("bn1.running_var", {4});
  ValueId bw = b.Param("bn1.weight", {4}), bb = b.Param("bn1.bias", {4});
  ValueId bn = b.Call("torch.nn.functional.batch_norm", {b.T(c), b.T(rm), b.T(rv), b.T(bw), b.T(bb), B(false),
                                                         F(0.1), F(1e-5)},
                      {2, 4, 4, 4});
  ValueId r = b.Call("torch.Tensor.relu_", {b.T(bn)}, {2, 4, 4, 4});
  ValueId p = b.Call("torch.nn.functional.max_pool2d", {b.T(r), I(2)}, {2, 4, 2, 2});
  ValueId a = b.Call("torch.nn.functional.adaptive_avg_pool2d", {b.T(p), Tuple({I(1), I(1)})}, {2, 4, 1, 1});
  ValueId f = b.Call("torch.flatten", {b.T(a), I(1)}, {2, 4});
  ValueId fw = b.Param("fc.weight", {5, 4}), fb = b.Param("fc.bias", {5});
  ValueId y = b.Call("torch.nn.functional.linear", {b.T(f), b.T(fw), b.T(fb)}, {2, 5});
  b.Output(y);

  onnx::ModelProto m = ExportOk(b.g);
  EXPECT_EQ(m.ir_version(), 8);
  ASSERT_EQ(m.opset_import_size(), 1);
  EXPECT_EQ(m.opset_import(0).version(), 17);
  EXPECT_EQ(m.producer_name(), "ivytrace");
  EXPECT_EQ(OpTypes(m), (Strings{"Conv", "BatchNormalization", "Relu", "MaxPool", "GlobalAveragePool", "Flatten",
                                 "Gemm"}));

  const onnx::NodeProto* conv = FindNode(m, "Conv");
  EXPECT_EQ(Ints(*conv, "strides"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(Ints(*conv, "pads"), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(Ints(*conv, "dilations"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(Ints(*conv, "kernel_shape"), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(Attr(*conv, "group")->i(), 1);
  EXPECT_EQ(conv->input(0), "x");
  EXPECT_EQ(conv->input(1), "conv1.weight");
  EXPECT_EQ(conv->input(2), "conv1.bias");
  EXPECT_NE(conv->doc_string().find("model.py:1"), std::string::npos);

  const onnx::NodeProto* pool = FindNode(m, "MaxPool");
  EXPECT_EQ(Ints(*pool, "kernel_shape"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(Ints(*pool, "strides"), (std::vector<int64_t>{2, 2}));  // stride None = kernel
  EXPECT_EQ(Attr(*FindNode(m, "Flatten"), "axis")->i(), 1);
  const onnx::NodeProto* gemm = FindNode(m, "Gemm");
  EXPECT_EQ(Attr(*gemm, "transB")->i(), 1);
  EXPECT_EQ(gemm->output(0), "output");
  EXPECT_NEAR(Attr(*FindNode(m, "BatchNormalization"), "epsilon")->f(), 1e-5, 1e-9);

  EXPECT_EQ(InitializerNames(m), (Strings{"conv1.weight", "conv1.bias", "bn1.weight", "bn1.bias",
                                          "bn1.running_mean", "bn1.running_var", "fc.weight", "fc.bias"}));
  ASSERT_EQ(m.graph().input_size(), 1);
  const auto& in = m.graph().input(0);
  EXPECT_EQ(in.name(), "x");
  EXPECT_EQ(in.type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
  ASSERT_EQ(in.type().tensor_type().shape().dim_size(), 4);
  EXPECT_EQ(in.type().tensor_type().shape().dim(0).dim_param(), "batch");
  EXPECT_EQ(in.type().tensor_type().shape().dim(1).dim_value(), 3);
  ASSERT_EQ(m.graph().output_size(), 1);
  EXPECT_EQ(m.graph().output(0).name(), "output");
  EXPECT_EQ(m.graph().output(0).type().tensor_type().shape().dim(0).dim_param(), "batch");
  EXPECT_EQ(m.graph().output(0).type().tensor_type().shape().dim(1).dim_value(), 5);
}

TEST(OnnxExport, StaticBatchWhenNotDynamic) {
  Builder b;
  ValueId x = b.Input("x", {2, 3});
  b.Output(b.Call("torch.relu", {b.T(x)}, {2, 3}));
  OnnxExportOptions opts;
  opts.dynamic_batch = false;
  onnx::ModelProto m = ExportOk(b.g, opts);
  EXPECT_EQ(m.graph().input(0).type().tensor_type().shape().dim(0).dim_value(), 2);
  EXPECT_EQ(m.graph().output(0).type().tensor_type().shape().dim(0).dim_value(), 2);
}

TEST(OnnxExport, ConvPaddingSameAndUnbatchedInput) {
  Builder b;
  ValueId x = b.Input("x", {3, 9, 9});  // unbatched CHW
  ValueId w = b.Param("w", {2, 3, 4, 4});
  ValueId c = b.Call("torch.conv2d", {b.T(x), b.T(w)}, {2, 9, 9}, {{"padding", S("same")}, {"dilation", I(1)}});
  b.Output(c);
  onnx::ModelProto m = ExportOk(b.g);
  EXPECT_EQ(OpTypes(m), (Strings{"Unsqueeze", "Conv", "Squeeze"}));
  EXPECT_EQ(Ints(*FindNode(m, "Conv"), "pads"), (std::vector<int64_t>{1, 1, 2, 2}));  // odd pixel at the end
}

TEST(OnnxExport, LinearOn3DInputUsesMatMul) {
  Builder b;
  ValueId x = b.Input("x", {2, 7, 4});
  ValueId w = b.Param("proj.weight", {6, 4});
  ValueId bias = b.Param("proj.bias", {6});
  b.Output(b.Call("torch.nn.functional.linear", {b.T(x), b.T(w), b.T(bias)}, {2, 7, 6}));
  onnx::ModelProto m = ExportOk(b.g);
  // MatMul takes the weight transposed: the constant weight is stored so, and no Transpose runs.
  EXPECT_EQ(OpTypes(m), (Strings{"MatMul", "Add"}));
  const onnx::TensorProto* wt = Initializer(m, FindNode(m, "MatMul")->input(1));
  ASSERT_NE(wt, nullptr);
  EXPECT_EQ(wt->name(), "proj.weight.T");
  EXPECT_EQ(std::vector<int64_t>(wt->dims().begin(), wt->dims().end()), (std::vector<int64_t>{4, 6}));
}

TEST(OnnxExport, BinaryOpsWithPythonScalars) {
  Builder b;
  ValueId x = b.Input("x", {4});
  ValueId i = b.Input("i", {4}, v1::INT64);
  ValueId a = b.Call("torch.Tensor.__mul__", {b.T(x), F(2.0)}, {4});
  ValueId r = b.Call("torch.Tensor.__rsub__", {b.T(a), I(1)}, {4});          // 1 - a
  ValueId s = b.Call("torch.add", {b.T(r), b.T(x)}, {4}, {{"alpha", I(3)}}); // r + 3*x
  ValueId p = b.Call("torch.Tensor.__add__", {b.T(i), F(0.5)}, {4});         // int64 + float -> float32
  ValueId q = b.Call("torch.Tensor.__mul__", {b.T(i), I(3)}, {4}, {}, 1, v1::INT64);
  ValueId d = b.Call("torch.div", {b.T(q), I(2)}, {4}, {{"rounding_mode", S("floor")}}, 1, v1::INT64);
  b.Outputs({s, p, d});
  onnx::ModelProto m = ExportOk(b.g);
  EXPECT_EQ(OpTypes(m), (Strings{"Mul", "Sub", "Mul", "Add", "Cast", "Add", "Mul", "Mod", "Sub", "Div"}));
  const onnx::NodeProto* sub = FindNode(m, "Sub");
  ASSERT_NE(Initializer(m, sub->input(0)), nullptr);  // the Python 1 as a float32 scalar
  EXPECT_EQ(Initializer(m, sub->input(0))->data_type(), onnx::TensorProto::FLOAT);
  EXPECT_EQ(Initializer(m, sub->input(0))->dims_size(), 0);
  EXPECT_EQ(Attr(*FindNode(m, "Cast"), "to")->i(), onnx::TensorProto::FLOAT);
  EXPECT_EQ(m.graph().output(0).name(), "output.0");
  EXPECT_EQ(m.graph().output(2).name(), "output.2");
  EXPECT_EQ(m.graph().output(2).type().tensor_type().elem_type(), onnx::TensorProto::INT64);
}

TEST(OnnxExport, InPlaceOpLowersLikeOutOfPlace) {
  Builder b;
  ValueId x = b.Input("x", {3});
  ValueId y = b.Input("y", {3});
  ValueId z = b.Call("torch.Tensor.add_", {b.T(x), b.T(y)}, {3});
  b.g.nodes.back().mutated.push_back(b.T(z).tensor());
  b.Output(b.Call("torch.Tensor.mul_", {b.T(z), F(2.0)}, {3}));
  onnx::ModelProto m = ExportOk(b.g);
  EXPECT_EQ(OpTypes(m), (Strings{"Add", "Mul"}));
}

TEST(OnnxExport, GeluHasNoGeluOpInOpset17) {
  Builder b;
  ValueId x = b.Input("x", {2, 3});
  ValueId g1 = b.Call("torch.nn.functional.gelu", {b.T(x)}, {2, 3});
  ValueId g2 = b.Call("torch.nn.functional.gelu", {b.T(g1)}, {2, 3}, {{"approximate", S("tanh")}});
  b.Output(g2);
  onnx::ModelProto m = ExportOk(b.g);
  auto ops = OpTypes(m);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "Erf"), 1);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "Tanh"), 1);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "Gelu"), 0);
}

TEST(OnnxExport, SoftmaxImplicitDimAndLogSoftmax) {
  Builder b;
  ValueId x = b.Input("x", {2, 3, 4});
  ValueId s = b.Call("torch.nn.functional.softmax", {b.T(x)}, {2, 3, 4});             // rank 3 -> dim 0
  ValueId l = b.Call("torch.Tensor.log_softmax", {b.T(s), I(-1)}, {2, 3, 4});
  b.Output(l);
  onnx::ModelProto m = ExportOk(b.g);
  EXPECT_EQ(OpTypes(m), (Strings{"Softmax", "LogSoftmax"}));
  EXPECT_EQ(Attr(*FindNode(m, "Softmax"), "axis")->i(), 0);
  EXPECT_EQ(Attr(*FindNode(m, "LogSoftmax"), "axis")->i(), 2);
}

TEST(OnnxExport, ReshapeTakesLiteralsAsWrittenAndSymbolicSizesFromTheInput) {
  // view(2, -1) with a literal 2 is the program's own size: a recorded batch of 2 must not turn it
  // into "copy dim 0" (that was wrong on a (4, 3, 2) input, where torch gives (2, 12)). A size the
  // program read from a shape is an ivytrace.sym value and is computed from the input.
  Builder b;
  ValueId x = b.Input("x", {2, 3, 4});
  ValueId v = b.Call("torch.Tensor.view", {b.T(x), I(2), I(-1)}, {2, 12});
  ValueId n = b.Call("ivytrace.sym.size", {b.T(x), I(0)}, {}, {}, 2, v1::SYM_INT);
  ValueId t = b.Call("torch.Tensor.reshape", {b.T(x), Tuple({I(-1), b.T(n)})}, {12, 2}, {}, 3);
  ValueId f = b.Call("torch.flatten", {b.T(x)}, {24});
  // x.view(x.shape[0], -1): the size is x's own dim 0 at position 0, which ONNX's 0 copies.
  ValueId c = b.Call("torch.Tensor.reshape", {b.T(x), Tuple({b.T(n), I(-1)})}, {2, 12}, {}, 3);
  b.Outputs({v, t, f, c});
  onnx::ModelProto m = ExportOk(b.g);
  std::vector<const onnx::NodeProto*> reshapes;
  for (const auto& node : m.graph().node()) {
    if (node.op_type() == "Reshape") reshapes.push_back(&node);
  }
  ASSERT_EQ(reshapes.size(), 4u);
  EXPECT_EQ(Int64Data(*Initializer(m, reshapes[0]->input(1))), (std::vector<int64_t>{2, -1}));
  EXPECT_EQ(Initializer(m, reshapes[1]->input(1)), nullptr) << "the symbolic size is computed, not a constant";
  EXPECT_EQ(Attr(*reshapes[1], "allowzero")->i(), 1) << "a computed 0 is an empty dim, not a copy";
  EXPECT_EQ(Int64Data(*Initializer(m, reshapes[2]->input(1))), (std::vector<int64_t>{-1}));
  EXPECT_EQ(Int64Data(*Initializer(m, reshapes[3]->input(1))), (std::vector<int64_t>{0, -1}));
  EXPECT_EQ(Attr(*reshapes[3], "allowzero"), nullptr) << "0 copies x's dim 0";
  EXPECT_NE(FindNode(m, "Shape"), nullptr);
  EXPECT_NE(FindNode(m, "Gather"), nullptr);
  EXPECT_EQ(m.graph().input(0).type().tensor_type().shape().dim(0).dim_param(), "batch");
}

TEST(OnnxExport, TransposePermuteConcatReduce) {
  Builder b;
  ValueId x = b.Input("x", {2, 3, 4});
  ValueId t = b.Call("torch.Tensor.transpose", {b.T(x), I(1), I(-1)}, {2, 4, 3});
  ValueId p = b.Call("torch.Tensor.permute", {b.T(t), I(0), I(2), I(1)}, {2, 3, 4});
  ValueId c = b.Call("torch.cat", {List({b.T(x), b.T(p)})}, {2, 6, 4}, {{"dim", I(1)}});
  ValueId s = b.Call("torch.sum", {b.T(c), I(-1)}, {2, 6, 1}, {{"keepdim", B(true)}});
  ValueId mn = b.Call("torch.Tensor.mean", {b.T(c), Tuple({I(1), I(2)})}, {2});
  b.Outputs({s, mn});
  onnx::ModelProto m = ExportOk(b.g);
  EXPECT_EQ(OpTypes(m), (Strings{"Transpose", "Transpose", "Concat", "ReduceSum", "ReduceMean"}));
  EXPECT_EQ(Ints(m.graph().node(0), "perm"), (std::vector<int64_t>{0, 2, 1}));
  EXPECT_EQ(Attr(*FindNode(m, "Concat"), "axis")->i(), 1);
  const onnx::NodeProto* rs = FindNode(m, "ReduceSum");
  EXPECT_EQ(Int64Data(*Initializer(m, rs->input(1))), (std::vector<int64_t>{2}));
  EXPECT_EQ(Attr(*rs, "keepdims")->i(), 1);
  const onnx::NodeProto* rm = FindNode(m, "ReduceMean");
  EXPECT_EQ(rm->input_size(), 1);
  EXPECT_EQ(Ints(*rm, "axes"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(Attr(*rm, "keepdims")->i(), 0);
}

TEST(OnnxExport, BasicIndexing) {
  Builder b;
  ValueId x = b.Input("x", {2, 3, 4, 5});
  // x[:, 1, None, ..., ::2]
  ValueId y = b.Call("torch.Tensor.__getitem__",
                     {b.T(x), Tuple({Slice(None(), None(), None()), I(1), None(), Ellipsis(),
                                     Slice(None(), None(), I(2))})},
                     {2, 1, 4, 3});
  ValueId z = b.Call("torch.Tensor.__getitem__", {b.T(y), I(-1)}, {1, 4, 3});
  b.Outputs({y, z});
  onnx::ModelProto m = ExportOk(b.g);
  EXPECT_EQ(OpTypes(m), (Strings{"Slice", "Squeeze", "Unsqueeze", "Slice", "Squeeze"}));
  const onnx::NodeProto& sl = m.graph().node(0);
  EXPECT_EQ(Int64Data(*Initializer(m, sl.input(1))), (std::vector<int64_t>{1, 0}));  // starts
  EXPECT_EQ(Int64Data(*Initializer(m, sl.input(3))), (std::vector<int64_t>{1, 3}));  // axes
  EXPECT_EQ(Int64Data(*Initializer(m, sl.input(4))), (std::vector<int64_t>{1, 2}));  // steps
  EXPECT_EQ(Int64Data(*Initializer(m, m.graph().node(1).input(1))), (std::vector<int64_t>{1}));
  EXPECT_EQ(Int64Data(*Initializer(m, m.graph().node(2).input(1))), (std::vector<int64_t>{1}));
}

TEST(OnnxExport, FactoriesBecomeConstants) {
  Builder b;
  ValueId x = b.Input("x", {2, 2});
  ValueId t = b.Call("torch.tensor", {List({List({F(1), F(2)}), List({F(3), F(4)})})}, {2, 2});
  ValueId z = b.Call("torch.ones", {I(2), I(2)}, {2, 2});
  ValueId s = b.Call("torch.add", {b.T(x), b.T(t)}, {2, 2});
  b.Output(b.Call("torch.mul", {b.T(s), b.T(z)}, {2, 2}));
  onnx::ModelProto m = ExportOk(b.g);
  EXPECT_EQ(OpTypes(m), (Strings{"Constant", "ConstantOfShape", "Add", "Mul"}));
  const auto& value = Attr(m.graph().node(0), "value")->t();
  EXPECT_EQ(value.data_type(), onnx::TensorProto::FLOAT);
  EXPECT_EQ(value.dims_size(), 2);
}

TEST(OnnxExport, EvalModeDropoutIsIdentity) {
  Builder b;
  ValueId x = b.Input("x", {2, 3});
  b.Output(b.Call("torch.nn.functional.dropout", {b.T(x), F(0.5), B(false)}, {2, 3}));
  onnx::ModelProto m = ExportOk(b.g);
  EXPECT_EQ(OpTypes(m), (Strings{"Identity"}));
}

TEST(OnnxExport, OutputsThatAreInputsOrConstantsGetIdentity) {
  Builder b;
  ValueId x = b.Input("x", {3});
  ValueId c = b.Param("scale", {3});
  ValueId r = b.Call("torch.relu", {b.T(x)}, {3});
  b.Outputs({x, r, c, r});
  onnx::ModelProto m = ExportOk(b.g);
  EXPECT_EQ(OpTypes(m), (Strings{"Relu", "Identity", "Identity", "Identity"}));
  ASSERT_EQ(m.graph().output_size(), 4);
  EXPECT_EQ(m.graph().node(0).output(0), "output.1");
  EXPECT_EQ(InitializerNames(m), (Strings{"scale"}));
}

TEST(OnnxExport, UnusedConstantsAndDeadNodesAreLeftOut) {
  Builder b;
  ValueId x = b.Input("x", {3});
  b.Param("unused.weight", {3});
  ValueId dead = b.Call("torch.median", {b.T(x)}, {});  // no lowering, but dead
  (void)dead;
  b.Output(b.Call("torch.exp", {b.T(x)}, {3}));
  onnx::ModelProto m = ExportOk(b.g);
  EXPECT_EQ(OpTypes(m), (Strings{"Exp"}));
  EXPECT_TRUE(InitializerNames(m).empty());
}

TEST(OnnxExport, DuplicateParameterNamesAreMadeUnique) {
  Builder b;
  ValueId x = b.Input("x", {3});
  ValueId c1 = b.Param("w", {3});
  ValueId c2 = b.Param("w", {3});
  ValueId c3 = b.Param("", {3});
  ValueId s = b.Call("torch.add", {b.T(x), b.T(c1)}, {3});
  s = b.Call("torch.add", {b.T(s), b.T(c2)}, {3});
  b.Output(b.Call("torch.add", {b.T(s), b.T(c3)}, {3}));
  onnx::ModelProto m = ExportOk(b.g);
  EXPECT_EQ(InitializerNames(m), (Strings{"w", "w_1", "const_" + std::to_string(c3)}));
}

// Value names come from one table of every name in the graph (inputs, initializers, results);
// node names are made unique per ivytrace node (see LoweringContext).
TEST(OnnxExport, GeneratedNamesStepAroundTakenOnes) {
  Builder b;
  ValueId x = b.Input("x", {3});
  ValueId p = b.Param("v2", {3});                             // an initializer named like a result
  ValueId s = b.Call("torch.add", {b.T(x), b.T(p)}, {3});     // %2: "v2" is taken
  ValueId t = b.Call("torch.mul", {b.T(s), b.T(s)}, {3});
  b.Output(b.Call("torch.exp", {b.T(t)}, {3}));
  ASSERT_EQ(s, 2u);
  onnx::ModelProto m = ExportOk(b.g);
  ASSERT_EQ(m.graph().node_size(), 3);
  EXPECT_EQ(m.graph().node(0).output(0), "v2_1");
  EXPECT_EQ(m.graph().node(1).input(0), "v2_1");
  EXPECT_EQ(m.graph().node(1).output(0), "v" + std::to_string(t));
  EXPECT_EQ(m.graph().node(2).output(0), "output");
  Strings names;
  for (const auto& n : m.graph().node()) names.push_back(n.name());
  EXPECT_EQ(names, (Strings{"n0.Add", "n1.Mul", "n2.Exp"}));
}

// The other way round: a result took "v1" first, and a parameter named "v1" comes later.
TEST(OnnxExport, InitializerNamesStepAroundResultNames) {
  Builder b;
  ValueId x = b.Input("x", {3});
  ValueId s = b.Call("torch.add", {b.T(x), b.T(x)}, {3});
  ValueId p = b.Param("v" + std::to_string(s), {3});
  ValueId t = b.Call("torch.mul", {b.T(s), b.T(p)}, {3});
  b.Output(b.Call("torch.exp", {b.T(t)}, {3}));
  onnx::ModelProto m = ExportOk(b.g);
  ASSERT_EQ(m.graph().node_size(), 3);
  const std::string plain = "v" + std::to_string(s);
  EXPECT_EQ(m.graph().node(0).output(0), plain);
  EXPECT_EQ(InitializerNames(m), (Strings{plain + "_1"}));
  EXPECT_EQ(m.graph().node(1).input(0), plain);
  EXPECT_EQ(m.graph().node(1).input(1), plain + "_1");
}

// Inference runs on the model itself and leaves nothing behind; above max_inferred_nodes it is
// skipped and the outputs take the recorded shapes with dim 0 as the batch, which for this graph
// is what inference derives.
TEST(OnnxExport, OutputShapesWithAndWithoutInference) {
  Builder b;
  ValueId x = b.Input("x", {4, 3});
  ValueId w = b.Param("w", {5, 3});
  ValueId y = b.Call("torch.nn.functional.linear", {b.T(x), b.T(w)}, {4, 5});
  b.Output(b.Call("torch.relu", {b.T(y)}, {4, 5}));
  onnx::ModelProto inferred = ExportOk(b.g);
  OnnxExportOptions skip;
  skip.max_inferred_nodes = 1;
  onnx::ModelProto recorded = ExportOk(b.g, skip);
  EXPECT_EQ(inferred.graph().value_info_size(), 0);
  EXPECT_EQ(recorded.graph().value_info_size(), 0);
  const auto& shape = inferred.graph().output(0).type().tensor_type().shape();
  ASSERT_EQ(shape.dim_size(), 2);
  EXPECT_EQ(shape.dim(0).dim_param(), "batch");
  EXPECT_EQ(shape.dim(1).dim_value(), 5);
  // Without inference a model with dynamic dims declares its outputs' dims unknown: a recorded
  // size could be wrong for them (a dim computed from the batch), and a name a guess.
  const auto& unknown = recorded.graph().output(0).type().tensor_type().shape();
  ASSERT_EQ(unknown.dim_size(), 2);
  for (const auto& d : unknown.dim()) EXPECT_TRUE(!d.has_dim_value() && !d.has_dim_param()) << d.DebugString();
  OnnxExportOptions fixed;
  fixed.dynamic_batch = false;
  OnnxExportOptions fixed_skip = fixed;
  fixed_skip.max_inferred_nodes = 1;
  EXPECT_EQ(ExportOk(b.g, fixed).SerializeAsString(), ExportOk(b.g, fixed_skip).SerializeAsString());
}

TEST(OnnxExport, UnsupportedOpsAreAllListedWithTheirLines) {
  Builder b;
  ValueId x = b.Input("x", {4, 3});
  ValueId idx = b.Input("idx", {2}, v1::INT64);
  ValueId c1 = b.Call("torch.linspace", {b.T(x), I(0)}, {4, 3}, {}, 42);
  ValueId c2 = b.Call("torch.linspace", {b.T(c1), I(1)}, {4, 3}, {}, 43);
  ValueId c3 = b.Call("torch.linspace", {b.T(c2), I(1)}, {4, 3}, {}, 43);
  ValueId g = b.Call("torch.lu_unpack", {b.T(c3), b.T(idx)}, {2, 3}, {}, 50);
  ValueId ok = b.Call("torch.relu", {b.T(g)}, {2, 3}, {}, 51);
  ValueId d = b.Call("torch.nn.functional.dropout", {b.T(ok)}, {2, 3}, {}, 52);
  b.Output(d);
  onnx::ModelProto m;
  Status st = ExportOnnx(b.g, {}, &m);
  ASSERT_EQ(st.kind(), Status::Kind::kUnsupported) << st.ToString();
  const std::string& msg = st.message();
  EXPECT_NE(msg.find("cannot export to ONNX: 5 calls of 3 ops cannot be lowered:"), std::string::npos) << msg;
  // (torch.linspace lowers when called as (start, end, steps): these calls pass a tensor.)
  EXPECT_NE(msg.find("torch.linspace  x3  (linspace other than (start, end, steps) positionally)  at model.py:42, model.py:43"),
            std::string::npos) << msg;
  EXPECT_NE(msg.find("torch.lu_unpack  x1  (no canonical op in schemas/ (an opaque framework call), so no ONNX lowering)  at model.py:50"),
            std::string::npos) << msg;
  EXPECT_NE(msg.find("torch.nn.functional.dropout  x1  (dropout in training mode"), std::string::npos) << msg;
  EXPECT_NE(msg.find("at model.py:52"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("relu"), std::string::npos) << msg;
}

TEST(OnnxExport, TrainingBatchNormIsUnsupportedWithAReason) {
  Builder b;
  ValueId x = b.Input("x", {2, 4, 3, 3});
  ValueId rm = b.Param("bn.running_mean", {4}), rv = b.Param("bn.running_var", {4});
  b.Output(b.Call("torch.nn.functional.batch_norm", {b.T(x), b.T(rm), b.T(rv)}, {2, 4, 3, 3},
                  {{"training", B(true)}}, 7));
  onnx::ModelProto m;
  Status st = ExportOnnx(b.g, {}, &m);
  ASSERT_EQ(st.kind(), Status::Kind::kUnsupported);
  EXPECT_NE(st.message().find("model.eval()"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("model.py:7"), std::string::npos) << st.message();
}

TEST(OnnxExport, BatchNormWithoutAffineGetsFilledScaleAndBias) {
  Builder b;
  ValueId x = b.Input("x", {2, 4});
  ValueId rm = b.Param("bn.running_mean", {4}), rv = b.Param("bn.running_var", {4});
  b.Output(b.Call("torch.nn.functional.batch_norm", {b.T(x), b.T(rm), b.T(rv)}, {2, 4}));
  onnx::ModelProto m = ExportOk(b.g);
  const onnx::NodeProto* bn = FindNode(m, "BatchNormalization");
  ASSERT_NE(bn, nullptr);
  EXPECT_EQ(Initializer(m, bn->input(1))->dims(0), 4);
}

TEST(OnnxExport, LayerNormBecomesLayerNormalizationOverTheLastAxes) {
  Builder b;
  ValueId x = b.Input("x", {2, 5, 4});
  ValueId w = b.Param("ln.weight", {4}), bias = b.Param("ln.bias", {4});
  ValueId y = b.Call("torch.nn.functional.layer_norm", {b.T(x), Tuple({I(4)})}, {2, 5, 4},
                     {{"weight", b.T(w)}, {"bias", b.T(bias)}, {"eps", F(1e-6)}});
  // Without weight and bias ONNX still needs a Scale: ones of the normalized size.
  b.Output(b.Call("torch.nn.functional.layer_norm", {b.T(y), List({I(4)})}, {2, 5, 4}));
  onnx::ModelProto m = ExportOk(b.g);
  std::vector<const onnx::NodeProto*> lns;
  for (const auto& n : m.graph().node()) {
    if (n.op_type() == "LayerNormalization") lns.push_back(&n);
  }
  ASSERT_EQ(lns.size(), 2u);
  EXPECT_EQ(Attr(*lns[0], "axis")->i(), -1);
  EXPECT_FLOAT_EQ(Attr(*lns[0], "epsilon")->f(), 1e-6f);
  EXPECT_EQ(lns[0]->input_size(), 3);
  ASSERT_EQ(lns[1]->input_size(), 2);
  EXPECT_EQ(Initializer(m, lns[1]->input(1))->dims(0), 4);
}

TEST(OnnxExport, MaskedFillBecomesWhereInPlaceOrNot) {
  Builder b;
  ValueId x = b.Input("x", {2, 3});
  ValueId mask = b.Input("mask", {2, 3}, v1::BOOL);
  b.Output(b.Call("torch.Tensor.masked_fill", {b.T(x), b.T(mask), F(-1e9)}, {2, 3}));
  onnx::ModelProto m = ExportOk(b.g);
  const onnx::NodeProto* where = FindNode(m, "Where");
  ASSERT_NE(where, nullptr);
  EXPECT_EQ(where->input(0), "mask");
  EXPECT_EQ(where->input(2), "x");
  const onnx::TensorProto* fill = Initializer(m, where->input(1));
  ASSERT_NE(fill, nullptr);
  EXPECT_EQ(fill->dims_size(), 0);  // a scalar, broadcast by Where

  Builder c;
  ValueId cx = c.Input("x", {2, 3}), cm = c.Input("mask", {2, 3}, v1::BOOL);
  ValueId filled = c.Call("torch.Tensor.masked_fill_", {c.T(cx), c.T(cm), F(0)}, {2, 3}, {}, 9);
  c.g.nodes.back().mutated.push_back(c.T(filled).tensor());
  Graph::IndexNode(&c.g.nodes.back());
  c.Output(filled);
  // In place: the write's new version is the Where's result (the graph is SSA).
  onnx::ModelProto in_place = ExportOk(c.g);
  EXPECT_NE(FindNode(in_place, "Where"), nullptr);
}

TEST(OnnxExport, RejectsOpsetsTheCheckerDoesNotKnow) {
  Builder b;
  ValueId x = b.Input("x", {3});
  b.Output(b.Call("torch.relu", {b.T(x)}, {3}));
  OnnxExportOptions opts;
  opts.opset = 11;
  onnx::ModelProto m;
  EXPECT_EQ(ExportOnnx(b.g, opts, &m).kind(), Status::Kind::kInvalidArgument);
}

TEST(OnnxExport, OutputShapeThatDisagreesWithTheRecordingIsAnError) {
  Builder b;
  ValueId x = b.Input("x", {2, 6, 4});
  b.Output(b.Call("torch.sum", {b.T(x), I(-1)}, {2, 6}, {{"keepdim", B(true)}}));  // really [2, 6, 1]
  onnx::ModelProto m;
  Status st = ExportOnnx(b.g, {}, &m);
  EXPECT_EQ(st.kind(), Status::Kind::kInvalidArgument);
  EXPECT_NE(st.message().find("output 'output' has rank 3"), std::string::npos) << st.message();
}

TEST(OnnxExport, ReadingAnUndefinedValueIsAnError) {
  Builder b;
  ValueId x = b.Input("x", {3});
  Value orphan;
  orphan.kind = v1::NODE_OUTPUT;
  orphan.dtype = v1::FLOAT32;
  orphan.shape = {3};
  ValueId o = b.g.AddValue(orphan);
  b.Output(b.Call("torch.add", {b.T(x), b.T(o)}, {3}));
  onnx::ModelProto m;
  Status st = ExportOnnx(b.g, {}, &m);
  EXPECT_EQ(st.kind(), Status::Kind::kInvalidArgument);
  EXPECT_NE(st.message().find("model.py:1"), std::string::npos) << st.message();
}

TEST(OnnxExport, LoweringTableIsSortedWithOneRowPerCanonicalOp) {
  EXPECT_TRUE(onnx_export::TableIsSorted());
  ASSERT_NE(onnx_export::FindCanonicalLowering("scaled_dot_product_attention"), nullptr);
  EXPECT_EQ(onnx_export::FindCanonicalLowering("no_such_op"), nullptr);
  for (const auto& row : onnx_export::AllCanonicalLowerings()) {
    EXPECT_EQ(onnx_export::FindCanonicalLowering(row.canonical), &row) << row.canonical;
  }
}

TEST(OnnxExport, OnlyInputsWithTheBatchSizeGetASymbolicDimZero) {
  Builder b;
  ValueId x = b.Input("x", {2, 4});
  ValueId w = b.Input("w", {4, 5});
  b.Output(b.Call("torch.matmul", {b.T(x), b.T(w)}, {2, 5}));
  onnx::ModelProto m = ExportOk(b.g);
  ASSERT_EQ(m.graph().input_size(), 2);
  EXPECT_EQ(m.graph().input(0).type().tensor_type().shape().dim(0).dim_param(), "batch");
  EXPECT_EQ(m.graph().input(1).type().tensor_type().shape().dim(0).dim_value(), 4);
  EXPECT_EQ(m.graph().output(0).type().tensor_type().shape().dim(0).dim_param(), "batch");
}

}  // namespace
}  // namespace ivytrace
