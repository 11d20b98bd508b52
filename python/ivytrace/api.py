"""The public API: trace_graph, Graph, LazyGraph, freeze, graph_of.

trace_graph records `fn` once under the recorder (one region named after fn), runs the CLI to
export the region as a plan, loads the plan and hands back a Graph that replays it. Several
callables give a tuple of graphs; a Python module a copy with its functions lazily traced; a
torch.nn.Module comes back itself with its forward replaced by a Graph whose plan takes the
module's parameters and buffers as inputs, read live on every call (`freeze` bakes them in).
Python ints among a torch call's arguments are symbolic inputs unless named static.

A Graph replays one or more *specializations*: each is a plan with the guards of the run it came
from (shape-derived values that decided control flow, tensor values read by Python, input ranks).
A replay that fails a guard raises GuardError, or, for a LazyGraph and a Graph made with
`retrace=True`, traces again and keeps the new specialization beside the others (at most
`max_traces`), with a RetraceWarning naming the guard, as torch.compile does on a recompile.

What the call returned keeps its structure (tuples, lists, dicts, namedtuples, dataclasses,
transformers' ModelOutput). State the call wrote is written again after every replay: buffers and
parameters of a traced module written in place (BatchNorm's running statistics in train mode), and
tensor attributes and attribute assignments of the objects named by `stateful`,
`arg_stateful_idxs` and `kwarg_stateful_idxs`.

This module imports no framework: torch is looked up only when the program has imported it.
"""
from __future__ import annotations

import collections.abc
import copy
import dataclasses
import dis
import inspect
import logging
import os
import shutil
import sys
import tempfile
import types
import warnings
import weakref

from ivytrace.cli_bin import CLIError, run_cli, supports_flag
from ivytrace.recorder.recorder import Recorder, _has_jax_array, _has_ndarray, _has_torch_tensor
from ivytrace.region import bind_inputs, signature_of
from ivytrace.runtime.errors import GuardError
from ivytrace.runtime.plan import load_plan


class RetraceWarning(UserWarning):
    """A graph traced the function again: every specialization it had failed a guard."""


class StateWarning(UserWarning):
    """The traced call changed state that the replay cannot write back."""


# How many times a traced call changed state that its replay does not write back (each one a
# StateWarning): a batch-of-1 probe, which calls the function again, is not made after one.
_unreplayed_state = [0]


def _warn_unreplayed_state(message):
    _unreplayed_state[0] += 1
    warnings.warn(message, StateWarning, stacklevel=_user_level()[0])


class _ModeGuardError(GuardError):
    """A traced module's train()/eval() mode is not the one it was traced in: a traced module
    traces again in the new mode whatever `retrace` says (the mode is the module's, not the
    call's)."""


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_TORCH_NN = os.sep + os.path.join("torch", "nn", "")


def _user_level():
    """(warnings stacklevel, frame) of the user's code that led to the caller of this function:
    the first frame outside ivytrace and torch.nn's module call machinery."""
    level, f = 1, sys._getframe(1)
    while f.f_back is not None and (f.f_code.co_filename.startswith(_PACKAGE_DIR)
                                    or _TORCH_NN in f.f_code.co_filename):
        f = f.f_back
        level += 1
    return level, f


def _torch():
    return sys.modules.get("torch")


def _is_torch_module(obj) -> bool:
    torch = _torch()
    return torch is not None and isinstance(obj, torch.nn.Module)


def _name_of(fn) -> str:
    if _is_torch_module(fn):
        return type(fn).__name__
    return getattr(fn, "__name__", None) or type(fn).__name__


def _is_array(v) -> bool:
    for mod, attr in (("torch", "Tensor"), ("numpy", "ndarray"), ("jax", "Array")):
        m = sys.modules.get(mod)
        cls = getattr(m, attr, None) if m is not None else None
        if cls is not None and isinstance(v, cls):
            return True
    return False


# -- output structure -------------------------------------------------------------------------
# The region's result is written as a tree of tuples, lists and str-keyed dicts over arrays and
# Python values; `_flatten` turns the function's result into such a tree plus a spec of the
# containers it came in, and `_rebuild` puts a replay's tree back into them.

def _flatten(v, where="the result"):
    t = type(v)
    if _is_array(v) or v is None or t in (bool, int, float, complex, str, bytes):
        return v, None
    if t in (tuple, list):
        items = [_flatten(x, f"{where}[{i}]") for i, x in enumerate(v)]
        return t(x for x, _ in items), (t, [s for _, s in items])
    if isinstance(v, tuple) and hasattr(t, "_fields"):   # a namedtuple
        items = [_flatten(x, f"{where}.{f}") for f, x in zip(t._fields, v)]
        return tuple(x for x, _ in items), ("namedtuple", t, [s for _, s in items])
    if dataclasses.is_dataclass(v) and isinstance(v, dict):   # transformers' ModelOutput
        keys = [k for k in v.keys() if isinstance(k, str)]
        items = [_flatten(v[k], f"{where}.{k}") for k in keys]
        return {k: x for k, (x, _) in zip(keys, items)}, ("modeloutput", t, keys, [s for _, s in items])
    if isinstance(v, dict):
        if not all(isinstance(k, str) for k in v):
            if any(_holds_array(x) for x in v.values()):
                raise TypeError(f"ivytrace: {where} is a dict with non-string keys holding arrays; "
                                f"the replay cannot rebuild it (return a dict with string keys)")
            return v, None
        keys = list(v.keys())
        items = [_flatten(v[k], f"{where}[{k!r}]") for k in keys]
        return {k: x for k, (x, _) in zip(keys, items)}, (t, keys, [s for _, s in items])
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        fields = [f.name for f in dataclasses.fields(v)]
        items = [_flatten(getattr(v, f), f"{where}.{f}") for f in fields]
        return {f: x for f, (x, _) in zip(fields, items)}, ("dataclass", t, fields, [s for _, s in items])
    if _holds_array(v) and not _is_torch_module(v):
        # Any other object holding arrays in its attributes (a transformers cache, whose layers
        # hold the keys and values): the replay returns a shallow copy of the traced object with
        # those attributes rebuilt from its own results. The template keeps no traced array.
        d = _attr_dict(v)
        keys = [a for a, x in d.items() if _holds_array(x)]
        items = [_flatten(d[a], f"{where}.{a}") for a in keys]
        template = copy.copy(v)
        for a in keys:
            object.__setattr__(template, a, None)
        return {a: x for a, (x, _) in zip(keys, items)}, ("object", template, keys, [s for _, s in items])
    return v, None   # any other Python value comes back as it was when traced


def _leaves(v):
    """The arrays of a flattened result tree (tuples, lists, dicts)."""
    if isinstance(v, (tuple, list)):
        for x in v:
            yield from _leaves(x)
    elif isinstance(v, dict):
        for x in v.values():
            yield from _leaves(x)
    elif _is_array(v):
        yield v


def _holds_array(v, depth=0) -> bool:
    if _is_array(v):
        return True
    if depth > 4:
        return False
    if isinstance(v, (list, tuple)):
        return any(_holds_array(x, depth + 1) for x in v)
    if isinstance(v, dict):
        return any(_holds_array(x, depth + 1) for x in v.values())
    # An object's attributes (__dict__ and __slots__), also through lists of objects (a
    # transformers cache's layers); not a torch module's (returned as it is: the live module,
    # whose tensors are its state).
    if isinstance(v, (type, types.ModuleType)) or _is_torch_module(v):
        return False
    d = _attr_dict(v)
    return d is not None and any(_holds_array(x, depth + 1) for x in d.values())


def _rebuild(spec, v):
    if spec is None:
        return v
    kind = spec[0]
    if kind is tuple or kind is list:
        return kind(_rebuild(s, x) for s, x in zip(spec[1], v))
    if kind == "namedtuple":
        return spec[1](*(_rebuild(s, x) for s, x in zip(spec[2], v)))
    if kind == "modeloutput":
        return spec[1](**{k: _rebuild(s, v[k]) for k, s in zip(spec[2], spec[3])})
    if kind == "dataclass":
        return spec[1](**{f: _rebuild(s, v[f]) for f, s in zip(spec[2], spec[3])})
    if kind == "object":
        o = copy.copy(spec[1])
        for a, s in zip(spec[2], spec[3]):
            object.__setattr__(o, a, _rebuild(s, v[a]))   # also a slot; no __setattr__ hook runs
        return o
    cls, keys, subs = spec
    out = {k: _rebuild(s, v[k]) for k, s in zip(keys, subs)}
    return out if cls is dict else cls(out)


def _plain_arrays(v):
    """Recorded NumPy arrays handed back to the caller as plain ndarrays."""
    np = sys.modules.get("numpy")
    if np is None:
        return v
    if isinstance(v, np.ndarray) and type(v) is not np.ndarray:
        return v.view(np.ndarray)
    if type(v) in (list, tuple):
        return type(v)(_plain_arrays(x) for x in v)
    if type(v) is dict:
        return {k: _plain_arrays(x) for k, x in v.items()}
    return v


# -- state ------------------------------------------------------------------------------------
@dataclasses.dataclass
class _StateSlot:
    """Where a piece of state lives on replay: object `which` (an index path into the call's
    positional arguments, a keyword name, or a fixed object) and its attribute or module tensor."""
    which: object           # ("arg", path) | ("kwarg", name, path) | ("fixed", obj[, label])
    attr: object            # attribute name, a module's qualified buffer/parameter name, or a key
    module_tensor: bool = False
    item: bool = False      # owner[attr] rather than getattr (a global, a dict or list item)
    in_place: bool = False  # set() copies into the torch tensor there (the call wrote it in place)
    _sub: object = dataclasses.field(default=None, repr=False, compare=False)
    _leaf: str = dataclasses.field(default="", repr=False, compare=False)

    def owner(self, args, kwargs):
        kind = self.which[0]
        if kind == "fixed":
            return self.which[1]
        if kind == "arg":
            obj = args
            path = self.which[1]
        else:
            obj = kwargs[self.which[1]]
            path = self.which[2]
        return _follow(obj, path)

    def get(self, args, kwargs):
        if self.module_tensor and self.which[0] == "fixed":
            # A traced module's parameters and buffers, read on every replay: the submodule is
            # looked up once (a submodule replaced after tracing is not seen), the tensor each
            # time (a parameter replaced by assignment is).
            if self._sub is None:
                mod_name, _, self._leaf = self.attr.rpartition(".")
                o = self.which[1]
                self._sub = o.get_submodule(mod_name) if mod_name else o
            # The module's own tables first: getattr goes through Module.__getattr__ in Python.
            sub, leaf = self._sub, self._leaf
            t = sub._parameters.get(leaf, _NOT_THERE)
            if t is _NOT_THERE:
                t = sub._buffers.get(leaf, _NOT_THERE)
            return getattr(sub, leaf) if t is _NOT_THERE else t
        o = self.owner(args, kwargs)
        if self.item:
            return o[self.attr]
        return _module_tensor(o, self.attr) if self.module_tensor else getattr(o, self.attr)

    def set(self, args, kwargs, value):
        o = self.owner(args, kwargs)
        if self.in_place:
            with _torch().no_grad():
                self.get(args, kwargs).copy_(value)
        elif self.item:
            o[self.attr] = value
        elif self.module_tensor:
            torch = _torch()
            live = _module_tensor(o, self.attr)
            with torch.no_grad():
                live.copy_(value)
        else:
            setattr(o, self.attr, value)


