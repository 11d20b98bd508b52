"""Seed corpus for the fuzz harnesses, made from the programs in samples/: the trace of each
(trace_graph), and the graph file `ivytrace optimize` makes of it. Small inputs, so that the
fuzzer mutates records rather than tensor data.

    python tests/fuzz/make_corpus.py BUILD/ivytrace OUTDIR   -> OUTDIR/traces, OUTDIR/graphs
"""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "samples"))

import ivytrace  # noqa: E402
import numpy_programs  # noqa: E402
import seeds_example  # noqa: E402
import torch_programs  # noqa: E402


def main():
    binary, out = sys.argv[1], Path(sys.argv[2])
    traces, graphs = out / "traces", out / "graphs"
    traces.mkdir(parents=True, exist_ok=True)
    graphs.mkdir(parents=True, exist_ok=True)
    cases = {"seeds": (seeds_example.fn, (torch.tensor([1.0, 2.0, 3.0]), torch.tensor([2.0, 3.0, 4.0])))}
    for name, (fn, inputs) in torch_programs.PROGRAMS.items():
        cases["torch_" + name] = (fn, inputs(0))
    rng = np.random.RandomState(0)
    for name, (fn, inputs) in numpy_programs.PROGRAMS.items():
        cases["numpy_" + name] = (fn, inputs(rng))
    for name, (fn, args) in cases.items():
        trace = traces / f"{name}.ivt"
        try:
            ivytrace.trace_graph(fn, args=tuple(args)).save(trace)
        except Exception as e:  # a sample the recorder cannot trace is left out, loudly
            print(f"make_corpus: {name}: {e}", file=sys.stderr)
            continue
        if trace.stat().st_size > 256 << 10:  # big tensors: mutations would land in data
            trace.unlink()
            continue
        subprocess.run([binary, "optimize", trace, "-o", graphs / f"{name}.ivg"], check=False,
                       stderr=subprocess.DEVNULL)
    print(f"make_corpus: {len(os.listdir(traces))} traces, {len(os.listdir(graphs))} graphs in {out}")


if __name__ == "__main__":
    main()
