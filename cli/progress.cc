#include "cli/progress.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

namespace ivytrace::cli {

Progress::Progress(const std::string& command, bool forced, bool wanted) {
  if (!wanted || (!forced && !isatty(STDERR_FILENO))) return;
  logger_ = spdlog::get("progress");
  if (!logger_) {
    logger_ = spdlog::stderr_color_mt("progress");
    logger_->set_pattern("%v");
    logger_->set_level(spdlog::level::info);
  }
  logger_ = logger_->clone("progress." + command);
  logger_->set_pattern("ivytrace " + command + ": %v");
  last_ = std::chrono::steady_clock::now();
}

void Progress::Report(const std::string& message, bool now) {
  if (!logger_) return;
  const auto t = std::chrono::steady_clock::now();
  if (!now && t - last_ < kInterval) return;  // the first line comes after one interval
  logger_->info(message);
  logger_->flush();
  last_ = t;
}

Progress PhaseProgress(const std::string& command, const std::string& input, bool forced) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(input, ec);
  return Progress(command, forced ? true : false, forced || (!ec && size >= kLargeInputBytes));
}

std::string Thousands(uint64_t n) {
  // Built forward rather than by insert(): GCC 12 warned (-Wrestrict, a false positive) on the
  // inserts in every CI build.
  const std::string digits = std::to_string(n);
  std::string s;
  s.reserve(digits.size() + digits.size() / 3);
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) s.push_back(',');
    s.push_back(digits[i]);
  }
  return s;
}

void TraceOpCounter::Poll() {
  std::ifstream in(path_, std::ios::binary);
  if (!in) return;
  if (offset_ == 0) offset_ = 8;  // the magic
  in.seekg(static_cast<std::streamoff>(offset_));
  std::vector<char> buf(1 << 20);
  uint64_t base = offset_;
  std::string pending;
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    pending.append(buf.data(), static_cast<size_t>(in.gcount()));
    size_t pos = 0;
    while (true) {
      uint64_t len = 0;
      int shift = 0;
      size_t p = pos;
      bool complete = false;
      while (p < pending.size() && shift < 64) {
        const auto b = static_cast<unsigned char>(pending[p++]);
        len |= static_cast<uint64_t>(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80)) {
          complete = true;
          break;
        }
      }
      if (!complete || len == 0 || pending.size() - p < len) break;  // incomplete, or the zero tail
      if (static_cast<unsigned char>(pending[p]) == 0x0a) ++ops_;
      pos = p + len;
    }
    base += pos;
    pending.erase(0, pos);
    if (pending.size() > (64u << 20)) break;  // a huge record still being written: next time
  }
  offset_ = base;
}

}  // namespace ivytrace::cli
