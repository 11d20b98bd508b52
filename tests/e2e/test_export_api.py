"""ivytrace.export: one call from a running program to an ONNX model or a plan, checked in
onnxruntime / the plan runtime against the program itself."""
import numpy as np
import pytest
import torch

ort = pytest.importorskip("onnxruntime")
import onnx  # noqa: E402

import ivytrace  # noqa: E402


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8, 5)

    def forward(self, x):
        h = torch.relu(self.bn(self.conv(x)))
        return torch.softmax(self.fc(h.mean(dim=(2, 3))), dim=-1)


def _run(path, feeds):
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return sess, sess.run(None, dict(zip(names, feeds)))


def test_a_module_exports_with_its_weights_and_follows_the_batch(tmp_path):
    torch.manual_seed(0)
    net = Net().eval()
    for p in net.bn.parameters():               # BatchNorm statistics that are not the defaults
        torch.nn.init.uniform_(p, 0.5, 1.5)
    net.bn.running_mean.uniform_(-1, 1)
    net.bn.running_var.uniform_(0.5, 2)
    path = tmp_path / "net.onnx"
    with torch.no_grad():
        assert ivytrace.export(net, path, args=(torch.randn(2, 3, 8, 8),)) == str(path)
    model = onnx.load(str(path))
    assert not [i.name for i in model.graph.input if i.name.startswith(("param", "buffer"))]   # weights are baked
    assert {i.name for i in model.graph.initializer} and len(model.graph.input) == 1
    for batch in (1, 5):
        x = torch.randn(batch, 3, 8, 8)
        sess, (out,) = _run(path, [x.numpy()])
        with torch.no_grad():
            np.testing.assert_allclose(out, net(x).numpy(), rtol=1e-4, atol=1e-5)
    # Nothing of the recording is left behind, and the module is the user's module still.
    assert type(net).forward is Net.forward and "forward" not in net.__dict__


def test_a_function_export_names_inputs_after_its_parameters(tmp_path):
    def score(query, keys):
        return torch.softmax(query @ keys.transpose(0, 1), dim=-1)

    q, k = torch.randn(3, 4), torch.randn(6, 4)
    path = ivytrace.export(score, tmp_path / "score.onnx", args=(q, k))
    sess, (out,) = _run(path, [q.numpy(), k.numpy()])
    assert [i.name for i in sess.get_inputs()] == ["query", "keys"]
    np.testing.assert_allclose(out, score(q, k).numpy(), rtol=1e-5, atol=1e-6)


def test_a_specialized_graph_is_refused_with_exit_5_and_nothing_is_written(tmp_path):
    def clipped(x):
        if x.sum() > 0:                         # a branch on a value: a guard
            return x * 2
        return -x

    path = tmp_path / "clipped.onnx"
    path.write_bytes(b"the user's old model")
    with pytest.raises(ivytrace.CLIError) as e:
        ivytrace.export(clipped, path, args=(torch.ones(3),))
    assert e.value.returncode == 5 and "guard" in str(e.value).lower()
    # In this call's words: export()'s argument, not the CLI's flag, and no path of the temporary
    # trace (removed by now).
    assert "allow_specialized=True" in str(e.value) and "--allow-specialized" not in str(e.value)
    assert "trace.ivytrace" not in str(e.value) and "clipped" in str(e.value)
    assert path.read_bytes() == b"the user's old model"
    # With allow_specialized the guard goes into the model's metadata.
    ivytrace.export(clipped, path, args=(torch.ones(3),), allow_specialized=True)
    model = onnx.load(str(path))
    assert any("guard" in p.key.lower() for p in model.metadata_props)
    _, (out,) = _run(path, [np.full(3, 2.0, np.float32)])
    np.testing.assert_allclose(out, np.full(3, 4.0, np.float32))


def test_static_exports_the_recorded_shapes(tmp_path):
    path = ivytrace.export(lambda x: (x * x).sum(dim=0), tmp_path / "s.onnx", args=(torch.randn(4, 3),), static=True)
    dims = onnx.load(path).graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_value for d in dims] == [4, 3] and not any(d.dim_param for d in dims)


def _attention_with_positions(x):
    # What a decoder computes from its input's length alone: positions, a causal mask, rotary
    # tables, and a branch on a value of the positions (transformers' packed-sequence check reads
    # one element of a strided view).
    t = x.shape[1]
    pos = torch.arange(t)[None, :].expand(x.shape[0], t)
    if (pos[:, -1] == t - 1).all():
        x = x + 0.0
    angle = pos[..., None].float() / 10.0
    h = x * torch.cos(angle) + x * torch.sin(angle)
    scores = h @ h.transpose(1, 2)
    mask = torch.ones(t, t, dtype=torch.bool).tril()
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1) @ h