_NOT_THERE = object()


def _module_tensor(module, qualified):
    mod_name, _, leaf = qualified.rpartition(".")
    m = module.get_submodule(mod_name) if mod_name else module
    return getattr(m, leaf)


def _stateful_objects(fn, args, kwargs, stateful, arg_idxs, kwarg_idxs):
    """[(_StateSlot.which, object)] for every object the caller declared stateful."""
    out = []
    for obj in stateful or ():
        out.append((("fixed", obj), obj))
    for idx in arg_idxs or ():
        path = list(idx) if isinstance(idx, (list, tuple)) else [idx]
        out.append((("arg", path), _follow(args, path)))
    for idx in kwarg_idxs or ():
        if isinstance(idx, (list, tuple)):
            name, path = idx[0], list(idx[1:])
        else:
            name, path = idx, []
        out.append((("kwarg", name, path), _follow(kwargs[name], path)))
    return out


def _holder(which, args, kwargs):
    if which[0] == "fixed":
        return which[1]
    return _follow(args, which[1]) if which[0] == "arg" else _follow(kwargs[which[1]], which[2])


def _holder_name(which, arg_names):
    if which[0] == "fixed":
        return which[2] if len(which) > 2 else type(which[1]).__qualname__
    if which[0] == "arg":
        head, path = which[1][0], which[1][1:]
        head = arg_names[head] if isinstance(head, int) and head < len(arg_names) else f"argument {head}"
    else:
        head, path = which[1], which[2]
    return head + "".join(f".{i}" if isinstance(i, _Attr) else f"[{i!r}]" for i in path)


def _argument_modules(args, kwargs, fn):
    """(holder, module) for each torch module among the call's arguments, at the top level or in
    tuples, lists and dicts of them (not the traced module itself)."""
    found = []

    def walk(v, which, path, depth):
        if depth > 4:
            return
        if _is_torch_module(v):
            if v is not fn:
                found.append((which(path), v))
        elif isinstance(v, (tuple, list)):
            for i, x in enumerate(v):
                walk(x, which, path + [i], depth + 1)
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(x, which, path + [k], depth + 1)

    for i, v in enumerate(args):
        walk(v, lambda p: ("arg", p), [i], 0)
    for k, v in kwargs.items():
        walk(v, lambda p, k=k: ("kwarg", k, p), [], 0)
    return found


class _Attr(str):
    """A step of a state path that reads an attribute (`cache.layers`), where the others index."""
    __slots__ = ()


def _follow(obj, path):
    for i in path:
        obj = getattr(obj, i) if isinstance(i, _Attr) else obj[i]
    return obj


_PLAIN_SCALARS = (bool, int, float, complex, str, bytes)


def _argument_objects(args, kwargs, declared):
    """The objects among the call's arguments whose attributes hold arrays (a dataclass of
    tensors, a transformers cache's layers), as ("arg", path) / ("kwarg", name, path) holders.

    The plan reads arrays from tuples, lists and dicts of its arguments; an array in an object's
    attribute would otherwise be read once, when traced, and baked into the graph as a constant,
    so a call with another object would silently compute with the traced one's values. These
    objects are state the replay reads live (and writes back, as eager code mutates them: a
    decoding step's `cache.update` assigns each layer's longer keys and values)."""
    found = []
    seen = set(declared)

    def walk(v, which, path, depth):
        if depth > 8 or _is_array(v) or v is None or type(v) in _PLAIN_SCALARS or isinstance(v, type) \
                or _is_torch_module(v) or id(v) in seen:
            return
        if isinstance(v, (tuple, list)):
            for i, x in enumerate(v):
                walk(x, which, path + [i], depth + 1)
            return
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, which, path + [k], depth + 1)
            return
        d = _attr_dict(v)
        if d is None or not _holds_array(v):
            return
        seen.add(id(v))
        if any(_is_array(x) for x in d.values()):
            found.append(which(path))
        for a, x in d.items():
            if not _is_array(x):
                walk(x, which, path + [_Attr(a)], depth + 1)

    for i, v in enumerate(args):
        walk(v, lambda p: ("arg", p), [i], 0)
    for k, v in kwargs.items():
        walk(v, lambda p, k=k: ("kwarg", k, p), [], 0)
    return found


def _attrs(obj) -> dict:
    d = _attr_dict(obj)
    if d is not None:
        return d
    if isinstance(obj, dict):
        return dict(obj)
    return {}


def _attr_dict(v):
    """{attribute: value} of an object's __dict__ and __slots__ (a slot never set is left out),
    or None for an object with neither (a number, a dict, a builtin)."""
    if type(v).__module__.startswith("ivytrace."):   # a symbolic number's recorder, a Graph
        return None
    d = getattr(v, "__dict__", None)
    out = dict(d) if isinstance(d, dict) else None
    if type(v).__module__ == "builtins" or isinstance(v, type):
        return out
    for cls in type(v).__mro__[:-1]:
        slots = cls.__dict__.get("__slots__", ())
        for a in (slots,) if isinstance(slots, str) else slots:
            if a in ("__dict__", "__weakref__"):
                continue
            try:
                x = getattr(v, a)
            except AttributeError:   # a slot never assigned
                continue
            if out is None:
                out = {}
            out.setdefault(a, x)
    return out


# -- specializations --------------------------------------------------------------------------
class _Specialization:
    """One traced run: its plan, how the call's arguments bind to the plan's inputs, the state
    inputs and outputs, and the result's containers."""

    def __init__(self, plan, trace_path, plan_path, arg_names, state_in, state_out, out_spec, modes=None):
        self.plan = plan
        self.trace_path = trace_path
        self.plan_path = plan_path
        self.arg_names = arg_names       # names of the call's arguments, in plan input order
        self.state_in = state_in         # [_StateSlot] read live as the plan's last inputs
        self.state_out = state_out       # [_StateSlot] written from the plan's state outputs
        self.out_spec = out_spec
        # [(qualified name, submodule, training flag)] of a traced torch module: train()/eval()
        # decide Python control flow the recorder does not see (dropout, BatchNorm), so the
        # replay checks them like any other guard.
        self.modes = modes
        # [(kind, holder, key, object, version, label)]: the tensors the function reached through
        # its closure, globals or `self` (with the modules holding them), baked into the graph
        # as the values they had when traced; checked on every call (_captured_checks).
        self.captured = None
        # [(holder, qualified name, training flag, submodule)] of the modules among the call's
        # arguments (submodule None: looked up in each call's arguments) and of the ones it
        # reaches through its closure, globals or `self` (their submodules' identity is checked
        # with self.captured).
        self.arg_modes = None
        self.fn = plan._fn               # the replay, or the backend's compiled replay
        # "file:line" where the traced call switched autograd or autocast (_ModeSwitches), or None
        self.grad_switch = None
        self.autocast_switch = None
        self.grad_mode = None            # True/False: replayed under it (_ModeSwitches.grad_mode)
        self.backend = None              # "torch.compile" / "jax.jit" when return_backend_traced_fn

    def check_modes(self):
        for qn, m, flag in self.modes:
            if m.training is not flag:
                was, now = ("train", "eval") if flag else ("eval", "train")
                where = f"submodule {qn!r}" if qn else "the module"
                raise _ModeGuardError(f"ivytrace: {where} was in {was} mode when traced and is in {now} mode now "
                                 f"(module.train()/.eval() decide what forward does); trace again in this mode")

    def check_captured(self):
        for kind, holder, key, obj, version, label in self.captured:
            if kind == 0:
                cur = holder.get(key, _BY_VALUE)
            elif kind == 1:
                cur = getattr(holder, key, _BY_VALUE)
            else:
                try:
                    cur = holder[key]
                except (KeyError, IndexError):
                    cur = _BY_VALUE
            if version is _BY_VALUE:
                if type(cur) is type(obj) and (cur == obj or cur != cur and obj != obj):
                    continue
                how = f"is {cur!r} now" if cur is not _BY_VALUE else "is gone"
            elif cur is obj and (version is None or cur._version == version):
                continue
            else:
                how = "was written in place" if cur is obj else "is another object now"
            raise GuardError(f"ivytrace: {label}, which the function reaches through its closure or globals, {how} "
                             f"since it was traced; the graph holds its traced value. Trace again (retrace=True "
                             f"does), or pass it as an argument, whose tensors, modules and numbers are read on "
                             f"every call")

    def _positional(self, sig) -> bool:
        """Whether a call with exactly len(arg_names) positional arguments and no keywords binds
        them, in order, to arg_names (then run() skips Signature.bind, ~10 us a call)."""
        if self._positional_sig is not sig:
            ok = sig is not None
            if ok:
                params = list(sig.parameters.values())[:len(self.arg_names)]
                ok = len(params) == len(self.arg_names) and all(
                    p.name == n and p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                                               inspect.Parameter.POSITIONAL_OR_KEYWORD)
                    for p, n in zip(params, self.arg_names))
            self._positional_sig, self._positional_ok = sig, ok
        return self._positional_ok

    _positional_sig = None
    _positional_ok = False

    def run(self, sig, args, kwargs):
        if not kwargs and len(args) == len(self.arg_names) and self._positional(sig):
            values = list(args)
        else:
            bound = bind_inputs(sig, args, kwargs)
            names = [n for n, _ in bound]
            if names != self.arg_names:
                raise GuardError(f"ivytrace: traced with the arguments ({', '.join(self.arg_names)}), called with "
                                 f"({', '.join(names)}); trace again with these arguments")
            values = [v for _, v in bound]
        if self.modes:
            self.check_modes()
        if self.captured:
            self.check_captured()
        if self.arg_modes:
            for which, qn, flag, sub in self.arg_modes:
                if sub is None:   # an argument's: looked up in this call's arguments
                    sub = _holder(which, args, kwargs)
                    sub = sub.get_submodule(qn) if qn else sub
                if sub.training is not flag:
                    was, now = ("train", "eval") if flag else ("eval", "train")
                    what = "module" if which[0] == "fixed" else "argument"
                    raise _ModeGuardError(f"ivytrace: {what} {_holder_name(which, self.arg_names)}"
                                          f"{'.' + qn if qn else ''} was in {was} mode when traced and is in {now} "
                                          f"mode now (module.train()/.eval() decide what forward does); trace again")
        if self.state_in:
            values += [s.get(args, kwargs) for s in self.state_in]
        if self.autocast_switch is not None or self.grad_switch is not None and \
                _torch().is_grad_enabled() and _requires_grad_somewhere(values):
            raise _RunEagerly()
        if self.grad_mode is not None:   # every op ran under the mode the program set
            with _torch().set_grad_enabled(self.grad_mode):
                raw = self.fn(*values)
        else:
            raw = self.fn(*values)
        if self.state_out:
            result, state = raw
            for slot, value in zip(self.state_out, state):
                slot.set(args, kwargs, value)
        else:
            result = raw
        return _rebuild(self.out_spec, result)


