"""Malformed plans fail with PlanError naming the problem (never a raw ValueError/RuntimeError),
and loading plans leaves nothing behind in linecache."""
import gc
import linecache

import pytest
import torch

import ivytrace
from ivytrace.runtime.plan import CompiledPlan
from ivytrace.v1 import common_pb2, plan_pb2


def plan_with_constant(shape, data=b"", slot=0, num_slots=1, dtype=common_pb2.FLOAT32):
    p = plan_pb2.Plan(name="p", framework="torch", num_slots=num_slots)
    c = p.constants.add(slot=slot)
    c.value.dtype = dtype
    c.value.shape.extend(shape)
    c.value.data = data
    p.outputs.tensor.value = slot
    return p


@pytest.mark.parametrize("shape,what", [
    ([1] * 65, "dimensions"),
    ([0, 1 << 62, 1 << 62], "too large"),
    ([0, (1 << 40), (1 << 40), (1 << 40)], "too large"),
    ([-1, 2], "negative"),
])
def test_bad_constant_shapes_are_plan_errors(shape, what):
    data = b"\0\0\0\0" if what == "dimensions" else b""  # the right size for 65 dims of 1
    with pytest.raises(ivytrace.PlanError, match=what):
        CompiledPlan(plan_with_constant(shape, data))


def test_constant_slot_beyond_num_slots_is_a_plan_error():
    with pytest.raises(ivytrace.PlanError, match="out of range"):
        CompiledPlan(plan_with_constant([1], b"\0\0\0\0", slot=5, num_slots=2))


def test_good_constant_plan_still_loads():
    p = CompiledPlan(plan_with_constant([1], b"\0\0\x80\x3f"))
    assert torch.equal(p(), torch.tensor([1.0]))


def test_loading_plans_does_not_grow_linecache():
    gc.collect()
    before = sum(1 for k in linecache.cache if str(k).startswith("<ivytrace plan"))
    for _ in range(20):
        p = CompiledPlan(plan_with_constant([1], b"\0\0\x80\x3f"))
        p()
        del p
    gc.collect()
    after = sum(1 for k in linecache.cache if str(k).startswith("<ivytrace plan"))
    assert after == before


def test_jax_bfloat16_constant_shape_is_checked():
    pytest.importorskip("jax")
    from ivytrace.runtime.jax_values import array_from_tensor_proto
    t = plan_with_constant([3, 3], b"\0\0" * 4, dtype=common_pb2.BFLOAT16).constants[0].value
    with pytest.raises(ivytrace.PlanError, match="needs 18 bytes"):
        array_from_tensor_proto(t, "constant")


# -- format 02: constants in a mapped, aligned data section ----------------------------------------
def _weights_plan(tmp_path):
    """A plan of a small torch model exported by the CLI (weights as constants: frozen)."""
    net = torch.nn.Sequential(torch.nn.Linear(7, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3)).eval()
    x = torch.randn(4, 7)
    path = ivytrace.export(net, tmp_path / "net.ivyplan", args=(x,), to="plan")
    return net, x, path


def test_plan_constants_are_the_files_aligned_bytes_and_writes_stay_private(tmp_path):
    from ivytrace.runtime.plan import DATA_START, PLAN_MAGIC, read_plan
    net, x, path = _weights_plan(tmp_path)
    raw = open(path, "rb").read()
    assert raw.startswith(PLAN_MAGIC)
    plan = ivytrace.load_plan(path)
    with torch.no_grad():
        torch.testing.assert_close(plan(x), net(x))
    consts = [plan.namespace[k] for k in plan.namespace if k.startswith("c") and k[1:].isdigit()]
    weights = [t for t in consts if isinstance(t, torch.Tensor) and t.numel() >= 5]
    assert weights
    for t in weights:
        assert t.data_ptr() % 64 == 0          # in place in the mapping, aligned
        # The bytes are the file's: the tensor's bytes are found in the data section.
        assert raw.find(t.numpy().tobytes(), DATA_START) >= DATA_START
    # Writing into a loaded constant changes neither the file nor another load of it.
    weights[0].add_(1.0)
    assert open(path, "rb").read() == raw
    again = ivytrace.load_plan(path)
    with torch.no_grad():
        torch.testing.assert_close(again(x), net(x))
    plan_msg, data = read_plan(path)
    assert len(data) == len(plan_msg.constants) and not any(c.value.data for c in plan_msg.constants)


def test_a_changed_byte_in_the_data_section_fails_the_checksum(tmp_path):
    from ivytrace.runtime.plan import DATA_START
    _, _, path = _weights_plan(tmp_path)
    raw = bytearray(open(path, "rb").read())
    raw[DATA_START + 3] ^= 0x40
    bad = tmp_path / "flipped.ivyplan"
    bad.write_bytes(bytes(raw))
    with pytest.raises(ivytrace.PlanError, match=r"flipped\.ivyplan: byte offset \d+: damaged: the checksum"):
        ivytrace.load_plan(bad)


@pytest.mark.parametrize("offset,size,what", [(64 * 1000, 4, "out of range"), (4, 4, "not 64-byte aligned"),
                                              (0, 1 << 50, "out of range")])
def test_constant_places_outside_the_data_section_are_plan_errors(tmp_path, offset, size, what):
    from ivytrace.runtime.plan import read_plan, write_plan_file
    path = tmp_path / "p.ivyplan"
    write_plan_file(path, plan_with_constant([1], b"\0\0\0\0"))
    plan, _ = read_plan(path)
    plan.constants[0].data_offset, plan.constants[0].data_bytes = offset, size
    # Written by hand around the tampered Plan (write_plan_file would recompute the places).
    import zlib
    from ivytrace.runtime.plan import CHECKSUM_TAG, DATA_START, PLAN_MAGIC
    plan.ClearField("crc32")
    section = bytes(64)
    body = PLAN_MAGIC + len(section).to_bytes(8, "little") + bytes(DATA_START - 16) + section + plan.SerializeToString()
    path.write_bytes(body + CHECKSUM_TAG + zlib.crc32(body).to_bytes(4, "little"))
    with pytest.raises(ivytrace.PlanError, match=rf"p\.ivyplan: constant 0 \(slot 0\): .*{what}"):
        ivytrace.load_plan(path)


def test_format_01_plans_still_load(tmp_path):
    # Format 01: the magic, then the Plan with each constant's bytes inline, then its checksum.
    import zlib
    from ivytrace.runtime.plan import CHECKSUM_TAG, PLAN_MAGIC_V1
    p = plan_with_constant([2], torch.tensor([1.5, -2.0]).numpy().tobytes())
    body = PLAN_MAGIC_V1 + p.SerializeToString()
    path = tmp_path / "old.ivyplan"
    path.write_bytes(body + CHECKSUM_TAG + zlib.crc32(body).to_bytes(4, "little"))
    torch.testing.assert_close(ivytrace.load_plan(path)(), torch.tensor([1.5, -2.0]))
