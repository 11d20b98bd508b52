"""Generated programs (tests/python/program_gen.py) traced with trace_graph and replayed: a result
either matches the original program or raises a clear ivytrace error, never a wrong answer.

(a) At the traced inputs a replay equals eager (floats within rtol 1e-5/atol 1e-6, ints, bools and
    Python numbers exactly), and writes the input as eager does.
(b) At other shapes and other data (value-dependent branches flip) a replay equals eager or
    raises a GuardError; no other exception.
(d) State: a traced module's buffers and a stateful object's attributes after several replays
    equal eager's after as many calls.

IVYTRACE_HYPOTHESIS_EXAMPLES sets the number of examples per property (CI default below); runs
are derandomized, so CI sees the same programs every time.
"""
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import example, given, settings, strategies as st  # noqa: E402

import ivytrace  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import program_gen as G  # noqa: E402

SETTINGS = G.hypothesis_settings(30)


def programs(frameworks=("torch", "numpy"), max_steps=6):
    def for_framework(fw):
        return st.tuples(st.just(fw), st.lists(st.tuples(st.sampled_from(G.names_for(fw)), st.integers(0, 7)),
                                               min_size=1, max_size=max_steps))
    return st.sampled_from(list(frameworks)).flatmap(for_framework)


dims = st.integers(1, 5)
shapes = st.one_of(st.tuples(dims, dims), st.tuples(dims, dims, dims), st.tuples(st.integers(0, 3), dims))
kinds = st.sampled_from(["normal", "small_ints"])


def _trace_or_skip(fn, F, x0):
    return G.trace_or_skip(fn, F, x0)


@settings(**SETTINGS)
@given(program=programs(), shape=shapes, kind=kinds)
def test_replay_at_the_traced_input_equals_eager(program, shape, kind):
    framework, steps = program
    F = G.FRAMEWORKS[framework]
    fn = G.make_program(steps, F)
    x0 = G.data(F, shape, 0, kind)
    g = _trace_or_skip(fn, F, x0)
    assert G.replay_outcome(g, fn, F, x0) == "match", f"{steps}: a guard failed at the traced input"


@settings(**SETTINGS)
@given(program=programs(), shape=shapes, kind=kinds,
       others=st.lists(st.tuples(st.one_of(shapes, st.tuples(dims)), kinds), min_size=2, max_size=3))
def test_replay_at_other_inputs_equals_eager_or_raises_a_guard(program, shape, kind, others):
    framework, steps = program
    F = G.FRAMEWORKS[framework]
    fn = G.make_program(steps, F)
    g = _trace_or_skip(fn, F, G.data(F, shape, 0, kind))
    # the traced shape with other data first: value-dependent branches flip
    for i, (s, k) in enumerate([(shape, kind)] + others, start=1):
        hypothesis.event(G.replay_outcome(g, fn, F, G.data(F, s, i, k)))


# -- minimal programs of the bugs the generator found (each failed before its fix) ----------------------
def _replays(fn, x0, inputs):
    """For each input: 'guard', or asserts the replay (result and the written input) equals eager."""
    g = ivytrace.trace_graph(fn, args=(x0.clone(),))
    outcomes = []
    for x in inputs:
        outcomes.append(G.replay_outcome(g, fn, G.TorchF, x))
    return outcomes


def test_out_into_a_view_of_an_input_then_a_mask_write():
    # torch.add(out=) wrote its first argument's box back (both views share the version counter),
    # and the plan then read the input's last version from the input's own slot, not from the
    # copy the mask write wrote: the replay returned the input unchanged.
    def fn(x):
        torch.add(x[..., :1], 0, out=x[..., -1:])
        x[x > 0] = -0.5
        return x
    x0 = torch.tensor([[1., -2., 0.], [2., 3., -1.]])
    assert _replays(fn, x0, [x0, torch.tensor([[-1., 2., 1.], [2., -3., 1.]]), torch.randn(4, 5)]) == ["match"] * 3


