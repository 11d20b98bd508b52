"""Generated JAX programs (tests/python/program_gen.py, the programs of
tests/python/test_jax_generated_programs.py) exported to ONNX with ivytrace.export and run in
onnxruntime: at the recorded input and at other shapes and data the model's answer equals the
program's, or the export is refused with a clear message (exit status > 0, no internal error), or
onnxruntime refuses the input (a failed `ivytrace guard` check, or a dim the model declares static).
Never a wrong number, never a crash of the CLI.

IVYTRACE_HYPOTHESIS_EXAMPLES sets the number of examples (CI default below); derandomized.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
hypothesis = pytest.importorskip("hypothesis")
jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from hypothesis import given, settings, strategies as st  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
import ivytrace  # noqa: E402
import program_gen as G  # noqa: E402
from test_jax_generated_programs import jax_programs, kinds, make, shapes  # noqa: E402
from test_onnx_generated_programs import export_or_refuse  # noqa: E402

EXAMPLES = 8   # CI default; IVYTRACE_HYPOTHESIS_EXAMPLES overrides (program_gen.hypothesis_settings)
# `ivytrace check`'s defaults: onnxruntime's kernels are not XLA's (rsqrt differs in the last bit,
# and a normalization over values of small spread amplifies it past 1e-5).
RTOL, ATOL = 1e-4, 1e-5
F = G.JaxF


def without_half_precision(program):
    """The program with its float16/bfloat16 casts made int32/bool casts: onnxruntime's CPU kernels
    run half-precision ops in float32 (it inserts Casts) and round once at the end, where JAX rounds
    after each op, so a right model differs from eager by float16's epsilon and more downstream;
    test_half_precision_casts checks those alone, within their precision."""
    steps, form = program
    return [(n, p + 2 if n == "dtype_casts" and p % 4 < 2 else p) for n, p in steps], form


def model_outcome(sess, fn, x) -> str:
    return G.onnx_outcome(sess, fn, F, x, RTOL, ATOL, pytree=True)


def export_and_session(fn, x0, path):
    return export_or_refuse(fn, F, x0, path)


@settings(**G.hypothesis_settings(EXAMPLES, fixtures=True))
@given(program=jax_programs(max_steps=4).map(without_half_precision), shape=shapes, kind=kinds,
       others=st.lists(st.tuples(shapes, kinds), min_size=2, max_size=2))
def test_exported_jax_models_match_or_refuse(tmp_path, program, shape, kind, others):
    fn, form = make(program)
    x0 = G.tree_input(F, G.data(F, shape, 0, kind), form, 0)
    if G.eager(fn, F, x0) is None:
        hypothesis.assume(False)
    path = tmp_path / f"m{abs(hash((repr(program), shape, kind)))}.onnx"
    sess = export_and_session(fn, x0, path)
    if sess is None:
        hypothesis.event("refused")
        return
    for i, (s, k) in enumerate([(shape, kind), (shape, kind)] + others):
        hypothesis.event(model_outcome(sess, fn, G.tree_input(F, G.data(F, s, i, k), form, i)))


# -- minimal programs of the bugs the generator found (each failed before its fix) ----------------------
def _model(fn, x0, tmp_path):
    sess = export_and_session(fn, x0, tmp_path / "m.onnx")
    assert sess is not None, "refused"
    return sess


def test_an_edge_pad_of_width_zero(tmp_path):
    # jnp.pad(mode="edge") broadcasts the edge row to its pad width; a width of 0 lowered to an
    # Expand to a 0-sized dim, which onnxruntime's ExpandElimination dropped (it takes an
    # unknown input dim for 0): the model failed at the recorded input.
    def fn(x):
        return jnp.pad(x, [(0, 1), (1, 0)], mode="edge")
    x0 = jnp.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    sess = _model(fn, x0, tmp_path)
    assert [model_outcome(sess, fn, G.data(F, s, i)) for i, s in enumerate([(3, 4), (5, 4), (2, 7)])] == ["match"] * 3


def test_a_convolution_with_an_empty_result_is_refused(tmp_path):
    # JAX makes an empty result where the input is smaller than the kernel; onnxruntime's Conv
    # fails on such an input ("Invalid input shape"): the export refuses it, naming why.
    from ivytrace.cli_bin import CLIError
    w = jnp.ones((2, 1, 3, 3))

    def fn(x):
        return jax.lax.conv_general_dilated(x[:, None], w, (1, 1), "VALID")
    with pytest.raises(CLIError, match="recorded result is empty") as e:
        ivytrace.export(fn, tmp_path / "m.onnx", args=(jnp.ones((1, 2, 4)),))
    assert e.value.returncode == 5
    assert not (tmp_path / "m.onnx").exists()


def test_a_convolution_on_an_input_smaller_than_the_kernel_names_a_guard(tmp_path):
    # At a size where JAX returns an empty result (VALID padding, input below the kernel)
    # onnxruntime's Conv failed with "Invalid input shape" and no word of why: the model now
    # checks the size first, in a node named as an ivytrace guard.
    w = jnp.asarray(np.random.default_rng(0).standard_normal((2, 1, 3, 3)).astype(np.float32))

    def fn(x):
        return jax.lax.conv_general_dilated(x[:, None], w, (1, 1), "VALID")
    sess = _model(fn, G.data(F, (2, 4, 5), 0), tmp_path)
    assert [model_outcome(sess, fn, G.data(F, s, 1)) for s in [(2, 4, 5), (3, 6, 3), (2, 2, 5), (1, 4, 1)]] == \
        ["match", "match", "guard", "guard"]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_casts(dtype, tmp_path):
    # Within the cast's precision only: onnxruntime computes float16/bfloat16 ops in float32 (and
    # has no bfloat16 kernels for most ops: Tanh, Greater; nor can its Python API return bfloat16).
    def fn(x):
        y = x.astype(dtype)
        z = (y * 3 + 1).astype(jnp.float32) - y.astype(jnp.float32)
        return (z, y, (y > 0.5).astype(jnp.int32)) if dtype == "float16" else (z,)
    sess = _model(fn, G.data(F, (3, 4), 0), tmp_path)
    for s in [(3, 4), (5, 4), (1, 2)]:
        x = G.data(F, s, 1)
        got = sess.run(None, {sess.get_inputs()[0].name: np.asarray(x)})
        want = fn(x)
        np.testing.assert_allclose(got[0], np.asarray(want[0]), rtol=2e-2, atol=2e-2)
        for g, w in zip(got[1:], want[1:]):
            np.testing.assert_array_equal(g, np.asarray(w))


@pytest.mark.parametrize("pool", ["max_pool", "avg_pool"])
def test_a_pooling_window_larger_than_the_input_names_a_guard(pool, tmp_path):
    # flax's pools are lax.reduce_window: under VALID padding a window larger than the input gives
    # JAX an empty result (a sum of 0 below); onnxruntime's MaxPool/AveragePool failed on that
    # input without naming why (recorded that way, a non-empty pool result made a later Reshape
    # fail). The model now checks the size first (a named guard); a recorded empty result is refused.
    nn = pytest.importorskip("flax.linen")
    from ivytrace.cli_bin import CLIError

    def fn(x):
        return getattr(nn, pool)(x[..., None], (3,), strides=(1,), padding="VALID").sum(axis=(1, 2))
    sess = _model(fn, G.data(F, (2, 5), 0), tmp_path)
    assert [model_outcome(sess, fn, G.data(F, s, 1)) for s in [(2, 5), (4, 3), (2, 2), (3, 1)]] == \
        ["match", "match", "guard", "guard"]
    with pytest.raises(CLIError, match="recorded result is empty"):
        ivytrace.export(fn, tmp_path / "empty.onnx", args=(G.data(F, (2, 2), 0),))


# -- found by the JAX ONNX property: jnp.array_split lowered to a Split with the recorded sizes, and
# at another length onnxruntime failed in the Split without naming a guard; the split's length
# check (a named guard node, from the NumPy/torch leftovers branch) covers it.
def test_array_split_of_a_symbolic_length_names_a_guard(tmp_path):
    def fn(x):
        a, b = jnp.array_split(x.reshape(-1), 2)
        return a.sum(0) + b.sum(0)
    sess = _model(fn, G.data(F, (3, 2), 0), tmp_path)
    assert model_outcome(sess, fn, G.data(F, (2, 2), 1)) in ("match", "guard")