def test_a_static_export_folds_what_follows_from_the_shapes_alone(tmp_path):
    x = torch.randn(2, 6, 4)
    want = _attention_with_positions(x).numpy()
    # Static: recorded with plain shapes, so positions, mask and tables are constants, and the
    # branch on the positions needs no allow_specialized (it holds on a constant).
    static = ivytrace.export(_attention_with_positions, tmp_path / "s.onnx", args=(x,), static=True)
    ops = {n.op_type for n in onnx.load(static).graph.node}
    assert not ops & {"Range", "Cos", "Sin", "Trilu", "ConstantOfShape"}, ops
    _, (got,) = _run(static, [x.numpy()])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    x2 = torch.randn(2, 6, 4)
    _, (got2,) = _run(static, [x2.numpy()])
    np.testing.assert_allclose(got2, _attention_with_positions(x2).numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(Exception, match="Got invalid dimensions for input"):
        _run(static, [np.zeros((2, 7, 4), np.float32)])
    # Dynamic (the default): the same values are computed from the input's length, and the model
    # follows it.
    dynamic = ivytrace.export(_attention_with_positions, tmp_path / "d.onnx", args=(x,), allow_specialized=True)
    assert {"Range", "Cos", "Sin"} <= {n.op_type for n in onnx.load(dynamic).graph.node}
    x3 = torch.randn(3, 9, 4)
    _, (got3,) = _run(dynamic, [x3.numpy()])
    np.testing.assert_allclose(got3, _attention_with_positions(x3).numpy(), rtol=1e-5, atol=1e-6)


def test_export_to_a_plan_replays(tmp_path):
    def f(x, y):
        return torch.tanh(x) * y + 1.0

    x, y = torch.randn(2, 5), torch.randn(2, 5)
    path = ivytrace.export(f, tmp_path / "f.ivyplan", args=(x, y), to="plan")
    plan = ivytrace.load_plan(path)
    torch.testing.assert_close(plan(x, y), f(x, y))


def test_int_arguments_are_inputs_where_onnx_takes_them_and_specialized_with_a_warning_where_not(tmp_path):
    def view(x, n):
        return x.reshape(n, -1) * n

    x = torch.randn(12)
    path = ivytrace.export(view, tmp_path / "view.onnx", args=(x, 3))
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    assert [i.name for i in sess.get_inputs()] == ["x", "n"]
    (out,) = sess.run(None, {"x": x.numpy(), "n": np.asarray(4, dtype=np.int64)})
    np.testing.assert_allclose(out, view(x, 4).numpy(), rtol=1e-6)

    def total(x, d):
        return x.sum(dim=d)                     # ONNX takes an axis as an attribute only

    x = torch.randn(3, 4)
    with pytest.warns(ivytrace.StateWarning, match=r"number argument\(s\) d .*torch.Tensor.sum"):
        path = ivytrace.export(total, tmp_path / "total.onnx", args=(x, 1))
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    assert [i.name for i in sess.get_inputs()] == ["x"]
    (out,) = sess.run(None, {"x": x.numpy()})
    np.testing.assert_allclose(out, total(x, 1).numpy(), rtol=1e-6)


def test_jax_functions_export(tmp_path):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    w = jnp.asarray(np.random.RandomState(0).randn(4, 3).astype(np.float32))

    def layer(x):
        return jax.nn.gelu(x @ w)

    x = jnp.asarray(np.random.RandomState(1).randn(2, 4).astype(np.float32))
    path = ivytrace.export(layer, tmp_path / "layer.onnx", args=(x,))
    x6 = np.random.RandomState(2).randn(6, 4).astype(np.float32)
    _, (out,) = _run(path, [x6])                # the batch follows the input (jax_shapes.py)
    np.testing.assert_allclose(out, np.asarray(layer(jnp.asarray(x6))), rtol=1e-5, atol=1e-6)


def test_bad_arguments_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="expected 'onnx' or 'plan'"):
        ivytrace.export(lambda x: x + 1, tmp_path / "a", args=(torch.ones(1),), to="tflite")
    with pytest.raises(TypeError, match=r"args must be a tuple .* not a Tensor \(write args=\(x,\)"):
        ivytrace.export(lambda x: x + 1, tmp_path / "a", args=torch.ones(3))
    with pytest.raises(ValueError, match="apply to ONNX models"):
        ivytrace.export(lambda x: x + 1, tmp_path / "a", args=(torch.ones(1),), to="plan", static=True)
    missing = tmp_path / "no" / "such" / "dir" / "m.onnx"
    with pytest.raises(ivytrace.CLIError) as e:
        ivytrace.export(lambda x: x + 1, missing, args=(torch.ones(1),))
    assert e.value.returncode == 4 and str(missing) in str(e.value)
    assert not missing.exists()


