#include "temp_path.h"
#include "core/io/trace_reader.h"

#include <google/protobuf/stubs/common.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "trace_fixture.h"

namespace ivytrace {
namespace {

using testing::TempPath;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void WriteAll(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary) << data;
}

Status ReadEverything(const std::string& path, size_t* records) {
  TraceReader r;
  IVY_RETURN_IF_ERROR(r.Open(path));
  v1::Record rec;
  bool eof = false;
  *records = 0;
  while (true) {
    IVY_RETURN_IF_ERROR(r.Next(&rec, &eof));
    if (eof) return Status::Ok();
    ++*records;
  }
}

// Reads `path` allowing a missing footer (a killed program's trace); returns the op records read.
size_t OpsReadWithoutFooter(const std::string& path) {
  TraceReader lenient;
  EXPECT_TRUE(lenient.Open(path).ok());
  lenient.set_allow_missing_footer(true);
  v1::Record rec;
  bool eof = false;
  size_t ops = 0;
  while (true) {
    Status s = lenient.Next(&rec, &eof);
    EXPECT_TRUE(s.ok()) << s.message();
    if (!s.ok() || eof) break;
    ops += rec.has_op();
  }
  EXPECT_FALSE(lenient.saw_footer());
  return ops;
}

TEST(TraceReader, ReadsEveryRecordOfACompleteTrace) {
  auto path = testing::WriteSeedsTrace(TempPath("complete.ivt"));
  size_t n = 0;
  ASSERT_TRUE(ReadEverything(path, &n).ok());
  // header + region begin/end + 4 ops + footer + interned strings (5 op names... + file)
  TraceReader r;
  ASSERT_TRUE(r.Open(path).ok());
  v1::Record rec;
  bool eof = false;
  size_t ops = 0;
  while (r.Next(&rec, &eof).ok() && !eof) ops += rec.has_op();
  EXPECT_EQ(ops, 4u);
  EXPECT_TRUE(r.saw_footer());
  EXPECT_EQ(r.String(1), "torch.Tensor.__pow__");
}

TEST(TraceReader, TruncatedTraceNamesTheByteOffset) {
  auto path = testing::WriteSeedsTrace(TempPath("trunc.ivt"));
  std::string data = ReadAll(path);
  WriteAll(path, data.substr(0, data.size() - 7));  // cut inside the footer
  size_t n = 0;
  Status st = ReadEverything(path, &n);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.kind(), Status::Kind::kCorruption);
  EXPECT_NE(st.message().find(path), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("truncated at byte"), std::string::npos) << st.message();
}

TEST(TraceReader, TraceEndingWithoutFooterIsReportedAsCutOff) {
  auto path = testing::WriteSeedsTrace(TempPath("nofooter.ivt"));
  std::string data = ReadAll(path);
  // The footer is the last record: drop exactly it (its length prefix is one byte).
  v1::Record footer;
  footer.mutable_footer()->set_records(1);
  size_t i = data.size();
  // Find the footer start by re-reading record boundaries.
  TraceReader r;
  ASSERT_TRUE(r.Open(path).ok());
  v1::Record rec;
  bool eof = false;
  uint64_t last_start = 0;
  while (true) {
    uint64_t at = r.offset();
    ASSERT_TRUE(r.Next(&rec, &eof).ok());
    if (eof) break;
    if (rec.has_footer()) last_start = at;
  }
  i = last_start;
  WriteAll(path, data.substr(0, i));
  size_t n = 0;
  Status st = ReadEverything(path, &n);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("without a footer"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("byte " + std::to_string(i)), std::string::npos) << st.message();
  // A killed program's trace is still readable up to its last record when the caller allows it.
  EXPECT_EQ(OpsReadWithoutFooter(path), 4u);
}

