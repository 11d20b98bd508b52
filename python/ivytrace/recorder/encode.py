"""Hand-rolled protobuf wire encoding for the records written on every op.

Building upb message objects costs about a microsecond per message, several times the cost of the
framework call being recorded; the hot records (OpEvent and the Args and TensorRefs inside it) are
therefore encoded directly to bytes here. The output is ordinary protobuf wire format - every
reader parses it with the generated classes, and the tests check it against them. Field tags
come from the generated descriptors (tags.py); none is written here.
"""
from __future__ import annotations

from builtins import len  # the builtin itself: while recording, builtins.len is sym._len (one Python call more)

import struct
import types

from ivytrace.recorder.tags import ARG, COMPLEX, DICT, LIST, SLICE

# -- varints ----------------------------------------------------------------------------------
_SMALL = 1 << 14
V = [bytes((n,)) if n < 128 else bytes(((n & 127) | 128, n >> 7)) for n in range(_SMALL)]
# The low 14 bits of a larger number: both bytes carry the continuation bit.
_VC = [bytes(((n & 127) | 128, ((n >> 7) & 127) | 128)) for n in range(_SMALL)]
_M14 = _SMALL - 1


def varint(n: int) -> bytes:
    """Base-128 varint of a non-negative int (negative int64s as their two's complement)."""
    if n < _SMALL:
        if n >= 0:
            return V[n]
        n += 1 << 64
    if n < 1 << 28:
        return _VC[n & _M14] + V[n >> 14]
    if n < 1 << 42:
        return _VC[n & _M14] + _VC[(n >> 14) & _M14] + V[n >> 28]
    return _VC[n & _M14] + _VC[(n >> 14) & _M14] + _VC[(n >> 28) & _M14] + varint(n >> 42)


def ld(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field: tag + varint(len) + payload."""
    n = len(payload)
    return tag + (V[n] if n < _SMALL else varint(n)) + payload


_pack_double = struct.Struct("<d").pack

# -- Arg (common.proto) ----------------------------------------------------------------------
A_TENSOR = ARG.TENSOR
A_NONE = ARG.NONE + b"\x01"
A_TRUE = ARG.B + b"\x01"
A_FALSE = ARG.B + b"\x00"
A_INT = ARG.I          # sint64, zigzag
A_FLOAT = ARG.F        # double, fixed64
A_STR = ARG.S
A_DTYPE = ARG.DTYPE
A_DEVICE = ARG.DEVICE
A_LIST = ARG.LIST
A_TUPLE = ARG.TUPLE
A_DICT = ARG.DICT
A_SLICE = ARG.SLICE
A_ELLIPSIS = ARG.ELLIPSIS + b"\x01"
A_SYMBOL = ARG.SYMBOL
A_COMPLEX = ARG.C
A_OPAQUE = ARG.OPAQUE
ITEM = LIST.ITEMS
assert ITEM == DICT.KEYS
_DICT_VALUE = DICT.VALUES
_SLICE_START, _SLICE_STOP, _SLICE_STEP = SLICE.START, SLICE.STOP, SLICE.STEP
_REAL, _IMAG = COMPLEX.REAL, COMPLEX.IMAG

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_int_cache: dict = {}


def enc_int(v: int) -> bytes:
    b = _int_cache.get(v)
    if b is None:
        if not _INT64_MIN <= v <= _INT64_MAX:
            return enc_opaque(v)
        b = A_INT + varint((v << 1) ^ (v >> 63))
        if len(_int_cache) < 65536:
            _int_cache[int(v)] = b
    return b


def enc_float(v: float) -> bytes:
    return A_FLOAT + _pack_double(v)


def enc_str(v: str) -> bytes:
    return ld(A_STR, v.encode("utf-8", "surrogatepass"))


def enc_opaque(v) -> bytes:
    try:
        r = repr(v)
    except Exception:  # a broken __repr__ must not break the user's program
        r = "<repr failed>"
    if len(r) > 200:
        r = r[:197] + "..."
    return ld(A_OPAQUE, f"{type(v).__qualname__}: {r}".encode("utf-8", "surrogatepass"))


class ArgEncoder:
    """Python values -> serialized `Arg` bytes, dispatching on the exact type (one dict lookup).

    Framework recorders add their types to `table`; tensor handlers get (value, tensors) and may
    append to `tensors`.
    """

    def __init__(self):
        self.table = {
            type(None): lambda v, ts: A_NONE,
            bool: lambda v, ts: A_TRUE if v else A_FALSE,
            int: lambda v, ts: enc_int(v),
            float: lambda v, ts: A_FLOAT + _pack_double(v),
            str: lambda v, ts: enc_str(v),
            complex: self._complex,
            list: self._list,
            tuple: self._tuple,
            dict: self._dict,
            slice: self._slice,
            type(Ellipsis): lambda v, ts: A_ELLIPSIS,
        }
        self.subclass_handlers = []   # (base type, handler) checked before the built-in bases

    def encode(self, v, tensors) -> bytes:
        f = self.table.get(type(v))
        if f is None:
            f = self._resolve(type(v))
        return f(v, tensors)

    def _resolve(self, tp):
        """Handler for a type not in the table (subclasses, numpy scalars...), cached."""
        f = None
        t = self.table
        for base, handler in self.subclass_handlers + [
                (bool, t[bool]), (int, t[int]), (float, t[float]), (str, t[str]),
                (tuple, self._tuple), (list, self._list), (dict, self._dict)]:
            if issubclass(tp, base):
                f = handler
                break
        if f is None and getattr(tp, "__module__", "") == "numpy" and hasattr(tp, "item") \
                and tp.__name__ != "ndarray":
            f = lambda v, ts: self.encode(v.item(), ts)  # numpy scalar -> Python scalar  # noqa: E731
        if f is None:
            f = lambda v, ts: enc_opaque(v)  # noqa: E731
        if not isinstance(tp, types.GenericAlias):
            self.table[tp] = f
        return f

    def _complex(self, v, ts):
        return ld(A_COMPLEX, _REAL + _pack_double(v.real) + _IMAG + _pack_double(v.imag))

    def _items(self, v, ts):
        enc = self.encode
        out = []
        for x in v:
            a = enc(x, ts)
            out.append(ITEM)
            n = len(a)
            out.append(V[n] if n < _SMALL else varint(n))
            out.append(a)
        return b"".join(out)

    def _list(self, v, ts):
        return ld(A_LIST, self._items(v, ts))

    def _tuple(self, v, ts):
        return ld(A_TUPLE, self._items(v, ts))

    def _dict(self, v, ts):
        if not all(type(k) is str for k in v):
            return enc_opaque(v)
        keys = b"".join(ld(ITEM, k.encode("utf-8", "surrogatepass")) for k in v)
        enc = self.encode
        values = b"".join(ld(_DICT_VALUE, enc(x, ts)) for x in v.values())
        return ld(A_DICT, keys + values)

    def _slice(self, v, ts):
        enc = self.encode
        body = b""
        if v.start is not None:
            body += ld(_SLICE_START, enc(v.start, ts))
        if v.stop is not None:
            body += ld(_SLICE_STOP, enc(v.stop, ts))
        if v.step is not None:
            body += ld(_SLICE_STEP, enc(v.step, ts))
        return ld(A_SLICE, body)
