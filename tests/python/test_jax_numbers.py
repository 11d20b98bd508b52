"""Python numbers passed to a traced JAX function are inputs of the graph (recorder/jax_recorder.py,
the stand-ins' canonicalize handler and the wrapped lax._convert_element_type / asarray / stage),
as they are in torch and NumPy: replayed with other numbers, a graph gives eager's answer with no
retrace, or raises a GuardError where JAX baked the number in (a shape, a slice bound, a primitive
param, Python control flow). Never a wrong answer.

Tested against eager JAX on generated programs (hypothesis), in the replay, under
`return_backend_traced_fn` (jax.jit), retargeted to torch and NumPy, and exported to ONNX.
"""
import os
import subprocess

import hypothesis
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

jax = pytest.importorskip("jax")
jnp = jax.numpy

import ivytrace  # noqa: E402
from test_sym_float import STEPS  # noqa: E402  (Python arithmetic on the float, shared with torch/NumPy)

# Where the number reaches JAX: (x, a, n) -> array. Each of these records the number as a value
# of the graph (no guard), so a program of STEPS that stay arithmetic never retraces.
USES = {
    "mul": lambda x, a, n: x * a,
    "rmul": lambda x, a, n: a * x - n,
    "div": lambda x, a, n: x / a + 1 / a,
    "where": lambda x, a, n: jnp.where(x > a, x, a),
    "clip": lambda x, a, n: jnp.clip(x, -abs(a), abs(a)),
    "maximum": lambda x, a, n: jnp.maximum(x, a),
    "leaky_relu": lambda x, a, n: jax.nn.leaky_relu(x, a),
    "sin": lambda x, a, n: x + jnp.sin(a),
    "asarray": lambda x, a, n: x + jnp.asarray(a),
    "int_array": lambda x, a, n: (x * 10).astype(jnp.int32) * n + n // 2,
    "int_times_float": lambda x, a, n: (x * 10).astype(jnp.int32) * a,
    "lax_add": lambda x, a, n: jax.lax.add(x, a),
    "jitted": lambda x, a, n: jax.jit(lambda y, b: jnp.tanh(y * b))(x, a),
    "linspace": lambda x, a, n: jnp.linspace(0.0, a, 4) + x,
    "mean": lambda x, a, n: jnp.mean(x * a, axis=0, keepdims=True) * n,
    "full_like": lambda x, a, n: jnp.full_like(x, a) * x,
    "power": lambda x, a, n: (jnp.abs(x) + 1) ** a + abs(a) ** x,
    "complex": lambda x, a, n: (x * a * 1j + n).real,
    "grad": lambda x, a, n: jax.grad(lambda w: jnp.sum((w * a) ** 2))(x),
    "vmap": lambda x, a, n: jax.vmap(lambda r: r * a + n)(x),
}
# Arithmetic steps that stay symbolic (the others leave with a guard: branch, sqrt, round).
ARITHMETIC = sorted(set(STEPS) - {"branch", "sqrt", "round", "max"})


def _program(steps, use):
    def fn(x, a, n):
        for s in steps:
            a = STEPS[s](a, n)
        return USES[use](x, a, n)
    return fn


def _eager(fn, x, a, n):
    try:
        return np.asarray(fn(x, a, n)), None
    except (ZeroDivisionError, OverflowError, ValueError) as e:
        return None, e


X = jnp.linspace(-1.0, 1.0, 8, dtype=jnp.float32).reshape(2, 4)
_floats = st.floats(-4, 4, allow_nan=False).filter(lambda v: abs(v) > 1e-3)


@settings(max_examples=int(os.environ.get("IVYTRACE_HYPOTHESIS_EXAMPLES", "25")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.sampled_from(sorted(STEPS)), max_size=3), use=st.sampled_from(sorted(USES)),
       values=st.lists(st.tuples(_floats, st.integers(1, 5)), min_size=3, max_size=3))
def test_generated_jax_programs_replay_right_or_raise(steps, use, values):
    fn = _program(steps, use)
    a0, n0 = values[0]
    _, err = _eager(fn, X, a0, n0)
    hypothesis.assume(err is None)
    g = ivytrace.trace_graph(fn, args=(X, a0, n0))
    for a, n in values:
        want, err = _eager(fn, X, a, n)
        if err is not None:
            continue
        try:
            got = np.asarray(g(X, a, n))
        except ivytrace.GuardError:
            assert not set(steps) <= set(ARITHMETIC), f"{steps} + {use} raised although it only computes"
            continue
        assert got.dtype == want.dtype, (steps, use)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6,
                                   err_msg=f"{steps} + {use} traced at {values[0]}, replayed at {(a, n)}")


