// What `ivytrace inspect` reports about a trace, gathered in one streaming pass.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/util/status.h"
#include "ivytrace/v1/trace.pb.h"

namespace ivytrace {

struct RegionStats {
  std::string name;
  uint64_t instance = 0;  // K in "name:K"
  uint64_t ops = 0;
  uint64_t inputs = 0;
  bool ended = false;     // its RegionEnd is in the trace
};

struct TraceStats {
  v1::Header header;
  uint64_t bytes = 0;
  uint64_t records = 0;
  uint64_t op_events = 0;
  uint64_t tensor_records = 0;
  uint64_t tensor_bytes = 0;
  uint64_t guards = 0;
  uint64_t shape_reads = 0;
  uint64_t threads = 0;
  std::map<std::string, uint64_t> ops;  // qualified op name -> count
  std::vector<RegionStats> regions;
  bool complete = false;                // ended with a footer
  std::string footer_error;             // the exception that ended the program, if any
  bool stopped_by_limit = false;        // a --max-ops/--max-bytes limit ended the recording
  v1::LimitHit limit;                   // which one, where (when stopped_by_limit)
};

// "--max-ops 1000, hit by op 1001 (torch.add at prog.py:7)": a limit that stopped a recording.
std::string DescribeLimit(const v1::LimitHit& hit);

// Reads the whole trace. A truncated or damaged trace is an error naming the byte offset.
Status CollectTraceStats(const std::string& path, TraceStats* stats);

}  // namespace ivytrace