class Graph:
    """A traced function: calling it replays the exported plan on new inputs.

    `retrace=True`: a call that fails every specialization's guards traces the function again
    (at most `max_traces` specializations), instead of raising GuardError.
    """

    def __init__(self, fn, name, options, *, retrace=False, max_traces=8):
        self._fn = fn
        self.name = name
        self._options = options
        self.retrace = retrace
        self.max_traces = max_traces
        self._specs: list = []
        self._example = None    # (args, kwargs) of the first trace, for check() without arguments
        self._workdirs: list = []
        self._cleanup = weakref.finalize(self, _remove_all, self._workdirs)
        self._call = _original_forward(fn) if _is_torch_module(fn) else fn
        self._sig = signature_of(self._call)
        self.__wrapped__ = self._call    # inspect.signature(graph) shows the traced signature
        self.__doc__ = getattr(self._call, "__doc__", None)
        self._saved_forward = None       # a module's own `forward` attribute before trace_graph set it

    def __get__(self, instance, owner=None):
        # A graph made by decorating a method (`@ivytrace.trace_graph` on `def forward(self, x)`):
        # read through an instance it binds like the function it replaces, so `self` is the first
        # argument (a module's parameters are then state read on every call, whichever instance).
        if instance is None:
            return self
        return types.MethodType(self, instance)

    def _eager(self, *args, **kwargs):
        """Call the original function (a module's own forward, not the replay installed on it)."""
        if _is_torch_module(self._fn):
            return _call_module_eagerly(self._fn, args, kwargs)
        return self._fn(*args, **kwargs)

    # -- the newest specialization, as before ----------------------------------------------------
    def _latest(self):
        if not self._specs:
            raise RuntimeError(f"ivytrace: graph {self.name!r} has not been traced yet; call it once with arguments")
        return self._specs[0]

    @property
    def plan(self):
        return self._latest().plan

    @property
    def trace_path(self):
        return self._latest().trace_path

    @property
    def plan_path(self):
        return self._latest().plan_path

    @property
    def source(self) -> str:
        """The generated straight-line Python (of the newest specialization)."""
        return self._latest().plan.source

    @property
    def guards(self) -> list:
        """The guards of the newest specialization, as (op, observed value, file:line)."""
        from ivytrace.runtime.values import literal
        out = []
        for g in self._latest().plan.plan.guards:
            try:
                observed = literal(g.observed, None, "guard")
            except Exception:
                observed = g.observed
            out.append((g.op, observed, f"{g.loc.file}:{g.loc.line}"))
        return out

    @property
    def traces(self) -> int:
        """How many specializations this graph holds."""
        return len(self._specs)

    def __call__(self, *args, **kwargs):
        fast = self._fast
        if fast is not None and not kwargs and len(args) == fast[1]:
            # The newest specialization takes the call's arguments as they are: its replay is
            # called directly (run()'s binding, mode and state handling have nothing to do; each
            # Python frame less is ~0.3 us, a few small ops' worth on a tiny function).
            try:
                out = fast[0](*args)
            except GuardError as e:
                return self._call_from(1, args, kwargs, e)
            return out if fast[2] is None else _rebuild(fast[2], out)
        if not self._specs:
            return self._trace_and_keep(args, kwargs)
        return self._call_from(0, args, kwargs, None)

    _fast = None   # (replay, number of arguments, out_spec) of the newest specialization, or None

    def _update_fast(self):
        spec = self._specs[0] if self._specs else None
        ok = spec is not None and not spec.modes and not spec.state_in and not spec.state_out and not spec.captured and \
            not spec.arg_modes and spec.grad_switch is None and spec.autocast_switch is None and \
            spec.grad_mode is None and \
            spec._positional(self._sig)
        self._fast = (spec.fn, len(spec.arg_names), spec.out_spec) if ok else None

    def _call_from(self, start, args, kwargs, failed):
        """Replay with the specializations from `start` on (the ones before failed a guard:
        `failed`, or None), most recently used first; trace again or raise when all fail."""
        only_modes = failed is None or isinstance(failed, _ModeGuardError)
        for i in range(start, len(self._specs)):
            spec = self._specs[i]
            try:
                out = spec.run(self._sig, args, kwargs)
            except _RunEagerly:
                return self._run_eagerly(spec, args, kwargs)
            except GuardError as e:
                failed = failed or e
                only_modes = only_modes and isinstance(e, _ModeGuardError)
                continue
            if i:   # most recently used first
                self._specs.insert(0, self._specs.pop(i))
                self._update_fast()
            return out
        if not self.retrace and not only_modes:
            raise failed
        if len(self._specs) >= self.max_traces:
            raise GuardError(f"ivytrace: {self.name}: every one of the {len(self._specs)} traced specializations "
                             f"(max_traces={self.max_traces}) failed a guard; not tracing again. First failure: "
                             f"{failed}")
        first = str(failed).splitlines()[0] if str(failed) else type(failed).__name__
        warnings.warn(f"ivytrace: tracing {self.name} again ({len(self._specs) + 1} of at most {self.max_traces}): "
                      f"{first}", RetraceWarning, stacklevel=_user_level()[0])
        return self._trace_and_keep(args, kwargs)

    def _run_eagerly(self, spec, args, kwargs):
        """The original function, where the replay would not be the same (_ModeSwitches)."""
        if not getattr(spec, "warned_eager", False):
            spec.warned_eager = True
            if spec.autocast_switch is not None:
                why = (f"it enters torch.autocast at {spec.autocast_switch}, and the replay cannot reproduce "
                       f"autocast's casts (move autocast around the call of the graph instead)")
            else:
                why = (f"it switches autograd at {spec.grad_switch} (torch.no_grad, enable_grad, "
                       f"inference_mode), and gradients of this call would flow where the original stops them "
                       f"(call the graph under torch.no_grad() when no gradients are needed)")
            warnings.warn(f"ivytrace: {self.name} runs the original function, not its graph: {why}",
                          StateWarning, stacklevel=_user_level()[0])
        if _is_torch_module(self._fn):
            return _call_module_eagerly(self._fn, args, kwargs)
        return self._call(*args, **kwargs)

    def _trace_and_keep(self, args, kwargs):
        if self._example is None:
            self._example = (args, kwargs)
        unreplayed = _unreplayed_state[0]
        spec, out, workdir = _trace(self._fn, tuple(args), dict(kwargs), **self._options)
        self._specs.insert(0, spec)
        self._update_fast()
        self._workdirs.append(workdir)
        if self.probe_batch_of_one and len(self._specs) < self.max_traces and unreplayed == _unreplayed_state[0]:
            self._probe_batch_of_one(spec, args, kwargs)
        return out

    probe_batch_of_one = True

    def _probe_batch_of_one(self, spec, args, kwargs):
        """A batch of 1 is a size many programs branch on (transformers' `if batch_size !=
        position_ids.shape[0]`), so a graph traced with one is often right only for one. When the
        call had arrays whose dim 0 is 1, the new specialization is replayed with those arrays
        repeated to 2 along dim 0; if one of its guards fails, the function is traced a second
        time on those arrays and that specialization is kept too, so other batch sizes replay
        without a retrace at call time. Skipped when the graph writes state (a second call would
        write it again); the random number generators are put back as they were, and warnings
        from the second call are not shown. What else the function does in Python (a print) it
        does twice: `trace_graph(..., probe_batch_of_one=False)` turns this off."""
        if spec.state_out:
            return
        bigger_args, n_args = _repeat_batch_of_one(tuple(args))
        bigger_kwargs, n_kwargs = _repeat_batch_of_one(dict(kwargs))
        if not n_args + n_kwargs:
            return
        rng = _rng_states()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    spec.run(self._sig, bigger_args, bigger_kwargs)
                    return    # its guards hold at a batch of 2: symbolic in the batch already
                except GuardError:
                    pass
                except Exception:   # noqa: BLE001 - the inputs made up here are not the user's
                    return
                try:
                    probe, _, workdir = _trace(self._fn, bigger_args, bigger_kwargs, **self._options)
                except Exception:   # noqa: BLE001 - the function refuses a batch of 2: nothing kept
                    return
        finally:
            _restore_rng_states(rng)
        self._workdirs.append(workdir)
        if probe.state_out:
            return
        self._specs.insert(1, probe)

    def save(self, path) -> str:
        """Copy the recorded trace to `path` (for `ivytrace inspect/viz/export`), with the
        arrays the function reaches through its closure, globals or `self` as constants."""
        path = os.fspath(path)
        shutil.copyfile(self._file_trace_path(), path)
        return path

    def export(self, path, to: str = "onnx") -> str:
        """Export the traced region with the CLI: to="onnx" or "plan"."""
        if to not in ("onnx", "plan"):
            raise ValueError(f"ivytrace: export to {to!r}: expected 'onnx' or 'plan'")
        path = os.fspath(path)
        run_cli("export", self._file_trace_path(), "--to", to, "-o", path)
        return path

    def _file_trace_path(self):
        """The trace save() and export() write from. The replay reads the arrays the function
        reaches through its closure, globals or `self` as inputs; a file holds them as constants
        (an ONNX model its weights), as before session 16 and as ivytrace.export does: the
        function traced again, frozen, once per specialization."""
        spec = self._latest()
        if not getattr(spec, "live_captured", False) or self._example is None:
            return spec.trace_path
        if getattr(spec, "frozen", None) is None:
            spec.frozen = freeze(self)
        return spec.frozen.trace_path

    def check(self, *args, rtol: float = 1e-5, atol: float = 1e-6, **kwargs):
        """Run the original function and the graph on the same inputs and compare every output
        (the seeds' "trace with a noise array and compare", sharp bit 3). Without arguments,
        random inputs of the traced shapes and dtypes. Returns a CheckReport (truthy when every
        output matches and no guard fired)."""
        from ivytrace.graph_check import check_graph
        return check_graph(self, args, kwargs, rtol=rtol, atol=atol)

    def __repr__(self):
        if not self._specs:
            return f"<ivytrace.Graph {self.name!r}, not traced yet>"
        return f"<ivytrace.Graph {self.name!r}: {self.plan.num_steps} steps, {len(self._specs)} trace(s)>"


class LazyGraph(Graph):
    """trace_graph(fn) without arguments: traces on its first call, then replays, and traces
    again when a call fails the guards of every specialization it has (max_traces)."""

    def __init__(self, fn, name, options, *, max_traces=8):
        super().__init__(fn, name, options, retrace=True, max_traces=max_traces)

    @property
    def initialized(self) -> bool:
        return bool(self._specs)

    @property
    def graph(self):   # the older API: the traced graph, once there is one
        return self if self._specs else None

    def __repr__(self):
        state = f"{len(self._specs)} trace(s)" if self._specs else "not traced yet"
        return f"<ivytrace.LazyGraph {self.name!r}, {state}>"


def _repeat_batch_of_one(v, depth=0):
    """(v with every array whose dim 0 has size 1 repeated to 2 along it, how many were)."""
    if _is_array(v):
        shape = getattr(v, "shape", ())
        if len(shape) == 0 or shape[0] != 1:
            return v, 0
        mod = type(v).__module__
        if mod.startswith("torch"):
            return _torch().cat([v, v], 0), 1
        if mod.startswith("numpy"):
            import numpy as np
            return np.concatenate([v, v], 0), 1
        import jax.numpy as jnp
        return jnp.concatenate([v, v], 0), 1
    if depth > 8:
        return v, 0
    if type(v) in (tuple, list):
        parts = [_repeat_batch_of_one(x, depth + 1) for x in v]
        return type(v)(p for p, _ in parts), sum(n for _, n in parts)
    if type(v) is dict:
        parts = {k: _repeat_batch_of_one(x, depth + 1) for k, x in v.items()}
        return {k: p for k, (p, _) in parts.items()}, sum(n for _, n in parts.values())
    return v, 0


def _rng_states():
    """The global random number generators' states (torch, NumPy, Python's random)."""
    import random
    out = [(random.setstate, random.getstate())]
    if "numpy" in sys.modules:
        np = sys.modules["numpy"]
        out.append((np.random.set_state, np.random.get_state()))
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        out.append((torch.set_rng_state, torch.get_rng_state()))
    return out


