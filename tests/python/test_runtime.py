"""The plan runtime on hand-built plans: replay, allow-list, guards, constants, binding."""
import pytest
import torch

import ivytrace
from ivytrace.runtime.allowlist import AllowList
from ivytrace.runtime.plan import PLAN_MAGIC, PLAN_MAGIC_V1, load_plan, write_plan_file
from ivytrace.schema import load_schemas
from ivytrace.v1 import common_pb2, plan_pb2

Arg = common_pb2.Arg


def slot(s):
    return Arg(tensor=common_pb2.TensorRef(value=s))


def tup(*items):
    return Arg(tuple=common_pb2.ArgList(items=list(items)))


def pow_plan(function="torch.Tensor.__pow__"):
    p = plan_pb2.Plan(name="fn", framework="torch", num_slots=3)
    p.inputs.add(name="x", value=slot(0))
    p.inputs.add(name="y", value=slot(1))
    p.steps.add(function=function, args=[slot(0), slot(1)], result=slot(2), free_after=[0, 1])
    p.outputs.CopyFrom(slot(2))
    return p


def save(tmp_path, plan, name="p.ivyplan"):
    path = tmp_path / name
    write_plan_file(path, plan)
    return path


def test_pow_plan_replays_exactly(tmp_path):
    graph = load_plan(save(tmp_path, pow_plan()), machine=False)   # the generated code, shown below
    x = torch.tensor([1.0, 2.0, 3.0])
    y = torch.tensor([2.0, 3.0, 4.0])
    assert torch.equal(graph(x, y), x**y)
    assert torch.equal(graph(x, y=y), x**y)
    assert torch.equal(graph(y=y, x=x), x**y)
    a, b = torch.rand(2, 5), torch.rand(2, 5)
    assert torch.equal(graph(a, b), a**b)
    # The result takes the first argument's variable (x = f(x, y), as eager code drops x), the other goes
    # (torch.Tensor.__pow__ is written as the operator, as the program did).
    assert graph.source == "def forward(v0, v1):\n    v0 = v0 ** v1\n    del v1\n    return v0\n"
    assert (tmp_path / "p.ivyplan").read_bytes().startswith(PLAN_MAGIC)
    with pytest.raises(TypeError, match=r"takes \(x, y\)"):
        graph(x)


@pytest.mark.parametrize("bad", ["os.system", "builtins.eval", "torch.load", "torch.Tensor.__reduce_ex__"])
def test_functions_outside_the_allow_list_are_refused(tmp_path, bad):
    with pytest.raises(ivytrace.PlanError) as e:
        load_plan(save(tmp_path, pow_plan(bad)))
    msg = str(e.value)
    assert bad in msg and "step 0" in msg and "allow-list" in msg


def test_symbol_outside_the_allow_list_is_refused(tmp_path):
    p = pow_plan()
    p.steps[0].kwargs.add(name="memory_format", value=Arg(symbol="os.environ"))
    with pytest.raises(ivytrace.PlanError, match=r"step 0.*symbol 'os.environ' is not in the allow-list"):
        load_plan(save(tmp_path, p))


def test_allowed_symbols_and_literals_resolve(tmp_path):
    p = plan_pb2.Plan(name="f", framework="torch", num_slots=3)
    p.inputs.add(name="x", value=slot(0))
    p.steps.add(function="torch.Tensor.contiguous", args=[slot(0)],
                kwargs=[common_pb2.KwArg(name="memory_format", value=Arg(symbol="torch.contiguous_format"))],
                result=slot(1))
    p.steps.add(function="torch.Tensor.to", args=[slot(1), Arg(dtype=common_pb2.FLOAT64)], result=slot(2))
    p.outputs.CopyFrom(slot(2))
    g = load_plan(save(tmp_path, p))
    x = torch.arange(4.0).reshape(2, 2).t()
    out = g(x)
    assert out.dtype == torch.float64 and out.is_contiguous() and torch.equal(out, x.double())
    # No string from the file appears in the generated code.
    assert "memory_format" not in g.source and "contiguous" not in g.source


