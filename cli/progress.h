// Signs of life on stderr for long commands: "ivytrace record: 1,234,567 ops recorded (45.6 MiB)".
//
// Shown only when stderr is a terminal, or when --progress asks for it (CI logs stay clean by
// default). Lines go through an spdlog logger of their own (its colour sink knows terminals) at
// most once per interval: plain lines, no cursor movement, so a log file shows them as written.
// There is no progress-bar library in Debian 12 (no libindicators-dev), and a bar needs a known
// end, which neither a running program nor the graph builder has.
#pragma once

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace ivytrace::cli {

class Progress {
 public:
  // `forced`: --progress was given. Otherwise shown only when stderr is a terminal.
  // `wanted`: false turns it off whatever the terminal (a small input).
  Progress(const std::string& command, bool forced, bool wanted = true);
  bool enabled() const { return logger_ != nullptr; }
  // Prints `message` when `now`, or when the last line (or the start) is at least an interval old:
  // a command that ends within a second prints nothing it did not ask for with `now`.
  void Report(const std::string& message, bool now = false);

 private:
  std::shared_ptr<spdlog::logger> logger_;
  std::chrono::steady_clock::time_point last_{};
  static constexpr std::chrono::milliseconds kInterval{1000};
};

// Progress for a command that reads `input`: enabled when forced, or on a terminal when the input
// is large (at least kLargeInputBytes: smaller inputs take well under a second).
inline constexpr uint64_t kLargeInputBytes = 16u << 20;
Progress PhaseProgress(const std::string& command, const std::string& input, bool forced);

// "1,234,567"
std::string Thousands(uint64_t n);

// Counts the op records of a trace that is being written, reading only what was added since the
// last call: each record is a varint length and a `Record` whose first byte says its kind (an
// OpEvent is field 1: tag byte 0x0a). A record not yet complete, or the zero bytes a recorder
// writing through a memory mapping puts ahead of its data, are read again next time.
class TraceOpCounter {
 public:
  explicit TraceOpCounter(std::string path) : path_(std::move(path)) {}
  void Poll();
  uint64_t ops() const { return ops_; }
  uint64_t bytes() const { return offset_; }

 private:
  std::string path_;
  uint64_t offset_ = 0;  // first byte not yet counted
  uint64_t ops_ = 0;
};

}  // namespace ivytrace::cli
