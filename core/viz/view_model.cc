#include "core/viz/view_model.h"

#include <map>
#include <sstream>
#include <string_view>

#include "core/ir/arg.h"
#include "core/passes/specialize_symbols.h"

namespace ivytrace {
namespace {

std::vector<std::string> SplitScope(const std::string& scope) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= scope.size() && !scope.empty()) {
    size_t dot = scope.find('.', start);
    if (dot == std::string::npos) dot = scope.size();
    parts.push_back(scope.substr(start, dot - start));
    start = dot + 1;
  }
  return parts;
}

std::string ShapeString(const Value& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.shape.size(); ++i) os << (i ? ", " : "") << v.shape[i];
  os << "]";
  return os.str();
}

std::string ArgsString(const Node& n) {
  std::string s;
  for (const auto& a : n.args) s += (s.empty() ? "" : ", ") + ArgToString(a, true);
  for (const auto& kw : n.kwargs) s += (s.empty() ? "" : ", ") + kw.name() + "=" + ArgToString(kw.value(), true);
  return s;
}

// Builds the module call tree: a node opens a new group at each scope level where the previous
// node's chain of open groups differs.
class GroupBuilder {
 public:
  explicit GroupBuilder(ViewModel* vm) : vm_(vm) {}

  int GroupFor(const std::string& scope) {
    const std::vector<std::string> parts = SplitScope(scope);
    size_t keep = 0;
    while (keep < open_.size() && keep < parts.size() && vm_->groups[open_[keep]].scope == Prefix(parts, keep)) ++keep;
    open_.resize(keep);
    for (size_t i = keep; i < parts.size(); ++i) {
      const int parent = i == 0 ? 0 : open_[i - 1];
      const int calls = ++calls_[{parent, parts[i]}];
      ViewGroup g;
      g.parent = parent;
      g.name = parts[i] + (calls > 1 ? " #" + std::to_string(calls) : "");
      g.path = (parent == 0 ? "" : vm_->groups[parent].path + ".") + g.name;
      g.scope = Prefix(parts, i);
      vm_->groups.push_back(std::move(g));
      const int id = static_cast<int>(vm_->groups.size()) - 1;
      items_.emplace_back();
      items_[parent].push_back(-(id + 1));
      open_.push_back(id);
    }
    return open_.empty() ? 0 : open_.back();
  }

  void AddNode(int group, int node) { items_[group].push_back(node); }

  // Splits oversized child lists into chunks, then fills ViewGroup::groups/nodes.
  void Finish() {
    for (size_t g = 0; g < vm_->groups.size(); ++g) {  // chunks appended here are visited too
      // The root's inputs and outputs stay at its top and bottom, outside any chunk.
      std::vector<int> head, tail;
      if (g == 0) {
        std::vector<int> rest;
        for (int it : items_[0]) {
          if (it >= 0 && vm_->nodes[it].kind == ViewNode::kInput) head.push_back(it);
          else if (it >= 0 && vm_->nodes[it].kind == ViewNode::kOutput) tail.push_back(it);
          else rest.push_back(it);
        }
        items_[0] = std::move(rest);
      }
      while (items_[g].size() > kMaxGroupChildren) {
        std::vector<int> chunked;
        const std::vector<int> old = std::move(items_[g]);
        for (size_t start = 0; start < old.size(); start += kMaxGroupChildren) {
          const size_t end = std::min(old.size(), start + kMaxGroupChildren);
          ViewGroup c;
          c.parent = static_cast<int>(g);
          c.name = "items " + std::to_string(start + 1) + "-" + std::to_string(end);
          c.path = (g == 0 ? "" : vm_->groups[g].path + ".") + c.name;
          c.scope = vm_->groups[g].scope;
          vm_->groups.push_back(std::move(c));
          const int id = static_cast<int>(vm_->groups.size()) - 1;
          items_.emplace_back(old.begin() + start, old.begin() + end);
          chunked.push_back(-(id + 1));
        }
        items_[g] = std::move(chunked);
      }
      if (g == 0) {
        head.insert(head.end(), items_[0].begin(), items_[0].end());
        head.insert(head.end(), tail.begin(), tail.end());
        items_[0] = std::move(head);
      }
    }
    // Re-parent and re-path below chunks (paths of groups under a chunk name the chunk).
    for (size_t g = 0; g < vm_->groups.size(); ++g) {
      for (int it : items_[g]) {
        if (it < 0) {
          ViewGroup& child = vm_->groups[-it - 1];
          child.parent = static_cast<int>(g);
          vm_->groups[g].groups.push_back(-it - 1);
        } else {
          vm_->nodes[it].group = static_cast<int>(g);
          vm_->groups[g].nodes.push_back(it);
        }
      }
    }
    for (size_t g = 1; g < vm_->groups.size(); ++g) {  // parents first is not guaranteed: recurse
      vm_->groups[g].path = PathOf(static_cast<int>(g));
    }
  }

