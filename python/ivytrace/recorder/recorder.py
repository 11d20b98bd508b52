"""Recorder sessions: one trace file, its header and footer, and the framework recorders in it.

This module does not import any framework: `ivytrace record` starts a session before the program
runs, and each framework's recorder (torch, numpy, jax) attaches when the program imports that
framework (or at once if it already has).
"""
from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.metadata
import importlib.util
import os
import platform
import socket
import sys
import threading
import time

from ivytrace._version import __version__
from ivytrace.recorder.writer import TAG_HEADER, LimitedTraceWriter, TraceWriter
from ivytrace.v1 import trace_pb2

# The frameworks a session can record, one row each: the module of its recorder (which has
# `recorder_for(session)`; the recorder has install() / uninstall(), region_begin() / region_end()
# and `_next_region`), and whether its arrays convert to and from the other rows' that do
# (convert.py joins torch and NumPy). Recorders attach in this order and detach in reverse.
FRAMEWORKS = {
    "torch": ("ivytrace.recorder.torch_recorder", True),
    "numpy": ("ivytrace.recorder.numpy_recorder", True),
    "jax": ("ivytrace.recorder.jax_recorder", False),
}
KNOWN_FRAMEWORKS = tuple(FRAMEWORKS)

# Open sessions, innermost last. `ivytrace.region` writes to the innermost one.
_ACTIVE: list = []


def active():
    return _ACTIVE[-1] if _ACTIVE else None


