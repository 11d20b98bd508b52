"""JAX programs whose batch JAX's symbolic trace proves they follow (recorder/jax_shapes.py) export
to ONNX with a `batch` dim and match eager JAX at other batch sizes in onnxruntime (hypothesis)."""
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

jax = pytest.importorskip("jax")
ort = pytest.importorskip("onnxruntime")
jnp = jax.numpy

import ivytrace  # noqa: E402

STEPS = {
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
    "slice_last": lambda x: x[..., :1] * x,
    "first_row": lambda x: x - x[:1],
    "take_last": lambda x: x - x[..., -1:],
    "pad": lambda x: jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(1, 1)])[..., 1:-1],
    "zeros_cat": lambda x: jnp.concatenate([x, jnp.zeros(x.shape[:-1] + (2,), x.dtype)], axis=-1)[..., :-2],
    "cls_pool": lambda x: x + x[:, 0:1] * x[:, -1:],
    "mean0": lambda x: x - x.mean(axis=0),
    "size_mul": lambda x: x * x.shape[0] + x.shape[-1],
    "div_batch": lambda x: x / x.shape[0],
    "gelu_layernorm": lambda x: jax.nn.gelu((x - x.mean(-1, keepdims=True)) / (x.std(-1, keepdims=True) + 1e-3)),
}


def _x(shape, seed):
    return np.random.RandomState(seed).randn(*shape).astype(np.float32)


@settings(max_examples=int(os.environ.get("IVYTRACE_HYPOTHESIS_EXAMPLES", "15")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.sampled_from(sorted(STEPS)), min_size=1, max_size=3),
       shape=st.lists(st.integers(2, 5), min_size=2, max_size=3),
       batches=st.lists(st.integers(1, 8), min_size=1, max_size=3))
# An input recorded square ([2, 2]) whose dims are two symbols: once declared [batch, batch],
# which onnxruntime takes to be equal (it failed at [3, 2] planning buffers).
@example(steps=["max0", "gelu_layernorm"], shape=[2, 2], batches=[3])
def test_generated_programs_export_with_a_batch_dim_and_match(steps, shape, batches, cli, tmp_path_factory):
    def fn(x):
        for s in steps:
            x = STEPS[s](x)
        return x

    tmp = tmp_path_factory.mktemp("jax_onnx")
    g = ivytrace.trace_graph(fn, args=(jnp.asarray(_x(shape, 0)),))
    out = tmp / "m.onnx"
    proc = cli("export", g.save(tmp / "m.ivt"), "--to", "onnx", "-o", out)
    assert proc.returncode == 0, proc.stderr
    sess = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    (inp,) = sess.get_inputs()
    assert inp.shape[0] == "batch", (steps, inp.shape)
    for seed, b in enumerate([shape[0], *batches], 1):
        x = _x([b, *shape[1:]], seed)
        (got,) = sess.run(None, {inp.name: x})
        np.testing.assert_allclose(got, np.asarray(fn(jnp.asarray(x))), rtol=1e-4, atol=1e-5,
                                   err_msg=f"{steps} traced at {shape}, run at batch {b}")
