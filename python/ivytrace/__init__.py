"""ivytrace: record a running PyTorch, NumPy or JAX program into a trace, and replay exported plans.

    graph = ivytrace.trace_graph(fn, args=(x, y))   # record, build, export a plan, load it
    graph(x2, y2)                                   # straight-line replay
    print(graph.source)

The recorder (`Recorder`, `region`) and `boot_dir` do not import torch; the rest loads on first use.
"""
from __future__ import annotations

import os

from ivytrace._version import __version__
from ivytrace.recorder.recorder import Recorder
from ivytrace.region import region

__all__ = [
    "__version__", "Recorder", "region", "boot_dir", "trace_graph", "freeze", "export", "graph_of", "Graph", "LazyGraph",
    "load_plan", "PlanError", "GuardError", "CLIError", "read_trace", "RetraceWarning", "StateWarning",
]


def boot_dir() -> str:
    """Directory `ivytrace record` prepends to PYTHONPATH (holds the recording sitecustomize)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_boot")


_LAZY = {
    "trace_graph": ("ivytrace.api", "trace_graph"),
    "freeze": ("ivytrace.api", "freeze"),
    "export": ("ivytrace.api", "export"),
    "graph_of": ("ivytrace.api", "graph_of"),
    "Graph": ("ivytrace.api", "Graph"),
    "LazyGraph": ("ivytrace.api", "LazyGraph"),
    "CLIError": ("ivytrace.cli_bin", "CLIError"),
    "load_plan": ("ivytrace.runtime.plan", "load_plan"),
    "PlanError": ("ivytrace.runtime.errors", "PlanError"),
    "GuardError": ("ivytrace.runtime.errors", "GuardError"),
    "read_trace": ("ivytrace.recorder.reader", "read_trace"),
    "RetraceWarning": ("ivytrace.api", "RetraceWarning"),
    "StateWarning": ("ivytrace.api", "StateWarning"),
}


def __getattr__(name):
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'ivytrace' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(target[0]), target[1])
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
