#!/usr/bin/env bash
# Installs everything ivytrace needs on Debian 12 and builds it.
#   - Debian packages: compiler, CMake, protobuf, ONNX, CLI11, spdlog, GoogleTest, Graphviz
#   - a Python virtual environment in .venv with torch (CPU build), numpy, onnx, onnxruntime, pytest
#   - the C++ build in build/ (the `ivytrace` binary, the C++ tests, the C extension ivytrace._speedups)
#   - the Python package of this checkout on .venv's path (python/, used in place)
#   - build/wheelhouse: the wheels a fresh venv needs to install the ivytrace wheel offline
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

# C++ build, and the C extension ivytrace._speedups next to the sources (python/ivytrace), like the
# generated protobuf modules.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DIVYTRACE_PYTHON_EXTENSION=ON -DPython_EXECUTABLE="$ROOT/.venv/bin/python" >/dev/null
cmake --build build -j "$(nproc)"

# The Python package, used in place: python/ goes on .venv's sys.path through a .pth file (after
# $PYTHONPATH, so a test or a program that puts another checkout first gets that one). Its generated
# files come from the CMake build above. An editable install (pip install -e python) would build
# the CLI a second time, and its import hook would take precedence over $PYTHONPATH.
SITE=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if .venv/bin/python -m pip show -q ivytrace >/dev/null 2>&1; then   # an editable install of old
  .venv/bin/python -m pip uninstall -q -y ivytrace >/dev/null
fi
echo "$ROOT/python" > "$SITE/ivytrace-checkout.pth"

# Wheels a fresh venv needs to install the ivytrace wheel without a network (tests/e2e/test_wheel.py
# builds the wheel from build/ and installs it with --no-index --find-links build/wheelhouse): the
# package's dependencies at .venv's versions, and scikit-build-core for an isolated build.
WHEELHOUSE=build/wheelhouse
PINS=$(.venv/bin/python -m pip freeze | grep -iE '^(numpy|protobuf|scikit[-_]build[-_]core|packaging|pathspec)==')
# shellcheck disable=SC2086  # one word per requirement
.venv/bin/python -m pip download -q --no-index --find-links "$WHEELHOUSE" -d "$WHEELHOUSE" $PINS >/dev/null 2>&1 \
  || .venv/bin/python -m pip download -q --only-binary=:all: -d "$WHEELHOUSE" $PINS >/dev/null
echo "setup: done. binary: $ROOT/build/ivytrace   python: $ROOT/.venv/bin/python"
