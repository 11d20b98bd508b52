"""The JAX recorder: one op record per JAX primitive applied eagerly.

How calls are captured, with no change to the user's code:
  * JAX applies a primitive outside any transformation through `EvalTrace.process_primitive`
    (jax._src.core). While the recorder is installed that method is wrapped: each primitive
    application the program makes (`jnp.tanh(x)` -> tanh, `x @ w` -> dot_general, `x.at[i].add(v)`
    -> scatter-add, `jax.random.normal(key, ...)` -> random_wrap, random_bits, ...) becomes one
    op record named after the module attribute that holds the primitive ("jax.lax.tanh_p",
    "jax._src.random.prng.random_bits_p"; see schemas/jax.textproto), with the primitive's params
    as keyword arguments. Primitives applied by JAX while running another primitive (a PRNG
    implementation's threefry rounds, dispatch internals) are not recorded: a "busy" flag is up
    while a recorded primitive runs.
  * Code under `jax.jit` (nested jit calls included): the recorder sets `jax_disable_jit` while it is
    installed, so a jitted function runs its Python body op by op and every primitive it applies is
    recorded, inlined in the caller (there is no "jit" op in the trace). Control flow follows:
    `lax.scan` and `lax.fori_loop` are unrolled by JAX itself, `lax.cond`/`lax.switch`/`lax.while_loop`
    turn their predicate into a Python value, which the recorder writes as a guard (below) named
    after them ("jax.lax.cond.__bool__", "jax.lax.switch.__int__", "jax.lax.while_loop.__bool__")
    with the user's source line; the graph holds the branch and the iterations that ran. Where JAX
    cannot run the loop in Python (a while_loop under vmap), the primitive itself (while_p) is
    recorded and the plan export refuses it, naming it and the line.
  * Guards: `bool(x)`, `int(x)`, `float(x)`, `complex(x)`, `operator.index(x)`, `x.item()`,
    `x.tolist()` and `np.asarray(x)`/`np.array(x)` (which read a CPU array through the buffer
    protocol: the numpy module functions are wrapped) on a jax.Array write a GuardEvent with the
    value Python saw and the user's source line (the first frame outside jax, jaxlib, numpy and
    ivytrace); so does each array `jax.device_get(tree)` hands back, and np.asarray called by
    jax.numpy's boolean indexing (`x[mask]`, `x.at[mask].set(v)` turn the mask into NumPy
    indices: _JNP_HOST_READERS). `memoryview(x)` or a C
    extension reading the buffer is not seen (the value leaves JAX without a guard).
  * Shapes: `x.shape` and `len(x)` in the user's code (not in JAX's internals) write a ShapeRead
    record. Which primitive params follow the inputs' dims is proven by JAX's symbolic shapes
    (jax_shapes.py; trace_graph prepares a plan, `use_shape_plan`): those params are recorded as
    ivytrace.sym.* values computed from the inputs' sizes, and each input gets guards per dim.
    Without a plan (or when the eager run differs from the symbolic jaxpr) each input's whole
    shape is a guard.

Why not jaxprs: tracing each jitted call to its closed jaxpr and recording the equations would
give the same primitives (a jaxpr's equations are what the body applies), but without the concrete
values the trace needs at every step (constants, region outputs, random draws, guard values) and
with cond/while/scan as jaxpr-valued params a plan cannot hold. Running the body op by op gives
each primitive with its operands' values, nested jit inlined for free, and control flow resolved
by JAX itself the way the program ran.

Values: JAX arrays are immutable, so every array has an id and its own storage, and its version
is always 0; `x.at[i].set(v)` is the functional scatter it is (a new array). Arrays the trace has
not seen in the current region (weights made before it, NumPy arrays and typed Python scalars JAX
feeds to a primitive) are written as constants the first time an op reads them.

Numbers: a Python int or float the caller passes to a traced function is a stand-in (sym.py;
api.py makes them) and an input of the graph. JAX makes a number into a weakly typed scalar when
a primitive takes it (canonicalize_value: the stand-ins' handler below) or when jax.numpy casts it
(lax._convert_element_type, lax.asarray, lax.stage: wrapped while recording, into a recorded
convert_element_type of the stand-in). A number JAX puts into a primitive's params (shapes, slice
bounds, integer_pow's exponent) or reads through NumPy leaves with a guard on its value.

Random: jax.random is functional. `random_bits_p` (the op that draws from a key) is marked random in
the schema: its outputs are recorded, so `--bake-generators` can replace it by the recorded bits
when its key does not come from a region input. Key derivations (`random_seed`, `random_split`,
`random_fold_in`, `random_wrap`/`random_unwrap`) are ordinary deterministic ops.

Limits:
  * While recording, jitted code runs op by op (slower than compiled, and results may differ from
    a compiled run in the last bits where XLA would fuse); the replay does the same ops, so it
    matches the recorded run bit for bit.
  * Control flow inside jit is specialized on the path taken (guards on cond/while predicates);
    there are no structured cond/while/scan ops in the graph. A `lax.scan` is unrolled (a long scan
    makes a long trace).
  * Since jitted code runs eagerly, Python control flow on array values inside a jitted function
    (which JAX would reject with a ConcretizationTypeError when compiling) runs while recording; it
    is recorded as a guard like any other.
  * Transformations applied by the program (jax.grad, jax.vmap, jax.jvp) are recorded as the
    primitives they apply eagerly (the batched / differentiated ops), not as transformations.
  * Typed PRNG keys (`jax.random.key(...)`) have an extended dtype no trace tensor can hold: a key
    made before the region (a constant) is recorded as its key data plus a random_wrap op; a key
    passed in as a region input is replayed from the caller's argument but has no recorded value.
  * Primitives not in schemas/jax.textproto - those whose params hold a jaxpr or a Python function
    (custom_linear_solve behind jnp.linalg.solve, callbacks, pallas) among them - are recorded (such
    params as opaque values), and the plan export refuses them naming the op and its source line.
  * Ahead-of-time compiled calls (`jax.jit(f).lower(x).compile()(x)`) run an executable without
    applying primitives one by one: they are not recorded.
  * Only the thread that installed the recorder is recorded.

Shared with the NumPy recorder (array_recorder.py): the busy flag, the caller-location lookup,
value writing, guard and shape-read records, region framing.
"""
from __future__ import annotations

