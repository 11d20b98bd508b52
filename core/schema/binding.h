// Binding a call's positional and keyword arguments to its schema's parameters, the way Python
// would: lowerings and passes then ask for parameters by name instead of by position.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ir/graph.h"
#include "core/util/status.h"

namespace ivytrace {

class BoundCall {
 public:
  // Binds `node` against `node.schema`. Fails when the node has no schema, too many positionals,
  // an unknown keyword, or a missing required parameter.
  static Status Bind(const Node& node, BoundCall* out);

  // The argument for `param` (the call's or the default); null when the parameter does not exist.
  // A variadic parameter binds to a list Arg (a single list/tuple positional is used as is).
  const v1::Arg* Get(std::string_view param) const;
  bool Has(std::string_view param) const { return Get(param) != nullptr; }
  // Convenience: nullopt when missing or of another kind.
  std::optional<int64_t> Int(std::string_view param) const;
  std::optional<double> Double(std::string_view param) const;
  std::optional<bool> Bool(std::string_view param) const;
  std::optional<std::vector<int64_t>> IntList(std::string_view param, int broadcast = 0) const;
  // The value id of a tensor parameter; nullopt when it is not a single tensor.
  std::optional<ValueId> Tensor(std::string_view param) const;
  bool IsNone(std::string_view param) const;
  // Sets `param` to `value`, adding the parameter when the schema has none of that name. The ONNX
  // exporter uses it to normalize a framework's arguments into the canonical op's parameters.
  void Set(std::string_view param, v1::Arg value);

  const v1::OpSchema& schema() const { return *schema_; }

  // The parameters the call gave a value other than their default that nothing has asked for
  // (Get and the helpers above count as asking). The ONNX exporter refuses a lowering that left one
  // unread: an argument a lowering does not read would otherwise be dropped without a word.
  std::vector<std::string> UnreadGiven() const;

 private:
  const v1::OpSchema* schema_ = nullptr;
  std::vector<std::string> names_;
  std::vector<v1::Arg> values_;  // owned copies: variadics are assembled here
  std::vector<bool> present_;
  std::vector<bool> given_;        // the call passed it (not the schema's default, not Set)
  // Shared by copies: a lowering that copies the call (to Set a parameter) and reads the copy has
  // read the original's parameters.
  std::shared_ptr<std::vector<bool>> read_;
};

}  // namespace ivytrace
