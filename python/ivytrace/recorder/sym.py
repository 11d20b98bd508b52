"""Symbolic shapes: the Python ints a program reads from shapes, as values of the graph.

Inside a region, `x.shape`, `x.size()`, `len(x)`, `x.numel()` and `x.dim()` of a tensor the
region computed (or was given) return stand-ins: a `SymInt` holds the int Python saw and where it
came from (`size(x, 0)`, or `mul(a, b)` of two others). Python arithmetic on them (`b * t`,
`c // n_head`, `-n`, `n > 4`) makes new stand-ins, and nothing is written yet. When one reaches a
recorded framework call (`x.view(b, t, -1)`, `torch.arange(t)`, `torch.tensor(n)`, a slice bound,
split sizes), the recorder writes the ops that compute it (`ivytrace.sym.size`, `ivytrace.sym.mul`,
..., schemas/sym.textproto) and the call reads that value, so a replay on inputs of another shape
computes it again. The call itself is made with plain ints.

Where a stand-in decides Python control flow or leaves in a way the recorder cannot follow, it
becomes a guard: `bool()` (an `if`), `__index__` (range(), list indexing, a C function taking an
int), `int()`, `float()`, `hash()` (a dict key), `__array__` (NumPy on a plain value). A guard on a
comparison (`if x.shape[0] > 4`) checks the comparison on replay, not the exact size; the others
check the exact value. Either way a replay that would take another path raises a GuardError.

Limits: what is formatted into a string (`f"{n}"`, `str(n)`) leaves without a guard (strings are
not expected to decide control flow); arithmetic with a float (`n / 2`, `n * 0.5`, `n ** 0.5`)
gives a SymFloat, which leaves with a guard on its exact value where Python needs the plain
float (`math.sqrt`, `float()`, `int()`); stand-ins are made only for tensors the region computed or was given (a parameter's
or a constant's shape is constant) and only on the recorder's thread; `isinstance(n, int)` holds,
`type(n) is int` does not.

The recorder that made a stand-in (its "host") knows the current frame, how its tensors are
referred to, and writes the records; `SymHost` below holds what the hosts share.
"""
from __future__ import annotations

import builtins
import operator
import struct
import threading
import time

from ivytrace.recorder.encode import A_FALSE, A_TENSOR, A_TRUE, enc_float, enc_int, ld
from ivytrace.recorder.writer import TAG_GUARD, TAG_OP, TAG_TENSOR
from ivytrace.v1 import common_pb2, trace_pb2

SYM_INT = common_pb2.SYM_INT
SYM_BOOL = common_pb2.SYM_BOOL
SYM_FLOAT = common_pb2.SYM_FLOAT
_PACK_Q = struct.Struct("<q").pack
_PACK_D = struct.Struct("<d").pack

# Types that handle a stand-in themselves in a reflected operator (`s * x` -> x.__rmul__(s)),
# recording it as an op with a symbolic argument. Hosts register their array types here.
DEFER_TYPES: list = []


