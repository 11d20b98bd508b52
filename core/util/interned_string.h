// Strings kept once for the whole process: the graph's op names and source file names. A trace
// of a million ops names a few hundred ops and files; as std::string (op) and a
// v1::SourceLocation (file) every node held its own heap copies of both, ~110 bytes and three
// allocations per node, and the fields took 56 of the node's bytes. An InternedString is one
// pointer to the process's single copy; it reads as a const std::string&, so code that reads
// `node.op` or `node.loc.file()` is unchanged, and assigning any string interns it.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include "ivytrace/v1/common.pb.h"

namespace ivytrace {

class InternedString {
 public:
  InternedString() : s_(&EmptyString()) {}
  InternedString(std::string_view s) : s_(Intern(s)) {}      // NOLINT: implicit, interns
  InternedString(const std::string& s) : s_(Intern(s)) {}    // NOLINT
  InternedString(const char* s) : s_(Intern(s)) {}           // NOLINT

  operator const std::string&() const { return *s_; }        // NOLINT: reads as the string
  operator std::string_view() const { return *s_; }          // NOLINT
  const std::string& str() const { return *s_; }

  bool empty() const { return s_->empty(); }
  size_t size() const { return s_->size(); }
  const char* c_str() const { return s_->c_str(); }
  const char* data() const { return s_->data(); }
  size_t find(std::string_view x, size_t pos = 0) const { return s_->find(x, pos); }
  size_t find(char c, size_t pos = 0) const { return s_->find(c, pos); }
  size_t rfind(std::string_view x, size_t pos = std::string::npos) const { return s_->rfind(x, pos); }
  size_t rfind(char c, size_t pos = std::string::npos) const { return s_->rfind(c, pos); }
  std::string substr(size_t pos = 0, size_t n = std::string::npos) const { return s_->substr(pos, n); }
  int compare(std::string_view x) const { return std::string_view(*s_).compare(x); }

  // Equal strings are the same pointer (one copy per process).
  friend bool operator==(InternedString a, InternedString b) { return a.s_ == b.s_; }
  friend bool operator==(InternedString a, const std::string& b) { return *a.s_ == b; }
  friend bool operator==(InternedString a, std::string_view b) { return *a.s_ == b; }
  friend bool operator==(InternedString a, const char* b) { return *a.s_ == b; }
  friend bool operator<(InternedString a, InternedString b) { return *a.s_ < *b.s_; }

  friend std::string operator+(InternedString a, std::string_view b) { return *a.s_ + std::string(b); }
  friend std::string operator+(InternedString a, const std::string& b) { return *a.s_ + b; }
  friend std::string operator+(InternedString a, const char* b) { return *a.s_ + b; }
  friend std::string operator+(const std::string& a, InternedString b) { return a + *b.s_; }
  friend std::string operator+(std::string&& a, InternedString b) { return std::move(a) + *b.s_; }
  friend std::string operator+(const char* a, InternedString b) { return a + *b.s_; }

  friend std::ostream& operator<<(std::ostream& os, InternedString s) { return os << *s.s_; }

  template <typename H>
  friend H AbslHashValue(H h, InternedString s) {
    return H::combine(std::move(h), *s.s_);
  }

 private:
  static const std::string& EmptyString();
  static const std::string* Intern(std::string_view s);
  const std::string* s_;
};

// Where a node's call was made: v1::SourceLocation's fields and accessors, with the file name
// interned (16 bytes instead of a message and a heap string per node). Converts to and from the
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
