#include "core/util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <string>

namespace ivytrace {
namespace {

namespace fs = std::filesystem;

std::string DirOf(const std::string& path) {
  fs::path p(path);
  auto parent = p.parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

// The descriptor a path names by itself: "-", /dev/stdout, /dev/fd/N... (-1 if none).
int NamedDescriptor(const std::string& path) {
  if (path == "-" || path == "/dev/stdout") return 1;
  if (path == "/dev/stderr") return 2;
  for (const std::string prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    if (path.rfind(prefix, 0) != 0) continue;
    int fd = -1;
    const char* b = path.data() + prefix.size();
    const char* e = path.data() + path.size();
    const auto [end, ec] = std::from_chars(b, e, fd);
    if (ec == std::errc() && end == e && b != e) return fd;
  }
  return -1;
}

Status WriteAll(int fd, std::string_view contents, const std::string& path) {
  const char* p = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::IOError("cannot write '" + path + "': " + std::strerror(errno));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

Status ResolveOutput(const std::string& path, OutputTarget* target) {
  *target = OutputTarget();
  if (path.empty()) return Status::InvalidArgument("empty output path");
  const int named = NamedDescriptor(path);
  if (named >= 0) {
    if (fcntl(named, F_GETFD) < 0) {
      return Status::IOError("cannot write '" + path + "': descriptor " + std::to_string(named) + " is not open");
    }
    target->kind = OutputTarget::Kind::kDescriptor;
    target->fd = named;
    target->path = path;
    return Status::Ok();
  }
  // Follow symlinks one by one (a dangling link names the file to create).
  std::string p = path;
  for (int hops = 0;; ++hops) {
    struct stat st;
    if (lstat(p.c_str(), &st) != 0) break;  // does not exist: a new file
    if (!S_ISLNK(st.st_mode)) {
      if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        target->kind = OutputTarget::Kind::kSpecial;
        target->path = p;
        return Status::Ok();
      }
      break;
    }
    if (hops >= 40) return Status::IOError("cannot write '" + path + "': too many levels of symbolic links");
    std::error_code ec;
    fs::path link = fs::read_symlink(p, ec);
    if (ec) return Status::IOError("cannot write '" + path + "': " + ec.message());
    p = link.is_absolute() ? link.string() : (fs::path(p).parent_path() / link).string();
  }
  target->kind = OutputTarget::Kind::kFile;
  target->path = p;
  return Status::Ok();
}

Status CheckWritable(const std::string& path) {
  OutputTarget t;
  IVY_RETURN_IF_ERROR(ResolveOutput(path, &t));
  if (t.kind == OutputTarget::Kind::kDescriptor) return Status::Ok();
  if (t.kind == OutputTarget::Kind::kSpecial) {
    if (access(t.path.c_str(), W_OK) != 0) {
      return Status::IOError("cannot write '" + path + "': " + std::strerror(errno));
    }
    return Status::Ok();
  }
  std::error_code ec;
  if (fs::is_directory(t.path, ec)) {
    return Status::IOError("cannot write '" + path + "': it is a directory");
  }
  const std::string dir = DirOf(t.path);
  if (!fs::is_directory(dir, ec)) {
    return Status::IOError("cannot write '" + path + "': directory '" + dir + "' does not exist");
  }
  if (access(dir.c_str(), W_OK) != 0) {
    return Status::IOError("cannot write '" + path + "': directory '" + dir +
                           "' is not writable (" + std::strerror(errno) + ")");
  }
  return Status::Ok();
}

Status CheckNotSameFile(const std::string& output, const std::string& input, const std::string& what) {
  struct stat out_st, in_st;
  const int fd = NamedDescriptor(output);
  const int got = fd >= 0 ? fstat(fd, &out_st) : stat(output.c_str(), &out_st);
  if (got != 0 || stat(input.c_str(), &in_st) != 0) return Status::Ok();  // one of them does not exist
  if (!S_ISREG(out_st.st_mode)) return Status::Ok();  // a device or pipe is written through, not replaced
  if (out_st.st_dev == in_st.st_dev && out_st.st_ino == in_st.st_ino) {
    return Status::InvalidArgument("output '" + output + "' is " + what + " '" + input +
                                   "' (the same file): writing it would destroy " + what +
                                   "; choose another -o");
  }
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& path, const std::function<Status(int fd)>& write) {
  IVY_RETURN_IF_ERROR(CheckWritable(path));
  OutputTarget t;
  IVY_RETURN_IF_ERROR(ResolveOutput(path, &t));
  if (t.kind == OutputTarget::Kind::kDescriptor) return write(t.fd);
  if (t.kind == OutputTarget::Kind::kSpecial) {
    // A device, FIFO or socket: the bytes go through it; there is nothing to replace.
    const int fd = open(t.path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return Status::IOError("cannot write '" + path + "': " + std::strerror(errno));
    Status st = write(fd);
    if (close(fd) != 0 && st.ok()) st = Status::IOError("cannot write '" + path + "': " + std::strerror(errno));
    return st;
  }
  const std::string& target = t.path;  // symlinks followed: the link stays, its target is replaced
  std::string tmp = target + ".tmp-XXXXXX";
  int fd = mkstemp(tmp.data());
  if (fd < 0) {
    return Status::IOError("cannot write '" + path + "': " + std::strerror(errno));
  }
  Status st = write(fd);
  if (!st.ok()) {
    close(fd);
    unlink(tmp.c_str());
    return st;
  }
  // mkstemp creates 0600; output files should get the usual permissions.
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  // The descriptor is closed whether or not fsync succeeded.
  int e = fsync(fd) == 0 ? 0 : errno;
  if (close(fd) != 0 && e == 0) e = errno;
  if (e != 0) {
    unlink(tmp.c_str());
    return Status::IOError("cannot write '" + path + "': " + std::strerror(e));
  }
  if (rename(tmp.c_str(), target.c_str()) != 0) {
    e = errno;
    unlink(tmp.c_str());
    return Status::IOError("cannot write '" + path + "': " + std::strerror(e));
  }
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  return WriteFileAtomically(path, [&](int fd) { return WriteAll(fd, contents, path); });
}

}  // namespace ivytrace
