// ivytrace record -o TRACE -- PROGRAM [ARGS...]
//
// Runs the program with the recorder loaded through a sitecustomize shipped in the ivytrace
// Python package (no change to the program). The recorder writes a temporary file beside TRACE;
// once the program has ended, however it ended, a trace that holds at least its header is renamed
// to TRACE, so a killed program still leaves the records it flushed. The program's stdin, stdout,
// stderr and exit status pass through.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "cli/common.h"
#include "cli/progress.h"
#include "core/io/file_kind.h"
#include "core/io/trace_reader.h"
#include "core/util/atomic_file.h"

extern char** environ;

namespace ivytrace::cli {
namespace {

struct RecordOptions {
  std::string output;
  std::string python;
  std::vector<std::string> frameworks;
  std::vector<std::string> command;
  std::optional<uint64_t> max_ops;     // --max-ops: op events to record at most
  std::optional<uint64_t> max_bytes;   // --max-bytes: size of the trace file at most
  bool progress = false;               // --progress: also when stderr is not a terminal
  bool force = false;                  // --force: replace an existing file that is not a trace
};

// The smallest --max-bytes accepted: the magic, the header (argv, host name...) and the room the
// recorder keeps for the footer (python/ivytrace/recorder/writer.py, FOOTER_RESERVE = 512).
constexpr uint64_t kMinMaxBytes = 4096;

bool LooksLikePython(const std::string& program) {
  const std::string base = std::filesystem::path(program).filename().string();
  return base.rfind("python", 0) == 0;
}

// Runs `python -c ...` to find the directory holding the package's sitecustomize.py.
Status FindBootDir(const std::string& python, std::string* dir) {
  const std::string cmd = "'" + python +
                          "' -c 'import ivytrace, sys; sys.stdout.write(ivytrace.boot_dir())' 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return Status::IOError("cannot run '" + python + "'");
  std::string out;
  char buf[512];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = pclose(p);
  if (status != 0 || out.empty() || !std::filesystem::is_directory(out)) {
    return Status::NotFound("the ivytrace Python package cannot be imported by '" + python +
                            "' (install it with `pip install ./python`, or name the interpreter "
                            "with --python): " + out.substr(0, 300));
  }
  *dir = out;
  return Status::Ok();
}

bool HasHeader(const std::string& path) {
  TraceReader r;
  if (!r.Open(path).ok()) return false;
  v1::Record rec;
  bool eof = false;
  return r.Next(&rec, &eof).ok() && !eof && rec.has_header();
}

// Copies the finished trace at `from` into `output`, a special file or descriptor (written
// through by WriteFileAtomically, never replaced).
Status CopyThrough(const std::string& from, const std::string& output) {
  std::ifstream in(from, std::ios::binary);
  if (!in) return Status::IOError("cannot read '" + from + "'");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return WriteFileAtomically(output, bytes);
}

// A validator for a count that must fit a uint64 (CLI11's NonNegativeNumber prints its range as
// a 300-digit double, and AsSizeValue lets "-5" and values past 2^64 through).
CLI::Validator WholeNumber(const std::string& what) {
  return CLI::Validator(
      [what](std::string& v) -> std::string {
        uint64_t n = 0;
        const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
        if (v.empty() || ec != std::errc() || end != v.data() + v.size()) {
          return "expected a whole number of " + what + " (0 to 2^64-1), not '" + v + "'";
        }
        return "";
      },
      "");
}

int RunRecord(const RecordOptions& o) {
  static const std::set<std::string> kKnown = {"torch", "numpy", "jax"};
  static const std::set<std::string> kSupported = {"torch", "numpy", "jax"};
  for (const auto& f : o.frameworks) {
    if (!kKnown.count(f)) {
      return Fail("record", Status::InvalidArgument("unknown framework '" + f + "' (known: torch, numpy, jax)"), kExitUsage);
    }
    if (!kSupported.count(f)) {
      return Fail("record", Status::InvalidArgument("recording '" + f + "' is not supported yet (supported: torch, numpy, jax)"), kExitUsage);
    }
  }
  if (o.command.empty()) {
    return Fail("record", Status::InvalidArgument("give the program to run after --, e.g. "
                                                  "ivytrace record -o t.ivt -- python3 prog.py"), kExitUsage);
  }
  if (o.max_bytes && *o.max_bytes < kMinMaxBytes) {
    return Fail("record", Status::InvalidArgument("--max-bytes " + std::to_string(*o.max_bytes) +
                                                  " is too small: a trace needs at least " +
                                                  std::to_string(kMinMaxBytes) +
                                                  " bytes for its header and footer"), kExitUsage);
  }
  if (o.output == "-") {
    return Fail("record", Status::InvalidArgument("-o -: a trace cannot go to stdout, which is the "
                                                  "program's own; give a file"), kExitUsage);
  }
  Status st = CheckWritable(o.output);
  if (!st.ok()) return Fail("record", st, kExitOutput);
  OutputTarget target;
  st = ResolveOutput(o.output, &target);
  if (!st.ok()) return Fail("record", st, kExitOutput);

  // The program must exist before anything else is asked of it (127, as a shell would say).
  const std::string program = o.command[0];
  const bool has_slash = program.find('/') != std::string::npos;
  bool found = has_slash && access(program.c_str(), X_OK) == 0;
  if (!has_slash) {
    const char* path_env = std::getenv("PATH");
    std::stringstream dirs(path_env ? path_env : "");
    std::string dir;
    while (!found && std::getline(dirs, dir, ':')) {
      found = access(((dir.empty() ? "." : dir) + "/" + program).c_str(), X_OK) == 0;
    }
  }
  if (!found) {
    return Fail("record", Status::NotFound("cannot run '" + program + "': no such executable"), 127);
  }
  // Never write over the program being recorded (its script, or any file its command line names),
  // nor over an existing file that is not a trace, unless --force.
  for (size_t i = 1; i < o.command.size(); ++i) {
    st = CheckNotSameFile(o.output, o.command[i], "a file of the recorded command");
    if (!st.ok()) return Fail("record", st, kExitUsage);
  }
  if (has_slash) {
    st = CheckNotSameFile(o.output, program, "the program");
    if (!st.ok()) return Fail("record", st, kExitUsage);
  }
  if (target.kind == OutputTarget::Kind::kFile && !o.force) {
    std::error_code ec;
    FileKind kind;
    if (std::filesystem::exists(target.path, ec) && std::filesystem::file_size(target.path, ec) > 0 &&
        (!SniffFile(target.path, &kind).ok() || kind != FileKind::kTrace)) {
      return Fail("record", Status::InvalidArgument("'" + o.output + "' exists and is not a trace; "
                                                    "recording would replace it (give --force to "
                                                    "replace it anyway, or choose another -o)"),
                  kExitUsage);
    }
  }
  const char* env_python = std::getenv("IVYTRACE_PYTHON");
  const std::string python = !o.python.empty()          ? o.python
                             : LooksLikePython(program) ? program
                             : env_python               ? std::string(env_python)
                                                        : std::string("python3");
  std::string boot;
  st = FindBootDir(python, &boot);
  if (!st.ok()) return Fail("record", st, kExitUsage);

  // The recorder writes a file beside the final target (symlinks followed), renamed over it at
  // the end; a special file (FIFO, device) gets that file's bytes copied through it instead.
  const std::string partial_dir = target.kind == OutputTarget::Kind::kFile
                                      ? std::filesystem::path(target.path).parent_path().string()
                                      : std::filesystem::temp_directory_path().string();
  const std::string partial =
      (partial_dir.empty() ? std::string(".") : partial_dir) + "/" +
      (target.kind == OutputTarget::Kind::kFile ? std::filesystem::path(target.path).filename().string()
                                                : std::string("ivytrace-record")) +
      ".partial-" + std::to_string(getpid());
  std::vector<std::string> env;
  std::string pythonpath = boot;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (kv.rfind("PYTHONPATH=", 0) == 0) {
      pythonpath += ":" + kv.substr(11);
      continue;
    }
    if (kv.rfind("IVYTRACE_RECORD_TO=", 0) == 0 || kv.rfind("IVYTRACE_FRAMEWORKS=", 0) == 0 ||
        kv.rfind("IVYTRACE_MAX_OPS=", 0) == 0 || kv.rfind("IVYTRACE_MAX_BYTES=", 0) == 0) {
      continue;
    }
    env.push_back(kv);
  }
  env.push_back("PYTHONPATH=" + pythonpath);
  env.push_back("IVYTRACE_RECORD_TO=" + partial);
  if (!o.frameworks.empty()) {
    std::string fw;
    for (const auto& f : o.frameworks) fw += (fw.empty() ? "" : ",") + f;
    env.push_back("IVYTRACE_FRAMEWORKS=" + fw);
  }
  // The limits travel like the other options; the recorder (writer.py) enforces them.
  if (o.max_ops) env.push_back("IVYTRACE_MAX_OPS=" + std::to_string(*o.max_ops));
  if (o.max_bytes) env.push_back("IVYTRACE_MAX_BYTES=" + std::to_string(*o.max_bytes));
  std::vector<char*> envp, argv;
  for (auto& kv : env) envp.push_back(kv.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = o.command;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  spdlog::debug("running {} with the recorder writing {}", o.command[0], partial);
  pid_t pid;
  int err = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data());
  if (err != 0) {
    return Fail("record", Status::NotFound("cannot run '" + o.command[0] + "': " + std::strerror(err)),
                err == ENOENT ? 127 : 126);
  }
  // Like system(): while the program runs, Ctrl-C is its business; we wait and keep the trace.
  struct sigaction ignore {}, old_int {}, old_quit {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  int wstatus = 0;
  // With progress shown, poll the child and count the ops in the growing trace as it runs.
  Progress progress("record", o.progress);
  TraceOpCounter counter(partial);
  while (true) {
    const pid_t r = waitpid(pid, &wstatus, progress.enabled() ? WNOHANG : 0);
    if (r == pid || (r < 0 && errno != EINTR)) break;
    if (r == 0) {
      usleep(100 * 1000);
      counter.Poll();
      progress.Report(Thousands(counter.ops()) + " ops recorded so far (" + Thousands(counter.bytes() >> 10) + " KiB)");
    }
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  const int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);

