"""Operator schemas (schemas/*.textproto, text-format ivytrace.v1.SchemaFile).

The same files the CLI embeds. The recorder reads the `random` flag from them; the runtime reads
every `name` and `symbol` as its allow-list. Parsed once per process.
"""
from __future__ import annotations

import functools
import hashlib
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
    """A schema file, parsed. protobuf's text parser is pure Python (~0.35 s for the four files,
    paid by every process that records or loads a plan, `ivytrace record`'s children included),
    so the parsed file is also kept in binary next to it, in __pycache__/, named by the SHA-256
    of the text: read back in ~1 ms when the text is the same, never when it changed. The cache
    sits in the schema file's own directory, so it is trusted as much as the file; where that is
    not writable there is no cache, only the slower parse."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise SchemaError(f"ivytrace: cannot read schema file {path}: {e.strerror}") from None
    cached = os.path.join(os.path.dirname(path), "__pycache__",
                          f"{os.path.basename(path)}.{hashlib.sha256(raw).hexdigest()[:32]}.binpb")
    try:
        with open(cached, "rb") as f:
            return schema_pb2.SchemaFile.FromString(f.read())
    except Exception:  # noqa: BLE001 - no cache (or a damaged one): parse the text
        pass
    try:
        sf = text_format.Parse(raw.decode("utf-8"), schema_pb2.SchemaFile())
    except (text_format.ParseError, UnicodeDecodeError) as e:
        raise SchemaError(f"ivytrace: schema file {path} does not parse as ivytrace.v1.SchemaFile: {e}") from None
    _write_cache(cached, sf.SerializeToString())
    return sf


def _write_cache(path: str, data: bytes) -> None:
    """Write atomically (processes race to write the same bytes), or not at all."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        # Caches of the file's earlier texts go.
        d, name = os.path.split(path)
        stem = name.rsplit(".", 2)[0]
        for old in os.listdir(d):
            if old != name and old.startswith(stem + ".") and old.endswith(".binpb"):
                os.unlink(os.path.join(d, old))
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


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