def test_a_write_through_a_flat_view_follows_the_shape():
    # The write back reshaped to the recorded shape: another size crashed inside the replay, or
    # (same number of elements) came back in the recorded shape.
    def fn(x):
        x = x.clone()
        v = x.view(-1)
        v[0] = 5.0
        return x

    def in_place(x):
        x.view(-1)[-1] = 7.0
        return x * 2
    for f in (fn, in_place):
        assert _replays(f, torch.randn(3, 2), [torch.randn(2, 3), torch.randn(5, 4), torch.randn(1, 1)]) == ["match"] * 3


def test_a_chunk_written_or_read_after_a_write_is_right_or_guarded():
    # chunk's write back (and re-derivation) used the recorded offsets: at 5 rows the second
    # half is rows 3:5, not 2:4 (a wrong answer), and at other sizes the replay crashed.
    def write(x):
        a, b = x.chunk(2, 0)
        b.mul_(2)
        return x

    def read(x):
        a, b = x.chunk(2, 0)
        x.add_(1)
        return b * 1
    for f in (write, read):
        assert _replays(f, torch.randn(4, 2), [torch.randn(4, 2), torch.randn(5, 2), torch.randn(6, 3)]) == \
            ["match", "guard", "guard"]


def test_a_negative_narrow_written_back_counts_from_the_end():
    def fn(x):
        x.narrow(0, -2, 1).mul_(3)
        return x
    assert _replays(fn, torch.randn(4, 2), [torch.randn(5, 2), torch.randn(2, 3)]) == ["match"] * 2


