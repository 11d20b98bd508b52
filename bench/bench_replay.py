"""Replay per call against the original eager call, with the backend compilers beside it.

    .venv/bin/python bench/bench_replay.py [--rounds 15] [--quick]

Rows (issue 16 "Replay per call vs the original eager call", issue 14 retargeting):
  * torch: the sample MLP at batch 1 and 64, transformers BERT with 2 layers (built from its config,
    random weights, HF_HUB_OFFLINE=1), 200 tiny torch ops;
  * NumPy: 100 small ops;  JAX: 100 small ops;
  * retargeting: the torch MLP (batch 64) replayed in JAX and in NumPy.
Columns: the eager call; ivytrace's replay (`load_plan` of the plan `trace_graph` exported, called
directly); the anchors measured in the same run: torch.compile and torch.jit.trace for torch,
jax.jit for JAX. Each figure is the median, over interleaved rounds (every candidate once per
round, in turn), of the mean time per call in that round. One intra-op thread everywhere.

"Eager" is the program called as written: torch modules under torch.no_grad() (the replay runs
without autograd too), NumPy as is, JAX op by op as JAX normally runs un-jitted code (NOT under
jax.disable_jit: jax.numpy functions keep their own per-op jit fast path).
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "samples"))

import ivytrace  # noqa: E402
from ivytrace.runtime.plan import load_plan  # noqa: E402


def per_call(fn, n):
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def measure(cands, rounds, target_s=0.05):
    """{name: median seconds per call} over interleaved rounds."""
    reps = {}
    for name, fn in cands.items():
        fn()
        fn()   # warm (compilers compile on the first calls)
        t = per_call(fn, 3)
        reps[name] = max(3, min(20000, int(target_s / max(t, 1e-7))))
    times = {name: [] for name in cands}
    for _ in range(rounds):
        for name, fn in cands.items():
            times[name].append(per_call(fn, reps[name]))
    return {name: statistics.median(v) for name, v in times.items()}


def block_jax(fn):
    def run():
        out = fn()
        import jax
        jax.block_until_ready(out)
        return out
    return run


# -- programs --------------------------------------------------------------------------------------
def tiny_torch(x):
    for i in range(50):
        x = x * 1.01
        x = x + 0.1
        x = torch.tanh(x)
        x = x - 0.05
    return x


def tiny_numpy(x):
    for i in range(25):
        x = x * 1.01
        x = x + 0.1
        x = np.tanh(x)
        x = x - 0.05
    return x


def tiny_jax(x):
    import jax.numpy as jnp
    for i in range(25):
        x = x * 1.01
        x = x + 0.1
        x = jnp.tanh(x)
        x = x - 0.05
    return x


def traced_plan(fn, args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # A module's plan with its weights as constants (freeze): trace_graph would return the
        # module itself, whose plan takes the parameters as inputs read live.
        is_module = isinstance(fn, torch.nn.Module)
        g = ivytrace.freeze(fn, args=args) if is_module else ivytrace.trace_graph(fn, args=args)
    return g, load_plan(g.plan_path, **kw)


def torch_rows(rounds, quick):
    import models
    rows = []
    programs = []
    for batch in (1, 64):
        m = models.make_model("mlp")
        programs.append((f"MLP, batch {batch} (torch)", m, (models.make_input("mlp", batch=batch),)))
    if not quick:
        from transformers import BertConfig, BertModel
        torch.manual_seed(0)
        cfg = BertConfig(num_hidden_layers=2, hidden_size=128, num_attention_heads=2, intermediate_size=512,
                         vocab_size=1000, max_position_embeddings=64)
        bert = BertModel(cfg).eval()
        ids = torch.randint(0, 1000, (1, 32))
        programs.append(("BERT 2 layers (torch, seq 32)", lambda i: bert(input_ids=i).last_hidden_state, (ids,)))
    programs.append(("200 tiny torch ops", tiny_torch, (torch.randn(8),)))
    for label, fn, args in programs:
        with torch.no_grad():
            g, plan = traced_plan(fn, args)
            want = fn(*args)
            got = plan(*args)
            got = got[0] if isinstance(got, (tuple, list)) else got
            assert torch.allclose(got, want, rtol=1e-4, atol=1e-5), label
            cands = {"eager": lambda: fn(*args), "ivytrace replay": lambda: plan(*args)}
            try:
                traced = torch.jit.trace(fn, args, check_trace=False)
                cands["torch.jit.trace"] = lambda: traced(*args)
            except Exception as e:   # noqa: BLE001 - an anchor that cannot run is reported, not fatal
                print(f"  {label}: torch.jit.trace failed: {type(e).__name__}: {e}")
            t0 = time.perf_counter()
            compiled = torch.compile(fn)
            compiled(*args)
            compile_s = time.perf_counter() - t0
            cands["torch.compile"] = lambda: compiled(*args)
            res = measure(cands, rounds)
        rows.append((label, res, f"torch.compile compile {compile_s:.1f} s"))
    return rows


def numpy_rows(rounds):
    x = np.random.RandomState(0).randn(8).astype(np.float32)
    g, plan = traced_plan(tiny_numpy, (x.copy(),))
    np.testing.assert_allclose(plan(x), tiny_numpy(x), rtol=1e-5)
    res = measure({"eager": lambda: tiny_numpy(x), "ivytrace replay": lambda: plan(x)}, rounds)
    return [("NumPy, 100 ops", res, "")]


def jax_rows(rounds):
    import jax
    import jax.numpy as jnp
    x = jnp.asarray(np.random.RandomState(0).randn(8).astype(np.float32))
    g, plan = traced_plan(tiny_jax, (x,))
    plan_jit = load_plan(g.plan_path, jit=True)
    np.testing.assert_array_equal(np.asarray(plan(x)), np.asarray(tiny_jax(x)))
    np.testing.assert_allclose(np.asarray(plan_jit(x)), np.asarray(tiny_jax(x)), rtol=1e-5)
    jitted = jax.jit(tiny_jax)
    res = measure({"eager": block_jax(lambda: tiny_jax(x)),
                   "ivytrace replay (op by op, jax.numpy)": block_jax(lambda: plan(x)),
                   "ivytrace replay, load_plan(jit=True)": block_jax(lambda: plan_jit(x)),
                   "jax.jit": block_jax(lambda: jitted(x))}, rounds)
    return [("JAX, 100 ops", res, "")]


def retarget_rows(rounds):
    import models
    m = models.make_model("mlp")
    x = models.make_input("mlp", batch=64)
    rows = []
    with torch.no_grad():
        g = ivytrace.freeze(m, args=(x,))   # the weights as constants, converted once at load
        want = m(x).numpy()
        xn = x.numpy()
        import jax.numpy as jnp
        xj = jnp.asarray(xn)
        for target, arg in (("numpy", xn), ("jax", xj)):
            plan = load_plan(g.plan_path, target=target, jit=target == "jax")
            np.testing.assert_allclose(np.asarray(plan(arg)), want, rtol=1e-4, atol=1e-5)
            cands = {"eager": lambda: m(x), f"ivytrace replay in {target}": block_jax(lambda: plan(arg))}
            rows.append((f"MLP, batch 64, torch -> {target}", measure(cands, rounds),
                         "eager = the torch module; inputs already in the target framework; JAX under jit=True"))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--quick", action="store_true", help="skip BERT (no transformers import)")
    a = ap.parse_args()
    rows = torch_rows(a.rounds, a.quick) + numpy_rows(a.rounds) + jax_rows(a.rounds) + retarget_rows(a.rounds)
    print(f"\nreplay per call vs eager (medians of {a.rounds} interleaved rounds, 1 intra-op thread)\n")
    print("| program | eager µs | candidate | µs | / eager |")
    print("|---|---|---|---|---|")
    for label, res, note in rows:
        eager = res["eager"]
        for name, t in res.items():
            if name == "eager":
                continue
            print(f"| {label} | {eager * 1e6:.1f} | {name} | {t * 1e6:.1f} | {t / eager:.3f}x |")
        if note:
            print(f"| {label} | | ({note}) | | |")


if __name__ == "__main__":
    main()
