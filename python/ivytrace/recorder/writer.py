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

from builtins import len  # the builtin itself: while recording, builtins.len is sym._len (one Python call more)

import os
import threading
import zlib

from ivytrace.recorder.encode import V, varint
from ivytrace.recorder.tags import REC
from ivytrace.v1 import trace_pb2

try:
    from ivytrace._speedups import Sink
except ImportError:   # built without the C extension: write() path below
    Sink = None

MAGIC = b"IVYTRC01"

# Field tags of the `Record.kind` oneof members (from the descriptors, tags.py). A record is
# framed by hand as tag + varint(len) + payload, which is byte-for-byte what serializing a
# `Record` with that one field set produces, without building the wrapper message per op.
TAG_OP = REC.OP
TAG_TENSOR = REC.TENSOR
TAG_INTERN = REC.INTERN
TAG_REGION_BEGIN = REC.REGION_BEGIN
TAG_REGION_END = REC.REGION_END
TAG_GUARD = REC.GUARD
TAG_SHAPE_READ = REC.SHAPE_READ
TAG_HEADER = REC.HEADER
TAG_FOOTER = REC.FOOTER

_SMALL = len(V)


def frame(tag: bytes, payload: bytes) -> bytes:
    """One record on disk: varint(len(Record)) + Record, where Record = tag + varint(len) + payload.

    (Lengths are varints as protobuf encodes them; protobuf's Python API has no public
    length-delimited writer, so this is done by hand.)
    """
    n = len(payload)
    inner = V[n] if n < _SMALL else varint(n)
    m = len(tag) + len(inner) + n
    return (V[m] if m < _SMALL else varint(m)) + tag + inner + payload


def frame_parts(tag: bytes, parts: list) -> list:
    """Like frame() for a payload given as a list of bytes-like parts (no copy until written)."""
    n = sum(len(p) for p in parts)
    inner = varint(n)
    return [varint(len(tag) + len(inner) + n), tag, inner, *parts]


def seal_footer(footer: trace_pb2.Footer) -> None:
    """Set footer_crc32: the CRC-32 of everything before the footer (footer.crc32), continued
    over the footer's own fields, so a changed count, size, time or message is caught too."""
    footer.ClearField("footer_crc32")
    footer.footer_crc32 = zlib.crc32(footer.SerializeToString(), footer.crc32)


class TraceWriter:
    """Appends records to a trace file. Thread-safe; counts what the footer reports.

    `buffer_bytes=0` (the default) writes every op as it happens, so a killed process leaves all
    records up to its last call. A positive value batches writes up to that many bytes: for
    in-process tracing (trace_graph), where a crash loses the whole trace anyway and the per-call
    write() is the largest part of the recording overhead.
    """

    use_sink = True   # records go into a memory mapping of the file when the C extension is built

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
        if Sink is not None and self.use_sink and os.environ.get("IVYTRACE_NO_SPEEDUPS") != "1":
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
            if self.io_error is not None:
                self._good_size = 0
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
                if self.sink.io_error:
                    self._check_sink()
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
        if self.io_error is not None:
            return
        view = memoryview(data)
        try:
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
        except OSError as e:
            self._stop_on_io_error(e.errno, e.strerror)
            return
        self._good_size += len(data)
        if hasattr(self, "_crc"):
            self._crc = zlib.crc32(data, self._crc)

    # -- I/O faults ---------------------------------------------------------------------------
    # A write that fails (disk full, quota, a lost mount) stops the trace; it never reaches the
    # program, which runs on unrecorded, as at a recording limit. The file keeps every whole record
    # written before the fault (a write is whole records; a part written is cut off again), so it
    # reads like the trace of a program stopped there. One line on stderr says so.
    io_error = None   # (errno, message) once a write failed
    _good_size = 0    # bytes of whole records in the file (write() path)

    def _stop_on_io_error(self, errno_, message) -> None:
        self.io_error = (errno_, message or os.strerror(errno_ or 5))
        self._pending.clear()
        try:
            os.ftruncate(self._fd, self._good_size)
        except OSError:
            pass
        self._report_io_error()

    def _check_sink(self) -> None:
        if self.sink is not None and self.sink.io_error and self.io_error is None:
            self.io_error = (self.sink.io_error, os.strerror(self.sink.io_error))
            self._report_io_error()

    def _report_io_error(self) -> None:
        import sys
        try:
            sys.stderr.write(f"ivytrace: recording stopped: cannot write the trace '{self.path}': "
                             f"{self.io_error[1]} (errno {self.io_error[0]}); the trace holds the records "
                             f"made before it, and the program runs on unrecorded\n")
        except Exception:  # noqa: BLE001 - a closed stderr must not reach the program either
            pass

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
            self._check_sink()
            if footer is not None and self.io_error is None:
                footer.records = self.records
                footer.op_events = self.op_events
                footer.tensor_bytes = self.tensor_bytes
                # of everything written before the footer
                footer.crc32 = self.sink.crc32(len(MAGIC)) if self.sink is not None else self._crc
                seal_footer(footer)
                self.records += 1
                self._write_all(frame(TAG_FOOTER, footer.SerializeToString()))
            self.closed = True
            try:
                if self.sink is not None:
                    self.sink.close()   # cuts the file to its whole records
            except OSError as e:
                if self.io_error is None:
                    self.io_error = (e.errno, e.strerror)
                    self._report_io_error()
            os.close(self._fd)


