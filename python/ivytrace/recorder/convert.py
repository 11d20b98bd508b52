"""Conversions between torch and NumPy in a mixed program, recorded as ops that join the graphs.

When both recorders are attached, each of these calls is one OpEvent whose argument is a tensor
reference of one framework and whose result is a tensor reference of the other, so the graph
builder connects the two sides and a replay follows the data through the conversion:

    t.numpy(), t.__array__()                -> "torch.Tensor.numpy" / "torch.Tensor.__array__"
    np.asarray(t), np.array(t), ...         -> "numpy.asarray" / "numpy.array" / ... (a torch input)
    torch.from_numpy(a), torch.as_tensor(a),
    torch.asarray(a), torch.tensor(a)       -> the torch name (a recorded NumPy input)

Tensor ids come from one sequence (NumpyRecorder._new_id), so references of the two recorders
never collide. The array handed back by a conversion to NumPy is a recorded array: NumPy calls on
it are recorded, and bool()/float()/.item() on it are NumPy guards. With NumPy not recorded,
t.numpy() stays a guard, as before.

Memory shared across a conversion (t.numpy(), torch.from_numpy(a), np.asarray(t) and
torch.as_tensor(a) when they do not copy) is followed, for writes the recorders see:
  * a recorded NumPy write to the array's memory (out=, a += 1, a[i] = v) bumps the tensor's
    torch version counter and records `t' = torch.from_numpy(a')`, so later torch reads of t read
    the written value;
  * a recorded torch write to the tensor (t.add_(1)) is noticed when NumPy next reads the array:
    the NumPy version of its memory goes up and `a' = torch.Tensor.numpy(t')` is recorded first.
Limits: only the converted tensor and array themselves are re-made; another view of the same
memory, made before the write on the other side, is not (reading it is a builder error, not a
wrong graph). Writes neither recorder sees (through ctypes, a plain ndarray view) are not followed.
"""
from __future__ import annotations

from builtins import len  # the builtin itself: while recording, builtins.len is sym._len (one Python call more)

import sys
import threading
import time
import weakref

import numpy as np
import torch
from torch.autograd.graph import increment_version

from ivytrace.recorder import numpy_recorder as _npr
from ivytrace.recorder import opevent as _op
from ivytrace.recorder.writer import _user_location

TO_NUMPY = frozenset({"torch.Tensor.numpy", "torch.Tensor.__array__"})
FROM_NUMPY = frozenset({"torch.from_numpy", "torch.as_tensor", "torch.asarray", "torch.tensor"})


class _Link:
    """A tensor and an array that share memory since a conversion."""
    __slots__ = ("tensor", "array", "version")

    def __init__(self, t, a):
        self.tensor = weakref.ref(t)
        self.array = weakref.ref(a)
        self.version = t._version   # the tensor's torch version the array is known to match


def _data_ptr(a) -> int:
    return a.__array_interface__["data"][0]


def _numpy_recorder(session):
    n = session.numpy
    return n if n is not None and n.active and threading.get_ident() == n.thread else None


def _write_op(session, name, args, result, start, end, kwargs=()):
    """One OpEvent: `args`/`result` are encoded Arg bytes, `kwargs` (name, Arg bytes) pairs."""
    w = session.writer
    parts = [_op.op_field(w.intern(name))]
    parts.extend(_op.arg_field(a) for a in args)
    for k, a in kwargs:
        parts.append(_op.kwarg_field(k, a))
    parts.append(_op.result_field(result))
    file, line = _user_location()
    parts.append(_op.tail(0, w.intern(file) if file else 0, line, threading.get_ident(),
                          max(0, start - session.t0), max(0, end - start)))
    _op.write_op(w, parts)
    w.emit()


def _numpy_known(nrec, outs):
    for a, tid, sid, v in outs:
        nrec._known[tid] = v
        nrec._const.pop(tid, None)


def _torch_known(trec, outs):
    known = trec._frame.known
    for t, r, v in outs:
        known[r[1]] = v
        trec._const.pop(r[1], None)


def _link(nrec, t, a):
    sid = nrec._ref(a)[1]
    links = nrec._links
    links.setdefault(sid, []).append(_Link(t, a))
    if len(links) > getattr(nrec, "_links_sweep_at", 1024):
        # Drop conversions whose tensor or array is gone, once the table has doubled.
        for k in list(links):
            alive = [x for x in links[k] if x.tensor() is not None and x.array() is not None]
            if alive:
                links[k] = alive
            else:
                del links[k]
        nrec._links_sweep_at = max(2 * len(links), 1024)


