"""Print schemas/torch.textproto entries for torch functions the schemas do not list yet.

    .venv/bin/python scripts/torch_schema_entries.py torch.addcmul torch.nn.functional.glu ...

Signatures come from torch.overrides.get_testing_overrides() (a Python lambda with the same
parameters for every overridable torch function; the C builtins have no inspect signature of their
own). Each entry lists the function, its torch.Tensor method and in-place method when they exist
(the in-place one with `writes: 1`), and no canonical op: an opaque framework call that replays in
torch (`out=` is not listed, so a call passing it is refused). Flags that cannot be read from a signature are given here by hand: random ops, and ops whose
result may share memory with their input (view). The output is reviewed and edited (a canonical op
where one applies) before it goes into the schema file.
"""
from __future__ import annotations

import inspect
import sys

import torch

RANDOM = {"rrelu", "gumbel_softmax", "fractional_max_pool2d", "fractional_max_pool3d", "multinomial", "poisson",
          "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices"}
VIEW = {"diagonal", "narrow", "unflatten", "swapdims", "tensor_split", "hsplit", "vsplit", "dsplit", "positive",
        "real", "imag", "view_as_real", "view_as_complex", "resolve_conj", "movedim", "moveaxis"}


def _literal(v):
    if v is None:
        return "none: true"
    if isinstance(v, bool):
        return f"b: {str(v).lower()}"
    if isinstance(v, int):
        return f"i: {v}"
    if isinstance(v, float):
        return f"f: {v!r}"
    if isinstance(v, str):
        return f's: "{v}"'
    if isinstance(v, (tuple, list)) and all(isinstance(x, int) for x in v):
        return "list { " + " ".join(f"items {{ i: {x} }}" for x in v) + " }"
    raise ValueError(f"default {v!r}")


def entry(qualname: str) -> str:
    overrides = torch.overrides.get_testing_overrides()
    mod, _, short = qualname.rpartition(".")
    namespace = torch
    for part in mod.split(".")[1:]:   # torch.nn.functional, torch.fft, torch.linalg, ...
        namespace = getattr(namespace, part)
    fn = getattr(namespace, short)
    sig = inspect.signature(overrides[fn])
    names = [qualname]
    if mod == "torch" and hasattr(torch.Tensor, short):
        names.append(f"torch.Tensor.{short}")
    lines = ["op {"] + [f'  name: "{n}"' for n in names]
    keyword_only = False
    for p in sig.parameters.values():
        # out= is left out: a call that passes it is refused at binding, never replayed without the write.
        if p.kind is p.VAR_KEYWORD or p.name == "out":
            continue
        if p.kind is p.VAR_POSITIONAL:
            lines.append(f'  param {{ name: "{p.name}" variadic: true }}')
            keyword_only = True
            continue
        keyword_only = keyword_only or p.kind is p.KEYWORD_ONLY
        parts = [f'name: "{p.name}"']
        if p.default is not p.empty:
            parts.append(f"default {{ {_literal(p.default)} }}")
        if keyword_only:
            parts.append("keyword_only: true")
        lines.append("  param { " + " ".join(parts) + " }")
    if short in RANDOM:
        lines.append("  random: true")
    if short in VIEW:
        lines.append("  view: true")
    out = "\n".join(lines) + "\n}"
    inplace = f"{short}_"
    if mod == "torch" and hasattr(torch.Tensor, inplace):
        body = [l for l in lines[len(names) + 1:] if "view: true" not in l]
        out += "\n" + "\n".join(["op {", f'  name: "torch.Tensor.{inplace}"'] + body + ["  writes: 1", "}"])
    return out


if __name__ == "__main__":
    for q in sys.argv[1:]:
        print(entry(q))
