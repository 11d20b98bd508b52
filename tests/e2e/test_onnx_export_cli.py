"""`export --to onnx` on specialized graphs (guards), and `ivytrace ops`, through the real CLI."""
import json
import sys
import textwrap

import numpy as np
import onnx
import pytest

ort = pytest.importorskip("onnxruntime")

MASKED = textwrap.dedent("""
    import torch, ivytrace

    def encoder(x, attention_mask):
        if bool(attention_mask.all()):      # like a model that skips masking when nothing is padded
            return x.softmax(-1)
        return (x + (1.0 - attention_mask[:, None, :]) * -1e9).softmax(-1)

    x = torch.randn(2, 4, 4)
    ivytrace.region("encoder")(encoder)(x, torch.ones(2, 4))
""")


@pytest.fixture(scope="module")
def masked_trace(cli, tmp_path_factory):
    d = tmp_path_factory.mktemp("guards")
    script = d / "masked.py"
    script.write_text(MASKED)
    trace = d / "masked.ivt"
    cli("record", "--frameworks", "torch", "-o", trace, "--", sys.executable, script, check=True)
    return trace


def test_a_guarded_graph_is_refused_by_default(cli, masked_trace, tmp_path):
    out = tmp_path / "m.onnx"
    proc = cli("export", masked_trace, "--to", "onnx", "-o", out)
    assert proc.returncode == 5, proc.stderr
    assert "specialized on 1 value(s)" in proc.stderr
    assert "torch.Tensor.__bool__ at" in proc.stderr and "masked.py:5: recorded True" in proc.stderr
    assert "--allow-specialized" in proc.stderr
    assert not out.exists()


def test_allow_specialized_writes_the_guards_into_metadata(cli, masked_trace, tmp_path):
    out = tmp_path / "m.onnx"
    proc = cli("export", masked_trace, "--to", "onnx", "-o", out, "--allow-specialized")
    assert proc.returncode == 0, proc.stderr
    model = onnx.load(str(out))
    props = {p.key: p.value for p in model.metadata_props}
    assert props["ivytrace.guard.0"].startswith("torch.Tensor.__bool__ at ")
    assert props["ivytrace.guard.0"].endswith("masked.py:5: recorded True (checked by the model)")
    assert "1 guard(s)" in props["ivytrace.specialized"]
    # The model is the specialized path: right for an all-ones mask.
    x = np.random.RandomState(0).randn(2, 4, 4).astype(np.float32)
    sess = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    feeds = {i.name: x if i.name == "x" else np.ones((2, 4), np.float32) for i in sess.get_inputs()}
    got = sess.run(None, feeds)[0]
    want = np.exp(x) / np.exp(x).sum(-1, keepdims=True)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # A padded mask breaks the guard: the model refuses it, naming the line, instead of
    # returning the unmasked path's answer.
    assert "checked by the model" in props["ivytrace.guard.0"]
    padded = np.ones((2, 4), np.float32)
    padded[0, -1] = 0
    with pytest.raises(Exception, match=r"ivytrace guard 0: torch.Tensor.__bool__ at .*masked.py:5: recorded True"):
        sess.run(None, {"x": x, "attention_mask": padded})


def test_ops_lists_every_schema_op_with_its_onnx_status(cli):
    proc = cli("ops", "--json", check=True)
    table = json.loads(proc.stdout)
    # "ivytrace": the shape arithmetic of symbolic shapes (schemas/sym.textproto), every framework's
    assert set(table) == {"torch", "numpy", "jax", "ivytrace"}
    assert table["ivytrace"]["ops"] and all(op["op"].startswith("ivytrace.sym.") for op in table["ivytrace"]["ops"])
    by_name = {op["op"]: op for fw in table.values() for op in fw["ops"]}
    sdpa = by_name["torch.nn.functional.scaled_dot_product_attention"]
    assert sdpa["canonical"] == "scaled_dot_product_attention" and sdpa["onnx"] == "lowers"
    assert by_name["numpy.negative"]["onnx_lowering"] == "negative"      # NumPy's "neg", normalized
    assert by_name["jax.lax.integer_pow_p"]["onnx_lowering"] == "pow"
    assert by_name["torch.rand"]["onnx"] == "refused" and "random" in by_name["torch.rand"]["reason"]
    for fw, data in table.items():
        t = data["totals"]
        assert t["ops"] == len(data["ops"]) == t["onnx_lowers"] + t["onnx_refused"]
        assert t["onnx_lowers"] == sum(op["onnx"] == "lowers" for op in data["ops"])
    text = cli("ops", "--framework", "jax", check=True).stdout
    assert text.startswith(f"jax: {table['jax']['totals']['ops']} ops, all replay; "
                           f"{table['jax']['totals']['onnx_lowers']} lower to ONNX")
    assert "jax.lax.dot_general_p" in text and "torch." not in text
    bad = cli("ops", "--framework", "tensorflow")
    assert bad.returncode == 2 and "tensorflow" in bad.stderr
