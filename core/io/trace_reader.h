// Streaming reader for trace files (see proto/ivytrace/v1/trace.proto for the layout).
// Reads one record at a time with bounded memory; every error names the file and the byte offset
// where the trace stops making sense.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/util/status.h"
#include "ivytrace/v1/trace.pb.h"

namespace google::protobuf::io {
class FileInputStream;
class CodedInputStream;
}  // namespace google::protobuf::io

namespace ivytrace::internal {
class CrcInputStream;
}  // namespace ivytrace::internal

namespace ivytrace {

inline constexpr char kTraceMagic[] = "IVYTRC01";
inline constexpr size_t kMagicSize = 8;
// No single record may exceed this (tensor values are chunked well below it).
inline constexpr uint32_t kMaxRecordBytes = 256u << 20;

class TraceReader {
 public:
  TraceReader();
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  // Opens `path` and checks the magic and version.
  Status Open(const std::string& path);

  // Reads the next record into *record (cleared first). Sets *eof at a clean end of file.
  // A trace cut inside a record, or whose footer counts disagree with what was read, is
  // Corruption naming the byte offset. A trace that ends at a record boundary without a footer
  // (the program was killed) is Corruption too, unless set_allow_missing_footer(true): then it
  // ends cleanly and saw_footer() tells the difference.
  Status Next(v1::Record* record, bool* eof);

  // Like Next, but an op record is only scanned for its op name id and thread (set in
  // *op_name / *thread, with *is_op true) instead of being parsed into `record`. Statistics over
  // millions of ops need nothing else, and skipping the parse (which allocates the event's
  // argument trees) makes the scan several times faster. Other records are parsed as by Next.
  Status NextForStats(v1::Record* record, bool* is_op, uint32_t* op_name, uint64_t* thread, bool* eof);

  // Interned strings seen so far (index = id; [0] is "").
  const std::vector<std::string>& strings() const { return strings_; }
  const std::string& String(uint32_t id) const;
  const std::string& path() const { return path_; }
  uint64_t offset() const { return offset_; }  // byte offset of the next record
  uint64_t records_read() const { return records_; }
  bool saw_footer() const { return saw_footer_; }
  void set_allow_missing_footer(bool allow) { allow_missing_footer_ = allow; }

 private:
  Status Fail(const std::string& what) const;
  Status ReadRecord(v1::Record* record, bool* is_op, uint32_t* op_name, uint64_t* thread, bool* eof,
                    bool scan_ops);
  Status Account(const v1::Record& record, uint64_t at);
  std::string path_;
  int fd_ = -1;
  std::unique_ptr<google::protobuf::io::FileInputStream> file_;
  std::unique_ptr<internal::CrcInputStream> crc_;  // over file_: checksums what was consumed
  uint64_t offset_ = 0;
  uint64_t records_ = 0;
  uint64_t op_events_ = 0;
  bool saw_footer_ = false;
  bool allow_missing_footer_ = false;
  std::vector<std::string> strings_;
};

}  // namespace ivytrace
