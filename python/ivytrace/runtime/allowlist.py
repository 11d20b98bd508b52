"""The allow-list: the only functions and symbols a plan may name.

Every `name` and `symbol` in the package's schemas/*.textproto. A name is resolved by importing
its top-level module (which must be a framework a schema file declares) and walking attributes:
"torch.nn.functional.relu" -> torch -> nn -> functional -> relu. Nothing else is ever looked up,
so loading a plan cannot reach arbitrary code. A JAX primitive object ("jax.lax.add_p") resolves to
its `bind`.
"""
from __future__ import annotations

import importlib
import keyword

from ivytrace.runtime.errors import PlanError
from ivytrace.schema import Schemas, load_schemas


class AllowList:
    def __init__(self, schemas: Schemas):
        self.ops = schemas.ops
        self.sources = [p for p, _ in schemas.files]
        # Retargeting (TargetImpl in the schemas): framework -> canonical op -> its impls, in file
        # order. The functions they call join the allow-list: they are named by a schema file too.
        self.impls: dict = {}
        impl_functions = set()
        for _, sf in schemas.files:
            for impl in sf.impl:
                by_op = self.impls.setdefault(sf.framework, {})
                for c in impl.canonical:
                    by_op.setdefault(c, []).append(impl)
                impl_functions.update(call.function for call in impl.call)
        self.functions = frozenset(schemas.ops) | frozenset(impl_functions)
        self.symbols = frozenset(schemas.symbols)
        # An impl may call a companion library its framework has no function for (NumPy has no
        # erf: scipy.special.erf); its top-level module is then resolvable too, for those names only.
        self.frameworks = (frozenset(schemas.frameworks) or frozenset({"torch"})) | frozenset(
            f.split(".", 1)[0] for f in impl_functions)
        self.targets = frozenset(schemas.frameworks) or frozenset({"torch"})
        self._cache: dict = {}

    def function(self, name: str, where: str):
        if name not in self.functions:
            raise PlanError(f"{where}: function {name!r} is not in the allow-list "
                            f"(the op names in {', '.join(self.sources)}); refusing to load the plan")
        obj = self._resolve(name, where)
        # A JAX primitive is not callable: a plan step calls its bind (operands, then params).
        if not callable(obj) and callable(getattr(obj, "bind", None)):
            obj = obj.bind
        if name.startswith("numpy.ndarray."):
            obj = _numpy_method(name, obj)
        return obj

    def symbol(self, name: str, where: str):
        if name not in self.symbols:
            raise PlanError(f"{where}: symbol {name!r} is not in the allow-list "
                            f"(the symbols in {', '.join(self.sources)}); refusing to load the plan")
        return self._resolve(name, where)

    def _resolve(self, name: str, where: str):
        obj = self._cache.get(name)
        if obj is not None:
            return obj
        parts = name.split(".")
        if parts[0] not in self.frameworks:
            raise PlanError(f"{where}: {name!r} is not in a known framework ({', '.join(sorted(self.frameworks))})")
        try:
            obj = importlib.import_module(parts[0])
            for i, attr in enumerate(parts[1:], start=1):
                try:
                    obj = getattr(obj, attr)
                except AttributeError:
                    # A submodule that its parent does not import eagerly.
                    obj = importlib.import_module(".".join(parts[:i + 1]))
        except (ImportError, AttributeError) as e:
            raise PlanError(f"{where}: {name!r} is in the allow-list but does not exist in this "
                            f"installation ({e})") from None
        self._cache[name] = obj
        return obj


def _numpy_method(name, descriptor):
    """numpy.ndarray.<m> for a plan step: the method of the object it is called on (codegen writes
    `x.<m>(...)` itself where it can; this callable serves the other callers). A step
    recorded as `x.sum(...)` may see a NumPy scalar (np.float32: indexing a 1-d array gives one),
    which has the method too (numpy.generic.sum) but is not an ndarray, so calling ndarray's
    descriptor on it is a TypeError where the program's own `x.sum` worked."""
    import numpy
    scalar_method = getattr(numpy.generic, name.rsplit(".", 1)[-1], None)
    if scalar_method is None or not callable(descriptor):
        return descriptor
    ndarray = numpy.ndarray

    def method(self, *args, **kwargs):
        if isinstance(self, ndarray):
            return descriptor(self, *args, **kwargs)
        return scalar_method(self, *args, **kwargs)
    method.__name__ = method.__qualname__ = name
    # What codegen writes as `x.<method_name>(...)`: NumPy's own name for it, an identifier.
    attr = getattr(descriptor, "__name__", "")
    if attr.isidentifier() and not keyword.iskeyword(attr) and getattr(ndarray, attr, None) is descriptor:
        method.method_name = attr
    return method


_DEFAULT = None


def default_allowlist() -> AllowList:
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = AllowList(load_schemas())
    return _DEFAULT
