"""The NumPy recorder: a recording ndarray subclass (NEP 13 `__array_ufunc__`, NEP 18
`__array_function__`) plus wrappers around NumPy's array-creating module functions.

How calls are captured, with no change to the user's code:
  * While the recorder is installed, the array-creating functions of the `numpy` module
    (np.array, np.asarray, np.zeros, np.ones, np.arange, np.linspace, np.eye, np.full, ...) and
    of `numpy.random` (rand, randn, randint, normal, uniform, ...) are replaced by wrappers that
    return a `TracedArray` view of the array they made. Region inputs (trace_graph arguments) are
    turned into TracedArray views too.
  * A TracedArray records every ufunc call on it (`a + b`, `np.exp(a)`, `np.add(a, b, out=a,
    where=m)`, `np.add.reduce`, `np.add.accumulate`, ...) through `__array_ufunc__` as
    "numpy.<ufunc>" / "numpy.<ufunc>.<method>", every array function (np.concatenate,
    np.einsum, np.mean, np.transpose, ...) through `__array_function__` as "numpy.<function>",
    and its methods and attributes (.T, .reshape, .astype, .sum, indexing, index assignment) as
    "numpy.ndarray.<name>".
  * Guards: bool(a), a.item(), float(a), int(a), a.tolist() write a GuardEvent with the value
    Python saw and the user's source line.

Versions: NumPy has no version counters, so the recorder keeps one per storage (the root of an
array's `.base` chain): a recorded write (out=, in-place operators, __setitem__) bumps it, and
every array on that storage is then at the new version (as views share the counter in PyTorch).

Limits:
  * Arrays that never meet a recorded function stay plain ndarrays: an array made by a function
    that is not wrapped (np.frombuffer, np.load, a C extension) and only combined with other plain
    arrays is not recorded; once it meets a TracedArray it is recorded as a constant.
  * Shapes: `a.shape` and `len(a)` write ShapeRead records (the graph is specialized on them, as
    for torch); `a.ndim`, `a.size` and setting `a.shape` are not recorded.
  * Writes that bypass NumPy's Python-visible API (a.data, ctypes, np.copyto through a plain
    array, writes through a plain view of a traced array) are not seen.
  * Methods not listed in _METHODS run unrecorded on the TracedArray (their ufunc/array-function
    calls are recorded instead, if any).
  * NumPy scalars returned by recorded calls (np.sum(a), a[0, 0]) are given back as 0-d
    TracedArrays, so later arithmetic on them is recorded too.
  * Only the thread that installed the recorder is recorded.
  * Calls into NumPy from JAX's own code (jax, jaxlib, ml_dtypes: np.array, np.zeros... all the
    time) are not the user's and are not recorded; JAX programs are recorded by the JAX recorder.
  * np.random's legacy global functions are recorded; Generator objects (default_rng) and
    RandomState methods are not. np.random.seed is recorded (an op with a side effect, replayed
    in order with the draws); get_state/set_state run unrecorded, but compiled
    (Cython) code calling np.array etc. is indistinguishable from the user's own call: creating a
    np.random.RandomState(seed) while recording shows up as a few ops and int() guards on the
    user's line (outside regions they do not reach any graph).

Shared with the JAX recorder (array_recorder.py): the busy flag, the caller-location lookup,
value writing, guard and shape-read records, region framing.
"""
from __future__ import annotations

from builtins import len  # the builtin itself: while recording, builtins.len is sym._len (one Python call more)

import functools
import os
import sys
import threading
import time
import weakref

import numpy as np

from ivytrace.recorder.array_recorder import (CONSTANT, DTYPES as _DTYPES, FOLD_LIMIT, FOLDABLE, FOLDABLE_OP,  # noqa: F401
                                              GUARD_VALUE_LIMIT, INPLACE, RAISED, RANDOM, RANDOM_OUTPUT,
                                              REGION_INPUT, REGION_OUTPUT, ArrayRecorder, busy_flag,
                                              caller_location)
from ivytrace.recorder import sym as _sym
from ivytrace.recorder.encode import A_FLOAT, A_SYMBOL, A_TENSOR, ArgEncoder, _pack_double, enc_int, ld, varint
from ivytrace.recorder import opevent as _op
from ivytrace.recorder.tags import REF
from ivytrace.recorder.writer import TAG_GUARD
from ivytrace.v1 import common_pb2, trace_pb2

_NP_DIR = os.path.dirname(os.path.abspath(np.__file__)) + os.sep
_IVYTRACE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _library_dirs():
    """Directories of libraries built on NumPy whose own calls into it are not the user's: JAX's
    internals call np.array, np.zeros... all the time (found without importing them)."""
    import importlib.util
    dirs = []
    for name in ("jax", "jaxlib", "ml_dtypes"):
        try:
            spec = sys.modules[name].__spec__ if name in sys.modules else importlib.util.find_spec(name)
        except (ImportError, ValueError, AttributeError):
            spec = None
        if spec is not None and spec.origin:
            dirs.append(os.path.dirname(os.path.abspath(spec.origin)) + os.sep)
    return tuple(dirs)


