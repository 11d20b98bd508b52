// Errors as values (after LevelDB's Status): a kind and a message. Corrupt input, a missing file or
// an op that cannot be exported are normal, reported outcomes, never crashes.
#pragma once

#include <string>
#include <utility>

namespace ivytrace {

class Status {
 public:
  enum class Kind {
    kOk,
    kInvalidArgument,  // the caller asked for something that makes no sense
    kNotFound,         // a file or name does not exist
    kCorruption,       // input exists but is not what it claims to be (bad magic, torn record)
    kIOError,          // the operating system refused a read or write
    kUnsupported,      // valid input that this tool cannot handle (e.g. an op without lowering)
  };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) { return Status(Kind::kInvalidArgument, std::move(m)); }
  static Status NotFound(std::string m) { return Status(Kind::kNotFound, std::move(m)); }
  static Status Corruption(std::string m) { return Status(Kind::kCorruption, std::move(m)); }
  static Status IOError(std::string m) { return Status(Kind::kIOError, std::move(m)); }
  static Status Unsupported(std::string m) { return Status(Kind::kUnsupported, std::move(m)); }

  bool ok() const { return kind_ == Kind::kOk; }
  Kind kind() const { return kind_; }
  const std::string& message() const { return message_; }
  // "corruption: <message>" etc.
  std::string ToString() const;

 private:
  Status(Kind k, std::string m) : kind_(k), message_(std::move(m)) {}
  Kind kind_ = Kind::kOk;
  std::string message_;
};

// Evaluates `expr` (a Status) and returns it from the enclosing function if it is not ok.
#define IVY_RETURN_IF_ERROR(expr)        \
  do {                                   \
    ::ivytrace::Status _st = (expr);     \
    if (!_st.ok()) return _st;           \
  } while (0)

}  // namespace ivytrace
