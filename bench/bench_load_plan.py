"""load_plan at scale: time and peak memory to load a plan of N steps (issue 16, "Scale").

    .venv/bin/python bench/bench_load_plan.py [--steps 100000 1000000] [--engines machine code]

The first load in a process also parses the schema files (the allow-list); that is done and
timed before the load. Each size is loaded by each engine: "machine" (the default for long plans: the steps run in
ivytrace._replay, see python/ivytrace/_replay.cc) and "code" (load_plan(..., machine=False): the
steps compiled as Python, what every plan did before). The replay's time per call of both is
measured too (median of 5 calls, after one).

The plan is a chain of torch steps as a long recorded program gives them (x = x + c; x = tanh(x);
... with a free_after on each step), written with write_plan_file to a temporary directory. Each
size is loaded in a fresh process, once; time is wall-clock of load_plan, memory the peak RSS
during the load (VmHWM, reset just before it) minus the RSS before it. The
replay of the loaded plan is run once and checked against the same chain run eagerly.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def make_plan(n, path):
    from ivytrace.runtime.plan import write_plan_file
    from ivytrace.v1 import common_pb2, plan_pb2
    plan = plan_pb2.Plan(name=f"chain{n}", framework="torch", num_slots=n + 1)
    plan.inputs.add(name="x").value.tensor.value = 0
    fns = ["torch.add", "torch.tanh", "torch.mul"]
    for i in range(n):
        s = plan.steps.add(function=fns[i % 3])
        s.args.add().tensor.value = i
        if i % 3 != 1:
            s.args.add().f = 0.5 if i % 3 == 0 else 0.9
        s.result.tensor.value = i + 1
        s.free_after.append(i)
    plan.outputs.tensor.value = n
    write_plan_file(path, plan)
    del common_pb2


def child(path, n, engine):
    import torch
    from ivytrace.runtime.plan import load_plan

    def status(field):
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))
    # The schemas (the allow-list) are parsed once per process, at the first load: timed apart.
    from ivytrace.runtime.allowlist import default_allowlist
    t0 = time.perf_counter()
    default_allowlist()
    schemas_s = time.perf_counter() - t0
    # Reset the peak (VmHWM) to the current RSS, so imports' transient peaks do not hide the load's.
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    base = status("VmRSS")
    t0 = time.perf_counter()
    plan = load_plan(path, machine=engine == "machine")
    t = time.perf_counter() - t0
    peak = status("VmHWM")
    x = torch.randn(4)
    want = x
    for i in range(n):
        want = torch.add(want, 0.5) if i % 3 == 0 else torch.tanh(want) if i % 3 == 1 else torch.mul(want, 0.9)
    ok = torch.allclose(plan(x), want)
    calls = []
    for _ in range(5):
        t1 = time.perf_counter()
        plan(x)
        calls.append(time.perf_counter() - t1)
    print(json.dumps({"steps": n, "load_s": t, "peak_mb": (peak - base) / 1024, "ok": ok,
                      "call_ms": sorted(calls)[2] * 1e3, "machine": plan.machine, "schemas_s": schemas_s,
                      "chunked": "def _c0(" in plan.source}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, nargs="*", default=[100_000, 1_000_000])
    ap.add_argument("--engines", nargs="*", default=["machine", "code"], choices=["machine", "code"])
    ap.add_argument("--child", nargs=3)
    a = ap.parse_args()
    if a.child:
        child(a.child[0], int(a.child[1]), a.child[2])
        return
    with tempfile.TemporaryDirectory() as d:
        for n in a.steps:
            path = os.path.join(d, f"chain{n}.ivyplan")
            t0 = time.perf_counter()
            make_plan(n, path)
            made = time.perf_counter() - t0
            for engine in a.engines:
                r = subprocess.run([sys.executable, __file__, "--child", path, str(n), engine],
                                   capture_output=True, text=True)
                if r.returncode:
                    print(r.stderr)
                    raise SystemExit(1)
                res = json.loads(r.stdout.strip().splitlines()[-1])
                print(f"{n:>9} steps, {engine:>7}: load_plan {res['load_s']:.2f} s, peak +{res['peak_mb']:.0f} MB, "
                      f"replay {res['call_ms']:.1f} ms/call, correct={res['ok']}, chunked={res['chunked']}, "
                      f"schemas parsed before it in {res['schemas_s']:.2f} s  "
                      f"(plan file {os.path.getsize(path) / 1e6:.0f} MB, made in {made:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