# Frames in these directories are never "the user's" (calls from them are not recorded and source
# lines point past them).
_INTERNAL_DIRS = (_NP_DIR, _IVYTRACE_DIR) + _library_dirs()
# (file id, line) of the user's frame: the first outside those (and NumPy's array-function shims).
_location = caller_location(_INTERNAL_DIRS + ("<__array_function__",))

# Module functions that make arrays from non-arrays (wrapped so their results are traced).
_CREATORS = ("array", "asarray", "asanyarray", "ascontiguousarray", "zeros", "ones", "empty", "full",
             "arange", "linspace", "eye", "identity")
_RANDOM = ("rand", "randn", "randint", "random", "random_sample", "normal", "uniform", "standard_normal",
           "choice", "permutation")

# ndarray methods recorded as "numpy.ndarray.<name>" (others run unrecorded; the ufuncs and
# array functions they call are recorded).
_METHODS = ("reshape", "astype", "transpose", "sum", "mean", "max", "min", "prod", "std", "var",
            "argmax", "argmin", "copy", "flatten", "ravel", "squeeze", "clip", "dot", "fill",
            "swapaxes", "cumsum", "cumprod", "any", "all", "round", "take", "repeat", "diagonal",
            "__getitem__", "__setitem__",
            # Computed in C without NumPy's dispatch: unrecorded, their result would be a constant
            # of the trace (a silently wrong replay). Recorded, an op without a schema is refused.
            "trace", "sort", "partition", "argpartition", "put", "searchsorted", "compress", "choose",
            "nonzero", "resize")
# method -> index (in args incl. self) it writes
_WRITING_METHODS = {"__setitem__": 0, "fill": 0, "sort": 0, "partition": 0, "put": 0, "resize": 0}
# Array functions that write into an argument (not through out=): function -> index it writes.
# Unlisted, their write would go unseen and a replay would read the array as it was before.
_WRITING_FUNCTIONS = {"numpy.put_along_axis": 0, "numpy.put": 0, "numpy.putmask": 0, "numpy.place": 0,
                      "numpy.copyto": 0, "numpy.fill_diagonal": 0}
# np.random functions whose NumPy internals (compiled code calling np.array, int(a)) must not be
# recorded: they would show up as ops and guards on the user's line.
_UNRECORDED = ("get_state", "set_state", "default_rng")
# C functions whose __array_function__ dispatcher takes a list argument whole, as one object
# (np.lexsort's `keys`: a tuple is its arrays, a list is not): given a list of recorded arrays,
# NumPy converts it in C without dispatching, so the call went unrecorded and its result became
# a constant of the graph (np.lexsort([b, a]) replayed the traced order, silently). While
# recording, a list there is passed on as a tuple, which gives the same result and dispatches.
_LIST_AS_TUPLE = ("lexsort",)
# np.random functions recorded as ops with a side effect (schemas/numpy.textproto): seeding the
# global generator inside a traced function is replayed before the draws after it.
_SEEDING = ("seed",)
_GUARDS = ("__bool__", "__int__", "__float__", "__index__", "__complex__", "item", "tolist")

_shapes: dict = {}          # shape -> TensorRef.shape field bytes
_REF_ID, _REF_VERSION, _REF_STORAGE, _REF_DTYPE, _REF_SHAPE = REF.ID, REF.VERSION, REF.STORAGE, REF.DTYPE, REF.SHAPE
_REF_ZERO = REF.ID + b"\x00" + REF.STORAGE + b"\x00"   # id 0, storage 0: the head of a ref before dtype
_state, _busy, _Busy = busy_flag()
_ND_SHAPE = np.ndarray.shape.__get__
_get_ident = threading.get_ident
_NOT_HERE = object()   # record_ufunc: not the common call, record it the general way
_ARG_FLOAT = _op.arg_field(A_FLOAT + bytes(8))[:-8]
_TAG_OP = _op.TAG_OP
_DTYPE_SHAPE: dict = {}   # (dtype, shape) -> a TensorRef's dtype and shape fields (record_ufunc)   # OpEvent.args header of a float Arg, then the double
_REC = None   # the installed NumpyRecorder


def _plain(v):
    """TracedArray -> plain ndarray view, symbolic ints -> their ints (recorder/sym.py),
    recursively through lists/tuples/dicts/slices."""
    if isinstance(v, TracedArray):
        return v.view(np.ndarray)
    t = type(v)
    if t is tuple or t is list:
        return t(_plain(x) for x in v)
    if t is dict:
        return {k: _plain(x) for k, x in v.items()}
    if t in _sym.SYM_CLASSES or t is slice:
        return _sym.unwrap(v)
    return v


def _traced(v):
    """Wrap plain ndarrays in a result as TracedArray views."""
    if type(v) is np.ndarray:
        return v.view(TracedArray)
    if isinstance(v, np.generic) and not isinstance(v, (np.str_, np.bytes_, np.void)):
        a = np.asarray(v).view(TracedArray)   # numpy scalars become 0-d arrays (recorded)
        a._ivytrace_scalar = True             # ... that stay immutable (see _scalar_inplace)
        return a
    t = type(v)
    if t is tuple or t is list:
        return t(_traced(x) for x in v)
    return v


