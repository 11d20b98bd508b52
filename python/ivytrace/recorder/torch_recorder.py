"""The PyTorch recorder: a TorchFunctionMode that writes one OpEvent per torch call.

Inside `__torch_function__` torch pops the mode, so calls made by the called function are not
recorded again (F.relu is recorded once, not also torch.relu). Torch function modes are
thread-local: the thread that installs the recorder is the one recorded.

Tensor identity: every tensor gets an id on first sight (a dict id(tensor) -> (weakref, id, ...);
a lookup measured ~115 ns against ~1.5 us for torch.utils.weak.WeakIdKeyDictionary, and unlike an
attribute on the tensor it does not leak into deepcopies or torch.save files), `version =
t._version` and `storage` = the id of the root base tensor (views share their base's storage id
and, in PyTorch, its version counter).

Values the graph needs (DESIGN.md, "Values are recorded where the graph needs them"): within each
region, and outside all regions, every tensor (id, version) an op reads is either a region input,
produced by an earlier recorded op (directly, or by an in-place write to its storage), or has a
TensorData record written just before the op that first reads it: role PARAMETER / BUFFER with
its qualified name for module state, else CONSTANT.

The OpEvent and everything in it are encoded by hand (see encode.py): a upb message object costs
about a microsecond to build, several per call; hand encoding cut the overhead per small op by
about half. When ivytrace._speedups is built, TorchRecorder's `__torch_function__` is its C
version of `handle`, which records the common call itself and continues in the methods below for
the rest (tests/python/test_speedups.py checks that both write the same records).
"""
from __future__ import annotations

from builtins import len  # the builtin itself: while recording, builtins.len is sym._len (one Python call more)

import operator
import os
import sys
import threading
import time
import warnings
import weakref

import torch
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from torch.overrides import TorchFunctionMode

from ivytrace.recorder import names as _names
from ivytrace.recorder.encode import (A_DEVICE, A_DTYPE, A_SYMBOL, A_TENSOR, ArgEncoder, V,
                                      _int_cache, enc_int, ld, varint)
from ivytrace.recorder import opevent as _op
from ivytrace.recorder import sym as _sym
from ivytrace.recorder.regions import RegionFraming
from ivytrace.recorder.tags import OP, REF, TDATA, TENSOR, tags_of
from ivytrace.recorder.writer import TAG_GUARD, TAG_SHAPE_READ, TAG_TENSOR
from ivytrace.v1 import common_pb2, trace_pb2

try:
    if os.environ.get("IVYTRACE_NO_SPEEDUPS") == "1":   # force the pure-Python path (tests, bench)
        raise ImportError
    from ivytrace import _speedups
except ImportError:
    _speedups = None

CHUNK_BYTES = 64 << 20      # TensorData values above this are split over several records
FOLD_LIMIT = 16 << 20       # foldable outputs above this are not recorded (and not flagged)
GUARD_VALUE_LIMIT = 65536   # tolist()/numpy() guards on larger tensors keep no value

INPLACE = trace_pb2.INPLACE
RANDOM = trace_pb2.RANDOM
FOLDABLE_OP = trace_pb2.FOLDABLE_OP
RAISED = trace_pb2.RAISED
SHAPE_FOLDABLE = trace_pb2.SHAPE_FOLDABLE

CONSTANT = common_pb2.CONSTANT
PARAMETER = common_pb2.PARAMETER
BUFFER = common_pb2.BUFFER
REGION_INPUT = common_pb2.REGION_INPUT
REGION_OUTPUT = common_pb2.REGION_OUTPUT
RANDOM_OUTPUT = common_pb2.RANDOM_OUTPUT
FOLDABLE = common_pb2.FOLDABLE
OBSERVED = common_pb2.OBSERVED

_DTYPE_NAMES = {
    "float32": common_pb2.FLOAT32, "float64": common_pb2.FLOAT64, "float16": common_pb2.FLOAT16,
    "bfloat16": common_pb2.BFLOAT16, "int8": common_pb2.INT8, "int16": common_pb2.INT16,
    "int32": common_pb2.INT32, "int64": common_pb2.INT64, "uint8": common_pb2.UINT8,
    "bool": common_pb2.BOOL, "complex64": common_pb2.COMPLEX64, "complex128": common_pb2.COMPLEX128,
    "uint16": common_pb2.UINT16, "uint32": common_pb2.UINT32, "uint64": common_pb2.UINT64,
}
DTYPES = {getattr(torch, n): v for n, v in _DTYPE_NAMES.items() if hasattr(torch, n)}
_DTYPE_FIELD = {dt: REF.DTYPE + V[e] for dt, e in DTYPES.items()}
_DTYPE_ARG = {dt: A_DTYPE + V[e] for dt, e in DTYPES.items()}     # Arg.dtype = 7

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_IVYTRACE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_Tensor = torch.Tensor
_weakref = weakref.ref
_getframe = sys._getframe
_SKIP = _names.SKIP
_SHAPE = _names.SHAPE
_CONVERT = _names.CONVERT
_DTYPE = _names.DTYPE
_DESCEND = _names.DESCEND
_SMALL = len(V)
_VERSION = [b""] + [REF.VERSION + V[n] for n in range(1, _SMALL)]
_shapes: dict = {}
# Ops whose result aliases their first argument's memory and version counter without being a
# view (`_base` is None): recorded with the argument's storage id.
_ALIAS_OPS = frozenset({"torch.Tensor.detach", "torch.detach"})
# OpEvent.args / OpEvent.result headers around an Arg{tensor} whose TensorRef is k bytes.
_ARG_TENSOR = [OP.ARGS + V[k + 2] + A_TENSOR + V[k] for k in range(120)]
_RESULT_TENSOR = [OP.RESULT + V[k + 2] + A_TENSOR + V[k] for k in range(120)]
_SR = tags_of(trace_pb2.ShapeRead)
_REF_ID, _REF_VERSION, _REF_STORAGE, _REF_SHAPE = REF.ID, REF.VERSION, REF.STORAGE, REF.SHAPE
_OP_ARGS, _OP_RESULT, _OP_FLAGS, _OP_FILE, _OP_LINE = OP.ARGS, OP.RESULT, OP.FLAGS, OP.FILE, OP.LINE
_OP_SCOPE, _OP_THREAD, _OP_START, _OP_DURATION = OP.SCOPE, OP.THREAD, OP.START_NS, OP.DURATION_NS


def _version_field(v: int) -> bytes:
    return _VERSION[v] if v < _SMALL else _REF_VERSION + varint(v)


def _shape_field(shape) -> bytes:
    """TensorRef.shape = 5 (packed); cached per shape."""
    b = _shapes.get(shape)
    if b is None:
        b = ld(_REF_SHAPE, b"".join(varint(int(d)) for d in shape)) if len(shape) else b""
        if len(_shapes) < 100000:
            _shapes[shape] = b
    return b