 private:
  std::string PathOf(int g) {
    const ViewGroup& grp = vm_->groups[g];
    if (grp.parent <= 0) return grp.name;
    return PathOf(grp.parent) + "." + grp.name;
  }
  static std::string Prefix(const std::vector<std::string>& parts, size_t last) {
    std::string s;
    for (size_t i = 0; i <= last; ++i) s += (i ? "." : "") + parts[i];
    return s;
  }

  ViewModel* vm_;
  std::vector<int> open_;
  std::map<std::pair<int, std::string>, int> calls_;
  std::vector<std::vector<int>> items_{1};  // per group: node ids, or -(group id + 1)
};

// Symbolic dims by name. Region input dims the graph follows (AnalyzeInputDims, the dims an ONNX
// export declares dynamic) show their name beside the recorded size: "[batch=2,
// input_ids_dim1=8]". A shape-derived int (an ivytrace.sym value) shows its expression over those
// names: "sym_int = input_ids_dim1 // 4".
class SymbolicNames {
 public:
  explicit SymbolicNames(const Graph& g) : g_(g), expr_(g.values.size()) {
    std::vector<bool> drop;
    const InputDims dims = AnalyzeInputDims(g, InputDimsOptions{}, &drop);
    const auto names = InputDimNames(InputTensorNames(g), dims.group);
    const std::vector<ValueId> inputs = g.InputValues();
    for (size_t k = 0; k < inputs.size() && k < names.size(); ++k) dim_names_.emplace(inputs[k], names[k]);
  }

  std::string InputShape(ValueId v) const {
    auto it = dim_names_.find(v);
    const auto& shape = g_.values[v].shape;
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
      if (i) s += ", ";
      if (it != dim_names_.end() && i < it->second.size() && !it->second[i].empty()) s += it->second[i] + "=";
      s += std::to_string(shape[i]);
    }
    return s + "]";
  }

  // " = <expression>" for a node defining a sym value, "" otherwise.
  std::string Defines(const Node& node) {
    if (node.outputs.empty() || node.op.rfind("ivytrace.sym.", 0) != 0) return "";
    const std::string e = Expr(node.outputs[0], 0);
    return e.empty() ? "" : " = " + e;
  }

 private:
  std::string Operand(const v1::Arg& a, int depth) {
    if (a.has_tensor()) {
      std::string e = Expr(a.tensor().value(), depth + 1);
      return e.empty() ? "%" + std::to_string(a.tensor().value()) : e;
    }
    return ArgToString(a, true);
  }

  std::string Expr(ValueId v, int depth) {
    if (v >= expr_.size()) return "";
    if (!expr_[v].empty()) return expr_[v];
    const Value& val = g_.values[v];
    if (depth > 8 || val.kind != v1::NODE_OUTPUT || val.producer < 0) return "";
    const Node& n = g_.nodes[val.producer];
    if (n.op.rfind("ivytrace.sym.", 0) != 0) return "";
    const std::string op = n.op.substr(std::string_view("ivytrace.sym.").size());
    static const std::map<std::string, std::string> kInfix = {
        {"add", " + "}, {"sub", " - "},  {"mul", " * "},  {"floordiv", " // "}, {"mod", " % "}, {"pow", " ** "},
        {"eq", " == "}, {"ne", " != "},  {"lt", " < "},   {"le", " <= "},       {"gt", " > "},  {"ge", " >= "},
        {"and_", " and "}, {"or_", " or "}};
    std::string e;
    if (op == "size" && n.args.size() >= 2 && n.args[0].has_tensor() && n.args[1].kind_case() == v1::Arg::kI) {
      const ValueId x = n.args[0].tensor().value();
      int64_t d = n.args[1].i();
      auto it = dim_names_.find(x);
      if (d < 0) d += static_cast<int64_t>(g_.values[x].shape.size());
      if (it != dim_names_.end() && d >= 0 && d < static_cast<int64_t>(it->second.size()) && !it->second[d].empty()) {
        e = it->second[d];
      } else {
        e = "%" + std::to_string(x) + ".shape[" + std::to_string(d) + "]";
      }
    } else if (op == "numel" && !n.args.empty()) {
      e = "numel(" + Operand(n.args[0], depth) + ")";
    } else if (auto it = kInfix.find(op); it != kInfix.end() && n.args.size() == 2) {
      e = "(" + Operand(n.args[0], depth) + it->second + Operand(n.args[1], depth) + ")";
    } else if ((op == "min" || op == "max") && n.args.size() == 2) {
      e = op + "(" + Operand(n.args[0], depth) + ", " + Operand(n.args[1], depth) + ")";
    } else if ((op == "neg" || op == "not_" || op == "abs") && n.args.size() == 1) {
      e = op == "neg" ? "-" + Operand(n.args[0], depth)
          : op == "not_" ? "not " + Operand(n.args[0], depth) : "abs(" + Operand(n.args[0], depth) + ")";
    }
    if (e.size() > 2 && e.front() == '(' && depth == 0) e = e.substr(1, e.size() - 2);
    if (e.size() > 80) e.clear();  // too long to read: the value's name stands for it
    if (depth > 0) expr_[v] = e;
    return e;
  }

  const Graph& g_;
  std::vector<std::string> expr_;
  std::map<ValueId, std::vector<std::string>> dim_names_;
};

}  // namespace

