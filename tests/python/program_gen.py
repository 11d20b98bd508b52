"""A generator of programs the way real code is written, for differential tests of ivytrace.

A program is a list of steps `(name, p)`: each step is written once, against a small adapter `F`
(torch, NumPy or JAX), and maps the current float array `x` to the next one; `p` (0..7) picks a
variant (an axis, a constant, a branch). Steps cover what programs do and a tracer must follow:
views and in-place writes through them, `__setitem__` with masks, index tensors, slices,
Ellipsis and None, gathers, masks and `where`, reductions with dims, keepdims and negative axes,
argmax/topk/sort/cumsum, cat/stack/split/chunk/unbind, broadcasting between intermediates of
other shapes, reshapes, casts, Python numbers read from values and shapes (in arithmetic and in
`if`/`while`), loops over a shape, closures over Python containers, seeded random ops, integer
division and modulo on negative numbers, chained comparisons, `torch.no_grad`, NumPy ufunc
keyword forms (`out=`, `where=`, `dtype=`), 0-d values, size-1 dims and empty dims.

A step may also append a side output to `env.outs` (an int index array, a mask, a Python
number), which the program returns with `x`, so ints and bools are compared exactly too.

The differential tests using it (tests/python/test_generated_programs.py,
tests/e2e/test_onnx_generated_programs.py) check that a replay equals eager, or raises a clear
ivytrace error: never a wrong answer.
"""
from __future__ import annotations

import numpy as np
import torch

try:  # JAX is optional: its programs are the pure subset of the steps plus the JAX idioms below
    import jax
    import jax.numpy as jnp
    from jax import lax
except ImportError:  # pragma: no cover - JAX not installed
    jax = jnp = lax = None


# -- framework adapters ------------------------------------------------------------------------------
class TorchF:
    name = "torch"
    float32, int64, bool_ = torch.float32, torch.int64, torch.bool
    mutable = True

    @staticmethod
    def make(a):
        return torch.from_numpy(np.array(a))

    @staticmethod
    def to_numpy(v):
        if isinstance(v, torch.Tensor):
            v = v.detach()
            return (v.float() if v.dtype == torch.bfloat16 else v).numpy()
        return np.asarray(v)

    @staticmethod
    def copy(x):
        return x.clone()

    arange = staticmethod(torch.arange)
    where = staticmethod(torch.where)
    tanh = staticmethod(torch.tanh)
    exp = staticmethod(torch.exp)
    abs = staticmethod(torch.abs)
    flip = staticmethod(lambda x, a: torch.flip(x, (a,)))
    zeros = staticmethod(lambda shape: torch.zeros(shape))
    ones_like = staticmethod(torch.ones_like)
    full_like = staticmethod(torch.full_like)

    @staticmethod
    def sum(x, axis=None, keepdims=False):
        return x.sum() if axis is None else x.sum(axis, keepdim=keepdims)

    @staticmethod
    def mean(x, axis=None, keepdims=False):
        return x.mean() if axis is None else x.mean(axis, keepdim=keepdims)

    @staticmethod
    def amax(x, axis=None, keepdims=False):
        return x.amax() if axis is None else x.amax(axis, keepdim=keepdims)

    @staticmethod
    def amin(x, axis=None, keepdims=False):
        return x.amin() if axis is None else x.amin(axis, keepdim=keepdims)

    @staticmethod
    def argmax(x, axis):
        return x.argmax(axis)

    @staticmethod
    def sort(x, axis):
        return torch.sort(x, dim=axis).values

    @staticmethod
    def argsort(x, axis):
        return torch.argsort(x, dim=axis, stable=True)

    @staticmethod
    def topk(x, k, axis):
        return torch.topk(x, k, dim=axis).values

    @staticmethod
    def cumsum(x, axis):
        return torch.cumsum(x, axis)

    @staticmethod
    def cat(xs, axis):
        return torch.cat(xs, axis)

    @staticmethod
    def stack(xs, axis):
        return torch.stack(xs, axis)

    @staticmethod
    def split_every(x, n, axis):
        return torch.split(x, n, dim=axis)

    @staticmethod
    def chunk(x, n, axis):
        return torch.chunk(x, n, dim=axis)

    @staticmethod
    def unbind(x, axis):
        return torch.unbind(x, axis)

    @staticmethod
    def take_along(x, idx, axis):
        return torch.gather(x, axis, idx)

    @staticmethod
    def index_select(x, axis, idx):
        return torch.index_select(x, axis, idx)

    @staticmethod
    def take(x, idx):
        return torch.take(x, idx)

    @staticmethod
    def swap(x, a, b):
        return x.transpose(a, b)

    @staticmethod
    def expand(x, shape):
        return x.expand(*shape)

    @staticmethod
    def tile(x, reps):
        return x.repeat(*reps)

    @staticmethod
    def astype(x, dtype):
        return x.to(dtype)

    @staticmethod
    def clip(x, lo, hi):
        return x.clamp(lo, hi)

    @staticmethod
    def flatten(x):
        return x.flatten()


