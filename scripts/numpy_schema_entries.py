"""Print schemas/numpy.textproto entries for NumPy functions and ufuncs the schemas do not list yet.

    .venv/bin/python scripts/numpy_schema_entries.py numpy.median numpy.isinf numpy.linalg.inv ...

A ufunc is recorded under its own __name__ (np.acos is recorded as numpy.arccos), with the
operands `input` (and `other`) and the ufunc keywords; a Python-level function with the parameters
inspect.signature gives. `out=` marks the parameter the call writes (`writes:`); a ufunc with two
outputs lists no out, so a call passing one is refused. `--canonical name=op` adds a canonical op.
The output is reviewed before it goes into the schema file (views are marked by hand: VIEW below).
"""
from __future__ import annotations

import inspect
import sys

import numpy as np

VIEW = {"atleast_1d", "atleast_2d", "atleast_3d", "broadcast_arrays", "diag", "rot90", "matrix_transpose",
        "permute_dims", "unstack", "rollaxis", "diagonal"}
UFUNC_KEYWORDS = ['default { s: "same_kind" }', 'default { s: "K" }', "default { none: true }"]


def _literal(v):
    if v is None:
        return "none: true"
    if isinstance(v, bool):
        return f"b: {str(v).lower()}"
    if isinstance(v, (int, np.integer)):
        return f"i: {int(v)}"
    if isinstance(v, float):
        return f"f: {v!r}"
    if isinstance(v, str):
        return f's: "{v}"'
    raise ValueError(f"default {v!r}")


def _resolve(qualname):
    obj = np
    for part in qualname.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def entry(qualname: str, canonical: str = "") -> tuple[str, str]:
    """(recorded name, textproto block)."""
    fn = _resolve(qualname)
    lines = []
    if isinstance(fn, np.ufunc):
        name = f"numpy.{fn.__name__}"
        operands = ["input", "other", "third"][: fn.nin]
        aliases = ["x", "x1", "x2"] if fn.nin == 1 else ["x1", "x2", "x3"]
        lines += [f'  param {{ name: "{p}" alias: "{a}" }}' for p, a in zip(operands, aliases[fn.nin == 1:] if fn.nin > 1 else ["x"])]
        if fn.nout == 1:
            lines.append('  param { name: "out" default { none: true } keyword_only: true }')
        lines += ['  param { name: "where" default { b: true } keyword_only: true }',
                  '  param { name: "casting" default { s: "same_kind" } keyword_only: true }',
                  '  param { name: "order" default { s: "K" } keyword_only: true }',
                  '  param { name: "dtype" default { none: true } keyword_only: true }']
        if fn.nout == 1:
            lines.append(f"  writes: {fn.nin + 1}")
    else:
        name = qualname
        keyword_only = False
        position = 0
        writes = 0
        for p in inspect.signature(fn).parameters.values():
            if p.kind is p.VAR_KEYWORD:
                continue
            if p.kind is p.VAR_POSITIONAL:
                lines.append(f'  param {{ name: "{p.name}" variadic: true }}')
                keyword_only = True
                position += 1
                continue
            keyword_only = keyword_only or p.kind is p.KEYWORD_ONLY
            parts = [f'name: "{p.name}"']
            if p.default is not p.empty:
                try:
                    parts.append(f"default {{ {_literal(p.default)} }}")
                except ValueError:
                    parts.append("default { none: true }")   # a sentinel (np._NoValue): unset
            if keyword_only:
                parts.append("keyword_only: true")
            lines.append("  param { " + " ".join(parts) + " }")
            position += 1
            if p.name == "out":
                writes = position
        if writes:
            lines.append(f"  writes: {writes}")
        if qualname.rsplit(".", 1)[1] in VIEW:
            lines.append("  view: true")
    head = [f'  name: "{name}"'] + ([f'  canonical: "{canonical}"'] if canonical else [])
    return name, "op {\n" + "\n".join(head + lines) + "\n}"


if __name__ == "__main__":
    canon = dict(a.split("=", 1)[1].split(":") for a in sys.argv[1:] if a.startswith("--canonical="))
    seen = set()
    for q in (a for a in sys.argv[1:] if not a.startswith("--")):
        name, text = entry(q, canon.get(q, ""))
        if name not in seen:
            seen.add(name)
            print(text)