# -- calls the torch recorder sees ------------------------------------------------------------
def _call_to_numpy(rec, nrec, t, name, t_arg, rest, kw, call, *, empty_links):
    """Makes a tensor -> array conversion `call()` and records it as op `name` (in `rec`'s session)
    whose result is a recorded array; links the array to `t` when they share memory (an empty
    array only when `empty_links`). A result that is not an array is returned as it is."""
    start = time.perf_counter_ns()
    result = call()
    end = time.perf_counter_ns()
    if type(result) is not np.ndarray:
        return result
    arr = result.view(_npr.TracedArray)
    outs = []
    out = nrec._enc_out_tensor(arr, outs)
    _numpy_known(nrec, outs)
    _write_op(rec.session, name, [t_arg] + rest, out, start, end, kw)
    if t.device.type == "cpu" and _data_ptr(result) == t.data_ptr() and (empty_links or result.nbytes):
        _link(nrec, t, arr)
    return arr


def torch_call(trec, info, func, args, kwargs, invoke):
    name = info[3]
    nrec = _numpy_recorder(trec.session)
    if name in TO_NUMPY:
        t = args[0] if args else None
        if nrec is None or _npr._busy() or not isinstance(t, torch.Tensor):
            return True, trec._guard(info, func, args, kwargs, invoke)
        return True, _to_numpy(trec, nrec, name, func, args, kwargs, invoke)
    a = args[0] if args else None
    if nrec is None or not isinstance(a, _npr.TracedArray):
        return False, None
    return True, _from_numpy(trec, nrec, name, func, args, kwargs, invoke)


def _to_numpy(trec, nrec, name, func, args, kwargs, invoke):
    t = args[0]
    with _npr._Busy():
        t_arg = trec._in_tensor(t, [])          # t's value first if no recorded op made it
        rest = [trec._in.encode(x, []) for x in args[1:]]
        kw = [(k, trec._in.encode(v, [])) for k, v in kwargs.items()]
        return _call_to_numpy(trec, nrec, t, name, t_arg, rest, kw,
                              lambda: func(*args, **kwargs) if invoke is None else invoke(func, args, kwargs),
                              empty_links=True)


def _from_numpy(trec, nrec, name, func, args, kwargs, invoke):
    a = args[0]
    with _npr._Busy():
        a_arg = nrec._enc_in(a, [])             # a's value first if no recorded op made it
        rest = [trec._in.encode(x, []) for x in args[1:]]
        kw = [(k, trec._in.encode(v, [])) for k, v in kwargs.items()]
        plain = a.view(np.ndarray)
        call_args = (plain,) + tuple(args[1:])
        start = time.perf_counter_ns()
        result = func(*call_args, **kwargs) if invoke is None else invoke(func, call_args, kwargs)
        end = time.perf_counter_ns()
        if not isinstance(result, torch.Tensor):
            return result
        outs = []
        with torch._C.DisableTorchFunction():
            out = trec._out_tensor(result, outs)
            shares = result.device.type == "cpu" and result.data_ptr() == _data_ptr(plain) and plain.nbytes
        _torch_known(trec, outs)
        _write_op(trec.session, name, [a_arg] + rest, out, start, end, kw)
        if shares:
            _link(nrec, result, a)
    return result


# -- calls the NumPy recorder sees ------------------------------------------------------------
def is_torch_tensor(v) -> bool:
    t = sys.modules.get("torch")
    return t is not None and isinstance(v, t.Tensor)


def numpy_from_torch(nrec, name, orig, args, kwargs):
    """np.asarray(t), np.array(t, dtype), ...: a conversion op from the torch tensor `args[0]`."""
    trec = nrec.session.torch
    t = args[0]
    if trec is None or not trec._active or threading.get_ident() != trec._thread:
        return nrec.record(name, orig, args, kwargs, _npr._plain(args), _npr._plain(kwargs), None)
    with torch._C.DisableTorchFunction(), _npr._Busy():
        t_arg = trec._in_tensor(t, [])
        rest = [nrec._enc.encode(x, []) for x in args[1:]]
        kw = [(k, nrec._enc.encode(v, [])) for k, v in kwargs.items()]
        return _call_to_numpy(nrec, nrec, t, name, t_arg, rest, kw, lambda: orig(*args, **kwargs),
                              empty_links=False)


# -- memory shared across a conversion ----------------------------------------------------------
def after_numpy_write(nrec, sids):
    """NumPy wrote storages `sids`: re-make each tensor that shares one of them."""
    trec = nrec.session.torch
    if trec is None or not trec._active:
        return
    for sid in sids:
        for link in nrec._links.get(sid, ()):
            t, a = link.tensor(), link.array()
            if t is None or a is None:
                continue
            with torch._C.DisableTorchFunction(), _npr._Busy():
                start = time.perf_counter_ns()
                increment_version(t)   # torch reads of t after this see the written value
                link.version = t._version
                a_arg = nrec._enc_in(a, [])
                outs = []
                out = trec._out_tensor(t, outs)
                for tt, r, v in outs:
                    trec._frame.written[r[2]] = v
                _torch_known(trec, outs)
                _write_op(nrec.session, "torch.from_numpy", [a_arg], out, start, time.perf_counter_ns())


