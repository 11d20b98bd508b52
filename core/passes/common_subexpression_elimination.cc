#include "core/passes/common_subexpression_elimination.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/ir/arg.h"
#include "core/passes/value_renames.h"
#include "core/schema/schema_registry.h"

namespace ivytrace {
namespace {

bool Mergeable(const Node& n) {
  return !n.erased && n.schema && SchemaRegistry::IsPure(*n.schema) && !n.writes &&
         !(n.flags & (v1::RANDOM | v1::INPLACE)) && !n.outputs.empty() && !n.inputs.empty();
}

// Appends one argument to a call key: a top-level tensor as its value id, a tree without
// tensors as its bytes (length-prefixed); false for a tree holding tensors deeper down.
bool AppendArg(const v1::Arg& a, std::string* key) {
  if (a.kind_case() == v1::Arg::kTensor) {
    const ValueId v = a.tensor().value();
    key->push_back('T');
    key->append(reinterpret_cast<const char*>(&v), sizeof(v));
    return true;
  }
  if (a.kind_case() == v1::Arg::kF || a.kind_case() == v1::Arg::kI) {
    const double f = a.f();
    const int64_t i = a.i();
    key->push_back(a.kind_case() == v1::Arg::kF ? 'F' : 'I');
    if (a.kind_case() == v1::Arg::kF) key->append(reinterpret_cast<const char*>(&f), sizeof(f));
    else key->append(reinterpret_cast<const char*>(&i), sizeof(i));
    return true;
  }
  if (HasTensor(a)) return false;
  const std::string bytes = a.SerializeAsString();
  const uint32_t size = static_cast<uint32_t>(bytes.size());
  key->push_back('A');
  key->append(reinterpret_cast<const char*>(&size), sizeof(size));
  key->append(bytes);
  return true;
}

// The call as data: op, then arguments with tensors reduced to their (renamed) value ids.
std::string CallKey(const Node& n) {
  // Fast path: no tensors nested inside containers.
  std::string key = n.op;
  key.push_back('\1');
  bool flat = true;
  for (const auto& a : n.args) flat = flat && AppendArg(a, &key);
  for (const auto& k : n.kwargs) {
    if (!flat) break;
    key.push_back('K');
    key.append(k.name());
    key.push_back('\0');
    flat = AppendArg(k.value(), &key);
  }
  if (flat) return key;
  v1::OpEvent call;  // a convenient container for args and kwargs
  for (const auto& a : n.args) *call.add_args() = a;
  for (const auto& k : n.kwargs) *call.add_kwargs() = k;
  auto strip = [](v1::TensorRef* r) {
    const ValueId v = r->value();
    r->Clear();
    r->set_value(v);
  };
  for (auto& a : *call.mutable_args()) ForEachTensorMutable(&a, strip);
  for (auto& k : *call.mutable_kwargs()) ForEachTensorMutable(k.mutable_value(), strip);
  return n.op.str() + '\0' + call.SerializeAsString();
}

std::vector<ValueId> ResultValues(const Node& n) {
  std::vector<ValueId> out;
  ForEachTensor(n.result, [&](const v1::TensorRef& r) { out.push_back(r.value()); });
  return out;
}

}  // namespace

Status CommonSubexpressionElimination::Run(Graph* g, PassResult* result) {
  // Which nodes write each storage in place: needed only once two calls match, so it is worked
  // out then (a graph without duplicates is walked once, not twice). In-place writes are never
  // merged and merging renames only results of pure calls, so this does not change during the pass.
  std::unordered_map<uint64_t, std::vector<size_t>> writes;
  bool writes_known = false;
  auto writes_of = [&](uint64_t storage) {
    if (!writes_known) {
      for (size_t i = 0; i < g->nodes.size(); ++i) {
        if (g->nodes[i].erased || !g->nodes[i].writes) continue;
        for (const auto& m : g->nodes[i].mutated) writes[m.storage()].push_back(i);
      }
      writes_known = true;
    }
    return writes.find(storage);
  };
  auto written = [&](uint64_t storage) { return storage != 0 && writes_of(storage) != writes.end(); };
  auto written_between = [&](uint64_t storage, size_t from, size_t to) {
    if (storage == 0) return false;
    auto it = writes_of(storage);
    if (it == writes.end()) return false;
    return std::any_of(it->second.begin(), it->second.end(), [&](size_t w) { return w > from && w < to; });
  };
  std::unordered_set<ValueId> region_outputs;
  for (ValueId v : g->OutputValues()) region_outputs.insert(v);

  ValueRenames renames;
  // Finding the first earlier node with the same call. Two calls can only be equal if they read
  // the same first input, so candidates are looked up by that value: the first kChain pure
  // users of each value sit in a per-value list (walked oldest first), and only users beyond
  // those go into a hash table of (call-key hash, node). On a long graph this keeps the lookup
  // near the value's producer in memory: a table with a slot per node (the previous scheme) made
  // every node a random access into a table larger than the cache. A candidate is confirmed by
  // comparing op and inputs, then the full call keys (this node's built once). A list's length
  // and tail come from walking it (at most kChain links), so each value costs one int: at a
  // million values the pass's tables are 8 MB, not 20.
  constexpr uint32_t kChain = 8;
  constexpr int32_t kNone = -1;
  std::vector<int32_t> chain_head(g->values.size(), kNone);
  std::vector<int32_t> chain_next(g->nodes.size(), kNone);
  std::unordered_multimap<size_t, size_t> overflow;  // call-key hash -> node, for busy values
  std::optional<std::string> key;  // CallKey of the node being looked up, once needed
  auto same_call = [&](const Node& earlier, const Node& n) {
    if (earlier.op != n.op || earlier.inputs != n.inputs) return false;
    if (!key) key = CallKey(n);
    return CallKey(earlier) == *key;
  };
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    g->Prefetch(i + Graph::kPrefetchDistance);
    Node& n = g->nodes[i];
    if (n.erased) continue;
    renames.ApplyTo(&n);
    if (!Mergeable(n)) continue;
    key.reset();
    const ValueId first_in = n.inputs.front();
    size_t e = SIZE_MAX;
    int32_t tail = kNone;
    uint32_t len = 0;
    for (int32_t c = chain_head[first_in]; c != kNone; c = chain_next[c], ++len) {
      tail = c;
      if (same_call(g->nodes[c], n)) {
        e = static_cast<size_t>(c);
        break;
      }
    }
    size_t key_hash = 0;
    if (e == SIZE_MAX && len >= kChain) {
      if (!key) key = CallKey(n);
      key_hash = std::hash<std::string>()(*key);
      auto [lo, hi] = overflow.equal_range(key_hash);
      for (auto it = lo; it != hi && e == SIZE_MAX; ++it) {
        if (same_call(g->nodes[it->second], n)) e = it->second;
      }
    }
    if (e == SIZE_MAX) {  // the first of its kind: later calls may merge into it
      if (len < kChain) {
        (tail == kNone ? chain_head[first_in] : chain_next[tail]) = static_cast<int32_t>(i);
      } else {
        overflow.emplace(key_hash, i);
      }
      continue;
    }
    const std::vector<ValueId> mine = ResultValues(n), theirs = ResultValues(g->nodes[e]);
    bool ok = mine.size() == theirs.size();
    for (size_t k = 0; ok && k < mine.size(); ++k) {
      const Value& a = g->values[mine[k]];
      const Value& b = g->values[theirs[k]];
      ok = a.dtype == b.dtype && a.shape == b.shape && !written(a.storage) && !written(b.storage) &&
           !(region_outputs.count(mine[k]) && region_outputs.count(theirs[k]));
    }
    for (ValueId in : n.inputs) ok = ok && !written_between(g->values[in].storage, e, i);
    if (!ok) continue;
    for (size_t k = 0; k < mine.size(); ++k) renames.Set(mine[k], theirs[k]);
    n.erased = true;
    ++result->nodes_removed;
  }
  renames.ApplyToResultsAndGuards(g);
  return Status::Ok();
}

}  // namespace ivytrace
