"""Recording cost (issue 3). Prints figures beside the unrecorded run and beside torch.profiler with
an ExecutionTraceObserver (PyTorch's own op-log recorder), all measured in this run.

  (a) cost per recorded op on small-tensor ops: a loop of N elementwise ops on a 4-element tensor
      (target: at most 3 us per recorded op);
  (b) slowdown of the sample conv model's forward pass (samples/models.py SmallResNet) at a batch a
      user would run (target: at most 5%);
  (c) issue 16's "Recording cost per op" table: the same small-op loop in torch, NumPy and JAX,
      unrecorded, under each framework's no-op interception floor, and under ivytrace, with the
      ratio of ivytrace's extra cost to the floor's extra cost (target: torch <= 1.5x, NumPy and
      JAX <= 2x). Floors: torch, a no-op TorchFunctionMode; NumPy, an ndarray subclass whose
      __array_ufunc__ only unwraps, calls and wraps back; JAX, `jax.disable_jit()` (the recorder
      runs JAX op by op too). JAX has a second row without the region's symbolic-shape plan
      (IVYTRACE_JAX_SYMBOLIC_SHAPES=0): that plan traces the region to a jaxpr before each call,
      a cost per region call that grows with its op count, apart from the per-op recording.

Each recorder is started once, outside the timing, and records every timed repetition (as a user
recording a program sees it); both write a real file (ivytrace: the protobuf trace, streamed as ops happen; the
profiler: its JSON execution trace) into a temporary directory.

    .venv/bin/python bench/bench_record.py [--ops 20000] [--batch 32] [--repeat 5] [--clock wall|cpu]
                                           [--ops-numpy 10000] [--ops-jax 2000] [--only a,b,c]

The no-op TorchFunctionMode row is the floor of any recorder that intercepts calls through
__torch_function__ (as ivytrace does): the price of the interception alone.
Benchmarks are not tests: nothing here asserts on time.
"""
import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "samples"))
sys.path.insert(0, str(REPO / "bench"))
from timing import best_of  # noqa: E402
from models import make_input, make_model  # noqa: E402

import ivytrace  # noqa: E402


CLOCK = [time.perf_counter]