class NumpyF:
    name = "numpy"
    float32, int64, bool_ = np.float32, np.int64, np.bool_
    mutable = True

    @staticmethod
    def make(a):
        return np.array(a)

    @staticmethod
    def to_numpy(v):
        return np.asarray(v)

    @staticmethod
    def copy(x):
        return x.copy()

    # Looked up at call time: the recorder wraps numpy's creation functions while it records.
    arange = staticmethod(lambda *a, **k: np.arange(*a, **k))
    zeros = staticmethod(lambda shape: np.zeros(shape, np.float32))
    ones_like = staticmethod(lambda x: np.ones_like(x))
    full_like = staticmethod(lambda x, v: np.full_like(x, v))
    where = staticmethod(np.where)
    tanh = staticmethod(np.tanh)
    exp = staticmethod(np.exp)
    abs = staticmethod(np.abs)
    flip = staticmethod(lambda x, a: np.flip(x, a))

    @staticmethod
    def sum(x, axis=None, keepdims=False):
        return x.sum(axis=axis, keepdims=keepdims)

    @staticmethod
    def mean(x, axis=None, keepdims=False):
        return x.mean(axis=axis, keepdims=keepdims)

    @staticmethod
    def amax(x, axis=None, keepdims=False):
        return x.max(axis=axis, keepdims=keepdims)

    @staticmethod
    def amin(x, axis=None, keepdims=False):
        return x.min(axis=axis, keepdims=keepdims)

    @staticmethod
    def argmax(x, axis):
        return np.argmax(x, axis=axis)

    @staticmethod
    def sort(x, axis):
        return np.sort(x, axis=axis)

    @staticmethod
    def argsort(x, axis):
        return np.argsort(x, axis=axis, kind="stable")

    @staticmethod
    def topk(x, k, axis):
        return np.flip(np.sort(x, axis=axis), axis).take(np.arange(k), axis=axis)

    @staticmethod
    def cumsum(x, axis):
        return np.cumsum(x, axis=axis)

    @staticmethod
    def cat(xs, axis):
        return np.concatenate(xs, axis=axis)

    @staticmethod
    def stack(xs, axis):
        return np.stack(xs, axis=axis)

    @staticmethod
    def split_every(x, n, axis):
        return np.split(x, list(range(n, x.shape[axis], n)), axis=axis)

    @staticmethod
    def chunk(x, n, axis):
        return np.array_split(x, n, axis=axis)

    @staticmethod
    def unbind(x, axis):
        return [np.take(x, i, axis=axis) for i in range(x.shape[axis])]

    @staticmethod
    def take_along(x, idx, axis):
        return np.take_along_axis(x, idx, axis=axis)

    @staticmethod
    def index_select(x, axis, idx):
        return np.take(x, idx, axis=axis)

    @staticmethod
    def take(x, idx):
        return np.take(x, idx)

    @staticmethod
    def swap(x, a, b):
        return np.swapaxes(x, a, b)

    @staticmethod
    def expand(x, shape):
        shape = tuple(x.shape[i - len(shape) + x.ndim] if s == -1 else s for i, s in enumerate(shape))
        return np.broadcast_to(x, shape)

    @staticmethod
    def tile(x, reps):
        return np.tile(x, reps)

    @staticmethod
    def astype(x, dtype):
        return x.astype(dtype)

    @staticmethod
    def clip(x, lo, hi):
        return np.clip(x, lo, hi)

    @staticmethod
    def flatten(x):
        return x.flatten()


class JaxF(NumpyF):
    name = "jax"
    mutable = False
    float32, int64, bool_ = np.float32, np.int32, np.bool_   # JAX's default ints are 32-bit

    @staticmethod
    def make(a):
        return jnp.asarray(a)

    @staticmethod
    def to_numpy(v):
        a = np.asarray(v)
        return a.astype(np.float32) if a.dtype == jnp.bfloat16 else a

    @staticmethod
    def copy(x):
        return x

    arange = staticmethod(lambda *a, **k: jnp.arange(*a, **k))
    zeros = staticmethod(lambda shape: jnp.zeros(shape, jnp.float32))
    ones_like = staticmethod(lambda x: jnp.ones_like(x))
    full_like = staticmethod(lambda x, v: jnp.full_like(x, v))
    where = staticmethod(lambda *a: jnp.where(*a))
    tanh = staticmethod(lambda x: jnp.tanh(x))
    exp = staticmethod(lambda x: jnp.exp(x))
    abs = staticmethod(lambda x: jnp.abs(x))
    flip = staticmethod(lambda x, a: jnp.flip(x, a))
    argmax = staticmethod(lambda x, axis: jnp.argmax(x, axis=axis))
    sort = staticmethod(lambda x, axis: jnp.sort(x, axis=axis))
    argsort = staticmethod(lambda x, axis: jnp.argsort(x, axis=axis, stable=True))
    topk = staticmethod(lambda x, k, axis: jnp.flip(jnp.sort(x, axis=axis), axis).take(jnp.arange(k), axis=axis))
    cumsum = staticmethod(lambda x, axis: jnp.cumsum(x, axis=axis))
    cat = staticmethod(lambda xs, axis: jnp.concatenate(xs, axis=axis))
    stack = staticmethod(lambda xs, axis: jnp.stack(xs, axis=axis))
    split_every = staticmethod(lambda x, n, axis: jnp.split(x, list(range(n, x.shape[axis], n)), axis=axis))
    chunk = staticmethod(lambda x, n, axis: jnp.array_split(x, n, axis=axis))
    unbind = staticmethod(lambda x, axis: [jnp.take(x, i, axis=axis) for i in range(x.shape[axis])])
    take_along = staticmethod(lambda x, idx, axis: jnp.take_along_axis(x, idx, axis=axis))
    index_select = staticmethod(lambda x, axis, idx: jnp.take(x, idx, axis=axis))
    take = staticmethod(lambda x, idx: jnp.take(x, idx))
    swap = staticmethod(lambda x, a, b: jnp.swapaxes(x, a, b))
    tile = staticmethod(lambda x, reps: jnp.tile(x, reps))
    clip = staticmethod(lambda x, lo, hi: jnp.clip(x, lo, hi))
    flatten = staticmethod(lambda x: x.flatten())

    @staticmethod
    def expand(x, shape):
        shape = tuple(x.shape[i - len(shape) + x.ndim] if s == -1 else s for i, s in enumerate(shape))
        return jnp.broadcast_to(x, shape)


FRAMEWORKS = {"torch": TorchF, "numpy": NumpyF}
if jnp is not None:
    FRAMEWORKS["jax"] = JaxF


# -- the steps -------------------------------------------------------------------------------------
class Env:
    """What a program's steps share: side outputs, and the closure's Python containers."""

    def __init__(self, closure):
        self.outs = []
        self.closure = closure


STEPS = {}            # name -> (fn(F, x, p, env) -> x, frameworks it runs in)
ALL = ("torch", "numpy", "jax")
MUTABLE = ("torch", "numpy")


def step(*frameworks):
    def deco(fn):
        STEPS[fn.__name__] = (fn, frameworks or ALL)
        return fn
    return deco


def _axis(x, p):
    """An axis of x picked by p, negative for odd p (x has rank >= 1)."""
    a = p % x.ndim
    return a - x.ndim if p % 2 else a


def numel(F, x):
    return x.numel() if F.name == "torch" else x.size


# elementwise and arithmetic with Python numbers ----------------------------------------------------
@step()
def add_const(F, x, p, env):
    return x + (p - 3) * 0.5


@step()
def tanh_scale(F, x, p, env):
    return F.tanh(x) * (p + 1)


@step()
def clip_range(F, x, p, env):
    return F.clip(x, -1.0 - p * 0.25, 0.5 + p * 0.25)


@step()
def abs_exp(F, x, p, env):
    return F.exp(-F.abs(x)) - 0.5


@step()
def where_mean(F, x, p, env):
    return F.where(x > F.mean(x), x, -x * 0.5)