def test_numpy_functions_export(tmp_path):
    def score(a, b):
        return np.tanh(a @ b).sum(axis=1)

    rng = np.random.RandomState(0)
    a, b = rng.rand(3, 4).astype(np.float32), rng.rand(4, 5).astype(np.float32)
    path = ivytrace.export(score, tmp_path / "score.onnx", args=(a, b))
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    # Nothing fixes the inner or the output size (both operands are inputs): they are dynamic, and
    # the two dims `@` ties share one name.
    assert [(i.name, i.shape) for i in sess.get_inputs()] == [("a", ["batch", "a_dim1"]), ("b", ["a_dim1", "b_dim1"])]
    a6 = rng.rand(6, 4).astype(np.float32)
    np.testing.assert_allclose(sess.run(None, {"a": a6, "b": b})[0], score(a6, b), rtol=1e-5, atol=1e-6)
    a2, b2 = rng.rand(2, 7).astype(np.float32), rng.rand(7, 3).astype(np.float32)
    np.testing.assert_allclose(sess.run(None, {"a": a2, "b": b2})[0], score(a2, b2), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("masked_row", [False, True])
def test_attention_with_a_constant_mask_zeroes_masked_rows_only_when_it_has_one(tmp_path, masked_row):
    # torch's SDPA gives 0 for a query row every key is masked out of; the ONNX model does the
    # same with a row-max check, which a mask that is a constant of the model (a static export's
    # position bias) needs only when one of its rows is fully masked.
    bias = torch.randn(1, 1, 5, 5)
    if masked_row:
        bias[..., 2, :] = float("-inf")

    def attend(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)

    q, k, v = (torch.randn(2, 3, 5, 4) for _ in range(3))
    path = ivytrace.export(attend, tmp_path / "a.onnx", args=(q, k, v), static=True)
    ops = [n.op_type for n in onnx.load(path).graph.node]
    assert ("ReduceMax" in ops) == masked_row, ops
    q2, k2, v2 = (torch.randn(2, 3, 5, 4) for _ in range(3))
    _, (got,) = _run(path, [q2.numpy(), k2.numpy(), v2.numpy()])
    want = attend(q2, k2, v2).numpy()
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_float_floor_division_is_torchs_and_numpys_not_floor_of_the_quotient(tmp_path):
    # 1.0 // 0.1 is 9 in torch, NumPy and Python (fmod-based), while floor(1.0 / 0.1) is 10: the
    # model computes it as they do, on a grid with signs, zeros, infinities and NaN. (Equal values;
    # not the sign of a zero result: onnxruntime's CPU Where gives +0.0 where it selects a -0.0.)
    vals = np.array([1.0, -1.0, 7.0, 0.3, -0.3, 0.1, -0.1, 0.7, 2.5, -2.5, 0.0, -0.0, 1e-30, -1e30, 3.0,
                     np.inf, -np.inf, np.nan], np.float32)
    a = torch.tensor(np.repeat(vals, len(vals)))
    b = torch.tensor(np.tile(vals, len(vals)))

    def torch_floor(a, b):
        return torch.div(a, b, rounding_mode="floor") + 0 * (a // b)

    def numpy_floor(a, b):
        return np.floor_divide(a, b)

    with np.errstate(all="ignore"):
        for fn, feeds, want in ((torch_floor, (a, b), torch_floor(a, b).numpy()),
                                (numpy_floor, (a.numpy(), b.numpy()), numpy_floor(a.numpy(), b.numpy()))):
            path = ivytrace.export(fn, tmp_path / f"{fn.__name__}.onnx", args=feeds)
            _, (got,) = _run(path, [np.asarray(f) for f in feeds])
            both_nan = np.isnan(got) & np.isnan(want)
            same = got == want
            bad = ~(both_nan | same)
            assert not bad.any(), (fn.__name__, list(zip(a.numpy()[bad], b.numpy()[bad], got[bad], want[bad]))[:8])
