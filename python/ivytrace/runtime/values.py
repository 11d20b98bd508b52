"""Plan values -> Python/torch objects: dtypes, literal Args, constant tensors."""
from __future__ import annotations

import math
import warnings

try:
    import torch
except ImportError:   # a NumPy- or JAX-only install: torch is an optional extra
    torch = None

from ivytrace.runtime.errors import PlanError
from ivytrace.v1 import common_pb2

# Trace dtypes by name (the names torch and NumPy share).
DTYPE_NAMES = {
    common_pb2.FLOAT32: "float32", common_pb2.FLOAT64: "float64", common_pb2.FLOAT16: "float16",
    common_pb2.BFLOAT16: "bfloat16", common_pb2.INT8: "int8", common_pb2.INT16: "int16",
    common_pb2.INT32: "int32", common_pb2.INT64: "int64", common_pb2.UINT8: "uint8", common_pb2.BOOL: "bool",
    common_pb2.COMPLEX64: "complex64", common_pb2.COMPLEX128: "complex128", common_pb2.UINT16: "uint16",
    common_pb2.UINT32: "uint32", common_pb2.UINT64: "uint64",
}
DTYPES = {e: getattr(torch, n) for e, n in DTYPE_NAMES.items() if torch is not None and hasattr(torch, n)}


def dtype_of(enum: int, where: str):
    """The torch dtype of a trace dtype."""
    if torch is None:
        raise PlanError(f"{where}: this value is a torch dtype or tensor, and torch is not installed")
    dt = DTYPES.get(enum)
    if dt is None:
        name = common_pb2.DType.Name(enum) if enum in common_pb2.DType.values() else str(enum)
        raise PlanError(f"{where}: dtype {name} is not supported by this runtime")
    return dt


CONTAINERS = ("list", "tuple", "dict")


def container(arg, kind: str, allow, where: str, item):
    """The list, tuple or dict an Arg of that kind (one of CONTAINERS) holds, each element made by
    `item(arg, allow, where)` (the caller's own `literal`)."""
    if kind == "list":
        return [item(a, allow, where) for a in arg.list.items]
    if kind == "tuple":
        return tuple(item(a, allow, where) for a in arg.tuple.items)
    d = arg.dict
    if len(d.keys) != len(d.values):
        raise PlanError(f"{where}: dict argument has {len(d.keys)} keys but {len(d.values)} values")
    return {k: item(v, allow, where) for k, v in zip(d.keys, d.values)}


def literal(arg, allow, where: str):
    """The Python value of an Arg with no tensors in it."""
    kind = arg.WhichOneof("kind")
    if kind == "none" or kind is None:
        return None
    if kind == "b":
        return arg.b
    if kind == "i":
        return arg.i
    if kind == "f":
        return arg.f
    if kind == "s":
        return arg.s
    if kind == "c":
        return complex(arg.c.real, arg.c.imag)
    if kind == "dtype":
        return dtype_of(arg.dtype, where)
    if kind == "device":
        try:
            return torch.device(arg.device)
        except (RuntimeError, ValueError) as e:
            raise PlanError(f"{where}: bad device {arg.device!r}: {e}") from None
    if kind == "symbol":
        return allow.symbol(arg.symbol, where)
    if kind == "ellipsis":
        return Ellipsis
    if kind in CONTAINERS:
        return container(arg, kind, allow, where, literal)
    if kind == "slice":
        s = arg.slice
        return slice(*(literal(getattr(s, f), allow, where) if s.HasField(f) else None
                       for f in ("start", "stop", "step")))
    if kind == "opaque":
        raise PlanError(f"{where}: argument {arg.opaque!r} was recorded as an opaque value and cannot be replayed")
    if kind == "tensor":
        raise PlanError(f"{where}: unexpected tensor reference")
    raise PlanError(f"{where}: unknown argument kind {kind!r}")


# torch and NumPy refuse more dimensions than this (with a raw RuntimeError/ValueError).
MAX_DIMS = 64


def checked_shape(t, where: str) -> tuple:
    """The shape of an ivytrace.v1.Tensor from a plan file: non-negative dims, at most MAX_DIMS,
    and a size that fits in memory at all (a zero-size tensor with huge dims included)."""
    shape = tuple(int(s) for s in t.shape)
    if len(shape) > MAX_DIMS:
        raise PlanError(f"{where}: shape has {len(shape)} dimensions; at most {MAX_DIMS} are supported")
    if any(s < 0 for s in shape):
        raise PlanError(f"{where}: negative dimension in shape {list(shape)}")
    if any(s >= 1 << 62 for s in shape) or math.prod(s for s in shape if s) >= 1 << 62:
        raise PlanError(f"{where}: shape {list(shape)} is too large")
    return shape


def tensor_from_proto(t, where: str, data=None):
    """A torch tensor from an ivytrace.v1.Tensor (dense, C-contiguous, little-endian). `data`: its
    bytes when they are not in t.data (a plan's data section, mapped: the tensor uses them in place)."""
    dt = dtype_of(t.dtype, where)
    shape = checked_shape(t, where)
    numel = math.prod(shape)
    itemsize = torch.empty((), dtype=dt).element_size()
    raw = t.data if data is None else data
    if len(raw) != numel * itemsize:
        raise PlanError(f"{where}: tensor of shape {list(shape)} and dtype {dt} needs "
                        f"{numel * itemsize} bytes, the plan has {len(raw)}")
    if numel == 0:
        return torch.empty(shape, dtype=dt)
    if data is not None:
        return torch.frombuffer(data, dtype=dt).reshape(shape)
    # The bytes object t.data hands out is a fresh copy that only this tensor holds, so the tensor
    # takes it as is; torch warns that bytes are not writable, which for this sole owner does not
    # matter (a bytearray copy of a model's weights was a third of load_plan).
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "The given buffer is not writable", UserWarning)
        return torch.frombuffer(t.data, dtype=dt).reshape(shape)


def array_from_proto(t, where: str, writable: bool = True, data=None):
    """A NumPy array from an ivytrace.v1.Tensor (for plans whose framework is "numpy"); read-only
    unless `writable` (a copy), for callers that copy it anyway. `data`: its bytes when they are not
    in t.data (a plan's mapped data section, writable: used in place)."""
    import numpy as np
    name = DTYPE_NAMES.get(t.dtype)
    if name is None:
        raise PlanError(f"{where}: dtype {t.dtype} is not supported by this runtime")
    try:
        dt = np.dtype(name)
    except TypeError:
        raise PlanError(f"{where}: dtype {name} has no NumPy equivalent") from None
    shape = checked_shape(t, where)
    raw = t.data if data is None else data
    if len(raw) != math.prod(shape) * dt.itemsize:
        raise PlanError(f"{where}: array of shape {list(shape)} and dtype {dt} needs "
                        f"{math.prod(shape) * dt.itemsize} bytes, the plan has {len(raw)}")
    if data is None and writable:
        raw = bytearray(raw)
    return np.frombuffer(raw, dtype=dt).reshape(shape)


def same_value(a, b) -> bool:
    """Equality for guard values; NaN equals NaN, lists compare elementwise."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (a != a and b != b)
    if isinstance(a, complex) and isinstance(b, complex):
        return same_value(a.real, b.real) and same_value(a.imag, b.imag)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b