def _after_fork_in_child():
    """A forked child must not write into its parent's trace: drop its copy of every session."""
    for rec in list(_ACTIVE):
        rec._abandon()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class Recorder:
    """Records the program into a trace file between start() and stop().

        with ivytrace.Recorder("run.ivytrace"):
            model(x)

    warn_guards: warn once per source line whose control flow depends on a tensor value.
    buffer_bytes: batch writes up to this size (default 0: write every call as it happens, so a
    killed program still leaves its records).
    symbolic_shapes: shape reads in a region give ints that remember the dims they came from
    (recorder/sym.py), so the graph follows its inputs' shapes; False gives plain ints, and the
    graph is specialized on the recorded shapes (a static export: what depends only on them, a
    causal mask or rotary tables, is then a constant the exporter folds).
    max_ops / max_bytes: stop recording once the trace holds this many op events / would grow
    past this many bytes (footer included): the footer is written at once (it records the limit),
    a message goes to stderr, and the program runs on unrecorded (see LimitedTraceWriter).
    """

    def __init__(self, path, *, frameworks=("torch",), warn_guards: bool = False, argv=None,
                 buffer_bytes: int = 0, max_ops: int | None = None, max_bytes: int | None = None,
                 limit_names=("max_ops", "max_bytes"), symbolic_shapes: bool = True):
        unknown = [f for f in frameworks if f not in KNOWN_FRAMEWORKS]
        if unknown:
            raise ValueError(f"ivytrace: unknown framework(s) {', '.join(unknown)}; "
                             f"known: {', '.join(KNOWN_FRAMEWORKS)}")
        self.path = os.fspath(path)
        self.frameworks = tuple(frameworks)
        self.warn_guards = warn_guards
        self.symbolic_shapes = symbolic_shapes
        self.argv = list(sys.argv if argv is None else argv)
        # 0: every call is written as it happens (a killed program leaves a readable prefix).
        self.buffer_bytes = buffer_bytes
        for name, v in (("max_ops", max_ops), ("max_bytes", max_bytes)):
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
                raise ValueError(f"ivytrace: {name} must be a non-negative integer, not {v!r}")
        self.max_ops = max_ops
        self.max_bytes = max_bytes
        self.limit_names = limit_names   # how the limits are named in the message (flags for the CLI)
        self.writer = None
        for name in FRAMEWORKS:    # self.torch, self.numpy, self.jax: the recorder once attached
            setattr(self, name, None)
        self.t0 = 0
        self.start_unix_ns = 0
        self.schemas = None
        self._hooks = []           # import hooks that attach a framework's recorder on import
        self._stopped = False
        self._pushed = {}          # region id -> the other recorder whose frame it opened

    # -- lifecycle -------------------------------------------------------------------------
    def start(self):
        if self.writer is not None:
            raise RuntimeError("ivytrace: Recorder.start() called twice")
        from ivytrace.schema import load_schemas
        self.schemas = load_schemas()
        self.start_unix_ns = time.time_ns()
        self.t0 = time.perf_counter_ns()
        if self.max_ops is None and self.max_bytes is None:
            self.writer = TraceWriter(self.path, buffer_bytes=self.buffer_bytes)
        else:
            self.writer = LimitedTraceWriter(self.path, buffer_bytes=self.buffer_bytes, max_ops=self.max_ops,
                                             max_bytes=self.max_bytes, on_limit=self._limit_reached,
                                             end_ns=lambda: time.perf_counter_ns() - self.t0)
        header = trace_pb2.Header(
            producer=f"ivytrace-recorder {__version__}",
            frameworks=[trace_pb2.FrameworkVersion(name=f, version=_framework_version(f))
                        for f in self.frameworks],
            argv=[str(a) for a in self.argv],
            start_time_unix_ns=self.start_unix_ns,
            python_version=platform.python_version(),
            pid=os.getpid(),
            hostname=socket.gethostname(),
            cwd=os.getcwd(),
        )
        self.writer.emit(TAG_HEADER, header.SerializeToString())
        _ACTIVE.append(self)
        for name in FRAMEWORKS:
            if name not in self.frameworks:
                continue
            if _fully_imported(name):
                self._attach(name)
            else:
                hook = _AfterImport(name, functools.partial(self._attach, name))
                self._hooks.append(hook)
                sys.meta_path.insert(0, hook)
        return self

    def _attach(self, name, module=None):
        """Attach the recorder of framework `name` (a row of FRAMEWORKS) once it is imported."""
        if self._stopped or getattr(self, name) is not None:
            return
        recorder_module, converts = FRAMEWORKS[name]
        rec = importlib.import_module(recorder_module).recorder_for(self)
        rec._next_region = max(rec._next_region, self._next_region_id())   # unique in the trace
        setattr(self, name, rec)
        rec.install()
        if converts:
            self._connect()

    def recorder_of(self, framework):
        """The attached recorder of `framework` ("torch", "numpy", "jax"); JAX's is attached here
        if the program has imported it (else at the first region with a jax.Array). None if none."""
        if framework == "jax" and self.jax is None and "jax" in self.frameworks and _fully_imported("jax"):
            self._attach("jax")
        return getattr(self, framework, None) if framework in FRAMEWORKS else None

    def _recorders(self):
        """The attached recorders, in FRAMEWORKS order."""
        return [r for r in (getattr(self, n) for n in FRAMEWORKS) if r is not None]

    def _next_region_id(self) -> int:
        """Region ids are unique in the trace: every recorder draws from one sequence."""
        return max([r._next_region for r in self._recorders()] + [1])

    def _sync_region_ids(self):
        n = self._next_region_id()
        for r in self._recorders():
            r._next_region = n

    def _unhook(self):
        if getattr(self, "_restore_from_numpy", None) is not None:
            from ivytrace.recorder import convert
            convert.disconnect(self)
        for h in self._hooks:
            if h is not None and h in sys.meta_path:
                sys.meta_path.remove(h)
        # In reverse: JAX's recorder first, it wraps numpy functions the NumPy recorder may have
        # wrapped before.
        for rec in reversed(self._recorders()):
            rec.uninstall()

    def _connect(self):
        """Both recorders attached: conversions between them join the graphs (convert.py)."""
        if self.torch is not None and self.numpy is not None:
            from ivytrace.recorder import convert
            convert.connect(self)

    def _detach(self):
        """Stop recording: framework hooks out, the session no longer active."""
        self._stopped = True
        self._unhook()
        if self in _ACTIVE:
            _ACTIVE.remove(self)

    def stop(self, error: str = "", exit_status: int | None = None):
        """Stop recording and write the footer (idempotent)."""
        if self._stopped or self.writer is None:
            return
        self._detach()
        footer = trace_pb2.Footer(end_ns=time.perf_counter_ns() - self.t0, error=error or "")
        if exit_status is not None:
            footer.exit_status = exit_status
        self.writer.close(footer)

    def _limit_reached(self, hit):
        """The writer stopped at a limit and wrote the footer: stop recording, say so (the
        writer calls this once, also when the limit is hit by what stop() flushes)."""
        if not self._stopped:
            self._detach()
        sys.stderr.write(limit_message(hit, self.limit_names) + "\n")
        sys.stderr.flush()

    def _abandon(self):
        """Stop recording without writing anything more (the file belongs to another process)."""
        self._stopped = True
        self._unhook()
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        if self.writer is not None:
            self.writer.abandon()

    @property
    def stopped(self) -> bool:
        return self._stopped

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        self.stop(error=f"{exc_type.__name__}: {exc}" if exc_type is not None else "")
        return False

    # -- what the API needs ------------------------------------------------------------------
    def add_root_module(self, module):
        """Name `module`'s parameters and submodules relative to it (for trace_graph(module))."""
        if self.torch is None and _fully_imported("torch"):
            self._attach("torch")
        if self.torch is not None:
            self.torch.register_root(module)

    def wrap_inputs(self, args, kwargs):
        """Region inputs as the recorders need them (NumPy arrays become recorded arrays)."""
        if self.numpy is None and "numpy" in self.frameworks and _fully_imported("numpy") and not self._stopped:
            self._attach("numpy")
        if self.numpy is None or self._stopped or not _has_ndarray((args, kwargs)):
            return args, kwargs
        return self.numpy.wrap(tuple(args)), self.numpy.wrap(dict(kwargs))

    def region_begin(self, name: str, inputs, file: str = "", line: int = 0) -> int:
        rid = self._region_begin(name, inputs, file, line)
        jax_region = rid < 0 and self.jax is not None and -rid in self.jax._regions
        if rid and not jax_region and self.torch is not None and self.numpy is not None:
            # A mixed program: the recorder that did not open the region starts a frame too.
            from ivytrace.recorder import convert
            self._pushed[rid] = convert.push_frames(self, "numpy" if rid < 0 else "torch")
        return rid

    def region_end(self, rid: int, result=None, raised: bool = False):
        self._region_end(rid, result, raised)
        pushed = self._pushed.pop(rid, None)
        if pushed is not None:
            from ivytrace.recorder import convert
            convert.pop_frames(self, pushed)

    def _region_begin(self, name: str, inputs, file: str = "", line: int = 0) -> int:
        if "jax" in self.frameworks and self.jax is None and _fully_imported("jax") and not self._stopped \
                and _has_jax_array([v for _, v in inputs]):
            self._attach("jax")
        if self.jax is not None and not self._stopped and _has_jax_array([v for _, v in inputs]) \
                and not _has_torch_tensor([v for _, v in inputs]):
            self._sync_region_ids()
            rid = self.jax.region_begin(name, inputs, file, line)
            self._sync_region_ids()
            # Negative like NumPy's; region ids are unique, so region_end finds the owner.
            return -rid if rid else 0
        if self.numpy is not None and not self._stopped and _has_ndarray([v for _, v in inputs]) \
                and not _has_torch_tensor([v for _, v in inputs]):
            # Region ids are unique in the trace: the recorders draw from one sequence.
            self._sync_region_ids()
            rid = self.numpy.region_begin(name, inputs, file, line)
            self._sync_region_ids()
            return -rid if rid else 0
        if self.torch is None and _fully_imported("torch") and not self._stopped:
            self._attach("torch")
        if self.torch is None or self._stopped:
            return 0
        self._sync_region_ids()
        rid = self.torch.region_begin(name, inputs, file, line)
        self._sync_region_ids()
        return rid

    def _region_end(self, rid: int, result=None, raised: bool = False):
        if rid and rid < 0:
            if self.jax is not None and not self._stopped and -rid in self.jax._regions:
                self.jax.region_end(-rid, result, raised)
                return
            if self.numpy is not None and not self._stopped:
                self.numpy.region_end(-rid, result, raised)
            return
        if self.torch is not None and rid and not self._stopped:
            self.torch.region_end(rid, result, raised)