class SymValue:
    """A Python int or bool computed from shapes while recording (see the module docstring)."""
    __slots__ = ("value", "_expr", "_host", "_mat")
    # Looks like a tensor that was never written to the recorders' in-place write checks.
    _version = 0
    DTYPE = SYM_INT

    def __init__(self, value, expr, host):
        self.value = value
        self._expr = expr      # ("leaf", op name, tensor, dim or None) | ("op", op name, operands)
        self._host = host
        self._mat = None       # (frame token, Arg bytes) of its last materialization

    # -- into the trace ----------------------------------------------------------------------
    def arg(self) -> bytes:
        """Arg bytes that refer to this value in the host's current frame: a reference to the
        value, after writing the ops that compute it, or the plain value where it is a constant
        there (a shape of a tensor the region did not compute)."""
        host = self._host
        tok = host._sym_frame()
        if tok is None:
            return self._literal()
        m = self._mat
        if m is not None and m[0] is tok:
            return m[1]
        e = self._expr
        if e[0] == "input":   # a region input: defined by RegionBegin in its own frame only
            return self._literal()
        if e[0] == "leaf":
            t = host._sym_tensor_arg(e[2])
            if t is None:
                b = self._literal()
            else:
                b = host._sym_emit(e[1], [t] if e[3] is None else [t, enc_int(e[3])], self)
        else:
            args = [_arg_of(o) for o in e[2]]
            if all(not a.startswith(A_TENSOR) for a in args):
                b = self._literal()
            else:
                b = host._sym_emit(e[1], args, self)
        self._mat = (tok, b)
        return b

    def _literal(self) -> bytes:
        return enc_int(self.value)

    def _leave(self, how: str):
        """The plain value, leaving symbolic tracking: a guard on it (when recording)."""
        self._host._sym_guard(self, how, self.value)
        return self.value

    # -- ways a value leaves -------------------------------------------------------------------
    def __index__(self):
        return self._leave("__index__")

    def __int__(self):
        return self._leave("__int__")

    def __float__(self):
        return float(self._leave("__index__"))

    def __complex__(self):
        return complex(self._leave("__index__"))

    def __hash__(self):
        return hash(self._leave("__index__"))

    def __array__(self, dtype=None, copy=None):
        import numpy as np
        return np.asarray(self._leave("__index__"), dtype=dtype)

    def __reduce__(self):   # pickle/copy: the plain value (the stand-in belongs to one recording)
        return (type(self.value), (self._leave("__index__"),))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    # Formatting is not control flow: no guard (see Limits in the module docstring).
    def __repr__(self):
        return repr(self.value)

    def __str__(self):
        return str(self.value)

    def __format__(self, spec):
        return format(self.value, spec)


class SymInt(SymValue):
    """A stand-in for an int read from (or computed from) a shape."""
    __slots__ = ()
    DTYPE = SYM_INT

    @property
    def __class__(self):   # isinstance(n, int) holds, as for the int it stands for
        return int

    def __bool__(self):
        return bool(_compare(self, 0, "ivytrace.sym.ne", operator.ne))

    # arithmetic -> SymInt
    def __add__(self, o):
        return _arith(self, o, "ivytrace.sym.add", operator.add)

    def __radd__(self, o):
        return _arith(o, self, "ivytrace.sym.add", operator.add, reflected=True)

    def __sub__(self, o):
        return _arith(self, o, "ivytrace.sym.sub", operator.sub)

    def __rsub__(self, o):
        return _arith(o, self, "ivytrace.sym.sub", operator.sub, reflected=True)

    def __mul__(self, o):
        return _arith(self, o, "ivytrace.sym.mul", operator.mul)

    def __rmul__(self, o):
        return _arith(o, self, "ivytrace.sym.mul", operator.mul, reflected=True)

    def __floordiv__(self, o):
        return _arith(self, o, "ivytrace.sym.floordiv", operator.floordiv)

    def __rfloordiv__(self, o):
        return _arith(o, self, "ivytrace.sym.floordiv", operator.floordiv, reflected=True)

    def __mod__(self, o):
        return _arith(self, o, "ivytrace.sym.mod", operator.mod)

    def __rmod__(self, o):
        return _arith(o, self, "ivytrace.sym.mod", operator.mod, reflected=True)

    def __divmod__(self, o):
        return self // o, self % o

    def __rdivmod__(self, o):
        return o // self, o % self

    def __pow__(self, o, mod=None):
        if mod is None and (_is_int(o) and _plain(o) >= 0 or type(o) is float):
            return _arith(self, o, "ivytrace.sym.pow", operator.pow)
        if mod is None and isinstance(o, SymFloat):
            return NotImplemented
        return pow(self._leave("__index__"), _plain_left(o), mod)

    def __rpow__(self, o):
        if _is_int(o) and self.value >= 0 or type(o) is float:
            return _arith(o, self, "ivytrace.sym.pow", operator.pow, reflected=True)
        return pow(_plain_left(o), self._leave("__index__"))

    # true division gives a float: a SymFloat when the other operand is a number
    def __truediv__(self, o):
        if _is_number(o) and not isinstance(o, SymFloat):
            if _plain(o) == 0:
                return self._leave("__index__") / _plain_left(o)   # ZeroDivisionError, as Python
            return _make(o, "ivytrace.sym.truediv", operator.truediv, self, o, SymFloat)
        if _defers(o) or isinstance(o, SymFloat):
            return NotImplemented
        return self._leave("__index__") / _plain_left(o)

    def __rtruediv__(self, o):
        if _is_number(o) and not isinstance(o, SymFloat):
            if self.value == 0:
                return _plain_left(o) / self._leave("__index__")
            return _make(o, "ivytrace.sym.truediv", operator.truediv, o, self, SymFloat)
        return _plain_left(o) / self._leave("__index__")

    def __lshift__(self, o):
        return self._leave("__index__") << _plain_left(o)

    def __rshift__(self, o):
        return self._leave("__index__") >> _plain_left(o)

    def __and__(self, o):
        return self._leave("__index__") & _plain_left(o)

    def __or__(self, o):
        return self._leave("__index__") | _plain_left(o)

    def __xor__(self, o):
        return self._leave("__index__") ^ _plain_left(o)

    __rand__, __ror__, __rxor__ = __and__, __or__, __xor__

    def __neg__(self):
        return _unary(self, "ivytrace.sym.neg", operator.neg)

    def __pos__(self):
        return self

    def __abs__(self):
        return _unary(self, "ivytrace.sym.abs", abs)

    def __invert__(self):
        return ~self._leave("__index__")

    def __round__(self, ndigits=None):
        return self if ndigits is None or ndigits >= 0 else round(self._leave("__index__"), ndigits)

    def __trunc__(self):
        return self

    def __floor__(self):
        return self

    def __ceil__(self):
        return self

    # comparisons -> SymBool
    def __eq__(self, o):
        return _compare(self, o, "ivytrace.sym.eq", operator.eq)

    def __ne__(self, o):
        return _compare(self, o, "ivytrace.sym.ne", operator.ne)

    def __lt__(self, o):
        return _compare(self, o, "ivytrace.sym.lt", operator.lt)

    def __le__(self, o):
        return _compare(self, o, "ivytrace.sym.le", operator.le)

    def __gt__(self, o):
        return _compare(self, o, "ivytrace.sym.gt", operator.gt)

    def __ge__(self, o):
        return _compare(self, o, "ivytrace.sym.ge", operator.ge)

    def __hash__(self):   # a dict key or set member: the exact value (defining __eq__ unset it)
        return hash(self._leave("__index__"))

    # int's own helpers some code calls
    def bit_length(self):
        return self._leave("__index__").bit_length()

    @property
    def real(self):
        return self

    @property
    def imag(self):
        return 0

    @property
    def numerator(self):
        return self

    @property
    def denominator(self):
        return 1

    def is_integer(self):
        return True


