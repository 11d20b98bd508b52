#include "core/passes/fold_conv_bn.h"

#include <algorithm>

#include <cmath>
#include <cstring>
#include <string>
#include <string_view>
#include <optional>
#include <unordered_set>
#include <vector>

#include "core/ir/arg.h"
#include "core/passes/recorded_values.h"
#include "core/passes/value_renames.h"
#include "core/schema/binding.h"

namespace ivytrace {
namespace {

// The float32 data of a constant value, or nothing.
// The bytes of float32 constant `v`, in place: a conv's weights are most of a model, and copying
// them (then widening them to double) was a third of exporting ResNet-50, in page faults.
std::optional<std::string_view> ConstantBytes(const Graph& g, ValueId v) {
  const Value& val = g.values[v];
  if (val.kind != v1::CONSTANT_VALUE || val.constant < 0 || val.dtype != v1::FLOAT32) return std::nullopt;
  const v1::Tensor& t = g.constants[val.constant];
  size_t count = 1;
  for (int64_t d : t.shape()) count *= static_cast<size_t>(d);
  if (t.data().size() != count * sizeof(float)) return std::nullopt;
  return std::string_view(t.data());
}

// Element i of float32 bytes (memcpy: the bytes carry no alignment promise).
float FloatAt(std::string_view bytes, size_t i) {
  float f;
  std::memcpy(&f, bytes.data() + i * sizeof(float), sizeof f);
  return f;
}

std::optional<std::vector<float>> ConstantData(const Graph& g, ValueId v) {
  const auto bytes = ConstantBytes(g, v);
  if (!bytes) return std::nullopt;
  std::vector<float> out(bytes->size() / sizeof(float));
  std::memcpy(out.data(), bytes->data(), bytes->size());
  return out;
}

// The data of optional constant parameter `p`: `fill` repeated `n` times when it is None.
std::optional<std::vector<float>> OptionalConstant(const Graph& g, const BoundCall& c, const char* p, size_t n,
                                                   float fill) {
  if (c.IsNone(p)) return std::vector<float>(n, fill);
  const auto v = c.Tensor(p);
  if (!v) return std::nullopt;
  auto data = ConstantData(g, *v);
  if (!data || data->size() != n) return std::nullopt;
  return data;
}

v1::Arg TensorArg(ValueId v, const Value& val) {
  v1::Arg a;
  auto* r = a.mutable_tensor();
  r->set_value(v);
  r->set_dtype(val.dtype);
  for (int64_t d : val.shape) r->add_shape(d);
  return a;
}

// Sets parameter `name` (positional index `pos`) of `n` to `arg`, adding a keyword when absent.
void SetParam(Node* n, size_t pos, const char* name, v1::Arg arg) {
  if (n->args.size() > pos) {
    n->args[pos] = std::move(arg);
    return;
  }
  for (auto& kw : n->kwargs) {
    if (kw.name() == name) {
      *kw.mutable_value() = std::move(arg);
      return;
    }
  }
  v1::KwArg kw;
  kw.set_name(name);
  *kw.mutable_value() = std::move(arg);
  n->kwargs.push_back(std::move(kw));
}

// A float32 constant of `bytes` (little-endian floats).
v1::Tensor Float32Tensor(std::string bytes, const std::vector<int64_t>& shape, const std::string& name) {
  v1::Tensor t;
  t.set_dtype(v1::FLOAT32);
  for (int64_t d : shape) t.add_shape(d);
  t.set_name(name);
  t.set_data(std::move(bytes));
  return t;
}

// Element i of `bytes` set to x rounded once to float32.
void SetFloat(std::string* bytes, size_t i, double x) {
  const float f = static_cast<float>(x);
  std::memcpy(bytes->data() + i * sizeof(float), &f, sizeof f);
}

}  // namespace

Status FoldConvBatchNorm::Run(Graph* g, PassResult* result) {
  // Most graphs hold no batch norm: the op census says so without a walk.
  if (!g->MayHoldCanonical("batch_norm")) return Status::Ok();
  WrittenStorage written(*g);
  std::vector<uint32_t> readers(g->values.size(), 0);
  for (const Node& n : g->nodes) {
    if (n.erased) continue;
    for (ValueId v : n.inputs) ++readers[v];
  }
  for (ValueId v : g->OutputValues()) ++readers[v];
  for (const auto& guard : g->guards) ++readers[guard.tensor().value()];

  ValueRenames renames;
  for (Node& bn : g->nodes) {
    if (bn.erased) continue;
    renames.ApplyTo(&bn);
    if (bn.canonical() != "batch_norm" || bn.writes || bn.outputs.size() != 1 ||
        bn.result.kind_case() != v1::Arg::kTensor || bn.schema->side_effect()) {
      continue;
    }
    BoundCall b;
    if (!BoundCall::Bind(bn, &b).ok() || b.Bool("training") != false) continue;
    const auto x = b.Tensor("input");
    const auto eps = b.Double("eps");
    if (!x || !eps || g->values[*x].kind != v1::NODE_OUTPUT || readers[*x] != 1) continue;
    const Value& xv = g->values[*x];
    if (xv.dtype != v1::FLOAT32 || xv.shape.size() != 4 || (xv.storage && written.Contains(xv.storage))) continue;
    Node& conv = g->nodes[xv.producer];
    if (conv.erased || conv.canonical() != "conv2d" || conv.writes || conv.outputs.size() != 1 ||
        conv.result.kind_case() != v1::Arg::kTensor || conv.schema->side_effect()) {
      continue;
    }
    BoundCall c;
    if (!BoundCall::Bind(conv, &c).ok()) continue;
    const auto w = c.Tensor("weight");
    if (!w) continue;
    const auto wdata = ConstantBytes(*g, *w);
    const std::vector<int64_t> wshape = g->values[*w].shape;
    if (!wdata || wshape.empty() || wshape[0] <= 0) continue;
    const size_t cout = static_cast<size_t>(wshape[0]);
    const auto cbias = OptionalConstant(*g, c, "bias", cout, 0.f);
    const auto mean = b.Tensor("running_mean") ? ConstantData(*g, *b.Tensor("running_mean")) : std::nullopt;
    const auto var = b.Tensor("running_var") ? ConstantData(*g, *b.Tensor("running_var")) : std::nullopt;
    const auto gamma = OptionalConstant(*g, b, "weight", cout, 1.f);
    const auto beta = OptionalConstant(*g, b, "bias", cout, 0.f);
    if (!cbias || !mean || !var || !gamma || !beta || mean->size() != cout || var->size() != cout) continue;

    const size_t per = wdata->size() / sizeof(float) / cout;
    // In double, each result rounded once to float32.
    std::string nw(wdata->size(), '\0'), nb(cout * sizeof(float), '\0');
    for (size_t o = 0; o < cout; ++o) {
      const double s = static_cast<double>((*gamma)[o]) / std::sqrt(static_cast<double>((*var)[o]) + *eps);
      for (size_t k = 0; k < per; ++k) SetFloat(&nw, o * per + k, static_cast<double>(FloatAt(*wdata, o * per + k)) * s);
      SetFloat(&nb, o, (static_cast<double>((*cbias)[o]) - (*mean)[o]) * s + (*beta)[o]);
    }
    std::string base = g->values[*w].name.empty() ? "conv.weight" : g->values[*w].name;
    if (base.size() > 7 && base.compare(base.size() - 7, 7, ".weight") == 0) base.resize(base.size() - 7);
    const ValueId nwv = g->AddConstant(Float32Tensor(std::move(nw), wshape, base + ".weight.folded_bn"));
    const ValueId nbv =
        g->AddConstant(Float32Tensor(std::move(nb), {static_cast<int64_t>(cout)}, base + ".bias.folded_bn"));
    SetParam(&conv, 1, "weight", TensorArg(nwv, g->values[nwv]));
    SetParam(&conv, 2, "bias", TensorArg(nbv, g->values[nbv]));
    Graph::IndexNode(&conv);
    // Readers of the batch norm's result read the conv's instead (same dtype and shape).
    renames.Set(bn.outputs[0], *x);
    bn.erased = true;
    ++result->nodes_removed;
  }
  renames.ApplyToResultsAndGuards(g);
  return Status::Ok();
}

}  // namespace ivytrace
