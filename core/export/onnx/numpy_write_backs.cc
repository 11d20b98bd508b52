#include "core/export/onnx/numpy_write_backs.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/ir/arg.h"
#include "core/schema/binding.h"
#include "core/schema/schema_registry.h"

namespace ivytrace {
namespace {

constexpr uint64_t kSyntheticId = 1ull << 61;  // tensor ids of the values made here

bool IsNumpy(const Node& n) { return n.op.rfind("numpy.", 0) == 0; }

std::optional<ValueId> FirstTensorArg(const Node& n) {
  if (n.args.empty() || n.args[0].kind_case() != v1::Arg::kTensor) return std::nullopt;
  return n.args[0].tensor().value();
}

// The result tensors of a node, in ForEachTensor order.
std::vector<ValueId> ResultTensors(const Node& n) {
  std::vector<ValueId> out;
  ForEachTensor(n.result, [&](const v1::TensorRef& r) { out.push_back(r.value()); });
  return out;
}

enum class Kind { kPermute, kReshape, kSetItem, kSplit, kFlip, kOther };

Kind KindOf(const std::string& op) {
  if (op == "numpy.transpose" || op == "numpy.ndarray.transpose" || op == "numpy.swapaxes" ||
      op == "numpy.ndarray.swapaxes") {
    return Kind::kPermute;
  }
  if (op == "numpy.reshape" || op == "numpy.ndarray.reshape" || op == "numpy.ravel" || op == "numpy.ndarray.ravel" ||
      op == "numpy.squeeze" || op == "numpy.ndarray.squeeze" || op == "numpy.expand_dims") {
    return Kind::kReshape;
  }
  if (op == "numpy.ndarray.__getitem__") return Kind::kSetItem;
  if (op == "numpy.split" || op == "numpy.array_split") return Kind::kSplit;
  if (op == "numpy.flip") return Kind::kFlip;
  return Kind::kOther;
}

// The permutation a transpose-like view applied to an array of rank `rank`.
std::optional<std::vector<int64_t>> Permutation(const Node& n, size_t rank) {
  BoundCall call;
  if (!BoundCall::Bind(n, &call).ok()) return std::nullopt;
  std::vector<int64_t> perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(i);
  auto norm = [&](int64_t a) -> std::optional<int64_t> {
    if (a < 0) a += static_cast<int64_t>(rank);
    if (a < 0 || a >= static_cast<int64_t>(rank)) return std::nullopt;
    return a;
  };
  if (n.op == "numpy.swapaxes" || n.op == "numpy.ndarray.swapaxes") {
    auto a = call.Int("axis1"), b = call.Int("axis2");
    if (!a || !b) return std::nullopt;
    auto na = norm(*a), nb = norm(*b);
    if (!na || !nb) return std::nullopt;
    std::swap(perm[*na], perm[*nb]);
    return perm;
  }
  const v1::Arg* axes = call.Get("axes");
  if (axes && axes->kind_case() == v1::Arg::kList && axes->list().items_size() == 1) {
    axes = &axes->list().items(0);  // x.transpose((1, 0)) / x.transpose(None)
  }
  const bool none = !axes || IsNone(*axes) ||
                    (axes->kind_case() == v1::Arg::kList && axes->list().items_size() == 0) ||
                    (axes->kind_case() == v1::Arg::kTuple && axes->tuple().items_size() == 0);
  if (none) {
    std::reverse(perm.begin(), perm.end());
    return perm;
  }
  auto given = AsIntList(*axes);
  if (!given || given->size() != rank) return std::nullopt;
  for (size_t i = 0; i < rank; ++i) {
    auto a = norm((*given)[i]);
    if (!a) return std::nullopt;
    perm[i] = *a;
  }
  return perm;
}

v1::Arg TensorArgOf(const Graph& g, ValueId v) {
  v1::Arg a;
  auto* r = a.mutable_tensor();
  r->set_value(v);
  r->set_id(g.values[v].tensor_id);
  r->set_version(g.values[v].tensor_version);
  r->set_storage(g.values[v].storage);
  r->set_dtype(g.values[v].dtype);
  for (int64_t d : g.values[v].shape) r->add_shape(d);
  return a;
}

class Carrier {
 public:
  explicit Carrier(Graph* g) : g_(*g) {}

