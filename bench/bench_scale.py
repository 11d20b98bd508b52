"""Scale benchmark (issue 16, "Scale"): every CLI command on recorded traces of N/10 and N ops
(and optionally 4N), wall time and peak memory of the process, and the time ratio N/10 -> N.
Prints figures measured in this run; nothing here asserts on time.

The traces are real recordings (`bench_foundation.record_many_ops`: n small tensor ops, alternating
`y + 1.0` and `y * 0.5` on a region input), so every op is one graph node and one ONNX node.

Peak memory is the child's maximum resident set (getrusage RUSAGE_CHILDREN, read after each run;
it is a running maximum, so each command runs in a fresh `python -c` wrapper that reports its own).

    .venv/bin/python bench/bench_scale.py [--ops 1000000] [--repeat 3] [--big] [--commands ...]

Targets (issue 16 item 5): export --to onnx at 1M ops <= 2 s and <= 1 GB; optimize >= 2M nodes/s
end to end; 10x the ops costs <= 11x the time for every command.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
BIN = os.environ.get("IVYTRACE_BIN") or str(REPO / "build" / "ivytrace")

# Runs argv, prints "<wall s> <peak RSS bytes> <CPU s (user + system)>" of the child (its own
# getrusage). CPU time is shown beside wall time because the machine is shared: on a loaded
# machine wall time includes waiting for a core, CPU time does not.
_WRAP = r"""
import resource, subprocess, sys, time
t0 = time.perf_counter()
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
wall = time.perf_counter() - t0
if r.returncode != 0:
    sys.stderr.buffer.write(r.stderr[-2000:])
    sys.exit(r.returncode)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(wall, u.ru_maxrss * 1024, u.ru_utime + u.ru_stime)
"""


def measure(argv):
    out = subprocess.run([sys.executable, "-c", _WRAP, *argv], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({out.returncode}): {out.stderr}")
    wall, rss, cpu = out.stdout.split()
    return float(wall), int(rss), float(cpu)


def commands(tmp, trace, n):
    """(label, argv) per command, in the order they run (later ones read earlier outputs)."""
    graph, onnx, plan = tmp / f"g{n}.ivg", tmp / f"m{n}.onnx", tmp / f"p{n}.ivplan"
    return [
        ("inspect", [BIN, "inspect", "--json", str(trace)]),
        ("optimize", [BIN, "optimize", str(trace), "-o", str(graph)]),
        ("export --to onnx", [BIN, "export", str(trace), "--to", "onnx", "-o", str(onnx)]),
        ("export --to plan", [BIN, "export", str(trace), "--to", "plan", "-o", str(plan)]),
        ("inspect graph", [BIN, "inspect", "--json", str(graph)]),
        ("diff trace graph", [BIN, "diff", str(trace), str(graph)]),
        ("viz (html)", [BIN, "viz", str(graph), "-o", str(tmp / f"v{n}.html")]),
        # (replays the artifact in Python: onnxruntime, or the plan runtime's load_plan)
        ("check onnx", [BIN, "check", str(onnx), "--against", str(trace), "--python", sys.executable]),
        ("check plan", [BIN, "check", str(plan), "--against", str(trace), "--python", sys.executable]),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3, help="runs per command and size (best is shown)")
    ap.add_argument("--big", action="store_true", help="also 4N ops (needs ~12 GB free for export today)")
    ap.add_argument("--commands", default="", help="comma-separated labels to run (default: all; the "
                    "`check` rows take minutes at 1M ops)")
    ap.add_argument("--keep", default="", help="directory to keep (and reuse) the recorded traces in")
    ap.add_argument("--json", default="", help="also write the figures to this JSON file")
    a = ap.parse_args()
    from bench_foundation import record_many_ops

    sizes = [a.ops // 10, a.ops] + ([4 * a.ops] if a.big else [])
    wanted = {c.strip() for c in a.commands.split(",") if c.strip()}
    results = {}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        keep = Path(a.keep) if a.keep else tmp
        keep.mkdir(parents=True, exist_ok=True)
        for n in sizes:
            trace = keep / f"scale_{n}.ivt"
            if not trace.exists():
                t0 = time.perf_counter()
                record_many_ops(n, trace)
                print(f"recorded {n:,} ops in {time.perf_counter() - t0:.1f} s "
                      f"({trace.stat().st_size / 2**20:.0f} MiB)", flush=True)
            for label, argv in commands(tmp, trace, n):
                if wanted and label not in wanted:
                    continue
                runs = [measure(argv) for _ in range(a.repeat)]
                wall = min(r[0] for r in runs)
                rss = max(r[1] for r in runs)
                cpu = min(r[2] for r in runs)
                results.setdefault(label, {})[n] = (wall, rss, cpu)
                print(f"  {n:>10,d} ops  {label:18s} {wall:7.3f} s wall {cpu:7.3f} s CPU {rss / 1e6:8.0f} MB"
                      f"  {n / wall / 1e6:6.2f} M ops/s", flush=True)
            for f in tmp.iterdir():
                f.unlink()

    small, big = sizes[0], sizes[1]
    print(f"\n| command | {small:,} ops | {big:,} ops | {small:,} → {big:,} (wall / CPU) |"
          + (f" {sizes[2]:,} ops |" if a.big else "") + " against the target |")
    print("|---|---|---|---|" + ("---|" if a.big else "") + "---|")
    for label, by_n in results.items():
        if small not in by_n or big not in by_n:
            continue
        (ws, ms, cs), (wb, mb, cb) = by_n[small], by_n[big]
        ratio = wb / ws
        verdict = lambda r: "met" if r <= 11 else "NOT met"  # noqa: E731
        target = [f"10x ops ≤ 11x time: {verdict(ratio)} (wall), {verdict(cb / cs)} (CPU)"]
        if label == "export --to onnx":
            target.append(f"≤ 2 s: {wb / 2:.2f}x the target; ≤ 1 GB: {mb / 1e9:.2f}x the target")
        if label == "optimize":
            target.append(f"≥ 2M ops/s: {big / wb / 1e6:.2f}M ops/s = {big / wb / 2e6:.2f}x the target")
        row = (f"| `{label}` | {ws:.3f} s, {ms / 1e6:.0f} MB | {wb:.3f} s, {mb / 1e6:.0f} MB | "
               f"{ratio:.2f}x / {cb / cs:.2f}x |")
        if a.big and sizes[2] in by_n:
            w4, m4, _ = by_n[sizes[2]]
            row += f" {w4:.2f} s, {m4 / 1e9:.2f} GB |"
        print(row + " " + "; ".join(target) + " |")
    if a.json:
        Path(a.json).write_text(json.dumps({k: {str(n): v for n, v in d.items()} for k, d in results.items()},
                                           indent=1))


if __name__ == "__main__":
    main()
