"""The recorder on real programs: what it writes, read back with ivytrace.recorder.reader."""
import sys
import warnings

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import ivytrace
from ivytrace.recorder import torch_recorder
from ivytrace.v1 import common_pb2, trace_pb2

HERE = __file__


def value_of(td):
    """The tensor a (single-chunk) TensorData record holds."""
    dt = {common_pb2.FLOAT32: np.float32, common_pb2.INT64: np.int64, common_pb2.FLOAT64: np.float64,
          common_pb2.BOOL: np.bool_}[td.value.dtype]
    return np.frombuffer(td.value.data, dtype=dt).reshape(tuple(td.value.shape))


def test_header_and_footer_counts(record):
    x = torch.ones(3)

    def prog():
        y = x + 1
        z = y * y
        z.sum()

    r = record(prog)
    assert r.kinds()[0] == "header" and r.kinds()[-1] == "footer"
    h = r.trace.header
    assert h.producer == f"ivytrace-recorder {ivytrace.__version__}"
    assert [(f.name, f.version) for f in h.frameworks] == [("torch", torch.__version__)]
    assert h.python_version == ".".join(map(str, sys.version_info[:3]))
    assert h.pid > 0 and h.hostname and h.start_time_unix_ns > 0
    f = r.trace.footer
    assert f.records == len(r.records) - 1
    assert f.op_events == len(r.ops()) == 3
    assert f.tensor_bytes == sum(len(t.value.data) for t in r.tensors())
    assert not f.error
    # Interned strings are defined before they are used.
    defined = set()
    for rec in r.records:
        kind = rec.WhichOneof("kind")
        if kind == "intern":
            defined.add(rec.intern.id)
        elif kind == "op":
            assert rec.op.op in defined and rec.op.file in defined


def test_op_names_for_operators_methods_and_functions(record):
    x = torch.arange(6.0).reshape(2, 3)

    def prog():
        a = 2 * x
        b = x[0:1]
        c = x**2
        d = x.T
        e = F.relu(x)
        g = torch.nn.functional.linear(x, torch.ones(2, 3))
        h = torch.add(x, 1, alpha=2)

    r = record(prog)
    names = r.op_names()
    assert names == ["torch.Tensor.mul", "torch.Tensor.__getitem__", "torch.Tensor.__pow__",
                     "torch.Tensor.T.__get__", "torch.nn.functional.relu", "torch.ones",
                     "torch.nn.functional.linear", "torch.add"]
    getitem = r.ops("torch.Tensor.__getitem__")[0]
    sl = getitem.args[1].slice
    assert sl.start.i == 0 and sl.stop.i == 1 and not sl.HasField("step")
    add = r.ops("torch.add")[0]
    assert [(k.name, k.value.i) for k in add.kwargs] == [("alpha", 2)]
    assert add.result.tensor.dtype == common_pb2.FLOAT32 and list(add.result.tensor.shape) == [2, 3]
    # file:line of the user's code, not torch's
    assert all(r.s(o.file) == HERE for o in r.ops())


def test_nested_calls_are_recorded_once(record):
    x = torch.randn(4)

    def prog():
        F.relu(x)
        F.softmax(x, dim=0)

    r = record(prog)
    assert r.op_names() == ["torch.nn.functional.relu", "torch.nn.functional.softmax"]


def test_inplace_add_bumps_version_and_is_flagged(record):
    x = torch.ones(3)

    def prog():
        y = x.clone()
        y += 1
        y.mul_(2)

    r = record(prog)
    assert r.op_names() == ["torch.Tensor.clone", "torch.Tensor.add_", "torch.Tensor.mul_"]
    clone, add, mul = r.ops()
    y = clone.result.tensor
    assert add.flags & trace_pb2.INPLACE
    assert add.args[0].tensor.id == y.id and add.args[0].tensor.version == y.version
    assert [(m.id, m.version) for m in add.mutated] == [(y.id, y.version + 1)]
    assert add.result.tensor.id == y.id and add.result.tensor.version == y.version + 1
    assert [(m.id, m.version) for m in mul.mutated] == [(y.id, y.version + 2)]
    assert not clone.flags & trace_pb2.INPLACE