  if (!std::filesystem::exists(partial) || !HasHeader(partial)) {
    std::error_code ec;
    std::filesystem::remove(partial, ec);
    std::fprintf(stderr, "ivytrace record: error: '%s' ended (status %d) before the recorder started; "
                 "no trace written to '%s'\n", o.command[0].c_str(), code, o.output.c_str());
    return code == 0 ? kExitBadInput : code;
  }
  if (target.kind == OutputTarget::Kind::kFile) {
    if (std::rename(partial.c_str(), target.path.c_str()) != 0) {
      std::fprintf(stderr, "ivytrace record: error: cannot write '%s': %s\n", o.output.c_str(), std::strerror(errno));
      std::error_code ec;
      std::filesystem::remove(partial, ec);
      return kExitOutput;
    }
  } else {
    st = CopyThrough(partial, o.output);
    std::error_code ec;
    std::filesystem::remove(partial, ec);
    if (!st.ok()) {
      std::fprintf(stderr, "ivytrace record: error: %s\n", st.message().c_str());
      return kExitOutput;
    }
  }
  if (WIFSIGNALED(wstatus)) {
    std::fprintf(stderr, "ivytrace record: '%s' was killed by signal %d; '%s' holds the records "
                 "written until then (no footer, unless a --max-ops/--max-bytes limit had closed it already)\n", o.command[0].c_str(), WTERMSIG(wstatus), o.output.c_str());
  }
  spdlog::debug("trace written to {}", o.output);
  return code;
}

}  // namespace

void SetupRecord(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<RecordOptions>();
  auto* sub = app.add_subcommand("record", "Run a Python program and record its framework calls into a trace");
  sub->add_option("-o,--output", opts->output, "Trace file to write")->required();
  sub->add_option("--python", opts->python, "Python interpreter that has the ivytrace package "
                                             "(default: PROGRAM when it is a python, else $IVYTRACE_PYTHON, else python3)");
  sub->add_option("--frameworks", opts->frameworks, "Frameworks to record (default: torch,numpy,jax: whichever the program imports)")->delimiter(',');
  sub->add_option("--max-ops", opts->max_ops,
                  "Stop recording after N op events: the trace gets its footer (which records the "
                  "limit) and the program runs on unrecorded")
      ->type_name("N")
      ->check(WholeNumber("ops"));
  // AsSizeValue turns "64M", "10KiB", "4096" into bytes (K, M, G... are powers of 1024) and
  // rejects unknown units.
  sub->add_option("--max-bytes", opts->max_bytes,
                  "Stop recording before the trace file would grow past SIZE bytes (suffixes K, M, "
                  "G = 1024-based; at least 4096), as --max-ops does")
      ->transform(CLI::AsSizeValue(false).description(""))  // the help text says the units
      ->check(WholeNumber("bytes"))
      ->type_name("SIZE");
  sub->add_flag("--progress", opts->progress,
                "Report the ops recorded so far on stderr every second also when stderr is not a terminal "
                "(on a terminal it is always shown)");
  sub->add_flag("--force", opts->force, "Replace the output file even when it exists and is not a trace");
  sub->add_option("command", opts->command, "The program and its arguments, after --")->required();
  sub->footer("Example: ivytrace record -o model.ivt -- python3 train.py --epochs 1\n"
              "Exit status: the program's own (also when a --max-ops/--max-bytes limit stopped "
              "the recording); 126/127 if it cannot be run; 2 usage error; 4 the trace cannot be "
              "written.");
  sub->callback([opts, exit_code] { *exit_code = RunRecord(*opts); });
}

}  // namespace ivytrace::cli
