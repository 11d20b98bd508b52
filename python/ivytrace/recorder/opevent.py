"""The fields of an OpEvent, encoded by hand (one place for every recorder: torch, NumPy, JAX and
the conversions between them). Tags come from the descriptors (tags.py).

An OpEvent is written as `parts` (a list of bytes) in field order: `op_field(name id)`, then
`arg_field` for each positional argument, `kwarg_field` for each keyword, `result_field`,
`mutated_field` for each written tensor, and last `tail(...)`: flags, file, line, thread and the
clocks. `write_op(writer, parts)` frames it as a Record.op.
"""
from __future__ import annotations

from builtins import len  # the builtin itself: while recording, builtins.len is sym._len (one Python call more)

from ivytrace.recorder.encode import V, ld, varint
from ivytrace.recorder.tags import KW, OP, REC

_SMALL = len(V)
TAG_OP = REC.OP
_OP, _ARGS, _KWARGS, _RESULT, _MUTATED = OP.OP, OP.ARGS, OP.KWARGS, OP.RESULT, OP.MUTATED
_FLAGS, _FILE, _LINE, _THREAD, _START, _DURATION = OP.FLAGS, OP.FILE, OP.LINE, OP.THREAD, OP.START_NS, OP.DURATION_NS
_KW_NAME, _KW_VALUE = KW.NAME, KW.VALUE


def op_field(name_id: int) -> bytes:
    return _OP + varint(name_id)


def arg_field(arg: bytes) -> bytes:
    return ld(_ARGS, arg)


def kwarg_field(name: str, arg: bytes) -> bytes:
    return ld(_KWARGS, ld(_KW_NAME, name.encode()) + ld(_KW_VALUE, arg))


def result_field(arg: bytes) -> bytes:
    return ld(_RESULT, arg)


def mutated_field(ref: bytes) -> bytes:
    return ld(_MUTATED, ref)


def flags_field(flags: int) -> bytes:
    return _FLAGS + (V[flags] if flags < _SMALL else varint(flags)) if flags else b""


def file_line_fields(fid: int, line: int) -> bytes:
    """file and line, both written when there is a file (line even when 0), none without."""
    return _FILE + varint(fid) + _LINE + varint(line) if fid else b""


def thread_field(ident: int) -> bytes:
    return _THREAD + varint(ident)


def time_fields(start_ns: int, duration_ns: int) -> bytes:
    """start_ns (since the session's start) and duration_ns."""
    return _START + varint(start_ns) + _DURATION + (V[duration_ns] if duration_ns < _SMALL else varint(duration_ns))


def tail(flags: int, fid: int, line: int, thread: int, start_ns: int | None, duration_ns: int = 0) -> bytes:
    """The OpEvent's last fields: flags, file/line, thread, and the clocks (None: no clocks)."""
    b = flags_field(flags) + file_line_fields(fid, line) + _THREAD + varint(thread)
    return b if start_ns is None else b + time_fields(start_ns, duration_ns)


def write_op(writer, parts) -> None:
    """Queue the OpEvent made of `parts` as one Record.op (written at the writer's next emit)."""
    writer.add(TAG_OP, b"".join(parts), op=True)