def test_bad_magic_and_garbage_name_the_file(tmp_path):
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"\x08\x07garbage")
    with pytest.raises(ivytrace.PlanError, match=r"model\.onnx.*not an ivytrace plan file"):
        load_plan(bad)
    corrupt = tmp_path / "corrupt.ivyplan"
    corrupt.write_bytes(PLAN_MAGIC + b"\xff\xff\xff")
    with pytest.raises(ivytrace.PlanError, match=r"corrupt\.ivyplan: byte offset 11: truncated"):
        load_plan(corrupt)
    corrupt.write_bytes(PLAN_MAGIC_V1 + b"\xff\xff\xff")   # the format before the data section
    with pytest.raises(ivytrace.PlanError, match=r"corrupt\.ivyplan.*does not end with its checksum"):
        load_plan(corrupt)
    # A data section larger than the file: said before anything is mapped into tensors.
    corrupt.write_bytes(PLAN_MAGIC + (1 << 40).to_bytes(8, "little") + bytes(48) + b"\x7d\0\0\0\0")
    with pytest.raises(ivytrace.PlanError, match=r"corrupt\.ivyplan: byte offset 8: .*data section of 1099511627776 "
                                                 r"bytes does not fit"):
        load_plan(corrupt)
    with pytest.raises(ivytrace.PlanError, match="missing.ivyplan"):
        load_plan(tmp_path / "missing.ivyplan")


def test_guard_fails_loudly_when_the_path_changes(tmp_path):
    p = plan_pb2.Plan(name="f", framework="torch", num_slots=3)
    p.inputs.add(name="x", value=slot(0))
    p.steps.add(function="torch.sum", args=[slot(0)], result=slot(1))
    p.steps.add(function="torch.Tensor.mul", args=[slot(0), Arg(i=2)], result=slot(2))
    g = p.guards.add(tensor=common_pb2.TensorRef(value=1), op="torch.Tensor.item", observed=Arg(f=6.0))
    g.loc.file, g.loc.line = "prog.py", 12
    p.outputs.CopyFrom(slot(2))
    graph = load_plan(save(tmp_path, p))
    assert torch.equal(graph(torch.tensor([1.0, 2.0, 3.0])), torch.tensor([2.0, 4.0, 6.0]))
    with pytest.raises(ivytrace.GuardError, match=r"prog\.py:12.*6\.0.*7\.0"):
        graph(torch.tensor([1.0, 2.0, 4.0]))
    assert "Guard" in type(ivytrace.GuardError("x")).__name__


def test_constants_of_every_shape_and_dtype(tmp_path):
    values = [torch.tensor(3.5), torch.zeros(0, 3), torch.arange(6, dtype=torch.int64).reshape(2, 3),
              torch.tensor([1.5, -2.0], dtype=torch.bfloat16), torch.tensor([True, False])]
    p = plan_pb2.Plan(name="f", framework="torch", num_slots=len(values))
    for i, v in enumerate(values):
        c = p.constants.add(slot=i)
        c.value.dtype = {torch.float32: common_pb2.FLOAT32, torch.int64: common_pb2.INT64,
                         torch.bfloat16: common_pb2.BFLOAT16, torch.bool: common_pb2.BOOL}[v.dtype]
        c.value.shape.extend(v.shape)
        c.value.data = v.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
    p.outputs.CopyFrom(tup(*[slot(i) for i in range(len(values))]))
    out = load_plan(save(tmp_path, p))()
    for got, want in zip(out, values):
        assert got.dtype == want.dtype and got.shape == want.shape and torch.equal(got, want)
    p.constants[0].value.data = b"\x00"
    with pytest.raises(ivytrace.PlanError, match="needs 4 bytes"):
        load_plan(save(tmp_path, p, "short.ivyplan"))


