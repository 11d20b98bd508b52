// Operator schemas from schemas/ (embedded at build time): look-up by qualified op name.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/util/status.h"
#include "ivytrace/v1/schema.pb.h"

namespace ivytrace {

class SchemaRegistry {
 public:
  // The registry built from the embedded schema files. Aborts at start-up if they do not parse
  // (a build defect, caught by the tests).
  static const SchemaRegistry& Default();

  // Parses text-format SchemaFile contents; `origin` names the file in error messages.
  Status AddFile(std::string_view origin, std::string_view text);

  // Null when no schema covers `qualified_name`.
  const v1::OpSchema* Find(std::string_view qualified_name) const;
  bool IsAllowedSymbol(std::string_view symbol) const;
  // Whether `target`'s schema file has a TargetImpl of canonical op `canonical` for ops recorded
  // in framework `source` (retargeting; the impl's argument conditions are checked at load time).
  bool HasImpl(std::string_view target, std::string_view canonical, std::string_view source) const;
  bool IsFramework(std::string_view framework) const;
  size_t size() const { return by_name_.size(); }
  const std::vector<v1::SchemaFile>& files() const { return files_; }

  static bool IsPure(const v1::OpSchema& s) { return !s.random() && !s.side_effect() && s.writes() == 0; }

 private:
  std::vector<v1::SchemaFile> files_;
  std::unordered_map<std::string, const v1::OpSchema*> by_name_;
  std::unordered_set<std::string> symbols_;
  std::unordered_set<std::string> impls_;  // "target|canonical|source", source "" = any
  std::unordered_set<std::string> frameworks_;
};

}  // namespace ivytrace
