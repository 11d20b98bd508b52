"""Trace file writer: magic, then varint-length-delimited `ivytrace.v1.Record`s.

Every `emit` ends in one os.write of whole records, so a process killed at any moment leaves a file
that is readable up to its last complete record (the kernel keeps what write() accepted).
"""
from __future__ import annotations

import os
import threading
import zlib

from ivytrace.recorder.encode import V, varint
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

_SMALL = len(V)


def frame(tag: bytes, payload: bytes) -> bytes:
    """One record on disk: varint(len(Record)) + Record, where Record = tag + varint(len) + payload.

    (Lengths are varints as protobuf encodes them; protobuf's Python API has no public
    length-delimited writer, so this is done by hand.)
    """
    n = len(payload)
    inner = V[n] if n < _SMALL else varint(n)
    m = 1 + len(inner) + n
    return (V[m] if m < _SMALL else varint(m)) + tag + inner + payload


def frame_parts(tag: bytes, parts: list) -> list:
    """Like frame() for a payload given as a list of bytes-like parts (no copy until written)."""
    n = sum(len(p) for p in parts)
    inner = varint(n)
    return [varint(1 + len(inner) + n), tag, inner, *parts]


class TraceWriter:
    """Appends records to a trace file. Thread-safe; counts what the footer reports.

    `buffer_bytes=0` (the default) writes every op as it happens, so a killed process leaves all
    records up to its last call. A positive value batches writes up to that many bytes: for
    in-process tracing (trace_graph), where a crash loses the whole trace anyway and the per-call
    write() is the largest part of the recording overhead.
    """

    def __init__(self, path: str, buffer_bytes: int = 0):
        self.path = path
        self.buffer_bytes = buffer_bytes
        self._buffered = 0
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)
        self._fd = os.open(path, flags, 0o644)
        self._lock = threading.Lock()
        self._pending: list = []
        self._strings: dict[str, int] = {}
        self.records = 0          # records written (header included), for the footer
        self.op_events = 0
        self.tensor_bytes = 0
        self.closed = False
        self._write_all(MAGIC)
        self._crc = 0  # zlib CRC-32 of every byte after the magic (the footer's crc32)

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

    def string(self, i: int) -> str:
        """The interned string with id `i` (slow; for messages)."""
        for s, j in self._strings.items():
            if j == i:
                return s
        return ""

    # -- records ---------------------------------------------------------------------------
    def add(self, tag: bytes, payload: bytes, *, op: bool = False, tensor_bytes: int = 0) -> None:
        """Queue one record (written at the next `emit`)."""
        data = frame(tag, payload)
        with self._lock:
            self._pending.append(data)
            self._buffered += len(data)
            self.records += 1
            if op:
                self.op_events += 1
            self.tensor_bytes += tensor_bytes

    def add_parts(self, tag: bytes, parts: list, *, tensor_bytes: int = 0) -> None:
        """Queue one record given as a list of bytes-like parts (joined when written)."""
        data = frame_parts(tag, parts)
        with self._lock:
            self._pending.extend(data)
            self._buffered += sum(len(p) for p in data)
            self.records += 1
            self.tensor_bytes += tensor_bytes

    def emit_op(self, payload: bytes) -> None:
        """Write queued records and then one OpEvent, in one write() (the hot path)."""
        data = frame(TAG_OP, payload)
        with self._lock:
            self.records += 1
            self.op_events += 1
            if self.buffer_bytes:
                self._pending.append(data)
                self._buffered += len(data)
                if self._buffered >= self.buffer_bytes:
                    self._flush_locked()
                return
            if self._pending:
                self._pending.append(data)
                data = b"".join(self._pending)
                self._pending.clear()
                self._buffered = 0
            if not self.closed:
                self._write_all(data)

    def emit(self, tag: bytes | None = None, payload: bytes | None = None, *, op: bool = False) -> None:
        """Queue an optional last record, then write everything queued in one write()
        (with a buffer: once the buffer is full)."""
        with self._lock:
            if tag is not None:
                data = frame(tag, payload)
                self._pending.append(data)
                self._buffered += len(data)
                self.records += 1
                if op:
                    self.op_events += 1
            if self.buffer_bytes and self._buffered < self.buffer_bytes:
                return
            self._flush_locked()

    def flush(self) -> None:
        """Write everything queued."""
        with self._lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        self._buffered = 0
        if self._pending and not self.closed:
            data = b"".join(self._pending) if len(self._pending) > 1 else self._pending[0]
            self._pending.clear()
            self._write_all(data)

    def _write_all(self, data) -> None:
        if hasattr(self, "_crc"):
            self._crc = zlib.crc32(data, self._crc)
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]

    def abandon(self) -> None:
        """Close without writing what is queued (e.g. in a forked child)."""
        with self._lock:
            self._pending.clear()
            if not self.closed:
                self.closed = True
                os.close(self._fd)

    def close(self, footer: trace_pb2.Footer | None = None) -> None:
        """Write the footer (if given) with the counts filled in, and close the file."""
        if self.closed:
            return
        with self._lock:
            self._flush_locked()
            if footer is not None:
                footer.records = self.records
                footer.op_events = self.op_events
                footer.tensor_bytes = self.tensor_bytes
                footer.crc32 = self._crc  # of everything written before the footer
                self.records += 1
                self._write_all(frame(TAG_FOOTER, footer.SerializeToString()))
            self.closed = True
            os.close(self._fd)
