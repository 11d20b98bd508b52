#include "core/schema/schema_registry.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <cstdio>
#include <cstdlib>

namespace ivytrace {

// Defined in the build's generated schemas_embedded.cc (cmake/embed_schemas.cmake).
const std::vector<std::pair<std::string_view, std::string_view>>& EmbeddedSchemaFiles();

namespace {

// Collects text-format parse errors with line and column instead of printing them to stderr.
class CollectingErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (first.empty()) {
      first = "line " + std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " + message;
    }
  }
  std::string first;
};

}  // namespace

const SchemaRegistry& SchemaRegistry::Default() {
  static const SchemaRegistry* registry = [] {
    auto* r = new SchemaRegistry();
    for (const auto& [name, text] : EmbeddedSchemaFiles()) {
      Status st = r->AddFile(name, text);
      if (!st.ok()) {
        std::fprintf(stderr, "ivytrace: built-in schema is invalid: %s\n", st.ToString().c_str());
        std::abort();
      }
    }
    return r;
  }();
  return *registry;
}

Status SchemaRegistry::AddFile(std::string_view origin, std::string_view text) {
  v1::SchemaFile file;
  google::protobuf::TextFormat::Parser parser;
  CollectingErrors errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(std::string(text), &file)) {
    return Status::Corruption("schema file '" + std::string(origin) + "': " + errors.first);
  }
  files_.push_back(std::move(file));
  // Pointers into files_ must stay valid: rebuild the index over every file.
  by_name_.clear();
  symbols_.clear();
  impls_.clear();
  frameworks_.clear();
  for (const auto& f : files_) {
    if (!f.framework().empty()) frameworks_.insert(f.framework());
    for (const auto& impl : f.impl()) {
      for (const auto& c : impl.canonical()) {
        if (impl.source().empty()) impls_.insert(f.framework() + "|" + c + "|");
        for (const auto& src : impl.source()) impls_.insert(f.framework() + "|" + c + "|" + src);
      }
    }
    for (const auto& op : f.op()) {
      for (const auto& n : op.name()) {
        if (!by_name_.emplace(n, &op).second) {
          return Status::Corruption("schema file '" + std::string(origin) + "': op '" + n +
                                    "' is defined twice");
        }
      }
    }
    for (const auto& s : f.symbol()) symbols_.insert(s);
  }
  return Status::Ok();
}

const v1::OpSchema* SchemaRegistry::Find(std::string_view qualified_name) const {
  auto it = by_name_.find(std::string(qualified_name));
  return it == by_name_.end() ? nullptr : it->second;
}

bool SchemaRegistry::IsAllowedSymbol(std::string_view symbol) const {
  return symbols_.count(std::string(symbol)) > 0;
}

bool SchemaRegistry::HasImpl(std::string_view target, std::string_view canonical, std::string_view source) const {
  std::string key = std::string(target) + "|" + std::string(canonical) + "|";
  return impls_.count(key) > 0 || impls_.count(key + std::string(source)) > 0;
}

bool SchemaRegistry::IsFramework(std::string_view framework) const {
  return frameworks_.count(std::string(framework)) > 0;
}

}  // namespace ivytrace