def test_views_share_the_storage_id_of_their_base(record):
    x = torch.arange(6.0)

    def prog():
        y = x * 1
        v = y[1:3]
        w = v.view(2, 1)

    r = record(prog)
    mul, getitem, view = r.ops()
    base = mul.result.tensor
    assert getitem.result.tensor.storage == base.id != getitem.result.tensor.id
    assert view.result.tensor.storage == base.id


def test_constants_are_recorded_before_first_use(record):
    w = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    x = torch.ones(2)

    def prog():
        with ivytrace.region("r", inputs={"x": x}) as reg:
            reg.set_result(w @ x + w.sum())

    r = record(prog)
    consts = r.tensors(common_pb2.CONSTANT)
    assert len(consts) == 1, "w is recorded once, x is a region input"
    np.testing.assert_array_equal(value_of(consts[0]), w.numpy())
    i_const = r.index_of(lambda rec: rec.WhichOneof("kind") == "tensor" and rec.tensor.value.role == common_pb2.CONSTANT)
    i_matmul = r.index_of(lambda rec: rec.WhichOneof("kind") == "op" and r.s(rec.op.op) == "torch.Tensor.matmul")
    assert i_const < i_matmul
    assert consts[0].ref.id == r.ops()[0].args[0].tensor.id


def test_parameter_and_buffer_names_of_modules(record):
    torch.manual_seed(0)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(4, 3)
            self.body = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.BatchNorm1d(3))

        def forward(self, x):
            return self.body(self.fc1(x))

    net = Net().eval()
    seq = nn.Sequential(nn.Linear(4, 2))
    x = torch.randn(2, 4)
    r = record(lambda: (net(x), seq(x)))
    params = {t.value.name: t for t in r.tensors(common_pb2.PARAMETER)}
    assert {"fc1.weight", "fc1.bias", "body.0.weight", "body.0.bias", "body.2.weight", "body.2.bias",
            "0.weight", "0.bias"} <= set(params)
    np.testing.assert_array_equal(value_of(params["fc1.weight"]), net.fc1.weight.detach().numpy())
    buffers = {t.value.name for t in r.tensors(common_pb2.BUFFER)}
    assert {"body.2.running_mean", "body.2.running_var"} <= buffers


def test_module_scopes(record):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 1, 3, padding=1)

        def forward(self, x):
            return torch.relu(self.conv1(x)) + 1

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer1 = nn.Sequential(Block(), Block())

        def forward(self, x):
            return self.layer1(x) * 2

    net = Net()
    x = torch.randn(1, 1, 4, 4)
    r = record(lambda: (net(x), x + 1))
    scopes = [(n, r.s(o.scope)) for n, o in zip(r.op_names(), r.ops())]
    assert scopes == [
        ("torch.nn.functional.conv2d", "layer1.0.conv1"),
        ("torch.relu", "layer1.0"), ("torch.Tensor.add", "layer1.0"),
        ("torch.nn.functional.conv2d", "layer1.1.conv1"),
        ("torch.relu", "layer1.1"), ("torch.Tensor.add", "layer1.1"),
        ("torch.Tensor.mul", ""),
        ("torch.Tensor.add", ""),
    ]
    assert r.ops()[-1].scope == 0


def test_region_decorator_inputs_and_outputs(record):
    @ivytrace.region("block")
    def block(x, scale, *, bias=None):
        return x * scale + bias, x.sum()

    x = torch.randn(3)
    b = torch.ones(3)
    out = []
    r = record(lambda: out.append(block(x, 2.0, bias=b)))
    (begin,) = r.of_kind("region_begin")
    (end,) = r.of_kind("region_end")
    assert begin.name == "block" and begin.region == end.region != 0
    assert [i.name for i in begin.inputs] == ["x", "scale", "bias"]
    assert begin.inputs[1].value.f == 2.0
    assert r.s(begin.file) == HERE and begin.line > 0
    ins = r.tensors(common_pb2.REGION_INPUT)
    assert [t.ref.id for t in ins] == [begin.inputs[0].value.tensor.id, begin.inputs[2].value.tensor.id]
    np.testing.assert_array_equal(value_of(ins[0]), x.numpy())
    assert not r.tensors(common_pb2.CONSTANT), "region inputs are not constants"
    result = end.result.tuple.items
    assert len(result) == 2
    outs = r.tensors(common_pb2.REGION_OUTPUT)
    assert [t.ref.id for t in outs] == [result[0].tensor.id, result[1].tensor.id]
    np.testing.assert_array_equal(value_of(outs[0]), out[0][0].numpy())
    # Ops inside the region that read region inputs are not foldable.
    assert not any(o.flags & trace_pb2.FOLDABLE_OP for o in r.ops())


