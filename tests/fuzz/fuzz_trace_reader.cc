// The trace reader on arbitrary bytes: every record read, both ways (parsed, and the op scan that
// inspect uses), and the statistics `inspect` computes. Any outcome is fine but a crash, a
// sanitizer finding, a hang or unbounded memory.
#include "core/inspect/trace_stats.h"
#include "core/io/trace_reader.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ivytrace::fuzz::Quiet();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ivytrace::fuzz::InputFile in(data, size);
  for (bool scan : {false, true}) {
    ivytrace::TraceReader r;
    r.set_allow_missing_footer(scan);
    if (!r.Open(in.path()).ok()) return 0;
    ivytrace::v1::Record rec;
    bool eof = false, is_op = false;
    uint32_t op_name = 0;
    uint64_t thread = 0;
    while (!eof) {
      const auto st = scan ? r.NextForStats(&rec, &is_op, &op_name, &thread, &eof) : r.Next(&rec, &eof);
      if (!st.ok()) break;
      if (is_op) (void)r.String(op_name);
    }
  }
  ivytrace::TraceStats stats;
  (void)ivytrace::CollectTraceStats(in.path(), &stats);
  return 0;
}
