"""Python values -> `ivytrace.v1.Arg` trees (the framework-independent part).

Framework recorders extend the dispatch table with their tensor, dtype and device types.
"""
from __future__ import annotations

import types

from ivytrace.v1 import common_pb2

Arg = common_pb2.Arg
ArgList = common_pb2.ArgList
ArgDict = common_pb2.ArgDict
Slice = common_pb2.Slice
Complex = common_pb2.Complex

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_NONE = Arg(none=True)
_ELLIPSIS = Arg(ellipsis=True)
_TRUE = Arg(b=True)
_FALSE = Arg(b=False)


def opaque(v) -> Arg:
    try:
        r = repr(v)
    except Exception:  # a broken __repr__ must not break the user's program
        r = "<repr failed>"
    if len(r) > 200:
        r = r[:197] + "..."
    return Arg(opaque=f"{type(v).__qualname__}: {r}")


class ArgConverter:
    """Converts values by exact type (one dict lookup), falling back to isinstance for subclasses.

    `convert(v, tensors)` returns an Arg; tensor handlers (added by subclasses) may append to
    `tensors`.
    """

    def __init__(self):
        self.table = {
            type(None): lambda v, ts: _NONE,
            bool: lambda v, ts: _TRUE if v else _FALSE,
            int: self._int,
            float: lambda v, ts: Arg(f=v),
            str: lambda v, ts: Arg(s=v),
            complex: lambda v, ts: Arg(c=Complex(real=v.real, imag=v.imag)),
            list: self._list,
            tuple: self._tuple,
            dict: self._dict,
            slice: self._slice,
            type(Ellipsis): lambda v, ts: _ELLIPSIS,
        }

    def convert(self, v, tensors):
        f = self.table.get(type(v))
        if f is None:
            f = self._resolve(type(v))
        return f(v, tensors)

    def _resolve(self, tp):
        """Handler for a type not in the table (subclasses, numpy scalars...), cached."""
        f = None
        for base, handler in (self._subclass_handlers() + [
                (bool, self.table[bool]), (int, self._int), (float, self.table[float]),
                (str, self.table[str]), (tuple, self._tuple), (list, self._list), (dict, self._dict)]):
            if issubclass(tp, base):
                f = handler
                break
        if f is None and getattr(tp, "__module__", "") == "numpy" and hasattr(tp, "item") \
                and tp.__name__ != "ndarray":
            f = lambda v, ts: self.convert(v.item(), ts)  # numpy scalar -> Python scalar
        if f is None:
            f = lambda v, ts: opaque(v)
        if not isinstance(tp, types.GenericAlias):
            self.table[tp] = f
        return f

    def _subclass_handlers(self) -> list:
        """(base type, handler) pairs checked before the built-in ones; subclasses add tensors."""
        return []

    def _int(self, v, ts):
        if _INT64_MIN <= v <= _INT64_MAX:
            return Arg(i=int(v))
        return opaque(v)

    def _list(self, v, ts):
        c = self.convert
        return Arg(list=ArgList(items=[c(x, ts) for x in v]))

    def _tuple(self, v, ts):
        c = self.convert
        return Arg(tuple=ArgList(items=[c(x, ts) for x in v]))

    def _dict(self, v, ts):
        if not all(type(k) is str for k in v):
            return opaque(v)
        c = self.convert
        return Arg(dict=ArgDict(keys=list(v.keys()), values=[c(x, ts) for x in v.values()]))

    def _slice(self, v, ts):
        s = Slice()
        if v.start is not None:
            s.start.CopyFrom(self.convert(v.start, ts))
        if v.stop is not None:
            s.stop.CopyFrom(self.convert(v.stop, ts))
        if v.step is not None:
            s.step.CopyFrom(self.convert(v.step, ts))
        return Arg(slice=s)