def _restore_rng_states(states):
    for restore, state in states:
        restore(state)


def _remove_all(dirs):
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)


_FRAMEWORKS = ("torch", "numpy", "jax")


def trace_graph(*objs, stateful=None, arg_stateful_idxs=None, kwarg_stateful_idxs=None, to=None,
                include_generators: bool = True, array_caching: bool = True,
                return_backend_traced_fn: bool = False, static_argnums=None, static_argnames=None,
                args=None, kwargs=None, retrace=None, max_traces: int = 8, probe_batch_of_one: bool = True):
    """Trace callables into graphs (the seeds' `ivy.trace_graph`, with ivytrace's recorder).

    `objs`: what to trace. A function (torch, NumPy or JAX) gives a Graph; several give a tuple
    of graphs, one each, traced with the same `args`/`kwargs`. A `torch.nn.Module` comes back
    itself, with its forward replaced by the replay: its parameters and buffers are inputs of the
    graph read live on every call (weight updates count, autograd flows through the replay; see
    `freeze` for a graph with the weights as constants), and train()/eval() are guarded. A Python
    module (`types.ModuleType`) gives a copy of it with every public function lazily traced. No
    callable at all: a decorator with these options.

    With `args`/`kwargs` the tracing happens now; without, a LazyGraph traces on its first call
    (and again when a later call fails its guards). Shape-derived ints are symbolic; values that
    decide control flow are guards (see README, "Graphs that stay right on new inputs").

    `stateful`: objects whose tensor attributes the graph reads live and whose attribute
    assignments it replays; `arg_stateful_idxs` / `kwarg_stateful_idxs`: the same for arguments
    (an index, or a path of indices into nested arguments; a keyword name).
    `to`: the framework the graph replays in ("torch", "numpy", "jax"; default: the traced one).
    `include_generators=False` bakes random/array-creation ops into constants;
    `array_caching=False` keeps constant subexpressions as steps.
    `return_backend_traced_fn`: the replay is compiled by the target framework's own compiler
    (torch.compile, jax.jit with `static_argnums`/`static_argnames`); NumPy has none (ValueError).
    `static_argnums` / `static_argnames`: arguments the graph is specialized on (a guard checks
    them on every call). Other Python ints and floats are inputs of the graph (symbolic), in
    torch, NumPy and JAX programs, guarded where the program takes them out of arithmetic (a
    branch, a shape, `float()`); bools, strings and other Python values are specialized with a
    guard.
    `retrace=True`: an eager Graph traces again when a call fails every guard, instead of raising
    GuardError (a traced module always traces again when only its train()/eval() mode changed);
    `max_traces`: at most this many specializations.
    `probe_batch_of_one`: when a call has arrays with a batch (dim 0) of 1 and the graph's guards
    fail for a batch of 2, the function is traced a second time with those arrays repeated, so
    other batch sizes replay without a retrace (see Graph._probe_batch_of_one); False turns it off.
    """
    if not isinstance(max_traces, int) or max_traces < 1:
        raise ValueError(f"ivytrace: max_traces must be a positive int, not {max_traces!r}")
    if to is not None and to not in _FRAMEWORKS:
        raise ValueError(f"ivytrace: to={to!r}: expected one of {', '.join(map(repr, _FRAMEWORKS))} or None "
                         f"(the framework the function was traced in)")
    if return_backend_traced_fn and to == "numpy":
        raise ValueError(_NUMPY_BACKEND_FN)
    nums = _normalize_static(static_argnums, int, "static_argnums", "an int or a list of ints")
    names = _normalize_static(static_argnames, str, "static_argnames", "a str or a list of strs")
    _check_call_arguments(args, kwargs)
    options = dict(array_caching=array_caching, include_generators=include_generators, stateful=stateful,
                   arg_stateful_idxs=arg_stateful_idxs, kwarg_stateful_idxs=kwarg_stateful_idxs, to=to,
                   return_backend_traced_fn=bool(return_backend_traced_fn), static_argnums=nums,
                   static_argnames=names)
    if not objs:   # @trace_graph(...) with options
        def decorate(fn):
            return trace_graph(fn, args=args, kwargs=kwargs, retrace=retrace, max_traces=max_traces,
                               probe_batch_of_one=probe_batch_of_one, **_public_options(options))
        return decorate
    for i, obj in enumerate(objs):
        if not callable(obj) and not isinstance(obj, types.ModuleType):
            raise TypeError(f"ivytrace: trace_graph: positional argument {i + 1} is a {type(obj).__qualname__}, not "
                            f"a callable or a Python module; pass the call's arguments as args=(...) and "
                            f"kwargs={{...}}")
    graphs = tuple(_trace_one(obj, args, kwargs, options, retrace, max_traces, bool(probe_batch_of_one))
                   for obj in objs)
    return graphs[0] if len(graphs) == 1 else graphs


_NUMPY_BACKEND_FN = ("ivytrace: return_backend_traced_fn=True: NumPy has no compiler to hand the replay to "
                     "(torch.compile and jax.jit are the backends); trace without it, or with to='torch' or to='jax'")


def _public_options(options):
    out = dict(options)
    out["static_argnums"] = sorted(options["static_argnums"]) or None
    out["static_argnames"] = sorted(options["static_argnames"]) or None
    return out


def _normalize_static(value, cls, what, expected):
    if value is None:
        return frozenset()
    items = [value] if isinstance(value, cls) else value
    try:
        items = list(items)
    except TypeError:
        raise TypeError(f"ivytrace: {what} must be {expected}, not {value!r}") from None
    for v in items:
        if not isinstance(v, cls) or isinstance(v, bool):
            raise TypeError(f"ivytrace: {what} must be {expected}, not {value!r}")
    return frozenset(items)


def _trace_one(obj, args, kwargs, options, retrace, max_traces, probe=True):
    eager = args is not None or kwargs is not None
    if isinstance(obj, types.ModuleType):
        if eager:
            raise ValueError(f"ivytrace: trace_graph(module {obj.__name__!r}, args=...): a Python module is traced "
                             f"lazily, each function on its first call; leave out args and kwargs")
        return _trace_python_module(obj, options, max_traces, probe)
    name = _name_of(obj)
    if _is_torch_module(obj):
        return _trace_torch_module(obj, name, args, kwargs, options, retrace, max_traces, probe)
    if not eager:
        g = LazyGraph(obj, name, options, max_traces=max_traces)
        g.probe_batch_of_one = probe
        return g
    g = Graph(obj, name, options, retrace=bool(retrace), max_traces=max_traces)
    g.probe_batch_of_one = probe
    g._trace_and_keep(tuple(args or ()), dict(kwargs or {}))
    return g


def _trace_python_module(mod, options, max_traces, probe=True):
    """A copy of `mod` whose public functions are LazyGraphs (the module itself is untouched)."""
    copy = types.ModuleType(mod.__name__, mod.__doc__)
    copy.__dict__.update(mod.__dict__)
    public = getattr(mod, "__all__", None)
    names = list(public) if public is not None else [n for n in vars(mod) if not n.startswith("_")]
    for n in names:
        v = getattr(mod, n, None)
        # Functions the module defines (or exports by __all__), not ones it imported.
        if inspect.isfunction(v) and (public is not None or v.__module__ == mod.__name__):
            g = LazyGraph(v, n, options, max_traces=max_traces)
            g.probe_batch_of_one = probe
            g.__name__ = n
            g.__qualname__ = getattr(v, "__qualname__", n)
            g.__module__ = mod.__name__
            copy.__dict__[n] = g
    return copy


def _trace_torch_module(module, name, args, kwargs, options, retrace, max_traces, probe=True):
    """Install the replay as `module.forward` and return the module (traced now with args)."""
    # retrace (default off, as for functions) decides what a failed guard does; a change of
    # train()/eval() mode always traces again (_ModeGuardError).
    g = (Graph if args is not None or kwargs is not None else LazyGraph)
    if g is LazyGraph:
        graph = LazyGraph(module, name, options, max_traces=max_traces)
        graph.retrace = retrace is None or bool(retrace)   # lazy: traces again unless told not to
    else:
        graph = Graph(module, name, options, retrace=bool(retrace), max_traces=max_traces)
    graph.probe_batch_of_one = probe
    installed = module.__dict__.get("forward")
    graph._saved_forward = installed._saved_forward if isinstance(installed, Graph) else installed
    if g is Graph:
        graph._trace_and_keep(tuple(args or ()), dict(kwargs or {}))
    module.forward = graph
    return module


def _original_forward(module):
    installed = module.__dict__.get("forward")
    if isinstance(installed, Graph):
        installed = installed._saved_forward
    return installed if installed is not None else type(module).forward.__get__(module)


class _ModeSwitches:
    """Where the traced call switched autograd (torch.no_grad, enable_grad, set_grad_enabled,
    inference_mode) or autocast on or off: "file:line" of the program's code, or None; and, for
    autograd, the one mode every recorded op ran in when the program set it (`grad_mode`).

    The recorder sees the ops, not these modes: ops computed under an inner no_grad replayed
    with gradients (x.grad 3 where eager gives 1, silently), and ops under autocast replayed in
    the inputs' dtype (float32 where eager gave bfloat16). A graph whose ops all ran under a mode
    the program set (`with torch.no_grad(): return model(x)`) replays under that mode; one that
    mixes modes, or enters autocast, runs the original function where the replay would differ
    (see _Specialization.run)."""

    def __init__(self, op_count):
        self.grad = None
        self.autocast = None
        self.grad_mode = None      # True/False: the replay runs under it; None: the caller's
        self._op_count = op_count  # op events recorded so far
        self._events = []          # (op events before it, mode set) for each switch the program made
        self._unknown = False      # inference_mode: its end is not seen
        self._saved = []

    def start(self):
        torch = _torch()
        self._start = (self._op_count(), torch.is_grad_enabled())
        for owner, attr, kind in ((torch._C, "_set_grad_enabled", "grad"), (torch._C, "_InferenceMode", "inference"),
                                  (torch, "set_autocast_enabled", "autocast")):
            prev = getattr(owner, attr, None)
            if prev is None:
                continue
            self._saved.append((owner, attr, prev))
            wrapper = self._wrap(prev, kind)
            # Named as what it replaces: the recorder records the same op (the switches dispatch
            # to __torch_function__ modes; a dead op the graph drops), so traces are unchanged.
            wrapper.__name__ = wrapper.__qualname__ = attr
            wrapper.__module__ = owner.__name__
            setattr(owner, attr, wrapper)

    def stop(self):
        for owner, attr, prev in reversed(self._saved):
            setattr(owner, attr, prev)
        self._saved = []
        self.grad_mode = self._one_mode() if self.grad is not None else None

    def _one_mode(self):
        """The mode every op ran in, when the program set it (not merely restored the caller's):
        a switch to the caller's mode at trace time may be a restore (no_grad's exit sets the
        mode it found), so ops after it follow the caller. None when ops ran both ways, or under
        inference_mode (whose end is not seen): the graph then runs eagerly when it matters."""
        if self._unknown:
            return None
        start_count, caller = self._start
        # A switch the program makes is itself recorded, as one op event after the count taken
        # in it: the ops in the mode it sets start after that event.
        begins = [(start_count, None)] + [(n + 1, None if m == caller else m) for n, m in self._events]
        ends = [n for n, _ in self._events] + [self._op_count()]
        modes = {forced for (begin, forced), end in zip(begins, ends) if end > begin}
        if modes == {None} or not modes:
            self.grad = None   # every op ran in the caller's mode: nothing to reproduce
            return None
        if len(modes) == 1:
            return modes.pop()
        return None

    def _wrap(self, prev, kind):
        def switch(*a, **k):
            where = _program_frame(sys._getframe(1))
            if where is not None:
                if kind == "autocast":
                    self.autocast = self.autocast or where
                else:
                    self.grad = self.grad or where
                    if kind == "inference":
                        self._unknown = True
                    elif a:
                        self._events.append((self._op_count(), bool(a[0])))
            return prev(*a, **k)
        return switch


