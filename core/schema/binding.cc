#include "core/schema/binding.h"

#include "core/ir/arg.h"

namespace ivytrace {

Status BoundCall::Bind(const Node& node, BoundCall* out) {
  if (!node.schema) return Status::Unsupported("op '" + node.op + "' has no schema");
  const v1::OpSchema& s = *node.schema;
  out->schema_ = &s;
  const int n = s.param_size();
  out->names_.assign(n, "");
  out->values_.assign(n, v1::Arg());
  out->present_.assign(n, false);
  for (int i = 0; i < n; ++i) out->names_[i] = s.param(i).name();

  int pos = 0;
  const int nargs = static_cast<int>(node.args.size());
  for (int i = 0; i < n && pos < nargs; ++i) {
    const v1::Param& p = s.param(i);
    if (p.keyword_only()) break;
    if (p.variadic()) {
      // f(*shape): f(2, 3) collects [2, 3]; f((2, 3)) passes the sequence itself.
      const v1::Arg& first = node.args[pos];
      if (nargs - pos == 1 &&
          (first.kind_case() == v1::Arg::kList || first.kind_case() == v1::Arg::kTuple)) {
        out->values_[i] = first;
      } else {
        auto* list = out->values_[i].mutable_list();
        for (; pos < nargs; ++pos) *list->add_items() = node.args[pos];
        pos = nargs;
        out->present_[i] = true;
        continue;
      }
      ++pos;
      out->present_[i] = true;
      continue;
    }
    out->values_[i] = node.args[pos++];
    out->present_[i] = true;
  }
  if (pos < nargs) {
    return Status::InvalidArgument("op '" + node.op + "' takes " + std::to_string(pos) +
                                   " positional arguments but " + std::to_string(nargs) +
                                   " were recorded");
  }
  for (const auto& kw : node.kwargs) {
    bool found = false;
    for (int i = 0; i < n; ++i) {
      if (out->names_[i] == kw.name()) {
        out->values_[i] = kw.value();
        out->present_[i] = true;
        found = true;
        break;
      }
    }
    if (!found) {
      return Status::InvalidArgument("op '" + node.op + "' has no parameter '" + kw.name() + "'");
    }
  }
  for (int i = 0; i < n; ++i) {
    if (out->present_[i]) continue;
    if (s.param(i).has_default_()) {
      out->values_[i] = s.param(i).default_();
      out->present_[i] = true;
    } else if (!s.param(i).variadic()) {
      return Status::InvalidArgument("op '" + node.op + "' is missing required argument '" +
                                     out->names_[i] + "'");
    }
  }
  return Status::Ok();
}

const v1::Arg* BoundCall::Get(std::string_view param) const {
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] == param) return present_[i] ? &values_[i] : nullptr;
  }
  return nullptr;
}

std::optional<int64_t> BoundCall::Int(std::string_view param) const {
  const v1::Arg* a = Get(param);
  return a ? AsInt(*a) : std::nullopt;
}

std::optional<double> BoundCall::Double(std::string_view param) const {
  const v1::Arg* a = Get(param);
  return a ? AsDouble(*a) : std::nullopt;
}

std::optional<bool> BoundCall::Bool(std::string_view param) const {
  const v1::Arg* a = Get(param);
  return a ? AsBool(*a) : std::nullopt;
}

std::optional<std::vector<int64_t>> BoundCall::IntList(std::string_view param, int broadcast) const {
  const v1::Arg* a = Get(param);
  return a ? AsIntList(*a, broadcast) : std::nullopt;
}

std::optional<ValueId> BoundCall::Tensor(std::string_view param) const {
  const v1::Arg* a = Get(param);
  if (!a || a->kind_case() != v1::Arg::kTensor) return std::nullopt;
  return a->tensor().value();
}

bool BoundCall::IsNone(std::string_view param) const {
  const v1::Arg* a = Get(param);
  return !a || ::ivytrace::IsNone(*a);
}

void BoundCall::Set(std::string_view param, v1::Arg value) {
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] == param) {
      values_[i] = std::move(value);
      present_[i] = true;
      return;
    }
  }
  names_.emplace_back(param);
  values_.push_back(std::move(value));
  present_.push_back(true);
}

}  // namespace ivytrace
