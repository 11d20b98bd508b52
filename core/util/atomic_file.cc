#include "core/util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

namespace ivytrace {
namespace {

std::string DirOf(const std::string& path) {
  std::filesystem::path p(path);
  auto parent = p.parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

}  // namespace

Status CheckWritable(const std::string& path) {
  if (path.empty()) return Status::InvalidArgument("empty output path");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Status::IOError("cannot write '" + path + "': it is a directory");
  }
  const std::string dir = DirOf(path);
  if (!std::filesystem::is_directory(dir, ec)) {
    return Status::IOError("cannot write '" + path + "': directory '" + dir + "' does not exist");
  }
  if (access(dir.c_str(), W_OK) != 0) {
    return Status::IOError("cannot write '" + path + "': directory '" + dir +
                           "' is not writable (" + std::strerror(errno) + ")");
  }
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& path, const std::function<Status(int fd)>& write) {
  IVY_RETURN_IF_ERROR(CheckWritable(path));
  std::string tmp = path + ".tmp-XXXXXX";
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
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    e = errno;
    unlink(tmp.c_str());
    return Status::IOError("cannot write '" + path + "': " + std::strerror(e));
  }
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  return WriteFileAtomically(path, [&](int fd) {
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
  });
}

}  // namespace ivytrace
