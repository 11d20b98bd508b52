"""trace_graph's replay beside what a user would run instead (issue 14). Prints, per workload, the
time per call of:

  eager                  the original function / module, called as usual
  backend compiled       torch.compile(fn) / jax.jit(fn) of the original
  ivytrace               the traced graph's replay (a module: trace_graph(module), with its
                         parameters read live on every call)
  ivytrace frozen        (modules) ivytrace.freeze(module): parameters baked into the plan
  ivytrace + backend     trace_graph(..., return_backend_traced_fn=True): the replay handed to
                         torch.compile / jax.jit

on a tiny-op function, an MLP and transformers BERT (2 layers, random weights from a config), in
torch, and the tiny-op function and MLP in JAX. Every variant's output is checked against eager
before it is timed. Compile time is not counted (a warm-up call first). Ratios are eager time over
the variant's time: above 1 the variant is faster than eager.

    IVYTRACE_BIN=$PWD/build/ivytrace .venv/bin/python bench/bench_api.py [--calls 200] [--repeat 5]
        [--no-compile] [--only torch|jax]

Benchmarks are not tests: nothing here asserts on time.
"""
import argparse
import copy
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "python"))
from timing import best_of  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import ivytrace  # noqa: E402


def per_call(fn, calls, repeat):
    """(best, median) microseconds per call over `repeat` runs of `calls` calls."""
    def run():
        for _ in range(calls):
            fn()
    fn()   # warm-up (compiles)
    best, med = best_of(run, repeat)
    return best / calls * 1e6, med / calls * 1e6


def _to_np(v):
    if isinstance(v, torch.Tensor):
        return v.detach().numpy()
    if hasattr(v, "last_hidden_state"):
        return _to_np(v.last_hidden_state)
    return np.asarray(v)


def check(name, got, want, rtol=1e-4, atol=1e-5):
    np.testing.assert_allclose(_to_np(got), _to_np(want), rtol=rtol, atol=atol, err_msg=name)


# -- torch workloads --------------------------------------------------------------------------------
def tiny(x):
    y = x * 2 + 1
    y = torch.relu(y) - x.mean()
    y = y * y + torch.sin(x)
    return (y / 3).sum()


def make_mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 128),
                               torch.nn.GELU(), torch.nn.Linear(128, 10)).eval()


def make_bert():
    import transformers
    torch.manual_seed(0)
    cfg = transformers.BertConfig(num_hidden_layers=2, num_attention_heads=4, hidden_size=128,
                                  intermediate_size=256, vocab_size=1000, max_position_embeddings=128)
    return transformers.BertModel(cfg).eval()


def torch_rows(args):
    rows = []
    compile_ok = not args.no_compile

    # tiny-op function
    x = torch.randn(16)
    variants = [("eager", tiny)]
    if compile_ok:
        variants.append(("torch.compile", torch.compile(tiny)))
    variants.append(("ivytrace", ivytrace.trace_graph(tiny, args=(x,))))
    if compile_ok:
        variants.append(("ivytrace + backend (torch.compile)",
                         ivytrace.trace_graph(tiny, args=(x,), return_backend_traced_fn=True)))
    rows += measure("torch tiny-op fn (7 ops, 16 floats)", variants, (x,), {}, args)

    # MLP and BERT modules
    ids = torch.randint(0, 1000, (2, 32), generator=torch.Generator().manual_seed(0))
    for label, make, call_args, call_kwargs in (
            ("torch MLP (3 Linear, batch 16)", make_mlp, (torch.randn(16, 64),), {}),
            ("transformers BERT (2 layers, hidden 128, 2x32 tokens)", make_bert, (),
             {"input_ids": ids, "attention_mask": torch.ones_like(ids)})):
        try:
            eager = make()
        except ImportError as e:
            print(f"skipping {label}: {e}")
            continue
        variants = [("eager", eager)]
        if compile_ok:
            variants.append(("torch.compile", torch.compile(copy.deepcopy(eager))))
        traced = ivytrace.trace_graph(copy.deepcopy(eager), args=call_args, kwargs=call_kwargs)
        variants.append(("ivytrace (live parameters)", traced))
        variants.append(("ivytrace frozen (freeze)", ivytrace.freeze(traced)))
        if compile_ok:
            variants.append(("ivytrace + backend (torch.compile)",
                             ivytrace.trace_graph(copy.deepcopy(eager), args=call_args, kwargs=call_kwargs,
                                                  return_backend_traced_fn=True)))
        rows += measure(label, variants, call_args, call_kwargs, args)
    return rows


