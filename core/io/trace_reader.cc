#include "core/io/trace_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/wire_format_lite.h>

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/io/crc_input_stream.h"

namespace ivytrace {

namespace pbio = google::protobuf::io;

TraceReader::TraceReader() : strings_(1) {}

TraceReader::~TraceReader() {
  crc_.reset();
  file_.reset();
  if (fd_ >= 0) close(fd_);
}

Status TraceReader::Fail(const std::string& what) const {
  return Status::Corruption("trace '" + path_ + "': " + what);
}

Status TraceReader::Open(const std::string& path) {
  path_ = path;
  fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    if (errno == ENOENT) return Status::NotFound("trace '" + path + "': no such file");
    return Status::IOError("trace '" + path + "': " + std::strerror(errno));
  }
  struct stat st;
  if (fstat(fd_, &st) != 0 || S_ISDIR(st.st_mode)) {
    return Status::IOError("trace '" + path + "': is a directory or cannot be read");
  }
  char magic[kMagicSize];
  ssize_t n = pread(fd_, magic, kMagicSize, 0);
  if (n != static_cast<ssize_t>(kMagicSize) || std::memcmp(magic, kTraceMagic, 6) != 0) {
    return Fail("not an ivytrace trace (expected the bytes \"IVYTRC01\" at offset 0)");
  }
  if (std::memcmp(magic, kTraceMagic, kMagicSize) != 0) {
    // The bytes come from the file: shown escaped, never raw (they may not be text).
    std::string version;
    for (int i = 6; i < 8; ++i) {
      const unsigned char c = static_cast<unsigned char>(magic[i]);
      if (c >= 0x20 && c < 0x7f && c != '\\') {
        version += static_cast<char>(c);
      } else {
        char hex[5];
        std::snprintf(hex, sizeof hex, "\\x%02x", c);
        version += hex;
      }
    }
    return Fail("trace format version '" + version + "' at byte 6 is not supported (this ivytrace reads version 01)");
  }
  if (lseek(fd_, kMagicSize, SEEK_SET) < 0) return Status::IOError("trace '" + path + "': seek failed");
  // 1 MiB blocks: few syscalls, bounded memory.
  file_ = std::make_unique<pbio::FileInputStream>(fd_, 1 << 20);
  crc_ = std::make_unique<internal::CrcInputStream>(file_.get());
  offset_ = kMagicSize;
  return Status::Ok();
}

const std::string& TraceReader::String(uint32_t id) const {
  static const std::string kUnknown = "<?>";
  return id < strings_.size() ? strings_[id] : kUnknown;
}

Status TraceReader::Next(v1::Record* record, bool* eof) {
  bool is_op = false;
  uint32_t op_name = 0;
  uint64_t thread = 0;
  return ReadRecord(record, &is_op, &op_name, &thread, eof, /*scan_ops=*/false);
}

Status TraceReader::NextForStats(v1::Record* record, bool* is_op, uint32_t* op_name, uint64_t* thread,
                                 bool* eof) {
  return ReadRecord(record, is_op, op_name, thread, eof, /*scan_ops=*/true);
}

namespace {

using google::protobuf::internal::WireFormatLite;

// Reads the op name id (field 1) and thread (field 10) of a serialized OpEvent, skipping every
// other field without materializing it. Hand-written because protobuf has no partial parse;
// returns false on malformed wire data.
bool ScanOpEvent(pbio::CodedInputStream* in, uint32_t* op_name, uint64_t* thread) {
  *op_name = 0;
  *thread = 0;
  while (true) {
    const uint32_t tag = in->ReadTag();
    if (tag == 0) return true;  // end of the limited region
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    const auto type = WireFormatLite::GetTagWireType(tag);
    if (field == 1 && type == WireFormatLite::WIRETYPE_VARINT) {
      if (!in->ReadVarint32(op_name)) return false;
    } else if (field == 10 && type == WireFormatLite::WIRETYPE_VARINT) {
      if (!in->ReadVarint64(thread)) return false;
    } else if (!WireFormatLite::SkipField(in, tag)) {
      return false;
    }
  }
}

}  // namespace

