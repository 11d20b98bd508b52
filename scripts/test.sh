#!/usr/bin/env bash
# The whole test suite: installs what is needed, builds, then runs the C++ tests (ctest) and the
# Python, end-to-end and CLI tests (pytest), then the C++ tests again under ASan+UBSan (clang) and
# a seeded fuzz run of every libFuzzer harness (scripts/fuzz.sh, 100k runs each). This is exactly
# what .ci/run runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
export IVYTRACE_BIN="$PWD/build/ivytrace"
.venv/bin/python -m pytest tests -q
# The other generator (setup.sh builds with Ninja), the install rules and find_package(ivytrace).
bash scripts/check_cmake_package.sh
bash scripts/fuzz.sh