# -- JAX workloads ----------------------------------------------------------------------------------
def jax_rows(args):
    import jax
    import jax.numpy as jnp

    def jtiny(x):
        y = x * 2 + 1
        y = jax.nn.relu(y) - x.mean()
        y = y * y + jnp.sin(x)
        return (y / 3).sum()

    rng = np.random.default_rng(0)
    params = [(jnp.asarray(rng.standard_normal((64, 128)).astype(np.float32) * 0.1), jnp.zeros(128)),
              (jnp.asarray(rng.standard_normal((128, 128)).astype(np.float32) * 0.1), jnp.zeros(128)),
              (jnp.asarray(rng.standard_normal((128, 10)).astype(np.float32) * 0.1), jnp.zeros(10))]

    def jmlp(params, x):
        for i, (w, b) in enumerate(params):
            x = x @ w + b
            if i < len(params) - 1:
                x = jax.nn.gelu(x)
        return x

    rows = []
    x = jnp.asarray(rng.standard_normal(16).astype(np.float32))
    variants = [("eager", jtiny), ("jax.jit", jax.jit(jtiny)), ("ivytrace", ivytrace.trace_graph(jtiny, args=(x,))),
                ("ivytrace + backend (jax.jit)", ivytrace.trace_graph(jtiny, args=(x,), return_backend_traced_fn=True))]
    rows += measure("jax tiny-op fn (7 ops, 16 floats)", variants, (x,), {}, args)
    xb = jnp.asarray(rng.standard_normal((16, 64)).astype(np.float32))
    variants = [("eager", jmlp), ("jax.jit", jax.jit(jmlp)),
                ("ivytrace (params as inputs)", ivytrace.trace_graph(jmlp, args=(params, xb))),
                ("ivytrace + backend (jax.jit)",
                 ivytrace.trace_graph(jmlp, args=(params, xb), return_backend_traced_fn=True))]
    rows += measure("jax MLP (3 dense, batch 16)", variants, (params, xb), {}, args)
    return rows


def measure(label, variants, call_args, call_kwargs, args):
    rows = []
    want = None
    base = None
    for name, fn in variants:
        with torch.no_grad():
            out = fn(*call_args, **call_kwargs)
            if want is None:
                want = out
            else:
                check(f"{label}: {name}", out, want)
            best, med = per_call(lambda: fn(*call_args, **call_kwargs), args.calls, args.repeat)
        if base is None:
            base = best
        rows.append((label, name, best, med, base / best))
        print(f"  {label:58s} {name:38s} {best:10.1f} us  (median {med:.1f})  {base / best:5.2f}x", flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=200, help="calls per timed run")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs (best and median are reported)")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile (slow to compile on 2 cores)")
    ap.add_argument("--only", choices=["torch", "jax"], help="one framework")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    rows = []
    if args.only in (None, "torch"):
        rows += torch_rows(args)
    if args.only in (None, "jax"):
        rows += jax_rows(args)
    print()
    print(f"| workload | variant | best us/call | median us/call | speed vs eager |")
    print("|---|---|---|---|---|")
    for label, name, best, med, ratio in rows:
        print(f"| {label} | {name} | {best:.1f} | {med:.1f} | {ratio:.2f}x |")
    print(f"\n(total {time.perf_counter() - t0:.0f} s; torch {torch.__version__}, 1 intra-op thread, "
          f"{args.calls} calls x best of {args.repeat})")


if __name__ == "__main__":
    main()
