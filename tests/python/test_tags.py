"""Field tags of the hand-encoded records come from the generated descriptors (recorder/tags.py),
for the Python encoders and the C extension alike."""
import pytest
from google.protobuf.descriptor import FieldDescriptor

from ivytrace.recorder import tags
from ivytrace.v1 import common_pb2, trace_pb2

MESSAGES = [trace_pb2.Record, trace_pb2.OpEvent, trace_pb2.TensorData, trace_pb2.ShapeRead,
            common_pb2.TensorRef, common_pb2.Arg, common_pb2.ArgList, common_pb2.ArgDict,
            common_pb2.Slice, common_pb2.Complex, common_pb2.KwArg, common_pb2.Tensor]


def _set_one(msg, fd):
    """Give `fd` a non-default value in `msg`, the way protobuf then writes it."""
    repeated = fd.is_repeated if hasattr(fd, "is_repeated") else fd.label == FieldDescriptor.LABEL_REPEATED
    if fd.type == FieldDescriptor.TYPE_MESSAGE:
        sub = getattr(msg, fd.name).add() if repeated else getattr(msg, fd.name)
        sub.SetInParent()
        return
    value = {FieldDescriptor.TYPE_STRING: "x", FieldDescriptor.TYPE_BYTES: b"x",
             FieldDescriptor.TYPE_BOOL: True, FieldDescriptor.TYPE_DOUBLE: 1.5,
             FieldDescriptor.TYPE_FLOAT: 1.5}.get(fd.type, 1)
    if repeated:
        getattr(msg, fd.name).append(value)
    else:
        setattr(msg, fd.name, value)


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: m.DESCRIPTOR.name)
def test_every_tag_is_what_protobuf_writes_for_that_field(message):
    for fd in message.DESCRIPTOR.fields:
        msg = message()
        _set_one(msg, fd)
        wire = msg.SerializeToString()
        t = tags.tag(message, fd.name)
        assert wire.startswith(t), f"{message.DESCRIPTOR.name}.{fd.name}: tag {t!r}, protobuf wrote {wire!r}"
        assert getattr(tags.tags_of(message), fd.name.upper()) == t


def test_the_hot_constants_are_the_descriptor_tags():
    from ivytrace.recorder import encode, writer
    assert encode.A_TENSOR == tags.tag(common_pb2.Arg, "tensor")
    assert encode.A_OPAQUE == tags.tag(common_pb2.Arg, "opaque") and len(encode.A_OPAQUE) == 2   # field 16
    assert writer.TAG_FOOTER == tags.tag(trace_pb2.Record, "footer")
    # A serialized Record with only `op` set is what the writer frames by hand.
    op = trace_pb2.OpEvent(op=3, line=7)
    body = op.SerializeToString()
    assert writer.frame(writer.TAG_OP, body)[1:] == trace_pb2.Record(op=op).SerializeToString()


def test_the_c_extension_takes_its_tags_from_python_and_refuses_a_bad_table():
    speedups = pytest.importorskip("ivytrace._speedups")
    good = tags.c_tags()
    assert good["op.args"] == tags.OP.ARGS[0] and good["record.op"] == tags.REC.OP[0]
    bad = dict(good)
    del bad["op.result"]
    with pytest.raises(ValueError, match="op.result"):
        speedups.set_tags(bad, trace_pb2.INPLACE)
    bad = dict(good, **{"arg.i": 300})
    with pytest.raises(ValueError, match="arg.i"):
        speedups.set_tags(bad, trace_pb2.INPLACE)
    speedups.set_tags(good, trace_pb2.INPLACE)   # put back what the recorder uses
