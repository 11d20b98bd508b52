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
