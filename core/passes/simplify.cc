#include "core/passes/simplify.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "core/ir/arg.h"
#include "core/passes/recorded_values.h"
#include "core/passes/value_renames.h"
#include "core/schema/binding.h"
#include "core/schema/schema_registry.h"

namespace ivytrace {
namespace {

// "input" when `call`'s other operand is the Python scalar `identity`, else nothing.
std::optional<ValueId> ScalarIdentity(const BoundCall& call, double identity) {
  const v1::Arg* other = call.Get("other");
  if (!other || HasTensor(*other)) return std::nullopt;
  const auto v = AsDouble(*other);
  if (!v || *v != identity) return std::nullopt;
  return call.Tensor("input");
}

// The live node that defines `v` with canonical op `canonical`, bound; null otherwise.
const Node* Producer(const Graph& g, ValueId v, std::string_view canonical, BoundCall* call) {
  const Value& val = g.values[v];
  if (val.kind != v1::NODE_OUTPUT || val.producer < 0) return nullptr;
  const Node& p = g.nodes[val.producer];
  if (p.erased || p.canonical() != canonical || p.writes || p.outputs.size() != 1) return nullptr;
  return BoundCall::Bind(p, call).ok() ? &p : nullptr;
}

// A dim in [0, rank), or -1 when out of range.
int64_t NormDim(int64_t d, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  if (d < 0) d += r;
  return d >= 0 && d < r ? d : -1;
}

// The (dim0, dim1) pair of a transpose call (t() = (0, 1)), normalized and ordered.
std::optional<std::pair<int64_t, int64_t>> TransposeDims(const BoundCall& c, size_t rank) {
  int64_t a = 0, b = 1;
  if (c.Has("dim0")) {
    const auto x = c.Int("dim0"), y = c.Int("dim1");
    if (!x || !y) return std::nullopt;
    a = NormDim(*x, rank), b = NormDim(*y, rank);
  }
  if (a < 0 || b < 0) return std::nullopt;
  return std::make_pair(std::min(a, b), std::max(a, b));
}

std::optional<std::vector<int64_t>> PermuteDims(const BoundCall& c, size_t rank) {
  auto dims = c.IntList("dims");
  if (!dims || dims->size() != rank) return std::nullopt;
  for (auto& d : *dims) {
    d = NormDim(d, rank);
    if (d < 0) return std::nullopt;
  }
  return dims;
}

size_t Rank(const Graph& g, std::optional<ValueId> v) { return v ? g.values[*v].shape.size() : 0; }

// transpose(x, a, a) -> x; transpose(transpose(x, a, b), a, b) -> x.
std::optional<ValueId> DoubleTranspose(const Graph& g, const BoundCall& c) {
  const auto in = c.Tensor("input");
  if (!in) return std::nullopt;
  const auto dims = TransposeDims(c, Rank(g, in));
  if (!dims) return std::nullopt;
  if (dims->first == dims->second) return in;
  BoundCall inner;
  if (!Producer(g, *in, "transpose", &inner)) return std::nullopt;
  const auto x = inner.Tensor("input");
  if (!x || TransposeDims(inner, Rank(g, x)) != dims) return std::nullopt;
  return x;
}

// permute(x, identity) -> x; permute(permute(x, p1), p2) -> x when p1[p2[j]] == j for every j.
std::optional<ValueId> DoublePermute(const Graph& g, const BoundCall& c) {
  const auto in = c.Tensor("input");
  if (!in) return std::nullopt;
  const auto p2 = PermuteDims(c, Rank(g, in));
  if (!p2) return std::nullopt;
  bool identity = true;
  for (size_t j = 0; j < p2->size(); ++j) identity = identity && (*p2)[j] == static_cast<int64_t>(j);
  if (identity) return in;
  BoundCall inner;
  if (!Producer(g, *in, "permute_dims", &inner)) return std::nullopt;
  const auto x = inner.Tensor("input");
  const auto p1 = x ? PermuteDims(inner, Rank(g, x)) : std::nullopt;
  if (!p1 || p1->size() != p2->size()) return std::nullopt;
  for (size_t j = 0; j < p2->size(); ++j) {
    if ((*p1)[(*p2)[j]] != static_cast<int64_t>(j)) return std::nullopt;
  }
  return x;
}

// The permutation a transpose or permute call applies (result dim i is input dim p[i]), and the
// value it reads; nothing for any other call.
std::optional<std::vector<int64_t>> LayoutPermutation(const Graph& g, const Node& n, BoundCall* call) {
  const std::string& canonical = n.canonical();
  if ((canonical != "transpose" && canonical != "permute_dims") || n.writes || n.outputs.size() != 1 ||
      !BoundCall::Bind(n, call).ok()) {
    return std::nullopt;
  }
  const auto in = call->Tensor("input");
  if (!in) return std::nullopt;
  const size_t rank = Rank(g, in);
  if (canonical == "permute_dims") return PermuteDims(*call, rank);
  const auto dims = TransposeDims(*call, rank);
  if (!dims) return std::nullopt;
  std::vector<int64_t> p(rank);
  for (size_t i = 0; i < rank; ++i) p[i] = static_cast<int64_t>(i);
  std::swap(p[dims->first], p[dims->second]);
  return p;
}

// transpose/permute of a transpose/permute: rewrites `n` into one torch.permute of the inner
// call's input (the inner call then often has no reader left, and dce drops it). Still a view of
// the same memory, so aliasing is as recorded. A chain composing to the identity is then
// forwarded by the permute rule below. Torch calls only: the rewrite names torch.permute.
bool ComposeLayoutChain(Graph* g, Node* n) {
  const std::string& canonical = n->canonical();  // most nodes stop here
  if ((canonical != "transpose" && canonical != "permute_dims") || n->op.rfind("torch.", 0) != 0) return false;
  BoundCall outer_call, inner_call;
  const auto outer = LayoutPermutation(*g, *n, &outer_call);
  if (!outer) return false;
  const Value& mid = g->values[*outer_call.Tensor("input")];
  if (mid.kind != v1::NODE_OUTPUT || mid.producer < 0) return false;
  const Node& inner = g->nodes[mid.producer];
  if (inner.erased || inner.op.rfind("torch.", 0) != 0) return false;
  const auto first = LayoutPermutation(*g, inner, &inner_call);
  if (!first || first->size() != outer->size()) return false;
  static const v1::OpSchema* const kPermute = SchemaRegistry::Default().Find("torch.permute");
  if (!kPermute) return false;
  v1::Arg source = *inner_call.Get("input");
  v1::Arg dims;
  for (int64_t d : *outer) dims.mutable_list()->add_items()->set_i((*first)[d]);
  n->op = "torch.permute";
  n->schema = kPermute;
  n->args = {std::move(source), std::move(dims)};
  n->kwargs.clear();
  Graph::IndexNode(n);
  g->CountNode(*n);
  return true;
}

struct Rule {
  std::string_view canonical;
  // The value the call's result equals, or nothing when the rule does not apply.
  std::optional<ValueId> (*forward)(const Graph& g, const BoundCall& call);
};

// Rewrite rules as data: (canonical op, what its result forwards to).
const Rule kRules[] = {
    {"identity", [](const Graph&, const BoundCall& c) { return c.Tensor("input"); }},
    // Same values, maybe another memory layout: see `relaid` in Simplify::Run.
    {"contiguous", [](const Graph&, const BoundCall& c) { return c.Tensor("input"); }},
    // .to(dtype)/.float()/...: the recorded dtypes are compared below, for every rule.
    {"cast", [](const Graph&, const BoundCall& c) { return c.Tensor("input"); }},
    {"transpose", DoubleTranspose},
    {"permute_dims", DoublePermute},
    {"dropout",
     [](const Graph&, const BoundCall& c) -> std::optional<ValueId> {
       if (c.Bool("training") != false || c.Bool("inplace") == true) return std::nullopt;
       return c.Tensor("input");
     }},
    {"mul", [](const Graph&, const BoundCall& c) { return ScalarIdentity(c, 1); }},
    {"add", [](const Graph&, const BoundCall& c) { return ScalarIdentity(c, 0); }},
    {"sub", [](const Graph&, const BoundCall& c) { return ScalarIdentity(c, 0); }},
    {"div",
     [](const Graph&, const BoundCall& c) -> std::optional<ValueId> {
       if (c.Has("rounding_mode") && !c.IsNone("rounding_mode")) return std::nullopt;
       return ScalarIdentity(c, 1);
     }},
    // Same shape: the recorded shapes are compared below, for every rule.
    {"reshape", [](const Graph&, const BoundCall& c) { return c.Tensor("input"); }},
    {"flatten", [](const Graph&, const BoundCall& c) { return c.Tensor("input"); }},
};

// Cheap pre-check before binding: x + 2, y * 0.5 (a second positional that is a scalar other than
// the identity) never match, whichever parameter that positional binds to.
bool MayMatch(const Rule& rule, const Node& n) {
  double identity;
  if (rule.canonical == "mul" || rule.canonical == "div") identity = 1;
  else if (rule.canonical == "add" || rule.canonical == "sub") identity = 0;
  else return true;
  if (n.args.size() < 2 || HasTensor(n.args[1])) return true;
  const auto v = AsDouble(n.args[1]);
  return !v || *v == identity;
}

std::optional<ValueId> Match(const Graph& g, const Node& n) {
  if (!n.schema || n.schema->side_effect() || n.writes || n.outputs.size() != 1 ||
      n.result.kind_case() != v1::Arg::kTensor) {
    return std::nullopt;
  }
  for (const Rule& rule : kRules) {
    if (rule.canonical != n.canonical()) continue;
    if (!MayMatch(rule, n)) return std::nullopt;
    // Random ops are only ever forwarded by a rule that proved them deterministic (dropout off).
    if (n.schema->random() && rule.canonical != "dropout") return std::nullopt;
    BoundCall call;
    if (!BoundCall::Bind(n, &call).ok()) return std::nullopt;
    return rule.forward(g, call);
  }
  return std::nullopt;
}

// Whether every graph input's rank is guarded (a region that read a shape guards them all):
// then each value's rank is the recorded one on every replay.
bool RanksGuarded(const Graph& g) {
  std::unordered_set<ValueId> guarded;
  for (const auto& guard : g.guards) {
    const std::string& op = guard.op();
    const auto dot = op.rfind('.');
    const std::string last = dot == std::string::npos ? op : op.substr(dot + 1);
    if (last == "dim" || last == "ndim" || last == "shape") guarded.insert(guard.tensor().value());
  }
  for (ValueId v : g.InputValues()) {
    if (!guarded.count(v)) return false;
  }
  return true;
}

// A reshape or flatten whose recorded result has its input's shape is the identity on that
// input, but a replay may give the input another shape: x.reshape(2, 3) of a (3, 2) input, or
// x.flatten() of a 2-d input where a 1-d one was recorded, is no identity. The forward holds on
// every input only when the target follows the input: each size is `ivytrace.sym.size(x, i)` of
// the input itself at its own position (at most one -1 among them), or x is 1-d, flattened or
// reshaped to (-1,). Both need the input's rank to be the recorded one: a read shape guards
// the ranks of the region's inputs (`ranks_guarded`).
bool ShapeFollowsInput(const Graph& g, const Node& n, ValueId in, bool ranks_guarded) {
  if (!ranks_guarded) return false;
  const Value& x = g.values[in];
  if (n.canonical() == "flatten") {
    return x.shape.size() <= 1;
  }
  std::vector<const v1::Arg*> target;
  for (const auto& kw : n.kwargs) {
    if (kw.name() != "shape") return false;
  }
  const v1::Arg* shape_arg = nullptr;
  if (!n.kwargs.empty()) shape_arg = &n.kwargs[0].value();
  else if (n.args.size() == 2 && (n.args[1].has_tuple() || n.args[1].has_list())) shape_arg = &n.args[1];
  if (shape_arg) {
    const auto& items = shape_arg->has_tuple() ? shape_arg->tuple().items() : shape_arg->list().items();
    for (const auto& it : items) target.push_back(&it);
  } else {
    for (size_t i = 1; i < n.args.size(); ++i) target.push_back(&n.args[i]);
  }
  if (target.size() != x.shape.size()) return false;
  int minus_one = 0;
  for (size_t i = 0; i < target.size(); ++i) {
    const v1::Arg& a = *target[i];
    if (a.kind_case() == v1::Arg::kI) {
      if (a.i() != -1 || ++minus_one > 1) return false;
      continue;
    }
    if (!a.has_tensor()) return false;
    const Value& s = g.values[a.tensor().value()];
    if (s.kind != v1::NODE_OUTPUT || s.producer < 0) return false;
    const Node& p = g.nodes[s.producer];
    if (p.op != "ivytrace.sym.size" || p.args.size() != 2 || !p.args[0].has_tensor() ||
        p.args[0].tensor().value() != in || p.args[1].kind_case() != v1::Arg::kI) {
      return false;
    }
    const int64_t d = p.args[1].i() < 0 ? p.args[1].i() + static_cast<int64_t>(x.shape.size()) : p.args[1].i();
    if (d != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// reshape(reshape-or-flatten(x, s1), s2) reads x directly: the value of arg 0 to use instead, or nothing.
// Every link's memory must be free of in-place writes (`written`): aliasing changes.
std::optional<ValueId> ReshapeChainSource(const Graph& g, const Node& n, WrittenStorage& written) {
  if (n.canonical() != "reshape" || n.writes || n.outputs.size() != 1 || n.args.empty() ||
      n.args[0].kind_case() != v1::Arg::kTensor) {
    return std::nullopt;
  }
  std::optional<ValueId> src;
  ValueId in = n.args[0].tensor().value();
  // Follows the chain: an earlier link may already read further back.
  while (true) {
    const Value& v = g.values[in];
    if (v.storage && written.Contains(v.storage)) return std::nullopt;
    if (v.kind != v1::NODE_OUTPUT || v.producer < 0) return src;
    const Node& p = g.nodes[v.producer];
    if (p.erased || (p.canonical() != "reshape" && p.canonical() != "flatten") || p.writes ||
        p.outputs.size() != 1 || p.args.empty() || p.args[0].kind_case() != v1::Arg::kTensor) {
      return src;
    }
    in = p.args[0].tensor().value();
    src = in;
  }
}

// Values whose dtype follows a region input's: a replay may pass another dtype than the recorded
// one (the seeds' example traces int64 and replays float32), and nothing guards input dtypes, so
// a cast that was the identity when recorded (`x.float()` of a float32 x) converts on such a replay
// and must stay. A cast's result has a dtype of its own unless it reads another varying tensor
// (`.type_as(t)`, `.to(t)`). A cast that returned its input object is guarded by the graph builder
// (GuardCastReturningInput), so it is forwarded. Worked out on the first cast a rule matches.
class DtypeFollowsInputs {
 public:
  explicit DtypeFollowsInputs(const Graph& g) : g_(g) {}
  bool Contains(ValueId v) {
    if (varies_.empty()) Build();
    return varies_[v];
  }

 private:
  void Build() {
    varies_.assign(g_.values.size(), 0);
    // A value whose dtype a guard checks has the recorded dtype on every replay that goes on.
    std::vector<char> guarded(g_.values.size(), 0);
    for (const auto& guard : g_.guards) {
      const std::string& op = guard.op();
      if (op.size() > 6 && op.compare(op.size() - 6, 6, ".dtype") == 0) guarded[guard.tensor().value()] = 1;
    }
    for (ValueId v : g_.InputValues()) varies_[v] = !guarded[v];
    for (const Node& n : g_.nodes) {
      if (n.erased) continue;
      std::optional<ValueId> cast_input;
      if (n.canonical() == "cast") {
        BoundCall call;
        if (BoundCall::Bind(n, &call).ok()) cast_input = call.Tensor("input");
      }
      bool varies = false;
      for (ValueId in : n.inputs) varies = varies || (varies_[in] && (!cast_input || in != *cast_input));
      if (varies) {
        for (ValueId out : n.outputs) varies_[out] = !guarded[out];
      }
    }
  }
  const Graph& g_;
  std::vector<char> varies_;
};

// The op that reshapes like `op` without requiring a viewable input (x may not be contiguous).
std::string ReshapeOp(const std::string& op) {
  if (op == "torch.Tensor.view") return "torch.Tensor.reshape";
  if (op == "torch.Tensor.view_as") return "torch.Tensor.reshape_as";
  return op;
}

}  // namespace

Status Simplify::Run(Graph* g, PassResult* result) {
  // Storage written in place anywhere in the graph: asked only of reshapes and of calls a rule
  // matched, so it is worked out on the first question (most nodes never ask).
  WrittenStorage written(*g);
  DtypeFollowsInputs dtype_follows_inputs(*g);
  std::unordered_set<ValueId> memory_checked;
  for (const auto& guard : g->guards) {
    if (guard.op() != "ivytrace.sym.__bool__") continue;
    const Value& v = g->values[guard.tensor().value()];
    if (v.kind != v1::NODE_OUTPUT || v.producer < 0) continue;
    const Node& p = g->nodes[v.producer];
    if (p.erased || p.op != "ivytrace.sym.shares_memory") continue;
    for (ValueId in : p.inputs) memory_checked.insert(in);
  }
  const bool ranks_guarded = RanksGuarded(*g);
  std::unordered_set<ValueId> region_outputs;
  std::unordered_set<uint64_t> output_storage;
  for (ValueId v : g->OutputValues()) {
    region_outputs.insert(v);
    if (g->values[v].storage) output_storage.insert(g->values[v].storage);
  }
  // Memory a returned tensor must not share once forwarded: the caller's and the plan's.
  LazyCallerVisibleStorage visible(*g);

  ValueRenames renames;
  // Forwarding x.contiguous() keeps the values but not the memory layout: what reads its result
  // (and whatever is computed from that) may now see a non-contiguous tensor. `relaid` marks those
  // values; a view of one must become a reshape (x.transpose(1, 2).contiguous().view(b, t, c) is
  // everyday attention code, and view refuses a non-contiguous input). Made on the first forward.
  std::vector<char> relaid;
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    g->Prefetch(i + Graph::kPrefetchDistance);
    Node& n = g->nodes[i];
    if (n.erased) continue;
    const bool reads_relaid =
        !relaid.empty() && std::any_of(n.inputs.begin(), n.inputs.end(), [&](ValueId v) { return relaid[v]; });
    renames.ApplyTo(&n);
    if (reads_relaid) {
      for (ValueId out : n.outputs) relaid[out] = 1;
      const std::string op = ReshapeOp(n.op);
      if (op != n.op) n.op = op;  // same values, any layout (and still a view of a contiguous input)
    }
    // reshape chains first: reshape(reshape(x, s1), x.shape) then forwards to x below.
    const auto src = ReshapeChainSource(*g, n, written);
    if (src && !region_outputs.count(n.outputs[0])) {
      const uint64_t own = g->values[n.outputs[0]].storage;
      if (!(own && written.Contains(own))) {
        n.args[0].mutable_tensor()->set_value(*src);
        n.op = ReshapeOp(n.op);
        Graph::IndexNode(&n);
      }
    }
    ComposeLayoutChain(g, &n);
    const auto in = Match(*g, n);
    if (!in) continue;
    const ValueId out = n.outputs[0];
    const Value& from = g->values[*in];
    const Value& to = g->values[out];
    if (from.dtype != to.dtype || from.shape != to.shape) continue;
    if (n.canonical() == "cast" && dtype_follows_inputs.Contains(*in)) continue;
    // A view-or-copy decision the graph builder guards (ivytrace.sym.shares_memory of this result
    // and its input) needs the call that makes it, whatever its values are.
    if (memory_checked.count(out)) continue;
    if ((n.canonical() == "reshape" || n.canonical() == "flatten") && !ShapeFollowsInput(*g, n, *in, ranks_guarded)) {
      continue;
    }
    if ((from.storage && written.Contains(from.storage)) || (to.storage && written.Contains(to.storage))) continue;
    if (region_outputs.count(out) &&
        (from.kind != v1::NODE_OUTPUT || region_outputs.count(*in) ||
         (from.storage && (visible.Contains(from.storage) || output_storage.count(from.storage))))) {
      continue;
    }
    const bool relayout = n.canonical() == "contiguous";
    if (relayout) {
      // Kept where the layout can matter: the caller sees a returned tensor's layout, and an op
      // schemas/ does not know (a custom kernel) may need contiguous memory. A view turned into a
      // reshape below may copy, which is safe: the graph builder makes every write through a torch
      // view explicit (a write-back node computes the parent's new version from the view's), and
      // a write to the result itself blocks the forward like any other (`written` above).
      if (region_outputs.count(out) || g->MayHoldUnknownOps()) continue;
      if (relaid.empty()) relaid.assign(g->values.size(), 0);
    }
    if (relayout || reads_relaid) relaid[out] = 1;
    renames.Set(out, *in);
    n.erased = true;
    ++result->nodes_removed;
    if (region_outputs.erase(out)) {
      region_outputs.insert(*in);
      if (from.storage) output_storage.insert(from.storage);
    }
  }
  renames.ApplyToResultsAndGuards(g);
  return Status::Ok();
}

}  // namespace ivytrace