_TORCH_DIR = None


def _program_frame(f):
    """'file:line' of the first frame outside torch (the program's, or a library's like
    transformers); None when that frame is ivytrace's own."""
    global _TORCH_DIR
    if _TORCH_DIR is None:
        _TORCH_DIR = os.path.dirname(_torch().__file__) + os.sep
    while f is not None and f.f_code.co_filename.startswith(_TORCH_DIR):
        f = f.f_back
    if f is None or f.f_code.co_filename.startswith(_PACKAGE_DIR):
        return None
    return f"{f.f_code.co_filename}:{f.f_lineno}"


def _requires_grad_somewhere(values) -> bool:
    torch = _torch()
    for v in values:
        if isinstance(v, torch.Tensor):
            if v.requires_grad:
                return True
        elif isinstance(v, (tuple, list)):
            if _requires_grad_somewhere(v):
                return True
        elif isinstance(v, dict):
            if _requires_grad_somewhere(v.values()):
                return True
    return False


class _RunEagerly(Exception):
    """Raised by a specialization whose replay would differ from the original on this call."""


def _call_module_eagerly(module, args, kwargs):
    """module(*args, **kwargs) through its own forward (hooks included), not an installed replay."""
    d = module.__dict__
    installed = d.get("forward")
    if not isinstance(installed, Graph):
        return module(*args, **kwargs)
    if installed._saved_forward is None:
        del d["forward"]
    else:
        d["forward"] = installed._saved_forward
    try:
        return module(*args, **kwargs)
    finally:
        d["forward"] = installed


def graph_of(obj):
    """The Graph behind what trace_graph returned: a Graph itself, or the one installed as a
    traced torch module's forward."""
    if isinstance(obj, Graph):
        return obj
    installed = getattr(obj, "__dict__", {}).get("forward")
    if isinstance(installed, Graph):
        return installed
    raise TypeError(f"ivytrace: graph_of: a {type(obj).__qualname__} is neither a Graph nor a module traced by "
                    f"trace_graph")


def freeze(obj, args=None, kwargs=None):
    """A Graph of a torch module with its parameters (and, in eval mode, its buffers) baked into
    the plan as constants: the graph for inference and export, which later weight updates do not
    change. `obj`: a module (traced by trace_graph or not) or its Graph, or a function, whose
    plan then holds the arrays it reaches through its closure, globals or `self` as constants
    (trace_graph reads them on every call): a self-contained plan file. Traced now with
    `args`/`kwargs`, or with the arguments the module was first traced with. Each replay still
    checks the baked arrays are the ones traced, as far as it can (identity and torch's version
    counter: not a write through `.data`)."""
    graph = obj if isinstance(obj, Graph) else None
    module = graph._fn if graph is not None else obj
    if graph is None and _is_torch_module(module):
        installed = module.__dict__.get("forward")
        graph = installed if isinstance(installed, Graph) else None
    if not _is_torch_module(module) and not callable(module):
        raise TypeError(f"ivytrace: freeze: expected a torch.nn.Module, a function or the Graph of one, not a "
                        f"{type(obj).__qualname__}")
    options = dict(graph._options) if graph is not None else dict(
        array_caching=True, include_generators=True, stateful=None, arg_stateful_idxs=None,
        kwarg_stateful_idxs=None, to=None, return_backend_traced_fn=False, static_argnums=frozenset(),
        static_argnames=frozenset())
    options["freeze"] = True
    if args is None and kwargs is None:
        if graph is None or graph._example is None:
            return LazyGraph(module, _name_of(module), options)
        args, kwargs = graph._example
    g = Graph(module, _name_of(module), options)
    g._trace_and_keep(tuple(args or ()), dict(kwargs or {}))
    return g


def export(fn, path, args=None, kwargs=None, *, to: str = "onnx", allow_specialized: bool = False,
           static: bool = False, static_argnums=None, static_argnames=None, array_caching: bool = True,
           include_generators: bool = True) -> str:
    """Record one call of `fn(*args, **kwargs)` and export its graph straight to `path`: an ONNX
    model (to="onnx") or an executable plan (to="plan"), as `ivytrace export` does with a trace.

    This is the one-call path from a program to a file, the counterpart of torch.onnx.export:
    nothing is replayed in this process, so no plan is built or loaded here, and the weights
    are written once into the trace and once into `path`. A torch module's parameters and
    buffers are baked in as constants (an inference export, as with `freeze`); a function's
    array arguments are the model's inputs, named after its parameters.

    The CLI decides, and its refusals are CLIError with its message and exit status: a graph
    that guards hold (a branch on a value, a shape the graph depends on) is refused with exit 5
    and the list of guards unless `allow_specialized` (they then go into the model's
    metadata_props); `static` exports the recorded shapes (the call is recorded with plain
    shapes, so values that follow from them alone are constants). Python ints among the arguments are
    inputs of the graph where the exporter takes them, else specialized with a StateWarning, as
    in trace_graph. Returns `path`; on failure nothing is written there."""
    if to not in ("onnx", "plan"):
        raise ValueError(f"ivytrace: export to {to!r}: expected 'onnx' or 'plan'")
    if to == "plan" and (allow_specialized or static):
        raise ValueError("ivytrace: export: allow_specialized and static apply to ONNX models (to='onnx'); a plan "
                         "checks its guards on every replay")
    _check_call_arguments(args, kwargs)
    path = os.fspath(path)
    args, kwargs = tuple(args or ()), dict(kwargs or {})
    nums = _normalize_static(static_argnums, int, "static_argnums", "an int or a list of ints")
    names = _normalize_static(static_argnames, str, "static_argnames", "a str or a list of strs")
    flags = [flag for flag, on in (("--no-array-caching", not array_caching), ("--bake-generators", not include_generators),
                                   ("--allow-specialized", allow_specialized), ("--static", static)) if on]

    def attempt(symbolic_ints):
        # static: shapes are read as plain ints, so what follows only from them (positions, a
        # causal mask, rotary tables) is computed from constants and folded like them.
        r = _record_once(fn, args, kwargs, nums, names, symbolic_ints=symbolic_ints, freeze=True,
                         symbolic_shapes=not static, for_export=True)
        try:
            run_cli("export", r.trace_path, "--to", to, "-o", path, *flags)
        except CLIError as e:
            if r.sym_args:
                raise _SymIntsRefused(list(r.sym_args), _first_error_line(e)) from e
            raise _export_error(e, fn, to) from None
        finally:
            shutil.rmtree(r.workdir, ignore_errors=True)
        return path

    return _symbolic_ints_first(fn, attempt)


def _export_error(e, fn, to):
    """The CLI's refusal in the words of this call: the command line names a temporary trace that
    is gone by now, and the CLI's advice names its flags, not export()'s arguments."""
    text = (e.stderr or "").strip() or str(e)
    text = text.replace("ivytrace export: error: ", "")
    for flag, arg in (("--allow-specialized", "allow_specialized=True"), ("--static", "static=True")):
        text = text.replace(f"pass {flag}", f"pass {arg}").replace(f"or {flag}", f"or {arg}")
    name = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    return CLIError(f"ivytrace.export({name}, to={to!r}) failed (exit status {e.returncode}): {text}",
                    e.returncode, e.stderr, e.command)


def _check_call_arguments(args, kwargs):
    if args is not None and not isinstance(args, (tuple, list)):
        raise TypeError(f"ivytrace: args must be a tuple of positional arguments, not a {type(args).__qualname__} "
                        f"(write args=(x,) for one argument)")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise TypeError(f"ivytrace: kwargs must be a dict of keyword arguments, not a {type(kwargs).__qualname__}")


def _source_framework(fn, args, kwargs) -> str:
    if _is_torch_module(fn) or _has_torch_tensor((args, kwargs)):
        return "torch"
    if _has_jax_array((args, kwargs)):
        return "jax"
    if _has_ndarray((args, kwargs)):
        return "numpy"
    return "torch" if _torch() is not None else "numpy"


def _load(plan_path, to, source):
    """Load the exported plan, replayed in framework `to` when given (retargeting: the runtime
    converts inputs and outputs at the boundary and refuses, at load, ops `to` cannot run)."""
    if to is None or to == source:
        return load_plan(plan_path)
    return load_plan(plan_path, target=to)


def _compile_backend(spec, target, static_positions, sym_positions):
    """return_backend_traced_fn: hand the replay function to the framework's compiler."""
    if target == "torch":
        torch = _torch()
        # The replay runs with the plan runtime's restricted builtins (the generated code names
        # only its bound functions and literals). TorchDynamo guards on builtins that the code it
        # inlines looks up (codegen's guard checks call `int`, say) in that same dict, and fails
        # with "KeyError: int" on a plan with guards. The compiled copy gets Python's builtins:
        # the code is the same generated code, which refers to none of them by itself.
        import builtins
        # TorchDynamo traces Python bytecode: a plan whose steps run in ivytrace._replay (a long
        # one) is compiled from its generated code instead.
        fn = (load_plan(spec.plan.path, machine=False) if spec.plan.machine else spec.plan)._fn
        fn = types.FunctionType(fn.__code__, {**fn.__globals__, "__builtins__": builtins.__dict__}, fn.__name__,
                                fn.__defaults__, fn.__closure__)
        spec.fn = torch.compile(fn)
        spec.backend = "torch.compile"
    elif target == "jax":
        import jax
        # Non-array inputs of the plan (the static arguments, and every other Python value the
        # graph was specialized on) stay Python values under jit. Numbers that are inputs of the
        # graph are traced like arrays, unless a guard reads them (`if alpha > 0.5`: a replay
        # checks it in Python, which a tracer cannot take; jax.jit then compiles per value).
        static = set(static_positions)
        if _guards_read_inputs(spec.plan.plan, sym_positions):
            static |= sym_positions
        spec.fn = jax.jit(spec.plan._fn, static_argnums=tuple(sorted(static)))
        spec.backend = "jax.jit"
    else:
        raise ValueError(_NUMPY_BACKEND_FN)


def _guards_read_inputs(plan, positions) -> bool:
    """Whether a guard of `plan` checks a value computed from the plan inputs at `positions` (a
    number's `if alpha > 0.5`; a guard on an array's size is not one: sizes are static under jit)."""
    from ivytrace.check import tensor_refs

    def slots(*args):
        refs = []
        for a in args:
            tensor_refs(a, refs)
        return {r.value for r in refs}

    tainted = slots(*(plan.inputs[i].value for i in positions if i < len(plan.inputs)))
    if not tainted:
        return False
    for step in plan.steps:
        if slots(*step.args, *(kw.value for kw in step.kwargs)) & tainted:
            tainted |= slots(step.result)
    return any(g.tensor.value in tainted for g in plan.guards)


