"""trace_graph end to end: recorder -> CLI export -> plan runtime. Skipped without the CLI binary."""
import copy
import sys
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import ivytrace


@pytest.fixture(autouse=True)
def _needs_cli(cli_binary):
    return cli_binary


def seeds_fn(x, y):
    z = x**y
    k = x * y
    j = torch.cat([x, z, y])
    s = torch.sum(j)
    print(s)
    return z


def test_seeds_example_keeps_only_the_power(capsys):
    x = torch.tensor([1.0, 2.0, 3.0])
    y = torch.tensor([2.0, 3.0, 4.0])
    graph = ivytrace.trace_graph(seeds_fn, args=(x, y))
    capsys.readouterr()
    assert torch.equal(graph(x, y), x**y)
    a = torch.tensor([[1.0, 2.0]])
    b = torch.tensor([[2.0, 3.0]])
    assert torch.equal(graph(a, b), seeds_fn(a, b))
    body = [line.strip() for line in graph.source.splitlines()[1:]]
    calls = [line for line in body if " = " in line]   # (the power is written `v0 = v0 ** v1`)
    assert len(calls) == 1, graph.source          # only the power: no mul, cat, sum, print
    assert graph.plan.plan.steps[0].function == "torch.Tensor.__pow__"
    assert "print" not in graph.source


def test_lazy_graph_traces_on_first_call():
    lazy = ivytrace.trace_graph(seeds_fn)
    assert isinstance(lazy, ivytrace.LazyGraph) and not lazy.initialized
    x, y = torch.tensor([1.0, 2.0]), torch.tensor([3.0, 0.5])
    with pytest.raises(RuntimeError, match="not been traced"):
        lazy.source
    assert torch.equal(lazy(x, y), x**y)
    assert lazy.initialized and "def forward" in lazy.source
    assert torch.equal(lazy(y, x), y**x)


def test_module_with_parameters_replays_exactly():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4)).eval()
    eager = copy.deepcopy(model)   # trace_graph(model) replaces model.forward by the replay
    x = torch.randn(3, 8)
    with torch.no_grad():
        graph = ivytrace.trace_graph(model, args=(x,))
        assert graph is model
        assert torch.equal(graph(x), eager(x))
        fresh = torch.randn(5, 8)
        torch.testing.assert_close(graph(fresh), eager(fresh))


def test_array_caching_folds_constant_subexpressions():
    def fn(x):
        a = torch.tensor([2])
        b = torch.tensor([2])
        return x ** (a + b)

    x = torch.tensor([1.0, 2.0, 3.0])
    graph = ivytrace.trace_graph(fn, args=(x,))
    assert torch.equal(graph(x), fn(x))
    assert torch.equal(graph(x + 1), fn(x + 1))


def test_item_guard_warns_when_tracing_and_fails_on_another_value():
    def fn(x):
        n = x.sum()
        scale = n.item()          # a Python number taken from a tensor: the graph is specialized
        return x * scale + n

    x = torch.tensor([1.0, 2.0])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        graph = ivytrace.trace_graph(fn, args=(x,))
    assert any("specialized on the value of torch.Tensor.item" in str(m.message) and __file__ in str(m.message)
               for m in w)
    assert torch.equal(graph(x), fn(x))
    assert torch.equal(graph(torch.tensor([0.5, 2.5])), fn(torch.tensor([0.5, 2.5])))  # same sum
    with pytest.raises(ivytrace.GuardError, match=r"test_trace_graph\.py:\d+.*3\.0.*7\.0"):
        graph(torch.tensor([3.0, 4.0]))


def test_control_flow_guard_fails_on_another_path():
    def fn(x):
        if x.sum() > 0:
            return x * 2
        return x - 1

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = ivytrace.trace_graph(fn, args=(torch.tensor([1.0, 2.0]),))
    assert torch.equal(graph(torch.tensor([3.0, 4.0])), torch.tensor([6.0, 8.0]))
    with pytest.raises(ivytrace.GuardError, match="test_trace_graph.py"):
        graph(torch.tensor([-3.0, -4.0]))


def test_save_and_export(tmp_path):
    def fn(x):
        return F.relu(x * 2 + 1).sum(dim=0)

    x = torch.randn(4, 3)
    graph = ivytrace.trace_graph(fn, args=(x,))
    saved = graph.save(tmp_path / "f.ivytrace")
    t = ivytrace.read_trace(saved)
    assert [r.name for r in t.of_kind("region_begin")] == ["fn"]
    plan = graph.export(tmp_path / "f.ivyplan", to="plan")
    assert torch.equal(ivytrace.load_plan(plan)(x), fn(x))
    onnx_path = graph.export(tmp_path / "f.onnx", to="onnx")
    import numpy as np
    import onnxruntime as ort
    sess = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    (out,) = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})
    np.testing.assert_allclose(out, fn(x).numpy(), rtol=1e-5, atol=1e-6)


def test_cli_failure_carries_its_stderr():
    def fn(x):
        return torch.as_strided(x, (2,), (2,))   # not in schemas/ (strides are not symbolic): the CLI refuses it

    with pytest.raises(ivytrace.CLIError) as e:
        ivytrace.trace_graph(fn, args=(torch.randn(5),))
    assert "torch.as_strided" in str(e.value) and "torch.as_strided" in e.value.stderr
    assert e.value.returncode != 0
