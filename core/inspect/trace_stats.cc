#include "core/inspect/trace_stats.h"

#include <filesystem>
#include <unordered_map>
#include <unordered_set>

#include "core/io/trace_reader.h"

namespace ivytrace {

Status CollectTraceStats(const std::string& path, TraceStats* stats) {
  TraceReader reader;
  IVY_RETURN_IF_ERROR(reader.Open(path));
  reader.set_allow_missing_footer(true);  // a killed program's trace is still worth showing
  std::error_code ec;
  stats->bytes = std::filesystem::file_size(path, ec);
  // Counting by interned id keeps the per-op cost to an array increment.
  std::vector<uint64_t> by_id;
  std::unordered_set<uint64_t> threads;
  uint64_t last_thread = ~0ull;
  std::unordered_map<uint64_t, size_t> open_regions;  // region id -> index in stats->regions
  std::unordered_map<std::string, uint64_t> instances;
  v1::Record rec;
  bool eof = false;
  bool is_op = false;
  uint32_t op_name = 0;
  uint64_t thread = 0;
  while (true) {
    IVY_RETURN_IF_ERROR(reader.NextForStats(&rec, &is_op, &op_name, &thread, &eof));
    if (eof) break;
    if (is_op) {
      if (op_name >= by_id.size()) by_id.resize(op_name + 1, 0);
      ++by_id[op_name];
      ++stats->op_events;
      if (thread != last_thread) {
        last_thread = thread;
        threads.insert(thread);
      }
      for (auto& [rid, idx] : open_regions) ++stats->regions[idx].ops;
      continue;
    }
    switch (rec.kind_case()) {
      case v1::Record::kHeader: stats->header = rec.header(); break;
      case v1::Record::kTensor:
        ++stats->tensor_records;
        stats->tensor_bytes += rec.tensor().value().data().size();
        break;
      case v1::Record::kGuard: ++stats->guards; break;
      case v1::Record::kShapeRead: ++stats->shape_reads; break;
      case v1::Record::kRegionBegin: {
        RegionStats r;
        r.name = rec.region_begin().name();
        r.instance = instances[r.name]++;
        r.inputs = rec.region_begin().inputs_size();
        open_regions[rec.region_begin().region()] = stats->regions.size();
        stats->regions.push_back(r);
        break;
      }
      case v1::Record::kRegionEnd: {
        auto it = open_regions.find(rec.region_end().region());
        if (it != open_regions.end()) {
          stats->regions[it->second].ended = true;
          open_regions.erase(it);
        }
        break;
      }
      case v1::Record::kFooter:
        stats->footer_error = rec.footer().error();
        stats->stopped_by_limit = rec.footer().has_stopped_by_limit();
        if (stats->stopped_by_limit) stats->limit = rec.footer().stopped_by_limit();
        break;
      default: break;
    }
  }
  stats->records = reader.records_read();
  stats->complete = reader.saw_footer();
  stats->threads = threads.size();
  for (uint32_t id = 0; id < by_id.size(); ++id) {
    if (by_id[id]) stats->ops[reader.String(id)] += by_id[id];
  }
  return Status::Ok();
}

std::string DescribeLimit(const v1::LimitHit& hit) {
  const bool ops = hit.kind() == v1::LimitHit::MAX_OPS;
  std::string s = std::string(ops ? "--max-ops " : "--max-bytes ") + std::to_string(hit.value()) + ", hit by ";
  const std::string where = hit.file().empty() ? "an unknown line" : hit.file() + ":" + std::to_string(hit.line());
  if (!hit.op().empty()) {
    s += "op " + std::to_string(hit.ops_recorded() + 1) + " (" + hit.op() + " at " + where + ")";
  } else {
    s += "the call at " + where;
  }
  return s + "; " + std::to_string(hit.ops_recorded()) + " ops recorded";
}

}  // namespace ivytrace
