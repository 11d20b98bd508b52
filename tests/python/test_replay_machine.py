"""ivytrace._replay, the plan machine: long plans run their steps in C++ instead of compiled Python.

The machine must be codegen's twin: the same calls in the same order, the same results, the same
guards, the same load-time refusals with the same messages. Each test runs both (`machine=True` and
`machine=False`) on recorded programs and hand-built plans and compares them.
"""
from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

import ivytrace
from ivytrace.runtime import codegen
from ivytrace.runtime.plan import load_plan, write_plan_file
from ivytrace.v1 import common_pb2, plan_pb2

pytestmark = pytest.mark.skipif(codegen._replay is None, reason="ivytrace._replay is not built")

Arg = common_pb2.Arg


def slot(s):
    return Arg(tensor=common_pb2.TensorRef(value=s))


def tup(*items):
    return Arg(tuple=common_pb2.ArgList(items=list(items)))


def both(path, **kw):
    return load_plan(path, machine=False, **kw), load_plan(path, machine=True, **kw)


def same(a, b):
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    return a == b


def outcome(f, *args):
    try:
        return "ok", f(*args)
    except Exception as e:  # noqa: BLE001 - compared between the two engines
        return type(e).__name__, str(e)


# -- recorded programs --------------------------------------------------------------------------
def t_split_cat(x):
    a, b = torch.split(x, [1, x.shape[0] - 1])
    return torch.cat([b, a * 2], dim=0)


def t_chunk_per_row(x):
    parts = x.chunk(x.shape[0])   # as many values as rows: a count guard
    out = parts[0]
    for p in parts[1:]:
        out = out + p
    return out


def t_max_dim(x):
    v, i = x.max(dim=1)
    return v + i, torch.topk(x, 2, dim=-1).indices


def t_setitem_inplace(x):
    y = x.clone()
    y[:, 0] = 0
    y[y > 1] = 1.0
    y.add_(1).mul_(2)
    return y


def t_kwargs_reductions(x):
    return x.sum(dim=-1, keepdim=True) / x.norm(p=2, dim=1, keepdim=True), x.mean()


def t_structured_outputs(x):
    return {"a": x * 2, "b": (x + 1, [x - 1, x.shape[0]])}


