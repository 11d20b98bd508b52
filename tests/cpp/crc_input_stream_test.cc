// CrcInputStream checksums what its readers consume, in one call per underlying buffer, and knows
// the CRC at a marked position even after a buffer refill went past it.
#include "core/io/crc_input_stream.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <zlib.h>

namespace ivytrace {
namespace {

uint32_t ZlibCrc(const std::string& data, size_t n) {
  return static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(n)));
}

// Reads `data` as "records" of random sizes through a CodedInputStream per record (as the trace
// reader does: each backs up what it did not use), over underlying blocks of `block` bytes, and
// checks the CRC at every record start against zlib's over the same prefix.
void CheckEveryMark(const std::string& data, int block, uint32_t seed) {
  google::protobuf::io::ArrayInputStream array(data.data(), static_cast<int>(data.size()), block);
  internal::CrcInputStream crc(&array);
  std::mt19937 rng(seed);
  size_t at = 0;
  while (at < data.size()) {
    crc.Mark();
    ASSERT_EQ(crc.CrcAtMark(), ZlibCrc(data, at)) << "block " << block << ", mark at " << at;
    const size_t n = std::min<size_t>(data.size() - at, 1 + rng() % 40);
    std::string got;
    {
      google::protobuf::io::CodedInputStream coded(&crc);
      ASSERT_TRUE(coded.ReadString(&got, static_cast<int>(n)));
    }
    ASSERT_EQ(got, data.substr(at, n));
    at += n;
    // Asking again after the record (past refills) still gives the CRC at its start.
    if (rng() % 3 == 0) ASSERT_EQ(crc.CrcAtMark(), ZlibCrc(data, at - n));
  }
  crc.Mark();
  EXPECT_EQ(crc.CrcAtMark(), ZlibCrc(data, data.size()));
}

TEST(CrcInputStream, CrcAtEveryRecordStartMatchesZlib) {
  std::mt19937 rng(7);
  std::string data(5000, '\0');
  for (auto& c : data) c = static_cast<char>(rng());
  for (int block : {1, 3, 7, 64, 1000, 8192}) CheckEveryMark(data, block, static_cast<uint32_t>(block));
}

TEST(CrcInputStream, SkippedBytesAreChecksummedToo) {
  std::string data(300, 'x');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 31);
  google::protobuf::io::ArrayInputStream array(data.data(), static_cast<int>(data.size()), 16);
  internal::CrcInputStream crc(&array);
  ASSERT_TRUE(crc.Skip(250));
  crc.Mark();
  EXPECT_EQ(crc.CrcAtMark(), ZlibCrc(data, 250));
}

}  // namespace
}  // namespace ivytrace
