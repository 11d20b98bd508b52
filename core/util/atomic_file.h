// Writing output files so that a failure never leaves a half-written file where a good one was:
// bytes go to a temporary file beside the target, which is renamed over it only on success.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "core/util/status.h"

namespace ivytrace {

// Writes `contents` to `path` atomically (temp file in the same directory + fsync + rename).
Status WriteFileAtomically(const std::string& path, std::string_view contents);

// The streaming form, for outputs too large to build in memory first: `write` gets a descriptor
// open for writing on a temporary file beside `path` and writes the contents through it (it must
// not close it). If `write` succeeds the file is fsynced, given the usual permissions and renamed
// over `path`; if it or any of those steps fails, the temporary file is removed and `path` is left
// as it was. Errors of `write` are returned as they are.
Status WriteFileAtomically(const std::string& path, const std::function<Status(int fd)>& write);

// Fails early, before any work, if `path` cannot be created (missing or unwritable directory).
Status CheckWritable(const std::string& path);

}  // namespace ivytrace
