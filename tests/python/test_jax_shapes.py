"""JAX graphs that follow their inputs' shapes (recorder/jax_shapes.py): the primitive params JAX's
symbolic trace proves to follow an input's dims are recorded as values computed from the inputs'
sizes, so a graph traced at one batch size replays at another with no retrace; everything else
stays specialized behind guards. Tested against eager JAX on generated programs (hypothesis):
every replay either matches eager or raises a GuardError, never a wrong answer.
"""
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

jax = pytest.importorskip("jax")
jnp = jax.numpy

import ivytrace  # noqa: E402
from ivytrace.recorder.reader import read_trace  # noqa: E402

# Steps x -> x over an array of rank >= 2; POLY ones follow any size of dim 0 (JAX traces them
# with a symbolic batch and they are the same program at every size); the others take a Python
# decision on a size, or compute a value from it, and must stay specialized (or be right anyway).
POLY = {
    "mean0": lambda x: x - x.mean(axis=0),
    "size_mul": lambda x: x * x.shape[0] + x.shape[-1],
    "div_batch": lambda x: x / x.shape[0],
    "tile": lambda x: jnp.tile(x[:1], (x.shape[0],) + (1,) * (x.ndim - 1)) - x,
    "take_last": lambda x: x - x[..., -1:],
    "pad": lambda x: jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(1, 1)])[..., 1:-1],
    "broadcast_first": lambda x: jnp.broadcast_to(x[:1], x.shape) + x,
    "slice_last": lambda x: x[..., :1] * x,
    "zeros_cat": lambda x: jnp.concatenate([x, jnp.zeros(x.shape[:-1] + (2,), x.dtype)], axis=-1)[..., :-2],
    "reshape_flat": lambda x: x.reshape(x.shape[0], -1).reshape(x.shape),
    "bias": lambda x: x + jnp.arange(x.shape[-1], dtype=x.dtype),
    "normalize_last": lambda x: x / (jnp.abs(x).sum(axis=-1, keepdims=True) + 1),
    "swap": lambda x: jnp.swapaxes(jnp.swapaxes(x, 0, -1) * 2, 0, -1),
    "cumsum": lambda x: jnp.cumsum(x, axis=0),
    "softmax": lambda x: jax.nn.softmax(x, axis=-1),
    "where": lambda x: jnp.where(x > 0, x, 0.5 * x),
    "eye": lambda x: x @ jnp.eye(x.shape[-1], dtype=x.dtype),
    "ones_like_batch": lambda x: x + jnp.ones((x.shape[0],) + (1,) * (x.ndim - 1), x.dtype),
    "flip": lambda x: jnp.flip(x, axis=0) + x,
    "expand_sum": lambda x: jnp.expand_dims(x, 1).sum(1),
    "max0": lambda x: x - x.max(axis=0, keepdims=True),
}
SPECIALIZED = {
    "len_mul": lambda x: x * len(x),          # len() of a symbolic dim: JAX refuses it
    "branch": lambda x: x * 2 if x.shape[0] > 3 else x - 1,
    "numpy_size": lambda x: x * np.float32(x.shape[0]),
    "arange_batch_value": lambda x: x + jnp.arange(x.shape[0], dtype=x.dtype).reshape((-1,) + (1,) * (x.ndim - 1)),
    "value_branch": lambda x: x + 1 if float(x.sum()) > 0 else x - 1,
    "eq_four": lambda x: x[:2] if x.shape[0] == 4 else x[:1],
    "first_two_rows": lambda x: x[:2] * 2,     # 2 rows, or b when b < 2: JAX cannot decide
    "row_one": lambda x: x[1] + x,             # in bounds only when b > 1
}
STEPS = {**POLY, **SPECIALIZED}


def _program(steps):
    def fn(x):
        for s in steps:
            x = STEPS[s](x)
        return x
    return fn


def _x(shape, seed=0):
    return jnp.asarray(np.random.RandomState(seed).randn(*shape).astype(np.float32))


def _replays_right_or_raises(fn, g, x, what):
    want = np.asarray(fn(x))
    try:
        got = np.asarray(g(x))
    except ivytrace.GuardError:
        return False
    assert got.shape == want.shape, what
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=what)
    return True