class SymBool(SymValue):
    """A stand-in for a comparison of shape-derived ints (`x.shape[0] > 4`)."""
    __slots__ = ()
    DTYPE = SYM_BOOL

    @property
    def __class__(self):
        return bool

    def _literal(self) -> bytes:
        return A_TRUE if self.value else A_FALSE

    def __bool__(self):
        return bool(self._leave("__bool__"))

    def __index__(self):
        return int(self._leave("__bool__"))

    __int__ = __index__

    def __hash__(self):
        return hash(self._leave("__bool__"))

    def __invert__(self):   # ~b on a bool is an int: leave
        return ~self.__index__()

    # Ways out that SymValue takes by __index__ (an int): a bool's guard records the bool.
    def __float__(self):
        return float(self._leave("__bool__"))

    def __complex__(self):
        return complex(self._leave("__bool__"))

    def __array__(self, dtype=None, copy=None):
        import numpy as np
        return np.asarray(bool(self._leave("__bool__")), dtype=dtype)

    def __and__(self, o):
        if isinstance(o, SymBool) or type(o) is bool:
            return _make(o, "ivytrace.sym.and_", lambda a, b: a and b, self, o, SymBool)
        return self.__index__() & _plain_left(o)

    def __or__(self, o):
        if isinstance(o, SymBool) or type(o) is bool:
            return _make(o, "ivytrace.sym.or_", lambda a, b: a or b, self, o, SymBool)
        return self.__index__() | _plain_left(o)

    __rand__, __ror__ = __and__, __or__

    def __eq__(self, o):
        return _compare(self, o, "ivytrace.sym.eq", operator.eq)

    def __ne__(self, o):
        return _compare(self, o, "ivytrace.sym.ne", operator.ne)


