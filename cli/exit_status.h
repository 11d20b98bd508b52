// Exit statuses of the commands added for CI pipelines, and each command's own --help footer.
// The first five are in cli/common.h (ExitCode); every status is in the README's table.
#pragma once

#include <initializer_list>
#include <string>

namespace ivytrace::cli {

inline constexpr int kExitCheckFailed = 6;   // `check`: an output is outside tolerance, or the artifact failed
inline constexpr int kExitGateTripped = 7;   // `diff --fail-on`: a gate tripped
inline constexpr int kExitMissingTool = 8;   // `check`: no Python with ivytrace/numpy/onnxruntime to run it

// "Exit status: 0 success, 2 usage error, ..." listing only `codes`, in that order.
std::string ExitStatusFooter(std::initializer_list<int> codes);

}  // namespace ivytrace::cli
