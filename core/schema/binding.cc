#include "core/schema/binding.h"

#include <algorithm>

#include <google/protobuf/util/message_differencer.h>

#include "core/ir/arg.h"

namespace ivytrace {
namespace {

// A given argument that means the default: the same Arg, the same number in another kind (1.0 for
// 1), or a list of the default (torch's dilation=(1, 1) for dilation=1).
bool MeansDefault(const v1::Arg& a, const v1::Arg& def) {
  if (google::protobuf::util::MessageDifferencer::Equals(a, def)) return true;
  if (a.kind_case() == v1::Arg::kList || a.kind_case() == v1::Arg::kTuple) {
    const auto& items = a.kind_case() == v1::Arg::kList ? a.list().items() : a.tuple().items();
    return !items.empty() && std::all_of(items.begin(), items.end(), [&](const v1::Arg& x) { return MeansDefault(x, def); });
  }
  if (HasTensor(a) || HasTensor(def)) return false;
  const auto x = AsDouble(a), y = AsDouble(def);
  return x && y && *x == *y && (a.kind_case() == v1::Arg::kB) == (def.kind_case() == v1::Arg::kB);
}

}  // namespace

Status BoundCall::Bind(const Node& node, BoundCall* out) {
  if (!node.schema) return Status::Unsupported("op '" + node.op + "' has no schema");
  const v1::OpSchema& s = *node.schema;
  out->schema_ = &s;
  const int n = s.param_size();
  out->names_.assign(n, "");
  out->values_.assign(n, v1::Arg());
  out->present_.assign(n, false);
  out->given_.assign(n, false);
  out->read_ = std::make_shared<std::vector<bool>>(n, false);
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
      const auto& aliases = s.param(i).alias();
      if (out->names_[i] == kw.name() ||
          std::find(aliases.begin(), aliases.end(), kw.name()) != aliases.end()) {
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
  for (int i = 0; i < n; ++i) out->given_[i] = out->present_[i];
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
    if (names_[i] == param) {
      if (read_ && i < read_->size()) (*read_)[i] = true;
      return present_[i] ? &values_[i] : nullptr;
    }
  }
  return nullptr;
}

std::vector<std::string> BoundCall::UnreadGiven() const {
  std::vector<std::string> out;
  if (!schema_) return out;
  for (size_t i = 0; i < given_.size() && i < static_cast<size_t>(schema_->param_size()); ++i) {
    if (!given_[i] || (read_ && (*read_)[i])) continue;
    const v1::Param& p = schema_->param(static_cast<int>(i));
    if (p.has_default_() && MeansDefault(values_[i], p.default_())) continue;
    out.push_back(names_[i]);
  }
  return out;
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