def _positional_names(sig, n):
    """Names of the first n positional parameters (None past *args or without a signature)."""
    if sig is None:
        return [None] * n
    out = []
    for p in sig.parameters.values():
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            out.append(p.name)
    return (out + [None] * n)[:n]


def _static_sets(sig, nargs, static_argnums, static_argnames):
    """(positions, names) of the static arguments, each completed from the other through the
    signature, as jax.jit does."""
    names = set(static_argnames)
    pos_names = _positional_names(sig, max(nargs, 0) + 64)
    nums = set()
    for i in static_argnums:
        j = i + nargs if i < 0 else i
        nums.add(j)
        if 0 <= j < len(pos_names) and pos_names[j] is not None:
            names.add(pos_names[j])
    for j, n in enumerate(pos_names):
        if n is not None and n in names:
            nums.add(j)
    return nums, names


def _symbolize_ints(host, sig, args, kwargs, static_argnums, static_argnames):
    """Python ints among the call's top-level arguments become symbolic inputs of the graph
    (the recorder's stand-ins), except the static ones. Returns (args, kwargs, {name: int})."""
    nums, names = _static_sets(sig, len(args), static_argnums, static_argnames)
    made = {}
    pos_names = _positional_names(sig, len(args))
    new_args = list(args)
    for i, v in enumerate(args):
        if type(v) in (int, float) and i not in nums:
            new_args[i] = host._sym_input(v)
            made[pos_names[i] or f"arg{i}"] = v
    new_kwargs = dict(kwargs)
    for k, v in kwargs.items():
        if type(v) in (int, float) and k not in names:
            new_kwargs[k] = host._sym_input(v)
            made[k] = v
    return tuple(new_args), new_kwargs, made


def _unsym(v):
    """What the traced call returned, with the stand-ins of Python ints made plain again."""
    if _is_sym(v):
        return v.value
    t = type(v)
    if t in (list, tuple):
        return t(_unsym(x) for x in v)
    if t is dict:
        return {k: _unsym(x) for k, x in v.items()}
    return v


def _trace(fn, args, kwargs, *, static_argnums=frozenset(), static_argnames=frozenset(), **options):
    """Record one call of `fn`; returns (specialization, what the call returned, its workdir).

    Python ints among the arguments are traced as symbolic inputs; when the CLI cannot export
    the graph with them (an op that needs the number as a constant), they are specialized like
    the static arguments and the call is traced again."""
    return _symbolic_ints_first(fn, lambda symbolic_ints: _trace_once(
        fn, args, kwargs, static_argnums, static_argnames, symbolic_ints=symbolic_ints, **options))


def _symbolic_ints_first(fn, attempt):
    """attempt(symbolic_ints=True), and when the CLI refuses the graph because of the number
    arguments (_SymIntsRefused), attempt(False) with them specialized, with a StateWarning. When
    that fails too, the first attempt's error says why (it was not the ints)."""
    try:
        return attempt(True)
    except _SymIntsRefused as e:
        refused = e
    try:
        result = attempt(False)
    except CLIError:
        raise refused.__cause__ from None
    warnings.warn(f"ivytrace: {_name_of(fn)}: the number argument(s) {', '.join(refused.names)} cannot be inputs of "
                  f"the graph ({refused.reason}); the graph is specialized on their values (pass them in "
                  f"static_argnums / static_argnames to skip this attempt)", StateWarning,
                  stacklevel=_user_level()[0])
    return result


class _SymIntsRefused(Exception):
    def __init__(self, names, reason):
        super().__init__(reason)
        self.names = names
        self.reason = reason


class _Recorded:
    """One recorded call: the trace in `workdir`, and what binding and replaying it needs."""

    def __init__(self, **fields):
        self.__dict__.update(fields)


def _trace_once(fn, args, kwargs, static_argnums, static_argnames, *, symbolic_ints, array_caching=True,
                include_generators=True, stateful=None, arg_stateful_idxs=None, kwarg_stateful_idxs=None,
                to=None, return_backend_traced_fn=False, freeze=False):
    source = _source_framework(fn, args, kwargs)
    target = to or source
    if return_backend_traced_fn and target == "numpy":
        raise ValueError(_NUMPY_BACKEND_FN)
    r = _record_once(fn, args, kwargs, static_argnums, static_argnames, symbolic_ints=symbolic_ints,
                     stateful=stateful, arg_stateful_idxs=arg_stateful_idxs,
                     kwarg_stateful_idxs=kwarg_stateful_idxs, freeze=freeze,
                     live_captured=target == source)
    try:
        plan_path = os.path.join(r.workdir, "graph.ivyplan")
        cmd = ["export", r.trace_path, "--to", "plan", "-o", plan_path]
        if not array_caching and supports_flag("export", "--no-array-caching"):
            cmd.append("--no-array-caching")
        if not include_generators and supports_flag("export", "--bake-generators"):
            cmd.append("--bake-generators")
        if not _holds_array(r.out):
            # A result the call computed in Python (a float summed from x.tolist()): a graph with
            # no array output, which the guards on the values read still make right or refuse.
            cmd.append("--allow-empty")
        try:
            run_cli(*cmd)
        except CLIError as e:
            if r.sym_args:
                raise _SymIntsRefused(list(r.sym_args), _first_error_line(e)) from e
            raise
        spec = _Specialization(_load(plan_path, to, source), r.trace_path, plan_path, r.arg_names, r.state_in,
                               r.state_out, r.out_spec, r.modes)
        spec.captured = None if freeze and _is_torch_module(fn) else r.captured_checks
        spec.arg_modes = r.arg_modes or None
        spec.live_captured = r.live_captured
        spec.grad_switch, spec.autocast_switch, spec.grad_mode = r.grad_switch, r.autocast_switch, r.grad_mode
        if return_backend_traced_fn:
            _compile_backend(spec, target, r.static_positions, r.sym_positions)
        return spec, r.out, r.workdir
    except BaseException:
        shutil.rmtree(r.workdir, ignore_errors=True)
        raise