class SymFloat(SymValue):
    """A stand-in for a Python float the caller passed to a traced function, or one computed
    from such floats (`alpha * 2`, `1 - beta`, `scale / n`): the arithmetic is recorded like shape
    arithmetic, so the float is an input of the graph, not a constant. It leaves, with a guard on
    its exact value, where Python needs the plain float (float(), math.*, a C function, a dict key);
    `if alpha > 0.5` guards the comparison."""
    __slots__ = ()
    DTYPE = SYM_FLOAT

    @property
    def __class__(self):   # isinstance(x, float) holds
        return float

    def _literal(self) -> bytes:
        return enc_float(self.value)

    def _leave(self, how: str = "__float__"):
        self._host._sym_guard(self, "__float__", self.value)
        return self.value

    def __index__(self):   # a float is never an index (as for float itself); no guard
        raise TypeError("'float' object cannot be interpreted as an integer")

    def __int__(self):
        return int(self._leave())

    def __float__(self):
        return self._leave()

    def __bool__(self):
        return bool(_fcompare(self, 0.0, "ivytrace.sym.ne", operator.ne))

    def __hash__(self):
        return hash(self._leave())

    def __reduce__(self):
        return (float, (self._leave(),))

    # arithmetic -> SymFloat
    def __add__(self, o):
        return _farith(self, o, "ivytrace.sym.add", operator.add)

    def __radd__(self, o):
        return _farith(o, self, "ivytrace.sym.add", operator.add, reflected=True)

    def __sub__(self, o):
        return _farith(self, o, "ivytrace.sym.sub", operator.sub)

    def __rsub__(self, o):
        return _farith(o, self, "ivytrace.sym.sub", operator.sub, reflected=True)

    def __mul__(self, o):
        return _farith(self, o, "ivytrace.sym.mul", operator.mul)

    def __rmul__(self, o):
        return _farith(o, self, "ivytrace.sym.mul", operator.mul, reflected=True)

    def __truediv__(self, o):
        return _farith(self, o, "ivytrace.sym.truediv", operator.truediv)

    def __rtruediv__(self, o):
        return _farith(o, self, "ivytrace.sym.truediv", operator.truediv, reflected=True)

    def __floordiv__(self, o):
        return _farith(self, o, "ivytrace.sym.floordiv", operator.floordiv)

    def __rfloordiv__(self, o):
        return _farith(o, self, "ivytrace.sym.floordiv", operator.floordiv, reflected=True)

    def __mod__(self, o):
        return _farith(self, o, "ivytrace.sym.mod", operator.mod)

    def __rmod__(self, o):
        return _farith(o, self, "ivytrace.sym.mod", operator.mod, reflected=True)

    def __divmod__(self, o):
        return self // o, self % o

    def __rdivmod__(self, o):
        return o // self, o % self

    def __pow__(self, o, mod=None):
        if mod is None:
            return _farith(self, o, "ivytrace.sym.pow", operator.pow)
        return pow(self._leave(), _plain_left(o), mod)

    def __rpow__(self, o):
        return _farith(o, self, "ivytrace.sym.pow", operator.pow, reflected=True)

    def __neg__(self):
        return _unary(self, "ivytrace.sym.neg", operator.neg, SymFloat)

    def __pos__(self):
        return self

    def __abs__(self):
        return _unary(self, "ivytrace.sym.abs", abs, SymFloat)

    def __round__(self, ndigits=None):
        return round(self._leave(), ndigits)

    def __trunc__(self):
        return int(self._leave())

    def __floor__(self):
        import math
        return math.floor(self._leave())

    def __ceil__(self):
        import math
        return math.ceil(self._leave())

    # comparisons -> SymBool
    def __eq__(self, o):
        return _fcompare(self, o, "ivytrace.sym.eq", operator.eq)

    def __ne__(self, o):
        return _fcompare(self, o, "ivytrace.sym.ne", operator.ne)

    def __lt__(self, o):
        return _fcompare(self, o, "ivytrace.sym.lt", operator.lt)

    def __le__(self, o):
        return _fcompare(self, o, "ivytrace.sym.le", operator.le)

    def __gt__(self, o):
        return _fcompare(self, o, "ivytrace.sym.gt", operator.gt)

    def __ge__(self, o):
        return _fcompare(self, o, "ivytrace.sym.ge", operator.ge)

    # float's own helpers some code calls
    def is_integer(self):
        return self._leave().is_integer()

    def as_integer_ratio(self):
        return self._leave().as_integer_ratio()

    def hex(self):
        return self._leave().hex()

    def conjugate(self):
        return self

    @property
    def real(self):
        return self

    @property
    def imag(self):
        return 0.0


