#include "core/ir/guard_expr.h"

#include <algorithm>
#include <iterator>
#include <string_view>
#include <unordered_map>

#include "core/ir/arg.h"

namespace ivytrace {
namespace {

constexpr size_t kMaxLength = 300;
constexpr int kMaxDepth = 24;

struct Infix {
  std::string_view op, text;
};
// ivytrace.sym.<op> and how Python spells it.
constexpr Infix kInfix[] = {{"add", " + "},   {"sub", " - "}, {"mul", " * "},   {"floordiv", " // "},
                            {"truediv", " / "}, {"mod", " % "}, {"pow", " ** "},  {"eq", " == "},
                            {"ne", " != "},   {"lt", " < "},  {"le", " <= "},   {"gt", " > "},
                            {"ge", " >= "},   {"and_", " and "}, {"or_", " or "}};

class Renderer {
 public:
  explicit Renderer(const Graph& g) : g_(g) {
    for (const auto& in : g.inputs) Name(in.value(), in.name());
  }

  // False when some part is not symbolic arithmetic over inputs and tensors.
  bool Value(ValueId v, int depth, std::string* out) {
    if (depth > kMaxDepth || out->size() > kMaxLength) return false;
    auto named = names_.find(v);
    if (named != names_.end()) {
      *out += named->second;
      return true;
    }
    const ivytrace::Value& val = g_.values[v];
    if (val.kind != v1::NODE_OUTPUT || val.producer < 0) return false;
    const Node& n = g_.nodes[val.producer];
    constexpr std::string_view kSym = "ivytrace.sym.";
    const std::string& name = n.op;
    if (name.compare(0, kSym.size(), kSym) != 0) {
      // A tensor the region computed: named by its op (its shape is what the expression reads).
      const auto dot = name.rfind('.');
      *out += (dot == std::string::npos ? name : name.substr(dot + 1)) + "(...)";
      return true;
    }
    const std::string_view op = std::string_view(name).substr(kSym.size());
    if (op == "size" && n.args.size() == 2) {
      if (!Operand(n.args[0], depth, out)) return false;
      *out += ".shape[";
      if (!Operand(n.args[1], depth, out)) return false;
      *out += "]";
      return true;
    }
    if ((op == "numel" || op == "dim") && n.args.size() == 1) {
      if (!Operand(n.args[0], depth, out)) return false;
      *out += op == "numel" ? ".numel()" : ".ndim";
      return true;
    }
    if (op == "neg" && n.args.size() == 1) return Prefixed("-", n.args[0], depth, out);
    if (op == "not_" && n.args.size() == 1) return Prefixed("not ", n.args[0], depth, out);
    if ((op == "abs" || op == "min" || op == "max" || op == "shares_memory") && !n.args.empty()) {
      *out += std::string(op) + "(";
      for (size_t i = 0; i < n.args.size(); ++i) {
        if (i) *out += ", ";
        if (!Operand(n.args[i], depth, out)) return false;
      }
      *out += ")";
      return true;
    }
    for (const Infix& f : kInfix) {
      if (op != f.op || n.args.size() != 2) continue;
      *out += "(";
      if (!Operand(n.args[0], depth, out)) return false;
      *out += f.text;
      if (!Operand(n.args[1], depth, out)) return false;
      *out += ")";
      return true;
    }
    return false;
  }

 private:
  void Name(const v1::Arg& a, const std::string& path) {
    if (a.kind_case() == v1::Arg::kTensor) {
      names_.emplace(a.tensor().value(), path);
    } else if (a.kind_case() == v1::Arg::kList || a.kind_case() == v1::Arg::kTuple) {
      const auto& items = a.kind_case() == v1::Arg::kList ? a.list().items() : a.tuple().items();
      for (int i = 0; i < items.size(); ++i) Name(items[i], path + "[" + std::to_string(i) + "]");
    } else if (a.kind_case() == v1::Arg::kDict) {
      const auto& d = a.dict();
      for (int i = 0; i < d.values_size() && i < d.keys_size(); ++i) Name(d.values(i), path + "['" + d.keys(i) + "']");
    }
  }

  bool Prefixed(const char* prefix, const v1::Arg& a, int depth, std::string* out) {
    *out += prefix;
    return Operand(a, depth, out);
  }

  bool Operand(const v1::Arg& a, int depth, std::string* out) {
    switch (a.kind_case()) {
      case v1::Arg::kTensor:
        return Value(a.tensor().value(), depth + 1, out);
      case v1::Arg::kI:
      case v1::Arg::kF:
      case v1::Arg::kB:
        *out += ArgToString(a, false);
        return true;
      default:
        return false;
    }
  }

  const Graph& g_;
  std::unordered_map<ValueId, std::string> names_;
};

// "(a != 1)" -> "a != 1": the outermost parentheses say nothing.
std::string Unwrapped(std::string s) {
  if (s.size() < 2 || s.front() != '(' || s.back() != ')') return s;
  int depth = 0;
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    depth += s[i] == '(' ? 1 : s[i] == ')' ? -1 : 0;
    if (depth == 0) return s;   // the first '(' closes before the end: "(a) + (b)"
  }
  return s.substr(1, s.size() - 2);
}

}  // namespace

