"""Qualified names for the functions PyTorch hands to `__torch_function__`, and what to do with each.

Built once per process: a dict `id(function) -> (kind, name)` from walking torch.nn.functional,
torch, torch.linalg, torch.fft, torch.special and the Tensor classes. The first name found wins
(so `torch.conv2d`, which is the same object as `torch.nn.functional.conv2d`, is named after the
functional namespace that is walked first). The functions are module attributes and live as long
as the process, so their ids are stable.
"""
from __future__ import annotations

import types

import torch

# What the recorder does with a call.
OP = 0        # record an OpEvent
SKIP = 1      # metadata or Python plumbing: call through, record nothing
SHAPE = 2     # a shape read: record a ShapeRead
GUARD = 3     # the tensor's value leaves the framework: record a GuardEvent
CONVERT = 4   # a conversion between torch and NumPy (see convert.py): an op joining the two
              # frameworks when both are recorded, else a guard (to NumPy) or an ordinary op
DTYPE = 5     # a dtype read (`x.dtype`, `x.is_floating_point()`): guards the region inputs' dtypes
DESCEND = 6   # a torch function written in Python over other torch calls, with no schema of its
              # own: its body runs with the recorder on, so what it calls is recorded (see
              # `unchecked_body`)

_NAMESPACES = (
    ("torch.nn.functional", torch.nn.functional),
    ("torch", torch),
    ("torch.linalg", torch.linalg),
    ("torch.fft", torch.fft),
    ("torch.special", torch.special),
)

SHAPE_METHODS = frozenset({"size", "dim", "numel", "__len__", "nelement", "ndimension"})
SHAPE_PROPERTIES = frozenset({"shape", "ndim"})
GUARD_METHODS = frozenset({"__bool__", "item", "tolist", "__int__", "__float__", "__index__",
                           "__complex__", "numpy", "__array__", "__nonzero__"})
SKIP_METHODS = frozenset({
    "stride", "is_contiguous", "__repr__", "__format__", "__str__", "__hash__", "__dir__",
    "__sizeof__", "__reduce__", "__reduce_ex__", "__deepcopy__", "__setstate__", "__getstate__",
    "__array_wrap__", "__dlpack__", "__dlpack_device__", "__torch_function__", "__setattr__",
    "__getattribute__", "__delattr__", "__init_subclass__", "__class_getitem__",
    "requires_grad_", "retain_grad", "register_hook", "register_post_accumulate_grad_hook",
    "data_ptr", "storage_offset",
    "get_device", "untyped_storage", "storage", "_typed_storage", "is_shared", "is_pinned",
    "_is_view", "is_set_to", "has_names", "is_inference", "is_coalesced", "dim_order",
    "_version", "_base", "type_as_string", "_is_zerotensor", "is_conj", "is_neg",
})
# What a dtype decides: the Python value is specialized on the tensor's dtype, which follows from the
# region inputs' dtypes (a replay with another input dtype is a guard failure, not the recorded path).
DTYPE_METHODS = frozenset({"is_floating_point", "is_complex", "is_signed", "element_size"})
DTYPE_TORCH = frozenset({"torch.is_floating_point", "torch.is_complex"})
SKIP_TORCH = frozenset({
    "torch.is_tensor", "torch.is_storage",
    "torch.is_conj", "torch.is_neg", "torch.is_inference", "torch.is_same_size", "torch.device",
    # SymInt helpers: called through, they reach the symbolic int's own __sym_min__/__sym_max__/...
    # (recorded as ivytrace.sym ops); recorded as calls, their int result would be baked.
    "torch.sym_min", "torch.sym_max", "torch.sym_not", "torch.sym_float", "torch.sym_int", "torch.sym_ite",
    "torch.sym_sum", "torch.sym_sqrt",
})
SHAPE_TORCH = frozenset({"torch.numel"})
# Python functions of torch that dispatch to __torch_function__ themselves (handle_torch_function)
# and are not in schemas/: recorded as one call they could not replay (the plan's allow-list is
# schemas/) or export. nn.MultiheadAttention and nn.TransformerEncoderLayer/DecoderLayer call
# multi_head_attention_forward; its body is linear, unflatten, transpose, scaled_dot_product_attention
# (or bmm and softmax), which replay and lower.
DESCEND_TORCH = frozenset({"torch.nn.functional.multi_head_attention_forward"})
CONVERT_METHODS = frozenset({"numpy", "__array__"})
CONVERT_TORCH = frozenset({"torch.from_numpy", "torch.as_tensor", "torch.asarray", "torch.tensor"})
# Tensor-valued properties recorded as ops named "torch.Tensor.<prop>.__get__" (which replays:
# torch.Tensor.T.__get__(x) is x.T). Every other property read is metadata and is skipped.
TENSOR_PROPERTIES = frozenset({"T", "mT", "H", "mH", "real", "imag", "data"})