  Status Run(size_t* carried) {
    const size_t n_nodes = g_.nodes.size();
    // Most graphs have no NumPy write listing other arrays: nothing to do, in one scan.
    bool any = false;
    for (size_t i = 0; i < n_nodes && !any; ++i) {
      const Node& n = g_.nodes[i];
      any = !n.erased && n.writes && n.mutated.size() > 1 && IsNumpy(n);
    }
    if (!any) return Status::Ok();
    // Each view's link to the array it was made from (by its first view op).
    for (size_t i = 0; i < n_nodes; ++i) {
      const Node& n = g_.nodes[i];
      if (n.erased || !IsNumpy(n) || KindOf(n.op) == Kind::kOther) continue;
      auto in = FirstTensorArg(n);
      if (!in) continue;
      const std::vector<ValueId> outs = ResultTensors(n);
      for (size_t k = 0; k < outs.size(); ++k) {
        const Value& o = g_.values[outs[k]];
        const Value& p = g_.values[*in];
        if (o.storage != p.storage || o.storage == 0 || o.tensor_id == p.tensor_id) continue;
        links_.emplace(o.tensor_id, Link{p.tensor_id, i, k});
      }
    }
    for (ValueId v = 0; v < g_.values.size(); ++v) {
      const Value& val = g_.values[v];
      if (val.kind != v1::NODE_OUTPUT) Note(v);
    }
    std::vector<std::vector<Node>> after(n_nodes);
    for (size_t i = 0; i < n_nodes; ++i) {
      Node& n = g_.nodes[i];
      if (n.erased) continue;
      if (!renamed_.empty()) {
        for (auto& a : n.args) Rename(&a);
        for (auto& kw : n.kwargs) Rename(kw.mutable_value());
        Graph::IndexNode(&n);
      }
      if (IsNumpy(n) && n.writes) {
        // The recorder writes a written array's id and version only; the builder takes its dtype
        // and shape from an argument of that id, and an alias is none: it has its value's before.
        for (const auto& m : n.mutated) {
          Value& val = g_.values[m.value()];
          auto before = cur_.find(m.id());
          if (val.dtype != v1::DTYPE_UNSPECIFIED || before == cur_.end()) continue;
          val.dtype = g_.values[before->second].dtype;
          val.shape = g_.values[before->second].shape;
        }
        Carry(i, &after[i], carried);
      }
      for (ValueId v : n.outputs) Note(v);
      for (const Node& made : after[i]) {
        for (ValueId v : made.outputs) Note(v);
      }
      for (const auto& [tid, v] : derived_) cur_[tid] = v;
      derived_.clear();
    }
    ForEachTensorMutable(&g_.outputs, [&](v1::TensorRef* r) { RenameRef(r); });
    for (auto& guard : g_.guards) RenameRef(guard.mutable_tensor());
    if (*carried == 0) return Status::Ok();
    std::vector<Node, HugePageAllocator<Node>> nodes;
    nodes.reserve(n_nodes + made_);
    for (size_t i = 0; i < n_nodes; ++i) {
      nodes.push_back(std::move(g_.nodes[i]));
      for (Node& m : after[i]) nodes.push_back(std::move(m));
    }
    g_.nodes = std::move(nodes);
    g_.Compact();
    return Status::Ok();
  }

 private:
  struct Link {
    uint64_t parent;
    size_t node;
    size_t out;  // which result tensor of the view op
  };

  // The recorder's version of a value; for a value computed here, that of the alias it stands for.
  uint32_t Version(ValueId v) const {
    auto it = version_.find(v);
    return it != version_.end() ? it->second : g_.values[v].tensor_version;
  }

  void Note(ValueId v) {
    const Value& val = g_.values[v];
    auto it = cur_.find(val.tensor_id);
    if (it == cur_.end() || Version(it->second) <= Version(v)) cur_[val.tensor_id] = v;
  }

  void RenameRef(v1::TensorRef* r) {
    auto it = renamed_.find(r->value());
    if (it != renamed_.end()) r->set_value(it->second);
  }
  void Rename(v1::Arg* a) { ForEachTensorMutable(a, [&](v1::TensorRef* r) { RenameRef(r); }); }

  ValueId NewValue(const Value& like) {
    Value v;
    v.kind = v1::NODE_OUTPUT;
    v.dtype = like.dtype;
    v.shape = like.shape;
    v.tensor_id = kSyntheticId | ++synthetic_;
    v.storage = v.tensor_id;
    return g_.AddValue(std::move(v));
  }

  Node MakeNode(const std::string& op, const v1::SourceLocation& loc) {
    Node n;
    n.op = op;
    n.schema = SchemaRegistry::Default().Find(op);
    n.loc = loc;
    return n;
  }

