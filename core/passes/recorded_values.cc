#include "core/passes/recorded_values.h"

#include <cstring>

#include <unordered_map>

namespace ivytrace {

std::unordered_set<uint64_t> CallerVisibleStorage(const Graph& g) {
  std::unordered_set<uint64_t> out;
  for (const Value& v : g.values) {
    if ((v.kind == v1::INPUT || v.kind == v1::CONSTANT_VALUE) && v.storage != 0) out.insert(v.storage);
  }
  return out;
}

bool WrittenStorage::Contains(uint64_t storage) {
  if (!set_) {
    set_.emplace();
    for (const Node& n : g_.nodes) {
      if (n.erased || !n.writes) continue;
      for (const auto& m : n.mutated) set_->insert(m.storage());
    }
  }
  return set_->count(storage) > 0;
}

bool HasRecordedOutputs(const Graph& g, const Node& n, uint64_t size_limit) {
  if (n.outputs.empty()) return false;
  for (ValueId out : n.outputs) {
    const Value& v = g.values[out];
    if (v.recorded < 0 || static_cast<size_t>(v.recorded) >= g.constants.size()) return false;
    if (size_limit && g.constants[v.recorded].data().size() > size_limit) return false;
  }
  return true;
}

std::vector<int> LaterInPlaceWriters(const Graph& g, const std::vector<char>& replace) {
  // Storage -> first node that stays and writes it, scanning backwards so "later" holds.
  std::vector<int> out(g.nodes.size(), -1);
  std::unordered_map<uint64_t, int> writer;
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    if (n.erased) continue;
    if (replace[i]) {
      for (ValueId v : n.outputs) {
        auto it = writer.find(g.values[v].storage);
        if (g.values[v].storage != 0 && it != writer.end()) out[i] = it->second;
      }
      continue;
    }
    if (!n.writes) continue;
    for (const auto& m : n.mutated) {
      if (m.storage() != 0) writer[m.storage()] = static_cast<int>(i);
    }
  }
  return out;
}

void ReplaceByRecordedValues(Graph* g, size_t i) {
  Node& n = g->nodes[i];
  for (ValueId out : n.outputs) {
    Value& v = g->values[out];
    v.kind = v1::CONSTANT_VALUE;
    v.constant = v.recorded;
    v.recorded = -1;
    v.producer = -1;
  }
  n.erased = true;
}

std::optional<int64_t> RecordedScalar(const Graph& g, ValueId v) {
  if (v >= g.values.size()) return std::nullopt;
  const Value& val = g.values[v];
  if (val.recorded < 0 || static_cast<size_t>(val.recorded) >= g.constants.size()) return std::nullopt;
  const std::string& data = g.constants[val.recorded].data();
  if (data.size() == 8) {
    int64_t x;
    std::memcpy(&x, data.data(), 8);  // little-endian, as every value in a trace
    return x;
  }
  if (data.size() == 1) return static_cast<int64_t>(static_cast<uint8_t>(data[0]) != 0);
  return std::nullopt;
}

}  // namespace ivytrace
