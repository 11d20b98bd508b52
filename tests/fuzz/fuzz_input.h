// Shared by the libFuzzer harnesses: the readers take a path, so each input is put in an
// anonymous in-memory file (memfd) and handed over as /proc/self/fd/N. No disk I/O per run.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <google/protobuf/stubs/logging.h>
#include <spdlog/spdlog.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace ivytrace::fuzz {

class InputFile {
 public:
  InputFile(const uint8_t* data, size_t size) {
    fd_ = memfd_create("ivytrace-fuzz", MFD_CLOEXEC);
    if (fd_ < 0) std::abort();
    size_t done = 0;
    while (done < size) {
      const ssize_t n = write(fd_, data + done, size - done);
      if (n <= 0) std::abort();
      done += static_cast<size_t>(n);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~InputFile() { close(fd_); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

// Warnings about odd graphs (and protobuf's parse complaints) are expected on fuzzed input; printing them would dominate the run.
inline void Quiet() {
  spdlog::set_level(spdlog::level::off);
  google::protobuf::SetLogHandler(nullptr);  // "invalid UTF-8" on every other input
}

}  // namespace ivytrace::fuzz
