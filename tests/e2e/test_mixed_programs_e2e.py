"""Programs that mix PyTorch and NumPy (samples/mixed_programs.py): record -> `ivytrace optimize`
-> `ivytrace export --to plan` -> replay, compared with running the program itself.

Recorded inputs must replay exactly; fresh inputs within rtol 1e-4 / atol 1e-5.
"""
import json
import sys
import warnings

import numpy as np
import pytest
import torch

import ivytrace
from ivytrace.recorder.reader import read_trace
from ivytrace.recorder.recorder import Recorder
from ivytrace.region import bind_inputs, signature_of
from ivytrace.runtime.errors import GuardError
from ivytrace.runtime.plan import load_plan

import mixed_programs
from mixed_programs import PROGRAMS

RTOL, ATOL = 1e-4, 1e-5
CONVERSIONS = {"torch.Tensor.numpy", "torch.from_numpy", "numpy.asarray", "torch.as_tensor", "torch.tensor"}


def copied(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a.clone() for a in args)


def flat(out):
    return list(out) if isinstance(out, tuple) else [out]


def assert_same(got, want, exact):
    got, want = flat(got), flat(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert type(g) is type(w) or (isinstance(g, np.ndarray) and isinstance(w, np.ndarray)), (type(g), type(w))
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        if exact:
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


def record(fn, args, path):
    rec = Recorder(str(path), frameworks=("torch", "numpy"), argv=sys.argv).start()
    try:
        args, _ = rec.wrap_inputs(args, {})
        rid = rec.region_begin(fn.__name__, bind_inputs(signature_of(fn), args, {}), __file__, 0)
        out = fn(*args)
        rec.region_end(rid, out)
    finally:
        rec.stop()
    return out


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_mixed_program_replays_like_the_program(name, cli, tmp_path):
    fn, make_inputs = PROGRAMS[name]
    args = make_inputs(0)
    trace, graph, plan_path = tmp_path / "t.ivt", tmp_path / "g.ivg", tmp_path / "p.plan"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        recorded = record(fn, copied(args), trace)
    assert_same(recorded, fn(*copied(args)), exact=True)
    names = set(read_trace(str(trace)).op_names())
    assert names & CONVERSIONS, names
    assert any(n.startswith("numpy.") for n in names) and any(n.startswith("torch.") for n in names)

    cli("optimize", trace, "-o", graph, "--verify", check=True)
    cli("export", graph, "--to", "plan", "-o", plan_path, "--no-optimize", check=True)
    plan = load_plan(plan_path)
    assert set(plan.plan.framework.split(",")) == {"torch", "numpy"}
    assert_same(plan(*copied(args)), recorded, exact=True)
    for seed in (1, 2):
        fresh = make_inputs(seed)
        mine, theirs = copied(fresh), copied(fresh)
        assert_same(plan(*mine), fn(*theirs), exact=False)
        assert_same(mine, theirs, exact=False)   # inputs the program writes are written alike


def test_trace_graph_follows_the_data_through_the_conversions():
    fn = mixed_programs.roundtrip
    x = torch.randn(3, 4)
    traced = ivytrace.trace_graph(fn, args=(x,))
    torch.testing.assert_close(traced(x), fn(x), rtol=0, atol=0)
    fresh = torch.randn(5, 2)                  # another shape too
    torch.testing.assert_close(traced(fresh), fn(fresh), rtol=RTOL, atol=ATOL)


def test_inputs_of_both_frameworks_and_onnx_export(cli, tmp_path):
    def fn(x, w):
        a = x.numpy() @ w
        return torch.from_numpy(a).relu()

    x, w = torch.randn(3, 4), np.random.RandomState(0).rand(4, 2).astype(np.float32)
    traced = ivytrace.trace_graph(fn, args=(x, w))
    x2, w2 = torch.randn(6, 4), np.random.RandomState(1).rand(4, 2).astype(np.float32)
    torch.testing.assert_close(traced(x2, w2), fn(x2, w2), rtol=RTOL, atol=ATOL)
    traced.save(tmp_path / "t.ivt")
    # The conversions lower to Identity: the ONNX model computes what both frameworks did.
    cli("export", tmp_path / "t.ivt", "--to", "onnx", "-o", tmp_path / "t.onnx", check=True)
    import onnxruntime as ort
    sess = ort.InferenceSession(str(tmp_path / "t.onnx"), providers=["CPUExecutionProvider"])
    (got,) = sess.run(None, {"x": x2.numpy(), "w": w2})
    np.testing.assert_allclose(got, fn(x2, w2).numpy(), rtol=RTOL, atol=ATOL)


def test_a_value_that_went_through_numpy_is_a_guard(cli, tmp_path):
    fn, make_inputs = PROGRAMS["branch_through_numpy"]
    trace, plan_path = tmp_path / "t.ivt", tmp_path / "p.plan"
    record(fn, make_inputs(0), trace)
    guards = [read_trace(str(trace)).string(g.op) for g in read_trace(str(trace)).of_kind("guard")]
    assert guards == ["numpy.ndarray.__bool__"]
    cli("export", trace, "--to", "plan", "-o", plan_path, check=True)
    plan = load_plan(plan_path)
    x = make_inputs(3)[0]
    torch.testing.assert_close(plan(x), x * 2)
    with pytest.raises(GuardError, match="mixed_programs.py"):
        plan(-x)                                # the other branch: refused, not a wrong answer


def test_without_numpy_recorded_t_numpy_stays_a_guard(tmp_path):
    path = tmp_path / "t.ivt"
    with Recorder(path, frameworks=("torch",)):
        a = (torch.ones(3) * 2).numpy()
    assert type(a) is np.ndarray
    t = read_trace(str(path))
    assert [t.string(g.op) for g in t.of_kind("guard")] == ["torch.Tensor.numpy"]
    assert "torch.Tensor.numpy" not in t.op_names()


def test_record_optimize_export_replay_through_the_cli(cli, tmp_path):
    trace, plan_path, io = tmp_path / "mixed.ivt", tmp_path / "mixed.plan", tmp_path / "io.pt"
    proc = cli("record", "-o", trace, "--", sys.executable, mixed_programs.__file__, "roundtrip", "--save-io", io)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "roundtrip done\n"
    info = json.loads(cli("inspect", trace, "--json", check=True).stdout)
    assert {"torch", "numpy"} <= set(info["frameworks"])
    assert info["ops"]["torch.Tensor.numpy"] == 1 and info["ops"]["torch.from_numpy"] == 1
    cli("export", trace, "--to", "plan", "-o", plan_path, check=True)
    plan = load_plan(plan_path)
    saved = torch.load(io)
    torch.testing.assert_close(plan(*saved["inputs"]), saved["outputs"][0], rtol=0, atol=0)
    fresh = torch.randn(7, 3)
    torch.testing.assert_close(plan(fresh), mixed_programs.roundtrip(fresh), rtol=RTOL, atol=ATOL)