def _bool_arith(pyop, reflected):
    def method(self, o):
        v = int(self._leave("__bool__"))
        return pyop(o, v) if reflected else pyop(v, o)
    return method


# Arithmetic on a comparison (`(n > 2) * 2`, `x + (b > 4)`), as on a bool: its value leaves with a
# guard (a bool used as a number).
for _name, _pyop in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                     ("truediv", operator.truediv), ("floordiv", operator.floordiv), ("mod", operator.mod),
                     ("pow", operator.pow), ("xor", operator.xor), ("lshift", operator.lshift),
                     ("rshift", operator.rshift), ("matmul", operator.matmul)):
    setattr(SymBool, f"__{_name}__", _bool_arith(_pyop, False))
    setattr(SymBool, f"__r{_name}__", _bool_arith(_pyop, True))
SymBool.__neg__ = lambda self: -int(self._leave("__bool__"))
SymBool.__pos__ = lambda self: +int(self._leave("__bool__"))
SymBool.__abs__ = lambda self: abs(int(self._leave("__bool__")))

# Every stand-in class (hosts add their own kinds, e.g. torch's, which torch's argument parser
# takes for ints): `unwrap` and the encoders look them up by exact type.
SYM_CLASSES = {SymInt, SymBool, SymFloat}


def not_(b):
    """`not b` cannot be intercepted (it calls __bool__): code that wants a symbolic negation
    calls this; plain `not` is a guard."""
    if isinstance(b, SymValue):
        return _unary(b, "ivytrace.sym.not_", operator.not_, SymBool)
    return not b


# -- helpers ------------------------------------------------------------------------------------
def _is_int(o) -> bool:
    return type(o) is int or type(o) is bool or (isinstance(o, SymValue) and not isinstance(o, SymFloat))


def _is_number(o) -> bool:
    return type(o) in (int, bool, float) or isinstance(o, SymValue)


def _plain(o):
    return o.value if isinstance(o, SymValue) else o


def _plain_left(o):
    """The other operand of an operation that leaves symbolic tracking: its plain value
    (guarded if it is a stand-in too)."""
    return o._leave("__index__") if isinstance(o, SymValue) else o


def _defers(o) -> bool:
    return bool(DEFER_TYPES) and isinstance(o, tuple(DEFER_TYPES))


def _host_of(a, b):
    return a._host if isinstance(a, SymValue) else b._host


def _make(other, name, pyop, a, b, cls=None):
    """A new stand-in of the host's kind (`cls` SymInt or SymBool: which of the two)."""
    host = _host_of(a, b)
    value = pyop(_plain(a), _plain(b))
    if cls is SymBool or (cls is None and type(value) is bool):
        kind = host.SymBoolType
    elif cls is SymFloat or type(value) is float:
        kind = host.SymFloatType
    else:
        kind = host.SymIntType
    return kind(value, ("op", name, (a, b)), host)


def _arith(a, b, name, pyop, reflected=False):
    other = a if reflected else b
    me = b if reflected else a
    if isinstance(other, SymFloat):
        return NotImplemented   # the float's (reflected) operator keeps both symbolic
    if _is_int(other):
        return _make(other, name, pyop, a, b, SymInt)
    if type(other) is float:
        try:
            value = pyop(_plain(a), _plain(b))
        except ZeroDivisionError:
            me._leave("__index__")
            raise
        if type(value) is float:   # not a complex power
            return _make(other, name, pyop, a, b, SymFloat)
    if _defers(other):
        return NotImplemented   # the array's own (reflected) operator records the call
    # Floats and anything else (a list repeated, another library's number): the exact value
    # leaves symbolic tracking, with a guard.
    v = me._leave("__index__")
    try:
        return pyop(other, v) if reflected else pyop(v, other)
    except TypeError:
        return NotImplemented