def test_region_context_manager_and_no_recorder():
    x = torch.ones(2)
    with ivytrace.region("blk", inputs={"x": x}) as reg:  # no recorder: a no-op
        reg.set_result(x + 1)

    @ivytrace.region
    def f(a):
        return a * 2

    assert torch.equal(f(x), x * 2)


def test_region_that_raises_is_closed(record):
    @ivytrace.region("bad")
    def bad(x):
        x + 1
        raise KeyError("no")

    def prog():
        with pytest.raises(KeyError):
            bad(torch.ones(1))

    r = record(prog)
    (end,) = r.of_kind("region_end")
    assert end.raised and not end.HasField("result")


def test_guards_on_control_flow_and_item(record):
    x = torch.tensor([1.0, -2.0, 4.0])
    lines = {}

    def prog():
        lines["bool"] = sys._getframe().f_lineno + 1
        if x.sum() > 0:
            pass
        lines["item"] = sys._getframe().f_lineno + 1
        v = x.max().item()
        lines["int"] = sys._getframe().f_lineno + 1
        n = int(x[2])

    r = record(prog)
    guards = r.of_kind("guard")
    got = [(r.s(g.op), g.line, r.s(g.file)) for g in guards]
    assert got == [("torch.Tensor.__bool__", lines["bool"], HERE), ("torch.Tensor.item", lines["item"], HERE),
                   ("torch.Tensor.__int__", lines["int"], HERE)]
    assert guards[0].value.b is True and guards[1].value.f == 4.0 and guards[2].value.i == 4
    gt = r.ops("torch.Tensor.gt")[0]
    assert guards[0].tensor.id == gt.result.tensor.id
    assert "torch.Tensor.__bool__" not in r.op_names()


def test_guard_warning_once_per_site(record):
    x = torch.ones(2)

    def prog():
        for _ in range(3):
            if x.sum() > 0:
                pass

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        record(prog, warn_guards=True)
    msgs = [str(m.message) for m in w if "specialized" in str(m.message)]
    assert len(msgs) == 1
    assert "torch.Tensor.__bool__" in msgs[0] and HERE in msgs[0]


def test_shape_reads_are_not_ops(record):
    x = torch.ones(2, 3)

    def prog():
        x.shape, x.size(), x.size(1), x.dim(), len(x), x.numel(), x.ndim, x.dtype, x.device, x.is_contiguous()
        x.stride(), repr(x), x.requires_grad

    r = record(prog)
    assert r.ops() == []
    reads = r.of_kind("shape_read")
    assert [r.s(s.op) for s in reads] == ["torch.Tensor.shape", "torch.Tensor.size", "torch.Tensor.size",
                                          "torch.Tensor.dim", "torch.Tensor.__len__", "torch.Tensor.numel",
                                          "torch.Tensor.ndim"]
    assert [i.i for i in reads[0].value.tuple.items] == [2, 3]
    assert reads[2].value.i == 3 and reads[4].value.i == 2 and reads[5].value.i == 6


def test_random_ops_are_flagged_and_their_outputs_recorded(record):
    out = []
    r = record(lambda: out.append(torch.rand(3) + 1))
    rand, add = r.ops()
    assert rand.flags & trace_pb2.RANDOM and not rand.flags & trace_pb2.FOLDABLE_OP
    (td,) = r.tensors(common_pb2.RANDOM_OUTPUT)
    assert td.ref.id == rand.result.tensor.id
    np.testing.assert_array_equal(value_of(td) + 1, out[0].numpy())
    assert not add.flags & trace_pb2.FOLDABLE_OP, "an output of a random op is not a constant"


