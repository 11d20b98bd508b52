"""JAX recording and replay (issue 3). Prints figures measured in this run, each beside the anchors
a JAX user has: the program run eagerly (op by op, `jax.disable_jit()`, which is how the recorder
runs it) and compiled with `jax.jit`.

  (a) recording cost: one call of each sample program (samples/jax_programs.py) under the recorder,
      beside the same call run op by op without it (ratio), and the cost per recorded primitive;
  (b) replay: a call of the exported plan (straight-line `primitive.bind` calls) beside the eager
      call and the jitted call of the program.

    .venv/bin/python bench/bench_jax.py [--repeat 5]
Benchmarks are not tests: nothing here asserts on time.
"""
import argparse
import os
import sys
import tempfile
import warnings
from pathlib import Path

import jax
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "samples"))
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "python"))
import jax_programs as progs  # noqa: E402
from timing import best_of  # noqa: E402

import ivytrace  # noqa: E402
from ivytrace.recorder.reader import read_trace  # noqa: E402
from ivytrace.recorder.recorder import Recorder  # noqa: E402
from ivytrace.region import bind_inputs, signature_of  # noqa: E402

NAMES = ["mlp", "cnn", "attention", "rnn", "inplace", "random_ops", "jit_nested"]


def block(out):
    for leaf in jax.tree_util.tree_leaves(out):
        leaf.block_until_ready()


def eager(fn, args):
    with jax.disable_jit():
        block(fn(*args))


def recorded(rec, fn, args):
    """One call of fn as a region of an already started recorder (as a user recording a program
    sees it: the recorder is set up once)."""
    rid = rec.region_begin(fn.__name__, bind_inputs(signature_of(fn), args, {}), __file__, 0)
    out = fn(*args)
    block(out)
    rec.region_end(rid, out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    print(f"jax {jax.__version__}, backend {jax.default_backend()}, best of {a.repeat} (median in brackets)\n")
    print(f"{'program':12} {'ops':>5} {'eager ms':>15} {'recorded ms':>15} {'ratio':>6} {'us/op':>6}   "
          f"{'plan ms':>15} {'jit ms':>15} {'plan/eager':>10}")
    with tempfile.TemporaryDirectory() as d, warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name in NAMES:
            fn, make = progs.PROGRAMS[name]
            args = make(np.random.RandomState(0))
            eager(fn, args)                                   # compile every primitive once
            jitted = jax.jit(fn)
            block(jitted(*args))
            path = os.path.join(d, f"{name}.ivytrace")
            e_best, e_med = best_of(lambda: eager(fn, args), a.repeat)
            rec = Recorder(path, frameworks=("jax",))
            rec.start()
            try:
                recorded(rec, fn, args)                       # warm up the recorder's caches
                r_best, r_med = best_of(lambda: recorded(rec, fn, args), a.repeat)
            finally:
                rec.stop()
            n_ops = len(read_trace(path).ops()) // (a.repeat + 1)
            graph = ivytrace.trace_graph(fn, args=args)
            block(graph(*args))
            p_best, p_med = best_of(lambda: block(graph(*args)), a.repeat)
            j_best, j_med = best_of(lambda: block(jitted(*args)), a.repeat)
            per_op = (r_best - e_best) / max(n_ops, 1) * 1e6
            print(f"{name:12} {n_ops:5d} {e_best*1e3:7.2f} ({e_med*1e3:5.2f}) {r_best*1e3:7.2f} ({r_med*1e3:5.2f}) "
                  f"{r_best/e_best:6.2f} {per_op:6.1f}   {p_best*1e3:7.2f} ({p_med*1e3:5.2f}) "
                  f"{j_best*1e3:7.2f} ({j_med*1e3:5.2f}) {p_best/e_best:10.2f}")


if __name__ == "__main__":
    main()
