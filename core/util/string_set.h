// A set of strings that keeps each one once, in large blocks, for the lifetime of the set.
//
// Exporters name every value and node of a graph that may have millions of them. A
// std::unordered_set<std::string> pays a heap node per entry, a heap buffer per name longer than
// the small-string buffer, and a rehash that touches every node as it grows: at a million ONNX
// nodes that was 15% of `export --to onnx`. Here the characters go into a monotonic buffer
// (std::pmr, freed all at once) and the set is an open-addressing absl table of string_views
// into it, so a name costs its characters plus 16 bytes of table, and the views stay valid for
// the set's lifetime (callers keep them instead of copies).
#pragma once

#include <cstddef>
#include <memory_resource>
#include <string_view>
#include <utility>

#include <absl/container/flat_hash_set.h>

namespace ivytrace {

class StringSet {
 public:
  StringSet() = default;
  StringSet(const StringSet&) = delete;
  StringSet& operator=(const StringSet&) = delete;

  // Inserts `s` if absent. Returns the stored copy (valid while the set lives) and whether `s`
  // was new.
  std::pair<std::string_view, bool> Insert(std::string_view s) {
    bool added = false;
    auto it = set_.lazy_emplace(s, [&](const auto& construct) {  // one probe, not find + insert
      added = true;
      construct(Store(s));
    });
    return {*it, added};
  }
  bool Contains(std::string_view s) const { return set_.contains(s); }
  // A copy of `s` that lives as long as the set, without making it a member.
  std::string_view Store(std::string_view s) {
    if (s.empty()) return {};
    char* p = static_cast<char*>(chars_.allocate(s.size(), 1));
    s.copy(p, s.size());
    return {p, s.size()};
  }
  void Reserve(size_t n) { set_.reserve(n); }
  size_t size() const { return set_.size(); }

 private:
  std::pmr::monotonic_buffer_resource chars_{size_t{1} << 16};
  absl::flat_hash_set<std::string_view> set_;
};

}  // namespace ivytrace