from builtins import len  # the builtin itself: while recording, builtins.len is sym._len (one Python call more)

import logging
import os
import sys
import threading
import time
import weakref

import jax
import numpy as np
from jax._src import core as _jcore

from ivytrace.recorder import jax_shapes as _jax_shapes
from ivytrace.recorder import sym as _sym
from ivytrace.recorder.sym import _len as _sym_len
from ivytrace.recorder.array_recorder import (CONSTANT, DTYPES, FOLD_LIMIT, FOLDABLE, FOLDABLE_OP,  # noqa: F401
                                              GUARD_VALUE_LIMIT, RAISED, RANDOM, RANDOM_OUTPUT, REGION_INPUT,
                                              REGION_OUTPUT, ArrayRecorder, busy_flag, caller_location)
from ivytrace.recorder.encode import A_DTYPE, A_SYMBOL, A_TENSOR, ArgEncoder, ld, varint, enc_opaque
from ivytrace.recorder import opevent as _op
from ivytrace.recorder.tags import REF
from ivytrace.recorder.writer import TAG_GUARD
from ivytrace.v1 import common_pb2, trace_pb2

_DTYPES = dict(DTYPES)
_DTYPES[np.dtype(jax.numpy.bfloat16)] = common_pb2.BFLOAT16


def _pkg_dir(mod):
    return os.path.dirname(os.path.abspath(mod.__file__)) + os.sep


import jaxlib  # noqa: E402


def _lib_dirs():
    """Libraries JAX calls into (their shape reads and conversions are JAX's, not the user's)."""
    out = []
    for name in ("ml_dtypes", "opt_einsum", "scipy"):
        mod = sys.modules.get(name)
        if mod is not None and getattr(mod, "__file__", None):
            out.append(_pkg_dir(mod))
    return out


_INTERNAL_DIRS = tuple({_pkg_dir(jax), _pkg_dir(jaxlib), _pkg_dir(np),
                        os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep, *_lib_dirs()})
# (file id, line) of the user's frame: the first outside jax, jaxlib, numpy and ivytrace.
_location = caller_location(_INTERNAL_DIRS + ("<frozen",))

from jax._src.array import ArrayImpl as _ArrayImpl  # noqa: E402  (every concrete jax.Array)
from jax._src import literals as _literals  # noqa: E402
from jax._src import dtypes as _jdtypes  # noqa: E402
from jax._src.random import prng as _prng  # noqa: E402
import jax.extend.random  # noqa: E402,F401  (the PRNG implementations' public names)

_KeyArray = _prng.PRNGKeyArray
_ARRAY_SHAPE = _ArrayImpl.__dict__["shape"]   # the descriptor before the recorder wraps it
# Typed Python scalars / NumPy arrays JAX hands to primitives (weak-typed constants).
_TYPED_SCALARS = tuple(getattr(_literals, n) for n in ("TypedInt", "TypedFloat", "TypedComplex")
                       if hasattr(_literals, n))

_GUARDS = ("__bool__", "__int__", "__float__", "__index__", "__complex__", "item", "tolist", "__array__")

# Primitives whose params hold a jaxpr: recorded as the public jax.lax function that builds it.
_PUBLIC = {"scatter-add": "jax.lax.scatter_add", "scatter-mul": "jax.lax.scatter_mul",
           "scatter-min": "jax.lax.scatter_min", "scatter-max": "jax.lax.scatter_max"}
_PUBLIC_DROP = ("update_jaxpr", "update_consts")
# Where primitive objects live, searched in this order for an op's name (the first attribute holding
# the primitive names it; public modules first).
_HOMES = ("jax.lax", "jax._src.random.prng", "jax._src.ad_util", "jax._src.lax.lax", "jax._src.lax.slicing",
          "jax._src.lax.convolution", "jax._src.lax.windowed_reductions", "jax._src.lax.special",
          "jax._src.lax.linalg", "jax._src.lax.control_flow", "jax._src.core")
_ENUMS = {}     # enum class -> public qualified name
_RECORDS = {}   # dimension-number record class -> public qualified name
_PRNG_IMPLS = {"threefry2x32": "jax.extend.random.threefry_prng_impl", "rbg": "jax.extend.random.rbg_prng_impl",
               "unsafe_rbg": "jax.extend.random.unsafe_rbg_prng_impl"}
for _n in ("Precision", "GatherScatterMode", "RoundingMethod", "FftType"):
    if hasattr(jax.lax, _n):
        _ENUMS[getattr(jax.lax, _n)] = f"jax.lax.{_n}"
for _n in ("ConvDimensionNumbers", "GatherDimensionNumbers", "ScatterDimensionNumbers"):
    if hasattr(jax.lax, _n):
        _RECORDS[getattr(jax.lax, _n)] = f"jax.lax.{_n}"

_shapes: dict = {}
_REF_ID, _REF_STORAGE, _REF_DTYPE, _REF_SHAPE = REF.ID, REF.STORAGE, REF.DTYPE, REF.SHAPE
_state, _busy, _Busy = busy_flag()
_REC = None
_get_ident = threading.get_ident
# Param values encoded once per (name, type, value): their bytes depend on nothing else (not
# float: 0.0 == -0.0; NumPy dtypes only those with a trace dtype, whose bytes are that dtype's).
_PLAIN_PARAMS = frozenset((bool, int, str, type(None)))
_DTYPE_TYPES = frozenset(type(dt) for dt in _DTYPES)
_names: dict = {}   # primitive -> recorded op name


def _op_name(prim) -> str:
    name = _names.get(prim)
    if name is None:
        name = _PUBLIC.get(prim.name)
        if name is None:
            for modname in _HOMES:
                mod = sys.modules.get(modname)
                if mod is None:
                    continue
                for k, v in vars(mod).items():
                    if v is prim:
                        name = f"{modname}.{k}"
                        break
                if name:
                    break
        if name is None:   # not reachable by name: recorded, refused by the plan export
            name = f"jax.primitive.{prim.name}"
        _names[prim] = name
    return name