std::string ValueTypeString(const Value& v) { return std::string(DTypeName(v.dtype)) + ShapeString(v); }

ViewModel BuildViewModel(const Graph& g) {
  ViewModel vm;
  vm.name = g.name;
  vm.groups.push_back(ViewGroup{});
  vm.const_names.resize(g.values.size());
  vm.const_types.resize(g.values.size());
  std::vector<int> producer(g.values.size(), -1);
  auto add = [&](ViewNode n) {
    vm.nodes.push_back(std::move(n));
    return static_cast<int>(vm.nodes.size()) - 1;
  };
  SymbolicNames symbolic(g);
  for (ValueId v : g.InputValues()) {
    const Value& val = g.values[v];
    ViewNode n;
    n.kind = ViewNode::kInput;
    n.name = "%" + std::to_string(v);
    n.op = val.name.empty() ? "input" : val.name;
    n.dtype = DTypeName(val.dtype);
    n.shape = symbolic.InputShape(v);
    producer[v] = add(std::move(n));
  }
  GroupBuilder groups(&vm);
  for (size_t i = 0; i < vm.nodes.size(); ++i) groups.AddNode(0, static_cast<int>(i));
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& node = g.nodes[i];
    if (node.erased) continue;
    ViewNode n;
    n.kind = ViewNode::kOp;
    n.name = node.outputs.empty() ? "#" + std::to_string(i) : "%" + std::to_string(node.outputs[0]);
    n.op = node.op;
    n.canonical = node.canonical();
    n.args = ArgsString(node);
    if (!node.outputs.empty()) {
      n.dtype = DTypeName(g.values[node.outputs[0]].dtype);
      const std::string defines = symbolic.Defines(node);
      n.shape = defines.empty() ? ShapeString(g.values[node.outputs[0]]) : defines;
    }
    n.file = node.loc.file();
    n.line = node.loc.line();
    n.duration_ns = node.duration_ns;
    n.graph_node = static_cast<int>(i);
    for (ValueId in : node.inputs) {
      const Value& v = g.values[in];
      if (v.kind == v1::CONSTANT_VALUE) {
        if (vm.const_types[in].empty()) {
          ++vm.constant_count;
          vm.const_names[in] = v.name.empty() ? "constant %" + std::to_string(in) : v.name;
          vm.const_types[in] = ValueTypeString(v);
        }
        bool seen = false;
        for (ValueId c : n.consts) seen |= c == in;
        if (!seen) n.consts.push_back(in);
      } else if (producer[in] >= 0) {
        bool seen = false;
        for (int p : n.inputs) seen |= p == producer[in];
        if (!seen) n.inputs.push_back(producer[in]);
      }
    }
    const int group = groups.GroupFor(node.scope);
    const int id = add(std::move(n));
    groups.AddNode(group, id);
    for (ValueId out : node.outputs) producer[out] = id;
  }
  const std::vector<ValueId> outs = g.OutputValues();
  for (size_t k = 0; k < outs.size(); ++k) {
    const Value& val = g.values[outs[k]];
    ViewNode n;
    n.kind = ViewNode::kOutput;
    n.name = outs.size() > 1 ? "output." + std::to_string(k) : "output";
    n.op = n.name;
    n.dtype = DTypeName(val.dtype);
    n.shape = ShapeString(val);
    if (producer[outs[k]] >= 0) n.inputs.push_back(producer[outs[k]]);
    if (val.kind == v1::CONSTANT_VALUE) n.consts.push_back(outs[k]);
    groups.AddNode(0, add(std::move(n)));
  }
  groups.Finish();
  return vm;
}

}  // namespace ivytrace
