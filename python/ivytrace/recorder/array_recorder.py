"""What the NumPy and JAX recorders share: recorders of array frameworks whose arrays carry no id
(nor, for NumPy, version) the trace can use, so the recorder keeps ids in a weakref table
(id(array) -> (weakref, tensor id, ...)).

Each framework module keeps what differs and what runs per op: which functions are wrapped and
how (the wrappers read the module's own `_REC` global), `record` (the operands and the call),
`_ref` (how storage roots and versions are found), `_tensor_ref`, the dtype encoding. This module
has the rest:
  * `busy_flag()`: one thread-local "busy" flag per framework (up while a recorded call runs, so
    the calls it makes are not recorded); the frameworks keep separate flags;
  * `caller_location(prefixes)`: the (file, line) of the user's frame, the first one whose file
    does not start with one of the framework's internal prefixes;
  * `ArrayRecorder`: the common state, finishing an op (`_finish_op`: result, writes, flags,
    location, the OpEvent and the values it needs), writing values, guards, shape reads, and the
    hooks of the region framing all recorders share (regions.RegionFraming).
    A subclass says how a frame of known arrays is kept (`_enter_frame`, `_leave_frame`,
    `_region_input`, `_is_known`, `_learn`, `_is_const`, `_set_known`) and how an array's host
    value is read (`_host_array`).
    The entries these hooks get are the tuples the framework's encoders collect: the array first,
    its tensor id second, then whatever else the framework's `_tensor_ref(*entry)` takes.
"""
from __future__ import annotations

from builtins import len  # the builtin itself: while recording, builtins.len is sym._len (one Python call more)

import os
import sys
import threading
import time
import warnings

import numpy as np

from ivytrace.recorder import opevent as _op
from ivytrace.recorder.encode import ld, varint
from ivytrace.recorder.regions import RegionFraming
from ivytrace.recorder.tags import TDATA as _TD, TENSOR as _T
from ivytrace.recorder.writer import TAG_GUARD, TAG_SHAPE_READ, TAG_TENSOR
from ivytrace.v1 import common_pb2, trace_pb2

INPLACE = trace_pb2.INPLACE
RANDOM = trace_pb2.RANDOM
FOLDABLE_OP = trace_pb2.FOLDABLE_OP
RAISED = trace_pb2.RAISED
CONSTANT = common_pb2.CONSTANT
REGION_INPUT = common_pb2.REGION_INPUT
REGION_OUTPUT = common_pb2.REGION_OUTPUT
RANDOM_OUTPUT = common_pb2.RANDOM_OUTPUT
FOLDABLE = common_pb2.FOLDABLE
FOLD_LIMIT = 16 << 20
GUARD_VALUE_LIMIT = 65536

# NumPy dtypes -> trace dtypes (JAX adds bfloat16 to its copy).
DTYPES = {
    np.dtype(n): getattr(common_pb2, e) for n, e in (
        ("float32", "FLOAT32"), ("float64", "FLOAT64"), ("float16", "FLOAT16"), ("int8", "INT8"),
        ("int16", "INT16"), ("int32", "INT32"), ("int64", "INT64"), ("uint8", "UINT8"),
        ("bool", "BOOL"), ("complex64", "COMPLEX64"), ("complex128", "COMPLEX128"),
        ("uint16", "UINT16"), ("uint32", "UINT32"), ("uint64", "UINT64"))}


def busy_flag():
    """(state, busy, Busy) for one framework: `busy()` says whether the flag is up on this thread,
    `with Busy():` raises it for the block (and puts back what it was)."""
    state = threading.local()

    def busy() -> bool:
        return getattr(state, "busy", False)

    class Busy:
        def __enter__(self):
            self.prev = getattr(state, "busy", False)
            state.busy = True

        def __exit__(self, *exc):
            state.busy = self.prev
            return False

    return state, busy, Busy


def caller_location(internal_prefixes: tuple):
    """A `location(intern)` -> (file id, line) of the first frame whose file name does not start
    with one of `internal_prefixes` (the framework's and ivytrace's directories...), or (0, 0);
    cached per code object and instruction offset (f_lineno scans the line table). With the C
    extension, `_speedups.Locator` does the same walk (this function is its Python twin; it runs
    on every recorded NumPy and JAX op)."""
    if _Locator is not None:
        return _Locator(tuple(internal_prefixes))
    return py_caller_location(internal_prefixes)


def py_caller_location(internal_prefixes: tuple):
    """caller_location in Python."""
    internal_code: dict = {}   # code object -> True if internal, else {f_lasti: line}

    def location(intern):
        f = sys._getframe(1)
        while f is not None:
            c = f.f_code
            lines = internal_code.get(c)
            if lines is None:
                lines = internal_code[c] = True if c.co_filename.startswith(internal_prefixes) else {}
            if lines is not True:
                n = lines.get(f.f_lasti)
                if n is None:
                    n = lines[f.f_lasti] = f.f_lineno or 0
                return intern(c.co_filename), n
            f = f.f_back
        return 0, 0
    return location


