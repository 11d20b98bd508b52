"""The PyTorch recorder: a TorchFunctionMode that writes one OpEvent per torch call.

Inside `__torch_function__` torch pops the mode, so calls made by the called function are not
recorded again (F.relu is recorded once, not also torch.relu).

Tensor identity: every tensor gets an id on first sight (a dict id(tensor) -> weakref that carries
the id; measured cheaper than torch.utils.weak.WeakIdKeyDictionary and, unlike an attribute on the
tensor, it does not leak into deepcopies or torch.save files), `version = t._version` and
`storage` = the id of the root base tensor (views share their base's storage id and, in PyTorch,
its version counter).

Values the graph needs (see DESIGN.md "Values are recorded where the graph needs them"): within
each region (and outside all regions) every tensor (id, version) an op reads is either a region
input, produced by an earlier recorded op (directly, or by an in-place write to its storage), or
has a TensorData record written just before the op that first reads it (role PARAMETER / BUFFER
with its qualified name, else CONSTANT).
"""
from __future__ import annotations

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
from ivytrace.recorder.args import Arg, ArgConverter, ArgList
from ivytrace.recorder.writer import (TAG_GUARD, TAG_OP, TAG_REGION_BEGIN, TAG_REGION_END,
                                      TAG_SHAPE_READ, TAG_TENSOR)
from ivytrace.v1 import common_pb2, trace_pb2

TensorRef = common_pb2.TensorRef
TensorMsg = common_pb2.Tensor
KwArg = common_pb2.KwArg
NamedArg = common_pb2.NamedArg
OpEvent = trace_pb2.OpEvent
TensorData = trace_pb2.TensorData

CHUNK_BYTES = 64 << 20      # TensorData values above this are split over several records
FOLD_LIMIT = 16 << 20       # foldable outputs above this are not recorded (and not flagged)

INPLACE = trace_pb2.INPLACE
RANDOM = trace_pb2.RANDOM
FOLDABLE_OP = trace_pb2.FOLDABLE_OP
RAISED = trace_pb2.RAISED

CONSTANT = common_pb2.CONSTANT
PARAMETER = common_pb2.PARAMETER
BUFFER = common_pb2.BUFFER
REGION_INPUT = common_pb2.REGION_INPUT
REGION_OUTPUT = common_pb2.REGION_OUTPUT
RANDOM_OUTPUT = common_pb2.RANDOM_OUTPUT
FOLDABLE = common_pb2.FOLDABLE

_DTYPE_NAMES = {
    "float32": common_pb2.FLOAT32, "float64": common_pb2.FLOAT64, "float16": common_pb2.FLOAT16,
    "bfloat16": common_pb2.BFLOAT16, "int8": common_pb2.INT8, "int16": common_pb2.INT16,
    "int32": common_pb2.INT32, "int64": common_pb2.INT64, "uint8": common_pb2.UINT8,
    "bool": common_pb2.BOOL, "complex64": common_pb2.COMPLEX64, "complex128": common_pb2.COMPLEX128,
    "uint16": common_pb2.UINT16, "uint32": common_pb2.UINT32, "uint64": common_pb2.UINT64,
}
DTYPES = {getattr(torch, n): v for n, v in _DTYPE_NAMES.items() if hasattr(torch, n)}

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_IVYTRACE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_Tensor = torch.Tensor
_OP = _names.OP
_SKIP = _names.SKIP
_SHAPE = _names.SHAPE
_GUARD = _names.GUARD


class _Ref(weakref.ref):
    """Weak reference to a tensor that carries the tensor's trace id."""
    __slots__ = ("tid", "key")


class SpecializationWarning(UserWarning):
    """The traced graph depends on a tensor value seen while tracing (a guard)."""


class _Frame:
    """What a region (or the top level) knows: tensor id -> version defined in it, and
    storage id -> version last written by a recorded op in it; region inputs (id -> version)."""
    __slots__ = ("known", "written", "inputs")

    def __init__(self):
        self.known = {}
        self.written = {}
        self.inputs = {}


def is_internal_file(filename: str) -> bool:
    return filename.startswith(_TORCH_DIR) or filename.startswith(_IVYTRACE_DIR)