def _record_once(fn, args, kwargs, static_argnums, static_argnames, *, symbolic_ints, stateful=None,
                 arg_stateful_idxs=None, kwarg_stateful_idxs=None, freeze=False,
                 symbolic_shapes=True, for_export=False, live_captured=False) -> _Recorded:
    """Record one call of `fn` into a trace in a new temporary directory (the caller owns it).
    `for_export`: the trace becomes a file (export()), never replayed here: state the call wrote
    that its result also returns (a decoding step's grown cache) is one output, not two.
    `live_captured`: the arrays `fn` reaches through its closure, globals or `self` are inputs
    read on every replay (else constants, checked on every call); a replay in another framework
    bakes them, converted once, rather than convert every weight on every call."""
    name = _name_of(fn)
    is_module = _is_torch_module(fn)
    source = _source_framework(fn, args, kwargs)
    workdir = tempfile.mkdtemp(prefix="ivytrace-")
    try:
        trace_path = os.path.join(workdir, "trace.ivytrace")
        call = _original_forward(fn) if is_module else fn
        sig = signature_of(call)
        # Buffered: the trace lives only for this call, so per-call writes (for crash safety)
        # would only cost time.
        np = sys.modules.get("numpy")
        # NumPy is recorded whenever the program has imported it: a torch function may convert
        # to NumPy and back (convert.py), and NumPy inputs need it anyway.
        frameworks = ("torch",) if _torch() is not None else ()
        if np is not None:
            frameworks += ("numpy",)
        if _has_jax_array((args, kwargs)):
            frameworks += ("jax",)
        rec = Recorder(trace_path, frameworks=frameworks or ("numpy",), warn_guards=True, argv=sys.argv,
                       buffer_bytes=1 << 20, symbolic_shapes=symbolic_shapes)
        state_in, state_out = [], []
        arg_modes = []   # (holder, qualified name, training flag) of modules among the arguments
        holders = _stateful_objects(fn, args, kwargs, stateful, arg_stateful_idxs, kwarg_stateful_idxs)
        holders += [(which, _holder(which, args, kwargs))
                    for which in _argument_objects(args, kwargs, {id(obj) for _, obj in holders})]
        before = [(which, obj, _attrs(obj)) for which, obj in holders]
        module_state = _module_state(fn) if is_module else []
        # Tensors a plain function reaches through its closure or globals (not inputs, not state
        # it was told about): a write to one is not replayed, which must not be silent.
        handled = {id(v) for _, obj, attrs in before for v in list(attrs.values()) + [obj]}
        captured = [(n, t, t._version) for n, t in ([] if is_module else _captured_tensors(fn))
                    if id(t) not in handled]
        modes = [(qn, m, m.training) for qn, m in fn.named_modules()] if is_module else None
        # A module's plain Python attributes (a call counter, a dict cache) are not graph state
        # unless the module is named stateful: a write to one must not be silent.
        declared = {id(obj) for _, obj in holders}
        attrs_before = _attribute_snapshot(fn) if is_module and id(fn) not in declared else None
        sym_args = {}
        # JAX: which input dims the program's shapes follow, proven by tracing it with JAX's
        # symbolic dims (recorder/jax_shapes.py); done before recording, which it must not enter.
        shape_plan = None
        if "jax" in frameworks and source == "jax" and symbolic_shapes and \
                os.environ.get("IVYTRACE_JAX_SYMBOLIC_SHAPES", "1") != "0":
            from ivytrace.recorder import jax_shapes
            shape_plan, why = jax_shapes.prepare(call, args, kwargs)
            if shape_plan is None:
                logging.getLogger("ivytrace").info("JAX region specialized on its inputs' shapes: %s", why)
        rec.start()
        try:
            args, kwargs = rec.wrap_inputs(args, kwargs)   # NumPy arrays -> recorded arrays
            # Region inputs that are Python numbers: stand-ins of the recorder that opens the region.
            host = rec.recorder_of(source)
            if host is not None and not hasattr(host, "_sym_input"):
                host = None
            if symbolic_ints and host is not None:
                args, kwargs, sym_args = _symbolize_ints(host, sig, args, kwargs, static_argnums, static_argnames)
            inputs = bind_inputs(sig, args, kwargs)
            arg_names = [n for n, _ in inputs]
            # Plan inputs holding no array (jax.jit's static arguments under return_backend_traced_fn)
            static_positions = {i for i, (_, v) in enumerate(inputs) if not _holds_array(v) and not _is_sym(v)}
            sym_positions = {i for i, (_, v) in enumerate(inputs) if _is_sym(v)}
            # State read live on every replay: a traced module's parameters and buffers (frozen:
            # its buffers in train mode only, which the call updates), and the tensor attributes
            # of stateful objects.
            extra = []
            for qn, t, is_buffer in module_state:
                if not freeze or (is_buffer and fn.training):
                    state_in.append(_StateSlot(("fixed", fn), qn, module_tensor=True))
                    extra.append((f"{'buffer' if is_buffer else 'param'}:{qn}", t))
            # A module among the arguments (`fn(x, model)`): its parameters and buffers are read on
            # every replay like a traced module's (they were baked in when traced, so another
            # module, or this one after an optimizer step, silently gave the traced weights).
            arg_module_state = []
            for which, m in _argument_modules(args, kwargs, fn):
                arg_modes.extend((which, qn, sub.training, None) for qn, sub in m.named_modules())
                for qn, t, is_buffer in _module_state(m):
                    if not freeze or (is_buffer and m.training):
                        state_in.append(_StateSlot(which, qn, module_tensor=True))
                        extra.append((f"{_holder_name(which, arg_names)}.{qn}", t))
                        arg_module_state.append((which, qn, t, t._version))
            # Torch modules and tensors the function reaches through its closure, globals or
            # `self` (`lambda x: model(x)`): read on every replay too, and their modes guarded.
            # Baked in, they went stale without a word when written through `.data` (which
            # bumps no version: `p.data -= lr * p.grad`), and a module switched between train()
            # and eval() kept the traced mode's BatchNorm and dropout. Frozen and exported
            # graphs keep them as constants (checked on every call, _captured_checks).
            captured_state = []   # (slot, tensor, version)
            if not is_module and not for_export:
                taken = handled | {id(v) for _, v in inputs} | {id(v) for _, v in extra}
                for slot, label, t in _captured_state_slots(fn, taken):
                    if isinstance(slot, tuple):   # a module's mode: (holder, qualified name, flag)
                        arg_modes.append(slot)
                        continue
                    if freeze or not live_captured:
                        continue
                    state_in.append(slot)
                    extra.append((label, t))
                    captured_state.append((slot, t, getattr(t, "_version", None)))
                live_ids = {id(t) for _, t, _ in captured_state}
                captured = [c for c in captured if id(c[1]) not in live_ids]
            stand_ins = []   # (object, attribute, plain int) replaced by a symbolic input
            used_names = set()

            def state_name(which, a):
                # An argument object's state is named by where it lives (`past.layers[0].keys`);
                # a `stateful` object's by its attribute, numbered when two share one.
                n = f"{_holder_name(which, arg_names)}.{a}" if which[0] != "fixed" else f"state:{a}"
                k = 1
                while n in used_names:
                    k += 1
                    n = f"state{k}:{a}" if which[0] == "fixed" else f"{n}#{k}"
                used_names.add(n)
                return n
            for (which, obj, attrs) in before:
                for a, v in attrs.items():
                    if _is_array(v):
                        state_in.append(_StateSlot(which, a))
                        extra.append((state_name(which, a), v))
                    elif type(v) in (int, float) and host is not None:
                        # An int or float attribute is an input of the graph (`self.count += 1`
                        # then computes the new count from the live one on every replay).
                        s = host._sym_input(v)
                        _set_attribute(obj, a, s)
                        stand_ins.append((obj, a, v, s))
                        state_in.append(_StateSlot(which, a))
                        extra.append((state_name(which, a), s))
            if is_module:
                rec.add_root_module(fn)
            f = _user_level()[1]
            versions = {qn: t._version for qn, t, _ in module_state}
            jax_rec = rec.recorder_of("jax") if shape_plan is not None else None
            if jax_rec is not None:
                jax_rec.use_shape_plan(shape_plan)
            rid = rec.region_begin(name, inputs + extra, f.f_code.co_filename, f.f_lineno)
            switches = _ModeSwitches(lambda: rec.writer.op_events) if "torch" in frameworks else None
            try:
                if switches is not None:
                    switches.start()
                try:
                    out = _call_module_eagerly(fn, args, kwargs) if is_module else fn(*args, **kwargs)
                finally:
                    if switches is not None:
                        switches.stop()
                if jax_rec is not None:
                    jax_rec.end_shape_match(out)
            except BaseException as e:
                _put_back_plain_ints(stand_ins)
                if jax_rec is not None:
                    jax_rec.drop_shape_match()
                rec.region_end(rid, raised=True)
                rec.stop(error=f"{type(e).__name__}: {e}")
                raise
            plain, out_spec = _flatten(out)
            state_values = []
            assigned = _put_back_plain_ints(stand_ins)
            for which, qn, t, version in arg_module_state:
                if t._version != version:   # a BatchNorm's running stats in train mode
                    state_out.append(_StateSlot(which, qn, module_tensor=True))
                    state_values.append(t)
            for slot, t, version in captured_state:
                now = slot.get(args, kwargs)
                if now is not t or version is not None and t._version != version:
                    # written in place (a BatchNorm's running stats, a counter) or rebound (an
                    # nnx BatchNorm's statistics): the replay does the same
                    slot.in_place = now is t and not slot.module_tensor
                    state_out.append(slot)
                    state_values.append(now)
            for qn, t, is_buffer in module_state:
                if t._version != versions[qn]:
                    if is_buffer and fn.training or _holds(state_in, qn):
                        state_out.append(_StateSlot(("fixed", fn), qn, module_tensor=True))
                        state_values.append(t)
                    else:
                        _warn_unreplayed_state(f"ivytrace: {name} wrote {'buffer' if is_buffer else 'parameter'} {qn} in place; "
                                      f"the graph reads it as a constant, so replays do not update it (call "
                                      f"module.train() before tracing to make buffers live state)")
            if attrs_before is not None:
                wrote = [f"{qn + '.' if qn else ''}{a}" for qn, a in
                         _module_attribute_writes(attrs_before, _attribute_snapshot(fn))
                         if not any(id(fn.get_submodule(qn) if qn else fn) == d for d in declared)]
                if wrote:
                    shown = ", ".join(wrote[:4]) + (f" and {len(wrote) - 4} more" if len(wrote) > 4 else "")
                    _warn_unreplayed_state(f"ivytrace: {name} set or filled attribute {shown} of the traced module; the graph "
                                  f"replays its tensor computations and buffers, not Python attributes, so replays "
                                  f"do not update them (name the module with stateful=[...] to replay int, float and "
                                  f"tensor attribute assignments)")
            input_ids = {id(v) for _, v in inputs}
            written = [qn for qn, t, version in captured if t._version != version and id(t) not in input_ids]
            if written:
                shown = ", ".join(written[:4]) + (f" and {len(written) - 4} more" if len(written) > 4 else "")
                _warn_unreplayed_state(f"ivytrace: {name} wrote {shown} in place: tensors it reaches through its closure "
                              f"or globals, which the graph does not write, so replays do not update them (trace "
                              f"the module itself, or name the object holding them with stateful=[...])")
            for (which, obj, old) in before:
                new = _attrs(obj)
                for a, v in new.items():
                    if a in old and old[a] is v:
                        continue
                    v = assigned.get((id(obj), a), v)   # the symbolic int that was assigned
                    if _is_array(v) or v is None or type(v) in (bool, int, float, str) or _is_sym(v):
                        state_out.append(_StateSlot(which, a))
                        state_values.append(v)
                    else:
                        _warn_unreplayed_state(f"ivytrace: {name} set attribute {a!r} of a stateful "
                                      f"{type(obj).__qualname__} to a {type(v).__qualname__}; replays set it to the "
                                      f"same object")
                        state_out.append(_StateSlot(which, a))
                        state_values.append(v)
                for a in old:
                    if a not in new:
                        _warn_unreplayed_state(f"ivytrace: {name} deleted attribute {a!r} of a stateful object; "
                                               f"replays do not")
            # Arrays the call stored into argument objects that held none when it began (an empty
            # transformers cache it filled): the replay does not build those objects.
            tracked = {id(obj) for _, obj in holders}
            grown = [which for which in _argument_objects(args, kwargs, set())
                     if id(_holder(which, args, kwargs)) not in tracked]
            if grown:
                where = ", ".join(_holder_name(which, arg_names) for which in grown[:3])
                _warn_unreplayed_state(f"ivytrace: {name} stored arrays into objects among its arguments that held "
                                       f"none when the call began ({where}); replays do not build them, so those "
                                       f"objects stay as they were (trace with the object already holding its "
                                       f"arrays, e.g. a prefilled cache, or return the object instead)")
            if for_export and state_out:
                returned = {id(x) for x in _leaves(plain)}
                kept = [(slot, v) for slot, v in zip(state_out, state_values) if id(v) not in returned]
                state_out, state_values = [s for s, _ in kept], [v for _, v in kept]
            result = (plain, state_values) if state_out else plain
            rec.region_end(rid, result)
            in_graph = {id(v) for _, v in inputs + extra} | {id(v) for v in state_values}
            captured_checks = [] if is_module else [c for c in _captured_checks(fn) if id(c[3]) not in in_graph]
            out = _plain_arrays(_unsym(out))
        finally:
            rec.stop()
        return _Recorded(workdir=workdir, trace_path=trace_path, out=out, sym_args=sym_args, arg_names=arg_names,
                         captured_checks=captured_checks, arg_modes=arg_modes, live_captured=bool(captured_state),
                         grad_switch=switches.grad if switches is not None and switches.grad_mode is None else None,
                         grad_mode=switches.grad_mode if switches is not None else None,
                         autocast_switch=switches.autocast if switches is not None else None,
                         state_in=state_in, state_out=state_out, out_spec=out_spec, modes=modes,
                         static_positions=static_positions, sym_positions=sym_positions)
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise


def _first_error_line(e) -> str:
    text = (getattr(e, "stderr", "") or str(e)).strip()
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if "error" in line.lower():
            line = line.strip()
            if line.endswith(":") and i + 1 < len(lines):   # a list follows: its first item says what
                line = f"{line} {lines[i + 1].strip()}"
            return line
    return text.splitlines()[0] if text else type(e).__name__


def _put_back_plain_ints(stand_ins) -> dict:
    """After the traced call: no stand-in stays on a user's object. An attribute the call did
    not assign gets its int back; one it assigned a stand-in to gets that value's plain int.
    Returns {(id(object), attribute): assigned stand-in}, for the region's state outputs."""
    from ivytrace.recorder.sym import SymValue
    assigned = {}
    for obj, a, plain, s in stand_ins:
        cur = getattr(obj, a, None)
        if cur is s:
            _set_attribute(obj, a, plain)
        elif isinstance(cur, SymValue):
            assigned[(id(obj), a)] = cur
            _set_attribute(obj, a, cur.value)
    stand_ins.clear()
    return assigned


def _set_attribute(obj, a, v):
    """obj.a = v for the recorder's own stand-ins, also on a frozen dataclass among the
    arguments (its number fields are graph inputs while the call is traced, then put back)."""
    try:
        setattr(obj, a, v)
    except (AttributeError, TypeError, dataclasses.FrozenInstanceError):
        object.__setattr__(obj, a, v)


def _is_sym(v) -> bool:
    from ivytrace.recorder.sym import SymValue
    return isinstance(v, SymValue)


def _captured_state_slots(fn, taken):
    """For the torch modules and tensors a plain function reaches through its closure, globals
    or `self` (as _captured_checks finds them): (_StateSlot, name, tensor) for each parameter,
    buffer and bare tensor, read on every replay, and ((holder, qualified name, training flag,
    submodule), None, None) for each module's mode. `taken`: ids of tensors already inputs or state."""
    torch = sys.modules.get("torch")
    if torch is None:
        return []
    out, seen = [], set(taken)
    for kind, holder, key, v, version, label in _captured_checks(fn):
        if isinstance(v, torch.nn.Module) and label.startswith("module "):
            name = label[len("module "):].strip("'")
            which = ("fixed", v, name)
            out += [((which, qn, sub.training, sub), None, None) for qn, sub in v.named_modules()]
            for qn, t, _ in _module_state(v):
                if id(t) not in seen:
                    seen.add(id(t))
                    out.append((_StateSlot(which, qn, module_tensor=True), f"{name}.{qn}", t))
        elif _is_array(v) and label.startswith("array ") and id(v) not in seen and not _is_jax_key(v):
            seen.add(id(v))
            out.append((_StateSlot(("fixed", holder, label), key, item=kind != 1),
                        label[len("array "):].strip("'"), v))
        elif isinstance(v, torch.Tensor) and label.startswith("tensor ") and id(v) not in seen:
            seen.add(id(v))
            out.append((_StateSlot(("fixed", holder, label), key, item=kind != 1),
                        label[len("tensor "):].strip("'"), v))
    return out


