// Writing output files so that a failure never leaves a half-written file where a good one was:
// bytes go to a temporary file beside the target, which is renamed over it only on success.
//
// What an output path names decides how it is written (ResolveOutput):
//  * "-", /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N: the open descriptor, written through;
//  * an existing special file (character device, FIFO, socket): opened and written through, never
//    replaced (an atomic rename would put a regular file where the device node was);
//  * a symlink: followed to its final target, which is replaced atomically (the link stays);
//  * anything else: a regular file, replaced atomically.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "core/util/status.h"

namespace ivytrace {

struct OutputTarget {
  enum class Kind {
    kDescriptor,  // an already open descriptor (stdout...): written through, not closed
    kSpecial,     // an existing special file: opened, written through
    kFile,        // a regular file (or a new one): temp file + rename at `path`
  };
  Kind kind = Kind::kFile;
  std::string path;  // kFile: the final target after symlinks; kSpecial: the file to open
  int fd = -1;       // kDescriptor
};

// Decides where the bytes for output `path` go (see above). Never creates anything.
Status ResolveOutput(const std::string& path, OutputTarget* target);

// Writes `contents` to `path` atomically (temp file in the same directory + fsync + rename).
Status WriteFileAtomically(const std::string& path, std::string_view contents);

// The streaming form, for outputs too large to build in memory first: `write` gets a descriptor
// open for writing on a temporary file beside `path` and writes the contents through it (it must
// not close it). If `write` succeeds the file is fsynced, given the usual permissions and renamed
// over `path`; if it or any of those steps fails, the temporary file is removed and `path` is left
// as it was. Errors of `write` are returned as they are. Special files and descriptors get the
// bytes directly (ResolveOutput).
Status WriteFileAtomically(const std::string& path, const std::function<Status(int fd)>& write);

// Fails early, before any work, if `path` cannot be created (missing or unwritable directory).
Status CheckWritable(const std::string& path);

// InvalidArgument when `output` is the same file as `input` (same device and inode, whatever the
// spelling: ./a.ivt, a symlink, a hard link): writing it would destroy the input. `what` names
// the input in the message ("the input", "the program").
Status CheckNotSameFile(const std::string& output, const std::string& input, const std::string& what);

}  // namespace ivytrace
