"""ONNX export of graphs with symbolic shapes: the exported model follows its inputs' shapes, and
every guard the program's control flow put on a shape is a check inside the model.

Each program is traced at one shape with ivytrace, exported with the real CLI and run in
onnxruntime at other shapes against the program itself (eager). The answer must match, or
onnxruntime must fail naming an ivytrace guard: never a wrong answer. The programs are the symbolic
shape tests' (tests/python/test_symbolic_shapes.py), plus generated ones (hypothesis).
"""
import os
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch

ort = pytest.importorskip("onnxruntime")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, example, given, settings, strategies as st  # noqa: E402

import ivytrace  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
import test_symbolic_shapes as S  # noqa: E402  (the programs, written once per framework)

RTOL, ATOL = 1e-5, 1e-5


def _export(cli, fn, x0, path, *extra):
    graph = ivytrace.trace_graph(fn, args=(x0,))
    trace = graph.save(path.with_suffix(".ivt"))
    proc = cli("export", trace, "--to", "onnx", "-o", path, *extra)
    assert proc.returncode == 0, proc.stderr
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def _outcome(sess, F, fn, x):
    """'match'; 'guard' (onnxruntime refused the input, naming a guard); 'static' (the input's size
    differs in a dim the model declares static: onnxruntime refuses it by its declared type); or
    'skip' (eager fails too)."""
    try:
        want = F.to_numpy(fn(x))
    except Exception:  # noqa: BLE001 - the program itself fails at this shape
        return "skip"
    feed = {sess.get_inputs()[0].name: np.ascontiguousarray(F.to_numpy(x))}
    try:
        got = sess.run(None, feed)[0]
    except Exception as e:  # noqa: BLE001 - onnxruntime's error type
        if "Got invalid dimensions for input" in str(e):
            return "static"
        assert "ivytrace guard" in str(e), f"onnxruntime failed without naming a guard: {e}"
        return "guard"
    assert got.shape == want.shape and np.allclose(got, want, rtol=RTOL, atol=ATOL), \
        f"wrong answer at {tuple(x.shape)}: got shape {got.shape}, want {want.shape}"
    return "match"


@pytest.mark.parametrize("framework", ["torch", "numpy"])
@pytest.mark.parametrize("program", list(S.PROGRAMS), ids=lambda p: p.__name__)
def test_exported_model_matches_or_raises_a_guard_at_other_shapes(cli, tmp_path, framework, program):
    F = S.FRAMEWORKS[framework]
    fn = program(F)
    shapes = S.PROGRAMS[program]
    sess = _export(cli, fn, S._data(F, shapes[0], 0), tmp_path / "m.onnx")
    outcomes = [_outcome(sess, F, fn, S._data(F, shape, i)) for i, shape in enumerate(shapes[1:], start=1)]
    # Sizes the program only computes with (no branch on them) never need a guard, and a batch the
    # program reads is dynamic.
    if program in (S.times_len, S.reshape_by_batch, S.divide_by_batch, S.position_ids):
        assert "guard" not in outcomes, outcomes
    assert sess.get_inputs()[0].shape[0] == "batch"


def test_a_branch_on_the_batch_is_checked_by_the_model(cli, tmp_path):
    fn = S.branch_on_batch(S.TorchOps)
    sess = _export(cli, fn, torch.randn(3, 2), tmp_path / "m.onnx")
    assert _outcome(sess, S.TorchOps, fn, torch.randn(2, 2)) == "match"
    with pytest.raises(Exception, match=r"ivytrace guard 0: ivytrace.sym.__bool__ at .*test_symbolic_shapes.py:\d+"):
        sess.run(None, {"x": np.ones((6, 2), np.float32)})