def limit_message(hit, names=("max_ops", "max_bytes")) -> str:
    """One line saying which limit stopped the recording, its value, and where."""
    by_ops = hit.kind == trace_pb2.LimitHit.MAX_OPS
    name = names[0] if by_ops else names[1]
    where = f"{hit.file}:{hit.line}" if hit.file else "an unknown source line"
    call = f"op {hit.ops_recorded + 1} ({hit.op} at {where})" if hit.op else f"the call at {where}"
    what = (f"{call} would be one op too many" if by_ops else f"the records of {call} would make the trace "
            f"larger than {hit.value} bytes")
    who = "ivytrace record" if name.startswith("--") else "ivytrace"
    return (f"{who}: recording stopped at the limit {name} {hit.value}: {what}; the trace "
            f"holds the first {hit.ops_recorded} ops and a footer, and the program runs on unrecorded")


def limits_from_environ(environ=None) -> dict:
    """max_ops / max_bytes from IVYTRACE_MAX_OPS / IVYTRACE_MAX_BYTES (set by `ivytrace record`,
    which has validated them). Raises ValueError naming the variable on a value that is not a
    non-negative integer."""
    environ = os.environ if environ is None else environ
    out = {}
    for key, var in (("max_ops", "IVYTRACE_MAX_OPS"), ("max_bytes", "IVYTRACE_MAX_BYTES")):
        raw = environ.pop(var, None)
        if raw is None or raw == "":
            continue
        if not raw.isdigit():
            raise ValueError(f"{var}={raw!r}: expected a non-negative integer")
        out[key] = int(raw)
    if out:
        out["limit_names"] = ("--max-ops", "--max-bytes")
    return out