Status TraceReader::ReadRecord(v1::Record* record, bool* is_op, uint32_t* op_name, uint64_t* thread,
                               bool* eof, bool scan_ops) {
  *eof = false;
  *is_op = false;
  record->Clear();
  // A CodedInputStream per record keeps the 2 GB stream limit of protobuf out of the way for
  // arbitrarily long traces; constructing one is cheap.
  crc_->Mark();  // the footer holds the CRC of every byte before it
  pbio::CodedInputStream coded(crc_.get());
  const uint64_t at = offset_;
  uint32_t len = 0;
  const void* unused_data;
  int unused_size;
  // No byte left at all is the clean end; a length that does not parse (e.g. ten 0xff bytes,
  // which consume nothing) is corruption, not the end.
  const bool at_end = !coded.GetDirectBufferPointer(&unused_data, &unused_size);
  if (at_end || !coded.ReadVarint32(&len)) {
    if (at_end) {
      // Clean end of the byte stream.
      if (saw_footer_ || (allow_missing_footer_ && records_ > 0)) {
        *eof = true;
        return Status::Ok();
      }
      return Fail("truncated at byte " + std::to_string(at) + ": the trace ends after " +
                  std::to_string(records_) + " records without a footer (the recording was cut off)");
    }
    return Fail("corrupt or truncated at byte " + std::to_string(at) +
                ": expected a record length (varint), found bytes that are not one");
  }
  if (len == 0) {
    // No record is empty: a zero length starts the space a recorder allocated ahead of its data
    // (it writes through a memory mapping) and never filled because the program was killed.
    // Only zero bytes may follow; then the records end here.
    const void* data;
    int size;
    while (coded.GetDirectBufferPointer(&data, &size)) {
      const auto* p = static_cast<const unsigned char*>(data);
      for (int i = 0; i < size; ++i) {
        if (p[i] != 0) {
          return Fail("corrupt at byte " + std::to_string(at) +
                      ": a record length of 0 followed by data (not a trace's zero tail)");
        }
      }
      coded.Skip(size);
    }
    if (saw_footer_ || (allow_missing_footer_ && records_ > 0)) {
      *eof = true;
      return Status::Ok();
    }
    return Fail("truncated at byte " + std::to_string(at) + ": the trace ends after " +
                std::to_string(records_) + " records without a footer (the recording was cut off)");
  }
  if (saw_footer_) {
    return Fail("unexpected data at byte " + std::to_string(at) + " after the footer");
  }
  if (len > kMaxRecordBytes) {
    return Fail("corrupt record at byte " + std::to_string(at) + ": length " + std::to_string(len) +
                " exceeds the limit of " + std::to_string(kMaxRecordBytes) + " bytes");
  }
  auto limit = coded.PushLimit(static_cast<int>(len));
  const int body_start = coded.CurrentPosition();
  bool parsed = false;
  // Record field 1 (op), length-delimited: tag byte 0x0a.
  if (scan_ops && coded.ExpectTag(WireFormatLite::MakeTag(1, WireFormatLite::WIRETYPE_LENGTH_DELIMITED))) {
    uint32_t op_len = 0;
    if (coded.ReadVarint32(&op_len)) {
      auto op_limit = coded.PushLimit(static_cast<int>(op_len));
      parsed = ScanOpEvent(&coded, op_name, thread) && coded.BytesUntilLimit() == 0;
      coded.PopLimit(op_limit);
      parsed = parsed && coded.BytesUntilLimit() == 0;  // an op record holds nothing else
      *is_op = parsed;
    }
  } else {
    parsed = record->MergeFromCodedStream(&coded);
  }
  const int body_read = coded.CurrentPosition() - body_start;
  coded.PopLimit(limit);
  if (body_read < static_cast<int>(len)) {
    return Fail("truncated at byte " + std::to_string(at) + ": record #" + std::to_string(records_) +
                " needs " + std::to_string(len) + " bytes but only " + std::to_string(body_read) +
                " remain");
  }
  if (!parsed || (!*is_op && (record->kind_case() == v1::Record::KIND_NOT_SET ||
                              !record->GetReflection()->GetUnknownFields(*record).empty()))) {
    return Fail("corrupt record #" + std::to_string(records_) + " at byte " + std::to_string(at) +
                ": the bytes are not a valid trace record");
  }
  offset_ = at + static_cast<uint64_t>(coded.CurrentPosition());
  if (*is_op) {
    if (*op_name == 0 || *op_name >= strings_.size()) {
      return Fail("corrupt record #" + std::to_string(records_) + " at byte " + std::to_string(at) +
                  ": op name id " + std::to_string(*op_name) + " was never defined");
    }
    ++op_events_;
    if (records_ == 0) return Fail("first record at byte " + std::to_string(at) + " is not a header");
    ++records_;
    return Status::Ok();
  }
  return Account(*record, at);
}

Status TraceReader::Account(const v1::Record& rec, uint64_t at) {
  switch (rec.kind_case()) {
    case v1::Record::kHeader:
      if (records_ != 0) return Fail("header at byte " + std::to_string(at) + " is not the first record");
      break;
    case v1::Record::kIntern: {
      const auto& in = rec.intern();
      if (in.id() != strings_.size()) {
        return Fail("corrupt record #" + std::to_string(records_) + " at byte " + std::to_string(at) +
                    ": string id " + std::to_string(in.id()) + " out of sequence (expected " +
                    std::to_string(strings_.size()) + ")");
      }
      strings_.push_back(in.value());
      break;
    }
    case v1::Record::kOp:
      if (rec.op().op() == 0 || rec.op().op() >= strings_.size()) {
        return Fail("corrupt record #" + std::to_string(records_) + " at byte " + std::to_string(at) +
                    ": op name id " + std::to_string(rec.op().op()) + " was never defined");
      }
      ++op_events_;
      break;
    case v1::Record::kFooter: {
      const auto& f = rec.footer();
      if (f.records() != records_ || f.op_events() != op_events_) {
        return Fail("footer at byte " + std::to_string(at) + " counts " + std::to_string(f.records()) +
                    " records and " + std::to_string(f.op_events()) + " ops, but " +
                    std::to_string(records_) + " records and " + std::to_string(op_events_) +
                    " ops were read: records are missing");
      }
      if (f.has_crc32() && f.crc32() != crc_->CrcAtMark()) {
        return Fail("corrupt trace: the checksum of bytes " + std::to_string(kMagicSize) + " to " +
                    std::to_string(at) + " (everything before the footer at byte " +
                    std::to_string(at) + ") does not match the one the footer records: bytes were "
                    "changed after recording");
      }
      if (f.has_footer_crc32()) {
        v1::Footer unsealed = f;
        unsealed.clear_footer_crc32();
        const std::string bytes = unsealed.SerializeAsString();
        const uint32_t crc = static_cast<uint32_t>(crc32_z(
            crc_->CrcAtMark(), reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
        if (crc != f.footer_crc32()) {
          return Fail("corrupt footer at byte " + std::to_string(at) + ": its checksum does not match its "
                      "fields (counts, sizes, times, error or limit were changed after recording)");
        }
      }
      saw_footer_ = true;
      break;
    }
    default: break;
  }
  if (records_ == 0 && rec.kind_case() != v1::Record::kHeader) {
    return Fail("first record at byte " + std::to_string(at) + " is not a header");
  }
  ++records_;
  return Status::Ok();
}

}  // namespace ivytrace