// A recorder writing through a memory mapping extends the file ahead of its data; a program killed
// before the recorder cut the file leaves zero bytes after its last record.
TEST(TraceReader, ZeroTailOfAKilledRecordingEndsTheRecords) {
  auto path = testing::WriteSeedsTrace(TempPath("zerotail.ivt"));
  std::string data = ReadAll(path);
  TraceReader scan;
  ASSERT_TRUE(scan.Open(path).ok());
  v1::Record rec;
  bool eof = false;
  uint64_t footer_at = 0;
  while (true) {
    uint64_t at = scan.offset();
    ASSERT_TRUE(scan.Next(&rec, &eof).ok());
    if (eof) break;
    if (rec.has_footer()) footer_at = at;
  }
  const std::string body = data.substr(0, footer_at);
  WriteAll(path, body + std::string(100000, '\0'));
  size_t n = 0;
  Status strict = ReadEverything(path, &n);
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.message().find("without a footer"), std::string::npos) << strict.message();
  EXPECT_NE(strict.message().find("byte " + std::to_string(footer_at)), std::string::npos) << strict.message();
  EXPECT_EQ(OpsReadWithoutFooter(path), 4u);
  // Anything but zeros after a zero length is corruption, not a tail.
  WriteAll(path, body + std::string(5000, '\0') + "x" + std::string(10, '\0'));
  TraceReader bad;
  ASSERT_TRUE(bad.Open(path).ok());
  bad.set_allow_missing_footer(true);
  Status st;
  while ((st = bad.Next(&rec, &eof)).ok() && !eof) {
  }
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("record length of 0 followed by data"), std::string::npos) << st.message();
}

TEST(TraceReader, GarbageInTheMiddleIsCorruptionAtItsOffset) {
  auto path = testing::WriteSeedsTrace(TempPath("garbage.ivt"));
  std::string data = ReadAll(path);
  const size_t at = data.size() / 2;
  for (size_t k = 0; k < 16; ++k) data[at + k] = static_cast<char>(0xff);
  WriteAll(path, data);
  size_t n = 0;
  Status st = ReadEverything(path, &n);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.kind(), Status::Kind::kCorruption);
  EXPECT_NE(st.message().find("byte"), std::string::npos) << st.message();
}

Status ScanEverything(const std::string& path, bool allow_missing_footer) {
  TraceReader r;
  r.set_allow_missing_footer(allow_missing_footer);
  IVY_RETURN_IF_ERROR(r.Open(path));
  v1::Record rec;
  bool eof = false, is_op = false;
  uint32_t op = 0;
  uint64_t thread = 0;
  while (true) {
    IVY_RETURN_IF_ERROR(r.NextForStats(&rec, &is_op, &op, &thread, &eof));
    if (eof) return Status::Ok();
  }
}

// Any run of changed bytes, anywhere after the magic, is caught: by structure where it breaks
// it, by the footer's checksum where it still parses (a changed tensor value, a changed name).
// Both read paths (full parse and the statistics scan, also with a missing footer allowed, as
// `inspect` reads) must agree.
TEST(TraceReader, EveryChangedByteIsCaught) {
  google::protobuf::LogSilencer quiet;  // protobuf's own "invalid UTF-8" lines, thousands of them
  auto path = testing::WriteSeedsTrace(TempPath("sweep.ivt"));
  const std::string good = ReadAll(path);
  size_t n = 0;
  ASSERT_TRUE(ReadEverything(path, &n).ok());
  for (size_t at = kMagicSize; at < good.size(); ++at) {
    for (size_t width : {size_t{1}, size_t{16}}) {
      std::string data = good;
      bool changed = false;
      for (size_t k = at; k < std::min(good.size(), at + width); ++k) {
        changed |= data[k] != static_cast<char>(0xff);
        data[k] = static_cast<char>(0xff);
      }
      if (!changed) continue;
      WriteAll(path, data);
      Status full = ReadEverything(path, &n);
      EXPECT_EQ(full.kind(), Status::Kind::kCorruption) << "at " << at << " width " << width;
      EXPECT_NE(full.message().find("byte"), std::string::npos) << full.message();
      EXPECT_EQ(ScanEverything(path, false).kind(), Status::Kind::kCorruption) << "at " << at;
      EXPECT_EQ(ScanEverything(path, true).kind(), Status::Kind::kCorruption) << "at " << at;
    }
  }
}

TEST(TraceReader, NotATraceAndMissingFile) {
  auto path = TempPath("notatrace.txt");
  WriteAll(path, "hello, this is not a trace\n");
  TraceReader r;
  Status st = r.Open(path);
  EXPECT_EQ(st.kind(), Status::Kind::kCorruption);
  EXPECT_NE(st.message().find("IVYTRC01"), std::string::npos) << st.message();
  TraceReader r2;
  st = r2.Open(TempPath("does-not-exist.ivt"));
  EXPECT_EQ(st.kind(), Status::Kind::kNotFound);
}

TEST(TraceReader, RefusesOtherFormatVersions) {
  auto path = testing::WriteSeedsTrace(TempPath("v99.ivt"));
  std::string data = ReadAll(path);
  data[6] = '9';
  data[7] = '9';
  WriteAll(path, data);
  TraceReader r;
  Status st = r.Open(path);
  EXPECT_NE(st.message().find("version '99'"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace ivytrace