def _unary(a, name, pyop, cls=SymInt):
    host = a._host
    kind = host.SymBoolType if cls is SymBool else host.SymFloatType if cls is SymFloat else host.SymIntType
    return kind(pyop(a.value), ("op", name, (a,)), host)


def _farith(a, b, name, pyop, reflected=False):
    """Arithmetic with a SymFloat: with any Python number or stand-in it stays symbolic."""
    other = a if reflected else b
    me = b if reflected else a
    if _is_number(other) and not isinstance(other, SymBool):
        try:
            value = pyop(_plain(a), _plain(b))
        except ZeroDivisionError:
            me._leave()
            raise
        if type(value) is float:
            return _make(other, name, pyop, a, b, SymFloat)
        # (-2.0) ** 0.5 is complex: the exact values leave
    if _defers(other):
        return NotImplemented
    v = me._leave()
    o = _plain_left(other)
    try:
        return pyop(o, v) if reflected else pyop(v, o)
    except TypeError:
        return NotImplemented


def _fcompare(a, b, name, pyop):
    if _is_number(b):
        return _make(b, name, pyop, a, b, SymBool)
    if _defers(b):
        return NotImplemented
    return NotImplemented


def _compare(a, b, name, pyop):
    if isinstance(b, SymFloat):
        return NotImplemented   # its reflected comparison
    if _is_int(b):
        return _make(b, name, pyop, a, b, SymBool)
    if type(b) is float:
        return _make(b, name, pyop, a, b, SymBool)
    if _defers(b):
        return NotImplemented
    return NotImplemented


def _arg_of(o) -> bytes:
    if isinstance(o, SymValue):
        return o.arg()
    if type(o) is bool:
        return A_TRUE if o else A_FALSE
    if type(o) is float:
        return enc_float(o)
    return enc_int(o)


def unwrap(v):
    """`v` with every stand-in (also inside tuples, lists, dicts and slices) replaced by its plain
    value, without a guard: what a recorded call is made with."""
    t = type(v)
    if t in SYM_CLASSES:
        return v.value
    if t is tuple or t is list:
        return t(unwrap(x) for x in v)
    if t is dict:
        return {k: unwrap(x) for k, x in v.items()}
    if t is slice:
        return slice(unwrap(v.start), unwrap(v.stop), unwrap(v.step))
    conv = _UNWRAP_TYPES.get(t)
    if conv is not None:
        return conv(v)
    return v


# -- len() ---------------------------------------------------------------------------------------
# CPython's len() turns whatever __len__ returns into an exact int (through __index__, which would
# be a guard), so `len(x)` of an array could never stay symbolic. While a host is installed,
# builtins.len is this function: for the array types hosts register it asks the host, for
# everything else it is the builtin (one dict look-up more per call, only while recording).
_builtin_len = builtins.len
LEN_HOOKS: dict = {}     # array type -> host function (array) -> int or stand-in
_len_users = [0]


def _len(obj, /):
    h = LEN_HOOKS.get(type(obj))
    if h is not None:
        return h(obj)
    return _builtin_len(obj)


def hook_len():
    if _len_users[0] == 0:
        builtins.len = _len
    _len_users[0] += 1


def unhook_len():
    _len_users[0] = max(_len_users[0] - 1, 0)
    if _len_users[0] == 0 and builtins.len is _len:
        builtins.len = _builtin_len


# Sequence types a host hands out that hold stand-ins (torch's size), -> their plain form.
_UNWRAP_TYPES: dict = {}


