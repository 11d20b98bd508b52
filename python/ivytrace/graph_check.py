"""graph.check(): the seeds' noise check (sharp bit 3) as an API.

Runs the original callable and the graph on the same inputs, given or random ones shaped like
the traced inputs, and reports each output's error and any guard that fired. It catches a graph
that cached something it should not have (a global tensor changed after tracing, say).
"""
from __future__ import annotations

import dataclasses
import sys

import numpy as np

from ivytrace.runtime.errors import GuardError


@dataclasses.dataclass
class OutputCheck:
    path: str
    max_abs: float
    max_rel: float
    ok: bool
    note: str = ""


@dataclasses.dataclass
class CheckReport:
    """What graph.check() found: truthy when every output matches and no guard fired."""
    outputs: list
    guards: list           # messages of the guards that fired
    random_inputs: bool
    rtol: float
    atol: float

    def __bool__(self):
        return not self.guards and all(o.ok for o in self.outputs)

    @property
    def mismatches(self) -> list:
        return [o for o in self.outputs if not o.ok]

    def __str__(self):
        lines = [f"ivytrace check ({'random' if self.random_inputs else 'given'} inputs, rtol={self.rtol}, "
                 f"atol={self.atol}): {'OK' if self else 'FAILED'}"]
        for g in self.guards:
            lines.append(f"  guard fired: {g.splitlines()[0]}")
        for o in self.outputs:
            lines.append(f"  {o.path}: max abs {o.max_abs:.3g}, max rel {o.max_rel:.3g} "
                         f"{'ok' if o.ok else 'DIFFERS'}{' (' + o.note + ')' if o.note else ''}")
        return "\n".join(lines)


def _to_numpy(v):
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(v, torch.Tensor):
        v = v.detach().cpu()
        if v.dtype == torch.bfloat16:
            v = v.float()
        return v.numpy()
    return np.asarray(v)


def _leaves(v, path, out):
    if isinstance(v, dict):
        for k, x in v.items():
            _leaves(x, f"{path}[{k!r}]", out)
    elif isinstance(v, (list, tuple)):
        for i, x in enumerate(v):
            _leaves(x, f"{path}[{i}]", out)
    elif dataclasses.is_dataclass(v) and not isinstance(v, type):
        for f in dataclasses.fields(v):
            _leaves(getattr(v, f.name), f"{path}.{f.name}", out)
    else:
        out.append((path, v))


def _compare(path, a, b, rtol, atol) -> OutputCheck:
    try:
        x, y = _to_numpy(a), _to_numpy(b)
    except Exception:
        same = a == b
        return OutputCheck(path, 0.0 if same else float("inf"), 0.0 if same else float("inf"), bool(same))
    if x.shape != y.shape:
        return OutputCheck(path, float("inf"), float("inf"), False, f"shape {x.shape} vs {y.shape}")
    if x.size == 0:
        return OutputCheck(path, 0.0, 0.0, True)
    if x.dtype.kind in "biu" and y.dtype.kind in "biu":
        d = np.abs(x.astype(np.int64) - y.astype(np.int64))
        m = float(d.max())
        return OutputCheck(path, m, m, m == 0)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    d = np.abs(x64 - y64)
    both_nan = np.isnan(x64) & np.isnan(y64)
    d = np.where(both_nan, 0.0, d)
    rel = d / np.maximum(np.abs(y64), np.finfo(np.float64).tiny)
    ok = bool(np.all(np.isclose(x64, y64, rtol=rtol, atol=atol, equal_nan=True)))
    return OutputCheck(path, float(np.nanmax(d)), float(np.nanmax(rel)), ok)


def random_like(v, rng):
    """A random value shaped like `v` (torch, NumPy or JAX array; anything else as it is)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(v, torch.Tensor):
        a = random_like(v.detach().cpu().numpy() if v.dtype != torch.bfloat16 else v.float().numpy(), rng)
        return torch.from_numpy(np.ascontiguousarray(a)).to(v.dtype)
    jax = sys.modules.get("jax")
    if jax is not None and isinstance(v, jax.Array):
        import jax.numpy as jnp
        return jnp.asarray(random_like(np.asarray(v), rng), dtype=v.dtype)
    if isinstance(v, np.ndarray):
        if v.dtype.kind == "b":
            return rng.random(v.shape) < 0.5
        if v.dtype.kind in "iu":
            hi = int(v.max()) + 1 if v.size else 2
            lo = int(v.min()) if v.size else 0
            return rng.integers(lo, max(hi, lo + 1), size=v.shape).astype(v.dtype)
        return rng.standard_normal(v.shape).astype(v.dtype)
    if isinstance(v, (list, tuple)):
        return type(v)(random_like(x, rng) for x in v)
    if isinstance(v, dict):
        return {k: random_like(x, rng) for k, x in v.items()}
    return v


def check_graph(graph, args, kwargs, *, rtol, atol, seed=0):
    random_inputs = not args and not kwargs
    if random_inputs:
        example = graph._example
        if example is None:
            raise RuntimeError("ivytrace: graph.check() without arguments needs a traced graph")
        rng = np.random.default_rng(seed)
        args, kwargs = random_like(example[0], rng), random_like(example[1], rng)
    expected = graph._eager(*args, **kwargs)
    guards = []
    got = None
    for spec in graph._specs:
        try:
            got = spec.run(graph._sig, args, kwargs)
            break
        except GuardError as e:
            guards.append(str(e))
    outputs = []
    if got is not None:
        want, have = [], []
        _leaves(expected, "out", want)
        _leaves(got, "out", have)
        if len(want) != len(have):
            outputs.append(OutputCheck("out", float("inf"), float("inf"), False,
                                       f"{len(have)} outputs from the graph, {len(want)} from the function"))
        for (path, a), (_, b) in zip(have, want):
            outputs.append(_compare(path, a, b, rtol, atol))
    return CheckReport(outputs, guards if got is None else [], random_inputs, rtol, atol)