def test_values_of_every_dtype_pass_the_guards_unchanged(cli, tmp_path):
    # Values that live across a guard are read through it (onnxruntime's Where has no kernel for
    # some of these types); the outputs wait on every check.
    def fn(x):
        mask, small, wide = x > 0, (x * 100).to(torch.int16), (x * 100).to(torch.int64)
        y = x * 2 if x.shape[0] > 2 else x * 3
        return {"y": y, "mask": mask & (y > 0), "small": small + 1, "wide": wide - 1}

    sess = _export(cli, fn, torch.randn(4, 3), tmp_path / "m.onnx")
    x = torch.randn(5, 3)
    want = fn(x)
    got = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, {"x": x.numpy()})))
    for k, v in want.items():
        assert got[k].dtype == v.numpy().dtype, k
        np.testing.assert_array_equal(got[k], v.numpy(), err_msg=k)
    with pytest.raises(Exception, match=r"ivytrace guard 0: ivytrace.sym.__bool__"):
        sess.run(None, {"x": np.ones((2, 3), np.float32)})


def test_a_value_read_after_two_guards_waits_on_both_checks(cli, tmp_path):
    # `early` is computed before both guards and read only after the second. onnxruntime may run a
    # node as soon as its inputs exist, so the read must wait on every check before it, not only
    # on the newest: otherwise `early + z` can run (and fail in its broadcast, or be returned)
    # before the first guard's check has refused the input.
    def fn(x):
        early = x * 2
        y = x + 1 if x.shape[0] > 2 else x - 1
        z = y * 3 if x.shape[1] > 1 else y
        return early + z

    sess = _export(cli, fn, torch.randn(4, 3), tmp_path / "m.onnx")
    model = onnx.load(str(tmp_path / "m.onnx"))
    order = {out: i for i, n in enumerate(model.graph.node) for out in n.output}
    producer = {out: n for n in model.graph.node for out in n.output}
    checks = [n.output[0] for n in model.graph.node if n.name.startswith("ivytrace guard")]
    assert len(checks) == 2
    gated = 0
    for i, n in enumerate(model.graph.node):
        if n.op_type != "Where" or n.input[1] != n.input[2] or n.input[0] not in producer:
            continue
        size = producer[producer[n.input[0]].input[0]]          # Equal(Size(Concat(checks)), n)
        waits_on = set(producer[size.input[0]].input) if producer[size.input[0]].op_type == "Concat" \
            else {size.input[0]}
        assert waits_on == {c for c in checks if order[c] < i}, n.name
        gated += 1
    assert gated >= 1
    assert _outcome(sess, S.TorchOps, fn, torch.randn(5, 2)) == "match"
    for shape in ((2, 3), (5, 1), (1, 1)):
        with pytest.raises(Exception, match=r"ivytrace guard [01]: ivytrace.sym.__bool__"):
            sess.run(None, {"x": np.ones(shape, np.float32)})


def test_a_float_argument_is_a_model_input(cli, tmp_path):
    def fn(x, alpha):
        s = alpha * 2 - 0.5
        return x * s + torch.full_like(x, alpha) + x.clamp(min=-alpha) * (1 / alpha) + alpha // 0.3 + alpha % 0.4

    x = torch.randn(4, 3)
    graph = ivytrace.trace_graph(fn, args=(x, 0.7))
    proc = cli("export", graph.save(tmp_path / "m.ivt"), "--to", "onnx", "-o", tmp_path / "m.onnx")
    assert proc.returncode == 0, proc.stderr
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    assert [(i.name, i.type, i.shape) for i in sess.get_inputs()] == \
        [("x", "tensor(float)", ["batch", "x_dim1"]), ("alpha", "tensor(double)", [])]
    # Every op is elementwise: nothing fixes the width, which is declared dynamic too.
    for alpha, x in ((0.7, x), (1.9, x), (-0.35, torch.randn(2, 5))):
        np.testing.assert_allclose(sess.run(None, {"x": x.numpy(), "alpha": np.array(alpha)})[0],
                                   fn(x, alpha).numpy(), rtol=RTOL, atol=ATOL)


def test_static_exports_the_recorded_shapes(cli, tmp_path):
    fn = S.reshape_by_batch(S.TorchOps)
    sess = _export(cli, fn, torch.randn(2, 3, 4), tmp_path / "m.onnx", "--static")
    assert sess.get_inputs()[0].shape == [2, 3, 4]
    assert sess.get_outputs()[0].shape == [2, 12]
    with pytest.raises(Exception, match="Got invalid dimensions|INVALID_ARGUMENT"):
        sess.run(None, {"x": np.ones((5, 3, 4), np.float32)})


