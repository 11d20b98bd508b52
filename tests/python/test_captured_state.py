"""Arrays a traced function reaches other than through its arguments: its closure, its globals,
`self`, and the objects they hold (a NumPy model class, a flax nnx module and its Variables).

Each program is traced once, then the state changes the way programs change it (an optimizer
step, an attribute rebound, an array written in place, a train-mode layer updating its
statistics), and every replay must equal the eager call, or raise a GuardError. Before session 16
the arrays inside such objects were baked into the graph unchecked: an nnx optimizer step left
the replay on the traced weights (off by 4.0), and a NumPy model's rebound weight too.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import ivytrace

jax = pytest.importorskip("jax")
jnp = jax.numpy
nnx = pytest.importorskip("flax.nnx")
optax = pytest.importorskip("optax")

RTOL, ATOL = 1e-5, 1e-6


class _NumpyMLP:
    def __init__(self, rng):
        self.layers = [{"w": rng.standard_normal((4, 8)), "b": np.zeros(8)},
                       {"w": rng.standard_normal((8, 2)), "b": np.zeros(2)}]
        self.scale = np.ones(2)

    def __call__(self, x):
        h = np.tanh(x @ self.layers[0]["w"] + self.layers[0]["b"])
        return (h @ self.layers[1]["w"] + self.layers[1]["b"]) * self.scale


def test_a_numpy_model_object_is_read_on_every_call():
    rng = np.random.default_rng(0)
    model = _NumpyMLP(rng)
    g = ivytrace.trace_graph(lambda x: model(x), args=(rng.standard_normal((2, 4)),))
    x = rng.standard_normal((5, 4))
    np.testing.assert_allclose(g(x), model(x), rtol=RTOL, atol=ATOL)
    changes = [
        lambda: setattr(model, "scale", np.full(2, 3.0)),                       # rebound
        lambda: model.layers[0].__setitem__("w", model.layers[0]["w"] * -2),  # an item replaced
        lambda: model.layers[1]["b"].__iadd__(1.5),                           # written in place
        lambda: np.copyto(model.layers[1]["w"], rng.standard_normal((8, 2))),
    ]
    for change in changes:
        before = g(x)
        change()
        np.testing.assert_allclose(g(x), model(x), rtol=RTOL, atol=ATOL)
        assert not np.allclose(g(x), before)
    # Another structure may compute something else: a guard, never the old arrays.
    model.layers = [model.layers[0], {"w": rng.standard_normal((8, 2)), "b": np.zeros(2)}]
    with pytest.raises(ivytrace.GuardError, match=r"model\.layers"):
        g(x)


def test_a_bound_method_of_a_numpy_class_reads_self():
    rng = np.random.default_rng(1)
    model = _NumpyMLP(rng)
    g = ivytrace.trace_graph(model.__call__, args=(rng.standard_normal((2, 4)),))
    x = rng.standard_normal((3, 4))
    model.layers[0]["w"] *= 0.5
    np.testing.assert_allclose(g(x), model(x), rtol=RTOL, atol=ATOL)


class _NnxNet(nnx.Module):
    def __init__(self, rngs):
        self.l1 = nnx.Linear(4, 8, rngs=rngs)
        self.bn = nnx.BatchNorm(8, rngs=rngs)
        self.drop = nnx.Dropout(0.5, rngs=rngs)
        self.l2 = nnx.Linear(8, 2, rngs=rngs)

    def __call__(self, x):
        return self.l2(self.drop(nnx.relu(self.bn(self.l1(x)))))


def _x(shape, seed=0):
    return jnp.asarray(np.random.default_rng(seed).standard_normal(shape), jnp.float32)


def test_an_nnx_model_in_the_closure_follows_optimizer_steps():
    model = _NnxNet(nnx.Rngs(0, dropout=1))
    model.eval()
    g = ivytrace.trace_graph(lambda x: model(x), args=(_x((2, 4)),))
    x, y = _x((6, 4), 1), _x((6, 2), 2)
    optimizer = nnx.Optimizer(model, optax.adam(0.05), wrt=nnx.Param)

    def loss_fn(m):
        return ((m(x) - y) ** 2).mean()
    for _ in range(3):
        before = g(x)
        optimizer.update(model, nnx.grad(loss_fn)(model))
        np.testing.assert_allclose(g(x), model(x), rtol=RTOL, atol=ATOL)
        assert not np.allclose(g(x), before)


def test_an_nnx_model_in_train_mode_updates_its_statistics_and_dropout_like_eager():
    # Dropout draws from the model's Rngs (a count Variable the call advances) and BatchNorm
    # rebinds its running statistics: the replay reads and writes both, step for step.
    model = _NnxNet(nnx.Rngs(0, dropout=1))
    reference = nnx.clone(model)
    x = _x((5, 4), 3)
    g = ivytrace.trace_graph(lambda x: model(x), args=(x,))
    reference(x)
    for _ in range(3):
        np.testing.assert_allclose(g(x), reference(x), rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(model.bn.mean[...], reference.bn.mean[...], rtol=RTOL, atol=ATOL)
    model.eval()
    with pytest.raises(ivytrace.GuardError, match=r"use_running_average"):
        g(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ivytrace.RetraceWarning)
        r = ivytrace.trace_graph(lambda x: model(x), args=(x,), retrace=True)
        model.train()
        reference.eval()
        reference.train()
        np.testing.assert_allclose(r(x), reference(x), rtol=RTOL, atol=ATOL)


def test_a_linen_params_item_replaced_is_read_and_a_rebound_tree_is_a_guard():
    import flax.linen as nn

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(2)(nn.relu(nn.Dense(8)(x)))
    module = MLP()
    params = module.init(jax.random.PRNGKey(0), _x((1, 4)))
    box = {"params": params}
    g = ivytrace.trace_graph(lambda x: module.apply(box["params"], x), args=(_x((2, 4)),))
    x = _x((3, 4), 4)
    dense = box["params"]["params"]["Dense_1"]
    dense["kernel"] = dense["kernel"] * 3.0
    np.testing.assert_allclose(g(x), module.apply(box["params"], x), rtol=RTOL, atol=ATOL)
    box["params"] = jax.tree_util.tree_map(lambda a: a + 1.0, box["params"])
    with pytest.raises(ivytrace.GuardError, match=r"box\['params'\]"):
        g(x)


def test_a_tensor_counter_in_a_closure_cell_is_written_in_place_like_eager():
    def make():
        count = torch.zeros(())

        def step(x):
            count.add_(1)
            return x * count
        return step, count
    step, count = make()
    g = ivytrace.trace_graph(step, args=(torch.ones(2),))
    assert float(count) == 1.0
    assert torch.equal(g(torch.ones(2)), torch.full((2,), 2.0))
    assert float(count) == 2.0   # the same tensor object, written in place as eager code does


class _Slotted:
    __slots__ = ("w", "b")

    def __init__(self, w, b):
        self.w, self.b = w, b


def test_an_argument_object_with_slots_is_read_on_every_call_and_rebuilt_when_returned():
    # Objects with __slots__ and no __dict__ were not seen among the arguments: their tensors
    # were baked when traced (off by 6.4 with another object), and returning one failed.
    torch.manual_seed(0)

    def affine(x, p):
        return x @ p.w + p.b

    def halve(x, p):
        return _Slotted(x @ p.w, p.b * 0.5)
    g = ivytrace.trace_graph(affine, args=(torch.randn(2, 3), _Slotted(torch.randn(3, 4), torch.zeros(4))))
    h = ivytrace.trace_graph(halve, args=(torch.randn(2, 3), _Slotted(torch.randn(3, 4), torch.zeros(4))))
    p, x = _Slotted(torch.randn(3, 4), torch.randn(4)), torch.randn(5, 3)
    torch.testing.assert_close(g(x, p), affine(x, p), rtol=RTOL, atol=ATOL)
    got, want = h(x, p), halve(x, p)
    assert type(got) is _Slotted
    torch.testing.assert_close(got.w, want.w, rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(got.b, want.b, rtol=RTOL, atol=ATOL)


def test_an_nnx_module_passed_as_an_argument_is_read_on_every_call():
    def apply(model, x):
        return nnx.relu(model(x))
    g = ivytrace.trace_graph(apply, args=(nnx.Linear(3, 2, rngs=nnx.Rngs(0)), _x((2, 3))))
    other, x = nnx.Linear(3, 2, rngs=nnx.Rngs(5)), _x((4, 3), 1)
    np.testing.assert_allclose(g(other, x), apply(other, x), rtol=RTOL, atol=ATOL)


def test_no_grad_inside_the_function_stops_gradients_as_eager_does():
    # The recorder sees ops, not autograd's mode: `y = x * 2` under an inner no_grad replayed
    # with gradients, so x.grad was 3 where eager gives 1, silently. A graph whose call
    # switches autograd runs the original function when gradients could flow (with a
    # StateWarning), and replays otherwise.
    calls = []

    def f(x):
        calls.append(1)              # Python side effect: only the original function runs it
        with torch.no_grad():
            y = x * 2
        return y + x
    g = ivytrace.trace_graph(f, args=(torch.randn(3),))
    x = torch.randn(3, requires_grad=True)
    n = len(calls)
    with pytest.warns(ivytrace.StateWarning, match=r"switches autograd at .*test_captured_state.py"):
        out = g(x)
    assert len(calls) == n + 1
    out.sum().backward()
    assert torch.equal(x.grad, torch.ones(3))
    with torch.no_grad():
        torch.testing.assert_close(g(x), f(x.detach()))
    n = len(calls)
    g(torch.randn(3))                # nothing requires grad: the replay
    with torch.no_grad():
        g(x)
    assert len(calls) == n


def test_autocast_inside_the_function_gives_eager_dtypes():
    # Ops under an inner torch.autocast replayed in float32 where eager computes in bfloat16.
    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 8)

    def f(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return lin(x).relu()
    x = torch.randn(4, 8)
    g = ivytrace.trace_graph(f, args=(x,))
    with pytest.warns(ivytrace.StateWarning, match=r"torch.autocast"):
        got = g(x)
    want = f(x)
    assert got.dtype == want.dtype == torch.bfloat16
    torch.testing.assert_close(got, want)


def test_a_result_computed_in_python_from_the_values_replays_under_its_guard():
    # sum(v * 2 for v in x.tolist()) returns a float: the graph had no array output and the
    # CLI refused it with a message about marking regions. It replays now, guarded on the values.
    def total(x):
        return sum(v * 2 for v in x.tolist())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = ivytrace.trace_graph(total, args=(torch.ones(4),))
    assert g(torch.ones(4)) == total(torch.ones(4)) == 8.0
    with pytest.raises(ivytrace.GuardError, match="tolist"):
        g(torch.full((4,), 2.0))


def test_a_function_whose_ops_all_run_under_no_grad_replays_under_no_grad():
    # `def forward(x): with torch.no_grad(): return model(x)`: every op ran in the mode the
    # program set, so the replay runs under it too (no gradients, as eager), not the original.
    calls = []
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 2)

    def forward(x):
        calls.append(1)
        with torch.no_grad():
            return lin(x).relu()
    g = ivytrace.trace_graph(forward, args=(torch.randn(4, 3),))
    x = torch.randn(5, 3, requires_grad=True)
    n = len(calls)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ivytrace.StateWarning)
        got = g(x)
    assert len(calls) == n   # the replay ran
    assert not got.requires_grad
    torch.testing.assert_close(got, forward(x))