class SymHost:
    """What a framework recorder provides to make stand-ins and write their records.

    A host defines `_sym_frame()` (a token for the current region's frame, or None when nothing
    is being recorded into a region), `_sym_tensor_arg(t)` (Arg bytes referring to tensor `t`
    when the current frame computed or was given it, else None: its shape is constant there),
    `_sym_location()` ((file id, line) of the user's code), `_sym_region()` (the innermost region
    id), and has `w` (the trace writer), `_t0` and `_next_tid` (its tensor id counter).
    """

    SymIntType = SymInt     # the stand-in classes this host hands out
    SymBoolType = SymBool
    SymFloatType = SymFloat

    def _sym_leaf(self, t, op: str, dim, value: int) -> SymInt:
        return self.SymIntType(value, ("leaf", op, t, dim), self)

    def _sym_size(self, t, shape, size_type=tuple):
        """A shape of a tensor as a tuple of stand-ins (`size_type` makes the host's kind)."""
        cls = self.SymIntType
        return size_type(cls(int(d), ("leaf", "ivytrace.sym.size", t, i), self) for i, d in enumerate(shape))

    def _sym_scope(self) -> int:
        """The interned module scope of the code that made the value (0: none)."""
        return 0

    def _sym_input(self, value):
        """A stand-in for a Python int or float the caller passes in (an argument, a stateful
        object's attribute): it becomes a region input when handed to region_begin
        (`_sym_input_ref`)."""
        if type(value) is float:
            return self.SymFloatType(value, ("input",), self)
        return self.SymIntType(value, ("input",), self)

    def _sym_input_ref(self, sym: SymValue) -> bytes:
        """Arg bytes (TensorRef with dtype) naming input stand-in `sym` in RegionBegin; the
        caller binds it to the new frame with `_sym_bind_input` once that frame exists."""
        tid = self._sym_new_id()
        ref = common_pb2.TensorRef(id=tid, storage=tid, dtype=sym.DTYPE).SerializeToString()
        sym._mat = (None, ld(A_TENSOR, common_pb2.TensorRef(id=tid, storage=tid).SerializeToString()))
        return ld(A_TENSOR, ref)

    @staticmethod
    def _sym_bind_input(sym: SymValue, frame):
        sym._mat = (frame, sym._mat[1])

    def _sym_new_id(self) -> int:
        tid = self._next_tid
        self._next_tid = tid + 1
        return tid

    def _sym_emit(self, name: str, args: list, sym: SymValue) -> bytes:
        """Write the op that computes `sym` from `args` (Arg bytes), with its recorded value;
        returns Arg bytes that refer to the new value."""
        tid = self._sym_new_id()
        w = self.w
        fid, line = self._sym_location()
        ev = trace_pb2.OpEvent()   # built with the generated class: shape arithmetic is rare
        ev.op = w.intern(name)
        for a in args:
            ev.args.add().MergeFromString(a)
        r = ev.result.tensor
        r.id = tid
        r.storage = tid
        r.dtype = sym.DTYPE
        ev.file = fid
        ev.line = line
        ev.scope = self._sym_scope()
        ev.thread = threading.get_ident()
        ev.start_ns = max(time.perf_counter_ns() - self._t0, 0)
        w.add(TAG_OP, ev.SerializeToString(), op=True)
        td = trace_pb2.TensorData(total_bytes=1 if sym.DTYPE == SYM_BOOL else 8)
        td.ref.id = tid
        td.ref.storage = tid
        td.ref.dtype = sym.DTYPE
        if sym.DTYPE == SYM_FLOAT:
            td.value.dtype = common_pb2.FLOAT64
            td.value.data = _PACK_D(float(sym.value))
        elif sym.DTYPE == SYM_INT:
            td.value.dtype = common_pb2.INT64
            td.value.data = _PACK_Q(int(sym.value))
        else:
            td.value.dtype = common_pb2.BOOL
            td.value.data = bytes((int(sym.value),))
        td.value.role = common_pb2.OBSERVED
        w.add(TAG_TENSOR, td.SerializeToString(), tensor_bytes=len(td.value.data))
        w.emit()
        plain = common_pb2.TensorRef(id=tid, storage=tid).SerializeToString()
        return ld(A_TENSOR, plain)

    def _sym_guard(self, sym: SymValue, how: str, observed):
        """A stand-in's value left symbolic tracking (`how`: __bool__, __index__, __int__): a
        GuardEvent on it, so a replay checks it."""
        if self._sym_frame() is None:
            return
        a = sym.arg()
        if not a.startswith(A_TENSOR):
            return   # constant in this frame: nothing to check
        ref = common_pb2.Arg.FromString(a).tensor
        fid, line = self._sym_location()
        value = common_pb2.Arg()
        if type(observed) is bool:
            value.b = observed
        elif type(observed) is float:
            value.f = observed
        else:
            value.i = int(observed)
        g = trace_pb2.GuardEvent(tensor=ref, op=self.w.intern(f"ivytrace.sym.{how}"), value=value,
                                 file=fid, line=line, region=self._sym_region())
        self.w.emit(TAG_GUARD, g.SerializeToString())