# Primitives whose params hold jaxprs (a plan cannot) and whose eager implementation evaluates
# them primitive by primitive: not recorded themselves, so what they evaluate is
# (jnp.linalg.solve/inv -> custom_linear_solve -> lu, triangular_solve, ...).
_TRANSPARENT = frozenset({"custom_linear_solve", "linear_solve"})


def _process_primitive(self, primitive, args, params, /):
    rec = _REC
    if (rec is None or _busy() or not rec.active or threading.get_ident() != rec.thread
            or primitive.name in _TRANSPARENT):
        return _ORIGINAL["process_primitive"](self, primitive, args, params)
    return rec.record(self, primitive, args, params)


_ORIGINAL: dict = {}


_CONTROL_FLOW_DIR = os.path.join(_pkg_dir(jax), "_src", "lax", "control_flow") + os.sep
# The control-flow functions that, with jit disabled, take their predicate or index as a Python
# value (by function name in jax/_src/lax/control_flow/): the guard is named after them.
_CONTROL_FLOW = {"cond": "cond", "_cond": "cond", "switch": "switch", "_switch_internal": "switch",
                 "while_loop": "while_loop"}


def _make_guard(gname, base):
    def guard(self, *args, **kwargs):
        result = base(self, *args, **kwargs)
        rec = _REC
        if rec is not None and rec.active and not _busy() and threading.get_ident() == rec.thread:
            code = sys._getframe(1).f_code
            flow = _CONTROL_FLOW.get(code.co_name) if code.co_filename.startswith(_CONTROL_FLOW_DIR) else None
            # "jax.lax.cond.__bool__": the predicate of a lax.cond; the runtime checks the guard by
            # the last component, as for "jax.Array.__bool__".
            rec.guard(f"jax.lax.{flow}.{gname}" if flow else f"jax.Array.{gname}", self, result)
        return result
    guard.__name__ = gname
    guard.__ivytrace_original__ = base
    return guard


# jax.numpy code that reads an array's values on the host and goes on with them in Python: a
# boolean index (`x[mask]`, `x.at[mask].set(v)`) becomes the NumPy indices of its True elements,
# constants of the trace, so the mask's value is a guard as if the user had read it.
_JNP_HOST_READERS = (os.path.join(_pkg_dir(jax), "_src", "numpy", "indexing.py"),)


def _np_converter(fname, current):
    """np.asarray(x) & co. read a CPU jax.Array through the buffer protocol, which Python code
    cannot hook: the module functions are wrapped instead (calls by the user's code, and by the
    jax.numpy code in _JNP_HOST_READERS)."""
    real = current
    while hasattr(real, "__ivytrace_original__"):   # under the NumPy recorder's own wrapper
        real = real.__ivytrace_original__

    def convert(*args, **kwargs):
        rec = _REC
        if (args and isinstance(args[0], _ArrayImpl) and rec is not None and rec.active and not _busy()
                and threading.get_ident() == rec.thread
                and (not (f := sys._getframe(1).f_code.co_filename).startswith(_INTERNAL_DIRS)
                     or f in _JNP_HOST_READERS)):
            with _Busy():
                result = real(*args, **kwargs)
            rec.guard("jax.Array.__array__", args[0], result)
            return result
        return current(*args, **kwargs)
    convert.__name__ = fname
    convert.__wrapped__ = current
    return convert


# wrapper -> what it calls: the recorder's own host reads (busy, or not of a jax.Array) go
# straight there, as the wrapper would send them (one Python call less per value).
_NP_PASS: dict = {}


def _device_get(current):
    """jax.device_get(tree) hands the user NumPy values: a guard per jax.Array leaf."""
    def device_get(x):
        rec = _REC
        if (rec is None or not rec.active or _busy() or threading.get_ident() != rec.thread
                or sys._getframe(1).f_code.co_filename.startswith(_INTERNAL_DIRS)):
            return current(x)
        with _Busy():
            result = current(x)
            pairs = list(zip(jax.tree_util.tree_leaves(x), jax.tree_util.tree_leaves(result)))
        for a, v in pairs:
            if isinstance(a, _ArrayImpl):
                rec.guard("jax.Array.__array__", a, v)
        return result
    device_get.__name__ = "device_get"
    device_get.__wrapped__ = current
    return device_get


_LEN_CODE = _sym_len.__code__


def _len(base):
    def length(self):
        v = base(self)
        rec = _REC
        if rec is not None and rec.active and not _busy() and threading.get_ident() == rec.thread:
            f = sys._getframe(1)
            if f.f_code is _LEN_CODE:   # through builtins.len while torch is recorded (sym.py)
                f = f.f_back
            if not f.f_code.co_filename.startswith(_INTERNAL_DIRS):
                rec.shape_read("jax.Array.__len__", self, v)
        return v
    length.__name__ = "__len__"
    return length


def _shape_get(base):
    def shape(self):
        v = base.__get__(self)
        rec = _REC
        if rec is not None and rec.active and not _busy() and threading.get_ident() == rec.thread:
            fn = sys._getframe(1).f_code.co_filename
            if not fn.startswith(_INTERNAL_DIRS):
                rec.shape_read("jax.Array.shape", self, v)
        return v
    return shape


def _key_iter(self):
    if self.ndim == 0:
        raise TypeError("iteration over a 0-d key array")
    impl = self._impl
    return (_prng.random_wrap(k, impl=impl) for k in _prng.random_unwrap(self))


# -- numbers the caller passes: inputs of the graph (recorder/sym.py) ------------------------------
# A Python int or float argument of a traced JAX function is a stand-in (api.py), as in torch and
# NumPy. JAX turns a Python number into a weakly typed scalar (a TypedInt/TypedFloat) when a
# primitive is applied to it (`x * alpha` -> mul_p.bind(x, alpha) -> canonicalize_value(alpha));
# the stand-ins register their own handler there, which makes that scalar from the plain value and
# remembers which stand-in it came from, so the op records the stand-in (a value of the graph
# computed from the input) instead of a constant. Everywhere else a stand-in leaves with a guard on
# its value (sym.py): a shape (`jnp.zeros(n)`, a reshape), `jnp.asarray(n)`, a primitive param
# (JAX bakes those into the primitive), Python control flow.
class JaxSymInt(_sym.SymInt):
    __slots__ = ()