def test_containers_kwargs_and_nested_results(tmp_path):
    schema_dir = tmp_path / "schemas"
    schema_dir.mkdir()
    (schema_dir / "t.textproto").write_text(
        'framework: "torch"\nop { name: "torch.max" }\nop { name: "torch.cat" }\nop { name: "torch.Tensor.__getitem__" }\n')
    allow = AllowList(load_schemas(str(schema_dir)))
    p = plan_pb2.Plan(name="f", framework="torch", num_slots=8)
    p.inputs.add(name="pair", value=tup(slot(0), slot(1)))
    p.inputs.add(name="k", value=Arg(i=1))
    # v2 = cat([v0, v1], dim=0); (v3, v4) = max(v2, dim=1); v5 = v2[1:, None]
    p.steps.add(function="torch.cat", args=[Arg(list=common_pb2.ArgList(items=[slot(0), slot(1)]))],
                kwargs=[common_pb2.KwArg(name="dim", value=Arg(i=0))], result=slot(2))
    p.steps.add(function="torch.max", args=[slot(2)], kwargs=[common_pb2.KwArg(name="dim", value=Arg(i=1))],
                result=tup(slot(3), slot(4)))
    idx = tup(Arg(slice=common_pb2.Slice(start=Arg(i=1))), Arg(none=True))
    p.steps.add(function="torch.Tensor.__getitem__", args=[slot(2), idx], result=slot(5))
    p.outputs.CopyFrom(Arg(dict=common_pb2.ArgDict(keys=["values", "indices", "rows"],
                                                  values=[slot(3), slot(4), slot(5)])))
    g = load_plan(save(tmp_path, p), allow=allow, machine=False)
    a, b = torch.randn(2, 3), torch.randn(1, 3)
    out = g((a, b), 1)
    cat = torch.cat([a, b])
    mx = torch.max(cat, dim=1)
    assert torch.equal(out["values"], mx.values) and torch.equal(out["indices"], mx.indices)
    assert torch.equal(out["rows"], cat[1:, None])
    assert "    v3, v4 = r" in g.source   # after a check of the count the call returned
    with pytest.raises(ivytrace.GuardError, match="input 'k'"):
        g((a, b), 2)


def test_opaque_values_and_undefined_slots_are_refused(tmp_path):
    p = pow_plan()
    p.steps[0].args[1].CopyFrom(Arg(opaque="Generator: <torch._C.Generator object>"))
    with pytest.raises(ivytrace.PlanError, match="opaque"):
        load_plan(save(tmp_path, p))
    p = pow_plan()
    p.steps[0].args[1].CopyFrom(slot(7))
    with pytest.raises(ivytrace.PlanError, match="step 0.*slot 7"):
        load_plan(save(tmp_path, p))


def test_free_after_drops_intermediates(tmp_path):
    p = plan_pb2.Plan(name="f", framework="torch", num_slots=4)
    p.inputs.add(name="x", value=slot(0))
    p.steps.add(function="torch.exp", args=[slot(0)], result=slot(1))
    p.steps.add(function="torch.sin", args=[slot(1)], result=slot(2), free_after=[1])
    p.steps.add(function="torch.add", args=[slot(2), slot(0)], result=slot(3), free_after=[0, 2, 3])
    p.outputs.CopyFrom(slot(3))
    g = load_plan(save(tmp_path, p), machine=False)
    x = torch.randn(4)
    assert torch.equal(g(x), torch.add(torch.sin(torch.exp(x)), x))
    # Each result takes the variable of a value its step reads last (x = f(x) drops the old x); what
    # is left is deleted. v3, the output, is kept.
    assert g.source == ("def forward(v0):\n    v1 = f0(v0)\n    v1 = f1(v1)\n    v0 = f2(v1, v0)\n"
                        "    del v1\n    return v0\n"), g.source