class SpecializationWarning(UserWarning):
    """The traced graph depends on a tensor value seen while tracing (a guard)."""


class _Frame:
    """What a region (or the top level) knows: tensor id -> version defined in it, storage id ->
    version last written by a recorded op in it, and its region inputs (id -> version)."""
    __slots__ = ("known", "written", "inputs", "input_refs", "ranks_guarded", "dtypes_guarded")

    def __init__(self):
        self.known = {}
        self.written = {}
        self.inputs = {}
        self.input_refs = []         # (tensor, ids entry, version) of each region input
        self.ranks_guarded = False   # the region read a shape: its inputs' ranks are guarded
        self.dtypes_guarded = False  # the region read a dtype: its inputs' dtypes are guarded


def is_internal_file(filename: str) -> bool:
    return filename.startswith(_TORCH_DIR) or filename.startswith(_IVYTRACE_DIR)


class TorchSymSize(tuple):
    """`x.shape` / `x.size()` inside a region: a torch.Size of symbolic ints (recorder/sym.py).
    isinstance(s, torch.Size) holds; slicing and concatenation keep the stand-ins."""
    __slots__ = ()

    @property
    def __class__(self):
        return torch.Size

    def __getitem__(self, i):
        r = tuple.__getitem__(self, i)
        return TorchSymSize(r) if type(i) is slice else r

    def __add__(self, o):
        return TorchSymSize(tuple(self) + tuple(o)) if isinstance(o, tuple) else NotImplemented

    def __radd__(self, o):
        return TorchSymSize(tuple(o) + tuple(self)) if isinstance(o, tuple) else NotImplemented

    def numel(self):
        n = 1
        for d in self:
            n = n * d
        return n

    def __repr__(self):
        return f"torch.Size({list(self)!r})"

    def __reduce__(self):
        return (torch.Size, (list(_sym.unwrap(self)),))


class _DescendAgain(Exception):
    """A DESCEND function's body dispatched to the recorder again (it checks for torch functions
    in a way `names.unchecked_body` does not replace): it is recorded as one call instead."""

    def __init__(self, func):
        super().__init__(func)
        self.func = func


class _SymNodeView:
    """What torch's own checks read as `s.node` of a torch.SymInt/SymBool/SymFloat: torch._check
    and torch._check_with (`expect_true(cond)` -> `cond.node.expect_true(file, line)`), guard_bool,
    guard_int, guard_or_false, statically_known_true, ... (torch/fx/experimental/symbolic_shapes.py).
    A check that reads the value records the guard its Python value does (bool(s), int(s)); there
    is no shape environment, so nothing is statically known (statically_known_true is False, the
    general path) and `_guard_or` falls back to guard_bool. torch.nn.functional's
    `_check_key_padding_mask` (nn.TransformerEncoderLayer with a padding mask) runs through it."""
    __slots__ = ("_s",)
    shape_env = None
    expr = None
    _hint = None

    def __init__(self, s):
        self._s = s

    def expect_true(self, file="", line=0):
        return bool(self._s)

    def guard_bool(self, file="", line=0):
        return bool(self._s)

    def guard_size_oblivious(self, file="", line=0):
        return bool(self._s)

    def guard_int(self, file="", line=0):
        return int(self._s)

    def guard_float(self, file="", line=0):
        return float(self._s)

    def has_hint(self):
        return True

    def is_symbolic(self):
        return True

    def is_nested_int(self):
        return False

    def maybe_as_int(self):
        return None

    def maybe_as_float(self):
        return None

    def maybe_as_bool(self):
        return None


class TorchSymInt(_sym.SymInt, torch.SymInt):
    """A symbolic int torch's argument parser takes where it takes an int or a number (as it
    takes torch.SymInt): the recorder sees the call first and makes it with the plain value."""
    __slots__ = ()

    @property
    def node(self):   # torch's checks (torch._check, guard_bool, ...): see _SymNodeView
        return _SymNodeView(self)

    def __sym_max__(self, o):
        return _sym._make(o, "ivytrace.sym.max", max, self, o)

    def __sym_min__(self, o):
        return _sym._make(o, "ivytrace.sym.min", min, self, o)

    def __sym_float__(self):
        return float(self)


class TorchSymBool(_sym.SymBool, torch.SymBool):
    __slots__ = ()

    @property
    def node(self):   # torch's checks (torch._check, guard_bool, ...): see _SymNodeView
        return _SymNodeView(self)

    def __sym_not__(self):   # torch.sym_not(b)
        return _sym.not_(self)


class TorchSymFloat(_sym.SymFloat, torch.SymFloat):
    """A float argument of a traced function, which torch's argument parser takes where it takes
    a float or a number (as it takes torch.SymFloat)."""
    __slots__ = ()

    @property
    def node(self):   # torch's checks (torch._check, guard_bool, ...): see _SymNodeView
        return _SymNodeView(self)

    def __sym_max__(self, o):
        return _sym._make(o, "ivytrace.sym.max", max, self, o, _sym.SymFloat)

    def __sym_min__(self, o):
        return _sym._make(o, "ivytrace.sym.min", min, self, o, _sym.SymFloat)

    def __sym_float__(self):
        return self

    def __sym_int__(self):
        return int(self)


_sym.SYM_CLASSES.update((TorchSymInt, TorchSymBool, TorchSymFloat))
_sym._UNWRAP_TYPES[TorchSymSize] = lambda v: torch.Size([_sym.unwrap(x) for x in v])
_sym.DEFER_TYPES.append(torch.Tensor)
# An argument entry standing for "a symbolic int read": no tensor, never a constant, never
# written, so a call that reads one is not foldable (its result depends on a shape).
_SYM_REF = (None, -1, -1, b"", b"")
_SYM_IN = (_sym.SymInt(0, None, None), _SYM_REF, 0)


def _plain_len(func, args, kwargs):
    with torch._C.DisableTorchFunction():
        return _sym._builtin_len(args[0])