class JaxSymBool(_sym.SymBool):
    __slots__ = ()


class JaxSymFloat(_sym.SymFloat):
    __slots__ = ()


_sym.SYM_CLASSES.update((JaxSymInt, JaxSymBool, JaxSymFloat))
# `alpha * x`: the stand-in's operator defers to the array's reflected one, which records it.
_sym.DEFER_TYPES.append(_ArrayImpl)
# id(typed scalar JAX made from a stand-in) -> (that scalar, the stand-in); emptied when the
# outermost region ends (the scalar is kept alive here, so its id is not reused before).
_sym_scalars: dict = {}


def _canonicalize_number(v):
    c = _jdtypes.canonicalize_value(v.value)
    if type(c) in _TYPED_SCALARS and _REC is not None and _REC.active:
        _sym_scalars[id(c)] = (c, v)
    return c


def _canonicalize_bool(v):
    return _jdtypes.canonicalize_value(bool(v))   # True and False are singletons: a guard


# Registered with JAX as Python scalar types, weakly typed, the way JAX registers its own symbolic
# dimensions (jax/_src/export/shape_poly.py): jax.numpy's dtype promotion then treats a stand-in
# as the number it stands for.
for _cls, _plain_type in ((JaxSymInt, int), (JaxSymFloat, float), (JaxSymBool, bool)):
    _jdtypes.python_scalar_types.add(_cls)
    _jdtypes.python_scalar_types_to_dtypes[_cls] = _jdtypes.python_scalar_types_to_dtypes[_plain_type]
    if _plain_type is not bool:
        _jdtypes.register_weak_scalar_type(_cls)
        _jdtypes.register_canonicalize_value_handler(_cls, _canonicalize_number)
    else:
        _jdtypes.register_canonicalize_value_handler(_cls, _canonicalize_bool)
# An operand entry standing for a stand-in's value: never a constant, so the op is not folded.
_SYM_IN = (None, -1)
_SYM_NUMBERS = (JaxSymInt, JaxSymFloat)
from jax._src.lax import lax as _lax_internal  # noqa: E402
_INT32 = (-(1 << 31), (1 << 31) - 1)


def _convert_element_type(base):
    """jax.numpy's promotion casts a Python number with lax._convert_element_type, which makes a
    strongly typed number a host constant (np.asarray: a guard on a stand-in). A stand-in is
    cast by the convert_element_type primitive instead: recorded, reading the stand-in, and
    giving a jax.Array (weakly typed where the number would have stayed one), so that whatever
    JAX does with it next is recorded too."""
    def convert(operand, new_dtype=None, weak_type=False, sharding=None, warn_on_complex_to_real_cast=True):
        if _is_sym_number(operand):
            new = _jdtypes.dtype(operand) if new_dtype is None else new_dtype
            return _lax_internal.convert_element_type_p.bind(operand, new_dtype=new, weak_type=weak_type,
                                                             sharding=sharding)
        return base(operand, new_dtype, weak_type, sharding, warn_on_complex_to_real_cast)
    convert.__wrapped__ = base
    return convert


def _weak_array(base):
    """lax.asarray(number) goes through np.asarray (a guard on a stand-in), and lax.stage(number)
    (jnp.asarray's fast path) through a primitive no ONNX lowering takes: a stand-in becomes a
    weakly typed jax.Array by the recorded cast above instead, as both make of a number."""
    def weak_array(x, /):
        if _is_sym_number(x):
            return _lax_internal._convert_element_type(x, weak_type=True)
        return base(x)
    weak_array.__name__ = base.__name__
    weak_array.__wrapped__ = base
    return weak_array


def _sym_shape_of(fname, current):
    """np.shape / np.ndim of a stand-in (JAX asks them of every operand): a number's, () and 0,
    without reading its value through __array__ (a guard)."""
    scalar = () if fname == "shape" else 0

    def shape_of(a, *args, **kwargs):
        if type(a) in _sym.SYM_CLASSES:
            return scalar
        return current(a, *args, **kwargs)
    shape_of.__name__ = fname
    shape_of.__wrapped__ = current
    return shape_of


def _is_sym_number(v) -> bool:
    """A stand-in of the recording JAX recorder that JAX can hold as a weakly typed scalar (an int
    within int32 unless x64 is on: a larger one goes JAX's own way, through NumPy, guarded)."""
    if type(v) not in _SYM_NUMBERS or _REC is None or not _REC.active or _busy():
        return False
    value = v.value
    return type(value) is float or jax.config.jax_enable_x64 or _INT32[0] <= value <= _INT32[1]


