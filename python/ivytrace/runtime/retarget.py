"""Retargeting: replaying a plan recorded in one framework with another framework's functions.

Each step's op has a canonical op (OpSchema.canonical in schemas/); the target framework's schema
file lists how it implements canonical ops (TargetImpl: public functions and how the recorded
arguments map onto them). This module holds what the data cannot:
  * binding a step's recorded arguments to its op's parameters (by the schema's Param list);
  * choosing the first impl whose conditions hold;
  * the named argument conversions an ImplArg can ask for (CONVERSIONS): index and axis
    arithmetic, dimension numbers into einsum subscripts... Each is a small pure function of
    Python values, or of an array's shape; none calls into a framework's ops;
  * converting arrays at the plan's boundary (inputs, constants) into the target framework.
Nothing here comes from a plan file: the plan names canonical ops through its functions, the
schemas name the target functions, and both go through the allow-list.
"""
from __future__ import annotations

import functools
import math
import string

from ivytrace.runtime.errors import PlanError
from ivytrace.runtime.values import CONTAINERS, DTYPE_NAMES, container, dtype_of, literal as _torch_literal

FRAMEWORKS = ("torch", "numpy", "jax")


class Unsupported(Exception):
    """This step has no implementation in the target framework (the reason says why)."""


def framework_of(function: str) -> str:
    head = function.split(".", 1)[0]
    if head in ("numpy", "jax"):
        return head
    if head == "ivytrace":
        return "ivytrace"
    return "torch"


# -- the target's values --------------------------------------------------------------------------
def target_dtype(target: str, enum: int, where: str):
    if target == "torch":
        return dtype_of(enum, where)
    name = DTYPE_NAMES.get(enum)
    if name is None:
        raise PlanError(f"{where}: dtype {enum} is not supported by this runtime")
    if target == "jax":
        import jax.numpy as jnp
        return getattr(jnp, name)
    import numpy as np
    if name == "bfloat16":
        raise PlanError(f"{where}: NumPy has no bfloat16")
    return np.dtype(name)


def literal_for(target: str):
    """The `literal` decoder of a retargeted plan: dtypes become the target's dtypes; a JAX
    dimension-number record ({"__type__": ..., fields}) stays a dict of its fields (the
    conversions read them; the source framework need not be installed)."""
    def lit(arg, allow, where):
        kind = arg.WhichOneof("kind")
        if kind == "dtype":
            return target_dtype(target, arg.dtype, where)
        if kind == "device":
            return None   # the target's default device (CPU)
        if kind in CONTAINERS:
            v = container(arg, kind, allow, where, lit)
            if kind == "dict" and "__type__" in v:
                v = dict(v)
                v.pop("__type__")
            return v
        return _torch_literal(arg, allow, where)
    return lit