def test_dims_the_program_reads_are_dynamic_and_the_others_static(cli, tmp_path):
    lin = torch.nn.Linear(6, 3)

    def mlp(x):                    # never reads a shape: the batch is dynamic, the features not
        return lin(x).relu()

    def heads(x):                  # reads b, t, c: all three follow the input
        b, t, c = x.shape
        return x.reshape(b, t, 2, c // 2).sum(-1)

    with torch.no_grad():
        s1 = _export(cli, mlp, torch.randn(4, 6), tmp_path / "mlp.onnx")
        s2 = _export(cli, heads, torch.randn(4, 5, 6), tmp_path / "heads.onnx")
    assert s1.get_inputs()[0].shape == ["batch", 6]
    assert s2.get_inputs()[0].shape == ["batch", "x_dim1", "x_dim2"]
    x = np.random.default_rng(0).standard_normal((3, 7, 10)).astype(np.float32)
    np.testing.assert_allclose(s2.run(None, {"x": x})[0], x.reshape(3, 7, 2, 5).sum(-1), rtol=RTOL, atol=ATOL)


def test_a_square_weight_does_not_pin_a_sequence_dim(cli, tmp_path):
    # diffusers' Transformer2DModel: a 16x16 linear over [b, 8, 16] text states. The weight fixes
    # the features (16), not the length (8): only an elementwise op's constant operand broadcasts
    # against the result's axes. A constant added elementwise does pin the axis it spans.
    lin = torch.nn.Linear(16, 16)
    bias = torch.randn(8, 16)

    def proj(x):
        return lin(x).relu()

    def add_table(x):
        return lin(x) + bias

    with torch.no_grad():
        s1 = _export(cli, proj, torch.randn(2, 8, 16), tmp_path / "proj.onnx")
        s2 = _export(cli, add_table, torch.randn(2, 8, 16), tmp_path / "table.onnx")
        x = torch.randn(3, 5, 16)
        want = proj(x).numpy()
    assert s1.get_inputs()[0].shape == ["batch", "x_dim1", 16]
    assert s2.get_inputs()[0].shape == ["batch", 8, 16]
    np.testing.assert_allclose(s1.run(None, {"x": x.numpy()})[0], want, rtol=RTOL, atol=ATOL)


def test_outputs_are_named_by_the_returned_structure(cli, tmp_path):
    def fn(x):
        return {"logits": x * 2, "pair": (x + 1, x - 1)}

    sess = _export(cli, fn, torch.randn(2, 3), tmp_path / "m.onnx")
    assert [o.name for o in sess.get_outputs()] == ["logits", "pair.0", "pair.1"]


@settings(max_examples=int(os.environ.get("IVYTRACE_HYPOTHESIS_EXAMPLES", "25")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.sampled_from(sorted(S.STEPS)), min_size=1, max_size=4),
       shapes=st.lists(st.tuples(st.integers(1, 6), st.integers(1, 6)), min_size=3, max_size=3))
# Found by this test in CI: a chain of guard checks was fused by onnxruntime into its last node
# (dropping the others); then a Squeeze of the row the input lacks ran before the loop's guard.
@example(steps=["swap_last_two", "unrolled_rows", "branch_rows"], shapes=[(1, 2), (1, 3), (1, 1)])
@example(steps=["add_positions", "unrolled_rows", "branch_rows"], shapes=[(2, 2), (1, 1), (1, 1)])
def test_generated_programs_export_models_that_are_never_wrong(cli, tmp_path, steps, shapes):
    F = S.TorchOps
    fn = S._program(steps, F)
    x0 = S._data(F, shapes[0], 0)
    try:
        fn(x0)
    except Exception:  # noqa: BLE001 - a program that fails at its own shape
        hypothesis.assume(False)
    path = tmp_path / ("g" + "_".join(steps) + "_" + "x".join(map(str, shapes[0])) + ".onnx")
    sess = _export(cli, fn, x0, path)
    for i, shape in enumerate(shapes[1:], start=1):
        _outcome(sess, F, fn, S._data(F, shape, i))