class JaxRecorder(ArrayRecorder, _sym.SymHost):
    # JAX is recorded at the level of primitives, whose params hold shapes that jax.numpy
    # computed in Python from the arrays' shapes (reshape's new_sizes, broadcast_in_dim's shape,
    # the element count a mean divides by). Nothing in a primitive says which of its ints came
    # from a shape. Where trace_graph proved it with JAX's symbolic shapes (jax_shapes.py,
    # `use_shape_plan`), those params are values computed from the inputs' sizes and the inputs
    # get guards per dim; otherwise a JAX graph is specialized on its inputs' shapes, as jax.jit
    # is: each region input's shape is a guard (a replay on another shape raises GuardError, and
    # a LazyGraph traces again).
    def _input_guard(self, entry, rid, file, line):
        self._dtype_guard(entry, rid, file, line)
        if self._shape_plan is not None and len(self._regions) == 1:
            self._deferred_guards.append((entry, rid, file, line))   # see _start_shape_match
            return
        self._shape_guard(entry, rid, file, line)

    def _dtype_guard(self, entry, rid, file, line):
        """Primitive params hold the dtypes jax.numpy worked out in Python (convert_element_type's
        new_dtype, a literal's dtype in jnp.zeros(n, x.dtype)): a JAX graph is specialized on its
        inputs' dtypes, as jax.jit is, so each input's dtype is a guard."""
        try:
            dt = _DTYPES.get(np.dtype(entry[0].dtype))
        except (AttributeError, TypeError):   # a typed PRNG key (key<fry>): its impl is part of its type
            return
        if dt is None:
            return
        ref = common_pb2.TensorRef.FromString(self._tensor_ref(*entry))
        g = trace_pb2.GuardEvent(tensor=common_pb2.TensorRef(id=ref.id, version=ref.version, storage=ref.storage),
                                 op=self._intern("jax.Array.dtype"), value=common_pb2.Arg(dtype=dt),
                                 file=self._intern(file) if file else 0, line=line, region=rid)
        self.w.add(TAG_GUARD, g.SerializeToString())

    def _shape_guard(self, entry, rid, file, line):
        a = entry[0]
        shape = getattr(a, "shape", None)
        if shape is None:
            return
        ref = common_pb2.TensorRef.FromString(self._tensor_ref(*entry))
        value = common_pb2.Arg()
        value.tuple.SetInParent()
        for d in shape:
            value.tuple.items.add().i = int(d)
        g = trace_pb2.GuardEvent(tensor=common_pb2.TensorRef(id=ref.id, version=ref.version, storage=ref.storage),
                                 op=self._intern("jax.Array.shape"), value=value,
                                 file=self._intern(file) if file else 0, line=line, region=rid)
        self.w.add(TAG_GUARD, g.SerializeToString())

    # -- symbolic shapes (jax_shapes.py) -----------------------------------------------------------
    def use_shape_plan(self, plan):
        """The next region (trace_graph's) records `plan`'s symbolic dims (jax_shapes.prepare)."""
        self._shape_plan = plan
        self._deferred_guards = []

    def prepare_shapes(self, fn, args, kwargs):
        """`use_shape_plan` of jax_shapes.prepare(fn, args, kwargs), run unrecorded (the
        ivytrace.region decorator: the next region is `fn`'s). Off with IVYTRACE_JAX_SYMBOLIC_SHAPES=0."""
        if os.environ.get("IVYTRACE_JAX_SYMBOLIC_SHAPES", "1") == "0" or self._regions:
            return
        with _Busy():
            plan, why = _jax_shapes.prepare(fn, args, kwargs)
        if plan is None:
            logging.getLogger("ivytrace").info("JAX region specialized on its inputs' shapes: %s", why)
        else:
            self.use_shape_plan(plan)

    def drop_shape_match(self):
        """The region raised: its plan and match go with it."""
        self._shape_plan = self._shape_match = None
        self._deferred_guards = []
        self._match_inputs = set()

    def _bind_region_inputs(self, rid, tensors, extra, file, line):
        super()._bind_region_inputs(rid, tensors, extra, file, line)
        if self._shape_plan is not None:
            if len(self._regions) == 1:
                self._start_shape_match(file, line)
            else:   # a nested region: not the function the plan is of
                self._fall_back_to_shapes("a nested region")

    def _start_shape_match(self, file, line):
        plan = self._shape_plan
        self._shape_plan = None
        inputs = {id(e[0]): e for e, *_ in self._deferred_guards}
        if not all(id(a) in inputs for a in plan.leaves):   # an input the region does not name
            self._fall_back_to_shapes("an array input is not a region input")
            return
        # Inputs with a symbolic dim get guards per dim; the others keep one on the whole shape.
        self._match_inputs = {id(a) for a, row in zip(plan.leaves, plan.dims) if any(row)}
        deferred, self._deferred_guards = self._deferred_guards, []
        for e in deferred:
            if id(e[0][0]) in self._match_inputs:
                self._deferred_guards.append(e)
            else:
                self._shape_guard(*e)
        with _Busy():
            # Ranks first (a size read of a missing dim would fail before its guard), then each
            # dim: a static one pinned to its size, a symbolic one >= 1 (JAX's symbolic dims are)
            # and equal to the other dims of its symbol.
            fid = self._intern(file) if file else 0
            for e, rid, _, _ in self._deferred_guards:
                if id(e[0]) in self._match_inputs:
                    ref = common_pb2.TensorRef.FromString(self._tensor_ref(*e, full=False))
                    g = trace_pb2.GuardEvent(tensor=ref, op=self._intern("jax.Array.ndim"),
                                             value=common_pb2.Arg(i=len(e[0].shape)), file=fid, line=line, region=rid)
                    self.w.add(TAG_GUARD, g.SerializeToString())
            symbols = {}
            for a, row in zip(plan.leaves, plan.dims):
                if id(a) not in self._match_inputs:
                    continue
                for d, (n, name) in enumerate(zip(a.shape, row)):
                    size = self._sym_leaf(a, "ivytrace.sym.size", d, int(n))
                    if name is None:
                        int(size)
                    elif name not in symbols:
                        symbols[name] = size
                        bool(size >= 1)
                    else:
                        bool(size == symbols[name])
        self._shape_match = _jax_shapes.ShapeMatch(plan, self._ref, symbols)

    def end_shape_match(self, out):
        """Before the region's end: the result must be the symbolic jaxpr's; else (or if any op
        differed) the inputs get guards on their whole shapes. Returns why it fell back, or None."""
        m = self._shape_match
        if m is None:
            if self._shape_plan is not None:   # the region never bound its inputs here
                self._shape_plan = None
            return None
        with _Busy():
            m.finish(out, self._sym_scalar_of)
        self._shape_match = None
        if m.failed:
            self._fall_back_to_shapes(m.failed)
            return m.failed
        self._deferred_guards = []
        self._match_inputs = set()
        return None

    def _fall_back_to_shapes(self, reason):
        self._shape_plan = None
        self._shape_match = None
        guards, self._deferred_guards = self._deferred_guards, []
        for entry, rid, file, line in guards:
            self._shape_guard(entry, rid, file, line)
        self._match_inputs = set()
        self.shape_fallback = reason
        logging.getLogger("ivytrace").info("JAX region specialized on its inputs' shapes: %s", reason)

    @staticmethod
    def _sym_scalar_of(v):
        s = _sym_scalars.get(id(v)) if _sym_scalars else None
        return s[1] if s is not None and s[0] is v else None

    _Busy = _Busy
    _location = staticmethod(_location)
    _dtypes = _DTYPES
    SymIntType = JaxSymInt
    SymBoolType = JaxSymBool
    SymFloatType = JaxSymFloat

    def __init__(self, session):
        super().__init__(session)   # _ids: id(array) -> (weakref, tid)
        # Tensor ids of their own range: torch and NumPy share one sequence from 1 (convert.py),
        # and a program may run NumPy or torch ops next to JAX ones in one trace.
        self._next = 1 << 40
        self._known = set()     # tids known in the current frame
        self._const = set()     # tids that are constants
        self._inputs = set()    # tids of the current region's inputs
        self._np_patched = []
        self._jit_was_disabled = None
        self._enc = _JaxEncoder(self._enc_in)
        self._enc_out = _JaxEncoder(self._enc_out_tensor)
        self._enc_param = _JaxEncoder(self._enc_in, params=True)
        self._shape_plan = None     # jax_shapes.Plan for the next region (use_shape_plan)
        self._shape_match = None    # jax_shapes.ShapeMatch of the region being recorded
        self._deferred_guards = []  # the region inputs' shape guards, until the match ends
        self._match_inputs = set()
        self.shape_fallback = None  # why the last symbolic plan fell back to static shapes
        self._prims = {}            # primitive -> (op name, OpEvent.op field, params left out, random)
        self._param_fields = {}     # (param name, type, value) -> its kwarg field, for plain values

    # -- lifecycle -------------------------------------------------------------------------
    def install(self):
        global _REC
        _REC = self
        self.active = True
        if "process_primitive" not in _ORIGINAL:
            _ORIGINAL["process_primitive"] = _jcore.EvalTrace.process_primitive
        self._set(_jcore.EvalTrace, "process_primitive", _process_primitive)
        for g in _GUARDS:
            base = getattr(_ArrayImpl, g, None)
            if base is not None:
                self._set(_ArrayImpl, g, _make_guard(g, base))
        # Iterating a typed key array (`k1, k2 = jax.random.split(key)`) slices its key data and
        # wraps the slices without applying a primitive; while recording it goes through the
        # primitives (random_unwrap, unstack, random_wrap), so every key is an op's output.
        self._set(_KeyArray, "__iter__", _key_iter)
        for fname in ("asarray", "array", "asanyarray"):
            self._set_np(fname)
        for fname in ("shape", "ndim"):
            self._set_np(fname, _sym_shape_of)
        self._set(jax, "device_get", _device_get(jax.device_get))
        self._set(_lax_internal, "_convert_element_type",
                  _convert_element_type(_lax_internal.__dict__["_convert_element_type"]))
        for fname in ("asarray", "stage"):
            self._set(_lax_internal, fname, _weak_array(_lax_internal.__dict__[fname]))
        shape = _ArrayImpl.__dict__.get("shape")
        if isinstance(shape, property):
            self._set(_ArrayImpl, "shape", property(_shape_get(shape)))
        if "__len__" in _ArrayImpl.__dict__:
            self._set(_ArrayImpl, "__len__", _len(_ArrayImpl.__dict__["__len__"]))
        # Jitted code runs op by op, so its primitives are applied (and recorded) eagerly.
        self._jit_was_disabled = bool(jax.config.jax_disable_jit)
        jax.config.update("jax_disable_jit", True)

    def _set_np(self, fname, make=None):
        current = getattr(np, fname)
        wrapper = (make or _np_converter)(fname, current)
        if make is None:
            _NP_PASS[wrapper] = current
        self._np_patched.append((fname, current, wrapper))
        setattr(np, fname, wrapper)

    def _set(self, owner, name, value):
        self._patched.append((owner, name, owner.__dict__.get(name)))
        setattr(owner, name, value)

    def uninstall(self):
        global _REC
        if not self.active:
            return
        self.active = False
        self._restore_patches()
        for fname, current, wrapper in reversed(self._np_patched):
            if getattr(np, fname) is wrapper:   # else wrapped again since; ours passes calls through
                setattr(np, fname, current)
        self._np_patched.clear()
        _NP_PASS.clear()
        _sym_scalars.clear()
        if self._jit_was_disabled is not None:
            jax.config.update("jax_disable_jit", self._jit_was_disabled)
        if _REC is self:
            _REC = None

    # -- identity ---------------------------------------------------------------------------------
    def _ref(self, a):
        r = self._ids.get(id(a))
        if r is None or r[0]() is not a:
            tid = self._next
            self._next += 1
            try:
                w = weakref.ref(a)
            except TypeError:   # no weak references: a new id at every sighting (not kept)
                return tid
            r = _untracked((w, tid))
            self._ids[id(a)] = r
            if len(self._ids) > self._sweep_at:
                self._sweep()
        return r[1]

    def _ref_full(self, a):
        """(tensor id, full TensorRef bytes) of a jax.Array: the bytes are kept with its id (an
        array's dtype and shape never change), so an array read by many ops is encoded once."""
        ids = self._ids
        r = ids.get(id(a))
        if r is not None and r[0]() is a:
            if len(r) == 3:
                return r[1], r[2]
            tid = r[1]
        else:
            tid = self._ref(a)
            r = ids.get(id(a))
            if r is None or r[1] != tid:   # no weak reference: not kept
                return tid, self._tensor_ref(a, tid)
        ref = self._tensor_ref(a, tid)
        ids[id(a)] = _untracked((r[0], tid, ref))
        return tid, ref

    def _tensor_ref(self, a, tid, full=True) -> bytes:
        b = _REF_ID + varint(tid) + _REF_STORAGE + varint(tid)
        if full:
            # The unpatched shape getter: this runs on every operand and result.
            shape = _ARRAY_SHAPE.__get__(a) if type(a) is _ArrayImpl else tuple(a.shape)
            dt = _DTYPES.get(a.dtype)   # extended dtypes (PRNG keys) have no entry
            if dt:
                b += _REF_DTYPE + varint(dt)
            if shape:
                sh = _shapes.get(shape)
                if sh is None:
                    sh = _shapes[shape] = ld(_REF_SHAPE, b"".join(varint(int(d)) for d in shape))
                b += sh
        return b

    def _enc_in(self, a, ins):
        if type(a) is _ArrayImpl:
            tid, ref = self._ref_full(a)
        else:
            tid = self._ref(a)
            ref = self._tensor_ref(a, tid)
        ins.append((a, tid))
        if tid not in self._known:
            if isinstance(a, _KeyArray):
                self._wrap_key_constant(a, ref)
            else:
                self._write_value(a, ref, CONSTANT)
                self._const.add(tid)
            self._known.add(tid)
        return ld(A_TENSOR, ref)

    def _wrap_key_constant(self, key, ref):
        """A typed key the region did not make (made before it): its value has an extended dtype
        no trace tensor can hold, so its key data is the constant and a random_wrap op (the
        primitive jax.random.wrap_key_data applies) makes the key from it, before the op that
        reads it."""
        impl = _PRNG_IMPLS.get(key._impl.name)
        data = key._base_array
        dtid = self._ref(data)
        dref = self._tensor_ref(data, dtid)
        self._write_value(data, dref, CONSTANT)
        self._known.add(dtid)
        self._const.add(dtid)
        name = _op_name(_prng.random_wrap_p)
        impl_arg = ld(A_SYMBOL, impl.encode()) if impl else enc_opaque(key._impl)
        parts = [_op.op_field(self._intern(name)), _op.arg_field(ld(A_TENSOR, dref)),
                 _op.kwarg_field("impl", impl_arg), _op.result_field(ld(A_TENSOR, ref))]
        fid, line = _location(self._intern)
        parts.append(_op.tail(0, fid, line, threading.get_ident(), None))   # made here: no clocks
        _op.write_op(self.w, parts)

    def _enc_out_tensor(self, a, outs):
        if type(a) is _ArrayImpl:
            tid, ref = self._ref_full(a)
        else:
            tid = self._ref(a)
            ref = self._tensor_ref(a, tid)
        outs.append((a, tid))
        return ld(A_TENSOR, ref)

    def _host_array(self, a):
        prev = getattr(_state, "busy", False)   # `with _Busy()`, inlined: a value per constant
        _state.busy = True
        try:
            f = np.asarray
            # tobytes() is C order (np.ascontiguousarray would make 0-d 1-d)
            return _NP_PASS.get(f, f)(a)
        finally:
            _state.busy = prev

    def _has_value(self, a) -> bool:
        return not isinstance(a, _KeyArray)

    # -- recording -------------------------------------------------------------------------------
    def _prim_info(self, prim):
        name = _op_name(prim)
        info = self._prims[prim] = (name, _op.op_field(self._intern(name)),
                                    _PUBLIC_DROP if prim.name in _PUBLIC else (), self._schemas.is_random(name))
        return info

    def record(self, trace, prim, args, params):
        info = self._prims.get(prim)
        if info is None:
            info = self._prim_info(prim)
        name, op_field, drop, random = info
        ins = []
        parts = [op_field]
        prev = getattr(_state, "busy", False)   # the busy flag up (as `with _Busy()`), inlined: every op
        _state.busy = True
        try:
            m = self._shape_match
            then = None
            written = params
            operands = None
            if m is not None:
                if len(self._regions) != 1:
                    m.fail("an op in a nested region")
                else:
                    new, then = m.step(prim, args, params, self._sym_scalar_of)
                    if new is not None:
                        written = new   # params with sizes computed from the inputs' shapes
                    operands = m.operands   # constants that are sizes: the sizes, computed
            arg_field = _op.arg_field
            if operands:
                for n, a in enumerate(args):
                    parts.append(arg_field(_sym_param(operands[n], ins) if n in operands
                                           else self._enc.encode(a, ins)))
            else:
                enc_in = self._enc_in
                encode = self._enc.encode
                for a in args:
                    parts.append(arg_field(enc_in(a, ins) if type(a) is _ArrayImpl else encode(a, ins)))
            if written:
                kwarg_field = _op.kwarg_field
                encode = self._enc_param.encode
                cache = self._param_fields
                for k, v in written.items():
                    if k in drop:
                        continue
                    tv = type(v)
                    if tv in _PLAIN_PARAMS or (tv is tuple and all(type(x) is int for x in v)) \
                            or (tv in _DTYPE_TYPES and v in _DTYPES):
                        # A value whose bytes follow from its type and value alone: encoded once.
                        key = (k, tv, v)
                        b = cache.get(key)
                        if b is None:
                            b = kwarg_field(k, encode(v, ins))
                            if len(cache) < 4096:
                                cache[key] = b
                        parts.append(b)
                    else:
                        parts.append(kwarg_field(k, encode(v, ins)))
            start = time.perf_counter_ns()
            try:
                result = _ORIGINAL["process_primitive"](trace, prim, args, params)
            except BaseException:
                self._finish_op(parts, name, ins, None, start, raised=True)
                raise
            if random or type(result) is not _ArrayImpl:
                self._finish_op(parts, name, ins, result, start)
            elif _jax_finish is None or _jax_finish(self, parts, ins, result, start) is NotImplemented:
                self._finish_array(parts, ins, result, start)
            if then is not None:
                then(result)
        finally:
            _state.busy = prev
        return result

    def _finish_array(self, parts, ins, result, start):
        """_finish_op for the common case, one jax.Array result of an op that is not random (the
        same record, with less Python work: this runs on every op). The Python twin of
        _speedups.jax_finish, which runs instead when the C extension is built."""
        end = time.perf_counter_ns()
        tid, ref = self._ref_full(result)
        parts.append(_op.result_field(ld(A_TENSOR, ref)))
        const = self._const
        flags = 0
        foldable = True
        for e in ins:
            if e[1] not in const:
                foldable = False
                break
        if foldable and _nbytes(result) <= FOLD_LIMIT:
            flags = FOLDABLE_OP
        self._known.add(tid)
        if foldable:
            const.add(tid)
        else:
            const.discard(tid)
        fid, line = _location(self._intern)
        parts.append(_op.tail(flags, fid, line, _get_ident(), start - self._t0, end - start))
        _op.write_op(self.w, parts)
        if flags:
            self._write_value(result, ref, FOLDABLE)
        self.w.emit()

    def _is_const(self, entry):
        return entry[1] in self._const

    def _set_known(self, entry, const):
        self._known.add(entry[1])
        if const:
            self._const.add(entry[1])
        else:
            self._const.discard(entry[1])

    _nbytes = staticmethod(lambda a: _nbytes(a))

    # -- regions: frames of known tids (sets; every version is 0) ----------------------------------
    def _enter_frame(self):
        self._frames.append((self._known, self._const, self._inputs))
        self._known, self._const, self._inputs = set(), set(), set()

    def _leave_frame(self):
        inner_known, inner_const, inputs = self._known, self._const, self._inputs
        self._known, self._const, self._inputs = self._frames.pop()
        if not self._frames:
            _sym_scalars.clear()
        # What the region made is known after it too (its inputs only if they were before).
        self._known |= inner_known - inputs
        self._const |= inner_const - inputs

    def _region_input(self, entry):
        self._known.add(entry[1])
        self._inputs.add(entry[1])

    # -- stand-ins (recorder/sym.py): JAX hands out none for shapes (see _input_guard) -----------
    def _sym_frame(self):
        if self._regions and self.active and threading.get_ident() == self.thread:
            return self._known
        return None

    def _sym_tensor_arg(self, a):
        # Sizes of the region inputs a symbolic-shape plan names (see _start_shape_match).
        if id(a) in self._match_inputs and self._regions:
            tid = self._ref(a)
            if tid in self._inputs:
                return ld(A_TENSOR, self._tensor_ref(a, tid, full=False))
        return None

    def _sym_location(self):
        return _location(self._intern)

    def _sym_region(self):
        return self._regions[-1] if self._regions else 0

    def _sym_new_id(self) -> int:
        tid = self._next
        self._next += 1
        return tid

    def _is_known(self, entry) -> bool:
        return entry[1] in self._known

    def _learn(self, entry):
        self._known.add(entry[1])


