// Graph and plan files end with a checksum field (streamed_file::kChecksumField): tests that
// write such files by hand seal them the way the writer does.
#pragma once

#include <zlib.h>

#include <string>

#include "core/io/graph_file.h"

namespace ivytrace::testing {

// `bytes` (magic included) followed by the checksum field: tag, then the CRC-32 little-endian.
inline std::string Sealed(const std::string& bytes) {
  const uint32_t crc = static_cast<uint32_t>(
      crc32_z(0, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
  std::string out = bytes;
  out.push_back(static_cast<char>(streamed_file::kChecksumField << 3 | 5));
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
  return out;
}

}  // namespace ivytrace::testing
