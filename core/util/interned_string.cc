#include "core/util/interned_string.h"

#include <mutex>

#include <absl/container/node_hash_set.h>

namespace ivytrace {

const std::string& InternedString::EmptyString() {
  static const std::string* const kEmpty = Intern("");
  return *kEmpty;
}

// A node hash set: its strings never move, so the pointers handed out stay valid; they live until
// the process exits (op and file names are few). Locked: the recorder's Python extensions and
// tests may build graphs on several threads.
const std::string* InternedString::Intern(std::string_view s) {
  static std::mutex mu;
  static auto* const strings = new absl::node_hash_set<std::string>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = strings->find(absl::string_view(s.data(), s.size()));  // absl's own view type here
  if (it == strings->end()) it = strings->emplace(s).first;
  return &*it;
}

}  // namespace ivytrace
