"""Which ints in a JAX program's primitive params follow its inputs' shapes, proven by JAX itself.

The JAX recorder records primitives, whose params hold shapes jax.numpy computed in Python
(broadcast_in_dim's `shape`, reshape's `new_sizes`, iota's `shape`). Nothing in one eager run says
which of those ints came from an input's shape, so a JAX graph used to be specialized on its
inputs' whole shapes. JAX can say it: traced with symbolic dimensions (shape polymorphism,
jax.export.symbolic_shape), a function gives a jaxpr whose params hold dimension expressions
(`b`, `2*b`, `b*t`) where the program's shapes follow the inputs, and JAX refuses (raises
InconclusiveDimensionOperation) wherever the program's Python depends on a size in a way it
cannot express.

How it is used (api.py, for trace_graph of a JAX function):
  1. `prepare` (before recording): traces the function to a jaxpr at the recorded shapes and
     again with candidate dims symbolic, and keeps the largest set of symbolic dims whose jaxpr is
     the concrete one with the dims evaluated (same primitives, operands, literals, params): a
     size that changes the program (a Python branch on it, a constant computed from it, a
     `jnp.mean` over it that becomes a dim_as_value) is not made symbolic. Candidates: dim 0 of
     every input that has the first input's batch size (one symbol when the sizes agree), then each
     other dim of size >= 2 of the first input (a new symbol, else the
     symbol of an equal size, else one new symbol with the one dim of that size of each other
     input that has exactly one), at most MAX_ATTEMPTS symbolic traces. Arrays passed directly
     come before those inside containers (a params tree).
  2. While recording (`ShapeMatch`, driven by the JAX recorder): each recorded primitive is
     matched to the next equation of the symbolic jaxpr (nested jit, custom_jvp/custom_vjp and
     remat inlined, as the eager run inlines them): the same primitive, operands that are the same
     values (the same earlier results or inputs, constants equal to its literals and consts) and
     params equal once each dimension expression is evaluated at the recorded sizes. Then the
     params are written with those expressions as values computed from the inputs' shapes
     (ivytrace.sym.* ops over sizes of the inputs), and a replay on other sizes computes them. The
     eager run's own steps that a jaxpr folds into literals (`lax.stage` of a Python number, a cast
     to the dtype a value already has) are matched as the value they pass on.
  3. At the region's end the results must be the jaxpr's outputs. Any difference, anywhere, and
     the region falls back to a guard on each input's whole shape: the graph is then specialized on
     the shapes as before, never wrong.
The inputs' dims that stay static get guards on their size (`int(x.shape[1])`), the symbolic ones a
guard `x.shape[0] >= 1` (JAX's symbolic dims are >= 1) and, where two dims share a symbol, a guard
that they are equal; the ranks are guarded first.

Limits: a program JAX cannot trace with symbolic dims (Python control flow on array values,
`lax.cond`, which the eager run resolves to a branch, a size converted to a NumPy value) stays
specialized on its shapes; so does one that turns a size into an array value (`x * len(x)`,
`x / x.shape[0]`, a mean over a symbolic dim: a dim_as_value equation where the recorded run has a
constant), and regions that mix JAX with torch or NumPy ops or are nested in another. Dims of
size 0 or 1 are never symbolic. Each candidate dim costs one more trace of the function to a
jaxpr (at most MAX_ATTEMPTS), before recording.
"""
from __future__ import annotations

import itertools
import operator
import os
import sys

import numpy as np

import jax
import jaxlib
from jax._src import core as _jcore

try:
    from jax._src.export import shape_poly as _shape_poly
    _DimExpr = _shape_poly._DimExpr
except Exception:   # a JAX without shape polymorphism: no symbolic dims
    _shape_poly = None
    _DimExpr = ()

MAX_ATTEMPTS = 12        # symbolic traces tried by `prepare`

# Primitives whose body the eager run (jit disabled) applies op by op: their jaxpr is inlined.
_INLINE = {"pjit": "jaxpr", "jit": "jaxpr", "closed_call": "call_jaxpr", "core_call": "call_jaxpr",
           "custom_jvp_call": "call_jaxpr", "custom_vjp_call": "call_jaxpr",
           "custom_vjp_call_jaxpr": "fun_jaxpr", "remat": "jaxpr", "checkpoint": "jaxpr"}


class Mismatch(Exception):
    """The eager run and the symbolic jaxpr differ (the reason is the message)."""


