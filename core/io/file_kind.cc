#include "core/io/file_kind.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/io/trace_reader.h"

namespace ivytrace {

Status SniffFile(const std::string& path, FileKind* kind) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Status::NotFound("'" + path + "': no such file");
  if (std::filesystem::is_directory(path, ec)) {
    return Status::InvalidArgument("'" + path + "' is a directory, not a trace or graph file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError("'" + path + "': cannot open: " + std::strerror(errno));
  char magic[8] = {0};
  in.read(magic, sizeof magic);
  const std::string m(magic, static_cast<size_t>(in.gcount()));
  if (m.size() == 8 && m.compare(0, 6, std::string(kTraceMagic, 6)) == 0) {
    *kind = FileKind::kTrace;  // TraceReader reports an unsupported version precisely
  } else if (m == kGraphMagic) {
    *kind = FileKind::kGraph;
  } else if (m == kPlanMagic || m == kPlanMagicV1) {
    *kind = FileKind::kPlan;
  } else {
    return Status::Corruption("'" + path +
                              "' is not an ivytrace trace or graph (expected \"IVYTRC01\" or "
                              "\"IVYGRF01\" at byte 0)");
  }
  return Status::Ok();
}

}  // namespace ivytrace