def test_constant_ops_are_foldable(record):
    x = torch.ones(1)

    def prog():
        with ivytrace.region("r", inputs={"x": x}) as reg:
            a = torch.tensor([2])
            b = torch.tensor([2])
            c = a + b
            reg.set_result(x ** c)

    r = record(prog)
    t1, t2, add, pow_ = r.ops()
    assert all(o.flags & trace_pb2.FOLDABLE_OP for o in (t1, t2, add))
    assert not pow_.flags & trace_pb2.FOLDABLE_OP
    folded = {t.ref.id: value_of(t) for t in r.tensors(common_pb2.FOLDABLE)}
    assert folded[add.result.tensor.id].tolist() == [4]
    assert t1.args[0].list.items[0].i == 2


def test_large_values_are_chunked(record, monkeypatch):
    monkeypatch.setattr(torch_recorder, "CHUNK_BYTES", 1000)
    w = torch.arange(1000, dtype=torch.float32)   # 4000 bytes
    x = torch.ones(1000)

    def prog():
        with ivytrace.region("r", inputs={"x": x}) as reg:
            reg.set_result(x + w)

    r = record(prog)
    chunks = r.tensors(common_pb2.CONSTANT)
    assert [c.offset for c in chunks] == [0, 1000, 2000, 3000]
    assert all(c.total_bytes == 4000 and c.ref.id == chunks[0].ref.id for c in chunks)
    data = b"".join(c.value.data for c in chunks)
    np.testing.assert_array_equal(np.frombuffer(data, np.float32), w.numpy())


def test_argument_kinds(record):
    x = torch.ones(2, 2)

    def prog():
        x.to(torch.float64)
        x.to("cpu")
        x.to(device=torch.device("cpu"))
        x.contiguous(memory_format=torch.contiguous_format)
        torch.cat((x, x), dim=0)
        x[..., None]
        x.to(torch.bfloat16).float()
        torch.sum(x, dim=[0, 1], keepdim=True)

    r = record(prog)
    ops = r.ops()
    assert ops[0].args[1].dtype == common_pb2.FLOAT64
    assert ops[1].args[1].s == "cpu"
    assert ops[2].kwargs[0].value.device == "cpu"
    assert ops[3].kwargs[0].value.symbol == "torch.contiguous_format"
    assert ops[4].args[0].WhichOneof("kind") == "tuple" and len(ops[4].args[0].tuple.items) == 2
    idx = ops[5].args[1].tuple.items
    assert idx[0].ellipsis and idx[1].none
    assert ops[6].result.tensor.dtype == common_pb2.BFLOAT16
    assert [i.i for i in ops[-1].kwargs[0].value.list.items] == [0, 1]


def test_bfloat16_values_are_recorded_bit_exact(record):
    w = torch.tensor([1.5, -2.25, 3.0e10], dtype=torch.bfloat16)
    r = record(lambda: w * 2)
    (td,) = r.tensors(common_pb2.CONSTANT)
    assert td.value.dtype == common_pb2.BFLOAT16
    assert td.value.data == w.view(torch.int16).numpy().tobytes()


def test_exceptions_in_ops_are_flagged_raised(record):
    x = torch.ones(2)

    def prog():
        with pytest.raises(RuntimeError):
            x @ torch.ones(3)

    r = record(prog)
    bad = r.ops("torch.Tensor.matmul")[0]
    assert bad.flags & trace_pb2.RAISED and not bad.HasField("result")


def test_recorder_context_manager_records_the_error(tmp_path):
    path = tmp_path / "t.ivytrace"
    with pytest.raises(ValueError):
        with ivytrace.Recorder(path):
            torch.ones(1) + 1
            raise ValueError("boom")
    t = ivytrace.read_trace(str(path))
    assert t.footer.error == "ValueError: boom"
    # Stopped: nothing more is recorded.
    torch.ones(1) + 1
    assert len(ivytrace.read_trace(str(path)).records) == len(t.records)


def test_unknown_framework_is_refused(tmp_path):
    with pytest.raises(ValueError, match="tensorflow"):
        ivytrace.Recorder(tmp_path / "t", frameworks=("tensorflow",))