std::string GuardExpression(const Graph& graph, ValueId v) {
  if (v >= graph.values.size()) return "";
  const Value& val = graph.values[v];
  if (val.dtype != v1::SYM_INT && val.dtype != v1::SYM_BOOL && val.dtype != v1::SYM_FLOAT) return "";
  std::string out;
  Renderer r(graph);
  if (!r.Value(v, 0, &out) || out.size() > kMaxLength) return "";
  return Unwrapped(std::move(out));
}

const Node* ViewOrCopyNode(const Graph& graph, const v1::Guard& g) {
  if (g.op() != "ivytrace.sym.__bool__" || !g.has_tensor() || g.tensor().value() >= graph.values.size()) return nullptr;
  const Value& v = graph.values[g.tensor().value()];
  if (v.kind != v1::NODE_OUTPUT || v.producer < 0) return nullptr;
  const Node& p = graph.nodes[v.producer];
  return !p.erased && p.op == "ivytrace.sym.shares_memory" ? &p : nullptr;
}

void ViewOrCopyFacts::Build() {
  depends_.assign(g_.values.size(), 0);
  readers_.assign(g_.values.size(), 0);
  for (ValueId v : g_.InputValues()) depends_[v] = 1;
  for (ValueId v : g_.OutputValues()) ++readers_[v];
  for (const Node& n : g_.nodes) {
    if (n.erased) continue;
    bool d = false;
    for (ValueId in : n.inputs) {
      d = d || depends_[in];
      ++readers_[in];
    }
    if (d) {
      for (ValueId out : n.outputs) depends_[out] = 1;
    }
  }
}

// Ops that may return a view of (or the very) tensor they read: followed back to the memory's
// owner. Ops that always allocate their result: where such a chain may start. Anything else (an
// op not listed) keeps the guard.
constexpr std::string_view kMayAlias[] = {"permute", "permute_dims", "transpose", "matrix_transpose", "reshape",
                                          "flatten", "contiguous", "getitem", "slice", "select", "narrow",
                                          "squeeze", "unsqueeze", "expand", "expand_dims", "broadcast_to",
                                          "moveaxis", "identity", "cast", "diagonal", "flip", "atleast_nd"};
constexpr std::string_view kAllocates[] = {
    "add", "sub", "mul", "div", "neg", "abs", "pow", "exp", "log", "sqrt", "rsqrt", "floor", "ceil", "round",
    "floor_divide", "remainder", "fmod", "maximum", "minimum", "equal", "not_equal", "greater", "greater_equal",
    "less", "less_equal", "logical_and", "logical_or", "logical_not", "where", "matmul", "linear", "addmm",
    "einsum", "dot", "sum", "mean", "prod", "amax", "amin", "concat", "stack", "arange", "iota", "zeros", "ones",
    "full", "zeros_like", "ones_like", "full_like", "eye", "linspace", "clone", "copy", "cumsum", "tile",
    "sigmoid", "tanh", "relu", "gelu", "silu", "softmax", "log_softmax", "clamp", "clip"};

static bool In(std::string_view c, const std::string_view* begin, const std::string_view* end) {
  return std::find(begin, end, c) != end;
}

bool ViewOrCopyFacts::Holds(const Node& n) {
  if (n.args.size() != 2 || n.args[0].kind_case() != v1::Arg::kTensor || n.args[1].kind_case() != v1::Arg::kTensor) {
    return false;
  }
  if (depends_.empty()) Build();
  const ValueId result = n.args[0].tensor().value(), input = n.args[1].tensor().value();
  if (!depends_[result] && !depends_[input]) return true;
  const Value& out = g_.values[result];
  if (out.kind != v1::NODE_OUTPUT || out.producer < 0) return false;
  bool reads_input = false;
  for (ValueId v : g_.nodes[out.producer].inputs) reads_input = reads_input || v == input;
  if (!reads_input || readers_[input] != 2) return false;   // read by the call and this check only
  ValueId v = input;
  for (int depth = 0; depth < 32; ++depth) {
    const Value& val = g_.values[v];
    if (val.kind != v1::NODE_OUTPUT || val.producer < 0) return false;   // an input or a constant
    const Node& p = g_.nodes[val.producer];
    if (p.erased || p.writes || p.outputs.size() != 1) return false;
    const std::string& c = p.canonical();
    if (In(c, std::begin(kAllocates), std::end(kAllocates))) return true;   // fresh memory only this chain reads
    if (!In(c, std::begin(kMayAlias), std::end(kMayAlias)) || p.args.empty() ||
        p.args[0].kind_case() != v1::Arg::kTensor) {
      return false;
    }
    v = p.args[0].tensor().value();
    if (readers_[v] != 1) return false;   // another reader would see a write through the chain
  }
  return false;
}

}  // namespace ivytrace
