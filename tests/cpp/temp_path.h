// Scratch file paths for the C++ tests. ctest runs each test as its own process, two at a time:
// a path names the running test, so no two tests ever share a file (and a rerun overwrites it).
#pragma once

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace ivytrace::testing {

inline std::string TempPath(const std::string& name) {
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string owner = test ? std::string(test->test_suite_name()) + "." + test->name() : "no_test";
  return (std::filesystem::temp_directory_path() /
          ("ivytrace_" + owner + "_" + name))
      .string();
}

}  // namespace ivytrace::testing