def _scalar_inplace(name):
    """`y += 1` on a NumPy scalar rebinds y to a new scalar; on the 0-d array that stands for it
    while recording it would write in place (a recorded `out=`), which the replay, where NumPy
    returns the scalar, cannot do. Such a stand-in computes the new value instead."""
    inplace, plain = getattr(np.ndarray, f"__i{name}__"), getattr(np.ndarray, f"__{name}__")

    def method(self, other):
        if self.__dict__.get("_ivytrace_scalar"):
            return plain(self, other)
        return inplace(self, other)
    method.__name__ = f"__i{name}__"
    return method


class TracedArray(np.ndarray):
    """An ndarray whose NumPy calls the recorder writes to the trace."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__" and not kwargs:
            rec = _REC
            if rec is not None:   # _np_ufunc checks that it records (active, its thread, not busy)
                result = _np_ufunc(rec, ufunc, inputs)
                if result is not _NOT_HERE:
                    return result
        return _array_ufunc_rest(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        # Public array functions carry their public module ("numpy", "numpy.linalg", ...).
        mod = getattr(func, "__module__", "") or "numpy"
        name = f"{mod}.{func.__name__}" if mod == "numpy" or mod.startswith("numpy.") else f"numpy.{func.__name__}"
        return _call(name, func, args, kwargs, kwargs.get("out"))

    for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
                  "lshift", "rshift"):
        locals()[f"__i{_name}__"] = _scalar_inplace(_name)
    del _name

    @property
    def T(self):
        return _call("numpy.transpose", np.ndarray.transpose, (self,), {}, None, record_name="numpy.transpose")

    # z.real / z.imag: recorded as np.real / np.imag (unrecorded, a complex result's parts would be
    # arrays the graph never computed: constants of the trace, silently wrong on other inputs).
    @property
    def real(self):
        return _call("numpy.real", np.real, (self,), {}, None)

    @real.setter
    def real(self, value):
        _part_write(self, "real", value)

    @property
    def imag(self):
        return _call("numpy.imag", np.imag, (self,), {}, None)

    @imag.setter
    def imag(self, value):
        _part_write(self, "imag", value)


def _part_write(a, part, value):
    """`a.real = v` / `a.imag = v`: a write the recorder cannot record; refused while recording."""
    rec = _REC
    if rec is not None and rec.active and not _busy() and threading.get_ident() == rec.thread:
        raise TypeError(f"ivytrace: assigning to .{part} of a traced array is not recorded "
                        f"(build the array anew, e.g. with np.real/np.imag and arithmetic)")
    getattr(np.ndarray, part).__set__(a, _plain((value,))[0])


def _array_ufunc_rest(ufunc, method, inputs, kwargs):
    """TracedArray.__array_ufunc__ for what the common-call path (_np_ufunc) does not take (also
    called by its C twin, _speedups.np_array_ufunc_method)."""
    name = f"numpy.{ufunc.__name__}" if method == "__call__" else f"numpy.{ufunc.__name__}.{method}"
    func = ufunc if method == "__call__" else getattr(ufunc, method)
    return _call(name, func, inputs, kwargs, kwargs.get("out"))


def _shape_get(self):
    v = np.ndarray.shape.__get__(self)
    rec = _REC
    if rec is not None and rec.active and not _busy() and threading.get_ident() == rec.thread:
        rec.shape_read("numpy.ndarray.shape", self, v)
        if rec._regions and rec.session.symbolic_shapes and rec._sym_tensor_arg(self) is not None:
            rec._guard_ranks()
            return rec._sym_size(self, v)
    return v


def _size_get(self):
    v = np.ndarray.size.__get__(self)
    rec = _REC
    if rec is not None and rec.active and not _busy() and threading.get_ident() == rec.thread:
        rec.shape_read("numpy.ndarray.size", self, v)
        if rec._regions and rec.session.symbolic_shapes and rec._sym_tensor_arg(self) is not None:
            rec._guard_ranks()
            return rec._sym_leaf(self, "ivytrace.sym.numel", None, v)
    return v


def _ndim_get(self):
    v = np.ndarray.ndim.__get__(self)
    rec = _REC
    if rec is not None and rec.active and not _busy() and threading.get_ident() == rec.thread:
        if rec._regions and rec.session.symbolic_shapes and rec._sym_tensor_arg(self) is not None:
            rec._guard_ranks()   # ranks follow from the inputs' ranks: guarded once per region
    return v


# Where the recorder and NumPy themselves live: their reads of an array's dtype are their own work
# (the recorder writing a TensorRef, np.pad's implementation), not the program's.
_NOT_THE_PROGRAM = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,
                    os.path.dirname(os.path.abspath(np.__file__)) + os.sep)


def _dtype_get(self):
    v = np.ndarray.dtype.__get__(self)
    rec = _REC
    if rec is not None and rec.active and not _busy() and threading.get_ident() == rec.thread and \
            rec._regions and not rec._dtypes_guarded and \
            not sys._getframe(1).f_code.co_filename.startswith(_NOT_THE_PROGRAM) and \
            rec._sym_tensor_arg(self) is not None:
        rec._guard_dtypes()   # dtypes follow from the inputs' dtypes: guarded once per region
    return v


def _shape_set(self, value):
    np.ndarray.shape.__set__(self, value)   # in-place reshape: not recorded (see Limits)


TracedArray.shape = property(_shape_get, _shape_set)
TracedArray.size = property(_size_get)
TracedArray.ndim = property(_ndim_get)
TracedArray.dtype = property(_dtype_get, np.ndarray.dtype.__set__)


def _len(self):
    v = np.ndarray.__len__(self)
    rec = _REC
    if rec is not None and rec.active and not _busy() and threading.get_ident() == rec.thread:
        rec.shape_read("numpy.ndarray.__len__", self, v)
        if rec._regions and rec.session.symbolic_shapes and rec._sym_tensor_arg(self) is not None:
            rec._guard_ranks()
            return rec._sym_leaf(self, "ivytrace.sym.size", 0, v)
    return v


TracedArray.__len__ = _len


def _iter(self):
    # `for row in x`: NumPy iterates in C, item by item until an IndexError, so the loop was
    # unrolled for the traced length with no guard on it (another length summed the traced
    # number of rows, silently). The length is read as recorded, and range() of it guards it.
    if np.ndarray.__getattribute__(self, "ndim") == 0:
        return np.ndarray.__iter__(self)   # raises NumPy's TypeError
    return (self[i] for i in range(_len(self)))


TracedArray.__iter__ = _iter


def _make_method(mname):
    base = getattr(np.ndarray, mname)

    def method(self, *args, **kwargs):
        out = kwargs.get("out")
        if mname in _WRITING_METHODS:
            out = self
        result = _call(f"numpy.ndarray.{mname}", base, (self,) + args, kwargs, out)
        # A NumPy scalar's methods (s.copy(), s.astype(...)) give scalars: so do its stand-in's.
        if self.__dict__.get("_ivytrace_scalar") and type(result) is TracedArray and result is not self \
                and np.ndarray.ndim.__get__(result) == 0:
            result._ivytrace_scalar = True
        return result
    method.__name__ = mname
    return method


def _make_guard(gname):
    base = getattr(np.ndarray, gname)

    def guard(self, *args):
        result = base(self.view(np.ndarray), *args)
        rec = _REC
        if rec is not None and not _busy() and rec.active:
            rec.guard(f"numpy.ndarray.{gname}", self, result)
        return result
    guard.__name__ = gname
    return guard


for _m in _METHODS:
    setattr(TracedArray, _m, _make_method(_m))
for _g in _GUARDS:
    setattr(TracedArray, _g, _make_guard(_g))


def _list_as_tuple(orig):
    @functools.wraps(orig)
    def wrapper(*args, **kwargs):   # the list is the first parameter (np.lexsort's keys)
        if args and type(args[0]) is list:
            args = (tuple(args[0]),) + args[1:]
        elif type(kwargs.get("keys")) is list:
            kwargs = {**kwargs, "keys": tuple(kwargs["keys"])}
        return orig(*args, **kwargs)
    wrapper.__ivytrace_original__ = orig
    return wrapper


def _unrecorded(orig):
    @functools.wraps(orig)
    def wrapper(*args, **kwargs):
        with _Busy():
            return orig(*args, **kwargs)
    return wrapper


def _call(name, func, args, kwargs, out, record_name=None):
    """Run `func` on plain arrays; record it if a recorder is active and we are not inside
    another recorded call. Results are TracedArrays (the `out=` arrays themselves when given)."""
    rec = _REC
    pargs = _plain(args)
    pkw = _plain(kwargs)
    if rec is None or _busy() or not rec.active or threading.get_ident() != rec.thread:
        with _Busy():
            result = func(*pargs, **pkw)
        return _rewrap(result, args, kwargs, out)
    return rec.record(record_name or name, func, args, kwargs, pargs, pkw, out)


def _rewrap(result, args, kwargs, out):
    if out is not None and result is not None:
        # Give back the caller's own out= arrays (identity matters: `a += 1` rebinds a).
        outs = out if isinstance(out, tuple) else (out,)
        if isinstance(result, tuple) and len(result) == len(outs):
            return tuple(o if o is not None else _traced(r) for o, r in zip(outs, result))
        # (np.shares_memory is False for empty arrays: an empty result of out= is the out array.)
        if isinstance(result, np.ndarray) and outs and outs[0] is not None and result.shape == outs[0].shape and \
                (result.size == 0 or np.shares_memory(result, outs[0])):
            return outs[0]
    return _traced(result)


def _storage_root(a):
    b = a
    while isinstance(b.base, np.ndarray):
        b = b.base
    return b


# An operand entry standing for "a symbolic int was read": never a constant, so the call's
# result is not folded (it depends on a shape).
_SYM_IN = (None, -1, -1, 0)
# `n * a` with n a stand-in: the array's reflected operator records the call with n symbolic.
_sym.DEFER_TYPES.append(TracedArray)


class NumpyRecorder(ArrayRecorder, _sym.SymHost):
    _Busy = _Busy
    _location = staticmethod(_location)
    _framework = "numpy"

    def __init__(self, session):
        super().__init__(session)   # _ids: id(array) -> (weakref, tid, storage id)
        self._by_storage = {}   # storage id -> [weakref of each array on it]
        self._ids_sid = {}      # tid -> storage id
        self._next = 1
        self._versions = {}     # storage id -> version
        self._known = {}        # tid -> version known in the current frame
        self._inputs = {}
        self._input_arrays = []    # (array, tid, sid, version) of the current region's inputs
        self._ranks_guarded = False
        self._dtypes_guarded = False   # the region read an array's dtype: its inputs' dtypes are guarded
        self._const = {}        # tid -> version at which it is a constant
        self._links = {}        # storage id -> [convert._Link]: memory shared with torch tensors
        self._enc = _NumpyEncoder(self._enc_in)
        self._ufunc_fields = {}   # ufunc name -> (op name, OpEvent.op field) for record_ufunc
        self._c_locations = {}    # np_ufunc's cache: address of code -> (code, True if internal, else {lasti: (file id, line)})
        self._enc_out = _NumpyEncoder(self._enc_out_tensor)

    # -- lifecycle -------------------------------------------------------------------------
    def install(self):
        global _REC
        _REC = self
        self.active = True
        _sym.LEN_HOOKS[TracedArray] = self._len_hook
        _sym.hook_len()
        for n in _CREATORS:
            self._patch(np, n, random=False)
        for n in _RANDOM + _SEEDING:
            self._patch(np.random, n, random=True)
        for n in _UNRECORDED:
            orig = getattr(np.random, n, None)
            if orig is not None:
                setattr(np.random, n, _unrecorded(orig))
                self._patched.append((np.random, n, orig))
        for n in _LIST_AS_TUPLE:
            orig = getattr(np, n, None)
            if orig is not None:
                setattr(np, n, _list_as_tuple(orig))
                self._patched.append((np, n, orig))

    def _patch(self, mod, n, random):
        orig = getattr(mod, n, None)
        if orig is None:
            return
        qual = f"numpy.random.{n}" if mod is np.random else f"numpy.{n}"

        @functools.wraps(orig)
        def wrapper(*args, **kwargs):
            rec = _REC
            if rec is None or _busy() or not rec.active or threading.get_ident() != rec.thread:
                return orig(*args, **kwargs)
            if not random and not _user_caller():
                return orig(*args, **kwargs)
            if not random and args and _convert_mod is not None and _convert_mod.is_torch_tensor(args[0]):
                return _convert_mod.numpy_from_torch(rec, qual, orig, args, kwargs)   # np.asarray(t)
            return rec.record(qual, orig, args, kwargs, _plain(args), _plain(kwargs), None)
        wrapper.__ivytrace_original__ = orig
        setattr(mod, n, wrapper)
        self._patched.append((mod, n, orig))

    def uninstall(self):
        global _REC
        if not self.active:
            return
        self.active = False
        self._restore_patches()
        if _sym.LEN_HOOKS.get(TracedArray) == self._len_hook:
            del _sym.LEN_HOOKS[TracedArray]
        _sym.unhook_len()
        if _REC is self:
            _REC = None

    # -- identity and versions ----------------------------------------------------------------
    def _ref(self, a):
        """(tid, sid, version) of an ndarray."""
        r = self._ids.get(id(a))
        if r is None or r[0]() is not a:
            root = _storage_root(a)
            if root is a:
                sid = None
            else:
                sid = self._ref(root)[0]
            tid = self._new_id()
            if sid is None:
                sid = tid
            r = (weakref.ref(a), tid, sid)
            self._ids[id(a)] = r
            self._ids_sid[tid] = sid
            self._by_storage.setdefault(sid, []).append(r[0])
            if len(self._ids) > self._sweep_at:
                self._sweep()
        return r[1], r[2], self._versions.get(r[2], 0)

    def _new_id(self) -> int:
        """A tensor id from the sequence the torch recorder draws from too (a mixed trace's
        references must not collide; see convert.py)."""
        t = self.session.torch
        tid = self._next if t is None else max(self._next, t._next_tid)
        self._next = tid + 1
        if t is not None:
            t._next_tid = tid + 1
        return tid

    def _sweep(self):
        super()._sweep()
        for sid in list(self._by_storage):
            alive = [w for w in self._by_storage[sid] if w() is not None]
            if alive:
                self._by_storage[sid] = alive
            else:
                del self._by_storage[sid]

    def _sharing(self, sid):
        """Live arrays on storage `sid` that the current frame knows (views of a written array)."""
        out = []
        for w in self._by_storage.get(sid, ()):
            a = w()
            if a is not None:
                r = self._ids.get(id(a))
                if r is not None and r[0]() is a and r[1] in self._known:
                    out.append(a)
        return out

    def _tensor_ref(self, a, tid, sid, v, full=True) -> bytes:
        b = _REF_ID + varint(tid) + (_REF_VERSION + varint(v) if v else b"") + _REF_STORAGE + varint(sid)
        if full:
            dt = _DTYPES.get(a.dtype)
            if dt:
                b += _REF_DTYPE + varint(dt)
            shape = _ND_SHAPE(a)   # the ndarray getter, not TracedArray's recording property
            if shape:
                sh = _shapes.get(shape)
                if sh is None:
                    sh = _shapes[shape] = ld(_REF_SHAPE, b"".join(varint(int(d)) for d in shape))
                b += sh
        return b

    def _enc_in(self, a, ins):
        tid, sid, v = self._ref(a)
        if self._links:
            links = self._links.get(sid)
            if links and _convert().before_numpy_read(self, links):
                tid, sid, v = self._ref(a)   # torch wrote the shared memory: re-made at a new version
        ins.append((a, tid, sid, v))
        ref = self._tensor_ref(a, tid, sid, v)
        if self._known.get(tid) != v:
            if sid != tid and any(self._const.get(t2) != v2 for t2, v2 in self._known.items()
                                  if self._ids_sid.get(t2) == sid):
                self._warn_once(("derived", _location(self._intern)),
                                "ivytrace: an array that shares memory with a recorded, non-constant array "
                                "was made by an operation the NumPy recorder does not record; its value is "
                                "recorded as a constant (replays will not follow the inputs)")
            self._write_value(a, ref, CONSTANT)
            self._known[tid] = v
            self._const[tid] = v
        return ld(A_TENSOR, ref)

    def _enc_out_tensor(self, a, outs):
        tid, sid, v = self._ref(a)
        outs.append((a, tid, sid, v))
        return ld(A_TENSOR, self._tensor_ref(a, tid, sid, v))

    def _host_array(self, a):
        return np.ascontiguousarray(a.view(np.ndarray) if isinstance(a, TracedArray) else a)

    # -- recording -------------------------------------------------------------------------------
    def record_ufunc(self, ufunc, inputs):
        """The common call, recorded with fewer steps: a ufunc called on arrays the current frame
        already knows (at least one not a constant) and Python floats/ints, giving one new array.
        Writes what `record` writes (tests/python/test_record_bytes.py); returns _NOT_HERE,
        before calling anything, for every other call, which then goes through `record`."""
        if self._links:
            return _NOT_HERE
        ids = self._ids
        known = self._known
        versions = self._versions
        const = self._const
        args = []
        plain = []
        ins = []
        foldable = True
        for a in inputs:
            t = type(a)
            if t is TracedArray:
                r = ids.get(id(a))
                if r is None or r[0]() is not a:
                    return _NOT_HERE
                tid, sid = r[1], r[2]
                v = versions.get(sid, 0)
                if known.get(tid) != v:
                    return _NOT_HERE
                if foldable and const.get(tid) != v:
                    foldable = False
                e = (a, tid, sid, v)
                ins.append(e)
                args.append(_op.arg_field(ld(A_TENSOR, self._tensor_ref(*e))))
                plain.append(a.view(np.ndarray))
            elif t is float:
                args.append(_ARG_FLOAT + _pack_double(a))
                plain.append(a)
            elif t is int:
                b = enc_int(a)
                args.append(_op.arg_field(b))
                plain.append(a)
            else:
                return _NOT_HERE
        if foldable:
            return _NOT_HERE   # every input a constant: the outputs' values are recorded (record)
        fields = self._ufunc_op(ufunc.__name__)
        if fields is None:
            return _NOT_HERE
        parts = [fields[1], *args]
        state = _state
        prev = getattr(state, "busy", False)
        state.busy = True
        try:
            start = time.perf_counter_ns()
            try:
                result = ufunc(*plain)
            except BaseException:
                self._finish(parts, fields[0], ins, [], None, start, raised=True)
                raise
            if type(result) is not np.ndarray or result.base is not None:
                result = _rewrap(result, inputs, {}, None)
                self._finish(parts, fields[0], ins, [], result, start)
                return result
            traced = result.view(TracedArray)
            # What _ref(traced) does: its storage root (the plain result) gets an id first.
            sid = self._new_id()
            w = weakref.ref(result)
            ids[id(result)] = (w, sid, sid)
            self._ids_sid[sid] = sid
            self._by_storage[sid] = [w]
            if len(ids) > self._sweep_at:
                self._sweep()
            tid = self._new_id()
            w = weakref.ref(traced)
            ids[id(traced)] = (w, tid, sid)
            self._ids_sid[tid] = sid
            self._by_storage.setdefault(sid, []).append(w)   # (a sweep may have made a new list)
            if len(ids) > self._sweep_at:
                self._sweep()
            # The result's TensorRef (version 0: a new storage), as _tensor_ref writes it.
            key = (result.dtype, result.shape)
            tail = _DTYPE_SHAPE.get(key)
            if tail is None:
                tail = self._tensor_ref(result, 0, 0, 0)[len(_REF_ZERO):]
                if len(_DTYPE_SHAPE) < 4096:
                    _DTYPE_SHAPE[key] = tail
            parts.append(_op.result_field(ld(A_TENSOR, _REF_ID + varint(tid) + _REF_STORAGE + varint(sid) + tail)))
            known[tid] = 0
            const.pop(tid, None)
            end = time.perf_counter_ns()
            fid, line = _location(self._intern)
            parts.append(_op.tail(0, fid, line, _get_ident(), start - self._t0, end - start))
            self.w.add(_TAG_OP, b"".join(parts), op=True)
            self.w.emit()
            return traced
        finally:
            state.busy = prev

    def _ufunc_op(self, name):
        """(op name, OpEvent.op field) of ufunc `name`, None if the schema says it is random."""
        fields = self._ufunc_fields.get(name, 0)
        if fields == 0:
            qual = f"numpy.{name}"
            fields = None if self._schemas.is_random(qual) else (qual, _op.op_field(self._intern(qual)))
            self._ufunc_fields[name] = fields
        return fields

    def _add_op(self, tag, payload):
        """The C path's OpEvent (np_ufunc): queued and written like record_ufunc's."""
        self.w.add(tag, payload, op=True)
        self.w.emit()

    def record(self, name, func, args, kwargs, pargs, pkw, out):
        ins = []
        parts = [_op.op_field(self._intern(name))]
        with _Busy():
            for a in args:
                parts.append(_op.arg_field(self._enc.encode(a, ins)))
            for k, a in kwargs.items():
                parts.append(_op.kwarg_field(k, self._enc.encode(a, ins)))
            written = self._written(name, args, kwargs, out)
            start = time.perf_counter_ns()
            try:
                result = func(*pargs, **pkw)
            except BaseException:
                self._finish(parts, name, ins, written, None, start, raised=True)
                raise
            result = _rewrap(result, args, kwargs, out)
            self._finish(parts, name, ins, written, result, start)
        return result

    def _written(self, name, args, kwargs, out):
        """The arrays this call writes (out=, in-place methods)."""
        ws = []
        i = _WRITING_FUNCTIONS.get(name)
        if i is None and name.endswith(".at"):   # ufunc.at(a, indices, b): writes a in place
            i = 0
        if i is not None and len(args) > i and isinstance(args[i], np.ndarray):
            ws.append(args[i])
        if out is not None:
            for o in (out if isinstance(out, tuple) else (out,)):
                if isinstance(o, np.ndarray):
                    ws.append(o)
        return ws

    def _finish(self, parts, name, ins, written, result, start, raised=False):
        # Writes: bump the storage versions first, so the result is seen at its new version.
        # Every known array on a written storage (the written array and its views) is listed as
        # mutated at the new version, so later reads of any of them resolve to this op.
        mutated = []
        sids = []
        for a in written:
            tid, sid, v = self._ref(a)
            if sid not in sids:
                sids.append(sid)
                self._versions[sid] = v + 1
        seen = set()
        for sid in sids:
            for a in [x for x in written if self._ref(x)[1] == sid] + self._sharing(sid):
                tid, sid2, v = self._ref(a)
                if tid not in seen:
                    seen.add(tid)
                    mutated.append((a, tid, sid2, v))
        self._finish_op(parts, name, ins, result, start, raised, mutated)
        if self._links and sids and not raised:
            _convert().after_numpy_write(self, sids)

    def _is_const(self, entry):
        return self._const.get(entry[1]) == entry[3]

    def _set_known(self, entry, const):
        self._known[entry[1]] = entry[3]
        if const:
            self._const[entry[1]] = entry[3]
        else:
            self._const.pop(entry[1], None)

    # -- regions ----------------------------------------------------------------------------------
    def wrap(self, v):
        """Region inputs: plain ndarrays -> TracedArray views (recursively)."""
        if type(v) is np.ndarray:
            return v.view(TracedArray)
        t = type(v)
        if t is tuple or t is list:
            return t(self.wrap(x) for x in v)
        if t is dict:
            return {k: self.wrap(x) for k, x in v.items()}
        return v

    # Frames of known arrays: tid -> version (convert.py pushes and pops them too).
    def _enter_frame(self):
        self._frames.append((self._known, self._inputs, self._input_arrays, self._ranks_guarded, self._dtypes_guarded))
        self._known, self._inputs, self._input_arrays, self._ranks_guarded, self._dtypes_guarded = {}, {}, [], False, False

    def _leave_frame(self):
        inner, inputs = self._known, self._inputs
        self._known, self._inputs, self._input_arrays, self._ranks_guarded, self._dtypes_guarded = self._frames.pop()
        for tid, v in inner.items():
            if inputs.get(tid) != v:
                self._known[tid] = v

    def _region_input(self, entry):
        a, tid, sid, v = entry
        self._known[tid] = v
        self._inputs[tid] = v
        self._input_arrays.append(entry)
        self._const.pop(tid, None)

    # -- symbolic shapes (recorder/sym.py) ------------------------------------------------------
    def _sym_frame(self):
        if self._regions and self.active and threading.get_ident() == self.thread:
            return self._known
        return None

    def _sym_tensor_arg(self, a):
        tid, sid, v = self._ref(a)
        if self._known.get(tid) != v or self._const.get(tid) == v:
            return None
        return ld(A_TENSOR, self._tensor_ref(a, tid, sid, v, full=False))

    def _sym_location(self):
        return _location(self._intern)

    def _sym_region(self):
        return self._regions[-1] if self._regions else 0

    def _sym_new_id(self) -> int:
        return self._new_id()

    def _guard_ranks(self):
        """See TorchRecorder._guard_ranks: once per region, a guard on each input's rank."""
        if self._ranks_guarded:
            return
        self._ranks_guarded = True
        self._guard_inputs("numpy.ndarray.ndim", lambda a: common_pb2.Arg(i=np.ndarray.ndim.__get__(a)))

    def _guard_dtypes(self):
        """An array's dtype was read (`np.zeros(n, dtype=x.dtype)`): once per region, a guard on
        each input's dtype, from which every computed array's dtype follows."""
        if self._dtypes_guarded:
            return
        self._dtypes_guarded = True
        self._guard_inputs("numpy.ndarray.dtype",
                           lambda a: common_pb2.Arg(dtype=_DTYPES.get(np.ndarray.dtype.__get__(a), 0)))

    def _guard_inputs(self, op_name, value_of):
        """A GuardEvent `op_name` on each of the region's input arrays, of value `value_of(array)`."""
        fid, line = _location(self._intern)
        op = self._intern(op_name)
        rid = self._regions[-1] if self._regions else 0
        for a, tid, sid, v in self._input_arrays:
            ref = common_pb2.TensorRef(id=tid, version=v, storage=sid)
            g = trace_pb2.GuardEvent(tensor=ref, op=op, value=value_of(a), file=fid, line=line, region=rid)
            self.w.emit(TAG_GUARD, g.SerializeToString())

    def _len_hook(self, a):
        return _len(a)

    def _is_known(self, entry) -> bool:
        return self._known.get(entry[1]) == entry[3]

    def _learn(self, entry):
        self._known[entry[1]] = entry[3]


