"""The larger run of the symbolic-shape differential test (the suite runs a few dozen programs).

Generates N programs from the steps of tests/python/test_symbolic_shapes.py (shape arithmetic,
views, reductions, branches and loops on shapes), traces each at one shape in torch or NumPy,
replays it at two others against eager, and prints how many replays matched, raised a guard or
were wrong. Also prints the mean time to trace one program and to replay it beside the eager call.

    IVYTRACE_BIN=$PWD/build/ivytrace .venv/bin/python bench/bench_symbolic.py --programs 500
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))

import ivytrace  # noqa: E402
from test_symbolic_shapes import FRAMEWORKS, STEPS, _data, _program, _same  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    counts = {"match": 0, "guard": 0, "wrong": 0, "program fails eagerly": 0}
    wrong = []
    trace_s = replay_s = eager_s = 0.0
    replays = 0
    names = sorted(STEPS)
    for i in range(a.programs):
        steps = [rng.choice(names) for _ in range(rng.randint(1, 4))]
        framework = rng.choice(["torch", "numpy"])
        F = FRAMEWORKS[framework]
        shapes = [(rng.randint(1, 6), rng.randint(1, 6)) for _ in range(3)]
        fn = _program(steps, F)
        x0 = _data(F, shapes[0], 0)
        try:
            fn(x0)
        except Exception:   # noqa: BLE001 - fails at its own shape: not a program
            counts["program fails eagerly"] += 1
            continue
        t0 = time.perf_counter()
        graph = ivytrace.trace_graph(fn, args=(x0,))
        trace_s += time.perf_counter() - t0
        for j, shape in enumerate(shapes[1:], start=1):
            x = _data(F, shape, j)
            try:
                t0 = time.perf_counter()
                want = fn(x)
                eager_s += time.perf_counter() - t0
            except Exception:   # noqa: BLE001
                counts["program fails eagerly"] += 1
                continue
            try:
                t0 = time.perf_counter()
                got = graph(x)
                replay_s += time.perf_counter() - t0
                replays += 1
            except ivytrace.GuardError:
                counts["guard"] += 1
                continue
            if _same(F, got, want):
                counts["match"] += 1
            else:
                counts["wrong"] += 1
                wrong.append((framework, steps, shapes[0], shape))
    print(f"programs: {a.programs} (seed {a.seed}), replays at other shapes: {sum(counts.values())}")
    for k, v in counts.items():
        print(f"  {k:24s} {v}")
    print(f"mean trace time per program: {trace_s / a.programs * 1e3:.1f} ms")
    if replays:
        print(f"mean replay / eager call: {replay_s / replays * 1e6:.0f} us / {eager_s / max(replays, 1) * 1e6:.0f} us")
    for w in wrong[:10]:
        print("WRONG:", w)
    return 1 if counts["wrong"] else 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
