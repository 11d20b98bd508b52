#include "core/passes/value_renames.h"

#include <algorithm>
#include <numeric>

#include "core/ir/arg.h"

namespace ivytrace {

void ValueRenames::Set(ValueId from, ValueId to) {
  const size_t old = to_.size();
  if (from >= old) {
    to_.resize(static_cast<size_t>(from) + 1);
    std::iota(to_.begin() + static_cast<std::ptrdiff_t>(old), to_.end(), static_cast<ValueId>(old));
  }
  to_[from] = to;
}

void ValueRenames::ApplyTo(Node* n) const {
  if (to_.empty() ||
      std::none_of(n->inputs.begin(), n->inputs.end(), [&](ValueId v) { return (*this)(v) != v; })) {
    return;
  }
  auto apply = [&](v1::TensorRef* r) { r->set_value((*this)(r->value())); };
  for (auto& a : n->args) ForEachTensorMutable(&a, apply);
  for (auto& k : n->kwargs) ForEachTensorMutable(k.mutable_value(), apply);
  Graph::IndexNode(n);
}

void ValueRenames::ApplyToResultsAndGuards(Graph* g) const {
  if (to_.empty()) return;
  auto apply = [&](v1::TensorRef* r) { r->set_value((*this)(r->value())); };
  ForEachTensorMutable(&g->outputs, apply);
  for (auto& guard : g->guards) apply(guard.mutable_tensor());
}

}  // namespace ivytrace
