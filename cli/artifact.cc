#include "cli/artifact.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

extern char** environ;

namespace ivytrace::cli {

Status SniffArtifact(const std::string& path, FileKind* kind) {
  Status st = SniffFile(path, kind);
  if (st.ok() || st.kind() != Status::Kind::kCorruption) return st;
  onnx::ModelProto model;
  if (ReadOnnxModel(path, &model).ok()) {
    *kind = FileKind::kOnnx;
    return Status::Ok();
  }
  return Status::Corruption("'" + path + "' is not an ivytrace trace, graph or plan (\"IVYTRC01\", \"IVYGRF01\", "
                            "\"IVYPLN02\" at byte 0) nor an ONNX model");
}

Status ReadOnnxModel(const std::string& path, onnx::ModelProto* model) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError("'" + path + "': cannot open: " + std::strerror(errno));
  if (!model->ParseFromIstream(&in) || !model->has_graph()) {
    return Status::Corruption("'" + path + "' does not parse as an ONNX model (onnx.ModelProto with a graph)");
  }
  return Status::Ok();
}

std::string FindPython(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* p = std::getenv("IVYTRACE_PYTHON"); p && *p) return p;
  if (const char* venv = std::getenv("VIRTUAL_ENV"); venv && *venv) {
    std::string p = std::string(venv) + "/bin/python";
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  // A source checkout's build/ivytrace: the checkout's .venv (scripts/setup.sh makes it).
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto venv = exe.parent_path().parent_path() / ".venv" / "bin" / "python";
    if (access(venv.c_str(), X_OK) == 0 && std::filesystem::exists(exe.parent_path().parent_path() / "python" / "ivytrace", ec)) {
      return venv.string();
    }
  }
  return "python3";
}

std::string PackageDirBesideBinary() {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  // build/ivytrace of a source checkout -> python/; site-packages/ivytrace/bin/ivytrace of a wheel.
  for (const fs::path& dir : {exe.parent_path().parent_path() / "python", exe.parent_path().parent_path().parent_path()}) {
    if (fs::exists(dir / "ivytrace" / "check.py", ec)) return dir.string();
  }
  return "";
}

Status RunCollectingStdout(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
                           std::string* out, int* exit_status) {
  int pipefd[2];
  if (pipe(pipefd) != 0) return Status::IOError(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipefd[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipefd[0]);
  posix_spawn_file_actions_addclose(&actions, pipefd[1]);
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    bool replaced = false;
    for (const auto& x : extra_env) replaced |= kv.substr(0, kv.find('=') + 1) == x.substr(0, x.find('=') + 1);
    if (!replaced) env.push_back(kv);
  }
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, cargv[0], &actions, nullptr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&actions);
  close(pipefd[1]);
  if (rc != 0) {
    close(pipefd[0]);
    *exit_status = 127;
    return Status::Ok();
  }
  char buf[65536];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) out->append(buf, static_cast<size_t>(n));
  }
  close(pipefd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  *exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return Status::Ok();
}

}  // namespace ivytrace::cli
