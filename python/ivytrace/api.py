"""The public API: trace_graph, Graph, LazyGraph.

trace_graph records `fn` once under the recorder (one region named after fn), runs the CLI to
export the region as a plan, loads the plan and hands back a Graph that replays it.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import weakref

import torch

from ivytrace.cli_bin import CLIError, run_cli, supports_flag
from ivytrace.recorder.recorder import Recorder, _has_jax_array
from ivytrace.region import bind_inputs, signature_of
from ivytrace.runtime.plan import load_plan


def _name_of(fn) -> str:
    if isinstance(fn, torch.nn.Module):
        return type(fn).__name__
    return getattr(fn, "__name__", None) or type(fn).__name__


class Graph:
    """A traced function: calling it replays the exported plan on new inputs."""

    def __init__(self, trace_path: str, plan_path: str, name: str, workdir=None):
        self.trace_path = trace_path
        self.plan_path = plan_path
        self.name = name
        self.plan = load_plan(plan_path)
        self._workdir = workdir
        if workdir is not None:
            self._cleanup = weakref.finalize(self, shutil.rmtree, workdir, True)

    @property
    def source(self) -> str:
        """The generated straight-line Python."""
        return self.plan.source

    def __call__(self, *args, **kwargs):
        return self.plan(*args, **kwargs)

    def save(self, path) -> str:
        """Copy the recorded trace to `path` (for `ivytrace inspect/viz/export`)."""
        path = os.fspath(path)
        shutil.copyfile(self.trace_path, path)
        return path

    def export(self, path, to: str = "onnx") -> str:
        """Export the traced region with the CLI: to="onnx" or "plan"."""
        if to not in ("onnx", "plan"):
            raise ValueError(f"ivytrace: export to {to!r}: expected 'onnx' or 'plan'")
        path = os.fspath(path)
        run_cli("export", self.trace_path, "--to", to, "-o", path)
        return path

    def __repr__(self):
        return f"<ivytrace.Graph {self.name!r}: {len(self.plan.plan.steps)} steps>"


class LazyGraph:
    """trace_graph(fn) without arguments: traces on the first call, then replays."""

    def __init__(self, fn, **options):
        self._fn = fn
        self._options = options
        self.graph: Graph | None = None

    @property
    def initialized(self) -> bool:
        return self.graph is not None

    def __call__(self, *args, **kwargs):
        if self.graph is None:
            self.graph, out = _trace(self._fn, args, kwargs, **self._options)
            return out
        return self.graph(*args, **kwargs)

    def __getattr__(self, item):
        if item in ("source", "save", "export", "trace_path", "plan", "plan_path"):
            if self.graph is None:
                raise RuntimeError(f"ivytrace: this LazyGraph has not been traced yet; call it once "
                                   f"with arguments first (needed for .{item})")
            return getattr(self.graph, item)
        raise AttributeError(item)

    def __repr__(self):
        state = "traced" if self.graph is not None else "not traced yet"
        return f"<ivytrace.LazyGraph {_name_of(self._fn)!r}, {state}>"


def trace_graph(fn, args=None, kwargs=None, *, array_caching: bool = True, include_generators: bool = True):
    """Trace `fn` (a function or torch.nn.Module; NumPy and JAX functions too) into a Graph.

    With `args`/`kwargs` the tracing happens now; without, a LazyGraph traces on its first call.
    Non-tensor arguments are specialized (the graph checks them on replay); control flow that
    depends on tensor values becomes a guard (a warning names the line).
    """
    options = dict(array_caching=array_caching, include_generators=include_generators)
    if args is None and kwargs is None:
        return LazyGraph(fn, **options)
    graph, _ = _trace(fn, tuple(args or ()), dict(kwargs or {}), **options)
    return graph


def _trace(fn, args, kwargs, *, array_caching=True, include_generators=True):
    name = _name_of(fn)
    workdir = tempfile.mkdtemp(prefix="ivytrace-")
    try:
        trace_path = os.path.join(workdir, "trace.ivytrace")
        plan_path = os.path.join(workdir, "graph.ivyplan")
        call = fn.forward if isinstance(fn, torch.nn.Module) else fn
        # Buffered: the trace lives only for this call, so per-call writes (for crash safety)
        # would only cost time.
        np = sys.modules.get("numpy")
        # NumPy is recorded whenever the program has imported it: a torch function may convert
        # to NumPy and back (convert.py), and NumPy inputs need it anyway.
        frameworks = ("torch", "numpy") if np is not None else ("torch",)
        if _has_jax_array((args, kwargs)):
            frameworks += ("jax",)
        rec = Recorder(trace_path, frameworks=frameworks, warn_guards=True, argv=sys.argv, buffer_bytes=1 << 20)
        rec.start()
        try:
            args, kwargs = rec.wrap_inputs(args, kwargs)   # NumPy arrays -> recorded arrays
            inputs = bind_inputs(signature_of(call), args, kwargs)
            if isinstance(fn, torch.nn.Module):
                rec.add_root_module(fn)
            f = sys._getframe(2)
            rid = rec.region_begin(name, inputs, f.f_code.co_filename, f.f_lineno)
            try:
                out = fn(*args, **kwargs)
            except BaseException as e:
                rec.region_end(rid, raised=True)
                rec.stop(error=f"{type(e).__name__}: {e}")
                raise
            rec.region_end(rid, out)
            out = _plain_arrays(out)
        finally:
            rec.stop()
        cmd = ["export", trace_path, "--to", "plan", "-o", plan_path]
        if not array_caching and supports_flag("export", "--no-array-caching"):
            cmd.append("--no-array-caching")
        if not include_generators and supports_flag("export", "--bake-generators"):
            cmd.append("--bake-generators")
        run_cli(*cmd)
        return Graph(trace_path, plan_path, name, workdir=workdir), out
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise


def _plain_arrays(v):
    """Recorded NumPy arrays handed back to the caller as plain ndarrays."""
    np = sys.modules.get("numpy")
    if np is None:
        return v
    if isinstance(v, np.ndarray) and type(v) is not np.ndarray:
        return v.view(np.ndarray)
    if type(v) in (list, tuple):
        return type(v)(_plain_arrays(x) for x in v)
    if type(v) is dict:
        return {k: _plain_arrays(x) for k, x in v.items()}
    return v


__all__ = ["trace_graph", "Graph", "LazyGraph", "CLIError"]