@settings(max_examples=int(os.environ.get("IVYTRACE_HYPOTHESIS_EXAMPLES", "25")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.sampled_from(sorted(STEPS)), min_size=1, max_size=4),
       shape=st.lists(st.integers(2, 5), min_size=2, max_size=3),
       others=st.lists(st.tuples(st.integers(1, 7), st.integers(1, 6)), min_size=1, max_size=3))
def test_generated_programs_replay_right_or_raise(steps, shape, others):
    fn = _program(steps)
    g = ivytrace.trace_graph(fn, args=(_x(shape),))
    for seed, (batch, last) in enumerate(others, 1):
        for new in ([batch] + shape[1:], shape[:-1] + [last], [batch] + shape[1:-1] + [last]):
            ok = _replays_right_or_raises(fn, g, _x(new, seed), f"{steps} traced at {shape}, replayed at {new}")
            if new[0] > 1 and new[1:] == shape[1:] and set(steps) <= set(POLY):
                assert ok, f"{steps} traced at {shape} did not generalize to batch {new[0]}"


@pytest.mark.parametrize("step", sorted(POLY))
def test_each_polymorphic_step_follows_the_batch_without_retracing(step):
    fn = _program([step])
    g = ivytrace.trace_graph(fn, args=(_x((4, 3)),), retrace=True)
    for b in (4, 2, 7):
        np.testing.assert_allclose(np.asarray(g(_x((b, 3), b))), np.asarray(fn(_x((b, 3), b))), rtol=1e-5, atol=1e-5)
    assert g.traces == 1


@pytest.mark.parametrize("step", sorted(SPECIALIZED))
def test_specialized_steps_raise_a_guard_error_at_another_size(step):
    fn = _program([step])
    x = _x((4, 3))
    g = ivytrace.trace_graph(fn, args=(x,))
    np.testing.assert_allclose(np.asarray(g(x)), np.asarray(fn(x)), rtol=1e-5, atol=1e-5)
    with pytest.raises(ivytrace.GuardError):
        g(_x((6, 3), 1))


def test_static_dims_are_guarded_each_and_symbolic_ones_computed_from_the_input():
    w = _x((3, 5))

    def fn(x):
        return (x @ w).reshape(x.shape[0], -1, 1)   # the features are fixed by w; the batch is not

    g = ivytrace.trace_graph(fn, args=(_x((4, 3)),))
    trace = read_trace(str(g.save(os.path.join(g.plan_path + ".d.ivt"))))
    guards = {trace.string(r.op): r.value for r in trace.of_kind("guard")}
    assert "jax.Array.shape" not in guards                      # no guard on the whole shape
    assert guards["jax.Array.ndim"].i == 2
    assert guards["ivytrace.sym.__int__"].i == 3                 # x.shape[1] pinned
    assert guards["ivytrace.sym.__bool__"].b is True             # x.shape[0] >= 1
    reshape = [o for o in trace.ops() if trace.string(o.op) == "jax.lax.reshape_p"][0]
    sizes = [kw.value for kw in reshape.kwargs if kw.name == "new_sizes"][0]
    assert sizes.tuple.items[0].WhichOneof("kind") == "tensor"   # computed from x's size
    assert [it.i for it in sizes.tuple.items[1:]] == [5, 1]
    np.testing.assert_allclose(np.asarray(g(_x((9, 3), 2))), np.asarray(fn(_x((9, 3), 2))), rtol=1e-5)
    with pytest.raises(ivytrace.GuardError):
        g(_x((4, 4)))
    with pytest.raises(ivytrace.GuardError):
        g(_x((4,)))


def test_inputs_that_share_a_size_the_program_ties_get_an_equality_guard():
    def fn(x, m):
        return (x * m).reshape(x.shape[0], -1).sum(axis=1)

    x, m = _x((4, 5)), _x((4, 5), 1)
    g = ivytrace.trace_graph(fn, args=(x, m))
    for b, t in ((6, 5), (2, 3), (5, 7)):
        a, c = _x((b, t), 2), _x((b, t), 3)
        np.testing.assert_allclose(np.asarray(g(a, c)), np.asarray(fn(a, c)), rtol=1e-5, atol=1e-5)
    with pytest.raises(ivytrace.GuardError):
        g(_x((6, 5)), _x((5, 5)))


