#include "core/util/interned_string.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include <absl/container/flat_hash_map.h>

namespace ivytrace {

const std::string** InternedString::chunks_[InternedString::kMaxChunks] = {};

const std::string& InternedString::EmptyString() {
  static const std::string* const kEmpty = new std::string();
  return *kEmpty;
}

// The strings live until the process exits (op and file names and scopes are few); each is
// allocated on its own, so the table's pointers stay valid. Locked: the recorder's Python
// extensions and tests may build graphs on several threads. Number 0 is "" without a lookup.
uint32_t InternedString::Intern(std::string_view s) {
  if (s.empty()) return 0;
  static std::mutex mu;
  static auto* const numbers = new absl::flat_hash_map<absl::string_view, uint32_t>();
  static uint32_t next = 1;
  std::lock_guard<std::mutex> lock(mu);
  auto it = numbers->find(absl::string_view(s.data(), s.size()));  // absl's own view type here
  if (it != numbers->end()) return it->second;
  const uint32_t id = next;
  if (id == 0) {  // 2^32 - 1 distinct strings: the numbers ran out
    fprintf(stderr, "ivytrace: more than 4294967295 distinct interned strings\n");
    std::abort();
  }
  const std::string**& chunk = chunks_[id >> kChunkBits];
  if (chunk == nullptr) chunk = new const std::string*[size_t{1} << kChunkBits]();
  const auto* str = new std::string(s);
  chunk[id & kChunkMask] = str;
  numbers->emplace(absl::string_view(*str), id);
  ++next;
  return id;
}

}  // namespace ivytrace