def _is_jax_key(v) -> bool:
    """A JAX PRNG key (typed, or the legacy uint32[2]): one from the closure stays a constant of
    the graph, so include_generators=False can bake the random values drawn from it (a JAX array
    cannot change in place, and rebinding it is checked on every call)."""
    jax = sys.modules.get("jax")
    if jax is None or not isinstance(v, jax.Array):
        return False
    try:
        if jax.dtypes.issubdtype(v.dtype, jax.dtypes.prng_key):
            return True
    except (AttributeError, TypeError):
        pass
    return str(v.dtype) == "uint32" and tuple(v.shape) == (2,)


def _captured_tensors(fn):
    """(name, tensor) for the torch tensors a plain function reaches through its closure cells and
    the globals its code names, with the parameters and buffers of modules found there."""
    torch = sys.modules.get("torch")
    f = getattr(fn, "__func__", fn)
    code = getattr(f, "__code__", None)
    if torch is None or code is None:
        return []
    values = []
    for n, cell in zip(code.co_freevars, getattr(f, "__closure__", None) or ()):
        try:
            values.append((n, cell.cell_contents))
        except ValueError:   # an empty cell
            pass
    g = getattr(f, "__globals__", None) or {}
    values += [(n, g[n]) for n in code.co_names if n in g]
    out = []
    for n, v in values:
        if isinstance(v, torch.Tensor):
            out.append((n, v))
        elif isinstance(v, torch.nn.Module):
            out += [(f"{n}.{qn}", t) for qn, t in v.named_parameters()]
            out += [(f"{n}.{qn}", t) for qn, t in v.named_buffers()]
    return out


_BY_VALUE = object()   # a _captured_checks entry compared by value (a Python number or string)


def _global_names(code, depth=0):
    """The names `code` (and the functions, lambdas and comprehensions it defines) loads as globals."""
    names = {i.argval for i in dis.get_instructions(code) if i.opname == "LOAD_GLOBAL"}
    if depth < 4:
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                names |= _global_names(c, depth + 1)
    return names


def _is_user_function(v) -> bool:
    """A Python function of the program (not of an installed library, the standard library or
    ivytrace): what it reads through its own closure and globals is read by the traced one."""
    code = getattr(v, "__code__", None)
    if not isinstance(v, types.FunctionType) or code is None:
        return False
    path = code.co_filename
    return not (path.startswith("<") and path != "<stdin>" and not path.startswith("<ipython")) and \
        "site-packages" not in path and "dist-packages" not in path and not path.startswith(_PACKAGE_DIR) and \
        not path.startswith(_STDLIB_DIR)


_STDLIB_DIR = os.path.dirname(os.__file__) + os.sep


def _captured_checks(fn):
    """What makes the values a plain function reaches through its closure cells, the globals it
    loads, or a bound method's `self` the ones it was traced with (and, the same way, the
    values of the program's own functions it calls): (kind, holder, key, object, version, label)
    for each link from a cell or global to each torch tensor, through a module's submodules,
    parameters and buffers; for NumPy/JAX arrays, the program's functions and the dicts, lists and
    tuples holding arrays (and each item), the same object;
    for Python numbers, bools and strings, the same value (kind 0: holder.get(key); 1: getattr;
    2: holder[key]).
    A weight written in place (an optimizer step) or reassigned, a submodule replaced, a global
    rebound, a number changed: the graph baked the traced value, and the replay must not pass a
    changed one in silence."""
    torch = sys.modules.get("torch")
    checks, seen, visited = [], set(), set()

    def roots_of(f, prefix, depth):
        f_self = getattr(f, "__self__", None)
        f = getattr(f, "__func__", f)
        code = getattr(f, "__code__", None)
        if code is None or id(f) in visited:
            return []
        visited.add(id(f))
        out = []   # (kind, holder, key, label, depth)
        if f_self is not None and (torch is not None and isinstance(f_self, torch.nn.Module) or
                                   _object_reaches_array(f_self)):
            out.append((1, fn, "__self__", "self", depth))
        for n, cell in zip(code.co_freevars, getattr(f, "__closure__", None) or ()):
            out.append((1, cell, "cell_contents", prefix + n, depth))
        g = getattr(f, "__globals__", None)
        if isinstance(g, dict):
            out += [(0, g, n, prefix + n, depth) for n in sorted(_global_names(code)) if n in g]
        return out

    roots = roots_of(fn, "", 0)
    while roots:
        kind, holder, key, label, depth = roots.pop(0)
        try:
            v = holder.get(key) if kind == 0 else getattr(holder, key) if kind == 1 else holder[key]
        except ValueError:   # an empty cell
            continue
        if torch is not None and isinstance(v, torch.Tensor):
            checks.append((kind, holder, key, v, v._version, f"tensor {label!r}"))
        elif _is_array(v):   # a NumPy or JAX array: rebinding is seen (a NumPy write in place is not)
            checks.append((kind, holder, key, v, None, f"array {label!r}"))
        elif type(v) in (bool, int, float, str):
            checks.append((kind, holder, key, v, _BY_VALUE, f"{type(v).__name__} {label!r} (traced as {v!r})"))
        elif isinstance(v, (collections.abc.Mapping, list, tuple)) and depth < 6 and _holds_array(v):
            # A params pytree (`lambda x: model.apply(params, x)`): rebinding it (`params =
            # update(params, grads)`) or replacing an item is seen; the arrays in it as above.
            checks.append((kind, holder, key, v, None, f"{type(v).__name__} {label!r}"))
            items = v.items() if isinstance(v, collections.abc.Mapping) else enumerate(v)
            roots += [(2, v, k, f"{label}[{k!r}]", depth + 1) for k, _ in items]
        elif _is_user_function(v) and v is not getattr(fn, "__func__", fn):
            checks.append((kind, holder, key, v, None, f"function {label!r}"))
            if depth < 3:
                roots += roots_of(v, f"{label}.", depth + 1)
        elif depth < 6 and id(v) not in seen and _object_reaches_array(v) and \
                not (torch is not None and isinstance(v, torch.nn.Module)):
            # Any other object holding arrays in its attributes (a flax nnx module and its
            # Variables, a NumPy model class): rebinding an attribute (`model.kernel.value =
            # ...`, an nnx optimizer step) is seen, through nested objects, lists and dicts.
            seen.add(id(v))
            checks.append((kind, holder, key, v, None, f"object {label!r}"))
            if isinstance(v, (list, tuple)) or isinstance(v, collections.abc.Sequence) and \
                    not isinstance(v, (str, bytes)):
                roots += [(2, v, i, f"{label}[{i}]", depth + 1) for i in range(len(v))]
            roots += [(1, v, a, f"{label}.{a}", depth + 1) for a in _object_attribute_names(v)]
        elif torch is not None and isinstance(v, torch.nn.Module) and id(v) not in seen:
            checks.append((kind, holder, key, v, None, f"module {label!r}"))
            for qn, m in v.named_modules():
                if id(m) in seen:
                    continue
                seen.add(id(m))
                prefix = f"{label}.{qn}" if qn else label
                for name, child in m._modules.items():
                    if child is not None:
                        checks.append((0, m._modules, name, child, None, f"submodule {prefix}.{name}"))
                for table in (m._parameters, m._buffers):
                    for name, t in table.items():
                        if t is not None:
                            checks.append((0, table, name, t, t._version, f"{prefix}.{name}"))
    return checks


def _object_attribute_names(v):
    """The attributes an object keeps in its __dict__ and __slots__ (no properties run)."""
    names = [a for a in getattr(v, "__dict__", None) or ()] if isinstance(getattr(v, "__dict__", None), dict) else []
    for cls in type(v).__mro__:
        for a in getattr(cls, "__slots__", ()) if not isinstance(getattr(cls, "__slots__", ()), str) else (cls.__slots__,):
            if a not in ("__dict__", "__weakref__") and a not in names:
                names.append(a)
    return names


def _object_reaches_array(v, depth=0, memo=None) -> bool:
    """Whether a plain object (not a number, string, function, class, module or torch module)
    holds a NumPy or JAX array through its attributes, lists and dicts, a few levels down."""
    if memo is None:
        memo = {}
    if id(v) in memo:
        return memo[id(v)]
    memo[id(v)] = False   # a cycle does not reach one by itself
    found = False
    if _is_array(v):
        found = True
    elif depth > 4 or v is None or isinstance(v, (bool, int, float, complex, str, bytes, type, types.ModuleType,
                                                   types.FunctionType, types.BuiltinFunctionType,
                                                   types.MethodType, types.CodeType)) or _is_torch_module(v):
        found = False
    elif isinstance(v, (list, tuple)):
        found = len(v) <= 4096 and any(_object_reaches_array(x, depth + 1, memo) for x in v)
    elif isinstance(v, dict):
        found = len(v) <= 4096 and any(_object_reaches_array(x, depth + 1, memo) for x in v.values())
    elif type(v).__module__ != "builtins" and not type(v).__module__.startswith("ivytrace."):
        try:
            found = any(_object_reaches_array(getattr(v, a, None), depth + 1, memo)
                        for a in _object_attribute_names(v)[:256])
        except Exception:   # an attribute that cannot be read (a slot never set raises AttributeError)
            found = False
    memo[id(v)] = found
    return found


def _holds(slots, qn) -> bool:
    return any(s.module_tensor and s.attr == qn for s in slots)


_MODULE_INTERNALS = frozenset({"_parameters", "_buffers", "_modules", "_forward_hooks", "_forward_pre_hooks",
                               "_backward_hooks", "_state_dict_hooks", "_load_state_dict_pre_hooks",
                               "_non_persistent_buffers_set", "training"})


def _attribute_snapshot(module):
    """{(submodule name, attribute): what identifies its value} for the Python attributes of a
    module tree: the object, and for a dict or list attribute the objects it holds (a cache filled
    in place keeps its identity). Parameters, buffers and submodules are module state, not here."""
    snap = {}
    for qn, m in module.named_modules():
        for a, v in vars(m).items():
            if a in _MODULE_INTERNALS:
                continue
            held = None
            if type(v) is dict and len(v) <= 4096:
                held = tuple((k, id(x)) for k, x in v.items())
            elif type(v) is list and len(v) <= 4096:
                held = tuple(id(x) for x in v)
            snap[(qn, a)] = (v, held)
    return snap


def _module_attribute_writes(before, after):
    """The (submodule name, attribute) a call assigned, added, deleted or filled in place."""
    changed = []
    for key in sorted(set(before) | set(after)):
        b, a = before.get(key), after.get(key)
        if (b is not None and a is not None and type(b[0]) in (bool, int, float, str)
                and type(a[0]) is type(b[0]) and a[0] == b[0]):
            continue   # the same number or string assigned again (a new float object of one value)
        if b is None or a is None or b[0] is not a[0] or b[1] != a[1]:
            changed.append(key)
    return changed


def _module_state(module):
    """(qualified name, tensor, is buffer) of a module's buffers and parameters."""
    out = [(qn, b, True) for qn, b in module.named_buffers() if b is not None]
    out += [(qn, p, False) for qn, p in module.named_parameters()]
    return out


__all__ = ["trace_graph", "freeze", "export", "graph_of", "Graph", "LazyGraph", "CLIError", "RetraceWarning", "StateWarning"]