def test_flax_modules_follow_the_batch():
    flax = pytest.importorskip("flax")
    nn = flax.linen

    class Net(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.Conv(4, (3, 3))(x)
            x = nn.BatchNorm(use_running_average=True)(x)
            x = nn.avg_pool(nn.relu(x), (2, 2), strides=(2, 2))
            x = x.reshape((x.shape[0], -1))
            x = nn.LayerNorm()(nn.Dense(8)(x))
            return nn.log_softmax(nn.Dense(3)(nn.gelu(x)))

    m = Net()
    x = _x((4, 8, 8, 2))
    variables = m.init(jax.random.PRNGKey(0), x)

    def fn(x):
        return m.apply(variables, x)

    g = ivytrace.trace_graph(fn, args=(x,), retrace=True)
    for b in (4, 1, 9):
        xb = _x((b, 8, 8, 2), b)
        np.testing.assert_allclose(np.asarray(g(xb)), np.asarray(fn(xb)), rtol=1e-5, atol=1e-5)
    assert g.traces == 1
    with pytest.raises(ivytrace.GuardError):   # the spatial size is fixed by the Dense layer
        ivytrace.trace_graph(fn, args=(x,))(_x((4, 10, 10, 2)))


def test_without_symbolic_shapes_the_graph_is_specialized_on_the_whole_shape(monkeypatch):
    monkeypatch.setenv("IVYTRACE_JAX_SYMBOLIC_SHAPES", "0")
    fn = _program(["reshape_flat"])
    g = ivytrace.trace_graph(fn, args=(_x((4, 3)),))
    with pytest.raises(ivytrace.GuardError, match="jax.Array.shape"):
        g(_x((5, 3)))


def test_a_training_step_with_the_params_tree_as_an_argument_follows_the_batch():
    # fn(variables, x): x's batch is tried first (not the weights' dims); the weights keep one
    # guard each on their whole shape (unless JAX proves a dim follows x's); BatchNorm's batch mean divides by the batch size, which
    # the graph computes from x (a dim_as_value in JAX's symbolic jaxpr).
    flax = pytest.importorskip("flax")
    nn = flax.linen

    class Net(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.BatchNorm(use_running_average=False)(nn.Dense(8)(x))
            return nn.Dense(2)(nn.relu(x))

    m = Net()
    x = _x((4, 5))
    variables = m.init(jax.random.PRNGKey(0), x)

    def step(variables, x):
        return m.apply(variables, x, mutable=["batch_stats"])

    g = ivytrace.trace_graph(step, args=(variables, x), retrace=True)
    for b in (4, 6, 2):
        xb = _x((b, 5), b)
        for got, want in zip(jax.tree_util.tree_leaves(g(variables, xb)), jax.tree_util.tree_leaves(step(variables, xb))):
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)
    assert g.traces == 1
    trace = read_trace(str(g.save(g.plan_path + ".d.ivt")))
    ops = [trace.string(r.op) for r in trace.of_kind("guard")]
    # Each input has a whole-shape guard or per-dim ones after its rank's (x, and the Dense kernel
    # whose rows JAX ties to x's features: both may change together).
    n_inputs = len({id(v) for v in jax.tree_util.tree_leaves(variables)}) + 1
    assert ops.count("jax.Array.shape") + ops.count("jax.Array.ndim") == n_inputs
    assert ops.count("jax.Array.shape") >= n_inputs - 2


def test_a_jax_graph_guards_its_inputs_dtypes():
    # jnp.zeros(x.shape, x.dtype) bakes float32 into the primitives: an int32 input is a guard
    # failure (a LazyGraph traces again), never float32 zeros added to it.
    def fn(x):
        return jnp.zeros(x.shape, dtype=x.dtype) + x * 2

    g = ivytrace.trace_graph(fn, args=(jnp.ones(3, jnp.float32),))
    assert np.array_equal(np.asarray(g(jnp.full(3, 2.0))), np.asarray(fn(jnp.full(3, 2.0))))
    with pytest.raises(ivytrace.GuardError, match="jax.Array.dtype gave 'float32'; on these inputs it gives 'int32'"):
        g(jnp.ones(3, jnp.int32))
    lazy = ivytrace.trace_graph(fn)
    with pytest.warns(ivytrace.RetraceWarning):
        for x in (jnp.ones(3, jnp.float32), jnp.ones(3, jnp.int32)):
            assert lazy(x).dtype == fn(x).dtype