# -- jaxprs, flattened ------------------------------------------------------------------------------
# An atom names a value: ("in", k) the k-th array input, ("out", i, j) result j of equation i,
# ("lit", value) a literal, ("const", value) a closed-over constant.

class Flat:
    __slots__ = ("eqns", "outs")

    def __init__(self, eqns, outs):
        self.eqns = eqns   # [(primitive, in atoms, params, out avals, in dtypes)]
        self.outs = outs


def flatten(closed) -> Flat:
    eqns = []

    def walk(jaxpr, const_atoms, in_atoms):
        env = {}
        for v, a in zip(jaxpr.constvars, const_atoms):
            env[v] = a
        for v, a in zip(jaxpr.invars, in_atoms):
            env[v] = a

        def read(x):
            if isinstance(x, _jcore.Literal):
                return ("lit", x.val)
            return env[x]

        for e in jaxpr.eqns:
            ins = [read(x) for x in e.invars]
            # A size as a value (`x / x.shape[0]`, a mean): dim_as_value and its casts are a
            # ("dim", expression, dtype) atom, which the concrete program has as a literal.
            if e.primitive.name == "dim_as_value" and len(e.outvars) == 1:
                env[e.outvars[0]] = ("dim", e.params["dim"], np.dtype(e.outvars[0].aval.dtype))
                continue
            if e.primitive.name == "convert_element_type" and ins and ins[0][0] == "dim":
                env[e.outvars[0]] = ("dim", ins[0][1], np.dtype(e.params["new_dtype"]))
                continue
            key = _INLINE.get(e.primitive.name)
            inner = e.params.get(key) if key else None
            if inner is not None:
                if isinstance(inner, _jcore.ClosedJaxpr):
                    outs = walk(inner.jaxpr, [("const", c) for c in inner.consts], ins)
                else:
                    outs = walk(inner, [], ins)
                for v, a in zip(e.outvars, outs):
                    env[v] = a
                continue
            i = len(eqns)
            eqns.append((e.primitive, ins, e.params, [v.aval for v in e.outvars],
                         [getattr(getattr(x, "aval", None), "dtype", None) for x in e.invars]))
            for j, v in enumerate(e.outvars):
                env[v] = ("out", i, j)
        return [read(x) for x in jaxpr.outvars]

    outs = walk(closed.jaxpr, [("const", c) for c in closed.consts],
                [("in", k) for k in range(len(closed.jaxpr.invars))])
    return Flat(eqns, outs)


# -- dimension expressions ----------------------------------------------------------------------------

def is_dim(v) -> bool:
    return bool(_DimExpr) and isinstance(v, _DimExpr)


def evaluate(e, env):
    """A dimension expression's value with each symbol's value from `env` (ints, or the recorder's
    stand-ins, whose arithmetic records ivytrace.sym.* ops). JAX's own `_evaluate` takes
    `operator.index` of its operands, which would make a stand-in leave with a guard: this walks the
    terms itself."""
    if not is_dim(e):
        return int(e)
    total = None
    for term, coeff in e._sorted_terms:
        v = None
        for factor, power in term._factors:
            f = _factor(factor, env)
            for _ in range(power):
                v = f if v is None else v * f
        v = coeff if v is None else (v if coeff == 1 else v * coeff)
        total = v if total is None else total + v
    return 0 if total is None else total


def _factor(f, env):
    if f.var is not None:
        return env[f.var]
    a, b = (evaluate(o, env) for o in f.operands)
    op = f.operation
    if op == _shape_poly._DimFactor.FLOORDIV:
        return a // b
    if op == _shape_poly._DimFactor.MOD:
        return a % b
    raise Mismatch(f"dimension expression with {op}")   # max/min: no ivytrace.sym op


def _has_dim(v) -> bool:
    if is_dim(v):
        return True
    if type(v) in (tuple, list) or isinstance(v, tuple):
        return any(_has_dim(x) for x in v)
    return False