def _user_caller() -> bool:
    """Whether the function was called from outside numpy and ivytrace (user code)."""
    f = sys._getframe(2)
    fn = f.f_code.co_filename
    return not fn.startswith(_INTERNAL_DIRS)


def _enc_dtype(v, ts):
    try:
        dt = np.dtype(v)
    except TypeError:
        return ld(A_SYMBOL, str(v).encode())
    return ld(A_SYMBOL, f"numpy.{dt.name}".encode())


def _sym_operand(v, ts):
    b = v.arg()
    if b[:1] == A_TENSOR:
        ts.append(_SYM_IN)
    return b


class _NumpyEncoder(ArgEncoder):
    def __init__(self, handler):
        super().__init__()
        self.table[np.ndarray] = handler
        self.table[TracedArray] = handler
        for c in _sym.SYM_CLASSES:
            self.table[c] = _sym_operand
        self.subclass_handlers.append((np.ndarray, handler))
        for dt in _DTYPES:
            self.table[type(dt)] = _enc_dtype
            self.table[dt.type] = lambda v, ts: self.encode(v.item(), ts)
        self.table[type] = lambda v, ts: (_enc_dtype(v, ts) if issubclass(v, np.generic) or v in (float, int, bool)
                                          else ld(A_SYMBOL, str(v).encode()))


