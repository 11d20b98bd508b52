"""Trace file writer: magic, then varint-length-delimited `ivytrace.v1.Record`s.

Every `emit` ends in one os.write of whole records, so a process killed at any moment leaves a file
that is readable up to its last complete record (the kernel keeps what write() accepted).
"""
from __future__ import annotations

import os
import threading

from ivytrace.v1 import trace_pb2

MAGIC = b"IVYTRC01"

# Field tags of the `Record.kind` oneof members (field number << 3 | wire type 2). A record is
# framed by hand as tag + varint(len) + payload, which is byte-for-byte what serializing a
# `Record` with that one field set produces, without building the wrapper message per op.
TAG_OP = b"\x0a"            # Record.op = 1
TAG_TENSOR = b"\x12"        # Record.tensor = 2
TAG_INTERN = b"\x1a"        # Record.intern = 3
TAG_REGION_BEGIN = b"\x22"  # Record.region_begin = 4
TAG_REGION_END = b"\x2a"    # Record.region_end = 5
TAG_GUARD = b"\x32"         # Record.guard = 6
TAG_SHAPE_READ = b"\x3a"    # Record.shape_read = 7
TAG_HEADER = b"\x72"        # Record.header = 14
TAG_FOOTER = b"\x7a"        # Record.footer = 15


def varint(n: int) -> bytes:
    """Base-128 varint, as protobuf encodes lengths.

    Hand-written because protobuf's Python API has no public length-delimited writer
    (`_VarintBytes` lives in google.protobuf.internal and may change between releases).
    """
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def frame(tag: bytes, payload: bytes) -> bytes:
    """One record on disk: varint(len(Record)) + Record, where Record = tag + varint(len) + payload."""
    rec = tag + varint(len(payload)) + payload
    return varint(len(rec)) + rec


class TraceWriter:
    """Appends records to a trace file. Thread-safe; counts what the footer reports."""

    def __init__(self, path: str):
        self.path = path
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)
        self._fd = os.open(path, flags, 0o644)
        self._lock = threading.Lock()
        self._pending: list[bytes] = []
        self._strings: dict[str, int] = {}
        self.records = 0          # records written (header included), for the footer
        self.op_events = 0
        self.tensor_bytes = 0
        self.closed = False
        self._write_all(MAGIC)

    # -- strings ---------------------------------------------------------------------------
    def intern(self, s: str) -> int:
        """Id of `s`, defining it with an Intern record (written before any record using it)."""
        i = self._strings.get(s)
        if i is not None:
            return i
        with self._lock:
            i = self._strings.get(s)
            if i is None:
                i = len(self._strings) + 1
                self._strings[s] = i
                self._pending.append(frame(TAG_INTERN, trace_pb2.Intern(id=i, value=s).SerializeToString()))
                self.records += 1
        return i

    # -- records ---------------------------------------------------------------------------
    def add(self, tag: bytes, payload: bytes, *, op: bool = False, tensor_bytes: int = 0) -> None:
        """Queue one record (written at the next `emit`)."""
        data = frame(tag, payload)
        with self._lock:
            self._pending.append(data)
            self.records += 1
            if op:
                self.op_events += 1
            self.tensor_bytes += tensor_bytes

    def emit(self, tag: bytes | None = None, payload: bytes | None = None, *, op: bool = False,
             tensor_bytes: int = 0) -> None:
        """Queue an optional last record, then write everything queued in one write()."""
        with self._lock:
            if tag is not None:
                self._pending.append(frame(tag, payload))
                self.records += 1
                if op:
                    self.op_events += 1
                self.tensor_bytes += tensor_bytes
            if self._pending and not self.closed:
                data = b"".join(self._pending) if len(self._pending) > 1 else self._pending[0]
                self._pending.clear()
                self._write_all(data)

    def _write_all(self, data) -> None:
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]

    def close(self, footer: trace_pb2.Footer | None = None) -> None:
        """Write the footer (if given) with the counts filled in, and close the file."""
        if self.closed:
            return
        if footer is not None:
            footer.records = self.records
            footer.op_events = self.op_events
            footer.tensor_bytes = self.tensor_bytes
            self.emit(TAG_FOOTER, footer.SerializeToString())
        else:
            self.emit()
        with self._lock:
            self.closed = True
            os.close(self._fd)
