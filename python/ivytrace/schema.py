"""Operator schemas (schemas/*.textproto, text-format ivytrace.v1.SchemaFile).

The same files the CLI embeds. The recorder reads the `random` flag from them; the runtime reads
every `name` and `symbol` as its allow-list. Parsed once per process.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field

from google.protobuf import text_format

from ivytrace.v1 import schema_pb2

_PKG_SCHEMAS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "schemas")
# A source checkout (python/ivytrace/ -> <repo>/schemas) before the build copied them.
_REPO_SCHEMAS = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "schemas"))


class SchemaError(RuntimeError):
    """A schema file is missing or does not parse."""


@dataclass
class Schemas:
    files: list  # of (path, SchemaFile)
    ops: dict = field(default_factory=dict)        # qualified name -> OpSchema
    symbols: set = field(default_factory=set)      # allowed Arg.symbol values
    frameworks: set = field(default_factory=set)   # "torch", ...

    def is_random(self, name: str) -> bool:
        op = self.ops.get(name)
        return bool(op is not None and op.random)


def schema_dir() -> str:
    """The directory the schemas are read from (the package copy, else the source checkout's)."""
    env = os.environ.get("IVYTRACE_SCHEMA_DIR")
    if env:
        return env
    for d in (_PKG_SCHEMAS, _REPO_SCHEMAS):
        if os.path.isdir(d) and any(f.endswith(".textproto") for f in os.listdir(d)):
            return d
    return _PKG_SCHEMAS


def parse_schema_file(path: str) -> schema_pb2.SchemaFile:
    try:
        with open(path, "r", encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise SchemaError(f"ivytrace: cannot read schema file {path}: {e.strerror}") from None
    try:
        return text_format.Parse(text, schema_pb2.SchemaFile())
    except text_format.ParseError as e:
        raise SchemaError(f"ivytrace: schema file {path} does not parse as ivytrace.v1.SchemaFile: {e}") from None


@functools.lru_cache(maxsize=None)
def load_schemas(directory: str | None = None) -> Schemas:
    d = directory or schema_dir()
    try:
        names = sorted(f for f in os.listdir(d) if f.endswith(".textproto"))
    except OSError:
        names = []
    if not names:
        raise SchemaError(
            f"ivytrace: no schema files (*.textproto) in {d}; build the project (cmake) or copy "
            f"schemas/*.textproto into the package's schemas/ directory")
    result = Schemas(files=[])
    for n in names:
        path = os.path.join(d, n)
        sf = parse_schema_file(path)
        result.files.append((path, sf))
        if sf.framework:
            result.frameworks.add(sf.framework)
        for op in sf.op:
            for name in op.name:
                result.ops.setdefault(name, op)
        result.symbols.update(sf.symbol)
    return result