  void Push(std::vector<Node>* out, Node n) {
    Graph::IndexNode(&n);
    g_.CountNode(n);
    out->push_back(std::move(n));
    ++made_;
  }

  // The view op of `link` run again on `parent`: the value of its output `link.out`.
  std::optional<ValueId> Replay(const Link& link, ValueId parent, const v1::SourceLocation& loc,
                                std::vector<Node>* out) {
    const Node& p = g_.nodes[link.node];
    if (!p.schema || p.args.empty()) return std::nullopt;
    Node n = MakeNode(p.op, loc);
    n.args = p.args;
    n.kwargs = p.kwargs;
    n.args[0] = TensorArgOf(g_, parent);
    for (auto& a : n.args) Rename(&a);
    for (auto& kw : n.kwargs) Rename(kw.mutable_value());
    n.result = p.result;
    std::optional<ValueId> wanted;
    size_t k = 0;
    ForEachTensorMutable(&n.result, [&](v1::TensorRef* r) {
      const ValueId v = NewValue(g_.values[r->value()]);
      if (k++ == link.out) wanted = v;
      r->set_value(v);
      r->set_id(g_.values[v].tensor_id);
      r->set_storage(g_.values[v].storage);
    });
    Push(out, std::move(n));
    return wanted;
  }

  // The new value of `link.parent` (at `parent_old` before the write) once its view `child` is
  // `child_new`.
  std::optional<ValueId> Invert(const Link& link, ValueId parent_old, ValueId child_new,
                                const v1::SourceLocation& loc, std::vector<Node>* out) {
    const Node& p = g_.nodes[link.node];
    const Value& parent = g_.values[parent_old];
    switch (KindOf(p.op)) {
      case Kind::kPermute: {
        auto perm = Permutation(p, parent.shape.size());
        if (!perm) return std::nullopt;
        v1::Arg axes;
        std::vector<int64_t> inv(perm->size());
        for (size_t i = 0; i < perm->size(); ++i) inv[(*perm)[i]] = static_cast<int64_t>(i);
        for (int64_t d : inv) axes.mutable_tuple()->add_items()->set_i(d);
        Node n = MakeNode("numpy.transpose", loc);
        n.args = {TensorArgOf(g_, child_new), axes};
        const ValueId v = NewValue(parent);
        n.result = TensorArgOf(g_, v);
        Push(out, std::move(n));
        return v;
      }
      case Kind::kReshape: {
        Node n = MakeNode("torch.Tensor.reshape_as", loc);
        n.args = {TensorArgOf(g_, child_new), TensorArgOf(g_, parent_old)};
        const ValueId v = NewValue(parent);
        n.result = TensorArgOf(g_, v);
        Push(out, std::move(n));
        return v;
      }
      case Kind::kSetItem: {
        if (p.args.size() != 2) return std::nullopt;
        Node copy = MakeNode("numpy.copy", loc);
        copy.args = {TensorArgOf(g_, parent_old)};
        const ValueId c = NewValue(parent);
        copy.result = TensorArgOf(g_, c);
        Push(out, std::move(copy));
        Node set = MakeNode("numpy.ndarray.__setitem__", loc);
        set.args = {TensorArgOf(g_, c), p.args[1], TensorArgOf(g_, child_new)};
        Rename(&set.args[1]);
        set.result.set_none(true);
        set.flags = v1::INPLACE;
        Value after = g_.values[c];
        after.tensor_version = 1;
        const ValueId v = g_.AddValue(after);
        set.mutated.push_back(TensorArgOf(g_, v).tensor());
        Push(out, std::move(set));
        return v;
      }
      case Kind::kSplit: {
        BoundCall call;
        if (!BoundCall::Bind(p, &call).ok()) return std::nullopt;
        auto axis = call.Int("axis");
        if (!axis) return std::nullopt;
        // The other pieces as they are now: the split run again on the parent before the write.
        const size_t pieces = ResultTensors(p).size();
        std::vector<ValueId> now;
        for (size_t k = 0; k < pieces; ++k) {
          if (k == link.out) {
            now.push_back(child_new);
            continue;
          }
          auto piece = Replay(Link{link.parent, link.node, k}, parent_old, loc, out);
          if (!piece) return std::nullopt;
          now.push_back(*piece);
        }
        Node n = MakeNode("numpy.concatenate", loc);
        v1::Arg list;
        for (ValueId v : now) *list.mutable_list()->add_items() = TensorArgOf(g_, v);
        v1::Arg ax;
        ax.set_i(*axis);
        n.args = {list, ax};
        const ValueId v = NewValue(parent);
        n.result = TensorArgOf(g_, v);
        Push(out, std::move(n));
        return v;
      }
      case Kind::kFlip:
        return Replay(link, child_new, loc, out);  // a flip is its own inverse
      case Kind::kOther: return std::nullopt;
    }
    return std::nullopt;
  }

