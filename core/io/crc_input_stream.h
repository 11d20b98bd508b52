// A protobuf input stream that checksums what its readers consume (the trace footer's CRC-32).
#pragma once

#include <cstdint>

#include <google/protobuf/io/zero_copy_stream.h>
#include <zlib.h>

namespace ivytrace {
namespace internal {

// A ZeroCopyInputStream over another that keeps a CRC-32 of the bytes its readers consumed, and
// can tell the CRC of everything before a marked position (the start of the record being read:
// the footer holds the CRC of every byte before it). Bytes handed out by Next() count once the
// reader is past them: BackUp() returns the tail to the underlying stream, which hands it out
// again. zlib's crc32 computes what Python's zlib.crc32 computes on the recorder side.
//
// Consumed bytes are gathered into one pending span and checksummed in one call only when the
// underlying buffer is about to be refilled (or the CRC is asked for): calling crc32 once per
// record, ~66 bytes for a small op, cost more than reading the records (1M calls ~115 ms; zlib
// checksums a megabyte in ~0.15 ms).
class CrcInputStream final : public google::protobuf::io::ZeroCopyInputStream {
 public:
  explicit CrcInputStream(google::protobuf::io::ZeroCopyInputStream* in) : in_(in) {}

  bool Next(const void** data, int* size) override {
    Absorb();
    // With nothing backed up the underlying stream refills its buffer, which holds the pending
    // span: checksum it first. (Backed-up bytes come back from the same buffer.)
    if (backed_up_ == 0) Flush();
    backed_up_ = 0;
    if (!in_->Next(data, size)) {
      last_ = nullptr;
      last_size_ = counted_ = 0;
      return false;
    }
    last_ = static_cast<const unsigned char*>(*data);
    last_size_ = *size;
    counted_ = 0;
    return true;
  }
  void BackUp(int count) override {
    last_size_ -= count;
    backed_up_ = count;
    in_->BackUp(count);
  }
  bool Skip(int count) override {
    // Skipped bytes must be checksummed too: read them instead.
    const void* data;
    int size;
    while (count > 0) {
      if (!Next(&data, &size)) return false;
      if (size > count) {
        BackUp(size - count);
        size = count;
      }
      count -= size;
    }
    return true;
  }
  int64_t ByteCount() const override { return in_->ByteCount(); }

  // Marks the current position (REQUIRES: no CodedInputStream holds a buffer of this stream).
  void Mark() {
    Absorb();
    mark_ = consumed_;
  }
  // The CRC of every byte before the mark.
  uint32_t CrcAtMark() {
    Absorb();
    if (mark_ < flushed_) return mark_crc_;  // a flush went past the mark and kept its CRC
    return Crc32(crc_, pend_begin_, mark_ - flushed_);
  }

 private:
  static uint32_t Crc32(uint32_t crc, const unsigned char* p, int64_t n) {
    return static_cast<uint32_t>(crc32_z(crc, p, static_cast<z_size_t>(n)));
  }
  // Adds what the reader consumed of the last buffer to the pending span.
  void Absorb() {
    if (!last_ || last_size_ <= counted_) return;
    const unsigned char* begin = last_ + counted_;
    const int64_t n = last_size_ - counted_;
    if (begin != pend_begin_ + (consumed_ - flushed_)) Flush();  // not contiguous: start anew
    if (consumed_ == flushed_) pend_begin_ = begin;
    consumed_ += n;
    counted_ = last_size_;
  }
  // Checksums the pending span into crc_, keeping the CRC at the mark when the span holds it.
  void Flush() {
    if (consumed_ == flushed_) return;
    if (flushed_ <= mark_ && mark_ < consumed_) {
      mark_crc_ = Crc32(crc_, pend_begin_, mark_ - flushed_);
      crc_ = Crc32(mark_crc_, pend_begin_ + (mark_ - flushed_), consumed_ - mark_);
    } else {
      crc_ = Crc32(crc_, pend_begin_, consumed_ - flushed_);
    }
    flushed_ = consumed_;
    pend_begin_ = nullptr;
  }

  google::protobuf::io::ZeroCopyInputStream* in_;
  const unsigned char* last_ = nullptr;  // the buffer the last Next() handed out
  int last_size_ = 0;                    // its size less what was backed up
  int counted_ = 0;                      // how much of it is in the pending span
  int backed_up_ = 0;                    // bytes of it returned to `in_` by BackUp
  int64_t consumed_ = 0;                 // bytes consumed so far
  int64_t flushed_ = 0;                  // bytes in crc_; the pending span is [flushed_, consumed_)
  const unsigned char* pend_begin_ = nullptr;
  uint32_t crc_ = 0;
  int64_t mark_ = 0;
  uint32_t mark_crc_ = 0;  // the CRC at mark_, once a flush has gone past it
};

}  // namespace internal

}  // namespace ivytrace
