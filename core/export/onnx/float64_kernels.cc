#include "core/export/onnx/float64_kernels.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace ivytrace {
namespace onnx_export {
namespace {

float FloatAttr(const onnx::NodeProto& n, std::string_view name, float otherwise) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return a.f();
  }
  return otherwise;
}

// Emits the replacement nodes of one node into `out`, naming temporaries after its output.
class Rewriter {
 public:
  Rewriter(onnx::GraphProto* graph, const onnx::NodeProto& node, std::vector<onnx::NodeProto>* out)
      : graph_(graph), out_(out), base_(node.output(0) + ".f64") {}

  std::string Op(const std::string& type, std::vector<std::string> inputs, const std::string& output = "") {
    onnx::NodeProto n;
    n.set_op_type(type);
    n.set_name(base_ + "." + std::to_string(count_) + "." + type);
    for (auto& in : inputs) n.add_input(std::move(in));
    n.add_output(output.empty() ? base_ + "." + std::to_string(count_) : output);
    ++count_;
    out_->push_back(std::move(n));
    return out_->back().output(0);
  }
  std::string Cast(const std::string& in, int to, const std::string& output = "") {
    std::string y = Op("Cast", {in}, output);
    auto* a = out_->back().add_attribute();
    a->set_name("to");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(to);
    return y;
  }
  // A 0-d float64 initializer holding v.
  std::string Double(double v) {
    onnx::TensorProto* t = graph_->add_initializer();
    t->set_name(base_ + ".c" + std::to_string(count_++));
    t->set_data_type(onnx::TensorProto::DOUBLE);
    t->add_double_data(v);
    return t->name();
  }

 private:
  onnx::GraphProto* graph_;
  std::vector<onnx::NodeProto>* out_;
  std::string base_;
  int count_ = 0;
};

}  // namespace

int ComputeWithoutMissingFloat64Kernels(onnx::GraphProto* graph, const InferredTypes& inferred) {
  static const std::unordered_set<std::string_view> kMissing = {
      "Atan", "Asin", "Acos", "Erf", "Sinh", "Cosh", "Tan", "Asinh", "Acosh", "Atanh",
      "Softplus", "Softsign", "Elu", "Selu", "HardSigmoid"};
  auto needs_rewrite = [&](const onnx::NodeProto& node) {
    if (node.input_size() != 1 || node.output_size() != 1 || !node.domain().empty() || !kMissing.count(node.op_type())) {
      return false;
    }
    const onnx::TypeProto* t = inferred(node.input(0));
    return t && t->has_tensor_type() && t->tensor_type().elem_type() == onnx::TensorProto::DOUBLE;
  };
  // Most graphs have none: leave them untouched (the rebuild below moves every node).
  if (std::none_of(graph->node().begin(), graph->node().end(), needs_rewrite)) return 0;
  std::vector<onnx::NodeProto> nodes;
  nodes.reserve(static_cast<size_t>(graph->node_size()));
  int rewritten = 0;
  for (auto& node : *graph->mutable_node()) {
    if (!needs_rewrite(node)) {
      nodes.push_back(std::move(node));
      continue;
    }
    ++rewritten;
    Rewriter r(graph, node, &nodes);
    const std::string x = node.input(0), y = node.output(0), op = node.op_type();
    if (op == "Atan" || op == "Asin" || op == "Acos" || op == "Erf") {
      const std::string f = r.Op(op, {r.Cast(x, onnx::TensorProto::FLOAT)});
      r.Cast(f, onnx::TensorProto::DOUBLE, y);
    } else if (op == "Sinh" || op == "Cosh") {
      const std::string e = r.Op("Exp", {x}), em = r.Op("Exp", {r.Op("Neg", {x})});
      r.Op("Mul", {r.Op(op == "Sinh" ? "Sub" : "Add", {e, em}), r.Double(0.5)}, y);
    } else if (op == "Tan") {
      r.Op("Div", {r.Op("Sin", {x}), r.Op("Cos", {x})}, y);
    } else if (op == "Asinh") {   // sign(x) log(|x| + sqrt(x^2 + 1)): no cancellation for x < 0
      const std::string a = r.Op("Abs", {x});
      const std::string s = r.Op("Sqrt", {r.Op("Add", {r.Op("Mul", {x, x}), r.Double(1)})});
      r.Op("Mul", {r.Op("Sign", {x}), r.Op("Log", {r.Op("Add", {a, s})})}, y);
    } else if (op == "Acosh") {   // log(x + sqrt(x^2 - 1)); NaN below 1 as acosh
      const std::string s = r.Op("Sqrt", {r.Op("Sub", {r.Op("Mul", {x, x}), r.Double(1)})});
      r.Op("Log", {r.Op("Add", {x, s})}, y);
    } else if (op == "Atanh") {   // log((1 + x) / (1 - x)) / 2; +-inf at +-1, NaN beyond
      const std::string one = r.Double(1);
      r.Op("Mul", {r.Op("Log", {r.Op("Div", {r.Op("Add", {one, x}), r.Op("Sub", {one, x})})}), r.Double(0.5)}, y);
    } else if (op == "Softplus") {   // max(x, 0) + log(1 + exp(-|x|)): no overflow for large x
      const std::string e = r.Op("Exp", {r.Op("Neg", {r.Op("Abs", {x})})});
      r.Op("Add", {r.Op("Max", {x, r.Double(0)}), r.Op("Log", {r.Op("Add", {r.Double(1), e})})}, y);
    } else if (op == "Softsign") {
      r.Op("Div", {x, r.Op("Add", {r.Double(1), r.Op("Abs", {x})})}, y);
    } else if (op == "Elu" || op == "Selu") {
      const double alpha = FloatAttr(node, "alpha", op == "Elu" ? 1.0f : 1.67326319217681884765625f);
      const double gamma = op == "Selu" ? FloatAttr(node, "gamma", 1.05070102214813232421875f) : 1.0;
      const std::string neg = r.Op("Mul", {r.Op("Sub", {r.Op("Exp", {x}), r.Double(1)}), r.Double(alpha)});
      const std::string pos = r.Op("Greater", {x, r.Double(0)});
      if (op == "Elu") {
        r.Op("Where", {pos, x, neg}, y);
      } else {
        r.Op("Mul", {r.Op("Where", {pos, x, neg}), r.Double(gamma)}, y);
      }
    } else {   // HardSigmoid: max(0, min(1, alpha x + beta))
      const double alpha = FloatAttr(node, "alpha", 0.2f), beta = FloatAttr(node, "beta", 0.5f);
      const std::string lin = r.Op("Add", {r.Op("Mul", {x, r.Double(alpha)}), r.Double(beta)});
      r.Op("Max", {r.Op("Min", {lin, r.Double(1)}), r.Double(0)}, y);
    }
  }
  graph->clear_node();
  for (auto& n : nodes) *graph->add_node() = std::move(n);
  return rewritten;
}

}  // namespace onnx_export
}  // namespace ivytrace
