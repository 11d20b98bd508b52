#include "core/io/graph_io.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "core/io/file_kind.h"
#include "core/util/atomic_file.h"

namespace ivytrace {
namespace {

Status ReadWithMagic(const std::string& path, const char* magic, const char* what,
                     google::protobuf::Message* msg) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(std::string(what) + " '" + path + "': cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string data = ss.str();
  if (data.size() < 8 || std::memcmp(data.data(), magic, 8) != 0) {
    return Status::Corruption(std::string(what) + " '" + path + "': expected \"" + magic +
                              "\" at byte 0");
  }
  if (!msg->ParseFromArray(data.data() + 8, static_cast<int>(data.size() - 8))) {
    return Status::Corruption(std::string(what) + " '" + path + "': the " +
                              std::to_string(data.size() - 8) +
                              " bytes after byte 8 are not a valid message (truncated or damaged)");
  }
  return Status::Ok();
}

Status WriteWithMagic(const std::string& path, const char* magic,
                      const google::protobuf::Message& msg) {
  std::string data(magic, 8);
  if (!msg.AppendToString(&data)) return Status::InvalidArgument("cannot serialize '" + path + "'");
  return WriteFileAtomically(path, data);
}

}  // namespace

Status WritePlanFile(const std::string& path, const v1::Plan& plan) {
  return WriteWithMagic(path, kPlanMagic, plan);
}
Status ReadPlanFile(const std::string& path, v1::Plan* plan) {
  return ReadWithMagic(path, kPlanMagic, "plan", plan);
}

}  // namespace ivytrace
