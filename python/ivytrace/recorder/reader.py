"""A small streaming reader for trace files, for tests and for users poking at a trace.

    trace = read_trace("run.ivytrace")
    for ev in trace.ops(): print(trace.string(ev.op), trace.string(ev.file), ev.line)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from ivytrace.recorder.writer import MAGIC
from ivytrace.v1 import trace_pb2


class TraceFormatError(ValueError):
    """The file is not a trace, or a record in it does not parse."""


def _read_varint(f, path: str, offset: int):
    """Varint at the current position; None at a clean EOF, 'partial' if the file ends inside it."""
    shift = 0
    value = 0
    for i in range(10):
        b = f.read(1)
        if not b:
            return None if i == 0 else "partial"
        byte = b[0]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value
        shift += 7
    raise TraceFormatError(f"{path}: byte offset {offset}: record length is not a valid varint")


def iter_records(path: str, strings: dict | None = None, status: dict | None = None) -> Iterator[trace_pb2.Record]:
    """Yield the records of a trace one at a time (bounded memory).

    Interned strings are collected into `strings` (id -> str) as they are read. A file that ends
    in the middle of a record (a killed program) stops cleanly: `status["truncated"]` is set.
    """
    if strings is None:
        strings = {}
    if status is None:
        status = {}
    status.setdefault("truncated", False)
    with open(path, "rb") as f:
        magic = f.read(len(MAGIC))
        if magic != MAGIC:
            raise TraceFormatError(
                f"{path}: not an ivytrace trace file (expected magic {MAGIC!r} at byte 0, found {magic!r})")
        offset = len(MAGIC)
        while True:
            n = _read_varint(f, path, offset)
            if n is None:
                return
            if n == "partial":
                status["truncated"] = True
                return
            if n == 0:
                # No record is empty: a zero length is space the recorder allocated ahead of its
                # data and never filled (the program was killed); only zero bytes may follow.
                for block in iter(lambda: f.read(1 << 20), b""):
                    if block.count(0) != len(block):
                        raise TraceFormatError(f"{path}: byte offset {offset}: a record length of 0 "
                                               "followed by data (not a trace's zero tail)")
                return
            data = f.read(n)
            if len(data) < n:
                status["truncated"] = True
                return
            rec = trace_pb2.Record()
            try:
                rec.ParseFromString(data)
            except Exception as e:  # protobuf raises DecodeError (message differs by backend)
                raise TraceFormatError(f"{path}: byte offset {offset}: record does not parse: {e}") from None
            offset = f.tell()
            if rec.WhichOneof("kind") == "intern":
                strings[rec.intern.id] = rec.intern.value
            yield rec


@dataclass
class Trace:
    path: str
    records: list = field(default_factory=list)    # every Record, in file order
    strings: dict = field(default_factory=dict)    # interned id -> string
    truncated: bool = False                        # the file ends inside a record

    def string(self, i: int) -> str:
        return self.strings.get(i, "") if i else ""

    def of_kind(self, kind: str) -> list:
        return [getattr(r, kind) for r in self.records if r.WhichOneof("kind") == kind]

    @property
    def header(self):
        return self.records[0].header if self.records and self.records[0].HasField("header") else None

    @property
    def footer(self):
        if self.records and self.records[-1].WhichOneof("kind") == "footer":
            return self.records[-1].footer
        return None

    def ops(self) -> list:
        return self.of_kind("op")

    def op_names(self) -> list:
        return [self.string(o.op) for o in self.ops()]

    def tensor_data(self) -> list:
        return self.of_kind("tensor")


def read_trace(path: str) -> Trace:
    """Read a whole trace into memory (fine for tests and small traces; see iter_records)."""
    trace = Trace(path=path)
    status: dict = {}
    for rec in iter_records(path, trace.strings, status):
        trace.records.append(rec)
    trace.truncated = status["truncated"]
    return trace
