"""JAX programs whose batch JAX's symbolic trace proves they follow (recorder/jax_shapes.py) export
to ONNX with a `batch` dim and match eager JAX at other batch sizes in onnxruntime (hypothesis)."""
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

jax = pytest.importorskip("jax")
ort = pytest.importorskip("onnxruntime")
jnp = jax.numpy

import ivytrace  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from test_jax_shapes import POLY  # noqa: E402  (the steps JAX's symbolic trace proves follow the batch)

STEPS = {**POLY,
         "gelu_layernorm": lambda x: jax.nn.gelu((x - x.mean(-1, keepdims=True)) / (x.std(-1, keepdims=True) + 1e-3))}


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
