"""Foundation benchmarks. Prints figures and ratios against the anchor tools, measured in this run.

  (a) capture-to-ONNX for the sample CNN: ivytrace (record the forward pass in process, then
      `ivytrace export --to onnx`) beside torch.onnx.export (TorchScript exporter, and the dynamo
      exporter when onnxscript is installed) and torch.jit.trace of the same model.
  (b) `ivytrace inspect` throughput, in ops per second, on a recorded trace of >= 1M ops
      (target: >= 2 million ops/s on one core).

    .venv/bin/python bench/bench_foundation.py [--ops 1000000] [--repeat 5]
Benchmarks are not tests: nothing here asserts on time.
"""
import argparse
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "samples"))
sys.path.insert(0, str(REPO / "bench"))
from timing import best_of  # noqa: E402
from models import make_input, make_model  # noqa: E402

import ivytrace  # noqa: E402
from ivytrace import Recorder  # noqa: E402

BIN = os.environ.get("IVYTRACE_BIN") or str(REPO / "build" / "ivytrace")



def bench_capture_to_onnx(repeat, tmp):
    model = make_model("cnn")
    x = make_input("cnn")
    results = {}

    def ivytrace_capture_export():
        trace, out = tmp / "cnn.ivt", tmp / "cnn_ivytrace.onnx"
        with torch.no_grad():
            graph = ivytrace.freeze(model, args=(x,))   # a Graph with the weights as constants
        graph.save(trace)
        subprocess.run([BIN, "export", str(trace), "--to", "onnx", "-o", str(out)], check=True)

    results["ivytrace record + export"] = best_of(ivytrace_capture_export, repeat)

    def onnx_export_torchscript():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (x,), str(tmp / "cnn_ts.onnx"), dynamo=False, opset_version=17)

    try:
        results["torch.onnx.export (TorchScript)"] = best_of(onnx_export_torchscript, repeat)
    except Exception as e:  # the legacy exporter may be gone in a future torch
        print(f"  torch.onnx.export(dynamo=False) unavailable: {type(e).__name__}: {e}")

    try:
        import onnxscript  # noqa: F401

        def onnx_export_dynamo():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(model, (x,), str(tmp / "cnn_dynamo.onnx"), dynamo=True)

        results["torch.onnx.export (dynamo)"] = best_of(onnx_export_dynamo, repeat)
    except ImportError:
        print("  torch.onnx.export(dynamo=True) not measured: onnxscript is not installed")

    def jit_trace():
        with torch.no_grad():
            torch.jit.trace(model, (x,))

    results["torch.jit.trace (capture only)"] = best_of(jit_trace, repeat)

    base = results["ivytrace record + export"][0]
    print("\n(a) capture-to-ONNX, sample CNN (SmallResNet, 11 convs), best of", repeat)
    print(f"  {'tool':38s} {'best ms':>9s} {'median ms':>10s} {'ivytrace = 1':>13s}")
    for name, (best, median) in results.items():
        print(f"  {name:38s} {best * 1e3:9.1f} {median * 1e3:10.1f} {best / base:12.2f}x")


def record_many_ops(n, path):
    """A real recorded program of n small tensor ops on a region input (ops on constants would
    also store their values for array caching: a different, heavier trace)."""

    @ivytrace.region("loop")
    def loop(x):
        y = x
        for _ in range(n // 2):
            y = y + 1.0
            y = y * 0.5
        return y

    with Recorder(path):
        loop(torch.ones(4))


def bench_inspect(n_ops, repeat, tmp):
    trace = tmp / "many.ivt"
    t0 = time.perf_counter()
    record_many_ops(n_ops, trace)
    rec_s = time.perf_counter() - t0
    size = trace.stat().st_size
    print(f"\n(b) inspect throughput: recorded {n_ops:,} ops in {rec_s:.1f} s "
          f"({rec_s / n_ops * 1e6:.2f} us/op), trace {size / 2**20:.1f} MiB")

    def inspect():
        subprocess.run(["taskset", "-c", "0", BIN, "inspect", "--json", str(trace)], check=True,
                       stdout=subprocess.DEVNULL)

    if not shutil.which("taskset"):
        def inspect():  # noqa: F811
            subprocess.run([BIN, "inspect", "--json", str(trace)], check=True, stdout=subprocess.DEVNULL)
    best, median = best_of(inspect, repeat)
    print(f"  ivytrace inspect --json (one core): best {best:.3f} s, median {median:.3f} s -> "
          f"{n_ops / best / 1e6:.2f} M ops/s (target >= 2 M ops/s: {'met' if n_ops / best >= 2e6 else 'NOT met'})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print(f"torch {torch.__version__}, ivytrace binary {BIN}, {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        bench_capture_to_onnx(args.repeat, tmp)
        bench_inspect(args.ops, args.repeat, tmp)


if __name__ == "__main__":
    main()
