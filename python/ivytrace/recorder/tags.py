"""Protobuf field tags of the hand-encoded records, derived from the generated descriptors.

The recorders encode their hot records (OpEvent, Arg, TensorRef, TensorData...) by hand (see
encode.py). Every tag they write comes from here: `(field number << 3) | wire type` as a varint,
read from the message's descriptor, so the .proto files are the one place a field number is
written. The C extension gets the tags it needs from `c_tags()` when it is set up (see
_speedups.c, `set_tags`), not as literals of its own.

    from ivytrace.recorder.tags import OP, REF
    OP.ARGS      # b"\\x12": OpEvent.args, field 2, length-delimited
    REF.VERSION  # b"\\x10": TensorRef.version, field 2, varint
"""
from __future__ import annotations

import types

from google.protobuf.descriptor import FieldDescriptor as _FD

from ivytrace.v1 import common_pb2, trace_pb2

_VARINT, _FIXED64, _LEN, _FIXED32 = 0, 1, 2, 5
_WIRE = {
    _FD.TYPE_DOUBLE: _FIXED64, _FD.TYPE_FIXED64: _FIXED64, _FD.TYPE_SFIXED64: _FIXED64,
    _FD.TYPE_FLOAT: _FIXED32, _FD.TYPE_FIXED32: _FIXED32, _FD.TYPE_SFIXED32: _FIXED32,
    _FD.TYPE_STRING: _LEN, _FD.TYPE_BYTES: _LEN, _FD.TYPE_MESSAGE: _LEN,
}


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def tag(message, field: str) -> bytes:
    """The tag bytes of `message`'s field `field` (a packed repeated scalar is length-delimited)."""
    fd = message.DESCRIPTOR.fields_by_name[field]
    wire = _WIRE.get(fd.type, _VARINT)
    repeated = fd.is_repeated if hasattr(fd, "is_repeated") else fd.label == _FD.LABEL_REPEATED
    if repeated and wire != _LEN:
        # Repeated scalars: packed (proto3's default; the recorder writes them packed).
        if not getattr(fd, "is_packed", True):
            raise ValueError(f"{message.DESCRIPTOR.full_name}.{field} is repeated but not packed")
        wire = _LEN
    return _varint((fd.number << 3) | wire)


def tags_of(message) -> types.SimpleNamespace:
    """Every field's tag of `message`, as attributes named after the fields in upper case."""
    return types.SimpleNamespace(**{f.name.upper(): tag(message, f.name) for f in message.DESCRIPTOR.fields})


REC = tags_of(trace_pb2.Record)            # Record.kind: op, tensor, intern, region_begin...
OP = tags_of(trace_pb2.OpEvent)
TDATA = tags_of(trace_pb2.TensorData)
REF = tags_of(common_pb2.TensorRef)
ARG = tags_of(common_pb2.Arg)
LIST = tags_of(common_pb2.ArgList)
DICT = tags_of(common_pb2.ArgDict)
SLICE = tags_of(common_pb2.Slice)
COMPLEX = tags_of(common_pb2.Complex)
KW = tags_of(common_pb2.KwArg)
TENSOR = tags_of(common_pb2.Tensor)


def c_tags() -> dict:
    """The tags the C recorder (ivytrace._speedups) writes, by the names it asks for. Each is a
    one-byte tag (field number below 16); `set_tags` checks that every name it needs is here."""
    out = {}
    for prefix, ns in (("record", REC), ("op", OP), ("ref", REF), ("arg", ARG), ("list", LIST),
                       ("kw", KW)):
        for name, b in vars(ns).items():
            if len(b) == 1:
                out[f"{prefix}.{name.lower()}"] = b[0]
    return out