def test_nested_recorders_each_see_the_program_and_not_each_other(tmp_path):
    outer_path, inner_path = tmp_path / "outer.ivytrace", tmp_path / "inner.ivytrace"
    x = torch.ones(3)
    with ivytrace.Recorder(outer_path):
        a = x * 2
        with ivytrace.Recorder(inner_path):
            b = torch.relu(a - 1)
            if b.sum() > 0:
                pass
        c = b + 1
    outer, inner = ivytrace.read_trace(str(outer_path)), ivytrace.read_trace(str(inner_path))
    assert outer.op_names() == ["torch.Tensor.mul", "torch.Tensor.sub", "torch.relu", "torch.Tensor.sum",
                                "torch.Tensor.gt", "torch.Tensor.add"]
    assert inner.op_names() == ["torch.Tensor.sub", "torch.relu", "torch.Tensor.sum", "torch.Tensor.gt"]
    # The inner recorder's own t.shape / t._version reads are not in the outer trace.
    assert outer.of_kind("shape_read") == [] and len(outer.of_kind("guard")) == 1


def test_write_through_a_view_is_a_new_version_of_the_base(record):
    x = torch.arange(6.0)

    def prog():
        y = x * 1
        v = y.view(2, 3)
        v.add_(1)
        y.sum()

    r = record(prog)
    ops = r.ops()
    names = r.op_names()
    mul, view, add = ops[:3]
    base = mul.result.tensor
    assert view.result.tensor.storage == base.id
    (m,) = add.mutated
    assert (m.id, m.version, m.storage) == (view.result.tensor.id, 1, base.id)
    total = ops[names.index("torch.Tensor.sum")]
    # The base is read at the version the write through the view gave it, and its value is not
    # re-recorded as a constant: the graph builder derives it from the write.
    assert (total.args[0].tensor.id, total.args[0].tensor.version) == (base.id, 1)
    assert not [td for td in r.tensors(common_pb2.CONSTANT) if td.ref.id == base.id]


@pytest.mark.parametrize("make", [
    lambda: torch.rand(3), lambda: torch.randn(3), lambda: torch.randint(0, 5, (3,)),
    lambda: torch.empty(3).normal_(), lambda: torch.bernoulli(torch.full((3,), 0.5)),
    lambda: torch.multinomial(torch.tensor([0.2, 0.8]), 3, replacement=True),
    lambda: F.dropout(torch.ones(8), 0.5, training=True),
], ids=["rand", "randn", "randint", "normal_", "bernoulli", "multinomial", "dropout"])
def test_every_kind_of_random_op_is_flagged_with_its_values(record, make):
    out = []
    r = record(lambda: out.append(make()))
    rnd = [op for op in r.ops() if op.flags & trace_pb2.RANDOM]
    assert len(rnd) == 1, r.op_names()
    (td,) = [td for td in r.tensors(common_pb2.RANDOM_OUTPUT)]
    got = value_of(td)
    np.testing.assert_array_equal(got, out[0].numpy())


def test_values_are_written_once_per_session_and_later_region_calls_still_build(record, cli_binary, tmp_path):
    """A region called again reads the same parameters (same id and version): their values are
    written on the first call only, and the graph of a later call still finds them. A parameter
    written in place between calls has a new version and is written again."""
    import subprocess
    from ivytrace.runtime.plan import load_plan

    net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2)).eval()

    @ivytrace.region("fwd")
    def fwd(x):
        return net(x)

    xs = [torch.randn(2, 4) for _ in range(3)]
    outs = []

    def run():
        with torch.no_grad():
            outs.append(fwd(xs[0]))
            outs.append(fwd(xs[1]))
            net[0].weight.mul_(2)          # a new version of fc weight: written again
            outs.append(fwd(xs[2]))

    r = record(run)
    names = [t.value.name for t in r.tensors(common_pb2.PARAMETER)]
    assert sorted(names) == sorted(["0.weight", "0.bias", "2.weight", "2.bias", "0.weight"])
    assert len(r.tensors(common_pb2.REGION_INPUT)) == 3   # inputs/outputs: every call
    assert len(r.tensors(common_pb2.REGION_OUTPUT)) == 3
    for k in (1, 2):
        plan_path = tmp_path / f"fwd{k}.ivyplan"
        subprocess.run([str(cli_binary), "export", r.trace.path, "--to", "plan", "--region", f"fwd:{k}",
                        "-o", str(plan_path)], check=True, capture_output=True, text=True)
        got = load_plan(plan_path)(xs[k])
        torch.testing.assert_close(got, outs[k], rtol=0, atol=0)
