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


def test_flax_nnx_conv_attention_model_follows_batch_and_image_size(cli, tmp_path):
    # flax.nnx library layers (Conv, BatchNorm, MultiHeadAttention) over the image's pixels as a
    # sequence: JAX proves the batch, height and width symbolic (recorder/jax_shapes.py); the replay
    # and the ONNX model follow all three, and the channels stay static.
    nnx = pytest.importorskip("flax.nnx")

    class Net(nnx.Module):
        def __init__(self, rngs):
            self.conv = nnx.Conv(3, 8, (3, 3), rngs=rngs)
            self.bn = nnx.BatchNorm(8, use_running_average=True, rngs=rngs)
            self.attn = nnx.MultiHeadAttention(num_heads=2, in_features=8, decode=False, rngs=rngs)
            self.out = nnx.Linear(8, 5, rngs=rngs)

        def __call__(self, x):
            h = nnx.relu(self.bn(self.conv(x)))
            b, hh, ww, c = h.shape
            seq = h.reshape(b, hh * ww, c)
            return self.out((seq + self.attn(seq)).mean(axis=1))

    m = Net(nnx.Rngs(0))
    rs = np.random.RandomState(0)

    def forward(x):
        return m(x)

    graph = ivytrace.trace_graph(forward, args=(jnp.asarray(rs.randn(2, 6, 6, 3).astype(np.float32)),), retrace=True)
    shapes = [(5, 6, 6, 3), (1, 6, 6, 3), (3, 8, 4, 3)]
    for shape in shapes:
        x = jnp.asarray(rs.randn(*shape).astype(np.float32))
        np.testing.assert_allclose(np.asarray(graph(x)), np.asarray(forward(x)), rtol=1e-5, atol=1e-5)
    assert graph.traces == 1
    out = tmp_path / "nnx.onnx"
    proc = cli("export", graph.save(tmp_path / "nnx.ivt"), "--to", "onnx", "-o", out)
    assert proc.returncode == 0, proc.stderr
    sess = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    (inp,) = sess.get_inputs()
    assert inp.shape == ["batch", "x_dim1", "x_dim2", 3]
    for shape in shapes:
        x = rs.randn(*shape).astype(np.float32)
        np.testing.assert_allclose(sess.run(None, {"x": x})[0], np.asarray(forward(jnp.asarray(x))), rtol=1e-4, atol=1e-5)


class StridedSame(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Conv(4, (3, 3), strides=(2, 2), padding="SAME")(x))
        x = nn.max_pool(x, (3, 3), strides=(2, 2), padding="SAME") + nn.avg_pool(x, (2, 3), strides=(2, 2), padding="SAME")
        x = nn.Conv(6, (4, 4), strides=(3, 3), padding="SAME")(x)
        return nn.Conv(2, (3, 3), padding=((1, 0), (2, 1)))(x)


def test_strided_same_padding_follows_the_image_size(tmp_path):
    # flax's "SAME" with a stride pads by the size's remainder: over a symbolic height and width
    # the (lo, hi) pairs are computed in the graph (they were refused: "padding is not (lo, hi)
    # pairs"), an explicit Pad before the Conv (and before the max and average pools, whose
    # reduce_window padding is computed the same way).
    module = StridedSame()
    x = jnp.asarray(np.random.RandomState(0).randn(2, 17, 19, 3).astype(np.float32))
    params = module.init(jax.random.PRNGKey(0), x)

    def forward(x):
        return module.apply(params, x)

    path = ivytrace.export(forward, tmp_path / "same.onnx", args=(x,))
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert sess.get_inputs()[0].shape == ["batch", "x_dim1", "x_dim2", 3]
    for shape in ((2, 17, 19, 3), (3, 16, 7, 3), (1, 16, 16, 3), (1, 21, 23, 3)):
        xs = np.random.RandomState(sum(shape)).randn(*shape).astype(np.float32)
        (got,) = sess.run(None, {"x": xs})
        want = np.asarray(forward(jnp.asarray(xs)))
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