def test_numpy_a_shape_number_returned_as_is():
    # The NumPy recorder's result encoder met the stand-in of `n // 3` and read its array: an
    # AttributeError while tracing.
    def fn(x):
        n = -(x.shape[0] * 6)
        return x * (n // 3), n // 3, n % 4
    g = ivytrace.trace_graph(fn, args=(np.ones((4, 1), np.float32),))
    for shape in [(4, 1), (5, 2), (1, 3)]:
        assert G.replay_outcome(g, fn, G.NumpyF, G.data(G.NumpyF, shape, 1)) == "match"


def test_numpy_an_augmented_assignment_to_a_scalar_rebinds_it():
    # x.sum() is a NumPy scalar; while recording it is a 0-d array, and `y += 1` was recorded as
    # an in-place add (out=y), which the replay, where NumPy returns a scalar, failed to run.
    def fn(x):
        y = x.sum() * 0.1
        y += 1
        z = x[0, 0]
        z *= 3
        w = z.copy()
        w -= 1
        return y, z, w
    g = ivytrace.trace_graph(fn, args=(np.ones((3, 4), np.float32),))
    for shape in [(3, 4), (2, 2)]:
        assert G.replay_outcome(g, fn, G.NumpyF, G.data(G.NumpyF, shape, 1)) == "match"


def test_a_reshape_that_was_the_identity_when_traced_is_kept():
    # simplify forwarded a reshape/flatten whose recorded result had its input's shape; on an
    # input of another shape (or rank: a program that reads no shape does not guard it) the
    # replay returned the input's shape.
    progs = [(lambda x: x.flatten() + 1, torch.ones(2), torch.randn(5, 5)),
             (lambda x: x.reshape(2, 3) * 2, torch.ones(2, 3), torch.randn(3, 2)),
             (lambda x: x.reshape(-1) - 1, np.ones(2, np.float32), np.ones((2, 2), np.float32))]
    for fn, x0, x in progs:
        F = G.TorchF if isinstance(x0, torch.Tensor) else G.NumpyF
        g = ivytrace.trace_graph(fn, args=(x0,))
        assert G.replay_outcome(g, fn, F, x) == "match"


def test_a_reshape_to_its_own_symbolic_sizes_is_still_removed():
    def fn(x):
        b, t, c = x.shape
        return x.view(b, t, c).relu()
    g = ivytrace.trace_graph(fn, args=(torch.randn(2, 3, 4),))
    assert "torch.Tensor.view" not in {s.function for s in g.plan.plan.steps}
    assert G.replay_outcome(g, fn, G.TorchF, torch.randn(3, 1, 5)) == "match"


# -- (d) state: a module's buffers updated in forward ------------------------------------------------
class _Stateful(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn
        self.register_buffer("running", torch.zeros(()))
        self.register_buffer("calls", torch.zeros((), dtype=torch.int64))

    def forward(self, x):
        y = self.fn(x)[0]
        self.calls += 1
        if y.numel():
            self.running.mul_(0.9).add_(y.float().mean() * 0.1)
        return y + self.running


@settings(**SETTINGS)
@given(program=programs(frameworks=("torch",), max_steps=4), shape=shapes, kind=kinds)
def test_module_buffers_written_in_forward_replay_like_eager(program, shape, kind):
    _, steps = program
    fn = G.make_program(steps, G.TorchF)
    x0 = G.data(G.TorchF, shape, 0, kind)
    traced, plain = _Stateful(fn).train(), _Stateful(fn).train()
    if G.eager(traced, G.TorchF, x0) is None:
        hypothesis.assume(False)
    traced.load_state_dict(plain.state_dict())
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = ivytrace.trace_graph(traced, args=(x0.clone(),))
    except Exception as e:  # noqa: BLE001 - the message decides
        assert G.is_clear_refusal(e), f"{type(e).__name__}: {e}"
        hypothesis.assume(False)
    traced.load_state_dict(plain.state_dict())   # undo the traced call's own update
    for i in range(3):
        x = G.data(G.TorchF, shape, i + 1, kind)
        try:
            got = g(x.clone())
        except ivytrace.GuardError:
            return
        want = plain(x.clone())
        assert G.same(G.TorchF, got, want) is None, f"{steps}: call {i}"
        assert int(traced.calls) == int(plain.calls) == i + 1
        assert G.same(G.TorchF, traced.running, plain.running) is None, f"{steps}: running after call {i}"


@pytest.mark.parametrize("framework", ["torch", "numpy"])
def test_seeding_inside_the_traced_function_is_replayed(framework):
    # torch.manual_seed / np.random.seed ran unrecorded: the replay drew from the global
    # generator's current state instead of re-seeding (another answer on every call, no warning).
    # They are recorded as ops with a side effect, kept by dce in order with the draws.
    def torch_fn(x):
        torch.manual_seed(3)
        a = torch.rand(x.shape)
        torch.manual_seed(x.shape[0])   # a seed read from a shape follows the input
        return x + a + torch.randn(x.shape)

    def numpy_fn(x):
        np.random.seed(3)
        a = np.random.rand(*x.shape).astype(np.float32)
        np.random.seed(x.shape[0])
        return x + a + np.random.randn(*x.shape).astype(np.float32)
    fn, F = (torch_fn, G.TorchF) if framework == "torch" else (numpy_fn, G.NumpyF)
    x0 = G.data(F, (2, 3), 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = ivytrace.trace_graph(fn, args=(x0,))
    for shape in [(2, 3), (2, 3), (4, 3), (1, 5)]:
        assert G.replay_outcome(g, fn, F, G.data(F, shape, 1)) == "match"
    # The replay seeds the global generator as the program does: the draws after it agree.
    g(G.data(F, (2, 3), 1))
    after_replay = F.to_numpy(torch.rand(3) if framework == "torch" else np.random.rand(3))
    fn(G.data(F, (2, 3), 1))
    after_eager = F.to_numpy(torch.rand(3) if framework == "torch" else np.random.rand(3))
    assert np.array_equal(after_replay, after_eager)


def test_seeding_is_recorded_when_torch_manual_seed_is_wrapped(monkeypatch):
    # torch.compile (torch._dynamo) replaces torch.manual_seed by a wrapper whose own name is
    # torch.random.manual_seed, which schemas/ does not list: the call was recorded under that
    # name, dropped by dce, and the replay drew unseeded again.
    orig = torch.manual_seed

    def manual_seed(seed):
        return orig(seed)
    manual_seed.__module__ = "torch.random"
    monkeypatch.setattr(torch, "manual_seed", manual_seed)

    def fn(x):
        torch.manual_seed(11)
        return x + torch.rand(x.shape)
    g = ivytrace.trace_graph(fn, args=(torch.zeros(2, 2),))
    assert "torch.manual_seed" in [s.function for s in g.plan.plan.steps]
    assert G.replay_outcome(g, fn, G.TorchF, torch.ones(3, 2)) == "match"


@pytest.mark.parametrize("framework", ["torch", "numpy"])
def test_a_seed_whose_draws_are_dead_is_still_replayed(framework):
    # The seeding call has an effect outside the graph's outputs (the global generator): dce
    # keeps it even when nothing the function returns was drawn after it.
    def fn(x):
        if framework == "torch":
            torch.manual_seed(7)
        else:
            np.random.seed(7)
        return x * 2
    F = G.TorchF if framework == "torch" else G.NumpyF
    g = ivytrace.trace_graph(fn, args=(G.data(F, (2, 2), 0),))
    assert any(s.function in ("torch.manual_seed", "numpy.random.seed") for s in g.plan.plan.steps)
    torch.manual_seed(0)
    np.random.seed(0)
    g(G.data(F, (2, 2), 1))
    want = torch.rand(2) if framework == "torch" else torch.from_numpy(np.random.rand(2))
    if framework == "torch":
        torch.manual_seed(7)
        assert torch.equal(want, torch.rand(2))
    else:
        np.random.seed(7)
        assert np.array_equal(want.numpy(), np.random.rand(2))


@pytest.mark.parametrize("framework", ["torch", "numpy"])
def test_another_input_dtype_is_a_guard_failure_or_eager_dtype(framework):
    if framework == "torch":
        def fn(x):
            return x.float() * 2, x.sum()
        x32, x64 = torch.ones(3), torch.ones(3, dtype=torch.float64)
    else:
        def fn(x):
            return x.astype(np.float32) * 2, x.sum()
        x32, x64 = np.ones(3, np.float32), np.ones(3)
    F = G.TorchF if framework == "torch" else G.NumpyF
    g = ivytrace.trace_graph(fn, args=(x32,))
    assert G.replay_outcome(g, fn, F, x32) == "match"
    if framework == "numpy":
        # astype copies (another array), so the graph tells x from the cast and keeps the cast.
        assert G.replay_outcome(g, fn, F, x64) == "match"
        return
    # x.float() of a float32 x returned x itself, so the graph cannot tell later reads of x from
    # reads of the cast: its dtype is a guard.
    with pytest.raises(ivytrace.GuardError, match="torch.Tensor.dtype gave 'float32'; on these inputs it gives 'float64'.*returned its input"):
        g(x64)
    again = ivytrace.trace_graph(fn, args=(x32,), retrace=True)
    with pytest.warns(ivytrace.RetraceWarning):
        assert G.same(F, again(x64), fn(x64)) is None
    assert again.traces == 2
    assert G.same(F, again(x32), fn(x32)) is None


@pytest.mark.parametrize("cast", [
    lambda x, t: x.to(torch.float32, copy=True),     # another tensor: the cast is kept, no guard
    lambda x, t: x.type_as(t),                       # x itself when traced: both dtypes guarded
    lambda x, t: x.to(t),
    lambda x, t: x.to(dtype=t.dtype),
])
def test_a_cast_that_was_the_identity_when_traced_follows_or_guards_other_dtypes(cast):
    def fn(x, t):
        y = cast(x, t)
        return y * 2, x.sum() + t.sum()
    f32 = torch.ones(3), torch.ones(2)
    g = ivytrace.trace_graph(fn, args=f32)
    outcomes = []
    for args in [(torch.ones(3) * 3, torch.ones(2)), (torch.ones(3, dtype=torch.float64), torch.ones(2)),
                 (torch.ones(3), torch.ones(2, dtype=torch.float64)),
                 (torch.arange(3), torch.ones(2, dtype=torch.float16))]:
        try:
            got = g(*args)
        except ivytrace.GuardError:
            outcomes.append("guard")
            continue
        assert G.same(G.TorchF, got, fn(*args)) is None, args
        outcomes.append("match")
    assert outcomes[0] == "match"


@pytest.mark.parametrize("framework", ["torch", "numpy"])
def test_a_dtype_the_program_read_is_guarded(framework):
    # A Python value taken from a dtype (`dtype=x.dtype`, `if x.is_floating_point()`) is a guard on
    # the inputs' dtypes; a parameter's dtype (fixed) is not.
    if framework == "torch":
        w = torch.ones(3, dtype=torch.float16)

        def fn(x):
            out = torch.zeros(x.shape, dtype=x.dtype) + w.dtype.itemsize
            return out + x * 2 if x.is_floating_point() else out

        f32, f64, i64 = torch.ones(3), torch.ones(3, dtype=torch.float64), torch.ones(3, dtype=torch.int64)
    else:
        def fn(x):
            out = np.zeros(x.shape, dtype=x.dtype)
            out[:] = x * 2
            return out

        f32, f64, i64 = np.ones(3, np.float32), np.ones(3), np.ones(3, np.int64)
    F = G.TorchF if framework == "torch" else G.NumpyF
    g = ivytrace.trace_graph(fn, args=(f32,))
    assert G.replay_outcome(g, fn, F, f32 * 3) == "match"
    for x in (f64, i64):
        with pytest.raises(ivytrace.GuardError, match="dtype gave 'float32'"):
            g(x)
    lazy = ivytrace.trace_graph(fn)
    with pytest.warns(ivytrace.RetraceWarning):
        for x in (f32, f64, i64, f32):
            assert G.same(F, lazy(x), fn(x)) is None


@pytest.mark.parametrize("framework", ["torch", "numpy"])
def test_a_view_read_only_after_a_write_through_a_sibling_view(framework):
    # NumPy lists u's new version as an output of the write; nothing read u's earlier version, so
    # dce dropped `x[0]` and the plan could not be loaded (PlanError "reads slot 1").
    swap = torch.swapaxes if framework == "torch" else np.swapaxes

    def fn(x):
        u = x[0]
        t = swap(x, 0, 1)
        t += 1
        return u * 2

    F = G.TorchF if framework == "torch" else G.NumpyF
    g = ivytrace.trace_graph(fn, args=(G.data(F, (2, 3, 4), 0),))
    for shape in [(2, 3, 4), (4, 3, 4), (3, 1, 2)]:
        assert G.replay_outcome(g, fn, F, G.data(F, shape, 1)) == "match"


def _view_or_copy_programs(framework):
    swap = np.swapaxes if framework == "numpy" else torch.swapaxes

    def ravel_then_write(x):
        v = swap(x, 0, 1).ravel() if framework == "numpy" else swap(x, 0, 1).reshape(-1)
        v[0] = 5.0
        return x * 1

    def reshape_then_write_input(x):
        v = swap(x, 0, 1).reshape(-1)
        x[0] += 1
        return v * 1, x * 1

    def contiguous_then_write(x):
        t = swap(x, 0, 1)
        c = np.ascontiguousarray(t) if framework == "numpy" else t.contiguous()
        c += 1
        return x * 1

    return [ravel_then_write, reshape_then_write_input, contiguous_then_write]


@pytest.mark.parametrize("framework", ["torch", "numpy"])
@pytest.mark.parametrize("which", range(3))
def test_a_write_after_a_view_or_copy_call_follows_eager_or_guards(framework, which):
    # reshape/ravel/contiguous return a view or a copy as the memory layout decides: traced at
    # (5, 2, 4) the swapped ravel copies, at (5, 1, 5) it is a view and eager's write reaches x.
    # With a write after it, the decision is guarded (ivytrace.sym.shares_memory).
    fn = _view_or_copy_programs(framework)[which]
    F = G.TorchF if framework == "torch" else G.NumpyF
    g = ivytrace.trace_graph(fn, args=(G.data(F, (5, 2, 4), 0),))
    outcomes = [G.replay_outcome(g, fn, F, G.data(F, shape, 1)) for shape in [(5, 2, 4), (3, 2, 2), (5, 1, 5)]]
    assert outcomes[:2] == ["match", "match"]
    assert outcomes[2] in ("match", "guard")
    if which == 0:
        assert outcomes[2] == "guard"
    assert any("shares_memory" in s.function for s in g.plan.plan.steps)
    # Only a write makes the decision matter: a program that reads the result is not guarded.
    swap = np.swapaxes if framework == "numpy" else torch.swapaxes
    h = ivytrace.trace_graph(lambda x: swap(x, 0, 1).reshape(-1) * 2, args=(G.data(F, (5, 2, 4), 0),))
    assert not any("shares_memory" in s.function for s in h.plan.plan.steps)


@pytest.mark.parametrize("framework", ["torch", "numpy"])
def test_a_write_to_a_copy_of_a_temporary_follows_eager_or_guards(framework):
    # BEiT's relative position index: a permuted temporary made contiguous (a copy), then written.
    # Nothing reads the temporary afterwards, but simplify forwards `x * 1` to x, so where
    # contiguous() is a view (a dim of 1) the write would reach the caller's x: the guard stays.
    swap = np.swapaxes if framework == "numpy" else torch.swapaxes

    def fn(x):
        t = swap(x * 1, 0, 1)
        c = np.ascontiguousarray(t) if framework == "numpy" else t.contiguous()
        c[0] += 1
        return c * 2

    F = G.TorchF if framework == "torch" else G.NumpyF
    g = ivytrace.trace_graph(fn, args=(G.data(F, (5, 2, 4), 0),))
    assert [gd for gd in g.plan.plan.guards if "shares_memory" in gd.expr]
    assert G.replay_outcome(g, fn, F, G.data(F, (4, 2, 3), 1)) == "match"
    for shape in [(3, 1, 5), (1, 3, 2)]:
        assert G.replay_outcome(g, fn, F, G.data(F, shape, 1)) in ("match", "guard")


@pytest.mark.parametrize("framework", ["torch", "numpy"])
def test_a_write_to_a_copy_of_a_temporary_only_it_reads_is_not_guarded(framework):
    # BEiT: `(a - b).permute(1, 2, 0).contiguous()`, then written. The permuted difference is fresh
    # memory nothing else reads, so a write through a view of it or through a copy gives the same
    # values: no guard (the plan and the ONNX export hold it), and replays match at any shape.
    swap = np.swapaxes if framework == "numpy" else torch.swapaxes

    def fn(x):
        t = swap(x * 2 - 1, 0, 1)
        c = np.ascontiguousarray(t) if framework == "numpy" else t.contiguous()
        c[0] += 1
        return c * 2

    F = G.TorchF if framework == "torch" else G.NumpyF
    g = ivytrace.trace_graph(fn, args=(G.data(F, (5, 2, 4), 0),))
    assert not [gd for gd in g.plan.plan.guards if "shares_memory" in gd.expr]
    for shape in [(5, 2, 4), (3, 1, 5), (1, 3, 2)]:
        assert G.replay_outcome(g, fn, F, G.data(F, shape, 1)) == "match"
