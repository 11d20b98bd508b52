"""Plan values for plans whose framework is "jax": literal params and constant arrays.

JAX primitives take their params as plain values, except for a few kinds the recorder writes in a
form the plan file can hold (python/ivytrace/recorder/jax_recorder.py):
  * dtypes (Arg.dtype) -> numpy dtypes (what primitive params hold), not torch dtypes;
  * dimension-number records, e.g. jax.lax.ConvDimensionNumbers, as a dict with a "__type__" key
    naming the class: rebuilt by calling that class, which must be a symbol in the schemas'
    allow-list, with the other keys as keyword arguments (each a literal);
  * enums and PRNG implementations as symbols (resolved through the allow-list like any symbol).
"""
from __future__ import annotations

import math

from ivytrace.runtime.errors import PlanError
from ivytrace.runtime.values import CONTAINERS, array_from_proto, container, dtype_of, literal as _literal


def _np_dtype(enum, where):
    import numpy as np
    name = str(dtype_of(enum, where)).replace("torch.", "")
    if name == "bfloat16":
        import jax.numpy as jnp
        return np.dtype(jnp.bfloat16)
    return np.dtype(name)


def literal(arg, allow, where: str):
    """The Python value of an Arg with no tensors in it, as a JAX primitive param."""
    kind = arg.WhichOneof("kind")
    if kind == "dtype":
        return _np_dtype(arg.dtype, where)
    if kind in CONTAINERS:
        fields = container(arg, kind, allow, where, literal)
        if kind != "dict" or "__type__" not in fields:
            return fields
        qual = fields.pop("__type__")
        if not isinstance(qual, str):
            raise PlanError(f"{where}: a record's __type__ must be a class name, not {qual!r}")
        cls = allow.symbol(qual, where)
        if not isinstance(cls, type):
            raise PlanError(f"{where}: {qual!r} is not a class; records can only name classes")
        try:
            return cls(**fields)
        except TypeError as e:
            raise PlanError(f"{where}: cannot rebuild {qual} from fields {sorted(fields)}: {e}") from None
    return _literal(arg, allow, where)


def array_from_tensor_proto(t, where: str, data=None):
    """A constant as a jax.Array (placed on the default device once, at load time)."""
    import jax
    import numpy as np
    if t.dtype == 4:   # BFLOAT16: NumPy has no name for it, ml_dtypes does
        import jax.numpy as jnp

        from ivytrace.runtime.values import checked_shape
        shape = checked_shape(t, where)
        raw = t.data if data is None else data
        if len(raw) != math.prod(shape) * 2:
            raise PlanError(f"{where}: array of shape {list(shape)} and dtype bfloat16 needs "
                            f"{math.prod(shape) * 2} bytes, the plan has {len(raw)}")
        a = np.frombuffer(raw, dtype=jnp.bfloat16).reshape(shape)
    else:
        a = array_from_proto(t, where, writable=False, data=data)   # JAX arrays are immutable
    return jax.device_put(a)