class _PyTorchRecorder(TorchFunctionMode, _sym.SymHost, RegionFraming):
    """The recorder is itself the mode: `__torch_function__` is `handle`, with no extra call.
    (The pure-Python recorder; TorchRecorder below adds the C fast path when it is built.)"""

    SymIntType = TorchSymInt
    SymBoolType = TorchSymBool
    SymFloatType = TorchSymFloat

    def __init__(self, session):
        super().__init__()
        self.session = session
        self.w = session.writer
        self._intern = session.writer.intern
        self._t0 = session.t0
        self._schemas = session.schemas
        self._info = {}            # id(func) -> (kind, op field bytes, random, name, func)
        self._prop_info = {}       # id(getset_descriptor) -> same, for property reads
        self._bodies = {}          # DESCEND function -> its body without the torch-function check
        self._descending = set()   # DESCEND functions whose body is running
        self._ids = self._new_id_table()   # id(tensor) -> (weakref, tid, sid, id field, storage field)
        self._sweep_at = 4096
        self._next_tid = 1
        self._frame = _Frame()
        self._frames = []          # enclosing frames of open regions
        self._const = {}           # tensor id -> version at which its value is a constant
        self._values = {}          # tensor id -> (version, role, name) of its value written last
        self._params = {}          # id(tensor) -> (weakref, name, role)
        self._roots = {}           # id(module) -> (weakref, {id(submodule): qualified name})
        self._scopes = {}          # thread ident -> [(module, names, scope id, scope name, scope field)]
        self._internal_code = {}   # code object -> 0 if inside torch/ivytrace, else {f_lasti: file+line fields}
        self._files = {}           # filename -> OpEvent.file field bytes
        self._lines = [b""] + [_OP_LINE + V[n] for n in range(1, _SMALL)]
        self._threads = {}         # thread ident -> OpEvent.thread field bytes
        self._warned = set()
        self._regions = []         # open region ids
        self._next_region = 1
        self._hooks = []
        self._active = False
        self._thread = threading.get_ident()
        self._get_ident = threading.get_ident
        self._clock = time.perf_counter_ns
        self._sym_seen = 0         # an argument of the call being recorded was a symbolic int
        self._call_syms = None     # its symbolic ints (_unwrap_call), for _guard_number_result
        self._in = _TorchEncoder(self._in_tensor, self._note_sym)
        self._out = _TorchEncoder(self._out_tensor)
        self._ref = _TorchEncoder(self._out_tensor)

    # -- lifecycle -------------------------------------------------------------------------
    def install(self):
        self._hooks.append(register_module_forward_pre_hook(self._pre_hook))
        self._hooks.append(register_module_forward_hook(self._post_hook, always_call=True))
        self._active = True
        self._len_prev = {c: _sym.LEN_HOOKS.get(c) for c in (_Tensor, torch.nn.Parameter)}
        for c in self._len_prev:
            _sym.LEN_HOOKS[c] = self._len_hook
        _sym.hook_len()
        self._patches = []
        self._patch_seeding()
        self._patch_bool_params()
        self.__enter__()

    # torch.manual_seed does not reach __torch_function__ (it takes no tensor): while recording it
    # is wrapped, and a call from the recorded thread outside a recorded call is recorded as an
    # op with a side effect (schemas/torch.textproto), so the replay seeds before its draws.
    _SEEDING_OWNERS = (("torch", "manual_seed"), ("torch.random", "manual_seed"))

    def _patch(self, owners, make):
        """Replace each (module name, attribute) in `owners` by make(original) while recording
        (an original, never a wrapper left by an earlier recorder); undone by _unpatch."""
        for owner_name, attr in owners:
            owner = sys.modules.get(owner_name)
            orig = getattr(owner, attr, None) if owner is not None else None
            if orig is None:
                continue
            orig = getattr(orig, "__ivytrace_original__", orig)
            wrapper = make(orig)
            wrapper.__ivytrace_original__ = orig
            wrapper.__name__ = orig.__name__
            wrapper.__doc__ = orig.__doc__
            self._patches.append((owner, attr, getattr(owner, attr)))
            setattr(owner, attr, wrapper)

    def _unpatch(self):
        for owner, attr, prev in reversed(getattr(self, "_patches", [])):
            setattr(owner, attr, prev)
        self._patches = []

    def _patch_seeding(self):
        rec_ref = _weakref(self)

        def make(_orig):
            def manual_seed(seed):
                rec = rec_ref()
                if rec is None or not rec._records_seeding():
                    return _orig(seed)
                # Recorded under its public name whatever wraps it (torch._dynamo replaces
                # torch.manual_seed by a wrapper whose own name is torch.random.manual_seed).
                info = rec._info.get(id(_orig))
                if info is None or info[4] is not _orig:
                    rec._info[id(_orig)] = rec._make_info(_names.OP, "torch.manual_seed", _orig)
                made = []

                def invoke(func, args, kwargs):
                    made.append(func(*args, **(kwargs or {})))
                    return None   # the Generator itself is not a value of the graph
                _PyTorchRecorder.handle(rec, _orig, (), (seed,), {}, invoke)
                return made[0]
            return manual_seed
        self._patch(self._SEEDING_OWNERS, make)

    # torch's C argument parser refuses a symbolic bool for a `bool` parameter before
    # __torch_function__ runs, so the recorder never sees the call. transformers' SDPA attention
    # passes `is_causal = q_len > 1 and mask is None and ...`, which is the symbolic `q_len > 1`
    # itself when it is False (a decoding step of one token). While recording, these builtins
    # are wrapped: a symbolic bool argument is read as a plain bool (a guard on its value, so a
    # replay where it differs traces again), and the call then reaches the recorder as usual.
    _BOOL_PARAM_BUILTINS = (("torch.nn.functional", "scaled_dot_product_attention"),)

    def _patch_bool_params(self):
        def make(_orig):
            def with_plain_bools(*args, **kwargs):
                if any(isinstance(a, _sym.SymBool) for a in args) or \
                        any(isinstance(v, _sym.SymBool) for v in kwargs.values()):
                    args = tuple(bool(a) if isinstance(a, _sym.SymBool) else a for a in args)
                    kwargs = {k: bool(v) if isinstance(v, _sym.SymBool) else v for k, v in kwargs.items()}
                return _orig(*args, **kwargs)
            return with_plain_bools
        self._patch(self._BOOL_PARAM_BUILTINS, make)

    def _records_seeding(self) -> bool:
        """Whether a seeding call now is the program's own: recording, on the recorded thread,
        and not made from inside a recorded call (torch pops the mode while the call runs)."""
        if not self._active or threading.get_ident() != self._thread:
            return False
        try:
            n = torch._C._len_torch_function_stack()
            return any(torch._C._get_function_stack_at(i) is self for i in range(n))
        except Exception:
            return False

    def uninstall(self):
        if not self._active:
            return
        self._active = False
        self._unpatch()
        for h in self._hooks:
            h.remove()
        self._hooks.clear()
        for c, prev in getattr(self, "_len_prev", {}).items():
            if _sym.LEN_HOOKS.get(c) == self._len_hook:
                if prev is None:
                    _sym.LEN_HOOKS.pop(c, None)
                else:
                    _sym.LEN_HOOKS[c] = prev
        _sym.unhook_len()
        # Pop our mode only if it is on top (a program that left its own mode pushed keeps it;
        # ours then passes calls through because _active is False).
        try:
            n = torch._C._len_torch_function_stack()
            if n and torch._C._get_function_stack_at(n - 1) is self:
                self.__exit__(None, None, None)
        except Exception:
            pass

    # -- tensor identity -------------------------------------------------------------------
    # self._ids: id(tensor) -> (weakref, tensor id, storage id, TensorRef.id field, .storage field).
    # An entry is valid while its weakref still points at the tensor with that id(); entries of
    # dead tensors are swept when the table has doubled since the last sweep.

    _new_id_table = dict

    def _ref_of(self, t):
        ids = self._ids
        r = ids.get(id(t))
        if r is not None and r[0]() is t:
            return r
        tid = self._next_tid
        self._next_tid = tid + 1
        b = t._base
        sid = tid if b is None else self._ref_of(b)[1]
        r = (_weakref(t), tid, sid, _REF_ID + varint(tid), _REF_STORAGE + varint(sid))
        ids[id(t)] = r
        if len(ids) > self._sweep_at:
            self._sweep()
        return r

    def _alias_ref(self, t, args):
        """A new tensor that shares memory and the version counter with args[0] but has no
        `_base` (x.detach()): it gets args[0]'s storage id, so a write through it is a write to
        that storage, not a silent change of a tensor the recorder would take for a constant."""
        src = args[0] if args else None
        if not isinstance(src, _Tensor) or t._base is not None or t._version != src._version:
            return self._ref_of(t)
        sid = self._ref_of(src)[2]
        tid = self._next_tid
        self._next_tid = tid + 1
        r = (_weakref(t), tid, sid, _REF_ID + varint(tid), _REF_STORAGE + varint(sid))
        self._ids[id(t)] = r
        return r

    def _sweep(self):
        ids = self._ids
        for k in [k for k, r in ids.items() if r[0]() is None]:
            del ids[k]
        self._sweep_at = max(2 * len(ids), 4096)

    @staticmethod
    def _full_ref(t, r, v) -> bytes:
        """TensorRef bytes with dtype and shape."""
        return r[3] + _version_field(v) + r[4] + _DTYPE_FIELD.get(t.dtype, b"") + _shape_field(t.shape)

    # -- encoders' tensor handlers ----------------------------------------------------------
    def _in_tensor(self, t, ins):
        """An op input: its value is written first if the current frame does not know it."""
        r = self._ids.get(id(t))
        if r is None or r[0]() is not t:
            r = self._ref_of(t)
        v = t._version
        ins.append((t, r, v))
        fr = self._frame
        if fr.known.get(r[1]) != v:
            if fr.written.get(r[2]) != v:
                ref = self._full_ref(t, r, v)
                self._define_external(t, r, v, ref)
                return ld(A_TENSOR, ref)
            fr.known[r[1]] = v
        ref = r[3] + _version_field(v) + r[4]
        return A_TENSOR + V[len(ref)] + ref

    def _out_tensor(self, t, outs):
        r = self._ids.get(id(t))
        if r is None or r[0]() is not t:
            r = self._ref_of(t)
        v = t._version
        outs.append((t, r, v))
        return ld(A_TENSOR, self._full_ref(t, r, v))

    def _define_external(self, t, r, v, ref):
        """First read, in this frame, of a value no recorded op made: write its value, unless
        this session already wrote it (same tensor id, version, role and name).

        Graph builders keep every value of the trace by (id, version), so a parameter read by
        every call of a region is written once, not once per call (it was 54 value records per
        forward of the sample CNN, ~9% of its time). The value of an (id, version) is taken to
        be fixed, as everywhere in the trace: a write that bypasses the version counter (through
        `.data`, or through the memory of `t.numpy()`) is not seen.
        """
        p = self._params.get(id(t))
        if p is not None and p[0]() is t:
            key = (v, p[2], p[1])
        else:
            key = (v, CONSTANT, "")
        if self._values.get(r[1]) != key:
            self._values[r[1]] = key
            self._write_value(t, ref, key[1], key[2])
        self._frame.known[r[1]] = v
        self._const[r[1]] = v

    def _write_value(self, t, ref: bytes, role: int, name: str = "") -> int:
        """Queue TensorData record(s) with the value of `t`; returns its size in bytes."""
        with torch._C.DisableTorchFunction():
            try:
                d = t.detach()
                if d.device.type != "cpu":
                    d = d.cpu()
                if d.is_conj():
                    d = d.resolve_conj()
                if d.is_neg():
                    d = d.resolve_neg()
                flat = d.contiguous().reshape(-1)
                if flat.numel() and flat.stride(0) != 1:
                    # One element with a stride of its own (x[:, -1] of a (1, n) tensor): torch
                    # calls it contiguous, but a view as bytes needs stride 1.
                    flat = flat.clone(memory_format=torch.contiguous_format)
                arr = flat.view(torch.uint8).numpy()
                dtype = DTYPES.get(t.dtype, 0)
                shape = tuple(t.shape)
            except Exception as e:  # sparse, quantized, meta...: no dense value to record
                self._warn_once(("value", type(e).__name__, str(t.layout)),
                                f"ivytrace: cannot record the value of a {t.layout} {t.dtype} tensor: {e}")
                return 0
        total = arr.nbytes
        mv = memoryview(arr)
        # TensorData{ref, value = Tensor{dtype, shape, data, name, role}, offset, total_bytes}
        head = (TENSOR.DTYPE + varint(dtype) if dtype else b"") + (
            ld(TENSOR.SHAPE, b"".join(varint(d) for d in shape)) if shape else b"")
        tail = (ld(TENSOR.NAME, name.encode()) if name else b"") + TENSOR.ROLE + varint(role)
        ref_field = ld(TDATA.REF, ref)
        total_field = TDATA.TOTAL_BYTES + varint(total)
        add = self.w.add_parts
        at_once = getattr(self.w, "writes_at_once", False)
        for off in range(0, max(total, 1), CHUNK_BYTES):
            # A copy, not a view of the tensor's memory: the record may be written after the call
            # (the op's own record goes first, and buffered writers hold records longer), and an
            # in-place write in between would change the value recorded for this version.
            # (A writer that writes at once copies the bytes into the file before returning.)
            chunk = mv[off:off + CHUNK_BYTES]
            if not at_once:
                chunk = chunk.tobytes()
            n = len(chunk)
            data_tag = TENSOR.DATA + varint(n)
            tensor_len = len(head) + len(data_tag) + n + len(tail)
            parts = [ref_field, TDATA.VALUE, varint(tensor_len), head, data_tag, chunk, tail,
                     (TDATA.OFFSET + varint(off) if off else b""), total_field]
            add(TAG_TENSOR, parts, tensor_bytes=n)
            if total > CHUNK_BYTES:
                self.w.emit()   # bounded memory: do not queue several 64 MiB chunks
        return total

    # -- where the call came from ------------------------------------------------------------
    def _file_line(self, f) -> bytes:
        """OpEvent file (7) and line (8) fields of the first frame outside torch and ivytrace,
        from frame `f` (the caller of the recorded function) outwards.

        Cached per (code object, instruction offset): computing f_lineno scans the code's line
        table, which costs microseconds in long functions and modules.
        """
        internal = self._internal_code
        while f is not None:
            c = f.f_code
            lines = internal.get(c)
            if lines is None:
                lines = internal[c] = 0 if is_internal_file(c.co_filename) else {}
            if lines != 0:
                b = lines.get(f.f_lasti)
                if b is None:
                    fb = self._files.get(c.co_filename)
                    if fb is None:
                        fb = self._files[c.co_filename] = _OP_FILE + varint(self._intern(c.co_filename))
                    n = f.f_lineno or 0
                    b = lines[f.f_lasti] = fb + (self._lines[n] if n < _SMALL else _OP_LINE + varint(n))
                return b
            f = f.f_back
        return b""

    def _location(self):
        """(file id, line) of the first frame outside torch and ivytrace (for rarer records)."""
        f = sys._getframe(1)
        internal = self._internal_code
        while f is not None:
            c = f.f_code
            lines = internal.get(c)
            if lines is None:
                lines = internal[c] = 0 if is_internal_file(c.co_filename) else {}
            if lines != 0:
                return self._intern(c.co_filename), f.f_lineno or 0
            f = f.f_back
        return 0, 0

    def _scope_thread(self) -> bytes:
        """OpEvent scope (9) and thread (10) fields."""
        ident = self._get_ident()
        tb = self._threads.get(ident)
        if tb is None:
            tb = self._threads[ident] = _op.thread_field(ident)
        st = self._scopes.get(ident)
        if st and st[-1][2]:
            return st[-1][4] + tb
        return tb

    # -- the handler ------------------------------------------------------------------------
    def _classify(self, func):
        if _names.is_property_accessor(func):
            desc = func.__self__
            info = self._prop_info.get(id(desc))
            if info is None or info[4] is not desc:
                if func.__name__ != "__get__":
                    info = (_SKIP, b"", False, "", desc)
                else:
                    name, kind = _names.property_name_and_kind(desc)
                    info = self._make_info(kind, name, desc)
                self._prop_info[id(desc)] = info
            return info
        name = _names.name_of(func)
        info = self._make_info(_names.kind_of(name), name, func)
        # Holding `func` in the entry keeps its id unique for as long as the entry exists.
        self._info[id(func)] = info
        return info

    def _make_info(self, kind, name, obj):
        op = _op.op_field(self._intern(name)) if kind != _SKIP else b""
        return (kind, op, self._schemas.is_random(name), name, obj)

    def handle(self, func, types, args=(), kwargs=None, invoke=None):
        """Record one call. `invoke(func, args, kwargs)`, when given, makes the call itself (see
        _NestedTorchRecorder)."""
        info = self._info.get(id(func))
        if info is None or info[4] is not func:
            info = self._classify(func)
        if info[0] or not self._active:
            if kwargs is None:
                kwargs = {}
            kind = info[0]
            if kind == _SKIP or not self._active:
                return func(*args, **kwargs) if invoke is None else invoke(func, args, kwargs)
            if kind == _SHAPE:
                return self._shape_read(info, func, args, kwargs, invoke)
            if kind == _DTYPE:
                return self._dtype_read(func, args, kwargs, invoke)
            if kind == _DESCEND:
                return self._descend(func, args, kwargs, invoke)
            if kind != _CONVERT:
                return self._guard(info, func, args, kwargs, invoke)
            done, result = self._convert(info, func, args, kwargs, invoke)
            if done:
                return result
            # Not a conversion of a recorded array (torch.tensor([1, 2])): an ordinary op.

        # Arguments (before the call: versions as the op saw them). Plain tensors the frame
        # already knows take the inlined fast path; everything else goes through the encoder.
        ids = self._ids
        known = self._frame.known
        ins = []
        parts = [info[1]]
        append = parts.append
        enc = self._in.encode
        for a in args:
            if type(a) is _Tensor:
                r = ids.get(id(a))
                if r is None or r[0]() is not a:
                    r = self._ref_of(a)
                v = a._version
                if known.get(r[1]) == v and v < _SMALL:
                    ins.append((a, r, v))
                    ref = r[3] + _VERSION[v] + r[4]
                    k = len(ref)
                    if k < 120:
                        append(_ARG_TENSOR[k])
                        append(ref)
                        continue
                    b = A_TENSOR + varint(k) + ref
                else:
                    b = self._in_tensor(a, ins)
            elif type(a) is int:
                b = _int_cache.get(a)
                if b is None:
                    b = enc_int(a)
            else:
                b = enc(a, ins)
            n = len(b)
            append(_OP_ARGS)
            append(V[n] if n < _SMALL else varint(n))
            append(b)
        if kwargs:
            for k, a in kwargs.items():
                b = enc(a, ins)
                append(_op.kwarg_field(k, b))
        if self._sym_seen:   # symbolic ints among the arguments: the call gets plain ints
            self._sym_seen = 0
            args, kwargs = self._unwrap_call(args, kwargs)
        if kwargs:
            clock = self._clock
            start = clock()
            try:
                result = func(*args, **kwargs) if invoke is None else invoke(func, args, kwargs)
            except BaseException:
                self._raised(info, parts, ins, start)
                raise
        else:
            clock = self._clock
            start = clock()
            try:
                result = func(*args) if invoke is None else invoke(func, args, kwargs)
            except BaseException:
                self._raised(info, parts, ins, start)
                raise
        return self._finish(info, parts, ins, result, start, clock(), args, _getframe(1))

    def _finish(self, info, parts, ins, result, start, end, args, f=None):
        """The rest of a recorded call once it returned: result, writes, values, location.
        `parts` holds the OpEvent's op field and its encoded arguments; `ins` the (tensor, ref,
        version before the call) of every tensor argument. (Also called by the C fast path in
        _speedups.c for the calls it does not finish itself.)"""
        append = parts.append
        ids = self._ids
        known = self._frame.known
        # Result: a plain tensor inline, anything else through the encoder.
        outs = []
        if type(result) is _Tensor:
            r = ids.get(id(result))
            if r is None or r[0]() is not result:
                r = self._ref_of(result) if info[3] not in _ALIAS_OPS else self._alias_ref(result, args)
            v = result._version
            outs.append((result, r, v))
            ref = r[3] + _version_field(v) + r[4] + _DTYPE_FIELD.get(result.dtype, b"") + _shape_field(result.shape)
            k = len(ref)
            if k < 120:
                append(_RESULT_TENSOR[k])
                append(ref)
            else:
                b = A_TENSOR + varint(k) + ref
                append(_OP_RESULT + varint(len(b)))
                append(b)
        else:
            b = self._out.encode(result, outs)
            append(_OP_RESULT)
            append(varint(len(b)))
            append(b)
            if ins and any(e is _SYM_IN for e in ins):
                self._guard_number_result(result)
        random = info[2]
        flags = RANDOM if random else 0
        mutated = self._mutations(ins) if ins else None
        if mutated:
            flags |= INPLACE
            for t, r, v in mutated:
                append(_op.mutated_field(r[3] + _version_field(v) + r[4]))
            outs.extend(mutated)

        const = self._const
        foldable = not random
        by_shapes = False   # every tensor input is a constant, and a symbolic int was read
        if foldable:
            for t, r, v in ins:
                if const.get(r[1]) != v:
                    if r is _SYM_REF:
                        by_shapes = True
                        continue
                    foldable = False
                    break
        if by_shapes:
            foldable = False
            if outs and all(type(t) is _Tensor and t.numel() * t.element_size() <= FOLD_LIMIT for t, r, v in outs):
                flags |= SHAPE_FOLDABLE
        values = None
        if outs:
            if foldable:
                # Every input is a constant: record the outputs so the graph can cache them.
                if all(t.numel() * t.element_size() <= FOLD_LIMIT for t, r, v in outs):
                    flags |= FOLDABLE_OP
                    values = FOLDABLE
                for t, r, v in outs:
                    known[r[1]] = v
                    const[r[1]] = v
            else:
                if random:
                    values = RANDOM_OUTPUT
                elif flags & SHAPE_FOLDABLE:
                    values = OBSERVED
                for t, r, v in outs:
                    known[r[1]] = v
                    if r[1] in const:
                        del const[r[1]]

        # file/line, scope, thread, timing
        if flags:
            append(_OP_FLAGS + V[flags])
        if f is None:   # called from C: the caller of the recorded function is the next frame
            f = _getframe(1)
        lines = self._internal_code.get(f.f_code)
        fl = lines.get(f.f_lasti) if lines else None
        append(fl if fl is not None else self._file_line(f))
        ident = self._get_ident()
        st = self._scopes.get(ident)
        if st and st[-1][2]:
            append(st[-1][4])
        tb = self._threads.get(ident)
        if tb is None:
            tb = self._threads[ident] = _op.thread_field(ident)
        append(tb)
        append(_op.time_fields(start - self._t0, end - start))
        if values is None:
            self.w.emit_op(b"".join(parts))
            return result
        _op.write_op(self.w, parts)   # Record.op, then the values
        done = set()
        for t, r, v in outs:
            if r[1] not in done:
                done.add(r[1])
                self._write_value(t, self._full_ref(t, r, v), values)
        self.w.emit()
        return result

    def _raised(self, info, parts, ins, start):
        """Write the OpEvent of a call that raised (flag RAISED, no result)."""
        end = self._clock()
        flags = RAISED | (RANDOM if info[2] else 0)
        mutated = self._mutations(ins)
        if mutated:
            flags |= INPLACE
            for t, r, v in mutated:
                parts.append(_op.mutated_field(r[3] + _version_field(v) + r[4]))
        self.w.emit_op(self._payload(parts, flags, start, end))

    __torch_function__ = handle

    def _payload(self, parts, flags, start, end) -> bytes:
        parts.append(_op.flags_field(flags))
        parts.append(self._file_line(_getframe(1)))
        parts.append(self._scope_thread())
        parts.append(_op.time_fields(start - self._t0, end - start))
        return b"".join(parts)

    def _mutations(self, ins):
        mutated = None
        fr = self._frame
        for t, r, v in ins:
            nv = t._version
            if nv != v:
                if mutated is None:
                    mutated = []
                elif any(m[1] is r for m in mutated):
                    continue
                mutated.append((t, r, nv))
                fr.known[r[1]] = nv
                fr.written[r[2]] = nv
        return mutated

    # -- shape reads and guards ---------------------------------------------------------------
    def _shape_read(self, info, func, args, kwargs, invoke=None):
        result = func(*args, **kwargs) if invoke is None else invoke(func, args, kwargs)
        t = args[0] if args else None
        if isinstance(t, _Tensor):
            r = self._ref_of(t)
            fid, line = self._location()
            # ShapeRead{tensor, op, value, file, line}; info[1] is the OpEvent.op field: its id after the tag
            payload = (ld(_SR.TENSOR, r[3] + _version_field(t._version) + r[4]) + _SR.OP + info[1][len(OP.OP):]
                       + ld(_SR.VALUE, self._ref.encode(result, [])) + _SR.FILE + varint(fid) + _SR.LINE + varint(line))
            self.w.emit(TAG_SHAPE_READ, payload)
            if self._regions and self._get_ident() == self._thread and self.session.symbolic_shapes and \
                    self._sym_known(t) is not None:
                return self._symbolic(info[3], t, args, kwargs, result)
        return result

    # -- symbolic shapes (recorder/sym.py) ----------------------------------------------------
    def _len_hook(self, t):
        """len(t) while recording (builtins.len, see sym.py): a shape read of dim 0."""
        if not self._active or self._get_ident() != self._thread:
            return _plain_len(None, (t,), None)
        info = self._info.get(id(_Tensor.__len__))
        if info is None or info[4] is not _Tensor.__len__:
            info = self._classify(_Tensor.__len__)
        return self._shape_read(info, _Tensor.__len__, (t,), {}, _plain_len)

    def _symbolic(self, name, t, args, kwargs, result):
        """The value of a shape read of `t` as stand-ins that remember where they came from."""
        what = name.rsplit(".", 1)[-1]
        self._guard_ranks()
        if type(result) is torch.Size:
            return self._sym_size(t, result, TorchSymSize)
        if type(result) is not int:
            return result
        if what == "size":
            d = args[1] if len(args) > 1 else kwargs.get("dim")
            d = operator.index(d)
            return self._sym_leaf(t, "ivytrace.sym.size", d % t.dim() if t.dim() else d, result)
        if what == "__len__":
            return self._sym_leaf(t, "ivytrace.sym.size", 0, result)
        if what in ("numel", "nelement"):
            return self._sym_leaf(t, "ivytrace.sym.numel", None, result)
        return result   # dim(), ndim: fixed once the inputs' ranks are (_guard_ranks)

    def _descend(self, func, args, kwargs, invoke=None):
        """Run a Python torch function's body with this mode pushed again (names.DESCEND): the
        calls it makes are recorded, the function itself is not."""
        body = self._bodies.get(func)
        if body is None:
            body = self._bodies[func] = _names.unchecked_body(func)
        if body is False:   # its check was not bypassed (below): an ordinary call
            return self._descend_failed(func, args, kwargs, invoke)
        if func in self._descending:   # the body dispatched again: a check unchecked_body missed
            self._bodies[func] = False
            raise _DescendAgain(func)
        self._descending.add(func)
        try:
            with self:
                return body(*args, **kwargs) if invoke is None else invoke(body, args, kwargs)
        except _DescendAgain as e:
            if e.func is not func:
                raise
        finally:
            self._descending.discard(func)
        return self._descend_failed(func, args, kwargs, invoke)

    def _descend_failed(self, func, args, kwargs, invoke):
        """Record `func` as one call, as any function not in schemas/ (its export then names it)."""
        info = self._info.get(id(func))
        self._info[id(func)] = (_names.OP,) + tuple(info[1:])
        return self.handle(func, (), args, kwargs, invoke)

    def _dtype_read(self, func, args, kwargs, invoke=None):
        """`x.dtype`, `x.is_floating_point()`: a Python value the graph is specialized on when x
        follows the region's inputs (a parameter's dtype is fixed). dtypes follow from the inputs'
        dtypes, so a guard on each input's dtype (once per region) makes the read safe."""
        result = func(*args, **kwargs) if invoke is None else invoke(func, args, kwargs)
        t = args[0] if args else None
        if (isinstance(t, _Tensor) and self._regions and self._get_ident() == self._thread and
                not self._frame.dtypes_guarded and self._sym_known(t) is not None):
            self._frame.dtypes_guarded = True
            self._guard_inputs("torch.Tensor.dtype", lambda t: common_pb2.Arg(dtype=DTYPES.get(t.dtype, 0)))
        return result

    def _guard_ranks(self):
        """The region read a shape: from here on its graph may depend on the rank of a tensor
        (`x.dim()`, `x.shape[-1]`, `len(x.shape)`, unpacking `b, t, c = x.shape`). Ranks follow
        from the inputs' ranks, so a guard on each input's rank (once per region) makes every one
        of them safe to take as a plain int."""
        fr = self._frame
        if fr.ranks_guarded:
            return
        fr.ranks_guarded = True
        self._guard_inputs("torch.Tensor.dim", lambda t: common_pb2.Arg(i=t.dim()))

    def _guard_inputs(self, op_name, value_of):
        """A GuardEvent `op_name` on each of the region's input tensors, of value `value_of(tensor)`."""
        fid, line = self._location()
        op = self._intern(op_name)
        rid = self._regions[-1] if self._regions else 0
        for t, r, v in self._frame.input_refs:
            ref = common_pb2.TensorRef(id=r[1], version=v, storage=r[2])
            g = trace_pb2.GuardEvent(tensor=ref, op=op, value=value_of(t), file=fid, line=line, region=rid)
            self.w.emit(TAG_GUARD, g.SerializeToString())

    def _sym_known(self, t):
        """(ids entry, version) when the current frame computed or was given `t` and it is not
        a constant there; None when its shape is constant in this frame."""
        r = self._ids.get(id(t))
        if r is None or r[0]() is not t:
            r = self._ref_of(t)
        v = t._version
        fr = self._frame
        if fr.known.get(r[1]) != v:
            if fr.written.get(r[2]) != v:
                return None
            fr.known[r[1]] = v
        if self._const.get(r[1]) == v:
            return None
        return r, v

    def _sym_frame(self):
        if self._regions and self._active and self._get_ident() == self._thread:
            return self._frame
        return None

    def _sym_tensor_arg(self, t):
        k = self._sym_known(t)
        if k is None:
            return None
        r, v = k
        return ld(A_TENSOR, r[3] + _version_field(v) + r[4])

    def _sym_location(self):
        return self._location()

    def _sym_region(self):
        return self._regions[-1] if self._regions else 0

    def _sym_scope(self):
        st = self._scopes.get(self._get_ident())
        return st[-1][2] if st else 0

    def _note_sym(self, ins, arg: bytes):
        """The `_in` encoder met a symbolic int: the call is made with plain ints, and it reads a
        value of the graph unless the int is a constant here."""
        self._sym_seen = 1
        if arg[:1] == A_TENSOR:
            ins.append(_SYM_IN)

    def _unwrap_call(self, args, kwargs):
        unwrap = _sym.unwrap
        # Kept until _finish: if the call returns Python numbers (not tensors), they were computed
        # from these shape-derived ints and the graph holds them as recorded, so each gets a guard.
        syms = []
        for a in (*args, *(kwargs.values() if kwargs else ())):
            if isinstance(a, _sym.SymValue):
                syms.append(a)
            elif type(a) in (tuple, list) or isinstance(a, torch.Size):
                syms.extend(x for x in a if isinstance(x, _sym.SymValue))
        self._call_syms = syms
        return tuple(unwrap(a) for a in args), (unwrap(kwargs) if kwargs else kwargs)

    def _guard_number_result(self, result):
        """A call that read shape-derived ints returned Python numbers (torch.broadcast_shapes, a
        library helper): the graph records the numbers, so a replay must see the same ints."""
        syms, self._call_syms = self._call_syms, None
        if not syms:
            return
        numbers = (isinstance(result, (int, float, complex)) or
                   (isinstance(result, (tuple, list)) and any(isinstance(x, (int, float, complex)) for x in result)))
        if numbers:
            for s in syms:
                s._leave("__bool__" if isinstance(s, _sym.SymBool) else "__index__")

    def _guard(self, info, func, args, kwargs, invoke=None):
        result = func(*args, **kwargs) if invoke is None else invoke(func, args, kwargs)
        t = args[0] if args else None
        if not isinstance(t, _Tensor):
            return result
        ref = common_pb2.Arg.FromString(self._in_tensor(t, [])).tensor   # defines t if no op made it
        fid, line = self._location()
        if info[3].endswith(("tolist", "numpy", "__array__")) and t.numel() > GUARD_VALUE_LIMIT:
            value = common_pb2.Arg(opaque=f"{type(result).__name__}: {t.numel()} elements (not kept)")
        else:
            value = common_pb2.Arg.FromString(self._ref.encode(_guard_value(result), []))
        msg = trace_pb2.GuardEvent(tensor=ref, op=self._intern(info[3]), value=value, file=fid, line=line,
                                   region=self._regions[-1] if self._regions else 0)
        self.w.emit(TAG_GUARD, msg.SerializeToString())
        if self.session.warn_guards:
            site = (fid, line, info[3])
            if site not in self._warned:
                self._warned.add(site)
                where = f"{self.w.string(fid)}:{line}" if fid else "<unknown location>"
                warnings.warn(f"ivytrace: this graph is specialized on the value of {info[3]} at {where}",
                              SpecializationWarning, stacklevel=3)
        return result

    def _convert(self, info, func, args, kwargs, invoke=None):
        """t.numpy(), torch.from_numpy(a)...: (True, result) when recorded as a conversion (or,
        to NumPy with NumPy not recorded, as a guard); (False, None) for an ordinary op."""
        from ivytrace.recorder import convert
        return convert.torch_call(self, info, func, args, kwargs, invoke)

    def _warn_once(self, key, message):
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(message, RuntimeWarning, stacklevel=3)

    # -- modules: scopes and parameter names --------------------------------------------------
    def register_root(self, module):
        """Map a root module's submodules and parameters/buffers to qualified names."""
        entry = self._roots.get(id(module))
        if entry is not None and entry[0]() is module:
            return entry[1]
        names = {}
        for qn, m in module.named_modules(remove_duplicate=False):
            names.setdefault(id(m), qn)
        params = self._params
        for qn, p in module.named_parameters(remove_duplicate=False):
            params[id(p)] = (weakref.ref(p), qn, PARAMETER)
        for qn, b in module.named_buffers(remove_duplicate=False):
            params[id(b)] = (weakref.ref(b), qn, BUFFER)
        try:
            ref = weakref.ref(module)
        except TypeError:
            ref = lambda m=module: m  # noqa: E731
        self._roots[id(module)] = (ref, names)
        return names

    def _pre_hook(self, module, args):
        if not self._active:
            return None
        ident = self._get_ident()
        st = self._scopes.get(ident)
        if st is None:
            st = self._scopes[ident] = []
        if not st:
            st.append((module, self.register_root(module), 0, "", b""))
            return None
        parent = st[-1]
        qn = parent[1].get(id(module))
        if qn is None:  # a module the root does not own (e.g. kept in a plain list)
            ps = parent[3]
            qn = f"{ps}.{type(module).__name__}" if ps else type(module).__name__
        sid = self._intern(qn) if qn else 0
        st.append((module, parent[1], sid, qn, _OP_SCOPE + varint(sid) if sid else b""))
        return None

    def _post_hook(self, module, args, output):
        st = self._scopes.get(self._get_ident())
        if not st:
            return None
        for i in range(len(st) - 1, -1, -1):
            if st[i][0] is module:
                del st[i:]
                break
        return None

    # -- regions: RegionFraming's hooks (regions.py; region_begin / region_end are shared) ------
    def _records_regions(self) -> bool:
        return self._get_ident() == self._thread and self._active

    @staticmethod
    def _quiet():
        return torch._C.DisableTorchFunction()

    @property
    def _region_encoder(self):
        return self._ref

    def _enter_frame(self):
        self._frames.append(self._frame)
        self._frame = _Frame()

    def _bind_region_inputs(self, rid, tensors, sym_inputs, file, line):
        fr = self._frame
        for v in sym_inputs:
            self._sym_bind_input(v, fr)
        for t, r, v in _unique(tensors):
            fr.known[r[1]] = v
            fr.inputs[r[1]] = v
            fr.input_refs.append((t, r, v))
            self._const.pop(r[1], None)
            self._write_value(t, self._full_ref(t, r, v), REGION_INPUT)

    def _define_region_result(self, tensors):
        fr = self._frame
        for t, r, v in _unique(tensors):
            if fr.known.get(r[1]) != v and fr.written.get(r[2]) != v:
                self._define_external(t, r, v, self._full_ref(t, r, v))

    def _write_region_outputs(self, tensors):
        for t, r, v in _unique(tensors):
            self._write_value(t, self._full_ref(t, r, v), REGION_OUTPUT)

    def _leave_frame(self):
        """What a region computed is known to the enclosing frame too; its inputs are not."""
        inner = self._frame
        outer = self._frame = self._frames.pop()
        inputs = inner.inputs
        for tid, v in inner.known.items():
            if inputs.get(tid) != v:
                outer.known[tid] = v
        outer.written.update(inner.written)