@pytest.mark.parametrize("use", sorted(USES))
def test_every_use_takes_the_number_as_an_input(use):
    fn = _program(["mul_int", "add"], use)
    g = ivytrace.trace_graph(fn, args=(X, 0.7, 2), retrace=True)
    for a, n in ((0.7, 2), (1.9, 3), (-2.5, 1), (3.3, 5)):
        got, want = np.asarray(g(X, a, n)), np.asarray(fn(X, a, n))
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    assert g.traces == 1


def test_numbers_jax_bakes_in_are_guarded():
    def fn(x, a, n):
        y = x[:n] * a              # a slice bound: JAX puts it in the primitive's params
        return y ** n if a > 0.5 else y   # an integer power's exponent, a branch

    g = ivytrace.trace_graph(fn, args=(X, 0.7, 2))
    np.testing.assert_allclose(np.asarray(g(X, 0.9, 2)), np.asarray(fn(X, 0.9, 2)), rtol=1e-6)
    for a, n in ((0.7, 1), (0.2, 2)):
        with pytest.raises(ivytrace.GuardError):
            g(X, a, n)


def test_a_comparison_of_numbers_used_as_a_value_is_guarded_as_a_bool():
    # x + (n > 2): the bool leaves symbolic tracking as a bool, and the replay at the traced
    # values passes its own guard (it once compared True with 1).
    def fn(x, a, n):
        return x + (n > 2) + (a > 0.5) * 2

    g = ivytrace.trace_graph(fn, args=(X, 0.7, 3))
    for a, n in ((0.7, 3), (0.9, 5)):
        np.testing.assert_array_equal(np.asarray(g(X, a, n)), np.asarray(fn(X, a, n)))
    with pytest.raises(ivytrace.GuardError):
        g(X, 0.7, 1)


def test_backend_traced_fn_compiles_once_for_every_number():
    fn = _program(["mul_int"], "leaky_relu")
    g = ivytrace.trace_graph(fn, args=(X, 0.7, 2), return_backend_traced_fn=True)
    for a, n in ((0.7, 2), (1.9, 3), (-0.4, 5)):
        np.testing.assert_allclose(np.asarray(g(X, a, n)), np.asarray(fn(X, a, n)), rtol=1e-5, atol=1e-6)
    spec = g._latest()
    assert spec.backend == "jax.jit"
    assert spec.fn._cache_size() == 1   # the numbers are traced by jax.jit, not static


def test_backend_traced_fn_with_a_branch_on_the_number():
    def fn(x, a):
        return x * 2 if a > 0.5 else x * a

    g = ivytrace.trace_graph(fn, args=(X, 0.7), return_backend_traced_fn=True)
    np.testing.assert_allclose(np.asarray(g(X, 1.9)), np.asarray(fn(X, 1.9)))
    with pytest.raises(ivytrace.GuardError):
        g(X, 0.3)


@pytest.mark.parametrize("to", ["torch", "numpy"])
def test_retargeted_replay_takes_the_numbers(to):
    fn = _program(["mul_int", "rsub"], "where")
    g = ivytrace.trace_graph(fn, args=(X, 0.7, 2), to=to)
    x = np.array(X)
    if to == "torch":
        import torch
        x = torch.from_numpy(x)
    for a, n in ((0.7, 2), (1.9, 3)):
        got = g(x, a, n)
        got = got.numpy() if to == "torch" else got
        np.testing.assert_allclose(got, np.asarray(fn(X, a, n)), rtol=1e-6, atol=1e-6)


def test_onnx_model_takes_the_numbers_as_inputs(cli_binary, tmp_path):
    ort = pytest.importorskip("onnxruntime")

    def fn(x, a, n):
        return jnp.where(x > a, x * a, -a) + jax.nn.leaky_relu(x, a / n) + (x * 10).astype(jnp.int32) * n

    g = ivytrace.trace_graph(fn, args=(X, 0.7, 2))
    proc = subprocess.run([cli_binary, "export", str(g.save(tmp_path / "m.ivt")), "--to", "onnx", "-o",
                           str(tmp_path / "m.onnx")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    assert [(i.name, i.type, i.shape) for i in sess.get_inputs()][1:] == \
        [("a", "tensor(double)", []), ("n", "tensor(int64)", [])]
    for a, n in ((0.7, 2), (1.9, 3), (-0.35, 5)):
        got = sess.run(None, {"x": np.asarray(X), "a": np.array(a), "n": np.array(n)})[0]
        np.testing.assert_allclose(got, np.asarray(fn(X, a, n)), rtol=1e-5, atol=1e-5)