def _nbytes(a) -> int:
    try:
        return int(a.nbytes)
    except Exception:
        return 0


def _typed_scalar(v, ts, handler):
    """A typed scalar JAX made from a Python number: the stand-in's value where the number was one
    (see _canonicalize_number), else a constant 0-d array."""
    s = _sym_scalars.get(id(v)) if _sym_scalars else None
    if s is not None and s[0] is v:
        return _sym_param(s[1], ts)
    f = np.asarray
    return handler(_NP_PASS.get(f, f)(v, dtype=v.dtype), ts)


def _enc_dtype(v, ts):
    try:
        dt = np.dtype(v)
    except TypeError:
        return enc_opaque(v)
    e = _DTYPES.get(dt)
    return A_DTYPE + varint(e) if e else enc_opaque(v)


def _sym_param(v, ts):
    """A stand-in (a number input, or a size computed from the inputs' shapes) as an operand or
    param: a reference to its value in the graph, which makes the op unfoldable."""
    b = v.arg()
    if b[:1] == A_TENSOR:
        ts.append(_SYM_IN)
    return b


class _JaxEncoder(ArgEncoder):
    """Primitive operands and params -> Arg bytes. Arrays go to `handler`; NumPy arrays and typed
    scalars that JAX feeds to primitives are arrays too (constants); params become plain values
    (`params=True`: NumPy scalars become Python numbers), enums symbols, dimension-number records
    {"__type__": class, field: value...} dicts."""

    def __init__(self, handler, params=False):
        super().__init__()
        self.table[_ArrayImpl] = handler
        self.table[_KeyArray] = handler
        self.table[np.ndarray] = handler
        self.subclass_handlers.append((np.ndarray, handler))
        for t in _TYPED_SCALARS:
            self.table[t] = lambda v, ts, h=handler: _typed_scalar(v, ts, h)
        for dt in list(_DTYPES):
            self.table[type(dt)] = _enc_dtype
            if params:   # a NumPy scalar in a param (pad's padding_config, split's sizes): a number
                self.table[dt.type] = lambda v, ts: self.encode(v.item(), ts)
            else:        # an operand: a 0-d array
                self.table[dt.type] = lambda v, ts, h=handler: h(np.asarray(v), ts)
        self.table[type] = lambda v, ts: (_enc_dtype(v, ts) if issubclass(v, np.generic) else enc_opaque(v))
        for cls, qual in _ENUMS.items():
            self.table[cls] = lambda v, ts, q=qual: ld(A_SYMBOL, f"{q}.{v.name}".encode())
        for cls, qual in _RECORDS.items():
            self.table[cls] = lambda v, ts, q=qual: self._record(q, v, ts)
        # A primitive as a param (select_and_scatter_add's select_prim): by name, a schema symbol.
        self.table[_jcore.Primitive] = lambda v, ts: ld(A_SYMBOL, _op_name(v).encode())
        self.subclass_handlers.append((_jcore.Primitive, self.table[_jcore.Primitive]))
        if params:   # a size computed from the inputs' shapes (jax_shapes.py): its value in the graph
            for c in (JaxSymInt, JaxSymBool):
                self.table[c] = _sym_param
        self.table[_prng.PRNGImpl] = lambda v, ts: (ld(A_SYMBOL, _PRNG_IMPLS[v.name].encode())
                                                    if v.name in _PRNG_IMPLS else enc_opaque(v))

    def _record(self, qual, v, ts):
        fields = getattr(v, "_fields", None) or [f for f in getattr(type(v), "__dataclass_fields__", {})]
        if not fields:
            return enc_opaque(v)
        return self._dict({"__type__": qual, **{f: getattr(v, f) for f in fields}}, ts)


def recorder_for(session) -> JaxRecorder:
    return JaxRecorder(session)


# The end of the common primitive in C when ivytrace._speedups is built (jax_finish writes what
# JaxRecorder._finish_array writes), else in Python.
try:
    if os.environ.get("IVYTRACE_NO_SPEEDUPS") == "1":
        raise ImportError
    from ivytrace import _speedups
    from ivytrace.recorder.tags import c_tags as _c_tags
    _speedups.set_tags(_c_tags(), trace_pb2.INPLACE)
    _speedups.jax_setup(_location, FOLD_LIMIT, FOLDABLE_OP, FOLDABLE)
    _jax_finish = _speedups.jax_finish
    # Id table entries off the cyclic GC's lists (see _speedups.untracked): thousands live between
    # sweeps, and each full collection of a large program's heap walked them.
    _untracked = _speedups.untracked
except (ImportError, AttributeError):   # not built, switched off, or an extension built before these
    _jax_finish = None

    def _untracked(entry):
        return entry