if _speedups is not None:
    from ivytrace.recorder.tags import c_tags as _c_tags
    _speedups.set_tags(_c_tags(), INPLACE)   # the C path writes the descriptors' tags too

    class TorchRecorder(_PyTorchRecorder, _speedups.RecorderBase):
        """The recorder with its common call recorded in C (ivytrace/_speedups.c): the tables
        above are members of the C base, shared by both paths; every call the C path does not
        finish itself goes on in the Python methods (handle, _in.encode, _finish, _raised).
        The id table is a `_speedups.TensorIds` whose entries are `_speedups.IdEntry`s (weak
        references carrying the ids, read as the 5-tuples above: e[0]() is the tensor, e[1]..e[4]
        the tensor id, storage id and their TensorRef fields); they are made in C only."""

        __torch_function__ = _speedups.RecorderBase.__torch_function__
        _new_id_table = _speedups.TensorIds
        _ref_of = _speedups.RecorderBase._c_ref_of
        _sweep = _speedups.RecorderBase._c_sweep

        def _alias_ref(self, t, args):
            src = args[0] if args else None
            if not isinstance(src, _Tensor) or t._base is not None or t._version != src._version:
                return self._ref_of(t)
            return self._c_new_ref(t, self._ref_of(src)[2])

        def __init__(self, session):
            super().__init__(session)
            self._sink = self.w.sink
            self._speedups_setup(_Tensor, torch.nn.Parameter, _DTYPE_FIELD, _shapes, _ALIAS_OPS,
                                 _int_cache, _shape_field, (CONSTANT, ""))