@ivytrace.region("loop")
def small_ops(x, n):
    """n recorded ops on a region input: alternating add and mul keep the values bounded. (Ops on
    tensors made outside every region are array-caching candidates whose values the recorder
    stores too: a different, heavier cost that a region avoids.)"""
    for i in range(n // 2):
        x = x + 1.0
        x = x * 0.5
    return x



def under_ivytrace(tmp, body, repeat):
    """Times `body` inside one recording session (started and warmed up outside the timing: a
    session writes each parameter's value once, on first use)."""
    with ivytrace.Recorder(tmp / "bench.ivt"):
        body()
        return best_of(body, repeat, CLOCK[0])


class _NoopMode(TorchFunctionMode):
    """The floor of any recorder built on __torch_function__: a mode that only calls through."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def under_noop_mode(tmp, body, repeat):
    with _NoopMode():
        body()
        return best_of(body, repeat, CLOCK[0])


def under_profiler_et(tmp, body, repeat):
    from torch.profiler import ExecutionTraceObserver

    et = ExecutionTraceObserver()
    et.register_callback(str(tmp / "bench_et.json"))
    et.start()
    try:
        body()
        return best_of(body, repeat, CLOCK[0])
    finally:
        et.stop()
        et.unregister_callback()


def report(title, rows, base_name, per=None, unit=""):
    base = rows[base_name][0]
    print(f"\n{title}")
    head = f"  {'run':34s} {'best ms':>9s} {'median ms':>10s} {'vs unrecorded':>14s}"
    if per:
        head += f" {'extra us/' + unit:>14s}"
    print(head)
    for name, (best, median) in rows.items():
        line = f"  {name:34s} {best * 1e3:9.2f} {median * 1e3:10.2f} {best / base:13.2f}x"
        if per:
            line += f" {(best - base) / per * 1e6:14.2f}"
        print(line)


class _PassThrough(__import__("numpy").ndarray):
    """The floor of any NumPy recorder built on an ndarray subclass (as ivytrace's TracedArray):
    __array_ufunc__ unwraps the operands, calls the ufunc and wraps the result, nothing else."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        np = __import__("numpy")
        inputs = tuple(a.view(np.ndarray) if isinstance(a, _PassThrough) else a for a in inputs)
        out = getattr(ufunc, method)(*inputs, **kwargs)
        return out.view(_PassThrough) if isinstance(out, np.ndarray) else out


def _loop(n):
    def body(x):
        for i in range(n // 2):
            x = x + 1.0
            x = x * 0.5
        return x
    return body


def per_op_table(tmp, args):
    """(c): rows of (framework, unrecorded us/op, floor extra us/op, ivytrace extra us/op)."""
    import numpy as np
    clock = CLOCK[0]
    rows = []

    def per_op(t, n):
        return t[0] / n * 1e6

    # torch
    n = args.ops
    x = torch.randn(4)
    body = ivytrace.region("loop")(_loop(n))
    plain = per_op(best_of(lambda: body(x), args.repeat, clock), n)
    floor = per_op(under_noop_mode(tmp, lambda: body(x), args.repeat), n)
    ivy = per_op(under_ivytrace(tmp, lambda: body(x), args.repeat), n)
    rows.append(("torch", plain, floor - plain, ivy - plain, "no-op TorchFunctionMode", 1.5))

    # NumPy
    n = args.ops_numpy
    a = np.random.default_rng(0).standard_normal(4)
    body = ivytrace.region("loop")(_loop(n))
    plain = per_op(best_of(lambda: body(a), args.repeat, clock), n)
    sub = a.view(_PassThrough)
    floor = per_op(best_of(lambda: body(sub), args.repeat, clock), n)
    with ivytrace.Recorder(tmp / "bench_np.ivt", frameworks=("numpy",)):
        body(a)
        ivy = per_op(best_of(lambda: body(a), args.repeat, clock), n)
    rows.append(("NumPy", plain, floor - plain, ivy - plain, "ndarray subclass pass-through", 2.0))

    # JAX
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return rows
    n = args.ops_jax
    j = jnp.asarray(a, dtype=jnp.float32)
    body = ivytrace.region("loop")(_loop(n))

    def run():
        body(j).block_until_ready()

    run()
    plain = per_op(best_of(run, args.repeat, clock), n)
    with jax.disable_jit():
        run()
        floor = per_op(best_of(run, args.repeat, clock), n)
    with ivytrace.Recorder(tmp / "bench_jax.ivt", frameworks=("jax",)):
        run()
        ivy = per_op(best_of(run, args.repeat, clock), n)
    rows.append(("JAX", plain, floor - plain, ivy - plain, "disable_jit", 2.0))
    # The same without the region's symbolic-shape plan (recorder/jax_shapes.py: each call of a JAX
    # region traces the function to a jaxpr twice, concrete and symbolic, before it runs, and
    # matches every op against it): the recorder's own per-op cost, apart from that per-call cost.
    saved = os.environ.get("IVYTRACE_JAX_SYMBOLIC_SHAPES")
    os.environ["IVYTRACE_JAX_SYMBOLIC_SHAPES"] = "0"
    try:
        with ivytrace.Recorder(tmp / "bench_jax2.ivt", frameworks=("jax",)):
            run()
            ivy = per_op(best_of(run, args.repeat, clock), n)
    finally:
        if saved is None:
            del os.environ["IVYTRACE_JAX_SYMBOLIC_SHAPES"]
        else:
            os.environ["IVYTRACE_JAX_SYMBOLIC_SHAPES"] = saved
    rows.append(("JAX, no shape plan", plain, floor - plain, ivy - plain, "disable_jit", 2.0))
    return rows


def report_per_op(rows, args):
    print(f"\n(c) Recording cost per op, over the framework's own floor (small-op loop on a 4-element "
          f"array in a region; torch {args.ops:,} ops, NumPy {args.ops_numpy:,}, JAX {args.ops_jax:,}; "
          f"best of {args.repeat})")
    print(f"  | framework | unrecorded | floor | ivytrace | ivytrace / floor | target |")
    print(f"  |---|---|---|---|---|---|")
    for name, plain, floor, ivy, what, target in rows:
        ratio = ivy / floor if floor > 0 else float("inf")
        print(f"  | {name} | {plain:.2f} us | {what} +{floor:.2f} us | +{ivy:.2f} us | {ratio:.2f}x | "
              f"<= {target}x: {'met' if ratio <= target else 'NOT met'} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", type=int, default=20000, help="small ops in (a)")
    ap.add_argument("--batch", type=int, default=32, help="batch of the conv model in (b)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall time, or this thread's CPU time (steadier on a shared machine)")
    ap.add_argument("--ops-numpy", type=int, default=10000, help="small ops per NumPy run in (c)")
    ap.add_argument("--ops-jax", type=int, default=2000, help="small ops per JAX run in (c)")
    ap.add_argument("--only", default="a,b,c", help="which parts to run (comma-separated)")
    args = ap.parse_args()
    parts = set(args.only.split(","))
    CLOCK[0] = time.perf_counter if args.clock == "wall" else time.thread_time
    torch.set_num_threads(1)  # one core for every run: the comparison is per op, not per machine
    warnings.simplefilter("ignore")
    try:
        from ivytrace import _speedups  # noqa: F401
        path = "C fast path (ivytrace._speedups)"
    except ImportError:
        path = "pure-Python recorder (ivytrace._speedups not built)"
    if os.environ.get("IVYTRACE_NO_SPEEDUPS") == "1":
        path = "pure-Python recorder (IVYTRACE_NO_SPEEDUPS=1)"
    print(f"torch {torch.__version__}, 1 intra-op thread, {path}, {args.clock} clock")

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if "c" in parts:
            report_per_op(per_op_table(tmp, args), args)
        if "a" in parts:
            part_a(tmp, args)
        if "b" in parts:
            part_b(tmp, args)


def part_a(tmp, args):
    if True:
        x = torch.randn(4)

        def body_a():
            small_ops(x, args.ops)

        rows = {"unrecorded": best_of(body_a, args.repeat, CLOCK[0]),
                "no-op TorchFunctionMode (floor)": under_noop_mode(tmp, body_a, args.repeat),
                "ivytrace Recorder": under_ivytrace(tmp, body_a, args.repeat),
                "torch.profiler ExecutionTrace": under_profiler_et(tmp, body_a, args.repeat)}
        report(f"(a) {args.ops:,} small-tensor ops (4 floats), best of {args.repeat}", rows,
               "unrecorded", per=args.ops, unit="op")
        ivy = (rows["ivytrace Recorder"][0] - rows["unrecorded"][0]) / args.ops * 1e6
        print(f"  ivytrace: {ivy:.2f} us per recorded op (target <= 3 us: {'met' if ivy <= 3 else 'NOT met'})")



def part_b(tmp, args):
    if True:
        model = make_model("cnn").eval()
        xb = make_input("cnn", batch=args.batch)

        forward = ivytrace.region("forward")(model)  # as samples/run_model.py marks it

        def body_b():
            with torch.no_grad():
                forward(xb)

        body_b()  # warm up allocator and kernels
        rows = {"unrecorded": best_of(body_b, args.repeat, CLOCK[0]),
                "no-op TorchFunctionMode (floor)": under_noop_mode(tmp, body_b, args.repeat),
                "ivytrace Recorder": under_ivytrace(tmp, body_b, args.repeat),
                "torch.profiler ExecutionTrace": under_profiler_et(tmp, body_b, args.repeat)}
        report(f"(b) SmallResNet forward, batch {args.batch}, best of {args.repeat}", rows, "unrecorded")
        slow = rows["ivytrace Recorder"][0] / rows["unrecorded"][0] - 1
        print(f"  ivytrace: {slow * 100:.1f}% slowdown (target <= 5%: {'met' if slow <= 0.05 else 'NOT met'})")


if __name__ == "__main__":
    main()
