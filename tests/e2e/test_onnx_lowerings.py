"""Every ONNX lowering, run in onnxruntime against the framework's own result (tests/e2e/onnx_cases.py).

One `ivytrace record` per framework records every case as its own region; each region is exported
with `ivytrace export --region` and run in onnxruntime on the recorded inputs and, unless the case
is `static`, on inputs with another batch size. `test_every_lowering_has_a_case` fails when a
canonical op that some schema op lowers through (`ivytrace ops --json`) has no case.
"""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
import onnx_cases  # noqa: E402

ort = pytest.importorskip("onnxruntime")

FRAMEWORKS = ("torch", "numpy", "jax")
ALL = []
for _fw in FRAMEWORKS:
    try:
        __import__(_fw if _fw != "jax" else "jax.numpy")
    except ImportError:
        continue
    _cases = onnx_cases.build(_fw)
    ALL += [(c, i) for i, c in enumerate(_cases)]


@pytest.fixture(scope="module")
def traces(cli, tmp_path_factory):
    out = {}
    d = tmp_path_factory.mktemp("onnx_cases")
    for fw in FRAMEWORKS:
        path = d / f"{fw}.ivt"
        proc = cli("record", "--frameworks", fw, "-o", path, "--", sys.executable, Path(onnx_cases.__file__), fw)
        out[fw] = (path, proc.stderr)
    return out


def _run(model_path, names, arrays):
    sess = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    feeds = {}
    inputs = {i.name for i in sess.get_inputs()}
    for n, a in zip(names, arrays):
        if n in inputs:
            feeds[n] = a
    return sess.run(None, feeds)


def _expected(case, arrays):
    args = onnx_cases.to_framework(case.fw, arrays)
    return [onnx_cases.to_numpy(y) for y in onnx_cases.flatten(case.fn(*args))]


def _check(case, got, want, what):
    assert len(got) == len(want), f"{case.name} ({what}): {len(got)} outputs, expected {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, f"{case.name} ({what}) output {k}: shape {g.shape}, expected {w.shape}"
        if w.dtype == bool or np.issubdtype(w.dtype, np.integer):
            np.testing.assert_array_equal(g.astype(w.dtype), w, err_msg=f"{case.name} ({what}) output {k}")
        else:
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=case.rtol, atol=case.atol,
                                       err_msg=f"{case.name} ({what}) output {k}")


@pytest.mark.parametrize("case,index", ALL, ids=[c.name for c, _ in ALL])
def test_lowering_matches_framework(case, index, traces, cli, tmp_path):
    import inspect
    trace, record_stderr = traces[case.fw]
    model = tmp_path / f"{case.name}.onnx"
    proc = cli("export", trace, "--region", case.name, "--to", "onnx", "-o", model)
    assert proc.returncode == 0, f"export of {case.name} failed ({proc.returncode}):\n{proc.stderr}\n{record_stderr}"
    names = list(inspect.signature(case.fn).parameters)
    arrays = onnx_cases.make_inputs(case.specs, 2, index)
    _check(case, _run(model, names, arrays), _expected(case, arrays), "recorded inputs")
    # Another batch, where the model declares it: always for torch and NumPy; for JAX where JAX's
    # symbolic trace proved the program follows it (recorder/jax_shapes.py), else the input has
    # its recorded shape and onnxruntime would refuse another batch.
    if not case.static and (case.fw != "jax" or _declares_batch(model)):
        arrays = onnx_cases.make_inputs(case.specs, 3, 1000 + index)
        _check(case, _run(model, names, arrays), _expected(case, arrays), "batch 3")


def _declares_batch(model_path) -> bool:
    sess = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    return any(i.shape and i.shape[0] == "batch" for i in sess.get_inputs())


def test_every_lowering_has_a_case(cli):
    proc = cli("ops", "--json", check=True)
    table = json.loads(proc.stdout)
    lowered = set()
    for fw, data in table.items():
        for op in data["ops"]:
            if op["onnx"] == "lowers":
                lowered.add(op["onnx_lowering"])
    covered = {c.canonical for c, _ in ALL}
    missing = sorted(lowered - covered)
    assert not missing, f"canonical ops that lower to ONNX without a case in tests/e2e/onnx_cases.py: {missing}"