# Room kept for the footer under a byte limit: a footer with every count at its widest varint,
# the CRC, and a LimitHit whose strings are cut to fit (see LimitedTraceWriter._fit_footer).
FOOTER_RESERVE = 512


class LimitedTraceWriter(TraceWriter):
    """A TraceWriter that stops at a limit: at most `max_ops` op events, a file of at most
    `max_bytes` bytes (footer included). The unlimited writer above is left untouched (its
    emit_op is the recorder's hot path); this one routes every write through `_flush_locked`.

    A write that would go over a limit is dropped whole (a write holds one op and the records it
    needs: interned strings, constant values, its outputs' values), the counts are rolled back to
    what is on disk, and the footer is written at once with `stopped_by_limit`; every later record
    is dropped. `on_limit(hit)` is called once, after the writer's lock is released. With
    `buffer_bytes` a write holds several ops and the cut falls on a write boundary, so fewer ops
    than the limit may be kept. The header (the first write) is always written.
    """

    # A write over a limit must be dropped before any of it reaches the file; records put into
    # the mapping are in the file at once, so a limited trace takes the write() path (and the
    # C recorder hands its ops to emit_op below).
    use_sink = False

    def __init__(self, path: str, buffer_bytes: int = 0, *, max_ops: int | None = None,
                 max_bytes: int | None = None, end_ns=None, on_limit=None):
        super().__init__(path, buffer_bytes)
        self.max_ops = max_ops
        self.max_bytes = max_bytes
        self._end_ns = end_ns or (lambda: 0)
        self._on_limit = on_limit
        self._size = len(MAGIC)
        self._on_disk = (0, 0, 0)       # (records, op_events, tensor_bytes) written so far
        self._last_op = None           # payload of the last op queued (for the message)
        self.limit_hit = None          # trace_pb2.LimitHit once a limit stopped the trace
        self._notify = False

    def add(self, tag, payload, *, op=False, tensor_bytes=0):
        if self.closed:
            return
        if op:
            self._last_op = payload
        super().add(tag, payload, op=op, tensor_bytes=tensor_bytes)

    def add_parts(self, tag, parts, *, tensor_bytes=0):
        if self.closed:
            return
        super().add_parts(tag, parts, tensor_bytes=tensor_bytes)

    def intern(self, s):
        if self.closed:
            return self._strings.get(s, 0)
        return super().intern(s)

    def emit_op(self, payload):
        if self.closed:
            return
        with self._lock:
            data = frame(TAG_OP, payload)
            self._last_op = payload
            self.records += 1
            self.op_events += 1
            self._pending.append(data)
            self._buffered += len(data)
            if not self.buffer_bytes or self._buffered >= self.buffer_bytes:
                self._flush_locked()
        self._after_write()

    def emit(self, tag=None, payload=None, *, op=False):
        if self.closed:
            return
        if op and tag is not None:
            self._last_op = payload
        super().emit(tag, payload, op=op)
        self._after_write()

    def flush(self):
        super().flush()
        self._after_write()

    def _flush_locked(self):
        self._buffered = 0
        if not self._pending or self.closed:
            return
        data = b"".join(self._pending)
        self._pending.clear()
        kind = None
        if self.max_ops is not None and self.op_events > self.max_ops:
            kind = trace_pb2.LimitHit.MAX_OPS
        elif (self.max_bytes is not None and self._on_disk[0] > 0
              and self._size + len(data) + FOOTER_RESERVE > self.max_bytes):
            kind = trace_pb2.LimitHit.MAX_BYTES
        if kind is None:
            self._write_all(data)
            self._size += len(data)
            self._on_disk = (self.records, self.op_events, self.tensor_bytes)
            return
        self._stop_at_limit(kind)

    def _stop_at_limit(self, kind):
        """Drop what was queued, write the footer now, close (the lock is held)."""
        op_dropped = self.op_events > self._on_disk[1]
        self.records, self.op_events, self.tensor_bytes = self._on_disk
        hit = trace_pb2.LimitHit(kind=kind, ops_recorded=self.op_events,
                                 value=self.max_ops if kind == trace_pb2.LimitHit.MAX_OPS else self.max_bytes)
        if self._last_op is not None and op_dropped:
            op = trace_pb2.OpEvent.FromString(self._last_op)
            hit.op = self.string(op.op)
            hit.file = self.string(op.file)
            hit.line = op.line
        else:
            hit.file, hit.line = _user_location()
        footer = trace_pb2.Footer(end_ns=self._end_ns(), stopped_by_limit=hit)
        self._write_footer_locked(footer)
        self.limit_hit = hit
        self._notify = True

    def _write_footer_locked(self, footer):
        footer.records = self.records
        footer.op_events = self.op_events
        footer.tensor_bytes = self.tensor_bytes
        footer.crc32 = self._crc
        if self.max_bytes is not None:
            self._fit_footer(footer)
        seal_footer(footer)
        self.records += 1
        self._write_all(frame(TAG_FOOTER, footer.SerializeToString()))
        self.closed = True
        os.close(self._fd)

    @staticmethod
    def _fit_footer(footer):
        """Cut the footer's strings so the footer fits in FOOTER_RESERVE bytes."""
        budget = FOOTER_RESERVE - 24  # framing varints and the footer_crc32 added after this cut
        for holder, field in ((footer, "error"), (footer.stopped_by_limit, "file"),
                              (footer.stopped_by_limit, "op")):
            if len(footer.SerializeToString()) <= budget:
                return
            s = getattr(holder, field)
            over = len(footer.SerializeToString()) - budget
            setattr(holder, field, "..." + s[over + 3:] if len(s) > over + 3 else "")

    def close(self, footer=None):
        if self.closed:
            return
        with self._lock:
            self._flush_locked()
            if not self.closed and footer is not None:
                self._write_footer_locked(footer)
            elif not self.closed:
                self.closed = True
                os.close(self._fd)
        self._after_write()

    def _after_write(self):
        if self._notify:
            self._notify = False
            if self._on_limit is not None:
                self._on_limit(self.limit_hit)


def _user_location():
    """(file, line) of the innermost frame outside ivytrace and the frameworks it records."""
    import sys
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    skip = [here]
    for name in ("torch", "numpy"):
        m = sys.modules.get(name)
        if m is not None and getattr(m, "__file__", None):
            skip.append(os.path.dirname(os.path.abspath(m.__file__)) + os.sep)
    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        if not any(fn.startswith(s) for s in skip) and not fn.startswith("<"):
            return fn, f.f_lineno or 0
        f = f.f_back
    return "", 0