def to_numpy(x):
    import numpy as np
    if isinstance(x, np.ndarray):
        return x
    mod = type(x).__module__
    if mod.startswith("torch"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def converter(target: str):
    """A function turning any framework's array into the target's (the boundary of a retargeted
    plan). Values that are not arrays (Python numbers, None) pass through."""
    import numpy as np
    if target == "numpy":
        def conv(x):
            if isinstance(x, np.ndarray) or not hasattr(x, "shape"):
                return x
            return to_numpy(x)
    elif target == "torch":
        import torch

        def conv(x):
            if isinstance(x, torch.Tensor) or not hasattr(x, "shape"):
                return x
            a = to_numpy(x)
            if not a.flags.writeable:   # np.asarray of a jax.Array is read-only; torch wants to own it
                a = a.copy()
            return torch.from_numpy(a)
    elif target == "jax":
        import jax
        import jax.numpy as jnp

        def conv(x):
            if isinstance(x, jax.Array) or not hasattr(x, "shape"):
                return x
            return jnp.asarray(to_numpy(x))
    else:
        raise PlanError(f"cannot retarget to framework {target!r}: expected one of {', '.join(FRAMEWORKS)}")
    return conv


def constant_maker(target: str):
    from ivytrace.runtime import values
    if target == "torch":
        return values.tensor_from_proto
    if target == "numpy":
        return values.array_from_proto
    from ivytrace.runtime.jax_values import array_from_tensor_proto
    return array_from_tensor_proto


# -- binding a step to its op's parameters --------------------------------------------------------
def bind_step(step, op, list_arg, where):
    """{param name: Arg} for the parameters the step gives. `list_arg(items)` makes a list Arg
    (the variadic parameter's)."""
    params = list(op.param)
    positional = [p for p in params if not p.keyword_only]
    bound = {}
    args = list(step.args)
    for i, p in enumerate(positional):
        if p.variadic:
            rest = args[i:]
            # torch's x.view((2, 3)) and x.view(2, 3): one tuple or list is the whole shape
            if len(rest) == 1 and rest[0].WhichOneof("kind") in ("list", "tuple"):
                bound[p.name] = rest[0]
            elif rest:
                bound[p.name] = list_arg(rest)
            args = []
            break
        if i < len(args):
            bound[p.name] = args[i]
    else:
        if len(args) > len(positional):
            raise Unsupported(f"{len(args)} positional arguments, the schema lists {len(positional)}")
    names = {p.name: p.name for p in params}
    names.update((a, p.name) for p in params for a in p.alias)   # np.clip(a_min=) is `min`
    for kw in step.kwargs:
        if kw.name not in names:
            raise Unsupported(f"keyword {kw.name!r} is not a parameter in the schema")
        bound[names[kw.name]] = kw.value
    return bound


def _is_unset(bound, op, name):
    a = bound.get(name)
    if a is None or a.WhichOneof("kind") in (None, "none"):
        return True
    for p in op.param:
        if p.name == name and p.HasField("default"):
            if a == p.default:
                return True
            # torch's dilation=(1, 1) is its default dilation=1
            kind = a.WhichOneof("kind")
            return kind in ("list", "tuple") and all(x == p.default for x in getattr(a, kind).items)
    return False


def choose_impl(impls, source_fw, bound, op, has_slot):
    """The first impl for this source framework whose conditions hold, else None."""
    for impl in impls:
        if impl.source and source_fw not in impl.source:
            continue
        if any(not _is_unset(bound, op, n) for n in impl.unset):
            continue
        if any(_is_unset(bound, op, n) and not (n in bound and bound[n].WhichOneof("kind") != "none") for n in impl.set):
            continue
        if any(n not in bound or has_slot(bound[n]) for n in impl.literal):
            continue
        return impl
    return None


# -- conversions an ImplArg names -------------------------------------------------------------------
def _tuple(v):
    return tuple(v) if isinstance(v, (list, tuple)) else (v,)


def _pairs(v, n=2):
    """torch's int-or-tuple arguments (stride=2, padding=(1, 1))."""
    t = _tuple(v)
    return t * n if len(t) == 1 else t


def _trailing_axes(normalized_shape):
    return tuple(range(-len(_tuple(normalized_shape)), 0))


def _global_pool(output_size):
    if any(s != 1 for s in _pairs(output_size)):
        raise Unsupported(f"adaptive pooling to {output_size!r}: only to 1x1 (global pooling) is implemented")
    return (-2, -1)


def _axes(v):
    """An axis or axes as every framework takes them (torch's dim lists, JAX's axes tuples)."""
    return tuple(v) if isinstance(v, list) else v


def _flatten_shape(x, start=None, end=None):
    start = 0 if start is None else start
    end = -1 if end is None else end
    shape = tuple(x.shape)
    n = len(shape)
    s, e = start % n if n else 0, end % n if n else 0
    return shape[:s] + (math.prod(shape[s:e + 1]),) + shape[e + 1:]


def _conv_padding(padding, dilation=1):
    """torch conv2d/max_pool2d padding as jax.lax's ((lo, hi), (lo, hi)), or "VALID"/"SAME"."""
    if isinstance(padding, str):
        return padding.upper()
    return tuple((p, p) for p in _pairs(padding))


def _pool_window(kernel):
    return (1, 1) + _pairs(kernel)


def _pool_strides(stride, kernel):
    return (1, 1) + _pairs(stride if stride not in (None, [], ()) else kernel)


def _pool_padding(padding):
    return ((0, 0), (0, 0)) + tuple((p, p) for p in _pairs(padding))


def _nchw_window(window):
    """A JAX NCHW window (1, 1, h, w) as torch's pooling (h, w)."""
    w = _tuple(window)
    if len(w) != 4 or w[:2] != (1, 1):
        raise Unsupported(f"window {w}: only 2-D pooling over NCHW (1, 1, h, w) is implemented")
    return w[2:]


def _nchw_window_padding(padding):
    if isinstance(padding, str):
        raise Unsupported(f"padding {padding!r}: only explicit padding is implemented")
    pads = tuple(tuple(p) for p in padding)
    if len(pads) != 4 or pads[:2] != ((0, 0), (0, 0)) or any(lo != hi for lo, hi in pads):
        raise Unsupported(f"padding {pads}: only symmetric padding of H and W is implemented")
    return (pads[2][0], pads[3][0])


def _only_false(value):
    if value:
        raise Unsupported(f"{value!r}: only False is implemented")
    return False


def _one(value):
    if any(v != 1 for v in _tuple(value)):
        raise Unsupported(f"{value!r}: only 1 is implemented")
    return 1


def _gelu_approximate(approximate):
    return approximate == "tanh"


def _expand_index(shape, broadcast_dimensions):
    """broadcast_in_dim: the index that puts the operand's dims at `broadcast_dimensions` of a
    result of rank len(shape) (None inserts a dim), for x[index] before broadcasting."""
    bd = _tuple(broadcast_dimensions)
    if list(bd) != sorted(bd):
        raise Unsupported(f"broadcast_dimensions {bd}: only increasing ones are implemented")
    return tuple(slice(None) if d in bd else None for d in range(len(_tuple(shape))))


def _iota_length(shape, dimension):
    """lax.iota: the length of its range, shape[dimension]."""
    return _tuple(shape)[int(dimension)]


def _iota_index(shape, dimension):
    """lax.iota: the index that puts the range at `dimension` of a result of rank len(shape)."""
    return tuple(slice(None) if d == int(dimension) else None for d in range(len(_tuple(shape))))


def _spec(dn, name):
    spec = dn.get(name) if isinstance(dn, dict) else getattr(dn, name, None)
    return tuple(spec) if spec is not None else None


def _conv_nchw(dn):
    """jax.lax.conv_general_dilated's dimension numbers must be NCHW / OIHW / NCHW (what torch and
    the NumPy implementation take)."""
    if dn is None:
        return None
    if isinstance(dn, (list, tuple)) and all(isinstance(s, str) for s in dn):
        ok = tuple(dn) == ("NCHW", "OIHW", "NCHW")
    else:
        ok = all(_spec(dn, n) == (0, 1, 2, 3) for n in ("lhs_spec", "rhs_spec", "out_spec"))
    if not ok:
        raise Unsupported(f"dimension numbers {dn!r}: only NCHW/OIHW/NCHW is implemented")
    return None


def _symmetric_padding(padding):
    pads = tuple(tuple(p) for p in padding) if not isinstance(padding, str) else padding
    if isinstance(pads, str) or any(lo != hi for lo, hi in pads):
        raise Unsupported(f"padding {padding!r}: only symmetric explicit padding is implemented")
    return tuple(lo for lo, _ in pads)


def _pad_widths(padding):
    """NCHW explicit padding ((lo, hi), (lo, hi)) as numpy.pad's pad_width."""
    if isinstance(padding, str):
        raise Unsupported(f"padding {padding!r}: only explicit padding is implemented")
    return ((0, 0), (0, 0)) + tuple(tuple(p) for p in padding)


def _torch_pad_widths(padding):
    """torch conv padding (int or pair) as numpy.pad's pad_width over NCHW."""
    if isinstance(padding, str):
        raise Unsupported(f"padding {padding!r}: only explicit padding is implemented")
    return ((0, 0), (0, 0)) + tuple((p, p) for p in _pairs(padding))


def _window_hw(weight):
    return tuple(weight.shape[-2:])


def _stride_index(strides, kernel=None):
    """x[:, :, ::sh, ::sw, ...] over a sliding_window_view of NCHW (windows last); torch's pools
    stride by the kernel when no stride is given."""
    if strides in (None, [], ()):
        strides = kernel
    sh, sw = _pairs(strides)
    return (slice(None), slice(None), slice(None, None, sh), slice(None, None, sw), Ellipsis)


def _window_index(strides):
    """Strides of a general reduce_window over sliding_window_view's result (windows last)."""
    return tuple(slice(None, None, s) for s in _tuple(strides)) + (Ellipsis,)


def _window_axes(window_dimensions):
    n = len(_tuple(window_dimensions))
    return tuple(range(n, 2 * n))


def _window_pad(padding):
    if isinstance(padding, str):
        raise Unsupported(f"padding {padding!r}: only explicit padding is implemented")
    return tuple(tuple(p) for p in padding)


def _no_dilation(dilation):
    if dilation is not None and any(d != 1 for d in _tuple(dilation)):
        raise Unsupported(f"dilation {dilation!r}: only 1 is implemented")
    return None


@functools.lru_cache(maxsize=256)
def _dot_general_subscripts(dn, lhs_rank, rhs_rank):
    (lc, rc), (lb, rb) = dn
    letters = iter(string.ascii_letters)
    lhs = [None] * lhs_rank
    rhs = [None] * rhs_rank
    for a, b in zip(lb, rb):
        lhs[a] = rhs[b] = next(letters)
    for a, b in zip(lc, rc):
        lhs[a] = rhs[b] = next(letters)
    for i in range(lhs_rank):
        if lhs[i] is None:
            lhs[i] = next(letters)
    for i in range(rhs_rank):
        if rhs[i] is None:
            rhs[i] = next(letters)
    # dot_general's result: batch dims, then lhs free dims, then rhs free dims
    out = [lhs[a] for a in lb] + [lhs[i] for i in range(lhs_rank) if i not in lb and i not in lc] + \
          [rhs[i] for i in range(rhs_rank) if i not in rb and i not in rc]
    return "".join(lhs) + "," + "".join(rhs) + "->" + "".join(out)


def _freeze(v):
    return tuple(_freeze(x) for x in v) if isinstance(v, (list, tuple)) else v


def _einsum_of_dot_general(dn, lhs, rhs):
    return _dot_general_subscripts(_freeze(dn), len(lhs.shape), len(rhs.shape))


CONVERSIONS = {
    "tuple": _tuple,
    "axes": _axes,
    "nchw_window": _nchw_window,
    "nchw_window_padding": _nchw_window_padding,
    "pairs": _pairs,
    "trailing_axes": _trailing_axes,
    "global_pool_axes": _global_pool,
    "flatten_shape": _flatten_shape,          # (input, start_dim, end_dim), on each call
    "conv_padding": _conv_padding,
    "pool_window": _pool_window,
    "pool_strides": _pool_strides,            # (stride, kernel_size)
    "pool_padding": _pool_padding,
    "only_false": _only_false,
    "one": _one,
    "gelu_approximate": _gelu_approximate,
    "expand_index": _expand_index,            # (shape, broadcast_dimensions)
    "iota_length": _iota_length,              # (shape, dimension)
    "iota_index": _iota_index,                # (shape, dimension)
    "conv_nchw": _conv_nchw,
    "symmetric_padding": _symmetric_padding,
    "pad_widths": _pad_widths,
    "torch_pad_widths": _torch_pad_widths,
    "window_hw": _window_hw,                  # (weight), on each call
    "stride_index": _stride_index,
    "window_index": _window_index,
    "window_axes": _window_axes,
    "window_pad": _window_pad,
    "no_dilation": _no_dilation,
    "einsum_of_dot_general": _einsum_of_dot_general,   # (dimension_numbers, lhs, rhs), on each call
}