def before_numpy_read(nrec, links):
    """NumPy is about to read memory shared with tensors: re-make the array from each tensor that
    torch wrote since (its version counter moved). Returns whether anything was re-made."""
    trec = nrec.session.torch
    if trec is None or not trec._active:
        return False
    remade = False
    for link in links:
        t, a = link.tensor(), link.array()
        if t is None or a is None:
            continue
        with torch._C.DisableTorchFunction():
            tv = t._version
        if tv == link.version:
            continue
        link.version = tv
        with torch._C.DisableTorchFunction(), _npr._Busy():
            start = time.perf_counter_ns()
            t_arg = trec._in_tensor(t, [])
            tid, sid, v = nrec._ref(a)
            nrec._versions[sid] = v + 1
            outs = []
            out = nrec._enc_out_tensor(a, outs)
            _numpy_known(nrec, outs)
            _write_op(nrec.session, "torch.Tensor.numpy", [t_arg], out, start, time.perf_counter_ns())
        remade = True
    return remade


# -- both recorders in one session --------------------------------------------------------------
def connect(session):
    """Both recorders are attached: one id sequence, and each one's encoders write the other's
    arrays as references (region results, guard values that hold both)."""
    trec, nrec = session.torch, session.numpy
    trec._next_tid = max(trec._next_tid, nrec._next)
    _npr._convert_mod = sys.modules[__name__]

    def numpy_ref(a, ts):
        with _npr._Busy():
            return nrec._enc_out_tensor(a, [])

    def torch_ref(t, ts):
        with torch._C.DisableTorchFunction():
            return trec._out_tensor(t, [])

    trec._ref.table[_npr.TracedArray] = numpy_ref
    nrec._enc_out.table[torch.Tensor] = torch_ref
    nrec._enc_out.table[torch.nn.Parameter] = torch_ref

    # torch.from_numpy does not go through __torch_function__ (torch.as_tensor, torch.tensor and
    # torch.asarray do), so the module attribute is wrapped while recording, as the NumPy
    # recorder wraps np.array. (`from torch import from_numpy` before recording starts keeps the
    # original: such calls are not recorded, and their tensors become constants.)
    orig = torch.from_numpy
    if getattr(orig, "__ivytrace_original__", None) is not None:
        return

    def from_numpy(a):
        t, n = session.torch, _numpy_recorder(session)
        if (n is None or t is None or not t._active or session.stopped or _npr._busy()
                or not isinstance(a, _npr.TracedArray) or threading.get_ident() != t._thread):
            return orig(a)
        return _from_numpy(t, n, "torch.from_numpy", orig, (a,), {}, None)

    from_numpy.__ivytrace_original__ = orig
    from_numpy.__doc__ = orig.__doc__
    torch.from_numpy = from_numpy
    session._restore_from_numpy = orig


def disconnect(session):
    """Recording stopped: put torch.from_numpy back."""
    orig = getattr(session, "_restore_from_numpy", None)
    if orig is not None and getattr(torch.from_numpy, "__ivytrace_original__", None) is orig:
        torch.from_numpy = orig
    session._restore_from_numpy = None


def push_frames(session, opened_by):
    """A region opened by one recorder: the other starts a fresh frame too, so values from
    outside the region that it reads are recorded (as constants) inside it."""
    if opened_by == "torch" and session.numpy is not None:
        n = session.numpy
        n._frames.append((n._known, n._inputs))
        n._known, n._inputs = {}, {}
        return "numpy"
    if opened_by == "numpy" and session.torch is not None:
        from ivytrace.recorder.torch_recorder import _Frame
        t = session.torch
        t._frames.append(t._frame)
        t._frame = _Frame()
        return "torch"
    return None


def pop_frames(session, pushed):
    """Close a frame push_frames opened: what the region computed is known outside it."""
    if pushed == "numpy" and session.numpy is not None and session.numpy._frames:
        n = session.numpy
        inner = n._known
        n._known, n._inputs = n._frames.pop()
        n._known.update(inner)
    elif pushed == "torch" and session.torch is not None and session.torch._frames:
        t = session.torch
        inner = t._frame
        t._frame = t._frames.pop()
        t._frame.known.update(inner.known)
        t._frame.written.update(inner.written)
