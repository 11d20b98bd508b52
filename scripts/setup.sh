#!/usr/bin/env bash
# Installs everything ivytrace needs on Debian 12 and builds it.
#   - Debian packages: compiler, CMake, protobuf, ONNX, CLI11, spdlog, GoogleTest, Graphviz
#   - a Python virtual environment in .venv with torch (CPU build), numpy, onnx, onnxruntime, pytest
#   - the C++ build in build/ (the `ivytrace` binary, the C++ tests)
#   - the Python package installed (editable) into .venv
# Used by the README, .ci/run and the Dockerfile, so all three stay the same.
# Safe to run again: every step is idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  protobuf-compiler libprotobuf-dev zlib1g-dev libabsl-dev
  libonnx-dev libcli11-dev libspdlog-dev libfmt-dev libgtest-dev libpugixml-dev
  libgraphviz-dev graphviz nlohmann-json3-dev
  python3 python3-venv python3-dev
  chromium chromium-driver   # tests/e2e/test_viewer_html.py drives the HTML viewer headless
  clang libclang-rt-14-dev   # the sanitized build and the libFuzzer harnesses (scripts/fuzz.sh)
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python: a venv, so the system Python stays untouched. torch is pinned to the CPU build.
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -r python/requirements.txt

# C++ build.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)"

# Python package (generated protobuf modules come from the CMake build); this also compiles the
# optional C extension ivytrace._speedups (python/setup.py; the package works without it, slower).
.venv/bin/python -m pip install -q --no-deps --no-build-isolation -e python >/dev/null
echo "setup: done. binary: $ROOT/build/ivytrace   python: $ROOT/.venv/bin/python"
