#!/usr/bin/env bash
# Runs two ivytrace binaries on the same traces and compares every output byte for byte (cmp):
# the graph file of `optimize`, the ONNX models (dynamic and --static) from the trace and from the
# graph file, the plan, `inspect --json` of the trace and of the graph, `diff --json` trace vs
# graph, and each command's stdout, stderr and exit status. For changes that must not change any
# output (the scaling work of issue 16 item 5: bench/RESULTS.md).
#
#   bash scripts/check_same_outputs.sh OLD_BIN NEW_BIN TRACE...
#
# SKIP_DIFF=1 leaves out `inspect --json` of the graph and `diff --json` (minutes at 1M ops).
# Exit status 0 when everything matches, 1 otherwise (each difference is listed).
set -uo pipefail
[ $# -ge 3 ] || { echo "usage: $0 OLD_BIN NEW_BIN TRACE..." >&2; exit 2; }
OLD=$1 NEW=$2
shift 2
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail=0

run() {  # side tag argv... : runs, keeps stdout/stderr/status; output paths use @ for the side's dir
  local side=$1 tag=$2 bin
  shift 2
  [ "$side" = old ] && bin=$OLD || bin=$NEW
  local args=()
  for a in "$@"; do args+=("${a//@/$W/$side}"); done
  "$bin" "${args[@]}" >"$W/$side/$tag.out" 2>"$W/$side/$tag.err"
  echo $? >"$W/$side/$tag.status"
}

for t in "$@"; do
  base=$(basename "$t")
  rm -rf "$W/old" "$W/new"
  mkdir -p "$W/old" "$W/new"
  for side in old new; do
    run $side optimize optimize "$t" -o @/g.ivg
    run $side onnx export "$t" --to onnx -o @/m.onnx
    run $side onnx_static export "$t" --to onnx --static -o @/ms.onnx
    run $side onnx_graph export @/g.ivg --to onnx -o @/mg.onnx
    run $side plan export "$t" --to plan -o @/p.ivplan
    run $side inspect_trace inspect --json "$t"
    if [ "${SKIP_DIFF:-0}" != 1 ]; then
      run $side inspect_graph inspect --json @/g.ivg
      run $side diff diff --json "$t" @/g.ivg
    fi
  done
  # Messages name the side's directory; compare them with it replaced.
  for f in "$W"/old/*; do
    name=$(basename "$f")
    n="$W/new/$name"
    if [ ! -e "$n" ]; then
      echo "DIFFERS $base: $name only in the old run"; fail=1; continue
    fi
    case $name in
      *.out|*.err)
        if ! cmp -s <(sed "s#$W/old#DIR#g" "$f") <(sed "s#$W/new#DIR#g" "$n"); then
          echo "DIFFERS $base: $name"; fail=1
        fi ;;
      *)
        if ! cmp -s "$f" "$n"; then echo "DIFFERS $base: $name"; fail=1; fi ;;
    esac
  done
  for n in "$W"/new/*; do
    [ -e "$W/old/$(basename "$n")" ] || { echo "DIFFERS $base: $(basename "$n") only in the new run"; fail=1; }
  done
  echo "checked $base: $(ls "$W/old" | wc -l) files$( [ $fail = 0 ] && echo ', all identical')"
done
exit $fail