try:
    if os.environ.get("IVYTRACE_NO_SPEEDUPS") == "1":
        raise ImportError
    from ivytrace._speedups import Locator as _Locator
    from ivytrace import _speedups
    _speedups.td_setup((_T.DTYPE, _T.SHAPE, _T.DATA, _T.NAME, _T.ROLE, _T.FRAMEWORK, _TD.REF, _TD.VALUE,
                        _TD.TOTAL_BYTES))
    _tensor_data = _speedups.tensor_data   # _write_value's message in C (one call for ~20 Python ones)
except ImportError:
    _Locator = None
    _tensor_data = None


def pyval(v):
    """A guard's result as the plain Python value it is recorded as."""
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    return v


class ArrayRecorder(RegionFraming):
    """The part of a NumPy-like recorder that does not depend on the framework. Subclasses set
    `_Busy` (their busy flag's context manager), `_location` (their `caller_location`), `_dtypes`,
    `_framework` (Tensor.framework of the values they write; "" for the plan's own) and the
    encoders `_enc` (operands: unknown arrays are written as constants) and `_enc_out` (results)."""

    _Busy = None
    _location = None
    _dtypes = DTYPES
    _framework = ""

    def __init__(self, session):
        self.session = session
        self.w = session.writer
        self._intern = session.writer.intern
        self._t0 = session.t0
        self._schemas = session.schemas
        self.thread = threading.get_ident()
        self.active = False
        self._ids = {}          # id(array) -> (weakref, tid, ...)
        self._sweep_at = 4096
        self._frames = []
        self._regions = []
        self._next_region = 1
        self._patched = []      # (owner, attribute, original or None if it had none)
        self._warned = set()

    def _restore_patches(self):
        for owner, name, orig in reversed(self._patched):
            if orig is None:
                try:
                    delattr(owner, name)
                except AttributeError:
                    pass
            else:
                setattr(owner, name, orig)
        self._patched.clear()

    def _sweep(self):
        for k in [k for k, r in self._ids.items() if r[0]() is None]:
            del self._ids[k]
        self._sweep_at = max(2 * len(self._ids), 4096)

    # -- finishing an op ----------------------------------------------------------------------------
    # Entries are the framework's tuples (array, tensor id, ...) that `_tensor_ref(*entry)` takes.
    def _is_const(self, entry) -> bool:
        """The current frame holds `entry`'s value as a constant (at its version)."""
        raise NotImplementedError

    def _set_known(self, entry, const: bool):
        """An op made `entry`: the frame knows it, as a constant if `const`."""
        raise NotImplementedError

    @staticmethod
    def _nbytes(a) -> int:
        return a.nbytes

    def _finish_op(self, parts, name, ins, result, start, raised=False, mutated=()):
        """Everything after the call of a recorded op: the result, the writes, the flags, where the
        call came from, the clocks; then the OpEvent and the values the graph needs (foldable
        outputs of constant inputs, random draws). `parts` holds the op and argument fields."""
        end = time.perf_counter_ns()
        random = self._schemas.is_random(name)
        flags = (RANDOM if random else 0) | (RAISED if raised else 0)
        outs = []
        if not raised:
            parts.append(_op.result_field(self._enc_out.encode(result, outs)))
        if mutated:
            flags |= INPLACE
            for e in mutated:
                parts.append(_op.mutated_field(self._tensor_ref(*e, full=False)))
            outs.extend(mutated)
        has_value = self._has_value
        foldable = (not random and not raised and all(self._is_const(e) for e in ins)
                    and all(has_value(e[0]) for e in outs))
        values = None
        if foldable and outs:
            nbytes = self._nbytes
            if all(nbytes(e[0]) <= FOLD_LIMIT for e in outs):
                flags |= FOLDABLE_OP
                values = FOLDABLE
            for e in outs:
                self._set_known(e, True)
        else:
            if random:
                values = RANDOM_OUTPUT
            for e in outs:
                self._set_known(e, False)
        fid, line = self._location(self._intern)
        parts.append(_op.tail(flags, fid, line, threading.get_ident(), start - self._t0, end - start))
        _op.write_op(self.w, parts)
        if values is not None:
            done = set()
            for e in outs:
                if e[1] not in done and has_value(e[0]):
                    done.add(e[1])
                    self._write_value(e[0], self._tensor_ref(*e), values)
        self.w.emit()

    # -- values ------------------------------------------------------------------------------------
    def _host_array(self, a) -> np.ndarray:
        """The value of `a` as a NumPy array whose tobytes() is what the trace holds."""
        raise NotImplementedError

    def _write_value(self, a, ref, role, name=""):
        arr = self._host_array(a)
        dt = self._dtypes.get(arr.dtype, 0)
        data = arr.tobytes()
        # TensorData{ref, value = Tensor{dtype, shape, data, name, role, framework}, total_bytes},
        # encoded by hand in field order, default values left out (what SerializeToString writes).
        n = len(data)
        fw = self._framework
        if _tensor_data is not None and type(ref) is bytes:
            self.w.add(TAG_TENSOR, _tensor_data(ref, data, dt, arr.shape, name, role, fw), tensor_bytes=n)
            return
        t = ((_T.DTYPE + varint(dt) if dt else b"")
             + (ld(_T.SHAPE, b"".join(varint(int(d)) for d in arr.shape)) if arr.shape else b"")
             + (ld(_T.DATA, data) if n else b"")
             + (ld(_T.NAME, name.encode("utf-8")) if name else b"")
             + (_T.ROLE + varint(role) if role else b"")
             + (ld(_T.FRAMEWORK, fw.encode("utf-8")) if fw else b""))
        msg = ld(_TD.REF, ref) + ld(_TD.VALUE, t) + (_TD.TOTAL_BYTES + varint(n) if n else b"")
        self.w.add(TAG_TENSOR, msg, tensor_bytes=n)

    def _has_value(self, a) -> bool:
        """Whether `a` has a value a trace tensor can hold (JAX's typed PRNG keys do not)."""
        return True

    def _warn_once(self, key, message):
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(message, RuntimeWarning, stacklevel=4)

    # -- shape reads and guards ---------------------------------------------------------------------
    def shape_read(self, op, a, value):
        """A ShapeRead record: the program read a shape (the graph is specialized on it)."""
        with self._Busy():
            ref = common_pb2.Arg.FromString(self._enc.encode(a, [])).tensor
            fid, line = self._location(self._intern)
            msg = trace_pb2.ShapeRead(tensor=ref, op=self._intern(op),
                                      value=common_pb2.Arg.FromString(self._enc_out.encode(value, [])),
                                      file=fid, line=line)
            self.w.emit(TAG_SHAPE_READ, msg.SerializeToString())

    def guard(self, op, a, result):
        """A GuardEvent: Python saw the value `result` of `a` (bool(a), a.item(), ...); a list
        longer than GUARD_VALUE_LIMIT elements is not kept."""
        with self._Busy():
            ref = common_pb2.Arg.FromString(self._enc.encode(a, [])).tensor
            fid, line = self._location(self._intern)
            size = int(np.prod(np.shape(a))) if op.endswith(("tolist", "__array__")) else 0
            if size > GUARD_VALUE_LIMIT:
                value = common_pb2.Arg(opaque=f"list: {size} elements (not kept)")
            else:
                value = common_pb2.Arg.FromString(self._enc_out.encode(pyval(result), []))
            msg = trace_pb2.GuardEvent(tensor=ref, op=self._intern(op), value=value, file=fid, line=line,
                                       region=self._regions[-1] if self._regions else 0)
            self.w.emit(TAG_GUARD, msg.SerializeToString())
            if self.session.warn_guards and (fid, line) not in self._warned:
                self._warned.add((fid, line))
                warnings.warn(f"ivytrace: this graph is specialized on the value of {op} at "
                              f"{self.w.string(fid) if fid else '?'}:{line}", RuntimeWarning, stacklevel=3)

    # -- regions ----------------------------------------------------------------------------------
    def _enter_frame(self):
        """A region begins: save the arrays known so far and start an empty frame."""
        raise NotImplementedError

    def _leave_frame(self):
        """The innermost region ends: back to the frame before it, which now knows what the region
        made (its inputs only if they were known before)."""
        raise NotImplementedError

    def _region_input(self, entry):
        """A region input (each tensor id once): known in the new frame, not a constant."""
        raise NotImplementedError

    def _is_known(self, entry) -> bool:
        raise NotImplementedError

    def _learn(self, entry):
        """The current frame knows `entry` (at its version) from now on."""
        raise NotImplementedError

    # RegionFraming's hooks (regions.py): region_begin / region_end are shared with torch.
    def _records_regions(self) -> bool:
        return threading.get_ident() == self.thread and self.active

    def _quiet(self):
        return self._Busy()

    @property
    def _region_encoder(self):
        return self._enc_out

    def _bind_region_inputs(self, rid, tensors, extra, file, line):
        seen = set()
        for t in tensors:
            if t[1] in seen:
                continue
            seen.add(t[1])
            self._region_input(t)
            if self._has_value(t[0]):
                self._write_value(t[0], self._tensor_ref(*t), REGION_INPUT)
            self._input_guard(t, rid, file, line)
        for v in extra:   # numbers the caller passed: stand-ins (recorder/sym.py) of this frame
            self._sym_bind_input(v, self._sym_frame())

    def _define_region_result(self, tensors):
        for t in tensors:
            # (None, ...) stands for a symbolic int (a NumPy shape stand-in returned as is).
            if t[0] is not None and not self._is_known(t) and self._has_value(t[0]):
                self._write_value(t[0], self._tensor_ref(*t), CONSTANT)
                self._learn(t)

    def _write_region_outputs(self, tensors):
        seen = set()
        for t in tensors:
            if t[0] is not None and t[1] not in seen and self._has_value(t[0]):
                seen.add(t[1])
                self._write_value(t[0], self._tensor_ref(*t), REGION_OUTPUT)

    def _input_guard(self, entry, rid, file, line):
        """A guard a framework puts on each region input (JAX: its shape)."""
