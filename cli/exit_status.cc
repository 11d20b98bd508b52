#include "cli/exit_status.h"

#include "cli/common.h"

namespace ivytrace::cli {

namespace {
const char* Meaning(int code) {
  switch (code) {
    case kExitOk: return "success";
    case kExitInternal: return "internal error";
    case kExitUsage: return "usage error";
    case kExitBadInput: return "bad input (missing, truncated or corrupt file)";
    case kExitOutput: return "output cannot be written";
    case kExitUnsupported: return "unsupported (an op without a lowering, a construct ivytrace cannot handle, or nothing to export)";
    case kExitCheckFailed: return "check failed (an output outside tolerance, or the artifact failed to run)";
    case kExitGateTripped: return "a --fail-on gate tripped";
    case kExitMissingTool: return "the Python side cannot run (no interpreter with ivytrace, numpy, onnxruntime)";
    default: return "?";
  }
}
}  // namespace

std::string ExitStatusFooter(std::initializer_list<int> codes) {
  std::string s = "Exit status: ";
  bool first = true;
  for (int c : codes) {
    s += (first ? "" : ", ") + std::to_string(c) + " " + Meaning(c);
    first = false;
  }
  return s + ".";
}

}  // namespace ivytrace::cli