def _equal_values(a, b) -> bool:
    if a is b:
        return True
    try:
        x, y = np.asarray(a), np.asarray(b)
    except Exception:
        return False
    if x.shape != y.shape or x.dtype.kind != y.dtype.kind:
        return False
    if x.dtype == object or y.dtype == object:
        return False
    return bool(np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"))


def match_param(sym, eager, concrete_env, what):
    """`sym` (a jaxpr param, maybe holding dimension expressions) against `eager` (the recorded
    param): equal once the expressions take the recorded sizes. Returns a function that builds the
    param with the expressions evaluated in an env of stand-ins, or None when `sym` holds none."""
    if is_dim(sym):
        if type(eager) is not int and not isinstance(eager, (int, np.integer)):
            raise Mismatch(f"{what}: {sym} where the eager run has {eager!r}")
        if evaluate(sym, concrete_env) != int(eager):
            raise Mismatch(f"{what}: {sym} is {evaluate(sym, concrete_env)} at the recorded sizes, the eager run has {eager}")
        if not sym._get_vars():
            return None
        return lambda env, e=sym: evaluate(e, env)
    if isinstance(sym, (tuple, list)) and _has_dim(sym):
        if not isinstance(eager, (tuple, list)) or len(eager) != len(sym):
            raise Mismatch(f"{what}: {sym} where the eager run has {eager!r}")
        builders = [match_param(s, e, concrete_env, what) for s, e in zip(sym, eager)]
        if all(b is None for b in builders):
            return None
        items = list(eager)
        kind = type(eager)

        def build(env):
            vals = [b(env) if b is not None else v for b, v in zip(builders, items)]
            if kind in (tuple, list):
                return kind(vals)
            return kind(*vals)   # a NamedTuple
        return build
    try:
        same = sym == eager
        if isinstance(same, np.ndarray):
            same = same.shape == np.shape(eager) and bool(same.all())
        same = bool(same)
    except Exception:
        same = False
    if not same and isinstance(sym, float) and isinstance(eager, float):
        same = sym != sym and eager != eager   # NaN (gather's fill_value)
    if not same:
        raise Mismatch(f"{what}: {sym!r} where the eager run has {eager!r}")
    return None


# -- prepare: the symbolic dims ---------------------------------------------------------------------

class Plan:
    """The symbolic jaxpr of a function and which input dims it keeps symbolic."""

    def __init__(self, flat, leaves, dims, sizes, out_tree, in_shapes):
        self.flat = flat        # Flat of the symbolic jaxpr
        self.in_shapes = in_shapes  # per leaf, its shape with the dimension expressions
        self.leaves = leaves    # the jax.Array inputs, in ("in", k) order
        self.dims = dims        # per leaf, per dim: symbol name or None
        self.sizes = sizes      # symbol -> recorded size
        self.out_tree = out_tree


def _trace(fn, leaves_at, specs):
    def body(*arrays):
        a, k = leaves_at(arrays)
        out = fn(*a, **k)
        # A size returned as a Python number (`x.shape[0] // 3`): the recorder writes the number
        # the eager run returned, a constant of the graph, so its dims cannot be symbolic.
        if any(_has_dim(v) for v in jax.tree_util.tree_leaves(out)):
            raise Mismatch("the result holds a Python number computed from a symbolic size")
        return out
    with _static_slicing(), _sound_equality():
        closed, out_shape = jax.make_jaxpr(body, return_shape=True)(*specs)
    return closed, jax.tree_util.tree_structure(out_shape)


# -- equality of symbolic sizes ----------------------------------------------------------------------
# JAX answers `b == 4` (or `b == t`) False when it cannot prove it, "which is really unsound" (its
# own words, shape_poly.py: __eq__ may not raise because hashing uses it). A program that branches
# on it (`x[:2] if x.shape[0] == 4 else x[:1]`) then gives a jaxpr that is right for every size but
# 4, and equal to the recorded one at a recorded size other than 4: a replay at 4 would be wrong.
# During the symbolic traces, an equality that JAX cannot decide (the sizes' difference may be 0)
# asked by code outside JAX itself raises instead, so such a dim stays static. JAX's own uses pick
# between equivalent ways to compute the same thing (a no-op reshape, a broadcast it can skip).

_JAX_DIRS = tuple(os.path.dirname(m.__file__) + os.sep for m in (jax, jaxlib))


def _asked_by_jax() -> bool:
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename in (__file__, getattr(_shape_poly, "__file__", None)):
        f = f.f_back
    return f is not None and f.f_code.co_filename.startswith(_JAX_DIRS)


class _sound_equality:
    def __enter__(self):
        self.saved = None
        if not _DimExpr:
            return self
        eq = self.saved = _DimExpr.__dict__["__eq__"]
        self.ne_saved = _DimExpr.__dict__["__ne__"]

        def checked_eq(a, b):
            r = eq(a, b)
            if r is False and (isinstance(b, _DimExpr) or isinstance(b, (int, np.integer))):
                try:
                    diff = a - b
                    lb, ub = _shape_poly._bounds_decision(diff, _shape_poly.BoundsPrecision.BEST)
                except Exception:
                    return r
                if _jcore.is_symbolic_dim(diff) and lb <= 0 <= ub and not _asked_by_jax():
                    raise _shape_poly.InconclusiveDimensionOperation(
                        f"the program compares symbolic sizes '{a}' == '{b}', which may be equal")
            return r

        _DimExpr.__eq__ = checked_eq
        _DimExpr.__ne__ = lambda a, b: not checked_eq(a, b)
        return self

    def __exit__(self, *exc):
        if self.saved is not None:
            _DimExpr.__eq__ = self.saved
            _DimExpr.__ne__ = self.ne_saved
        return False


# -- basic indexing on symbolic shapes ---------------------------------------------------------------
# jax.numpy indexes an array whose shape has a symbolic dim by a gather (NDIndexer.to_static_slice
# refuses it: Python's slice.indices needs an int size), where the same program at concrete sizes
# slices, so `x[:, 0]` or `x[..., -1:]` would keep every dim static. During the symbolic traces only,
# slices with int bounds and unit step, int indices, None and Ellipsis are normalized here with
# JAX's symbolic min/max, giving the concrete path's slice/squeeze/expand_dims with dimension
# expressions. A bound JAX cannot decide for every size >= 1 (`x[:2]` on a symbolic dim: 2 or b)
# raises, and indexing falls back to JAX's own paths (then the program differs: the dim stays
# static). This is ivytrace's own normalization, written from Python's slice semantics.

try:
    from jax._src.numpy import indexing as _indexing
    _NDIndexer = _indexing.NDIndexer
except Exception:   # another JAX layout: indexing on symbolic dims keeps them static
    _indexing = _NDIndexer = None


def _bound(v, size, default):
    """A slice bound normalized as slice.indices(size) does for a unit step."""
    if v is None:
        return default
    v = operator.index(v)
    if v < 0:
        return _jcore.max_dim(v + size, 0)
    return _jcore.min_dim(v, size)


def _symbolic_static_slice(indexer):
    IndexType = _indexing.IndexType
    if any(p.typ not in (IndexType.INTEGER, IndexType.ELLIPSIS, IndexType.SLICE, IndexType.NONE)
           for p in indexer.indices):
        raise TypeError("not a basic index")
    start, limit, squeeze, newaxis = [], [], [], []
    shape = indexer.shape
    for p in indexer.expand_ellipses().indices:
        if p.typ == IndexType.NONE:
            newaxis.append(len(start) - len(squeeze) + len(newaxis))
            continue
        axis, = p.consumed_axes
        size = shape[axis]
        if p.typ == IndexType.INTEGER:
            i = operator.index(p.index)
            if i < 0:
                i = i + size
            # In bounds for every size the program may get: JAX decides `0 <= i < size` or raises.
            if not (i >= 0 and i < size):
                raise IndexError(f"index {p.index} out of bounds for axis {axis} of size {size}")
            start.append(i)
            limit.append(i + 1)
            squeeze.append(axis)
            continue
        sl = p.index
        if sl.step not in (None, 1):
            raise ValueError("only unit steps")
        lo = _bound(sl.start, size, 0)
        hi = _bound(sl.stop, size, size)
        start.append(lo)
        limit.append(_jcore.max_dim(lo, hi))
    return _indexing._StaticSliceIndexer(start_indices=start, limit_indices=limit, strides=None, rev_axes=[],
                                         squeeze_axes=squeeze, newaxis_dims=newaxis)


class _static_slicing:
    """While tracing with symbolic dims: basic indexing of a symbolic shape slices (see above)."""

    def __enter__(self):
        self.saved = None
        if _NDIndexer is None or not hasattr(_indexing, "_StaticSliceIndexer"):
            return self
        original = self.saved = _NDIndexer.__dict__["to_static_slice"]

        def to_static_slice(indexer, **kwargs):
            if not any(_jcore.is_symbolic_dim(d) for d in indexer.shape):
                return original(indexer, **kwargs)
            mode = kwargs.get("mode")
            if mode is not None and _indexing.slicing.GatherScatterMode.from_any(mode) not in (
                    _indexing.slicing.GatherScatterMode.PROMISE_IN_BOUNDS, _indexing.slicing.GatherScatterMode.CLIP):
                raise ValueError("not a static slice")
            try:
                return _symbolic_static_slice(indexer)
            except (TypeError, ValueError, IndexError):
                raise   # JAX's own paths then (a dynamic slice or a gather)
            except Exception as e:   # InconclusiveDimensionOperation: the same
                raise ValueError(str(e)) from e

        _NDIndexer.to_static_slice = to_static_slice
        return self

    def __exit__(self, *exc):
        if self.saved is not None:
            _NDIndexer.to_static_slice = self.saved
        return False


def _same_program(sym: Flat, con: Flat, env):
    """The symbolic jaxpr is the concrete one with its dims evaluated at the recorded sizes."""
    if len(sym.eqns) != len(con.eqns) or len(sym.outs) != len(con.outs):
        raise Mismatch(f"{len(sym.eqns)} equations with symbolic dims, {len(con.eqns)} at the recorded shapes")
    for i, (s, c) in enumerate(zip(sym.eqns, con.eqns)):
        if s[0] is not c[0] or len(s[1]) != len(c[1]) or len(s[3]) != len(c[3]):
            raise Mismatch(f"equation {i}: {s[0]} with symbolic dims, {c[0]} at the recorded shapes")
        for a, b in zip(s[1], c[1]):
            _same_atom(a, b, i, env)
        if s[2].keys() != c[2].keys():
            raise Mismatch(f"equation {i} ({s[0]}): params differ")
        for k in s[2]:
            match_param(s[2][k], c[2][k], env, f"equation {i} ({s[0]}) {k}")
    for a, b in zip(sym.outs, con.outs):
        _same_atom(a, b, "out", env)


def _dim_value_equals(atom, value, sizes) -> bool:
    """A ("dim", expression, dtype) atom against a constant of the concrete program or eager run."""
    try:
        v = np.asarray(_plain(value))
    except Exception:
        return False
    return (v.shape == () and v.dtype.kind == atom[2].kind
            and v == np.asarray(evaluate(atom[1], sizes)).astype(atom[2]))


def _same_atom(a, b, where, sizes):
    if a[0] == "dim":
        if b[0] not in ("lit", "const") or not _dim_value_equals(a, b[1], sizes):
            raise Mismatch(f"equation {where}: the size {a[1]} as a value, {_show(b)} at the recorded shapes")
    elif a[0] in ("in", "out") or b[0] in ("in", "out"):
        if a != b:
            raise Mismatch(f"equation {where}: operand {a} with symbolic dims, {b} at the recorded shapes")
    elif not _equal_values(a[1], b[1]):
        raise Mismatch(f"equation {where}: a literal or constant differs")


def prepare(fn, args, kwargs):
    """The Plan for recording `fn(*args, **kwargs)`, or (None, reason)."""
    if _shape_poly is None:
        return None, "this JAX has no shape polymorphism"
    with_paths, treedef = jax.tree_util.tree_flatten_with_path((args, kwargs))
    flat_args = [v for _, v in with_paths]
    # Arrays passed directly (`fn(params, x)`: x) come first: the dims worth making symbolic are
    # theirs, not those of the weights in a params tree.
    positions = sorted((i for i, (path, v) in enumerate(with_paths) if isinstance(v, jax.Array)
                        and not jax.dtypes.issubdtype(v.dtype, jax.dtypes.extended)),
                       key=lambda i: (len(with_paths[i][0]) > 2, i))
    if not positions:
        return None, "no array inputs"
    leaves = [flat_args[i] for i in positions]

    def leaves_at(arrays):
        full = list(flat_args)
        for i, a in zip(positions, arrays):
            full[i] = a
        return jax.tree_util.tree_unflatten(treedef, full)

    try:
        concrete, out_tree = _trace(fn, leaves_at,
                                    [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in leaves])
    except Exception as e:
        return None, f"the function does not trace to a jaxpr ({type(e).__name__})"
    con = flatten(concrete)

    batch = leaves[0].shape[0] if leaves[0].ndim else None
    first = [(k, 0) for k, a in enumerate(leaves) if a.ndim and a.shape[0] == batch and batch >= 2]
    # Other dims: those of the first input (a sequence length, an image size); the other inputs'
    # dims follow it through ties (a weight passed as an argument keeps its own: a conv kernel's
    # size must stay static for ONNX).
    rest = [(0, d) for d in range(1, leaves[0].ndim) if leaves[0].shape[d] >= 2]
    attempts = iter(range(MAX_ATTEMPTS))
    state = {"dims": [[None] * a.ndim for a in leaves], "flat": None, "tree": None}
    names = (f"d{i}" for i in itertools.count())

    def attempt(assign):
        """Try the current dims plus `assign` {(k, d): symbol}; keep them when they hold."""
        if next(attempts, None) is None:
            return False
        dims = [list(x) for x in state["dims"]]
        for (k, d), s in assign.items():
            dims[k][d] = s
        symbols = sorted({s for row in dims for s in row if s})
        scope = _shape_poly.SymbolicScope()
        made = dict(zip(symbols, _shape_poly.symbolic_shape(",".join(symbols), scope=scope))) if symbols else {}
        specs = [jax.ShapeDtypeStruct(tuple(made[s] if s else n for s, n in zip(row, a.shape)), a.dtype)
                 for row, a in zip(dims, leaves)]
        sizes = {s: leaves[k].shape[d] for k, row in enumerate(dims) for d, s in enumerate(row) if s}
        try:
            closed, tree = _trace(fn, leaves_at, specs)
            flat = flatten(closed)
            _same_program(flat, con, sizes)
        except Exception as e:
            state["why"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            return False
        if tree != out_tree:
            return False
        state.update(dims=dims, flat=flat, tree=tree, shapes=[sp.shape for sp in specs])
        return True

    if first:
        s = next(names)
        if not attempt({kd: s for kd in first}):
            for kd in first:
                attempt({kd: next(names)})
    for n, (k, d) in enumerate(rest):
        if state["dims"][k][d]:
            continue
        size = leaves[k].shape[d]
        if attempt({(k, d): next(names)}):
            continue
        same = sorted({s for kk, row in enumerate(state["dims"]) for dd, s in enumerate(row)
                       if s and leaves[kk].shape[dd] == size})
        if any(attempt({(k, d): s}) for s in same):
            continue
        # Dims the program ties (`x * m`): one symbol for this one and, in each other input that
        # has exactly one free dim of its size, that dim (several: which one is ambiguous, as a
        # conv kernel's 3 x 3 x 3 beside 3 channels, and none is taken).
        group = [(k, d)]
        for kk, a in enumerate(leaves):
            same = [dd for dd in range(a.ndim) if a.shape[dd] == size and not state["dims"][kk][dd]]
            if kk != k and len(same) == 1:
                group.append((kk, same[0]))
        if len(group) > 1:
            s = next(names)
            attempt({kd: s for kd in group})
    if state["flat"] is None:
        return None, f"no dim of the inputs can be symbolic (last: {state.get('why')})"
    sizes = {s: leaves[k].shape[d] for k, row in enumerate(state["dims"]) for d, s in enumerate(row) if s}
    return Plan(state["flat"], leaves, state["dims"], sizes, state["tree"], state["shapes"]), None


# -- matching the eager run --------------------------------------------------------------------------

class ShapeMatch:
    """Matches the recorder's primitives to the plan's equations, one at a time (see the module
    docstring). `failed` holds the reason once they differ; nothing is substituted after that."""

    def __init__(self, plan: Plan, ref, symbols):
        self.plan = plan
        self.eqns = plan.flat.eqns
        self.pos = 0
        self.ref = ref              # array -> tid (the recorder's)
        self.env = {}               # tid -> atom
        self.symbols = symbols      # symbol -> stand-in
        self.failed = None
        self.aliases = {}           # atom of a cast the eager run skipped -> the atom it casts
        self.operands = {}          # after step(): operand index -> stand-in to record instead
        for k, a in enumerate(plan.leaves):
            self.env[ref(a)] = ("in", k)

    def fail(self, reason):
        if self.failed is None:
            self.failed = reason

    def _atom(self, a, sym_scalar):
        """The eager operand `a` as an atom: a value the match follows, else ("value", v)."""
        if isinstance(a, jax.Array) and not isinstance(a, _jcore.Tracer):
            atom = self.env.get(self.ref(a))
            if atom is not None:
                return atom
            return ("value", a)
        s = sym_scalar(a)
        return ("value", s.value if s is not None else a)

    def _same(self, j, e):
        j = self._resolve(j)
        if j[0] == "dim":
            return e[0] == "value" and _dim_value_equals(j, e[1], self.plan.sizes)
        if j[0] in ("in", "out"):
            return j == e
        if e[0] in ("in", "out"):
            return False
        try:
            return _equal_values(_plain(j[1]), _plain(e[1]))
        except Exception:
            return False

    def step(self, prim, args, params, sym_scalar):
        """Before the eager primitive runs: its params with dimension expressions as stand-ins
        (None: keep the recorded params) and a continuation taking the result."""
        self.operands = {}
        if self.failed:
            return None, None
        try:
            return self._step(prim, args, params, sym_scalar)
        except Mismatch as e:
            self.fail(str(e))
        except Exception as e:   # a bug here must cost the symbolic dims, not the recording
            self.fail(f"{type(e).__name__}: {e}")
        return None, None

    def _step(self, prim, args, params, sym_scalar):
        eager = [self._atom(a, sym_scalar) for a in args]
        # Skip equations the eager run does not apply: a cast to the dtype a value already has.
        while self.pos < len(self.eqns) and self.eqns[self.pos][0] is not prim and self._identity_eqn(self.pos):
            self._alias_eqn(self.pos)
            self.pos += 1
        eq = self.eqns[self.pos] if self.pos < len(self.eqns) else None
        try:
            if eq is None or eq[0] is not prim:
                raise Mismatch(f"the eager run applies {prim.name} where the symbolic jaxpr has "
                               f"{_show_eqn(eq, self._resolve) if eq else 'nothing more'} (equation {self.pos})")
            return self._match(eq, prim, eager, params)
        except Mismatch:
            # A step that passes its operand on unchanged is that operand, whatever comes next;
            # a reshape or broadcast to its own shape is written with that shape as computed.
            if _passes_value_on(prim, args, params):
                src = eager[0]
                return self._own_shape(prim, params, src), (lambda result: self._alias(result, src))
            # A computation on constants only (the eager run casting a pad value that the jaxpr
            # holds as a literal): its results are constants, compared by value where read (a
            # result that follows a size is an equation of the jaxpr there, and differs).
            if all(e[0] == "value" for e in eager):
                return None, None
            raise

    def _own_shape(self, prim, params, src):
        key = {"broadcast_in_dim": "shape", "reshape": "new_sizes"}.get(prim.name)
        if key is None or src[0] not in ("in", "out"):
            return None
        src = self._resolve(src)
        if src[0] == "in":
            dims = self.plan.in_shapes[src[1]]
        elif src[0] == "out":
            dims = self.eqns[src[1]][3][src[2]].shape
        else:
            return None
        b = match_param(tuple(dims), tuple(params[key]), self.plan.sizes, f"{prim.name} {key}")
        if b is None:
            return None
        new = dict(params)
        new[key] = b(self.symbols)
        return new

    def _match(self, eq, prim, eager, params):
        i = self.pos
        if len(eq[1]) != len(eager):
            raise Mismatch(f"{prim.name}: {len(eager)} operands, the jaxpr's has {len(eq[1])}")
        subs = {}
        for n, (j, e) in enumerate(zip(eq[1], eager)):
            if not self._same(j, e):
                raise Mismatch(f"{prim.name}: operand {n} is not the jaxpr's ({_show(j)} vs {_show(e)})")
            j = self._resolve(j)
            if j[0] == "dim":
                # The constant the eager run computed from a size: the size, as a number of the graph
                # (a Python int or float, which the primitive takes as a weakly typed scalar).
                if j[2] not in (np.dtype(np.int32), np.dtype(np.float32)) or jax.config.jax_enable_x64:
                    raise Mismatch(f"{prim.name}: a size as a {j[2]} value")
                subs[n] = j
        if eq[2].keys() != params.keys():
            raise Mismatch(f"{prim.name}: params {sorted(params)} vs the jaxpr's {sorted(eq[2])}")
        builders = {}
        for k, v in params.items():
            b = match_param(eq[2][k], v, self.plan.sizes, f"{prim.name} {k}")
            if b is not None:
                builders[k] = b
        self.pos += 1
        new = None
        if builders:
            new = dict(params)
            for k, b in builders.items():
                new[k] = b(self.symbols)
        self.operands = {}
        for n, j in subs.items():
            v = evaluate(j[1], self.symbols)
            self.operands[n] = v * 1.0 if j[2].kind == "f" else v
        return new, (lambda result: self._bind(i, result))

    def _identity_eqn(self, i):
        """A cast the eager run may not apply: to the dtype its operand has, or of a literal or
        constant (which the eager run casts in NumPy, into a constant)."""
        prim, ins, params, outs, in_dtypes = self.eqns[i]
        if prim.name != "convert_element_type" or len(ins) != 1:
            return False
        src = self._resolve(ins[0])
        return src[0] in ("lit", "const") or (in_dtypes[0] is not None and params.get("new_dtype") == in_dtypes[0])

    def _alias_eqn(self, i):
        """Equation i is a cast the eager run does not apply: its result is its operand, or the
        cast constant (compared by value where the eager run reads it)."""
        prim, ins, params, outs, in_dtypes = self.eqns[i]
        src = self._resolve(ins[0])
        if src[0] in ("lit", "const"):
            src = ("lit", np.asarray(_plain(src[1])).astype(params["new_dtype"]))
        self.aliases[("out", i, 0)] = src

    def _resolve(self, atom):
        return self.aliases.get(atom, atom) if atom[0] == "out" else atom

    def _bind(self, i, result):
        outs = result if isinstance(result, (list, tuple)) else [result]
        for j, r in enumerate(outs):
            if isinstance(r, jax.Array):
                self.env[self.ref(r)] = ("out", i, j)

    def _alias(self, result, src):
        if isinstance(result, jax.Array):
            if src[0] == "value":
                return   # a constant passed on: the result is compared by value where it is read
            self.env[self.ref(result)] = src

    def finish(self, out, sym_scalar):
        """At the region's end: the results are the jaxpr's outputs."""
        if self.failed:
            return
        try:
            while self.pos < len(self.eqns) and self._identity_eqn(self.pos):
                self._alias_eqn(self.pos)
                self.pos += 1
            if self.pos != len(self.eqns):
                raise Mismatch(f"the eager run stopped {len(self.eqns) - self.pos} equations before the jaxpr's end")
            leaves, tree = jax.tree_util.tree_flatten(out)
            if tree != self.plan.out_tree:
                raise Mismatch("the result's structure is not the jaxpr's")
            for n, (j, a) in enumerate(zip(self.plan.flat.outs, leaves)):
                if not self._same(j, self._atom(a, sym_scalar)):
                    raise Mismatch(f"result {n} is not the jaxpr's output")
        except Mismatch as e:
            self.fail(str(e))
        except Exception as e:
            self.fail(f"{type(e).__name__}: {e}")


def _show_eqn(eq, resolve=lambda a: a):
    params = {k: v for k, v in eq[2].items() if k in ("new_dtype", "shape", "new_sizes", "broadcast_dimensions")}
    return f"{eq[0].name}({', '.join(_show(resolve(a)) for a in eq[1])}; {params})"


def _show(atom):
    if atom[0] in ("in", "out"):
        return str(atom)
    v = atom[1]
    return f"{atom[0]} {type(v).__name__} {getattr(v, 'dtype', '')} {str(v)[:40]}"


def _plain(v):
    if isinstance(v, jax.Array):
        return np.asarray(v)
    return v


def _passes_value_on(prim, args, params) -> bool:
    """An eager step a jaxpr folds away: `lax.stage` of a number, a cast to the dtype it has, a
    broadcast or reshape to the shape it has."""
    if prim.name == "stage":
        return len(args) == 1
    if prim.name in ("broadcast_in_dim", "reshape") and len(args) == 1:
        shape = tuple(np.shape(args[0]))
        new = params.get("shape" if prim.name == "broadcast_in_dim" else "new_sizes")
        dims = params.get("broadcast_dimensions", tuple(range(len(shape))))
        return (new is not None and tuple(new) == shape and tuple(dims) == tuple(range(len(shape)))
                and params.get("dimensions") is None)
    if prim.name == "convert_element_type" and len(args) == 1:
        dt = getattr(args[0], "dtype", None)
        if dt is None:
            try:
                dt = np.asarray(args[0]).dtype
            except Exception:
                return False
        return params.get("new_dtype") == dt
    return False


__all__ = ["prepare", "Plan", "ShapeMatch", "Mismatch", "evaluate", "flatten", "is_dim"]