def _contains(v, cls) -> bool:
    """Whether `v`, or a list/tuple/dict inside it, holds an instance of `cls`."""
    if isinstance(v, cls):
        return True
    if isinstance(v, (list, tuple)):
        return any(_contains(x, cls) for x in v)
    if isinstance(v, dict):
        return any(_contains(x, cls) for x in v.values())
    return False


def _framework_class(module: str, attr: str):
    mod = sys.modules.get(module)
    return getattr(mod, attr, None) if mod is not None else None


def _has_ndarray(v) -> bool:
    cls = _framework_class("numpy", "ndarray")
    return cls is not None and _contains(v, cls)


def _has_jax_array(v) -> bool:
    cls = _framework_class("jax", "Array")
    return cls is not None and _contains(v, cls)


def _has_torch_tensor(v) -> bool:
    cls = _framework_class("torch", "Tensor")
    return cls is not None and _contains(v, cls)


def _fully_imported(name: str) -> bool:
    m = sys.modules.get(name)
    if m is None:
        return False
    spec = getattr(m, "__spec__", None)
    return not getattr(spec, "_initializing", False)


def _framework_version(name: str) -> str:
    m = sys.modules.get(name)
    v = getattr(m, "__version__", None) if m is not None else None
    if v:
        return str(v)
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return ""


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs `callback(module)` right after the top-level module `name` has been imported."""

    def __init__(self, name, callback):
        self.name = name
        self.callback = callback
        self._busy = threading.local()

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name or getattr(self._busy, "on", False):
            return None
        self._busy.on = True
        try:
            spec = importlib.util.find_spec(fullname)  # the finders after us
        finally:
            self._busy.on = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        callback = self.callback
        hook = self
        original = loader.exec_module

        def exec_module(module):
            original(module)
            if hook in sys.meta_path:
                sys.meta_path.remove(hook)
            callback(module)

        loader.exec_module = exec_module  # this spec's own loader instance
        return spec