_convert_mod = None   # convert.py, once torch is recorded too (it imports torch)


def _convert():
    global _convert_mod
    if _convert_mod is None:
        from ivytrace.recorder import convert
        _convert_mod = convert
    return _convert_mod


def recorder_for(session) -> NumpyRecorder:
    return NumpyRecorder(session)


# The common ufunc call in C when ivytrace._speedups is built (np_ufunc writes what record_ufunc
# writes), else in Python.
try:
    if os.environ.get("IVYTRACE_NO_SPEEDUPS") == "1":
        raise ImportError
    from ivytrace import _speedups
    from ivytrace.recorder.tags import c_tags as _c_tags
    _speedups.set_tags(_c_tags(), INPLACE)
    _speedups.np_setup(TracedArray, np.ndarray, _NOT_HERE, _state, _DTYPE_SHAPE, _ND_SHAPE,
                       _INTERNAL_DIRS + ("<__array_function__",), _rewrap)   # the prefixes of _location
    _np_ufunc = _speedups.np_ufunc
    # __array_ufunc__ itself in C: the common call then runs no Python frame at all (the Python
    # method above stays the definition, and the pure-Python path's)
    _speedups.np_setup_call(globals(), _array_ufunc_rest)
    TracedArray.__array_ufunc__ = _speedups.np_array_ufunc_method
except ImportError:
    def _np_ufunc(rec, ufunc, inputs):
        if rec.active and not _busy() and rec.thread == _get_ident():
            return rec.record_ufunc(ufunc, inputs)
        return _NOT_HERE
