#include "core/passes/common_subexpression_elimination.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/ir/arg.h"
#include "core/schema/schema_registry.h"

namespace ivytrace {
namespace {

bool Mergeable(const Node& n) {
  return !n.erased && n.schema && SchemaRegistry::IsPure(*n.schema) && n.mutated.empty() &&
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
  return n.op + '\0' + call.SerializeAsString();
}

std::vector<ValueId> ResultValues(const Node& n) {
  std::vector<ValueId> out;
  ForEachTensor(n.result, [&](const v1::TensorRef& r) { out.push_back(r.value()); });
  return out;
}

}  // namespace

Status CommonSubexpressionElimination::Run(Graph* g, PassResult* result) {
  // Which nodes write each storage in place.
  std::unordered_map<uint64_t, std::vector<size_t>> writes;
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    if (g->nodes[i].erased) continue;
    for (const auto& m : g->nodes[i].mutated) writes[m.storage()].push_back(i);
  }
  auto written = [&](uint64_t storage) { return storage != 0 && writes.count(storage); };
  auto written_between = [&](uint64_t storage, size_t from, size_t to) {
    auto it = writes.find(storage);
    if (storage == 0 || it == writes.end()) return false;
    return std::any_of(it->second.begin(), it->second.end(), [&](size_t w) { return w > from && w < to; });
  };
  std::unordered_set<ValueId> region_outputs;
  for (ValueId v : g->OutputValues()) region_outputs.insert(v);

  std::vector<ValueId> rename(g->values.size());
  for (size_t v = 0; v < rename.size(); ++v) rename[v] = static_cast<ValueId>(v);
  bool renamed = false;
  auto apply = [&](v1::TensorRef* r) { r->set_value(rename[r->value()]); };
  // The first node of each call key: an open-addressed table of (key hash, node index + 1), no
  // key strings kept; a hit is confirmed by comparing the keys.
  size_t slots = 16;
  while (slots < 2 * g->nodes.size()) slots *= 2;
  std::vector<std::pair<size_t, size_t>> first(slots, {0, 0});
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    Node& n = g->nodes[i];
    if (n.erased) continue;
    if (renamed) {
      for (auto& a : n.args) ForEachTensorMutable(&a, apply);
      for (auto& k : n.kwargs) ForEachTensorMutable(k.mutable_value(), apply);
      Graph::IndexNode(&n);
    }
    if (!Mergeable(n)) continue;
    const std::string key = CallKey(n);
    const size_t h = std::hash<std::string>()(key);
    size_t e = SIZE_MAX;
    for (size_t s = h & (slots - 1);; s = (s + 1) & (slots - 1)) {
      if (first[s].second == 0) {
        first[s] = {h, i + 1};
        break;
      }
      if (first[s].first == h && CallKey(g->nodes[first[s].second - 1]) == key) {
        e = first[s].second - 1;
        break;
      }
    }
    if (e == SIZE_MAX) continue;
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
    for (size_t k = 0; k < mine.size(); ++k) rename[mine[k]] = theirs[k];
    renamed = true;
    n.erased = true;
    ++result->nodes_removed;
  }
  if (renamed) {
    ForEachTensorMutable(&g->outputs, apply);
    for (auto& guard : g->guards) apply(guard.mutable_tensor());
  }
  return Status::Ok();
}

}  // namespace ivytrace