_PLAIN_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.MethodDescriptorType,
                types.WrapperDescriptorType, types.MethodWrapperType, types.BuiltinMethodType)


def _walk(namespace_name, ns_dict, out):
    for attr, obj in list(ns_dict.items()):
        if isinstance(obj, (type, types.ModuleType)) or not callable(obj):
            continue
        out.setdefault(id(obj), (f"{namespace_name}.{attr}", obj))


def _build():
    out: dict = {}
    for ns_name, mod in _NAMESPACES:
        _walk(ns_name, vars(mod), out)
    _walk("torch.Tensor", vars(torch._C.TensorBase), out)
    _walk("torch.Tensor", vars(torch.Tensor), out)
    return out


_NAMES = _build()


def kind_of(name: str) -> int:
    if name.startswith("torch.Tensor."):
        attr = name[len("torch.Tensor."):]
        if attr in SHAPE_METHODS:
            return SHAPE
        if attr in CONVERT_METHODS:
            return CONVERT
        if attr in GUARD_METHODS:
            return GUARD
        if attr in DTYPE_METHODS:
            return DTYPE
        if attr in SKIP_METHODS:
            return SKIP
        return OP
    if name in SKIP_TORCH:
        return SKIP
    if name in DTYPE_TORCH:
        return DTYPE
    if name in SHAPE_TORCH:
        return SHAPE
    if name in CONVERT_TORCH:
        return CONVERT
    if name in DESCEND_TORCH:
        return DESCEND
    return OP


_NO_TORCH_FUNCTION = ("has_torch_function", "has_torch_function_unary", "has_torch_function_variadic")


def unchecked_body(func):
    """`func` (a Python function of torch) without its own `__torch_function__` dispatch: the same
    code, defaults and closure over a copy of its module's globals in which the has_torch_function
    checks answer False. Called with the recorder's mode pushed again, the body's torch calls reach
    the recorder while the function itself does not dispatch to it a second time (which would
    recurse). Written by hand because torch has no public way to run a function's body under the
    current mode: `handle_torch_function` pops the mode before calling the handler."""
    g = dict(func.__globals__)
    for n in _NO_TORCH_FUNCTION:
        if n in g:
            g[n] = _never
    body = types.FunctionType(func.__code__, g, func.__name__, func.__defaults__, func.__closure__)
    body.__kwdefaults__ = func.__kwdefaults__
    return body


def _never(*args, **kwargs):
    return False


# torch's SymInt helpers under their public names (torch.sym_int is also torch.nn.functional._sym_int):
# SKIP_TORCH must know them whatever module re-exports them.
_SYM_HELPERS = {id(getattr(torch, n)): (f"torch.{n}", getattr(torch, n))
                for n in ("sym_min", "sym_max", "sym_not", "sym_float", "sym_int", "sym_ite", "sym_sum", "sym_sqrt")
                if hasattr(torch, n)}


def name_of(func) -> str:
    """Qualified name of a function handed to __torch_function__ (not a property accessor)."""
    helper = _SYM_HELPERS.get(id(func))
    if helper is not None and helper[1] is func:
        return helper[0]
    entry = _NAMES.get(id(func))
    if entry is not None and entry[1] is func:
        return entry[0]
    objclass = getattr(func, "__objclass__", None)
    attr = getattr(func, "__name__", None) or type(func).__name__
    if objclass is not None and isinstance(objclass, type) and issubclass(objclass, torch._C.TensorBase):
        return f"torch.Tensor.{attr}"
    qualname = getattr(func, "__qualname__", None) or attr
    if qualname.startswith("_VariableFunctionsClass."):
        return "torch." + qualname.split(".", 1)[1]
    if qualname.startswith(("TensorBase.", "Tensor.")):
        return "torch.Tensor." + qualname.split(".", 1)[1]
    module = getattr(func, "__module__", None)
    if not module:
        self_obj = getattr(func, "__self__", None)
        module = getattr(self_obj, "__name__", None) if isinstance(self_obj, types.ModuleType) else None
    return f"{module}.{qualname}" if module else qualname


def property_name_and_kind(descriptor) -> tuple:
    """(name, kind) for a getset_descriptor whose __get__ was handed to __torch_function__."""
    prop = getattr(descriptor, "__name__", "?")
    if prop in SHAPE_PROPERTIES:
        return f"torch.Tensor.{prop}", SHAPE
    if prop in ("dtype", "itemsize"):
        return f"torch.Tensor.{prop}", DTYPE
    if prop in TENSOR_PROPERTIES:
        return f"torch.Tensor.{prop}.__get__", OP
    return f"torch.Tensor.{prop}.__get__", SKIP


def is_property_accessor(func) -> bool:
    return type(func) is types.MethodWrapperType and func.__name__ in ("__get__", "__set__", "__delete__")