class TorchRecorder(TorchFunctionMode):
    """The recorder is itself the mode: `__torch_function__` is `handle`, with no extra call."""

    def __init__(self, session):
        super().__init__()
        self.session = session
        self.w = session.writer
        self._intern = session.writer.intern
        self._t0 = session.t0
        self._schemas = session.schemas
        self._info = {}            # id(func) -> (kind, name_id, random, name, func)
        self._prop_info = {}       # id(getset_descriptor) -> (kind, name_id, random, name, descriptor)
        self._ids = {}             # id(tensor) -> _Ref
        self._next_tid = 1
        self._frame = _Frame()
        self._frames = []          # enclosing frames of open regions
        self._const = {}           # tensor id -> version at which its value is a constant
        self._params = {}          # id(tensor) -> (weakref, name, role)
        self._roots = {}           # id(module) -> (weakref, {id(submodule): qualified name})
        self._scopes = {}          # thread ident -> [(module, names, scope id)]
        self._internal_code = {}   # code object -> bool (frame is inside torch/ivytrace)
        self._warned_sites = set()
        self._regions = []         # open region ids
        self._next_region = 1
        self._hooks = []
        self._active = False
        self.mode = self
        self._in = _Converter(self._in_tensor)
        self._out = _Converter(self._out_tensor)
        self._ref = _Converter(self._plain_ref)
        self._get_ident = threading.get_ident
        self._clock = time.perf_counter_ns
        # Torch function modes are thread-local: only the thread that installed the recorder is
        # recorded. Region markers from other threads are ignored.
        self._thread = threading.get_ident()

    # -- lifecycle -------------------------------------------------------------------------
    def install(self):
        self._hooks.append(register_module_forward_pre_hook(self._pre_hook))
        self._hooks.append(register_module_forward_hook(self._post_hook, always_call=True))
        self._active = True
        self.mode.__enter__()

    def uninstall(self):
        if not self._active:
            return
        self._active = False
        for h in self._hooks:
            h.remove()
        self._hooks.clear()
        # Pop our mode only if it is on top (a program that left its own mode pushed keeps it;
        # ours then passes calls through because _active is False).
        try:
            n = torch._C._len_torch_function_stack()
            if n and torch._C._get_function_stack_at(n - 1) is self.mode:
                self.mode.__exit__(None, None, None)
        except Exception:
            pass

    # -- tensor identity -------------------------------------------------------------------
    def _dead(self, ref):
        ids = self._ids
        if ids.get(ref.key) is ref:
            del ids[ref.key]

    def _tid(self, t) -> int:
        r = self._ids.get(id(t))
        if r is not None and r() is t:
            return r.tid
        tid = self._next_tid
        self._next_tid = tid + 1
        r = _Ref(t, self._dead)
        r.tid = tid
        r.key = id(t)
        self._ids[id(t)] = r
        return tid

    def _storage(self, t, tid) -> int:
        b = t._base
        return tid if b is None else self._tid(b)

    def _full_ref(self, t, tid, v, sid) -> TensorRef:
        return TensorRef(id=tid, version=v, storage=sid, dtype=DTYPES.get(t.dtype, 0), shape=t.shape)

    # -- converters' tensor handlers ----------------------------------------------------------
    def _in_tensor(self, t, tensors):
        """An op input: defines its value first if the current frame does not know it."""
        tid = self._tid(t)
        v = t._version
        b = t._base
        sid = tid if b is None else self._tid(b)
        tensors.append((t, tid, v, sid))
        fr = self._frame
        if fr.known.get(tid) != v:
            if fr.written.get(sid) != v:
                ref = self._full_ref(t, tid, v, sid)
                self._define_external(t, ref)
                return Arg(tensor=ref)
            fr.known[tid] = v
        return Arg(tensor=TensorRef(id=tid, version=v, storage=sid))

    def _out_tensor(self, t, tensors):
        tid = self._tid(t)
        v = t._version
        b = t._base
        sid = tid if b is None else self._tid(b)
        tensors.append((t, tid, v, sid))
        return Arg(tensor=TensorRef(id=tid, version=v, storage=sid,
                                    dtype=DTYPES.get(t.dtype, 0), shape=t.shape))

    def _plain_ref(self, t, tensors):
        """A region input/output: full reference, no value written here."""
        return self._out_tensor(t, tensors)

    def _define_external(self, t, ref):
        """First read, in this frame, of a value no recorded op made: write its value."""
        p = self._params.get(id(t))
        if p is not None and p[0]() is t:
            self._write_value(t, ref, p[2], p[1])
        else:
            self._write_value(t, ref, CONSTANT, "")
        self._frame.known[ref.id] = ref.version
        self._const[ref.id] = ref.version

    def _write_value(self, t, ref, role, name="") -> int:
        """Queue TensorData record(s) with the value of `t`; returns the value's size in bytes."""
        with torch._C.DisableTorchFunction():
            try:
                d = t.detach()
                if d.device.type != "cpu":
                    d = d.cpu()
                if d.is_conj():
                    d = d.resolve_conj()
                if d.is_neg():
                    d = d.resolve_neg()
                arr = d.contiguous().reshape(-1).view(torch.uint8).numpy()
            except Exception as e:  # sparse, quantized, meta...: no dense value to record
                self._warn_once(("value", type(e).__name__, str(t.layout)),
                                f"ivytrace: cannot record the value of a {t.layout} {t.dtype} tensor: {e}")
                return 0
        total = arr.nbytes
        dtype = ref.dtype
        shape = ref.shape
        add = self.w.add
        if total <= CHUNK_BYTES:
            msg = TensorData(ref=ref, value=TensorMsg(dtype=dtype, shape=shape, data=arr.tobytes(),
                                                      name=name, role=role),
                             offset=0, total_bytes=total)
            add(TAG_TENSOR, msg.SerializeToString(), tensor_bytes=total)
            return total
        mv = memoryview(arr)
        for off in range(0, total, CHUNK_BYTES):
            chunk = bytes(mv[off:off + CHUNK_BYTES])
            msg = TensorData(ref=ref, value=TensorMsg(dtype=dtype, shape=shape, data=chunk,
                                                      name=name, role=role),
                             offset=off, total_bytes=total)
            add(TAG_TENSOR, msg.SerializeToString(), tensor_bytes=len(chunk))
            self.w.emit()  # bounded memory: do not queue several 64 MiB chunks
        return total

    # -- where the call came from ------------------------------------------------------------
    def _location(self):
        f = sys._getframe(1)
        internal = self._internal_code
        while f is not None:
            c = f.f_code
            r = internal.get(c)
            if r is None:
                r = internal[c] = is_internal_file(c.co_filename)
            if not r:
                return self._intern(c.co_filename), f.f_lineno
            f = f.f_back
        return 0, 0

    @property
    def _strings(self):
        """Interned id -> string (for messages; not on the hot path)."""
        return {i: s for s, i in self.w._strings.items()}

    def _scope_id(self) -> int:
        st = self._scopes.get(self._get_ident())
        return st[-1][2] if st else 0

    # -- the handler ------------------------------------------------------------------------
    def _classify(self, func):
        if _names.is_property_accessor(func):
            desc = func.__self__
            info = self._prop_info.get(id(desc))
            if info is None or info[4] is not desc:
                if func.__name__ != "__get__":
                    info = (_SKIP, 0, False, "", desc)
                else:
                    name, kind = _names.property_name_and_kind(desc)
                    info = (kind, self._intern(name) if kind != _SKIP else 0,
                            self._schemas.is_random(name), name, desc)
                self._prop_info[id(desc)] = info
            return info
        name = _names.name_of(func)
        kind = _names.kind_of(name)
        # Holding `func` keeps its id unique for as long as the entry exists.
        info = (kind, self._intern(name) if kind != _SKIP else 0, self._schemas.is_random(name), name, func)
        self._info[id(func)] = info
        return info

    def handle(self, func, types, args=(), kwargs=None):
        info = self._info.get(id(func))
        if info is None or info[4] is not func:
            info = self._classify(func)
        if kwargs is None:
            kwargs = {}
        kind = info[0]
        if kind or not self._active:
            if kind == _SKIP or not self._active:
                return func(*args, **kwargs)
            if kind == _SHAPE:
                return self._shape_read(info, func, args, kwargs)
            return self._guard(info, func, args, kwargs)

        ins = []
        conv = self._in.convert
        a_args = [conv(a, ins) for a in args]
        a_kwargs = [KwArg(name=k, value=conv(v, ins)) for k, v in kwargs.items()] if kwargs else None
        fid, line = self._location()
        start = self._clock()
        try:
            result = func(*args, **kwargs)
        except BaseException:
            end = self._clock()
            mutated = self._mutations(ins)
            m_refs = [TensorRef(id=tid, version=v, storage=sid) for _, tid, v, sid in mutated] if mutated else None
            ev = OpEvent(op=info[1], args=a_args, kwargs=a_kwargs, mutated=m_refs,
                         flags=RAISED | (INPLACE if mutated else 0) | (RANDOM if info[2] else 0),
                         file=fid, line=line, scope=self._scope_id(), thread=self._get_ident(),
                         start_ns=start - self._t0, duration_ns=end - start)
            self.w.emit(TAG_OP, ev.SerializeToString(), op=True)
            raise
        end = self._clock()
        self._record(info, ins, a_args, a_kwargs, result, fid, line, start, end)
        return result

    __torch_function__ = handle

    def _mutations(self, ins):
        mutated = None
        fr = self._frame
        seen = None
        for t, tid, v, sid in ins:
            nv = t._version
            if nv != v:
                if seen is None:
                    seen = set()
                    mutated = []
                if tid in seen:
                    continue
                seen.add(tid)
                mutated.append((t, tid, nv, sid))
                fr.known[tid] = nv
                fr.written[sid] = nv
        return mutated

    def _record(self, info, ins, a_args, a_kwargs, result, fid, line, start, end):
        outs = []
        a_result = self._out.convert(result, outs)
        mutated = self._mutations(ins)
        random = info[2]
        flags = RANDOM if random else 0
        m_refs = None
        if mutated:
            flags |= INPLACE
            m_refs = [TensorRef(id=tid, version=v, storage=sid) for _, tid, v, sid in mutated]
            outs.extend(mutated)
        known = self._frame.known
        const = self._const
        if random:
            foldable = False
        else:
            foldable = True
            for t, tid, v, sid in ins:
                if const.get(tid) != v:
                    foldable = False
                    break
        values = None
        if foldable and outs:
            # Every input is a constant: record the outputs so the graph can cache them.
            if all(t.numel() * t.element_size() <= FOLD_LIMIT for t, _, _, _ in outs):
                flags |= FOLDABLE_OP
                values = FOLDABLE
        elif random and outs:
            values = RANDOM_OUTPUT
        for t, tid, v, sid in outs:
            known[tid] = v
            if foldable:
                const[tid] = v
            elif tid in const:
                del const[tid]
        ev = OpEvent(op=info[1], args=a_args, kwargs=a_kwargs, result=a_result, mutated=m_refs,
                     flags=flags, file=fid, line=line, scope=self._scope_id(), thread=self._get_ident(),
                     start_ns=start - self._t0, duration_ns=end - start)
        if values is None:
            self.w.emit(TAG_OP, ev.SerializeToString(), op=True)
            return
        self.w.add(TAG_OP, ev.SerializeToString(), op=True)
        done = set()
        for t, tid, v, sid in outs:
            if tid not in done:
                done.add(tid)
                self._write_value(t, self._full_ref(t, tid, v, sid), values)
        self.w.emit()

    # -- shape reads and guards ---------------------------------------------------------------
    def _shape_read(self, info, func, args, kwargs):
        result = func(*args, **kwargs)
        t = args[0] if args else None
        if isinstance(t, _Tensor):
            tid = self._tid(t)
            fid, line = self._location()
            msg = trace_pb2.ShapeRead(
                tensor=TensorRef(id=tid, version=t._version, storage=self._storage(t, tid)),
                op=info[1], value=self._ref.convert(result, []), file=fid, line=line)
            self.w.emit(TAG_SHAPE_READ, msg.SerializeToString())
        return result

    def _guard(self, info, func, args, kwargs):
        result = func(*args, **kwargs)
        t = args[0] if args else None
        if not isinstance(t, _Tensor):
            return result
        ref = self._in_tensor(t, []).tensor   # defines the value if no op made it
        fid, line = self._location()
        msg = trace_pb2.GuardEvent(tensor=ref, op=info[1], value=self._ref.convert(_guard_value(result), []),
                                   file=fid, line=line, region=self._regions[-1] if self._regions else 0)
        self.w.emit(TAG_GUARD, msg.SerializeToString())
        if self.session.warn_guards:
            site = (fid, line, info[1])
            if site not in self._warned_sites:
                self._warned_sites.add(site)
                where = f"{self._strings.get(fid, '?')}:{line}" if fid else "<unknown location>"
                warnings.warn(f"ivytrace: this graph is specialized on the value of {info[3]} at {where}",
                              SpecializationWarning, stacklevel=3)
        return result

    def _warn_once(self, key, message):
        if key not in self._warned_sites:
            self._warned_sites.add(key)
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
            st.append((module, self.register_root(module), 0, ""))
            return None
        parent = st[-1]
        qn = parent[1].get(id(module))
        if qn is None:  # a module the root does not own (e.g. kept in a plain list)
            ps = parent[3]
            qn = f"{ps}.{type(module).__name__}" if ps else type(module).__name__
        st.append((module, parent[1], self._intern(qn) if qn else 0, qn))
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

    # -- regions ----------------------------------------------------------------------------
    def region_begin(self, name, inputs, file="", line=0) -> int:
        """Write RegionBegin (inputs: list of (name, value)) and REGION_INPUT values."""
        if self._get_ident() != self._thread or not self._active:
            return 0
        with torch._C.DisableTorchFunction():
            rid = self._next_region
            self._next_region += 1
            tensors = []
            named = [NamedArg(name=n, value=self._ref.convert(v, tensors)) for n, v in inputs]
            fid = self._intern(file) if file else 0
            msg = trace_pb2.RegionBegin(region=rid, name=name, inputs=named, file=fid, line=line)
            self.w.add(TAG_REGION_BEGIN, msg.SerializeToString())
            self._frames.append(self._frame)
            self._frame = fr = _Frame()
            self._regions.append(rid)
            done = set()
            for t, tid, v, sid in tensors:
                if tid in done:
                    continue
                done.add(tid)
                fr.known[tid] = v
                fr.inputs[tid] = v
                self._const.pop(tid, None)
                self._write_value(t, self._full_ref(t, tid, v, sid), REGION_INPUT)
            self.w.emit()
            return rid

    def region_end(self, rid, result=None, raised=False):
        if not rid or rid not in self._regions:
            return
        with torch._C.DisableTorchFunction():
            tensors = []
            msg = trace_pb2.RegionEnd(region=rid, raised=raised)
            if not raised:
                msg.result.CopyFrom(self._ref.convert(result, tensors))
                fr = self._frame
                for t, tid, v, sid in tensors:
                    if fr.known.get(tid) != v and fr.written.get(sid) != v:
                        self._define_external(t, self._full_ref(t, tid, v, sid))
            self.w.add(TAG_REGION_END, msg.SerializeToString())
            done = set()
            for t, tid, v, sid in tensors:
                if tid not in done:
                    done.add(tid)
                    self._write_value(t, self._full_ref(t, tid, v, sid), REGION_OUTPUT)
            self.w.emit()
            # Close `rid` (and any region left open inside it): what a region computed is known
            # to the enclosing frame too.
            while self._regions:
                top = self._regions.pop()
                inner = self._frame
                outer = self._frame = self._frames.pop()
                inputs = inner.inputs
                for tid, v in inner.known.items():
                    if inputs.get(tid) != v:   # a region input is not defined in the outer frame
                        outer.known[tid] = v
                outer.written.update(inner.written)
                if top == rid:
                    break


def _guard_value(v):
    """What Python saw, as something ArgConverter can write (arrays as nested lists)."""
    if type(v).__module__ == "numpy" and hasattr(v, "tolist"):
        if getattr(v, "size", 0) > 65536:
            return v  # written as opaque: too large to keep in a guard
        return v.tolist()
    return v


class _Converter(ArgConverter):
    """ArgConverter with torch types; tensors go to `tensor_handler(t, tensors)`."""

    def __init__(self, tensor_handler):
        super().__init__()
        self._tensor = tensor_handler
        t = self.table
        t[torch.Tensor] = tensor_handler
        t[torch.nn.Parameter] = tensor_handler
        t[torch.Size] = self._tuple
        t[torch.dtype] = self._dtype
        t[torch.device] = lambda v, ts: Arg(device=str(v))
        t[torch.memory_format] = lambda v, ts: Arg(symbol=str(v))
        t[torch.layout] = lambda v, ts: Arg(symbol=str(v))

    def _subclass_handlers(self):
        return [(torch.Tensor, self._tensor)]

    @staticmethod
    def _dtype(v, ts):
        e = DTYPES.get(v)
        return Arg(dtype=e) if e is not None else Arg(symbol=str(v))
