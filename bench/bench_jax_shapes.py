"""JAX graphs that follow their inputs' shapes (recorder/jax_shapes.py): the larger differential run,
and what the symbolic trace costs at capture.

1. Generates N programs from the steps of tests/python/test_jax_shapes.py, traces each at one shape
   and replays it at other batch sizes and other last dims against eager JAX: how many replays
   matched, raised a GuardError, or were wrong (must be 0); and how many of the replays at another
   batch of an all-polymorphic program matched without a retrace.
2. flax models (MLP, CNN, a transformer block with Embed and causal attention, a BatchNorm
   training step taking the variables as an argument): trace_graph time with the symbolic shapes
   and without them (IVYTRACE_JAX_SYMBOLIC_SHAPES=0), warm, medians; and how many traces a
   LazyGraph needs for three batch sizes either way.

    IVYTRACE_BIN=$PWD/build/ivytrace .venv/bin/python bench/bench_jax_shapes.py --programs 300
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import ivytrace  # noqa: E402
from test_jax_shapes import POLY, STEPS, _program, _x  # noqa: E402


def differential(n, seed):
    rng = random.Random(seed)
    counts = {"match": 0, "guard": 0, "wrong": 0}
    poly_batch = [0, 0]   # replays at another batch of all-POLY programs: matched, total
    names = sorted(STEPS)
    for _ in range(n):
        steps = [rng.choice(names) for _ in range(rng.randint(1, 4))]
        shape = [rng.randint(2, 5) for _ in range(rng.randint(2, 3))]
        fn = _program(steps)
        g = ivytrace.trace_graph(fn, args=(_x(shape),))
        for k in range(2):
            for new in ([rng.randint(1, 7)] + shape[1:], shape[:-1] + [rng.randint(1, 6)]):
                x = _x(new, k + 1)
                want = np.asarray(fn(x))
                try:
                    got = np.asarray(g(x))
                except ivytrace.GuardError:
                    counts["guard"] += 1
                    ok = False
                else:
                    ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)
                    counts["match" if ok else "wrong"] += 1
                    if not ok:
                        err = float(np.nanmax(np.abs(got - want))) if got.shape == want.shape else None
                        print(f"WRONG: {steps} traced at {shape}, replayed at {new}: "
                              f"shapes {got.shape} vs {want.shape}, max abs error {err}", flush=True)
                if set(steps) <= set(POLY) and new[1:] == shape[1:]:
                    poly_batch[1] += 1
                    poly_batch[0] += ok
    return counts, poly_batch


def _models():
    import flax.linen as nn

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.LayerNorm()(nn.gelu(nn.Dense(64)(x)))
            return nn.log_softmax(nn.Dense(10)(x))

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.max_pool(nn.relu(nn.Conv(16, (3, 3))(x)), (2, 2), strides=(2, 2))
            x = nn.avg_pool(nn.relu(nn.Conv(32, (3, 3), strides=(2, 2))(x)), (2, 2), strides=(2, 2))
            return nn.Dense(10)(x.reshape((x.shape[0], -1)))

    class Block(nn.Module):
        @nn.compact
        def __call__(self, ids):
            x = nn.Embed(100, 32)(ids) + nn.Embed(64, 32)(jnp.arange(ids.shape[1])[None, :])
            x = x + nn.MultiHeadDotProductAttention(num_heads=4)(nn.LayerNorm()(x), mask=nn.make_causal_mask(ids))
            x = x + nn.Dense(32)(nn.gelu(nn.Dense(64)(nn.LayerNorm()(x))))
            return nn.Dense(100)(x[:, -1])

    class BN(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(4)(nn.relu(nn.BatchNorm(use_running_average=False)(nn.Dense(32)(x))))

    rs = np.random.RandomState(0)
    out = []
    for name, m, x, batches in (
            ("flax MLP", MLP(), rs.randn(8, 32).astype(np.float32), (8, 3, 17)),
            ("flax CNN", CNN(), rs.randn(8, 16, 16, 3).astype(np.float32), (8, 3, 17)),
            ("flax transformer block", Block(), rs.randint(0, 100, (4, 16)).astype(np.int32), (4, 2, 9))):
        v = m.init(jax.random.PRNGKey(0), x)
        out.append((name, (lambda m, v: lambda x: m.apply(v, x))(m, v), (jnp.asarray(x),),
                    lambda b, x=x: (jnp.asarray(np.resize(x, (b, *x.shape[1:]))),)))
    m = BN()
    x = rs.randn(8, 16).astype(np.float32)
    v = m.init(jax.random.PRNGKey(0), x)
    out.append(("flax BatchNorm train step fn(variables, x)",
                lambda v, x: m.apply(v, x, mutable=["batch_stats"]), (v, jnp.asarray(x)),
                lambda b, v=v, x=x: (v, jnp.asarray(np.resize(x, (b, *x.shape[1:])))), ))
    return out


def capture(repeat):
    rows = []
    for name, fn, args, at in _models():
        row = [name]
        for env in ("1", "0"):
            os.environ["IVYTRACE_JAX_SYMBOLIC_SHAPES"] = env
            ivytrace.trace_graph(fn, args=args)   # warm
            times = []
            for _ in range(repeat):
                t = time.perf_counter()
                ivytrace.trace_graph(fn, args=args)
                times.append(time.perf_counter() - t)
            g = ivytrace.trace_graph(fn, args=args, retrace=True)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for b in (args[-1].shape[0], 3, 11):
                    g(*at(b))
            row += [statistics.median(times) * 1e3, g.traces]
        os.environ["IVYTRACE_JAX_SYMBOLIC_SHAPES"] = "1"
        rows.append(row)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-capture", action="store_true", help="only the differential run")
    a = ap.parse_args()
    t = time.perf_counter()
    counts, poly = differential(a.programs, a.seed)
    print(f"## {a.programs} generated programs, 4 replays each at another batch or last dim "
          f"({time.perf_counter() - t:.0f} s)\n")
    print("| replays | matched eager | raised GuardError | wrong |\n|---|---|---|---|")
    print(f"| {sum(counts.values())} | {counts['match']} | {counts['guard']} | **{counts['wrong']}** |\n")
    print(f"Replays at another batch of programs made only of polymorphic steps: {poly[0]} of {poly[1]} "
          f"matched with no retrace.\n")
    if a.no_capture:
        return
    print("## capture (trace_graph, warm, median ms) and traces for batch sizes {recorded, 3, 11}\n")
    print("| model | symbolic shapes ms | traces | static shapes ms | traces |\n|---|---|---|---|---|")
    for name, ms_s, tr_s, ms_0, tr_0 in capture(a.repeat):
        print(f"| {name} | {ms_s:.0f} | {tr_s} | {ms_0:.0f} | {tr_0} |")


if __name__ == "__main__":
    main()
