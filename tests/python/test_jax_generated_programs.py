"""Generated JAX programs (tests/python/program_gen.py: the steps shared with torch and NumPy plus
the JAX idioms: jax.nn, jax.lax, `x.at[i].set`, PRNG keys, jit/vmap helpers, scan/fori_loop,
casts, pytree inputs and outputs) traced with trace_graph and replayed against eager JAX (both op
by op, un-jitted): a result either matches the program or raises a GuardError, never a wrong answer.

(a) At the traced input a replay equals eager (floats within rtol 1e-5/atol 1e-6, ints, bools and
    Python numbers exactly, the same pytree structure).
(b) At other shapes and other data (value-dependent branches flip) a replay equals eager or raises
    a GuardError; no other exception.

IVYTRACE_HYPOTHESIS_EXAMPLES sets the number of examples per property (CI default below); runs
are derandomized, so CI sees the same programs every time.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
jax = pytest.importorskip("jax")
from hypothesis import given, settings, strategies as st  # noqa: E402

import jax.numpy as jnp  # noqa: E402

import ivytrace  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import program_gen as G  # noqa: E402

# CI defaults: 10 programs at the traced input, 8 at other inputs (about 25 s of CPU on the 2-core
# test machine; each example traces once, through the CLI).
examples = G.hypothesis_settings
F = G.JaxF

# Half the steps of a program are JAX idioms (there are as many shared steps as JAX ones).
JAX_ONLY = sorted(n for n in G.names_for("jax") if G.STEPS[n][1] == ("jax",))
SHARED = sorted(n for n in G.names_for("jax") if G.STEPS[n][1] != ("jax",))
step_names = st.one_of(st.sampled_from(JAX_ONLY), st.sampled_from(SHARED))


def jax_programs(max_steps=5):
    return st.tuples(st.lists(st.tuples(step_names, st.integers(0, 7)), min_size=1, max_size=max_steps),
                     st.sampled_from(G.TREE_FORMS))


dims = st.integers(1, 5)
shapes = st.one_of(st.tuples(dims, dims), st.tuples(dims, dims, dims), st.tuples(st.integers(0, 3), dims),
                   st.tuples(dims))
kinds = st.sampled_from(["normal", "small_ints"])


def make(program):
    steps, form = program
    return G.make_tree_program(steps, F, form), form


def _trace_or_skip(fn, x0):
    return G.trace_or_skip(fn, F, x0)


@settings(**examples(10))
@given(program=jax_programs(), shape=shapes, kind=kinds)
def test_jax_replay_at_the_traced_input_equals_eager(program, shape, kind):
    fn, form = make(program)
    x0 = G.tree_input(F, G.data(F, shape, 0, kind), form, 0)
    g = _trace_or_skip(fn, x0)
    assert G.replay_outcome(g, fn, F, x0) == "match", f"{program}: a guard failed at the traced input"


@settings(**examples(8))
@given(program=jax_programs(), shape=shapes, kind=kinds,
       others=st.lists(st.tuples(shapes, kinds), min_size=2, max_size=3))
def test_jax_replay_at_other_inputs_equals_eager_or_raises_a_guard(program, shape, kind, others):
    fn, form = make(program)
    g = _trace_or_skip(fn, G.tree_input(F, G.data(F, shape, 0, kind), form, 0))
    # the traced shape with other data first: value-dependent branches flip
    for i, (s, k) in enumerate([(shape, kind)] + others, start=1):
        hypothesis.event(G.replay_outcome(g, fn, F, G.tree_input(F, G.data(F, s, i, k), form, i)))


# -- minimal programs of the bugs the generator found (each failed before its fix) ----------------------
def _outcomes(fn, x0, inputs):
    g = ivytrace.trace_graph(fn, args=(x0,))
    return [G.replay_outcome(g, fn, F, x) for x in inputs]


@pytest.mark.filterwarnings("ignore:ivytrace. this graph is specialized")
def test_a_boolean_mask_index_is_guarded():
    # jax.numpy turns a boolean index into the NumPy indices of its True elements (np.where on the
    # host, inside jax/_src/numpy/indexing.py); they became constants with no guard, so a replay
    # on other data read and wrote the traced mask's positions: wrong values and shapes, silently.
    def read(x):
        v = x[x > 0]
        return x + v.sum(), v

    def write(x):
        return x.at[x < 0].set(0.5) * 2
    x0 = jnp.asarray([1., -1., 2., 3.])
    same_mask = jnp.asarray([5., -2., 1., 1.])
    other_mask = jnp.asarray([1., -1., -2., -3.])
    for fn in (read, write):
        assert _outcomes(fn, x0, [x0, same_mask, other_mask]) == ["match", "match", "guard"], fn.__name__


def test_a_replay_is_the_unjitted_program_bit_for_bit():
    # jax.nn.standardize is jitted: eager JAX runs it compiled, the recorder and the replay op by
    # op, so the two round differently (README: the replay matches the recorded run). On a value
    # that is all rounding (a difference of two equal normalizations) the argmax then differed
    # from jitted eager: the properties compare against un-jitted eager (program_gen.eager).
    def fn(x):
        m = x.mean(-1, keepdims=True)
        y = (x - m) * jax.lax.rsqrt(jnp.square(x - m).mean(-1, keepdims=True) + 1e-5)
        d = jax.nn.standardize(x, axis=-1) - y
        return d, jnp.argmax(d, -1)
    g = ivytrace.trace_graph(fn, args=(G.data(F, (3, 5, 3), 0),))
    for seed in range(1, 4):
        x = G.data(F, (3, 5, 3), seed)
        got = g(x)
        with jax.disable_jit():
            want = fn(x)
        assert all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(got, want))


def test_a_size_returned_as_a_python_number_is_not_replayed_as_a_constant():
    # `n // 3` of `n = -x.shape[0]`, returned: JAX's symbolic trace proved the batch symbolic
    # (x * (n // 3) follows it), but the recorder wrote the returned number as the eager run's
    # constant, so a replay at another batch returned the traced size's number (-1 at 5 rows,
    # where Python gives -2), silently. Such a program now stays specialized on its shapes.
    def fn(x):
        n = -(x.shape[0])
        return x * (n // 3), n // 3, n % 4
    assert _outcomes(fn, jnp.ones((2, 3)), [jnp.ones((2, 3)) * 2, jnp.ones((5, 3)), jnp.ones((7, 3))]) == \
        ["match", "guard", "guard"]
