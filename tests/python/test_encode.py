"""The hand-written wire encoding parses to the same messages the generated classes build."""
import math

import pytest
import torch
from google.protobuf.internal.encoder import _VarintBytes

from ivytrace.recorder.encode import ArgEncoder, varint
from ivytrace.recorder.writer import TAG_OP, frame
from ivytrace.v1 import common_pb2, trace_pb2

Arg = common_pb2.Arg
AL = common_pb2.ArgList


@pytest.mark.parametrize("n", [0, 1, 127, 128, 16383, 16384, 2**21, 2**28 - 1, 2**28, 2**35, 2**42 + 5, 2**63 - 1, 2**64 - 1])
def test_varint_matches_protobuf(n):
    assert varint(n) == _VarintBytes(n)


CASES = [
    (None, Arg(none=True)),
    (True, Arg(b=True)),
    (False, Arg(b=False)),
    (0, Arg(i=0)),
    (-3, Arg(i=-3)),
    (2**62, Arg(i=2**62)),
    (-(2**63), Arg(i=-(2**63))),
    (1.5, Arg(f=1.5)),
    (-0.0, Arg(f=-0.0)),
    ("héllo", Arg(s="héllo")),
    (2 - 3j, Arg(c=common_pb2.Complex(real=2, imag=-3))),
    ([1, "a"], Arg(list=AL(items=[Arg(i=1), Arg(s="a")]))),
    ((), Arg(tuple=AL())),
    ((None, ...), Arg(tuple=AL(items=[Arg(none=True), Arg(ellipsis=True)]))),
    ({"k": 1, "j": [2.0]}, Arg(dict=common_pb2.ArgDict(keys=["k", "j"], values=[Arg(i=1), Arg(list=AL(items=[Arg(f=2.0)]))]))),
    (slice(1, None, -1), Arg(slice=common_pb2.Slice(start=Arg(i=1), step=Arg(i=-1)))),
    (slice(None), Arg(slice=common_pb2.Slice())),
]


@pytest.mark.parametrize("value,expected", CASES, ids=[repr(c[0]) for c in CASES])
def test_arg_encoding_parses_to_the_expected_message(value, expected):
    got = Arg.FromString(ArgEncoder().encode(value, []))
    assert got == expected


def test_unrepresentable_values_are_opaque():
    enc = ArgEncoder()
    assert Arg.FromString(enc.encode(2**70, [])).opaque.startswith("int: ")
    assert Arg.FromString(enc.encode({1: 2}, [])).opaque.startswith("dict: ")
    assert Arg.FromString(enc.encode(object(), [])).opaque.startswith("object: <object object")


def test_torch_values_in_recorded_ops(tmp_path):
    import ivytrace
    x = torch.ones(2, dtype=torch.float64)
    path = tmp_path / "t.ivytrace"
    with ivytrace.Recorder(path):
        x.to(dtype=torch.float8_e4m3fn if hasattr(torch, "float8_e4m3fn") else torch.complex32)
        x.new_zeros((2, 3), layout=torch.strided)
        x * math.inf
    ops = ivytrace.read_trace(str(path)).ops()
    assert ops[0].kwargs[0].value.symbol.startswith("torch.")      # a dtype outside the DType enum
    assert ops[1].args[1].tuple.items[1].i == 3 and ops[1].kwargs[0].value.symbol == "torch.strided"
    assert ops[2].args[1].f == math.inf


def test_record_framing_matches_a_serialized_record():
    ev = trace_pb2.OpEvent(op=3, flags=1, line=7)
    rec = trace_pb2.Record(op=ev).SerializeToString()
    assert frame(TAG_OP, ev.SerializeToString()) == _VarintBytes(len(rec)) + rec
