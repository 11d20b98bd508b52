"""Every NumPy and JAX sample (samples/numpy_programs.py, samples/jax_programs.py) through ONNX.

Each sample is recorded through the CLI, as a user would (`ivytrace record -- python samples/...`),
then every region is exported. The samples that compute a plain function export and match
onnxruntime against the framework on the recorded inputs; the others are refused (exit 5) for the
reason given here, which the exporter's message must name.
"""
import sys

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

from conftest import SAMPLES  # noqa: E402

EXPORTS = {"numpy": ["mlp", "cnn", "attention", "rnn"], "jax": ["mlp", "cnn", "attention", "rnn"]}
REFUSED = {
    ("numpy", "inplace"): "where=",                     # a masked ufunc (np.multiply(..., where=m))
    ("numpy", "random_ops"): "a random op",
    ("numpy", "guarded"): "specialized on 1 value(s)",
    ("jax", "inplace"): "scatter",
    ("jax", "random_ops"): "a random op",
    ("jax", "guarded"): "specialized on 1 value(s)",
    ("jax", "jit_nested"): "specialized on 1 value(s)",  # lax.cond's predicate
}


# Shapes the exported models must also take (a batch of 1 and 7; another length / image size).
FRESH = {"mlp": [(1, 8), (7, 8)], "cnn": [(1, 2, 8, 8), (7, 2, 8, 8), (3, 2, 12, 12)],
         "attention": [(1, 5, 8), (7, 5, 8), (3, 9, 8)]}
# The models must declare these dims dynamic: (fw, region) -> input dims.
DYNAMIC = {("numpy", "mlp"): [0], ("numpy", "cnn"): [0, 1, 2, 3], ("numpy", "attention"): [0, 1],
           ("jax", "mlp"): [0], ("jax", "cnn"): [0, 2, 3], ("jax", "attention"): [0, 1]}


# Exported with every dim as recorded: their guards are on dims such a model fixes. (NumPy's rnn
# loops `for t in range(xs.shape[0])`: that guard pins the sequence length, which its model
# declares static by itself.)
STATIC = set()


@pytest.fixture(scope="module")
def recorded(cli, tmp_path_factory):
    out = {}
    d = tmp_path_factory.mktemp("samples")
    for fw in ("numpy", "jax"):
        pytest.importorskip(fw)
        trace = d / f"{fw}.ivt"
        cli("record", "--frameworks", fw, "-o", trace, "--", sys.executable, SAMPLES / f"{fw}_programs.py", check=True)
        out[fw] = trace
    return out


@pytest.mark.parametrize("fw,region", [(fw, r) for fw, rs in EXPORTS.items() for r in rs])
def test_sample_exports_and_matches(fw, region, recorded, cli, tmp_path):
    sys.path.insert(0, str(SAMPLES))
    progs = __import__(f"{fw}_programs")
    out = tmp_path / f"{region}.onnx"
    extra = ["--static-batch"] if (fw, region) in STATIC else []
    cli("export", recorded[fw], "--region", region, "--to", "onnx", "-o", out, *extra, check=True)
    fn, make = progs.PROGRAMS[region]
    args = make(np.random.RandomState(3))
    want = fn(*args)
    sess = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    feeds = {i.name: np.asarray(a) for i, a in zip(sess.get_inputs(), args)}
    got = sess.run(None, feeds)
    wants = list(want) if isinstance(want, (tuple, list)) else [want]
    assert len(got) == len(wants)
    for g, w in zip(got, wants):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-4, atol=1e-5)
    # Fresh inputs of another batch size (and, where the model declares them dynamic, another
    # sequence length or image size): the dims the program follows are the model's own.
    for shape in FRESH.get(region, ()):
        x = np.random.RandomState(sum(shape)).randn(*shape).astype(np.float32)
        (inp,) = sess.get_inputs()
        assert [d for d, n in enumerate(inp.shape) if isinstance(n, str)] == DYNAMIC[(fw, region)], inp.shape
        if any(isinstance(d, int) and d != n for d, n in zip(inp.shape, shape)):
            continue   # a dim the model declares static
        x_fw = progs.jnp.asarray(x) if fw == "jax" else x
        (got,) = sess.run(None, {inp.name: x})
        np.testing.assert_allclose(got, np.asarray(fn(x_fw)), rtol=1e-4, atol=1e-5, err_msg=f"{fw} {region} at {shape}")


def test_a_loop_over_a_dim_makes_that_dim_static(recorded, cli, tmp_path):
    out = tmp_path / "rnn.onnx"
    cli("export", recorded["numpy"], "--region", "rnn", "--to", "onnx", "-o", out, check=True)
    sess = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    xs = sess.get_inputs()[0]
    assert all(isinstance(d, int) for d in xs.shape[:1]), xs.shape   # the unrolled loop's length


@pytest.mark.parametrize("fw,region", list(REFUSED))
def test_sample_refused_with_its_reason(fw, region, recorded, cli, tmp_path):
    out = tmp_path / f"{region}.onnx"
    proc = cli("export", recorded[fw], "--region", region, "--to", "onnx", "-o", out)
    assert proc.returncode == 5, proc.stderr
    assert REFUSED[(fw, region)] in proc.stderr, proc.stderr
    assert not out.exists()
