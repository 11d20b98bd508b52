// Writing output files so that a failure never leaves a half-written file where a good one was:
// bytes go to a temporary file beside the target, which is renamed over it only on success.
#pragma once

#include <string>
#include <string_view>

#include "core/util/status.h"

namespace ivytrace {

// Writes `contents` to `path` atomically (temp file in the same directory + fsync + rename).
Status WriteFileAtomically(const std::string& path, std::string_view contents);

// Fails early, before any work, if `path` cannot be created (missing or unwritable directory).
Status CheckWritable(const std::string& path);

}  // namespace ivytrace
