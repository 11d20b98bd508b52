"""Real PyTorch programs (samples/torch_programs.py): record -> `ivytrace optimize` -> `ivytrace
export --to plan` -> plan replay, compared with running the program itself.

Recorded inputs must replay exactly; fresh inputs within rtol 1e-4 / atol 1e-5.
"""
import copy
import re
import sys
import warnings

import pytest
import torch

from ivytrace.recorder.recorder import Recorder
from ivytrace.recorder.torch_recorder import SpecializationWarning
from ivytrace.region import bind_inputs, signature_of
from ivytrace.runtime.plan import load_plan

from torch_programs import PROGRAMS, branchy, branchy_inputs, random_draws, random_inputs, random_ops

RTOL, ATOL = 1e-4, 1e-5


def record(fn, args, path):
    """Runs fn(*args) under the recorder as one region; returns its output."""
    rec = Recorder(str(path), warn_guards=True, argv=sys.argv)
    rec.start()
    try:
        rid = rec.region_begin(fn.__name__, bind_inputs(signature_of(fn), args, {}), __file__, 0)
        out = fn(*args)
        rec.region_end(rid, out)
    finally:
        rec.stop()
    return out


def build_plan(cli, fn, args, d, *export_flags):
    """Record, optimize (with IR verification), export the optimized graph as a plan, load it."""
    trace, graph, plan = d / "t.ivytrace", d / "g.ivygraph", d / "p.ivyplan"
    out = record(fn, copy.deepcopy(args), trace)
    cli("optimize", trace, "-o", graph, "--verify", *export_flags, check=True)
    cli("export", graph, "--to", "plan", "-o", plan, "--no-optimize", check=True)
    return load_plan(plan), out


def flat(out):
    if isinstance(out, torch.Tensor):
        return [out]
    return [t for o in out for t in flat(o)]


