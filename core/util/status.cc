#include "core/util/status.h"

namespace ivytrace {

std::string Status::ToString() const {
  const char* prefix = "";
  switch (kind_) {
    case Kind::kOk: return "ok";
    case Kind::kInvalidArgument: prefix = "invalid argument"; break;
    case Kind::kNotFound: prefix = "not found"; break;
    case Kind::kCorruption: prefix = "corrupt input"; break;
    case Kind::kIOError: prefix = "I/O error"; break;
    case Kind::kUnsupported: prefix = "unsupported"; break;
  }
  return std::string(prefix) + ": " + message_;
}

}  // namespace ivytrace
