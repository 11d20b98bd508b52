// Writes trace files from C++ (tests and benchmarks synthesize traces with it; programs are
// recorded by the Python recorder, which writes the same layout).
#pragma once

#include <cstdio>
#include <string>
#include <unordered_map>

#include "core/util/status.h"
#include "ivytrace/v1/trace.pb.h"

namespace ivytrace {

class TraceWriter {
 public:
  ~TraceWriter();
  // Creates `path` and writes the magic and `header`.
  Status Open(const std::string& path, const v1::Header& header);
  // Interns `s`, writing an Intern record the first time; returns its id.
  uint32_t Intern(const std::string& s);
  Status Write(const v1::Record& record);
  // Writes the footer with the counts so far and closes the file. `footer` may carry the other
  // fields (exit status, error, stopped_by_limit); its counts and CRC are filled in here.
  Status Close(v1::Footer footer = v1::Footer());

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
  std::unordered_map<std::string, uint32_t> strings_;
  uint64_t records_ = 0;
  uint64_t ops_ = 0;
  uint32_t crc_ = 0;  // zlib CRC-32 of every byte written after the magic (see Footer.crc32)
  std::string buffer_;
};

}  // namespace ivytrace
