"""`ivytrace.region`: mark a block or a function whose inputs and result define a graph.

    @ivytrace.region("block")            # or plain @ivytrace.region
    def block(x, y): ...

    with ivytrace.region("blk", inputs={"x": x}) as r:
        y = f(x)
        r.set_result(y)

Both cost one list check when nothing is being recorded.
"""
from __future__ import annotations

import functools
import inspect
import sys

from ivytrace.recorder.recorder import _ACTIVE, _has_jax_array


def bind_inputs(sig, args, kwargs) -> list:
    """(name, value) per parameter the caller passed, in signature order."""
    if sig is not None:
        try:
            return list(sig.bind(*args, **kwargs).arguments.items())
        except TypeError:
            pass
    return [(f"arg{i}", a) for i, a in enumerate(args)] + list(kwargs.items())


def signature_of(fn):
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


class region:
    """A region of the program: a decorator, or a context manager with `set_result`."""

    def __init__(self, name=None, inputs=None):
        if callable(name) and inputs is None:   # bare @ivytrace.region
            fn, name = name, None
            self.name = getattr(fn, "__qualname__", getattr(fn, "__name__", "region"))
            self.inputs = None
            self._wrapped = self._decorate(fn)
        else:
            self.name = name
            self.inputs = inputs
            self._wrapped = None
        self._open = []   # (recorder, region id) per active `with`
        self._result = None

    # -- decorator ---------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if self._wrapped is not None:
            return self._wrapped(*args, **kwargs)
        if len(args) == 1 and not kwargs and callable(args[0]):
            if self.name is None:
                self.name = getattr(args[0], "__qualname__", "region")
            return self._decorate(args[0])
        raise TypeError("ivytrace.region(name) decorates a function; use `with ivytrace.region(...)` for a block")

    def _decorate(self, fn):
        name = self.name
        sig_box = []

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if not _ACTIVE:
                return fn(*args, **kwargs)
            rec = _ACTIVE[-1]
            if not sig_box:
                sig_box.append(signature_of(fn))
            f = sys._getframe(1)
            # A JAX function: which dims its shapes follow (recorder/jax_shapes.py), before it runs.
            jax_rec = rec.recorder_of("jax") if _has_jax_array((args, kwargs)) else None
            if jax_rec is not None:
                jax_rec.prepare_shapes(fn, args, kwargs)
            args, kwargs = rec.wrap_inputs(args, kwargs)   # NumPy arrays -> recorded arrays
            rid = rec.region_begin(name, bind_inputs(sig_box[0], args, kwargs), f.f_code.co_filename, f.f_lineno)
            try:
                out = fn(*args, **kwargs)
                if jax_rec is not None:
                    jax_rec.end_shape_match(out)
            except BaseException:
                if jax_rec is not None:
                    jax_rec.drop_shape_match()
                rec.region_end(rid, raised=True)
                raise
            rec.region_end(rid, out)
            return out

        return wrapper

    # -- context manager ----------------------------------------------------------------------
    def __enter__(self):
        self._result = None
        if not _ACTIVE:
            self._open.append((None, 0))
            return self
        rec = _ACTIVE[-1]
        inputs = self.inputs
        if inputs is None:
            items = []
        elif isinstance(inputs, dict):
            items = list(inputs.items())
        else:
            items = [(f"arg{i}", v) for i, v in enumerate(inputs)]
        f = sys._getframe(1)
        rid = rec.region_begin(self.name or "region", items, f.f_code.co_filename, f.f_lineno)
        self._open.append((rec, rid))
        return self

    def set_result(self, value):
        """The block's result (its outputs); the region computes what reaches it."""
        self._result = value

    def __exit__(self, exc_type, exc, tb):
        rec, rid = self._open.pop()
        if rec is not None and rid:
            if exc_type is not None:
                rec.region_end(rid, raised=True)
            else:
                rec.region_end(rid, self._result)
        self._result = None
        return False