def assert_same(got, want, exact):
    got, want = flat(got), flat(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        if exact:
            assert torch.equal(g, w), (g, w)
        else:
            torch.testing.assert_close(g, w, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_replays_like_torch(name, cli, tmp_path):
    fn, make_inputs = PROGRAMS[name]
    args = make_inputs(0)
    plan, recorded_out = build_plan(cli, fn, args, tmp_path)
    # The recording ran the program for real: its output is the program's.
    assert_same(recorded_out, fn(*copy.deepcopy(args)), exact=True)
    assert_same(plan(*copy.deepcopy(args)), recorded_out, exact=True)
    for seed in (1, 2):
        fresh = make_inputs(seed)
        assert_same(plan(*copy.deepcopy(fresh)), fn(*copy.deepcopy(fresh)), exact=False)


def test_writes_through_views_reach_the_base(cli, tmp_path):
    """The view program's outputs depend on every write: a graph that dropped one would differ."""
    fn, make_inputs = PROGRAMS["views"]
    x, idx = make_inputs(3)
    y, w, z, s = fn(x.clone(), idx)
    # The program's own semantics (later writes win): rows 3 and 0 from y[idx] = -1.5, then
    # column 1 from x; v (made before every write) sees them all.
    assert y[0, 0] == -1.5 and y[3, 3] == -1.5 and torch.equal(y[:, 1], x[:, 2]) and s == y.sum()
    plan, _ = build_plan(cli, fn, (x, idx), tmp_path)
    got = plan(x.clone(), idx)
    assert_same(got, (y, w, z, s), exact=True)
    # Against a graph that ignores the writes through views, the result differs.
    assert not torch.equal(got[0], x * 2 + 1)


def test_random_ops_are_generators_with_recorded_values(cli, tmp_path):
    from ivytrace.schema import load_schemas
    schemas = load_schemas()
    for op in ("torch.rand", "torch.randn", "torch.randint", "torch.Tensor.normal_", "torch.bernoulli",
               "torch.multinomial", "torch.nn.functional.dropout"):
        assert schemas.is_random(op), op
    x = random_inputs(0)
    # Baked generators: the plan returns the recorded random draws, whatever the seed. The
    # draws read no input data, so the program reseeded as when recorded makes the same draws.
    torch.manual_seed(42)
    plan, out = build_plan(cli, random_draws, x, tmp_path, "--bake-generators")
    torch.manual_seed(1234)
    assert_same(plan(*x), out, exact=True)
    fresh = random_inputs(4)
    torch.manual_seed(42)
    want = random_draws(*fresh)
    torch.manual_seed(99)
    assert_same(plan(*fresh), want, exact=False)
    # Live generators: replay draws again; seeded like the original, it draws the same values.
    live_dir = tmp_path / "live"
    live_dir.mkdir()
    torch.manual_seed(7)
    plan_live, out_live = build_plan(cli, random_ops, x, live_dir)
    torch.manual_seed(7)
    assert_same(plan_live(*x), out_live, exact=True)
    fresh = random_inputs(5)
    torch.manual_seed(8)
    want = random_ops(*fresh)
    torch.manual_seed(8)
    assert_same(plan_live(*fresh), want, exact=False)


def test_guard_warns_with_line_and_replay_checks_it(cli, tmp_path):
    x = branchy_inputs(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan, out = build_plan(cli, branchy, x, tmp_path)
    msgs = [str(w.message) for w in caught if issubclass(w.category, SpecializationWarning)]
    assert msgs, "branching on a tensor's value must warn"
    assert re.search(r"torch_programs\.py:\d+", msgs[0]), msgs[0]
    assert_same(plan(*x), out, exact=True)
    assert_same(plan(torch.full((3,), 5.0)), branchy(torch.full((3,), 5.0)), exact=True)
    with pytest.raises(Exception) as e:
        plan(-torch.ones(3))                   # takes the other branch
    assert "Guard" in type(e.value).__name__
    assert "torch_programs.py" in str(e.value)


def _write_through_diagonal(x):
    y = x * 2
    y.diagonal().add_(1)               # a view op whose writes the builder cannot carry back
    return y + 1


def test_unsupported_write_through_a_view_names_the_view_op_and_line(cli, tmp_path):
    trace = tmp_path / "t.ivytrace"
    record(_write_through_diagonal, (torch.randn(3, 3),), trace)
    proc = cli("optimize", trace, "-o", tmp_path / "g.ivygraph")
    assert proc.returncode != 0
    err = proc.stderr
    assert "torch.Tensor.diagonal" in err, err
    line = _write_through_diagonal.__code__.co_firstlineno + 2
    assert f"test_torch_programs_e2e.py:{line}" in err, err
    assert "torch.Tensor.add_" in err, err


def _write_through_view_chain(x):
    y = torch.zeros(3, 4, 5)
    a = y.permute(2, 0, 1)[1:4]           # permute, then a slice
    a.unsqueeze(0)[0, :, 2].copy_(x)      # unsqueeze, then an int index; copy_ writes x in
    b = y.transpose(0, 2).flatten(0, 1)   # made after the write: sees it
    return y * 1, b.sum(0)


def test_write_through_a_chain_of_views_replays(cli, tmp_path):
    x = torch.randn(3, 4)
    plan, out = build_plan(cli, _write_through_view_chain, (x,), tmp_path)
    assert out[0].abs().sum() > 0
    assert_same(plan(x), out, exact=True)
    fresh = torch.randn(3, 4)
    assert_same(plan(fresh), _write_through_view_chain(fresh), exact=False)


def _write_through_split_views(x):
    y = x * 2
    y[1:3].zero_()                     # y's next version comes from a write back...
    y.view(-1)[::3].add_(1)            # ...and a view of it is written through again
    p, q = y.chunk(2, dim=1)
    q.add_(x[:, :2])
    r = y.unbind(0)
    r[2].mul_(3)
    s1, s2, s3 = y.split([1, 2, 1])
    s2.sub_(0.5)
    return y * 1, p + 0, q + 0, r[0] + 0


def test_writes_through_split_chunk_unbind_views_replay(cli, tmp_path):
    x = torch.randn(4, 4)
    plan, out = build_plan(cli, _write_through_split_views, (x,), tmp_path)
    assert_same(plan(x), out, exact=True)
    fresh = torch.randn(4, 4)
    assert_same(plan(fresh), _write_through_split_views(fresh), exact=False)


def _read_stale_tensor_split_view(x):
    y = x * 2
    p, q = y.tensor_split(2)
    y.add_(1)                          # q must see this, but tensor_split is not re-derivable
    return q * 1


def test_reading_an_underivable_view_after_a_write_names_the_view_op(cli, tmp_path):
    trace = tmp_path / "t.ivytrace"
    record(_read_stale_tensor_split_view, (torch.randn(4, 4),), trace)
    proc = cli("export", trace, "--to", "plan", "-o", tmp_path / "p.ivyplan")
    assert proc.returncode != 0
    line = _read_stale_tensor_split_view.__code__.co_firstlineno + 2
    assert f"'torch.Tensor.tensor_split' at {__file__}:{line}" in proc.stderr, proc.stderr
    assert not (tmp_path / "p.ivyplan").exists()


def _write_through_reshape_and_transpose(x):
    y = x * 2
    y.view(-1).add_(1)                 # written back with a Reshape
    y.t().mul_(x.t())                  # written back with a Transpose
    y.view(1, 9).sub_(0.25)
    return y + 1


def test_onnx_export_sees_writes_through_reshape_and_transpose_views(cli, tmp_path):
    import onnxruntime as ort
    x = torch.randn(3, 3)
    trace = tmp_path / "t.ivytrace"
    record(_write_through_reshape_and_transpose, (x,), trace)
    onnx_path = tmp_path / "m.onnx"
    cli("export", trace, "--to", "onnx", "-o", onnx_path, "--static-batch", check=True)
    sess = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    for inp in (x, torch.randn(3, 3)):
        (got,) = sess.run(None, {sess.get_inputs()[0].name: inp.numpy()})
        want = _write_through_reshape_and_transpose(inp.clone())
        torch.testing.assert_close(torch.from_numpy(got), want, rtol=RTOL, atol=ATOL)


def _update_state_through_views(x, state):
    state[0] += x.sum()                # augmented assignment on an indexed view of an input
    state.t()[1:, 0] = x[:2]           # write through t() then a slice
    return state * 1


def test_writes_through_views_of_an_input_reach_the_callers_tensor(cli, tmp_path):
    x = torch.randn(3)
    plan, out = build_plan(cli, _update_state_through_views, (x, torch.zeros(3, 3)), tmp_path)
    for inp in (x, torch.randn(3)):
        mine, theirs = torch.zeros(3, 3), torch.zeros(3, 3)
        got = plan(inp, mine)
        want = _update_state_through_views(inp, theirs)
        assert torch.equal(got, want)
        assert torch.equal(mine, theirs), "the caller's tensor must see every write, as in the program"


def _write_through_detach(x):
    y = x * 2
    d = y.detach()                     # shares y's memory and version counter, has no _base
    d.add_(1)
    return y * 1


def test_write_through_detach_is_a_write_to_the_base_not_a_constant(cli, tmp_path):
    x = torch.randn(3)
    plan, out = build_plan(cli, _write_through_detach, (x,), tmp_path)
    assert_same(plan(x), out, exact=True)
    fresh = torch.randn(3)
    assert_same(plan(fresh), _write_through_detach(fresh), exact=False)


class _History(torch.nn.Module):
    """Module state updated through indexing views (a running history buffer)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("hist", torch.zeros(2, 3))

    def forward(self, x):
        self.hist[0] += x
        self.hist[1] = x * 2
        return self.hist.sum(0)


def test_buffer_written_through_views_keeps_state_like_the_module(cli, tmp_path):
    traced, reference = _History(), _History()
    trace = tmp_path / "t.ivytrace"
    rec = Recorder(str(trace), warn_guards=True, argv=sys.argv, buffer_bytes=1 << 20)
    rec.start()
    try:
        rec.add_root_module(traced)
        x0 = torch.ones(3)
        rid = rec.region_begin("forward", bind_inputs(signature_of(traced.forward), (x0,), {}), __file__, 0)
        rec.region_end(rid, traced(x0))
    finally:
        rec.stop()
    cli("export", trace, "--to", "plan", "-o", tmp_path / "p.ivyplan", check=True)
    plan = load_plan(tmp_path / "p.ivyplan")
    # The plan starts from the buffer as it was before the recorded call (the value recorded
    # for version 0, even though the call wrote the buffer in place right after reading it).
    for seed in range(3):
        x = torch.randn(3, generator=torch.Generator().manual_seed(seed))
        assert torch.equal(plan(x), reference(x))