else:
    TorchRecorder = _PyTorchRecorder


def _call_enabled(func, args, kwargs):
    with torch._C._EnableTorchFunction():
        return func(*args, **(kwargs or {}))


class _NestedTorchRecorder(TorchRecorder):
    """A recorder installed while another torch function mode is active (say trace_graph inside
    `ivytrace record`): the outer mode must see the program's calls but not this recorder's own
    bookkeeping (t.shape, t._version...), so that runs with torch functions disabled and only the
    recorded call itself is made with them enabled."""

    def handle_nested(self, func, types, args=(), kwargs=None):
        with torch._C.DisableTorchFunction():
            return self.handle(func, types, args, kwargs, _call_enabled)

    __torch_function__ = handle_nested


def recorder_for(session) -> TorchRecorder:
    """The recorder class that fits the current torch function mode stack."""
    nested = torch._C._len_torch_function_stack() > 0
    return (_NestedTorchRecorder if nested else TorchRecorder)(session)


def _unique(tensors):
    seen = set()
    for t, r, v in tensors:
        if r[1] not in seen:
            seen.add(r[1])
            yield t, r, v


def _guard_value(v):
    """What Python saw, as something the encoder writes (arrays as nested lists)."""
    if type(v).__module__ == "numpy" and hasattr(v, "tolist"):
        return v.tolist()
    return v


class _TorchEncoder(ArgEncoder):
    """ArgEncoder with torch types; tensors go to `tensor_handler(t, tensors)`, and symbolic
    ints to their references, reported to `on_sym(tensors, arg bytes)` when given."""

    def __init__(self, tensor_handler, on_sym=None):
        super().__init__()
        t = self.table
        t[torch.Tensor] = tensor_handler
        t[torch.nn.Parameter] = tensor_handler
        t[torch.Size] = self._tuple
        t[TorchSymSize] = self._tuple

        def sym_arg(v, ts):
            b = v.arg()
            if on_sym is not None:
                on_sym(ts, b)
            return b
        for c in _sym.SYM_CLASSES:
            t[c] = sym_arg
        t[torch.dtype] = _encode_dtype
        t[torch.device] = lambda v, ts: ld(A_DEVICE, str(v).encode())
        t[torch.memory_format] = lambda v, ts: ld(A_SYMBOL, str(v).encode())
        t[torch.layout] = lambda v, ts: ld(A_SYMBOL, str(v).encode())
        self.subclass_handlers.append((torch.Tensor, tensor_handler))


def _encode_dtype(v, ts):
    b = _DTYPE_ARG.get(v)
    return b if b is not None else ld(A_SYMBOL, str(v).encode())
