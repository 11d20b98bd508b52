// Strings kept once for the whole process: the graph's op names, source file names and module
// scopes. A trace of a million ops names a few hundred ops, files and scopes; as std::string (op,
// scope) and a v1::SourceLocation (file) every node held its own heap copies of them, ~110 bytes
// and three allocations per node, and the fields took 88 of the node's bytes. An InternedString
// is a 32-bit number naming the process's single copy (4 bytes: a node holds three of them, and
// with pointers it did not fit three cache lines); it reads as a const std::string&, so code that
// reads `node.op` or `node.loc.file()` is unchanged, and assigning any string interns it.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include "ivytrace/v1/common.pb.h"

namespace ivytrace {

class InternedString {
 public:
  InternedString() = default;                                // ""
  InternedString(std::string_view s) : id_(Intern(s)) {}     // NOLINT: implicit, interns
  InternedString(const std::string& s) : id_(Intern(s)) {}   // NOLINT
  InternedString(const char* s) : id_(Intern(s)) {}          // NOLINT

  operator const std::string&() const { return str(); }      // NOLINT: reads as the string
  operator std::string_view() const { return str(); }        // NOLINT
  const std::string& str() const { return id_ == 0 ? EmptyString() : *chunks_[id_ >> kChunkBits][id_ & kChunkMask]; }

  bool empty() const { return id_ == 0; }  // "" is always number 0
  size_t size() const { return str().size(); }
  const char* c_str() const { return str().c_str(); }
  const char* data() const { return str().data(); }
  size_t find(std::string_view x, size_t pos = 0) const { return str().find(x, pos); }
  size_t find(char c, size_t pos = 0) const { return str().find(c, pos); }
  size_t rfind(std::string_view x, size_t pos = std::string::npos) const { return str().rfind(x, pos); }
  size_t rfind(char c, size_t pos = std::string::npos) const { return str().rfind(c, pos); }
  std::string substr(size_t pos = 0, size_t n = std::string::npos) const { return str().substr(pos, n); }
  int compare(std::string_view x) const { return std::string_view(str()).compare(x); }

  // Equal strings are the same number (one copy per process).
  friend bool operator==(InternedString a, InternedString b) { return a.id_ == b.id_; }
  friend bool operator==(InternedString a, const std::string& b) { return a.str() == b; }
  friend bool operator==(InternedString a, std::string_view b) { return a.str() == b; }
  friend bool operator==(InternedString a, const char* b) { return a.str() == b; }
  friend bool operator<(InternedString a, InternedString b) { return a.str() < b.str(); }

  friend std::string operator+(InternedString a, std::string_view b) { return a.str() + std::string(b); }
  friend std::string operator+(InternedString a, const std::string& b) { return a.str() + b; }
  friend std::string operator+(InternedString a, const char* b) { return a.str() + b; }
  friend std::string operator+(const std::string& a, InternedString b) { return a + b.str(); }
  friend std::string operator+(std::string&& a, InternedString b) { return std::move(a) + b.str(); }
  friend std::string operator+(const char* a, InternedString b) { return a + b.str(); }

  friend std::ostream& operator<<(std::ostream& os, InternedString s) { return os << s.str(); }

  template <typename H>
  friend H AbslHashValue(H h, InternedString s) {
    return H::combine(std::move(h), s.str());
  }

 private:
  // The table: chunks of pointers to the strings, each chunk allocated once and never moved, so
  // reading needs no lock (a number is handed out only after its slot is written, under the lock
  // Intern takes; whoever holds the number got it through that lock or from a thread that did).
  static constexpr uint32_t kChunkBits = 12;
  static constexpr uint32_t kChunkMask = (1u << kChunkBits) - 1;
  static constexpr uint32_t kMaxChunks = 1u << (32 - kChunkBits);  // every uint32 (8 MB of address space)
  static const std::string& EmptyString();
  static uint32_t Intern(std::string_view s);
  static const std::string** chunks_[kMaxChunks];
  uint32_t id_ = 0;
};
static_assert(sizeof(InternedString) == 4);

// Where a node's call was made: v1::SourceLocation's fields and accessors, with the file name
// interned (8 bytes instead of a message and a heap string per node). Converts to and from the
// message for the file formats.
struct SourceLoc {
  InternedString file_;
  uint32_t line_ = 0;

  SourceLoc() = default;
  SourceLoc(const v1::SourceLocation& loc) : file_(loc.file()), line_(loc.line()) {}  // NOLINT: implicit
  operator v1::SourceLocation() const {                                                 // NOLINT
    v1::SourceLocation loc;
    loc.set_file(file_.str());
    loc.set_line(line_);
    return loc;
  }

  const std::string& file() const { return file_; }
  uint32_t line() const { return line_; }
  void set_file(InternedString f) { file_ = f; }
  void set_line(uint32_t l) { line_ = l; }
  void clear_file() { file_ = InternedString(); }
};

}  // namespace ivytrace
