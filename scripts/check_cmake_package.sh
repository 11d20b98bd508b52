#!/usr/bin/env bash
# Builds ivytrace with the Unix Makefiles generator (scripts/setup.sh uses Ninja), installs it into
# a scratch prefix, then builds tests/cmake_consumer against it with find_package(ivytrace) and
# checks that the consumer, linked to ivytrace::core, reads a recorded trace as the CLI does.
# Usage: bash scripts/check_cmake_package.sh [WORKDIR]   (default: build-package/)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
WORK=${1:-$ROOT/build-package}
JOBS=${JOBS:-2}
rm -rf "$WORK"
cmake -S . -B "$WORK/build" -G "Unix Makefiles" -DIVYTRACE_BUILD_TESTS=OFF -DCMAKE_INSTALL_PREFIX="$WORK/prefix" >/dev/null
cmake --build "$WORK/build" -j "$JOBS" >/dev/null
cmake --install "$WORK/build" >/dev/null
cmake -S tests/cmake_consumer -B "$WORK/consumer" -G "Unix Makefiles" -DCMAKE_PREFIX_PATH="$WORK/prefix" >/dev/null
cmake --build "$WORK/consumer" -j "$JOBS" >/dev/null
BIN="$WORK/prefix/bin/ivytrace"
"$BIN" record -o "$WORK/mlp.ivt" -- "$ROOT/.venv/bin/python" samples/run_model.py mlp >/dev/null
want=$("$BIN" inspect "$WORK/mlp.ivt" --graph --json | "$ROOT/.venv/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["node_count"])')
got=$("$WORK/consumer/count_nodes" "$WORK/mlp.ivt")
if [ "$got" != "nodes=$want" ]; then
  echo "check_cmake_package: the consumer read $got, the CLI $want nodes" >&2
  exit 1
fi
echo "check_cmake_package: ok (Unix Makefiles build, install, find_package(ivytrace) -> ivytrace::core: $got)"
