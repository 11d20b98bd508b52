"""The functions a plan calls for shape arithmetic (schemas/sym.textproto).

A replayed graph recomputes every shape-derived Python int from the arrays it is given, with
these functions: `size(x, 0)` is `x.shape[0]` for a torch tensor, a NumPy array or a JAX array.
They take and return plain Python ints, bools and floats (float arguments of a traced function). (While recording, the program sees stand-ins
for those ints that remember where they came from: python/ivytrace/recorder/sym.py.)
"""
from __future__ import annotations

import math
import operator

add = operator.add
sub = operator.sub
mul = operator.mul
floordiv = operator.floordiv
truediv = operator.truediv
mod = operator.mod
neg = operator.neg
eq = operator.eq
ne = operator.ne
lt = operator.lt
le = operator.le
gt = operator.gt
ge = operator.ge
not_ = operator.not_
abs = abs  # noqa: A001 - the builtin, under the schema's name
min = min  # noqa: A001
max = max  # noqa: A001


def size(x, dim: int) -> int:
    return int(x.shape[dim])


def shares_memory(a, b) -> bool:
    """Whether a (a reshape/flatten/contiguous result) is a view of b's memory or a copy."""
    storage = getattr(a, "untyped_storage", None)
    if storage is not None:   # torch: views share the storage
        return storage().data_ptr() == b.untyped_storage().data_ptr()
    import numpy as np
    return bool(np.may_share_memory(a, b))


def numel(x) -> int:
    return int(math.prod(x.shape))


def dim(x) -> int:
    return len(x.shape)


def pow(a, b):  # noqa: A001 - int ** non-negative int stays an int; floats as Python computes them
    return a ** b


def and_(a, b):
    return a and b


def or_(a, b):
    return a or b