@step()
def chained_mask(F, x, p, env):
    m = ((x > -0.5) & (x < 0.5)) | (x == 0)
    env.outs.append(m)
    return x * m + (~m) * (p - 2.0)


@step()
def times_len(F, x, p, env):
    return x * len(x) if x.ndim else x


@step()
def plus_last_dim(F, x, p, env):
    return x + x.shape[-1] if x.ndim else x


@step()
def neg_int_div_mod(F, x, p, env):
    if not x.ndim:
        return x
    n = -(x.shape[0] * (p + 1))
    env.outs.append(n // 3)
    return x * (n // 3) + (n % 3) - (n // -4) + (x.shape[-1] - p) % 4


@step()
def numel_div(F, x, p, env):
    return x / (numel(F, x) + 1)


# python numbers out of values ------------------------------------------------------------------------
@step()
def item_arith(F, x, p, env):
    return x - F.mean(x).item() if numel(F, x) else x


@step()
def float_of_max(F, x, p, env):
    if not numel(F, x):
        return x
    return x * 0.5 + float(F.amax(x)) * (p % 3)


@step()
def int_of_argmax(F, x, p, env):
    if not x.ndim or not x.shape[0]:
        return x
    i = int(F.argmax(F.sum(x.reshape(x.shape[0], -1), 1), 0))
    env.outs.append(i)
    return x + i


# control flow on values and shapes -----------------------------------------------------------------
@step()
def if_sum_positive(F, x, p, env):
    if F.sum(x) > (p - 4) * 0.5:
        return x * 2
    return x - 1


@step()
def while_halve(F, x, p, env):
    i = 0
    while numel(F, x) and F.amax(F.abs(x)) > 1 + p and i < 4:
        x = x / 2
        i += 1
    return x


@step()
def if_shape_even(F, x, p, env):
    if x.ndim and x.shape[0] % 2 == p % 2:
        return x + 1
    return x * 3


@step()
def if_square(F, x, p, env):
    return F.swap(x, 0, -1) if x.ndim >= 2 and x.shape[0] == x.shape[-1] else x + 0.25


@step()
def loop_rows(F, x, p, env):
    if not x.ndim:
        return x
    out = x[0] * 0
    for i in range(min(x.shape[0], 2 + p % 3)):
        out = out + x[i] * (i + 1)
    return out


@step(*MUTABLE)
def loop_rows_inplace(F, x, p, env):
    if not x.ndim:
        return x
    for i in range(min(x.shape[0], 3)):
        x[i] = x[i] * (i + 2)
    return x


# in-place writes and views -------------------------------------------------------------------------
@step(*MUTABLE)
def slice_iadd(F, x, p, env):
    if x.ndim >= 2:
        x[:, 1:] += 1
    elif x.ndim == 1:
        x[p % 2:] += 1
    else:
        x += 1
    return x


@step(*MUTABLE)
def transpose_mul_(F, x, p, env):
    if x.ndim < 2:
        return x
    if F.name == "torch":
        x.transpose(0, -1).mul_(p + 2)
    else:
        t = x.T
        t *= p + 2
    return x


@step(*MUTABLE)
def out_into_view(F, x, p, env):
    if x.ndim < 1:
        return x
    if F.name == "torch":
        torch.add(x[..., :1], p, out=x[..., -1:])
    else:
        np.add(x[..., :1], p, out=x[..., -1:])
    return x


@step(*MUTABLE)
def setitem_mask(F, x, p, env):
    x[x > 0.1 * p] = -0.5
    return x


@step(*MUTABLE)
def setitem_mask_mul(F, x, p, env):
    x[x < 0] *= 2
    return x


@step(*MUTABLE)
def setitem_index_tensor(F, x, p, env):
    if not x.ndim or not x.shape[0]:
        return x
    idx = F.arange(0, x.shape[0], 2)
    x[idx] = -1.0
    return x


@step(*MUTABLE)
def setitem_ellipsis(F, x, p, env):
    if not x.ndim:
        return x
    x[..., 0] = x[..., -1] * 2
    return x


@step(*MUTABLE)
def setitem_none(F, x, p, env):
    x[None] = x[None] * 0.5 + 1
    return x


@step(*MUTABLE)
def setitem_int(F, x, p, env):
    if not x.ndim or not x.shape[0]:
        return x
    x[-1] = p
    return x


@step(*MUTABLE)
def view_write(F, x, p, env):
    x = F.copy(x) if p % 2 else x
    v = x.view(-1) if F.name == "torch" else x.ravel()
    if v.shape[0]:
        v[0] = 5.0
    return x


@step(*MUTABLE)
def chunk_mul_(F, x, p, env):
    if not x.ndim or x.shape[0] < 2:
        return x
    a, b = F.chunk(x, 2, 0)[:2]
    if F.name == "torch":
        b.mul_(2)
    else:
        b *= 2
    return x


@step(*MUTABLE)
def inplace_on_copy(F, x, p, env):
    y = F.copy(x)
    y += 1
    return x * 2 - y


# indexing reads ------------------------------------------------------------------------------------
@step()
def gather_rev(F, x, p, env):
    if not x.ndim or not x.shape[-1]:
        return x
    idx = F.argsort(x, -1)
    env.outs.append(idx)
    return F.take_along(x, idx, x.ndim - 1)


@step()
def index_select_rev(F, x, p, env):
    if not x.ndim:
        return x
    idx = F.arange(x.shape[0] - 1, -1, -1)
    return F.index_select(x, 0, idx)


@step()
def take_flat(F, x, p, env):
    n = numel(F, x)
    if not n:
        return x
    idx = (F.arange(n) * (p + 3)) % n
    return F.take(x, idx)


@step()
def bool_mask_read(F, x, p, env):
    v = x[x > 0]
    env.outs.append(v)
    return x + F.sum(v)


@step()
def int_index(F, x, p, env):
    return x[len(x) // 2] if x.ndim and len(x) else x


@step()
def none_ellipsis_read(F, x, p, env):
    return x[None, ..., None].sum(-1)[0] if x.ndim else x[None][0]


@step()
def slice_steps(F, x, p, env):
    if not x.ndim:
        return x
    return x[::2] if p % 2 else x[1::-1] if x.shape[0] >= 2 else x[::-1]


@step()
def empty_cat(F, x, p, env):
    if not x.ndim:
        return x
    return F.cat([x[:0], x, x[x.shape[0]:]], 0)


# reductions, sort, scans ---------------------------------------------------------------------------
@step()
def reduce_keep(F, x, p, env):
    if not x.ndim:
        return x
    a = _axis(x, p)
    red = (F.sum, F.mean, F.amax, F.amin)[p % 4]
    if red in (F.amax, F.amin) and not x.shape[a]:
        return x
    return x - red(x, a, True)


@step()
def reduce_drop(F, x, p, env):
    if not x.ndim:
        return x
    a = _axis(x, p)
    red = (F.sum, F.mean, F.amax, F.amin)[p % 4]
    if red in (F.amax, F.amin) and not x.shape[a]:
        return x
    return red(x, a, False)


@step()
def argmax_add(F, x, p, env):
    if not x.ndim or not x.shape[-1]:
        return x
    i = F.argmax(x, -1)
    env.outs.append(i)
    return x + F.astype(i, F.float32)[..., None]


@step()
def topk_last(F, x, p, env):
    if not x.ndim or not x.shape[-1]:
        return x
    return F.topk(x, min(2, x.shape[-1]), x.ndim - 1)


@step()
def sort_axis(F, x, p, env):
    return F.sort(x, _axis(x, p)) if x.ndim else x


@step()
def cumsum_axis(F, x, p, env):
    return F.cumsum(x, _axis(x, p)) if x.ndim else x


@step()
def sum_all_0d(F, x, p, env):
    s = F.sum(x)
    return s * 0.1 if p % 2 else x + s


# joining and splitting -------------------------------------------------------------------------------
@step()
def cat_self(F, x, p, env):
    return F.cat([x, x * 2], _axis(x, p)) if x.ndim else x


@step()
def stack_self(F, x, p, env):
    return F.stack([x, x + 1], p % (x.ndim + 1)).sum(0) * 0.5


@step()
def split_reverse(F, x, p, env):
    if not x.ndim or not x.shape[-1]:
        return x
    parts = F.split_every(x, 2, x.ndim - 1)
    return F.cat(list(parts)[::-1], x.ndim - 1)


@step()
def chunk_sum(F, x, p, env):
    if not x.ndim or not x.shape[0]:
        return x
    parts = F.chunk(x, 2, 0)
    return parts[0].sum(0) + parts[-1].sum(0)


@step()
def unbind_sum(F, x, p, env):
    if not x.ndim or not x.shape[0]:
        return x
    rows = F.unbind(x, 0)
    return sum(rows[1:], rows[0] * 2)


# shapes and broadcasting ---------------------------------------------------------------------------
@step()
def flatten_all(F, x, p, env):
    return F.flatten(x)


@step()
def reshape_batch(F, x, p, env):
    return x.reshape(x.shape[0], -1) if x.ndim else x.reshape(1, 1)


@step()
def unsqueeze_front(F, x, p, env):
    return x[None]


@step()
def squeeze_ones(F, x, p, env):
    if x.ndim and x.shape[0] == 1:
        return x[0]
    return x


@step()
def expand_mid(F, x, p, env):
    if not x.ndim:
        return x
    e = F.expand(x[:, None], (-1, 2) + (-1,) * (x.ndim - 1))
    return e.reshape(-1, *x.shape[1:])


@step()
def tile_rows(F, x, p, env):
    if not x.ndim:
        return x
    return F.tile(x, (1 + p % 2,) + (1,) * (x.ndim - 1))


@step()
def outer_broadcast(F, x, p, env):
    if not x.ndim:
        return x
    f = F.flatten(x)[:4]
    return f[:, None] - f[None, :]


@step()
def first_row_broadcast(F, x, p, env):
    return x[:1] + x if x.ndim else x


@step()
def reduce_broadcast_back(F, x, p, env):
    if x.ndim < 2:
        return x
    return x + F.sum(x, 0, False)


@step()
def matmul_t(F, x, p, env):
    if x.ndim != 2:
        return x
    return x @ F.swap(x, 0, 1) if p % 2 else F.swap(x, 0, 1) @ x


@step()
def swap_last(F, x, p, env):
    return F.swap(x, -1, -2) if x.ndim >= 2 else x


@step()
def flip_axis(F, x, p, env):
    return F.flip(x, _axis(x, p)) if x.ndim else x


@step()
def arange_positions(F, x, p, env):
    if not x.ndim:
        return x
    return x + F.astype(F.arange(x.shape[-1]), F.float32)


# casts -----------------------------------------------------------------------------------------------
@step()
def int_floor_mod(F, x, p, env):
    i = F.astype(x * 3, F.int64)
    q, r = i // (p - 3 if p != 3 else 2), i % (p + 2)
    env.outs.append(q)
    env.outs.append(r)
    return x + F.astype(q + r, F.float32)


@step()
def bool_cast(F, x, p, env):
    b = F.astype(x, F.bool_)
    env.outs.append(b)
    return x * F.astype(b, F.float32) + 1


@step("torch")
def half_roundtrip(F, x, p, env):
    return x.to(torch.float16 if p % 2 else torch.bfloat16).to(torch.float32)


@step("numpy")
def float64_roundtrip(F, x, p, env):
    return (x.astype(np.float64) * 1.5).astype(np.float32)


# framework idioms ------------------------------------------------------------------------------------
@step("torch")
def no_grad_region(F, x, p, env):
    with torch.no_grad():
        y = x * 2
    return y + 1


@step("torch")
def masked_fill_(F, x, p, env):
    return x.masked_fill(x < 0, p * 0.5)


@step("torch")
def seeded_random(F, x, p, env):
    g = torch.Generator().manual_seed(p)
    return x + torch.rand(x.shape, generator=g)


@step("numpy")
def seeded_random_np(F, x, p, env):
    np.random.seed(p)
    return x + np.random.rand(*x.shape).astype(np.float32)


@step("numpy")
def ufunc_where(F, x, p, env):
    out = np.zeros_like(x)
    np.multiply(x, 2, out=out, where=x > 0)
    return out


@step("numpy")
def ufunc_dtype(F, x, p, env):
    return np.add(x, p, dtype=np.float64).astype(np.float32)


@step("numpy")
def ufunc_out_self(F, x, p, env):
    np.subtract(x, 1, out=x)
    return x


@step()
def closure_read(F, x, p, env):
    return x * env.closure["scale"][p % len(env.closure["scale"])]


# JAX idioms --------------------------------------------------------------------------------------------
# Written the way JAX code is: jax.numpy, jax.nn, jax.lax, functional updates (`x.at[i].set`),
# explicit PRNG keys, jitted and vmapped helpers, scan/fori_loop, dtype casts.
def _w(p, shape):
    """A weight made from NumPy (a constant of the trace), of a shape that may follow x's."""
    return jnp.asarray(np.random.default_rng(p).standard_normal(shape).astype(np.float32))


_ACTIVATIONS = (
    lambda x: jax.nn.relu(x),
    lambda x: jax.nn.gelu(x, approximate=False),
    lambda x: jax.nn.gelu(x),
    lambda x: jax.nn.silu(x),
    lambda x: jax.nn.sigmoid(x) - jax.nn.hard_tanh(x),
    lambda x: jax.nn.softplus(x) + jax.nn.relu6(x),
    lambda x: jax.nn.elu(x) * jax.nn.celu(x, 0.5),
    lambda x: jax.nn.leaky_relu(x, 0.1) + jax.nn.log_sigmoid(x),
)


@step("jax")
def jnn_activation(F, x, p, env):
    return _ACTIVATIONS[p](x)


@step("jax")
def jnn_softmax(F, x, p, env):
    if not x.ndim:
        return x
    a = _axis(x, p)
    kind = p // 2
    if kind == 0:
        return jax.nn.softmax(x, axis=a)
    if kind == 1:
        return jax.nn.log_softmax(x, axis=a)
    if kind == 2:
        return x - jax.nn.logsumexp(x, axis=a, keepdims=True)
    return jax.scipy.special.logsumexp(x, axis=a)


@step("jax")
def layer_norm_rsqrt(F, x, p, env):
    if not x.ndim:
        return x
    m = x.mean(-1, keepdims=True)
    v = jnp.square(x - m).mean(-1, keepdims=True)
    y = (x - m) * lax.rsqrt(v + 1e-5)
    return y * (1 + 0.1 * p) if p % 2 else jax.nn.standardize(x, axis=-1) + y


_JNP_UNARY = (
    lambda x: jnp.round(x * 3) / 3 + jnp.floor(x) - jnp.ceil(x),
    lambda x: jnp.sign(x) * jnp.sqrt(jnp.abs(x)),
    lambda x: jnp.log1p(jnp.abs(x)) - jnp.expm1(jnp.clip(x, -2, 2)),
    lambda x: jnp.maximum(x, 0.3) + jnp.minimum(x, -0.3),
    lambda x: jnp.nan_to_num(jnp.log(x), neginf=-5.0, nan=0.5),
    lambda x: jnp.fmod(x, 0.7) + jnp.remainder(x, 0.7),
    lambda x: jnp.arctan2(x, 1 + jnp.abs(x)) + jnp.hypot(x, 1.0),
    lambda x: jnp.where(jnp.isfinite(1 / x), x, 9.0) + jnp.trunc(x * 2),
)


@step("jax")
def jnp_unary(F, x, p, env):
    return _JNP_UNARY[p](x)


@step("jax")
def jnp_reduce(F, x, p, env):
    if not x.ndim:
        return x
    a = _axis(x, p)
    kind = p // 2
    if kind == 0:
        return x - jnp.var(x, axis=a, keepdims=True) + jnp.std(x, axis=a, keepdims=True)
    if kind == 1:
        return x / (jnp.linalg.norm(x, axis=a, keepdims=True) + 1)
    if kind == 2:
        c = jnp.count_nonzero(x > 0, axis=a)
        env.outs.append(c)
        env.outs.append(jnp.any(x > 1, axis=a) & ~jnp.all(x < 2, axis=a))
        return jnp.prod(jnp.tanh(x), axis=a)
    i = jnp.argmin(x, axis=a) if x.shape[a] else jnp.zeros(x.shape[:a % x.ndim] + x.shape[a % x.ndim + 1:], jnp.int32)
    env.outs.append(i)
    return jnp.max(x, axis=a, initial=-1.0) + jnp.min(x, axis=a, initial=1.0)


@step("jax")
def jnp_shape_ops(F, x, p, env):
    if not x.ndim:
        return x
    if p == 0:
        return jnp.roll(x, 1 + x.shape[0] // 2, axis=0)
    if p == 1:
        return jnp.repeat(x, 2, axis=-1)
    if p == 2:
        return jnp.diff(x, axis=0)
    if p == 3:
        return jnp.tril(x) - jnp.triu(x, 1) if x.ndim >= 2 else jnp.outer(x, x)
    if p == 4:
        return jnp.pad(x, [(0, x.shape[0] % 2)] + [(1, 0)] * (x.ndim - 1), mode="edge" if x.size else "constant")
    if p == 5:
        return jnp.moveaxis(x, 0, -1) if x.ndim >= 2 else jnp.atleast_2d(x)
    if p == 6:
        return jnp.expand_dims(x, -1).squeeze(-1) + jnp.ravel(x)[: x.shape[-1]].reshape((1,) * (x.ndim - 1) + (-1,))[..., : x.shape[-1]] if x.size else x
    return x[..., ::-1] * jnp.arange(1, x.shape[-1] + 1, dtype=x.dtype)


@step("jax")
def dot_general_ops(F, x, p, env):
    if not x.ndim:
        return x
    n = x.shape[-1]
    kind = p % 4
    if kind == 0:
        return x @ _w(p, (n, 3))
    if kind == 1:
        nd = x.ndim
        if nd < 2:
            return lax.dot_general(x, x, (((0,), (0,)), ((), ())))
        return lax.dot_general(x, x, (((nd - 1,), (nd - 1,)), ((0,), (0,))))
    if kind == 2:
        return jnp.einsum("...i,...j->...ij", x, x[..., ::-1]).sum(-1)
    return jnp.dot(x, jnp.ones((n,), x.dtype)) + jnp.matmul(x, _w(p, (n,)))


@step("jax")
def conv(F, x, p, env):
    if x.ndim < 2:
        return x
    lhs = x.reshape((-1, 1) + x.shape[-2:])
    padding = "SAME" if p % 2 else "VALID"
    strides = (1, 1) if p < 4 else (2, 1)
    if p % 4 < 2:
        y = lax.conv_general_dilated(lhs, _w(p, (2, 1, 3, 3)), strides, padding)   # NCHW / OIHW
        y = y.sum(1)
    else:   # flax's layout: NHWC / HWIO, dilated kernel
        y = lax.conv_general_dilated(jnp.moveaxis(lhs, 1, -1), _w(p, (2, 2, 1, 2)), strides, padding,
                                     rhs_dilation=(1, 2), dimension_numbers=("NHWC", "HWIO", "NHWC"))
        y = y.sum(-1)
    return y.reshape(x.shape[:-2] + y.shape[-2:])


@step("jax")
def pool(F, x, p, env):
    if x.ndim < 2:
        return x
    window = (2,) * (x.ndim - 1)
    strides = window if p % 2 else (1,) * len(window)
    padding = "SAME" if p // 2 % 2 else "VALID"
    h = x[..., None]   # (batch, spatial..., features)
    try:
        import flax.linen as nn
    except ImportError:  # pragma: no cover - flax not installed: lax.reduce_window, as flax does
        y = lax.reduce_window(h, -jnp.inf, lax.max, (1,) + window + (1,), (1,) + strides + (1,), padding)
        return y[..., 0]
    pools = (nn.max_pool, nn.avg_pool)
    y = pools[p // 4](h, window, strides=strides, padding=padding)
    return y[..., 0]


@step("jax")
def lax_cumulative(F, x, p, env):
    if not x.ndim:
        return x
    op = (lax.cumsum, lax.cumprod, lax.cummax, lax.cummin)[p % 4]
    return op(x, axis=p % x.ndim, reverse=p >= 4)


@step("jax")
def sort_topk(F, x, p, env):
    if not x.ndim or not x.shape[-1]:
        return x
    kind = p % 4
    if kind == 0:
        v, i = lax.top_k(x, min(1 + p // 4, x.shape[-1]))
        env.outs.append(i)
        return v
    if kind == 1:
        return lax.sort(x, dimension=p % x.ndim)
    if kind == 2:
        i = jnp.argsort(x, axis=-1, descending=p >= 4, stable=True)
        env.outs.append(i)
        return jnp.take_along_axis(x, i, axis=-1)
    k, v = lax.sort((x, -x * 2), dimension=x.ndim - 1, num_keys=1)
    return k + v


@step("jax")
def dynamic_slices(F, x, p, env):
    if not x.ndim or not x.shape[0]:
        return x
    zeros = (0,) * (x.ndim - 1)
    size = (1,) + x.shape[1:]
    rows = x.reshape(x.shape[0], -1).sum(1)
    if p % 3 == 0:
        i = jnp.argmax(rows)           # an index array: no guard
    elif p % 3 == 1:
        i = int(jnp.argmax(rows))      # a Python int read from a value: a guard
    else:
        i = p                          # a constant start, clamped into bounds by JAX
    row = lax.dynamic_slice(x, (i,) + zeros, size)
    if p >= 4:
        return lax.dynamic_update_slice(x, row * 2 + 1, (x.shape[0] - 1 - rows.argmin(),) + zeros)
    return lax.dynamic_index_in_dim(x, i, 0, keepdims=False) + lax.dynamic_slice_in_dim(x, 0, 1, 0)[0]


@step("jax")
def at_updates(F, x, p, env):
    if not x.ndim or not x.shape[0]:
        return x
    n = x.shape[0]
    kind = p % 4
    if kind == 0:
        idx = jnp.arange(0, n, 2)
    elif kind == 1:
        idx = jnp.argsort(x.reshape(n, -1).sum(1))[:1]
    elif kind == 2:
        idx = jnp.asarray([0, -1, 0])   # negative and repeated indices
    else:
        idx = -1
    mode = p // 4
    if mode == 0:
        return x.at[idx].set(x[idx] * 0.5 + 1)
    y = x.at[idx].add(1.0).at[idx].multiply(2.0)
    return y.at[..., 0].max(0.5) + x.at[idx].get(mode="fill", fill_value=-3.0).reshape((-1,) + x.shape[1:]).sum(0)


@step("jax")
def mask_where_jax(F, x, p, env):
    m = (x > 0.1 * p - 0.3) ^ (x < -1)
    env.outs.append(m)
    kind = p % 4
    if kind == 0:
        return jnp.where(m, x * 2, 0.0) + jnp.where(~m, 1.0, 0.0)
    if kind == 1:
        return lax.select_n(m, -x, x)
    if kind == 2:
        which = m.astype(jnp.int32) + (x > 1).astype(jnp.int32)
        return lax.select_n(which, x, x * 3, jnp.zeros_like(x))
    return x.at[m].set(0.5) if x.ndim else jnp.where(m, 0.5, x)


@step("jax")
def integer_pow(F, x, p, env):
    if p < 4:
        return x ** (p + 1) * 0.5
    return lax.integer_pow(jnp.clip(x, -2, 2) + 3, p - 6)


@step("jax")
def clamp_rsqrt(F, x, p, env):
    lo, hi = -1.0 + 0.2 * p, 1.0 + 0.1 * p
    y = lax.clamp(np.float32(lo), x, np.float32(hi))
    return lax.rsqrt(jnp.abs(y) + 0.5) if p % 2 else y


@step("jax")
def shape_arith(F, x, p, env):
    if x.ndim < 2:
        return x
    b = x.shape[0]
    rest = x.size // b if b else 0
    y = x.reshape(b, rest) * (rest + b) / (p + 1)
    if p % 2:
        y = y[: max(1, b // 2)] if b else y
        return y.reshape((y.shape[0],) + x.shape[1:])
    return y.reshape(-1, x.shape[-1]).reshape(x.shape) + x.shape[1] % 3


@step("jax")
def branch_on_float(F, x, p, env):
    s = float(x.sum())
    return x * 2 if s > p - 4 else x - s


@step("jax")
def lax_cond_switch(F, x, p, env):
    if p % 2:
        return lax.cond(x.sum() > p - 4, lambda a: a * 2, lambda a: a - 1, x)
    i = jnp.clip(jnp.round(x.mean() if x.size else 0.0), 0, 2).astype(jnp.int32)
    return lax.switch(i, [lambda a: a + 1, lambda a: a * a, lambda a: -a], x)


@step("jax")
def random_keys(F, x, p, env):
    key = jax.random.key(p) if p % 2 else jax.random.PRNGKey(p)
    k1, k2 = jax.random.split(key)
    k3 = jax.random.fold_in(k2, 7)
    kind = p // 2
    if kind == 0:
        return x + jax.random.normal(k1, x.shape) * 0.1
    if kind == 1:
        keep = jax.random.bernoulli(k3, 0.7, x.shape)
        return jnp.where(keep, x / 0.7, 0.0)
    if kind == 2:
        return x * jax.random.uniform(k1, x.shape, minval=0.5, maxval=1.5) + jax.random.randint(k3, (), 0, 5)
    return jax.random.permutation(k3, x, axis=0) if x.ndim else x


@step("jax")
def dtype_casts(F, x, p, env):
    dt = (jnp.bfloat16, jnp.float16, jnp.int32, jnp.bool_)[p % 4]
    y = x.astype(dt)
    if p >= 4:
        env.outs.append(y * 2 if dt not in (jnp.bool_,) else ~y)
    if dt in (jnp.bfloat16, jnp.float16):
        return (y * 3 + 1).astype(jnp.float32) - lax.convert_element_type(y, jnp.float32)
    return x + jnp.asarray(y, dtype=jnp.float32)


@jax.jit if jax is not None else (lambda f: f)
def _jitted(a, s):
    return jnp.tanh(a) * s + a.mean()


if jax is not None:
    from functools import partial as _partial

    @_partial(jax.jit, static_argnums=1)
    def _jitted_static(a, axis):
        return a - a.max(axis, keepdims=True) if a.shape[axis] else a


@step("jax")
def jit_inner(F, x, p, env):
    if p % 2 or not x.ndim:
        return _jitted(x, p * 0.5)
    return _jitted_static(x, p % x.ndim)


@step("jax")
def vmap_inner(F, x, p, env):
    if not x.ndim:
        return x
    if p % 3 == 0:
        return jax.vmap(lambda r: r * r.sum() - jnp.flip(r))(x)
    if p % 3 == 1:
        if x.ndim == 2:
            return jax.vmap(jnp.dot)(x, x)
        return jax.vmap(lambda a: a * 2 + 1)(x) if x.ndim == 1 else jax.vmap(jax.vmap(lambda a: a * 2 + 1))(x)
    return jax.vmap(lambda r, w: r + w, in_axes=(x.ndim - 1, None), out_axes=0)(x, p * 0.25)


@step("jax")
def scan_fori(F, x, p, env):
    if not x.ndim:
        return x
    if p % 3 == 0:
        def body(c, r):
            c = c * 0.5 + r
            return c, c * 2
        c, ys = lax.scan(body, jnp.zeros_like(x[0]), x, reverse=p >= 4)
        return ys + c
    if p % 3 == 1:
        return lax.fori_loop(0, 1 + p % 4, lambda i, a: a * 0.9 + i, x)
    return lax.fori_loop(0, min(x.shape[0], 3), lambda i, a: a.at[i].add(a[i - 1]), x)


# Programs ------------------------------------------------------------------------------------------
def names_for(framework):
    return sorted(n for n, (_, fws) in STEPS.items() if framework in fws)


def make_program(steps, F, closure=None):
    """fn(x) running `steps` ((name, p) pairs) in framework F; it returns (x, *side outputs)."""
    closure = {"scale": [1.5, -0.5, 2.0]} if closure is None else closure

    def fn(x):
        env = Env(closure)
        for name, p in steps:
            x = STEPS[name][0](F, x, p, env)
        return (x, *env.outs)
    return fn


TREE_FORMS = ("array", "dict", "tuple")


def make_tree_program(steps, F, form, closure=None):
    """A JAX program over a pytree: `form` "dict" takes {"x": x, "scale": s} and returns
    {"y": x, "side": [...], "scale": s + 1}; "tuple" takes (x, s) and returns (x, (side...));
    "array" is make_program's fn(x)."""
    inner = make_program(steps, F, closure)
    if form == "array":
        return inner

    def fn(tree):
        x, s = (tree["x"], tree["scale"]) if form == "dict" else tree
        out = inner(x * s)
        if form == "dict":
            return {"y": out[0], "side": list(out[1:]), "scale": s + 1}
        return out[0], tuple(out[1:])
    return fn


def tree_input(F, x, form, seed):
    """The input of a make_tree_program program whose array is x."""
    if form == "array":
        return x
    s = F.make(np.float32(1.0 + 0.25 * seed))
    return {"x": x, "scale": s} if form == "dict" else (x, s)


def data(F, shape, seed, kind="normal"):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape).astype(np.float32)
    if kind == "small_ints":  # ties and exact zeros: masks and sorts on equal values
        a = rng.integers(-2, 3, size=shape).astype(np.float32)
    return F.make(a)


def flat(v, sort_keys=True):
    """Outputs as a flat list (tuples and lists opened, dicts in key order as JAX's pytrees, or
    in insertion order as ivytrace's ONNX inputs and outputs)."""
    if isinstance(v, (tuple, list)):
        return [y for x in v for y in flat(x, sort_keys)]
    if isinstance(v, dict):
        return [y for k in (sorted(v) if sort_keys else v) for y in flat(v[k], sort_keys)]
    return [v]


def structure(v):
    """The containers of an output, without the leaves."""
    if isinstance(v, (tuple, list)):
        return (type(v).__name__, [structure(x) for x in v])
    if isinstance(v, dict):
        return ("dict", {k: structure(x) for k, x in v.items()})
    return "leaf"


def shape_of(x):
    """x's shape for a message; a pytree input's leaves' shapes."""
    if hasattr(x, "shape"):
        return tuple(x.shape)
    return [shape_of(y) for y in flat(x)]


def same(F, got, want, rtol=1e-5, atol=1e-6) -> str | None:
    """None when `got` equals `want` (floats within tolerance, ints, bools and Python numbers
    exactly); else what differs."""
    if structure(got) != structure(want):
        return f"structure {structure(got)}, want {structure(want)}"
    g, w = flat(got), flat(want)
    if len(g) != len(w):
        return f"{len(g)} outputs, want {len(w)}"
    for i, (a, b) in enumerate(zip(g, w)):
        if isinstance(b, (int, float, bool)) and not hasattr(b, "shape"):
            if not isinstance(a, (int, float, bool)) or float(a) != float(b):
                return f"output {i}: {a!r}, want {b!r}"
            continue
        if getattr(a, "dtype", None) != getattr(b, "dtype", None):
            return f"output {i}: dtype {getattr(a, 'dtype', type(a))}, want {b.dtype}"
        a, b = F.to_numpy(a), F.to_numpy(b)
        if a.shape != b.shape:
            return f"output {i}: shape {a.shape}, want {b.shape}"
        if a.dtype != b.dtype:
            return f"output {i}: dtype {a.dtype}, want {b.dtype}"
        if b.dtype.kind in "biu":
            if not np.array_equal(a, b):
                return f"output {i}: {a}, want {b}"
        elif not np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
            return f"output {i}: max abs err {np.nanmax(np.abs(a.astype(np.float64) - b)) if a.size else 0}"
    return None


# -- the differential check ------------------------------------------------------------------------
class WrongAnswer(AssertionError):
    pass


class Crash(AssertionError):
    """An exception that is neither the program's own nor a clear ivytrace refusal."""


def is_clear_refusal(e: BaseException) -> bool:
    """A refusal ivytrace means to give: a GuardError, the CLI's refusal with its exit status (not
    a signal, not an internal error), or an error whose message says it is ivytrace's."""
    import ivytrace
    from ivytrace.cli_bin import CLIError
    if isinstance(e, ivytrace.GuardError):
        return True
    text = str(e)
    if isinstance(e, CLIError):
        return e.returncode is not None and e.returncode > 0 and "internal error" not in text.lower() \
            and "terminate called" not in text and "Assertion" not in text
    return text.startswith("ivytrace") and "internal error" not in text.lower()


def eager(fn, F, x):
    """(result, input after the call) of the program itself, or None when it fails. JAX runs
    un-jitted (jax.disable_jit), as it runs while recorded and in a replay: op by op, where a
    jitted helper (jax.nn.standardize, logsumexp, the steps' own) would round differently."""
    x = F.copy(x)
    try:
        if F.name == "jax":
            with jax.disable_jit():
                return fn(x), x
        return fn(x), x
    except Exception:  # noqa: BLE001 - the program itself fails on this input
        return None


def trace(fn, F, x0, **options):
    """The graph traced at x0, or None when the program itself fails at x0. Raises Crash when
    tracing fails without a clear refusal; a clear refusal returns the exception."""
    import warnings

    import ivytrace
    if eager(fn, F, x0) is None:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ivytrace.trace_graph(fn, args=(F.copy(x0),), **options)
    except Exception as e:  # noqa: BLE001 - the type and message decide
        if is_clear_refusal(e):
            return e
        raise Crash(f"tracing raised {type(e).__name__}: {e}") from e


def replay_outcome(graph, fn, F, x) -> str:
    """'match', 'guard' (a clear refusal), or 'skip' (eager fails too). Raises WrongAnswer or
    Crash."""
    want = eager(fn, F, x)
    if want is None:
        return "skip"
    want, x_eager = want
    xr = F.copy(x)
    try:
        got = graph(xr)
    except Exception as e:  # noqa: BLE001 - the type decides
        import ivytrace
        if isinstance(e, ivytrace.GuardError):
            return "guard"
        raise Crash(f"replay at {shape_of(x)} raised {type(e).__name__}: {e}") from e
    why = same(F, got, want)
    if why:
        raise WrongAnswer(f"replay at {shape_of(x)}: {why}")
    if F.mutable:
        why = same(F, xr, x_eager)
        if why:
            raise WrongAnswer(f"replay at {tuple(x.shape)}: the input after the call differs from eager's: {why}")
    return "match"


def onnx_outcome(sess, fn, F, x, rtol, atol, pytree=False) -> str:
    """An exported model (an onnxruntime session) against eager on `x`: 'match', 'guard' (a
    check of the model named an ivytrace guard), 'static' (an input dim the model fixed) or
    'skip' (eager fails too); raises WrongAnswer or Crash. `pytree`: the model's inputs and
    outputs are the leaves of JAX pytrees, dicts in insertion order; otherwise the model takes
    `x` alone, and a program that also returned Python numbers is compared on its first output."""
    import numpy as np
    want = eager(fn, F, x)
    if want is None:
        return "skip"
    want = [w for w in flat(want[0], sort_keys=not pytree) if hasattr(w, "shape")]
    inputs = sess.get_inputs()
    if pytree:
        leaves = [np.array(F.to_numpy(v), order="C") for v in flat(x, sort_keys=False)]   # 0-d stays 0-d
        assert len(inputs) == len(leaves), f"the model takes {len(inputs)} inputs, the program {len(leaves)} arrays"
        feed = {i.name: v for i, v in zip(inputs, leaves)}
    else:
        feed = {inputs[0].name: np.ascontiguousarray(F.to_numpy(x))}
    try:
        got = sess.run(None, feed)
    except Exception as e:  # noqa: BLE001 - onnxruntime's error type
        text = str(e)
        if "ivytrace guard" in text:
            return "guard"
        if "Got invalid dimensions for input" in text or "Invalid rank for input" in text:
            return "static"
        raise Crash(f"onnxruntime failed at {shape_of(x)} without naming a guard: {text[:800]}") from e
    if len(got) == len(want):
        pairs = list(zip(got, want))
    elif pytree:
        raise WrongAnswer(f"{len(got)} outputs, want {len(want)} arrays")
    else:   # Python numbers among the outputs: compare the first (the program's x)
        pairs = [(got[0], want[0])]
    for i, (g, w) in enumerate(pairs):
        w = F.to_numpy(w)
        if g.shape != w.shape:
            raise WrongAnswer(f"output {i} at {shape_of(x)}: shape {g.shape}, want {w.shape}")
        if w.dtype.kind in "biu" or w.dtype == bool:
            ok = np.array_equal(g, w)
        else:
            ok = np.allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)
        if not ok:
            raise WrongAnswer(f"output {i} at {shape_of(x)}: wrong values")
    return "match"


def hypothesis_settings(default_examples, fixtures=False) -> dict:
    """The settings every generated-program property runs with: deterministic, no database, no
    deadline (each example traces through the CLI), and IVYTRACE_HYPOTHESIS_EXAMPLES examples
    when set (a larger run), else `default_examples`. `fixtures`: the test takes a
    function-scoped fixture (tmp_path), which is fine here (each example names its own files)."""
    import os

    from hypothesis import HealthCheck
    checks = [HealthCheck.too_slow, HealthCheck.filter_too_much]
    if fixtures:
        checks.append(HealthCheck.function_scoped_fixture)
    n = os.environ.get("IVYTRACE_HYPOTHESIS_EXAMPLES")
    return dict(max_examples=int(n) if n else default_examples, deadline=None, derandomize=True, database=None,
                suppress_health_check=checks)


def trace_or_skip(fn, F, x0):
    """The graph of `fn` traced at x0, as a hypothesis example: an example is dropped (assume)
    when the program fails at its own input, or when ivytrace refuses it (an event says which)."""
    import hypothesis
    g = trace(fn, F, x0)
    if g is None:
        hypothesis.assume(False)   # the program fails at its own input
    if isinstance(g, BaseException):
        hypothesis.event(f"refused: {type(g).__name__}")
        hypothesis.assume(False)
    return g