def t_value_branch(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


def t_shape_slices_and_indices(x):
    half = x[: x.shape[0] // 2 + 1]
    return half[torch.argmax(x, dim=0) % half.shape[0]], x[..., None, 1:]


def n_ufuncs_methods(x):
    y = np.zeros_like(x)   # not empty_like: a damaged plan could read it before the write
    np.add(x, 1.0, out=y)
    z = np.where(y > 1.2, y, -y)
    z[0] = z.sum(axis=0)
    return z.mean(axis=1, keepdims=True), np.split(z, [1])[1]


def n_fancy(x):
    idx = np.argsort(x[:, 0])
    return x[idx][:, ::-1] ** 2, np.maximum(x, 0.5).astype(np.float32)


def mixed(x):
    a = x.numpy() * 2.0
    return torch.from_numpy(np.tanh(a)) + x


PROGRAMS = [
    (t_split_cat, "torch"), (t_chunk_per_row, "torch"), (t_max_dim, "torch"), (t_setitem_inplace, "torch"),
    (t_kwargs_reductions, "torch"), (t_structured_outputs, "torch"), (t_value_branch, "torch"),
    (t_shape_slices_and_indices, "torch"), (n_ufuncs_methods, "numpy"), (n_fancy, "numpy"), (mixed, "torch"),
]


def data(framework, shape, seed):
    a = np.random.default_rng(seed).standard_normal(shape)
    return torch.from_numpy(a.astype(np.float32)) if framework == "torch" else a


@pytest.mark.parametrize("fn,framework", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_the_machine_replays_recorded_programs_as_the_generated_code_does(fn, framework):
    x0 = data(framework, (3, 4), 0)
    graph = ivytrace.trace_graph(fn, args=(x0,))
    code, machine = both(graph.plan_path)
    assert "ivytrace._replay" in machine.source and "ivytrace._replay" not in code.source
    for i, shape in enumerate([(3, 4), (3, 4), (5, 4), (2, 6), (1, 4)]):
        x = data(framework, shape, i)
        if i == 1:
            x = -x   # flips value branches
        want = outcome(code, x)
        got = outcome(machine, x)
        assert want[0] == got[0], (shape, want, got)
        if want[0] == "ok":
            assert same(want[1], got[1]), (shape, want[1], got[1])
            assert same(got[1], fn(x)), shape   # and both are the program's own answer
        else:
            assert want[0] == "GuardError" and want[1] == got[1]


# -- hand-built plans: load-time refusals ---------------------------------------------------------
def chain(n=3):
    p = plan_pb2.Plan(name="f", framework="torch", num_slots=n + 1)
    p.inputs.add(name="x", value=slot(0))
    for i in range(n):
        p.steps.add(function="torch.tanh", args=[slot(i)], result=slot(i + 1), free_after=[i] if i else [],
                    loc=common_pb2.SourceLocation(file="prog.py", line=10 + i))
    p.outputs.CopyFrom(slot(n))
    return p


def bad_plans():
    undefined = chain()
    undefined.steps[1].args[0].CopyFrom(slot(7))
    freed = chain()
    freed.steps[2].args[0].CopyFrom(slot(1))   # freed by step 1
    twice = chain()
    twice.steps[2].result.CopyFrom(slot(2))
    out_of_range = chain()
    out_of_range.steps[2].result.CopyFrom(slot(9))
    function = chain()
    function.steps[1].function = "os.system"
    opaque = chain()
    opaque.steps[1].args.add().opaque = "Generator: <torch._C.Generator object>"
    guard = chain()
    guard.guards.add(op="torch.Tensor.__bool__", tensor=common_pb2.TensorRef(value=12), observed=Arg(b=True))
    keys = chain()
    keys.steps[1].args.add().dict.keys.extend(["a", "b"])
    return {"undefined": undefined, "freed": freed, "twice": twice, "out_of_range": out_of_range,
            "function": function, "opaque": opaque, "guard": guard, "dict_keys": keys}


@pytest.mark.parametrize("name", sorted(bad_plans()))
def test_bad_plans_are_refused_with_the_same_message(tmp_path, name):
    path = tmp_path / "p.ivyplan"
    write_plan_file(path, bad_plans()[name])
    messages = []
    for machine in (False, True):
        with pytest.raises(ivytrace.PlanError) as e:
            load_plan(path, machine=machine)
        messages.append(str(e.value))
    assert messages[0] == messages[1]
    assert str(path) in messages[0]


# -- hand-built plans: running ----------------------------------------------------------------------
def test_an_error_inside_a_step_names_the_step_and_its_recorded_line(tmp_path):
    p = plan_pb2.Plan(name="f", framework="torch", num_slots=4)
    p.inputs.add(name="x", value=slot(0))
    p.inputs.add(name="y", value=slot(1))
    p.steps.add(function="torch.tanh", args=[slot(0)], result=slot(2))
    p.steps.add(function="torch.add", args=[slot(2), slot(1)], result=slot(3),
                loc=common_pb2.SourceLocation(file="model.py", line=42))
    p.outputs.CopyFrom(slot(3))
    path = tmp_path / "p.ivyplan"
    write_plan_file(path, p)
    g = load_plan(path, machine=True)
    with pytest.raises(RuntimeError) as e:
        g(torch.ones(3), torch.ones(4))
    assert f"ivytrace plan {path}, step 1: torch.add (recorded at model.py:42)" in e.value.__notes__


def test_results_unpacked_picked_and_written_in_place(tmp_path):
    """Nested tuple results, results reached through a dict (paths), tensors written in place and
    not returned, literal and slot kwargs, slices holding slots: the machine against the code."""
    p = plan_pb2.Plan(name="f", framework="torch", num_slots=16)
    p.inputs.add(name="x", value=slot(0))
    p.inputs.add(name="n", value=slot(1))
    kw = common_pb2.KwArg
    # (v2, (v3, v4)) = torch.split(x, 1) regrouped: split returns a flat tuple, so nest through
    # a tuple-returning step on a tuple input: torch.broadcast_tensors.
    p.steps.add(function="torch.split", args=[slot(0), Arg(i=2)], kwargs=[kw(name="dim", value=Arg(i=0))],
                result=tup(slot(2), slot(3)))
    p.steps.add(function="torch.broadcast_tensors", args=[slot(2), slot(3)], result=tup(slot(4), slot(5)),
                free_after=[2])
    # v6 = x[:n] (a slice holding a slot), v7 = v6.clone(); v7[0] = 5 (written, not returned)
    p.steps.add(function="torch.Tensor.__getitem__",
                args=[slot(0), Arg(slice=common_pb2.Slice(stop=slot(1)))], result=slot(6))
    p.steps.add(function="torch.Tensor.clone", args=[slot(6)], result=slot(7))
    st = p.steps.add(function="torch.Tensor.__setitem__", args=[slot(7), Arg(i=0), Arg(f=5.0)])
    st.written.add(slot=8, arg=7)
    # v9 = torch.cat((v4, v5), dim=n): a tuple holding slots, a slot keyword
    p.steps.add(function="torch.cat", args=[tup(slot(4), slot(5))], kwargs=[kw(name="dim", value=Arg(i=1))],
                result=slot(9), free_after=[4, 5])
    p.outputs.CopyFrom(Arg(dict=common_pb2.ArgDict(keys=["cat", "written", "split"], values=[
        slot(9), slot(8), tup(slot(3), slot(6))])))
    path = tmp_path / "p.ivyplan"
    write_plan_file(path, p)
    code, machine = both(path)
    x = torch.arange(16.0).reshape(4, 4)
    want, got = code(x, 3), machine(x, 3)
    assert same(want, got)
    assert torch.equal(got["written"][0], torch.full((4,), 5.0))
    # A different count from split is a guard, in both, with the same words.
    assert outcome(code, torch.ones(6, 4), 3) == outcome(machine, torch.ones(6, 4), 3)
    assert outcome(machine, torch.ones(6, 4), 3)[0] == "GuardError"


def test_guards_on_step_results_are_checked_by_the_machine(tmp_path):
    p = plan_pb2.Plan(name="f", framework="torch", num_slots=3)
    p.inputs.add(name="x", value=slot(0))
    p.steps.add(function="torch.Tensor.sum", args=[slot(0)], result=slot(1))
    p.steps.add(function="torch.Tensor.__gt__", args=[slot(1), Arg(i=0)], result=slot(2), free_after=[1])
    p.guards.add(op="torch.Tensor.__bool__", tensor=common_pb2.TensorRef(value=2), observed=Arg(b=True),
                 loc=common_pb2.SourceLocation(file="prog.py", line=3))
    p.outputs.CopyFrom(slot(0))
    path = tmp_path / "p.ivyplan"
    write_plan_file(path, p)
    code, machine = both(path)
    assert torch.equal(machine(torch.ones(2)), torch.ones(2))
    bad = outcome(machine, -torch.ones(2))
    assert bad[0] == "GuardError" and "prog.py:3" in bad[1]
    assert bad == outcome(code, -torch.ones(2))


def test_the_machine_keeps_no_references(tmp_path):
    p = chain(50)
    c = p.constants.add(slot=51)
    c.value.dtype = common_pb2.FLOAT32
    c.value.shape.append(1)
    c.value.data = np.float32(2.0).tobytes()
    p.num_slots = 53
    p.steps.add(function="torch.mul", args=[slot(50), slot(51)], result=slot(52), free_after=[50])
    p.outputs.CopyFrom(slot(52))
    path = tmp_path / "p.ivyplan"
    write_plan_file(path, p)
    g = load_plan(path, machine=True)
    x = torch.ones(3)
    before = sys.getrefcount(x)
    out = None
    for _ in range(200):
        out = g(x)
    assert sys.getrefcount(x) == before
    assert sys.getrefcount(out) == 2   # `out` and getrefcount's argument: nothing else holds it


def test_long_plans_run_in_the_machine_by_default(tmp_path):
    n = codegen.MACHINE_MIN_STEPS
    path = tmp_path / "p.ivyplan"
    write_plan_file(path, chain(n))
    g = load_plan(path)
    assert "ivytrace._replay" in g.source and len(g.source.splitlines()) < 10
    x = torch.randn(5)
    want = x
    for _ in range(n):
        want = torch.tanh(want)
    assert torch.equal(g(x), want)
    # Read without its steps in Python (the machine has them): they are counted all the same.
    assert len(g.plan.steps) == 0 and g.num_steps == n and f"{n} steps" in repr(g)
    # Replayed in another framework, it is generated code, from the steps read in Python.
    retargeted = load_plan(path, target="numpy")
    assert not retargeted.machine and len(retargeted.plan.steps) == n
    np.testing.assert_allclose(retargeted(x.numpy()), want.numpy(), rtol=1e-4)   # 5000 tanh of two libms
    write_plan_file(path, chain(n - 1))
    short = load_plan(path)
    assert "ivytrace._replay" not in short.source and not short.machine and short.num_steps == n - 1


def test_jax_and_retargeted_plans_stay_generated_code():
    jnp = pytest.importorskip("jax.numpy")
    graph = ivytrace.trace_graph(lambda x: jnp.tanh(x) * 2, args=(jnp.ones(3),))
    with pytest.raises(ivytrace.PlanError, match="machine=True"):
        load_plan(graph.plan_path, machine=True)
    assert "ivytrace._replay" not in load_plan(graph.plan_path).source
    tg = ivytrace.trace_graph(lambda x: torch.tanh(x) * 2, args=(torch.ones(3),))
    assert "ivytrace._replay" not in load_plan(tg.plan_path, target="numpy", machine=None).source


# -- damaged plans: the machine parses untrusted bytes -------------------------------------------
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

_SEED_PLANS = {}


def _seed_plan(name):
    """Plans recorded from this file's programs, serialized: what the mutations start from, the
    same bytes in every process (tensor ids, which count what the process recorded before, and
    the trace header, which holds the command line, are cleared) so that an example reproduces."""
    if not _SEED_PLANS:
        for fn, framework in PROGRAMS:
            graph = ivytrace.trace_graph(fn, args=(data(framework, (3, 4), 0),))
            plan = load_plan(graph.plan_path, machine=False).plan
            plan.ClearField("source")
            plan.ClearField("name")
            _clear_ids(plan)
            _SEED_PLANS[fn.__name__] = (plan.SerializeToString(), framework)
    return _SEED_PLANS[name]


def _clear_ids(msg):
    if isinstance(msg, common_pb2.TensorRef):
        msg.ClearField("id")
        msg.ClearField("storage")
        msg.ClearField("version")
        return
    for field, value in msg.ListFields():
        if field.message_type is None:
            continue
        for m in ([value] if hasattr(value, "ListFields") else value):   # one message, or repeated
            _clear_ids(m)


def _plan_error(plan):
    from ivytrace.runtime.plan import CompiledPlan
    try:
        CompiledPlan(plan, "damaged.ivyplan", machine=True)
    except ivytrace.PlanError as e:
        return str(e)
    return ""


@settings(max_examples=int(__import__("os").environ.get("IVYTRACE_HYPOTHESIS_EXAMPLES", "60")), deadline=None,
          derandomize=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(name=st.sampled_from([p[0].__name__ for p in PROGRAMS]),
       edits=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), min_size=1, max_size=4))
def test_damaged_plans_load_and_run_alike_in_both_engines(name, edits):
    """Random bytes of a real plan changed: whatever still parses as a Plan is refused by both
    engines (PlanError), or loaded by both and then runs alike. Never a crash of the machine."""
    from ivytrace.runtime.plan import CompiledPlan
    raw, framework = _seed_plan(name)
    b = bytearray(raw)
    for where, value in edits:
        b[int(where * len(b))] = value
    plan = plan_pb2.Plan()
    try:
        plan.ParseFromString(bytes(b))
    except Exception:   # noqa: BLE001 - not a Plan any more: load_plan refuses it before either engine
        hypothesis.assume(False)
    loaded, kinds = [], []
    for machine in (False, True):
        try:
            loaded.append(CompiledPlan(plan, "damaged.ivyplan", machine=machine))
            kinds.append("loaded")
        except ivytrace.PlanError as e:
            loaded.append(None)
            kinds.append("unparsed" if "does not parse" in str(e) else "PlanError")
        except (TypeError, ValueError, KeyError, AttributeError, RuntimeError) as e:
            # What a damaged value can raise while being decoded (a dtype/shape mismatch, a bad
            # device string); the engines must agree on it.
            loaded.append(None)
            kinds.append(type(e).__name__)
    if kinds[1] == "PlanError" and "machine=True, but" in _plan_error(plan):
        hypothesis.assume(False)   # damage that makes it a plan the machine does not run (retargeted)
    # The C++ parser is stricter than Python's about some damage (an unknown group field that
    # Python keeps and writes back): the machine refuses what the code engine might run.
    assert kinds[0] == kinds[1] or kinds[1] == "unparsed", (kinds, bytes(b).hex())
    if isinstance(loaded[0], CompiledPlan) and isinstance(loaded[1], CompiledPlan):
        n = loaded[0]._n   # fresh inputs for each: a damaged plan may write into its input
        want = outcome(loaded[0], *[data(framework, (3, 4), 1) for _ in range(n)])
        got = outcome(loaded[1], *[data(framework, (3, 4), 1) for _ in range(n)])
        assert want[0] == got[0], (want, got, bytes(b).hex())
        if want[0] == "ok":
            assert same(want[1], got[1]), (want, got, bytes(b).hex())


# -- generated programs: the machine against the generated code --------------------------------
def _generated():
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
    import program_gen
    return program_gen


@settings(max_examples=int(__import__("os").environ.get("IVYTRACE_HYPOTHESIS_EXAMPLES", "25")), deadline=None,
          derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(framework=st.sampled_from(["torch", "numpy"]), data_=st.data())
def test_generated_programs_replay_alike_in_both_engines(framework, data_):
    """Programs of tests/python/program_gen.py (views, in-place writes, masks, scatter, Python
    numbers, branches...), traced once, replayed by both engines on the traced input and others:
    the same values, the same input writes, the same guard messages."""
    G = _generated()
    F = G.FRAMEWORKS[framework]
    steps = data_.draw(st.lists(st.tuples(st.sampled_from(G.names_for(framework)), st.integers(0, 7)),
                                min_size=1, max_size=6))
    shape = data_.draw(st.tuples(st.integers(1, 5), st.integers(1, 5)))
    fn = G.make_program(steps, F)
    g = G.trace(fn, F, G.data(F, shape, 0))
    if g is None or isinstance(g, BaseException):
        hypothesis.assume(False)
    code, machine = both(g.plan_path)
    for i, s in enumerate([shape, shape, (shape[0] + 1, shape[1]), (2, 3)]):
        xs = [G.data(F, s, i), G.data(F, s, i)]   # one each: a program may write its input
        want, got = outcome(code, xs[0]), outcome(machine, xs[1])
        assert want[0] == got[0], (steps, s, want, got)
        if want[0] == "ok":
            assert same(want[1], got[1]) and same(xs[0], xs[1]), (steps, s)
        elif want[0] == "GuardError":
            assert want[1] == got[1]
