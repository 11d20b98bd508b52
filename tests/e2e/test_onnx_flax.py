"""flax.linen MLP and CNN programs exported to ONNX and run in onnxruntime against flax."""
import numpy as np
import pytest

flax = pytest.importorskip("flax")
ort = pytest.importorskip("onnxruntime")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import flax.linen as nn  # noqa: E402

import ivytrace  # noqa: E402


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.gelu(nn.Dense(32)(x))
        x = nn.LayerNorm()(x)
        return nn.log_softmax(nn.Dense(10)(x))


class CNN(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Conv(8, (3, 3))(x))
        x = nn.max_pool(x, (2, 2), strides=(2, 2))
        x = nn.relu(nn.Conv(16, (3, 3), strides=(2, 2))(x))
        x = nn.avg_pool(x, (2, 2), strides=(2, 2))
        x = x.reshape((x.shape[0], -1))
        return nn.Dense(10)(x)


# The batch is symbolic (recorder/jax_shapes.py): the ONNX model declares it `batch` and matches
# flax at other batch sizes; the other dims are fixed by the weights and stay static.
@pytest.mark.parametrize("module,shape", [(MLP(), (4, 16)), (CNN(), (4, 16, 16, 3))], ids=["mlp", "cnn"])
def test_flax_module_exports_and_matches(module, shape, cli, tmp_path):
    x = jnp.asarray(np.random.RandomState(0).randn(*shape).astype(np.float32))
    params = module.init(jax.random.PRNGKey(0), x)

    def forward(x):
        return module.apply(params, x)

    graph = ivytrace.trace_graph(forward, args=(x,))
    trace = graph.save(tmp_path / "m.ivt")
    out = tmp_path / "m.onnx"
    proc = cli("export", trace, "--to", "onnx", "-o", out)
    assert proc.returncode == 0, proc.stderr
    sess = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    (inp,) = sess.get_inputs()
    assert inp.name == "x" and inp.shape == ["batch", *shape[1:]]
    for b in (shape[0], 1, 7):
        xb = jnp.asarray(np.random.RandomState(b).randn(b, *shape[1:]).astype(np.float32))
        (got,) = sess.run(None, {"x": np.asarray(xb)})
        np.testing.assert_allclose(got, np.asarray(forward(xb)), rtol=1e-4, atol=1e-5)
    with pytest.raises(Exception, match="(?i)dimension|shape"):   # a static dim: refused, not wrong
        sess.run(None, {"x": np.zeros((2, *shape[1:-1], shape[-1] + 1), np.float32)})
