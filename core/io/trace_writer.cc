#include "core/io/trace_writer.h"

#include <google/protobuf/io/coded_stream.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "core/io/trace_reader.h"

namespace ivytrace {

TraceWriter::~TraceWriter() {
  if (file_) std::fclose(file_);
}

Status TraceWriter::Open(const std::string& path, const v1::Header& header) {
  path_ = path;
  file_ = std::fopen(path.c_str(), "wb");
  if (!file_) return Status::IOError("cannot write '" + path + "': " + std::strerror(errno));
  std::fwrite(kTraceMagic, 1, kMagicSize, file_);
  v1::Record r;
  *r.mutable_header() = header;
  return Write(r);
}

uint32_t TraceWriter::Intern(const std::string& s) {
  auto it = strings_.find(s);
  if (it != strings_.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(strings_.size() + 1);
  strings_.emplace(s, id);
  v1::Record r;
  r.mutable_intern()->set_id(id);
  r.mutable_intern()->set_value(s);
  Write(r);
  return id;
}

Status TraceWriter::Write(const v1::Record& record) {
  buffer_.clear();
  record.AppendToString(&buffer_);
  uint8_t len[10];
  uint8_t* end = google::protobuf::io::CodedOutputStream::WriteVarint32ToArray(
      static_cast<uint32_t>(buffer_.size()), len);
  if (std::fwrite(len, 1, end - len, file_) != static_cast<size_t>(end - len) ||
      std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size()) {
    return Status::IOError("cannot write '" + path_ + "': " + std::strerror(errno));
  }
  crc_ = static_cast<uint32_t>(crc32(crc_, len, static_cast<uInt>(end - len)));
  crc_ = static_cast<uint32_t>(
      crc32(crc_, reinterpret_cast<const Bytef*>(buffer_.data()), static_cast<uInt>(buffer_.size())));
  ++records_;
  if (record.kind_case() == v1::Record::kOp) ++ops_;
  return Status::Ok();
}

Status TraceWriter::Close(v1::Footer footer) {
  if (!file_) return Status::Ok();
  v1::Record r;
  *r.mutable_footer() = std::move(footer);
  r.mutable_footer()->set_records(records_);
  r.mutable_footer()->set_op_events(ops_);
  r.mutable_footer()->set_crc32(crc_);
  const std::string footer_bytes = r.footer().SerializeAsString();
  r.mutable_footer()->set_footer_crc32(static_cast<uint32_t>(
      crc32(crc_, reinterpret_cast<const Bytef*>(footer_bytes.data()), static_cast<uInt>(footer_bytes.size()))));
  Status st = Write(r);
  if (std::fclose(file_) != 0 && st.ok()) st = Status::IOError("cannot write '" + path_ + "'");
  file_ = nullptr;
  return st;
}

}  // namespace ivytrace
