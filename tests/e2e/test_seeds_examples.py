"""The seeds' own trace_graph examples (../shared/seeds/), run as written with ivytrace in place of
ivy and torch as the backend: `fn`, `normalize` eager and lazy, array caching, include_generators,
stateful, and the ResNet example with `traced_graph(**inputs).logits` (transformers ResNet built
from a small config with random weights: nothing is downloaded)."""
import copy
import os
import types

import pytest
import torch

import ivytrace

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(autouse=True)
def _cli(ivytrace_bin, monkeypatch):
    monkeypatch.setenv("IVYTRACE_BIN", ivytrace_bin)


def _calls(graph):
    return [s.function for s in ivytrace.graph_of(graph).plan.plan.steps]


def test_fn_example_keeps_only_the_power_and_takes_other_shapes(capsys):
    def fn(x, y):
        z = x**y
        print(z)
        k = x * y
        j = torch.concat([x, z, y])
        sum_j = torch.sum(j)
        return z

    x = torch.tensor([1, 2, 3])
    y = torch.tensor([2, 3, 4])
    # Trace the function
    traced_fn = ivytrace.trace_graph(fn, args=(x, y))
    capsys.readouterr()
    assert _calls(traced_fn) == ["torch.Tensor.__pow__"]
    # Original set of inputs
    out = traced_fn(x, y)
    assert torch.equal(out, torch.tensor([1, 8, 81]))
    # Inputs of different shape
    a = torch.tensor([[1., 2.]])
    b = torch.tensor([[2., 3.]])
    # New set of inputs
    out = traced_fn(a, b)
    assert torch.equal(out, torch.tensor([[1., 8.]]))
    assert capsys.readouterr().out == ""     # print is not part of the graph


def normalize(x):
    mean = torch.mean(x)
    std = torch.std(x)
    return torch.div(torch.sub(x, mean), std)


def test_normalize_lazy_then_eager():
    x = torch.randn(10, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    norm_trace = ivytrace.trace_graph(normalize)  # lazy: no args
    assert isinstance(norm_trace, ivytrace.LazyGraph) and not norm_trace.initialized
    first = norm_trace(x)                          # traced on this first call
    assert norm_trace.initialized
    torch.testing.assert_close(first, normalize(x), rtol=1e-12, atol=0)
    torch.testing.assert_close(norm_trace(x), first, rtol=0, atol=0)   # replayed

    norm_tracing = ivytrace.trace_graph(normalize, args=(x,))          # eager: traced here
    assert isinstance(norm_tracing, ivytrace.Graph) and norm_tracing.traces == 1
    torch.testing.assert_close(norm_tracing(x), normalize(x), rtol=1e-12, atol=0)
    z = torch.randn(25, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(norm_tracing(z), normalize(z), rtol=1e-12, atol=0)
    assert norm_tracing.traces == 1


def test_array_caching_example():
    def fn(x):
        b = torch.tensor([2])
        a = torch.tensor([2])
        z = x ** (a + b)
        return z

    x = torch.tensor([1., 2., 3.])
    comp_func = ivytrace.trace_graph(fn, args=(x,))
    uncached = ivytrace.trace_graph(fn, args=(x,), array_caching=False)
    assert _calls(comp_func) == ["torch.Tensor.__pow__"]       # a + b folded into a constant
    assert _calls(uncached).count("torch.tensor") == 2 and len(_calls(uncached)) == 4
    for g in (comp_func, uncached):
        torch.testing.assert_close(g(x + 1), (x + 1) ** 4)


def test_include_generators_example():
    def fn(x):
        a = torch.randint(0, 100, size=[1])
        z = x ** a
        return z + torch.rand([1])

    x = torch.tensor([1.0, 1.0])    # 1 ** a == 1: the output shows the rand draw alone
    comp_func = ivytrace.trace_graph(fn, include_generators=True, args=(x,))
    assert "torch.rand" in _calls(comp_func) and "torch.randint" in _calls(comp_func)
    draws = {float(comp_func(x)[0]) for _ in range(5)}
    assert len(draws) == 5          # a new draw on every call

    def fn(x):  # noqa: F811 (the seeds redefine it)
        a = torch.randint(0, 100, size=[1])
        z = x * a
        return z + torch.rand([1])

    comp_func = ivytrace.trace_graph(fn, include_generators=False, args=(x,))
    assert "torch.rand" not in _calls(comp_func) and "torch.randint" not in _calls(comp_func)
    outs = [comp_func(x) for _ in range(3)]
    assert all(torch.equal(o, outs[0]) for o in outs)   # baked: the traced draw every time
    # x == 1: the output is a + r, a the baked randint (an int), r the baked rand in [0, 1)
    a, r = outs[0].floor(), outs[0] - outs[0].floor()
    torch.testing.assert_close(comp_func(x * 2), 2 * a + r)


def test_stateful_example():
    def fn(cont, x):
        cont.new_attribute = x
        return x + 1

    x = torch.tensor([0])
    cont = types.SimpleNamespace(x=x)   # ivy.Container(x=x)

    args = (copy.deepcopy(cont), x)      # cont.cont_deep_copy()
    comp_func = ivytrace.trace_graph(fn, arg_stateful_idxs=[[0]], args=args)
    fresh = copy.deepcopy(cont)
    assert not hasattr(fresh, "new_attribute")
    assert torch.equal(comp_func(fresh, torch.tensor([41])), torch.tensor([42]))
    assert torch.equal(fresh.new_attribute, torch.tensor([41]))   # the replay sets the attribute


def test_resnet_example():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.ResNetConfig(embedding_size=16, hidden_sizes=[16, 32, 64, 64], depths=[1, 1, 1, 1],
                                       layer_type="bottleneck", num_labels=5,
                                       id2label={i: f"breed {i}" for i in range(5)})
    model = transformers.ResNetForImageClassification(config).eval()
    eager = copy.deepcopy(model)
    inputs = {"pixel_values": torch.randn(1, 3, 64, 64)}   # image_processor(image, return_tensors="pt")

    # Normal flow using pytorch
    with torch.no_grad():
        logits = eager(**inputs).logits

    # Compiling the model (the seeds write args=(**inputs,), which is not Python: kwargs=inputs)
    traced_graph = ivytrace.trace_graph(model, kwargs=inputs)
    assert traced_graph is model

    # Using the traced function
    traced_logits = traced_graph(**inputs).logits
    torch.testing.assert_close(traced_logits, logits, rtol=1e-4, atol=1e-5)
    predicted_label = traced_logits.argmax(-1).item()
    assert model.config.id2label[predicted_label] == eager.config.id2label[logits.argmax(-1).item()]
    other = {"pixel_values": torch.randn(2, 3, 80, 80)}
    with torch.no_grad():
        torch.testing.assert_close(traced_graph(**other).logits, eager(**other).logits, rtol=1e-4, atol=1e-5)
