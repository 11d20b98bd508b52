#!/usr/bin/env bash
# A long fuzz run, not part of CI: every harness in tests/fuzz for RUNS executions (default 2.5M
# each, 10M in total), on the corpus the CI runs grew, with a fresh seed. Prints each harness's
# executions, speed and peak memory; any finding fails it (the input is left in build-asan/fuzz/).
#   bash scripts/fuzz_long.sh                    # ~10M executions in total
#   RUNS=10000000 SEED=7 bash scripts/fuzz_long.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export RUNS=${RUNS:-2500000}
export SEED=${SEED:-$(date +%s)}
export SKIP_CTEST=1
bash scripts/fuzz.sh
