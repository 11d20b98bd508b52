"""Trace file writer: magic, then varint-length-delimited `ivytrace.v1.Record`s.

With the C extension (ivytrace._speedups) and a regular file, records go into a shared memory
mapping of the file as they are made (a memcpy, no system call per record; the C recorder writes
its OpEvents there directly). The kernel owns mapped pages at once, so a killed process still
leaves every record it made; the file is extended ahead of the data and cut to size on close, and
a killed process leaves zero bytes after its last record, which readers take as the end. The
footer's CRC-32 is computed over the mapping on close instead of record by record.

Without the extension (or for a pipe or device), every `emit` ends in one os.write of whole
records, so a killed process leaves a file readable up to its last complete record too.
"""
from __future__ import annotations

import os
import threading
import zlib

from ivytrace.recorder.encode import V, varint
from ivytrace.v1 import trace_pb2

try:
    from ivytrace._speedups import Sink
except ImportError:   # built without the C extension: write() path below
    Sink = None

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
        # Read and write: a shared mapping of the file needs both.
        flags = os.O_RDWR | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)
        self._fd = os.open(path, flags, 0o644)
        self._lock = threading.Lock()
        self._pending: list = []
        self._strings: dict[str, int] = {}
        self.sink = None
        if Sink is not None and os.environ.get("IVYTRACE_NO_SPEEDUPS") != "1":
            try:
                self.sink = Sink(self._fd, MAGIC)
            except OSError:   # not a regular file, or no mmap: the write() path
                pass
        self._records = 0          # records written (header included), for the footer
        self._op_events = 0
        self._tensor_bytes = 0
        self.closed = False
        if self.sink is None:
            self._write_all(MAGIC)
        self._crc = 0  # zlib CRC-32 of every byte after the magic (the footer's crc32)

    # Counts for the footer (in the sink when there is one: the C recorder counts its records).
    @property
    def records(self):
        return self.sink.records if self.sink is not None else self._records

    @records.setter
    def records(self, n):
        if self.sink is not None:
            self.sink.records = n
        else:
            self._records = n

    @property
    def op_events(self):
        return self.sink.op_events if self.sink is not None else self._op_events

    @op_events.setter
    def op_events(self, n):
        if self.sink is not None:
            self.sink.op_events = n
        else:
            self._op_events = n

    @property
    def tensor_bytes(self):
        return self.sink.tensor_bytes if self.sink is not None else self._tensor_bytes

    @tensor_bytes.setter
    def tensor_bytes(self, n):
        if self.sink is not None:
            self.sink.tensor_bytes = n
        else:
            self._tensor_bytes = n

    @property
    def writes_at_once(self) -> bool:
        """Records are in the file when add()/add_parts() return (no later write)."""
        return self.sink is not None

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
                data = trace_pb2.Intern(id=i, value=s).SerializeToString()
                if self.sink is not None:
                    self.sink.record(TAG_INTERN, (data,))
                    return i
                self._pending.append(frame(TAG_INTERN, data))
                self._records += 1
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
        if self.sink is not None:
            with self._lock:
                self.sink.record(tag, (payload,), op, tensor_bytes)
            return
        data = frame(tag, payload)
        with self._lock:
            self._pending.append(data)
            self._buffered += len(data)
            self._records += 1
            if op:
                self._op_events += 1
            self._tensor_bytes += tensor_bytes

    def add_parts(self, tag: bytes, parts: list, *, tensor_bytes: int = 0) -> None:
        """Queue one record given as a list of bytes-like parts (joined when written)."""
        if self.sink is not None:
            with self._lock:
                self.sink.record(tag, parts, False, tensor_bytes)
            return
        data = frame_parts(tag, parts)
        with self._lock:
            self._pending.extend(data)
            self._buffered += sum(len(p) for p in data)
            self._records += 1
            self._tensor_bytes += tensor_bytes

    def emit_op(self, payload: bytes) -> None:
        """Write queued records and then one OpEvent, in one write() (the hot path)."""
        if self.sink is not None:
            with self._lock:
                self.sink.record(TAG_OP, (payload,), True)
            return
        data = frame(TAG_OP, payload)
        with self._lock:
            self._records += 1
            self._op_events += 1
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
        if self.sink is not None:
            if tag is not None:
                with self._lock:
                    self.sink.record(tag, (payload,), op)
            return
        with self._lock:
            if tag is not None:
                data = frame(tag, payload)
                self._pending.append(data)
                self._buffered += len(data)
                self._records += 1
                if op:
                    self._op_events += 1
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
        if self.sink is not None:
            self.sink.write(data)
            return
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
                if self.sink is not None:
                    self.sink.close(False)   # the file is the parent's: leave it as it is
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
                # of everything written before the footer
                footer.crc32 = self.sink.crc32(len(MAGIC)) if self.sink is not None else self._crc
                self.records += 1
                self._write_all(frame(TAG_FOOTER, footer.SerializeToString()))
            self.closed = True
            if self.sink is not None:
                self.sink.close()
            os.close(self._fd)
