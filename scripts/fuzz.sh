#!/usr/bin/env bash
# Sanitized build + fuzzing, with clang: builds build-asan/ (AddressSanitizer +
# UndefinedBehaviorSanitizer on every target, libFuzzer coverage on the library), runs the C++
# tests there, makes a seed corpus from samples/ and runs each libFuzzer harness in tests/fuzz/.
#
#   bash scripts/fuzz.sh                 # CI: each harness RUNS (default 100000) executions, seeded
#   RUNS=5000000 bash scripts/fuzz.sh    # a long run (not CI): see also scripts/fuzz_long.sh
#
# Any sanitizer finding, crash, leak or timeout fails the script; libFuzzer leaves the input that
# caused it as build-asan/fuzz/crash-* (replay: build-asan/fuzz_X build-asan/fuzz/crash-...).
# REQUIRES: scripts/setup.sh has run (the gcc build makes the seed corpus).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-100000}
SEED=${SEED:-1}
JOBS=${JOBS:-2}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
# Graphviz's font and text-layout libraries leak by design: tests/fuzz/lsan.supp names them.
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/fuzz/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DIVYTRACE_SANITIZE=ON -DIVYTRACE_FUZZ=ON >/dev/null
HARNESSES=(fuzz_trace_reader fuzz_graph_builder fuzz_graph_file fuzz_exporters)
# The library, its tests and the harnesses (the CLI itself is tested in the gcc build).
cmake --build build-asan -j "$JOBS" --target ivytrace_tests "${HARNESSES[@]}"
if [ "${SKIP_CTEST:-0}" != 1 ]; then
  ctest --test-dir build-asan --output-on-failure -j "$JOBS"
fi

W=build-asan/fuzz
mkdir -p "$W"
if [ ! -d "$W/seeds/traces" ]; then
  .venv/bin/python tests/fuzz/make_corpus.py build/ivytrace "$W/seeds"
fi
declare -A SEEDS=([fuzz_trace_reader]=traces [fuzz_graph_builder]=traces [fuzz_graph_file]=graphs [fuzz_exporters]=graphs)
run_one() {  # harness -> its log; non-zero on a finding
  local h=$1 corpus="$W/corpus_$1" start
  mkdir -p "$corpus"
  start=$(date +%s)
  # -max_len: the seeds are at most 256 KiB; -rss_limit_mb/-timeout: a blow-up is a finding.
  if ! "build-asan/$h" -runs="$RUNS" -seed="$SEED" -max_len=262144 -rss_limit_mb=2048 -timeout=25 \
      -print_final_stats=1 -artifact_prefix="$W/" "$corpus" "$W/seeds/${SEEDS[$h]}" >"$W/$h.log" 2>&1; then
    tail -60 "$W/$h.log"
    echo "fuzz: $h FAILED (log: $W/$h.log)"
    return 1
  fi
  echo "fuzz: $h: $(grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' "$W/$h.log" | tr '\n' ' ')($(( $(date +%s) - start )) s)"
}
# $JOBS harnesses at a time.
echo "fuzz: ${#HARNESSES[@]} harnesses, $RUNS runs each, seed $SEED"
pids=()
failed=0
for h in "${HARNESSES[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || failed=1; done
  run_one "$h" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || failed=1; done
[ "$failed" = 0 ] || { echo "fuzz: a harness found something"; exit 1; }
echo "fuzz: no finding"
