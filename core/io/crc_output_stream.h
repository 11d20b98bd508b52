// A protobuf output stream that checksums what its writers produce (graph and plan files end with
// the CRC-32 of every byte before it: streamed_file::Write in core/io/graph_file.h).
#pragma once

#include <cstdint>

#include <google/protobuf/io/zero_copy_stream.h>
#include <zlib.h>

namespace ivytrace::internal {

// A ZeroCopyOutputStream over another that keeps a zlib CRC-32 of the bytes written through it.
// A buffer handed out by Next() is checksummed once it is final: at the next Next(), or when
// Crc() is asked (REQUIRES then: no CodedOutputStream holds a buffer of this stream, i.e. it was
// Trim()med or destroyed).
class CrcOutputStream final : public google::protobuf::io::ZeroCopyOutputStream {
 public:
  explicit CrcOutputStream(google::protobuf::io::ZeroCopyOutputStream* out) : out_(out) {}

  bool Next(void** data, int* size) override {
    Absorb();
    if (!out_->Next(data, size)) return false;
    last_ = static_cast<const unsigned char*>(*data);
    last_size_ = *size;
    return true;
  }
  void BackUp(int count) override {
    last_size_ -= count;
    out_->BackUp(count);
  }
  int64_t ByteCount() const override { return out_->ByteCount(); }

  uint32_t Crc() {
    Absorb();
    return crc_;
  }

 private:
  void Absorb() {
    if (last_ && last_size_ > 0) crc_ = static_cast<uint32_t>(crc32_z(crc_, last_, static_cast<z_size_t>(last_size_)));
    last_ = nullptr;
    last_size_ = 0;
  }

  google::protobuf::io::ZeroCopyOutputStream* out_;
  const unsigned char* last_ = nullptr;
  int last_size_ = 0;
  uint32_t crc_ = 0;
};

}  // namespace ivytrace::internal