  // Node i wrote through an array and NumPy listed every array on its memory: compute the others.
  void Carry(size_t i, std::vector<Node>* out, size_t* carried) {
    Node& n = g_.nodes[i];
    // The written array: the result when the call returns what it wrote (out=), else its first
    // argument (a[...] = v, np.copyto(a, b)).
    std::vector<uint64_t> written;
    for (ValueId v : ResultTensors(n)) written.push_back(g_.values[v].tensor_id);
    if (written.empty()) {
      // (The recorder's id in the argument: its value may be one computed here.)
      if (n.args.empty() || n.args[0].kind_case() != v1::Arg::kTensor) return;
      written.push_back(n.args[0].tensor().id());
    }
    std::unordered_map<uint64_t, ValueId> now;  // tensor id -> its value after the write
    std::vector<std::pair<size_t, ValueId>> aliases;  // (index in n.mutated, value)
    for (size_t k = 0; k < n.mutated.size(); ++k) {
      const ValueId v = n.mutated[k].value();
      const uint64_t tid = g_.values[v].tensor_id;
      if (std::find(written.begin(), written.end(), tid) != written.end()) {
        now[tid] = v;
      } else {
        aliases.emplace_back(k, v);
      }
    }
    if (aliases.empty() || now.size() != 1) return;
    const uint64_t w = now.begin()->first;
    const uint32_t version = Version(now.begin()->second);
    // Up the chain from the written array: each parent's new value from its child's.
    for (uint64_t child = w;;) {
      auto it = links_.find(child);
      if (it == links_.end()) break;
      const Link& link = it->second;
      auto old = cur_.find(link.parent);
      // The parent as it was just before this write (no write since it was last seen).
      if (old == cur_.end() || Version(old->second) + 1 != version) break;
      auto parent_new = Invert(link, old->second, now.at(child), n.loc, out);
      if (!parent_new) break;
      now[link.parent] = *parent_new;
      child = link.parent;
    }
    // Every other alias: its view ops replayed from the nearest array whose new value is known.
    std::vector<char> drop(n.mutated.size(), 0);
    for (const auto& [k, v] : aliases) {
      const uint64_t tid = g_.values[v].tensor_id;
      std::optional<ValueId> got;
      if (auto it = now.find(tid); it != now.end()) {
        got = it->second;
      } else {
        std::vector<const Link*> down;  // from tid up to a known array
        uint64_t at = tid;
        while (!now.count(at)) {
          auto it = links_.find(at);
          if (it == links_.end() || down.size() > 64) break;
          down.push_back(&it->second);
          at = it->second.parent;
        }
        if (now.count(at)) {
          std::optional<ValueId> value = now.at(at);
          for (size_t j = down.size(); j-- > 0 && value;) value = Replay(*down[j], *value, n.loc, out);
          if (value) now[tid] = *value;
          got = value;
        }
      }
      if (!got) continue;  // left to the exporter: refused if anything reads it
      Value& gv = g_.values[*got];
      const Value& orig = g_.values[v];
      if (gv.shape.empty() && !orig.shape.empty()) gv.shape = orig.shape;
      renamed_[v] = *got;
      version_[*got] = orig.tensor_version;
      derived_.emplace_back(tid, *got);
      drop[k] = 1;
      ++*carried;
    }
    std::vector<v1::TensorRef> kept;
    for (size_t k = 0; k < n.mutated.size(); ++k) {
      if (!drop[k]) kept.push_back(n.mutated[k]);
    }
    n.mutated = std::move(kept);
    Graph::IndexNode(&n);
  }

  Graph& g_;
  std::unordered_map<uint64_t, Link> links_;
  std::unordered_map<uint64_t, ValueId> cur_;       // tensor id -> its newest value so far
  std::unordered_map<ValueId, ValueId> renamed_;     // an alias's value -> the value computed for it
  std::vector<std::pair<uint64_t, ValueId>> derived_;
  std::unordered_map<ValueId, uint32_t> version_;
  uint64_t synthetic_ = 0;
  size_t made_ = 0;
};

}  // namespace

Status CarryNumpyWritesBack(Graph* g, size_t* carried) {
  *carried = 0;
  return Carrier(g).Run(carried);
}

}  // namespace ivytrace
