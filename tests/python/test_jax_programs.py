"""JAX end to end: record -> CLI optimize/export plan -> replay, and trace_graph on jax arrays.

Each program in samples/jax_programs.py is plain JAX (jax.numpy, jax.nn, jax.lax, jax.random, code
under jax.jit with nested jit). The replay must give the recorded outputs exactly on the recorded
inputs, and the original's within rtol 1e-4 / atol 1e-5 on fresh inputs, except where a guard fires
(then the error's type name contains "Guard").

While recording, jitted code runs op by op (see python/ivytrace/recorder/jax_recorder.py), so the
recorded run equals the program run under jax.disable_jit() bit for bit; a compiled run may differ
in the last bits (XLA fuses), hence the tolerance against it.
"""
import os
import subprocess
import sys
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import ivytrace
from ivytrace.recorder.reader import read_trace
from ivytrace.runtime.plan import load_plan
from ivytrace.v1 import common_pb2, trace_pb2

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "samples"))
import jax_programs as progs  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5
NAMES = ["mlp", "cnn", "attention", "rnn", "inplace", "random_ops", "jit_nested"]


@pytest.fixture(autouse=True)
def _needs_cli(cli_binary):
    return cli_binary


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [y for x in out for y in _flat(x)]
    return [out]


def _assert_same(got, want, exact):
    got, want = _flat(got), _flat(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert isinstance(g, jax.Array)
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        if exact:
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=RTOL, atol=ATOL)


def _eager(fn, args):
    """The program as the recorder ran it: jitted code op by op."""
    with jax.disable_jit():
        return fn(*args)


def _cli(cli_binary, *args, check=True):
    proc = subprocess.run([str(cli_binary), *map(str, args)], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"ivytrace {' '.join(map(str, args))} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


def _subprocess_env():
    env = dict(os.environ)
    pkg = str(REPO / "python")
    env["PYTHONPATH"] = os.pathsep.join([pkg] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


@pytest.fixture(scope="session")
def recorded_samples(cli_binary, tmp_path_factory):
    """`ivytrace record --frameworks jax` over samples/jax_programs.py (one region per program),
    then optimize + export --to plan for every region. Returns (trace path, {name: plan}, inputs)."""
    d = tmp_path_factory.mktemp("jax_samples")
    trace = d / "samples.ivytrace"
    proc = subprocess.run([str(cli_binary), "record", "--frameworks", "jax", "-o", str(trace), "--",
                           sys.executable, str(REPO / "samples" / "jax_programs.py")],
                          capture_output=True, text=True, env=_subprocess_env(), timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert [line.split()[0] for line in proc.stdout.splitlines()] == list(progs.PROGRAMS)
    plans = {}
    for name in progs.PROGRAMS:
        graph, plan = d / f"{name}.ivygraph", d / f"{name}.ivyplan"
        _cli(cli_binary, "optimize", trace, "--region", name, "-o", graph, "--verify")
        _cli(cli_binary, "export", graph, "--to", "plan", "-o", plan, "--no-optimize")
        plans[name] = load_plan(plan)
    # The inputs the program drew (same generator, same order as its __main__).
    r = np.random.RandomState(1)
    inputs = {name: make(r) for name, (fn, make) in progs.PROGRAMS.items()}
    return trace, plans, inputs


def _region_values(trace, role):
    """{region name: [recorded tensors of `role`]} in the order the recorder wrote them."""
    t = read_trace(str(trace))
    out, current = {}, None
    for rec in t.records:
        kind = rec.WhichOneof("kind")
        if kind == "region_begin":
            current = rec.region_begin.name
            out.setdefault(current, [])
        elif kind == "tensor" and rec.tensor.value.role == role and current:
            v = rec.tensor.value
            dt = {common_pb2.FLOAT32: np.float32, common_pb2.FLOAT16: np.float16, common_pb2.INT32: np.int32,
                  common_pb2.UINT32: np.uint32, common_pb2.BOOL: np.bool_}[v.dtype]
            out[current].append(np.frombuffer(v.data, dtype=dt).reshape(tuple(v.shape)))
    return out


@pytest.mark.parametrize("name", NAMES)
def test_cli_recorded_program_replays_exactly_and_follows_fresh_inputs(name, recorded_samples):
    trace, plans, inputs = recorded_samples
    fn, make = progs.PROGRAMS[name]
    plan = plans[name]
    assert plan.plan.framework == "jax"
    # JAX primitives, and the sizes the symbolic dims' params are computed from (jax_shapes.py)
    assert all(s.function.startswith(("jax.", "ivytrace.sym.")) for s in plan.plan.steps)
    args = inputs[name]
    got = plan(*args)
    # The recorded outputs (what the program returned under the recorder), bit for bit.
    recorded = _region_values(trace, common_pb2.REGION_OUTPUT)[name]
    flat = _flat(got)
    by_id = list({id(x): x for x in flat}.values())   # the recorder writes each output once
    assert len(by_id) == len(recorded)
    for g, w in zip(by_id, recorded):
        np.testing.assert_array_equal(np.asarray(g), w)
    _assert_same(got, _eager(fn, args), exact=True)
    _assert_same(got, fn(*args), exact=False)          # compiled jit: within float tolerance
    for seed in (101, 102):
        fresh = make(np.random.RandomState(seed))
        _assert_same(plan(*fresh), fn(*fresh), exact=False)
    if name in ("mlp", "cnn", "attention"):   # one more in the batch: the plan follows it
        x = make(np.random.RandomState(103))[0]
        bigger = jnp.concatenate([x, x[:1] * 2])
        _assert_same(plan(bigger), fn(bigger), exact=False)


@pytest.mark.parametrize("name", NAMES)
def test_trace_graph_on_jax_arrays(name):
    fn, make = progs.PROGRAMS[name]
    args = make(np.random.RandomState(11))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        graph = ivytrace.trace_graph(fn, args=args)
    assert graph.plan.plan.framework == "jax"
    _assert_same(graph(*args), _eager(fn, args), exact=True)
    fresh = make(np.random.RandomState(12))
    _assert_same(graph(*fresh), fn(*fresh), exact=False)


def test_nested_jit_is_inlined_and_control_flow_is_unrolled(recorded_samples):
    trace, plans, _ = recorded_samples
    t = read_trace(str(trace))
    names = set(t.op_names())
    assert not any(n.endswith(("jit_p", "pjit_p", "scan_p", "while_p", "cond_p")) for n in names), names
    # mlp: jit(mlp) calls jit(_dense) twice: two dot_generals, both on _dense's source line.
    steps = [s.function for s in plans["mlp"].plan.steps]
    assert steps.count("jax.lax.dot_general_p") == 2
    dense_line = progs._dense.__wrapped__.__code__.co_firstlineno + 2
    lines = {o.line for o in t.ops() if t.string(o.op) == "jax.lax.dot_general_p"}
    assert dense_line in lines
    # rnn: 4 Python-loop steps and 4 unrolled lax.scan steps, each with a tanh.
    assert [s.function for s in plans["rnn"].plan.steps].count("jax.lax.tanh_p") == 8
    # jit_nested: fori_loop over 4 steps of jit(_step), then the cond branch taken.
    assert [s.function for s in plans["jit_nested"].plan.steps].count("jax.lax.tanh_p") == 4


def _value_guards(guards):
    """The guards on values; a JAX graph also guards each input's shape and dtype."""
    return [g for g in guards if g.op not in ("jax.Array.shape", "jax.Array.dtype")]


def test_input_shapes_are_guarded(recorded_samples):
    trace, plans, _ = recorded_samples
    ops = [g.op for g in plans["jit_nested"].plan.guards]
    assert "jax.Array.shape" in ops


def test_cond_inside_jit_is_a_guard_with_the_users_line(recorded_samples):
    trace, plans, _ = recorded_samples
    plan = plans["jit_nested"]
    guards = _value_guards(plan.plan.guards)
    assert len(guards) == 1
    g = guards[0]
    assert g.op == "jax.lax.cond.__bool__"
    assert g.loc.file.endswith("jax_programs.py")
    src = (REPO / "samples" / "jax_programs.py").read_text().splitlines()[g.loc.line - 1]
    assert "lax.cond" in src


def test_guard_replays_on_the_same_branch_and_raises_on_the_other():
    fn, make = progs.PROGRAMS["guarded"]
    (x,) = make(np.random.RandomState(0))
    with pytest.warns(RuntimeWarning, match="specialized"):
        graph = ivytrace.trace_graph(fn, args=(x,))
    g = _value_guards(graph.plan.plan.guards)
    assert len(g) == 1 and g[0].op == "jax.Array.__float__"
    assert g[0].loc.file.endswith("jax_programs.py") and g[0].loc.line > 0
    _assert_same(graph(x), fn(x), exact=True)
    # float() hands Python the value itself: any input that changes it fails the guard.
    for other in (-x, x + 1.0):
        with pytest.raises(Exception) as err:
            graph(other)
        assert "Guard" in type(err.value).__name__


@pytest.mark.parametrize("op", ["bool", "item", "int", "tolist", "asarray", "device_get", "cond", "while_loop",
                                "switch"])
def test_other_guards_are_recorded_and_checked(op):
    take = {"bool": lambda s: bool(s > 0), "item": lambda s: s.item() > 0, "int": lambda s: int(s) > 0,
            "tolist": lambda s: s.tolist() > 0, "asarray": lambda s: np.asarray(s) > 0,
            "device_get": lambda s: jax.device_get({"s": s})["s"] > 0}.get(op)

    def fn(x):
        if op == "cond":
            return jax.jit(lambda v: lax.cond(v.sum() > 0, lambda u: u * 3, lambda u: u, v))(x)
        if op == "while_loop":   # runs twice when traced: a guard per test of the predicate
            return lax.while_loop(lambda v: v.sum() < 20, lambda v: v * 2, x)
        if op == "switch":
            return lax.switch(jnp.argmax(x), [lambda v: v, lambda v: v + 1, lambda v: v * 3], x)
        if take(x.sum()):
            return x * 3
        return x

    x = jnp.arange(1.0, 4.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        graph = ivytrace.trace_graph(fn, args=(x,))
    guards = [g.op for g in _value_guards(graph.plan.plan.guards)]
    assert len(guards) >= 1
    if op in ("cond", "while_loop", "switch"):
        assert all(g.startswith(f"jax.lax.{op}.") for g in guards), guards
    _assert_same(graph(x), fn(x), exact=True)
    with pytest.raises(Exception) as err:
        graph(-x)
    assert "Guard" in type(err.value).__name__


def test_while_loop_under_vmap_is_refused_naming_the_primitive(cli_binary, tmp_path):
    def fn(x):   # JAX cannot run this loop in Python: it applies while_p itself
        return jax.vmap(lambda v: lax.while_loop(lambda u: u < 10, lambda u: u * 2, v))(x)

    x = jnp.arange(1.0, 4.0)
    trace = tmp_path / "w.ivytrace"
    with ivytrace.Recorder(trace, frameworks=("jax",)):
        with ivytrace.region("w", inputs={"x": x}) as reg:
            reg.set_result(fn(x))
    proc = _cli(cli_binary, "export", trace, "--to", "plan", "-o", tmp_path / "w.plan", check=False)
    assert proc.returncode == 5
    assert "jax.lax.while_p" in proc.stderr and "test_jax_programs.py" in proc.stderr


def test_shape_reads_by_user_code_are_recorded(recorded_samples):
    trace, _, _ = recorded_samples
    t = read_trace(str(trace))
    reads = [(t.string(s.op), t.string(s.file), s.line) for s in t.of_kind("shape_read")]
    attention_line = next(i for i, s in enumerate((REPO / "samples" / "jax_programs.py").read_text().splitlines(), 1)
                          if "t = x.shape[1]" in s)
    assert ("jax.Array.shape", str(REPO / "samples" / "jax_programs.py"), attention_line) in reads
    # JAX's (and opt_einsum's) own shape reads are not the user's.
    assert all(f.endswith("jax_programs.py") for _, f, _ in reads if f), reads


def test_len_is_a_shape_read(tmp_path):
    def fn(x):
        return x * len(x)

    path = ivytrace.trace_graph(fn, args=(jnp.ones(3),)).save(tmp_path / "len.ivytrace")
    t = read_trace(str(path))
    reads = [(t.string(r.op), r.value.i) for r in t.of_kind("shape_read")]
    assert reads == [("jax.Array.__len__", 3)]


def test_random_bits_is_the_random_op_and_follows_the_key(recorded_samples):
    trace, plans, inputs = recorded_samples
    t = read_trace(str(trace))
    bits = [o for o in t.ops() if t.string(o.op) == "jax._src.random.prng.random_bits_p"]
    assert bits and all(o.flags & trace_pb2.RANDOM for o in bits)
    # What random_bits runs inside (the threefry rounds) is JAX's, not the program's: not recorded.
    assert not any("threefry" in n or "iota_2x32" in n for n in t.op_names())
    others = [o for o in t.ops() if t.string(o.op) != "jax._src.random.prng.random_bits_p"]
    assert not any(o.flags & trace_pb2.RANDOM for o in others)
    outputs = [r.tensor for r in t.records if r.WhichOneof("kind") == "tensor"
               and r.tensor.value.role == common_pb2.RANDOM_OUTPUT]
    assert len(outputs) >= len(bits)
    # The key is an input: another key, other draws, as the program itself gives.
    plan = plans["random_ops"]
    x, key = inputs["random_ops"]
    other = jax.random.PRNGKey(12345)
    a, b = plan(x, key), plan(x, other)
    assert not np.array_equal(np.asarray(a[0]), np.asarray(b[0]))
    _assert_same(b, _eager(progs.random_ops, (x, other)), exact=True)


def noisy(x):
    key = jax.random.PRNGKey(0)                  # a key made from a constant: its draws can be baked
    k1, k2 = jax.random.split(key)
    return x + jax.random.normal(k1, x.shape) * jax.random.uniform(k2, x.shape)


def test_bake_generators_replaces_the_draws_by_the_recorded_values(cli_binary, tmp_path):
    x = jnp.ones((2, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        kept = ivytrace.trace_graph(noisy, args=(x,))
        baked = ivytrace.trace_graph(noisy, args=(x,), include_generators=False)
    fns = [s.function for s in kept.plan.plan.steps]
    assert "jax._src.random.prng.random_bits_p" in fns
    assert not any("random" in s.function for s in baked.plan.plan.steps), [s.function for s in baked.plan.plan.steps]
    want = _eager(noisy, (x,))
    _assert_same(kept(x), want, exact=True)
    _assert_same(baked(x), want, exact=True)
    y = jnp.full((2, 3), 5.0)
    _assert_same(baked(y), _eager(noisy, (y,)), exact=True)   # the draws do not depend on x
    # A draw from a key the caller passes cannot be baked: refused with the op and its line.
    trace = ivytrace.trace_graph(progs.random_ops, args=progs.PROGRAMS["random_ops"][1](np.random.RandomState(0))) \
        .save(tmp_path / "r.ivytrace")
    proc = _cli(cli_binary, "export", trace, "--to", "plan", "-o", tmp_path / "r.plan", "--bake-generators",
                check=False)
    assert proc.returncode != 0
    assert "random_bits_p" in proc.stderr and "region input" in proc.stderr
    assert not (tmp_path / "r.plan").exists()


def test_typed_keys_made_inside_are_recorded():
    def fn(x):
        k = jax.random.key(3)                     # a typed key (extended dtype)
        k1, k2 = jax.random.split(k)              # iteration of a key array goes through primitives
        return x * jax.random.normal(k1, x.shape) + jax.random.uniform(jax.random.fold_in(k2, 7), x.shape)

    x = jnp.arange(6.0).reshape(2, 3)
    graph = ivytrace.trace_graph(fn, args=(x,))
    _assert_same(graph(x), _eager(fn, (x,)), exact=True)
    _assert_same(graph(x + 1), _eager(fn, (x + 1,)), exact=True)


TYPED_KEY = jax.random.key(5)


def test_typed_keys_from_outside_the_region_and_as_inputs():
    def const_key(x):                          # made before the region: key data + random_wrap
        return x + jax.random.normal(TYPED_KEY, x.shape)

    def input_key(x, k):                       # the caller's key, replayed as given
        return x * jax.random.uniform(k, x.shape)

    x = jnp.arange(3.0)
    graph = ivytrace.trace_graph(const_key, args=(x,))
    # (after the size reads of the input's symbolic dims: jax_shapes.py)
    steps = [s.function for s in graph.plan.plan.steps if not s.function.startswith("ivytrace.sym.")]
    assert steps[0] == "jax._src.random.prng.random_wrap_p", steps
    _assert_same(graph(x + 2), _eager(const_key, (x + 2,)), exact=True)
    baked = ivytrace.trace_graph(const_key, args=(x,), include_generators=False)
    assert not any("random" in s.function for s in baked.plan.plan.steps)
    _assert_same(baked(x), _eager(const_key, (x,)), exact=True)

    graph = ivytrace.trace_graph(input_key, args=(x, jax.random.key(1)))
    other = jax.random.key(2)
    _assert_same(graph(x, other), _eager(input_key, (x, other)), exact=True)


def test_graphs_export_to_onnx_and_random_ops_are_refused(cli_binary, tmp_path):
    import onnxruntime as ort

    def ew(x, y):
        return jnp.tanh(x * y) + jnp.exp(-x) - jnp.maximum(x, y)

    x = jnp.asarray(np.random.RandomState(0).randn(3, 4).astype(np.float32))
    y = x + 1
    trace = ivytrace.trace_graph(ew, args=(x, y)).save(tmp_path / "ew.ivytrace")
    _cli(cli_binary, "export", trace, "--to", "onnx", "-o", tmp_path / "ew.onnx")
    sess = ort.InferenceSession(str(tmp_path / "ew.onnx"))
    names = [i.name for i in sess.get_inputs()]
    (got,) = sess.run(None, dict(zip(names, [np.asarray(x), np.asarray(y)])))
    np.testing.assert_allclose(got, np.asarray(ew(x, y)), rtol=1e-5, atol=1e-6)
    # dot_general lowers (as an Einsum) through the table shared with torch and NumPy.
    (x,) = progs.PROGRAMS["mlp"][1](np.random.RandomState(0))
    trace = ivytrace.trace_graph(progs.mlp, args=(x,)).save(tmp_path / "mlp.ivytrace")
    _cli(cli_binary, "export", trace, "--to", "onnx", "-o", tmp_path / "mlp.onnx")
    sess = ort.InferenceSession(str(tmp_path / "mlp.onnx"))
    (got,) = sess.run(None, {sess.get_inputs()[0].name: np.asarray(x)})
    np.testing.assert_allclose(got, np.asarray(progs.mlp(x)), rtol=1e-4, atol=1e-5)
    # A random primitive is refused: exit status 5, the op named with its reason and source line.
    args = progs.PROGRAMS["random_ops"][1](np.random.RandomState(0))
    trace = ivytrace.trace_graph(progs.PROGRAMS["random_ops"][0], args=args).save(tmp_path / "rnd.ivytrace")
    proc = _cli(cli_binary, "export", trace, "--to", "onnx", "-o", tmp_path / "rnd.onnx", check=False)
    assert proc.returncode == 5
    assert "jax._src.random.prng.random_bits_p" in proc.stderr and "a random op" in proc.stderr
    assert "jax_programs.py" in proc.stderr
    assert not (tmp_path / "rnd.onnx").exists()


def test_record_attaches_to_jax_by_default_when_the_program_imports_it(cli_binary, tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text("import sys\nassert 'jax' not in sys.modules\nimport jax.numpy as jnp\n"
                    "x = jnp.ones(3)\nprint(float((jnp.tanh(x) * 2).sum()))\n")
    trace = tmp_path / "t.ivytrace"
    proc = subprocess.run([str(cli_binary), "record", "-o", str(trace), "--", sys.executable, str(prog)],
                          capture_output=True, text=True, env=_subprocess_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert abs(float(proc.stdout) - 3 * 2 * np.tanh(1.0)) < 1e-5
    t = read_trace(str(trace))
    assert [f.name for f in t.header.frameworks] == ["torch", "numpy", "jax"]
    assert {"jax.lax.tanh_p", "jax.lax.mul_p", "jax.lax.reduce_sum_p"} <= set(t.op_names())
    guards = [(t.string(g.op), g.line) for g in t.of_kind("guard")]
    assert ("jax.Array.__float__", 5) in guards


def _train_step(x):
    """grad through relu/softmax (custom_jvp) and a max pool, vmap, params with NumPy ints."""
    w = jnp.linspace(-1.0, 1.0, 36, dtype=jnp.float32).reshape(6, 6)

    def loss(v):
        h = jax.nn.relu(v @ w)
        p = lax.reduce_window(h, -jnp.inf, lax.max, (2, 2), (1, 1), "VALID")
        return jnp.sum(jax.nn.softmax(p) * jnp.pad(p, ((1, 0), (0, 0)))[1:])

    g = jax.grad(loss)(x)
    rows = jax.vmap(lambda r: jnp.dot(w, r))(x)
    parts = jnp.split(rows, 3, axis=1)
    return g, jnp.concatenate(parts[::-1], axis=1)


def test_grad_vmap_and_numpy_int_params_replay():
    x = jnp.asarray(np.random.RandomState(4).randn(4, 6).astype(np.float32))
    graph = ivytrace.trace_graph(_train_step, args=(x,))
    fns = {s.function for s in graph.plan.plan.steps}
    assert {"jax.lax.select_and_scatter_add_p", "jax.lax.split_p"} <= fns, fns
    _assert_same(graph(x), _eager(_train_step, (x,)), exact=True)
    x2 = jnp.asarray(np.random.RandomState(5).randn(4, 6).astype(np.float32))
    _assert_same(graph(x2), _train_step(x2), exact=False)


def test_primitive_with_a_jaxpr_param_is_refused_naming_it(cli_binary, tmp_path):
    # A while_loop under vmap: JAX cannot run it in Python, so while_p itself (jaxpr params) is
    # recorded, and a plan cannot hold it.
    x = jnp.arange(3.0)
    trace = tmp_path / "loop.ivytrace"
    with ivytrace.Recorder(trace, frameworks=("jax",)):
        with ivytrace.region("loop", inputs={"x": x}) as reg:
            reg.set_result(jax.vmap(lambda v: jax.lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0 + 1.0, v))(x))
    proc = _cli(cli_binary, "export", trace, "--to", "plan", "-o", tmp_path / "loop.plan", check=False)
    assert proc.returncode == 5
    assert "while_p" in proc.stderr and "not in schemas/" in proc.stderr
    assert "test_jax_programs.py" in proc.stderr


def test_linalg_solve_records_what_custom_linear_solve_evaluates(cli_binary, tmp_path):
    # custom_linear_solve holds jaxprs: it is not recorded itself, the primitives it evaluates
    # eagerly are (lu, triangular_solve, ...), so the plan replays it.
    a, b = jnp.ones((3, 3)), jnp.ones(3)
    trace = tmp_path / "solve.ivytrace"
    with ivytrace.Recorder(trace, frameworks=("jax",)):
        with ivytrace.region("solve", inputs={"a": a, "b": b}) as reg:
            reg.set_result(jnp.linalg.solve(a + 3 * jnp.eye(3), b))
    _cli(cli_binary, "export", trace, "--to", "plan", "-o", tmp_path / "solve.plan")
    from ivytrace.runtime.plan import load_plan
    plan = load_plan(tmp_path / "solve.plan")
    a2, b2 = jnp.arange(9.0).reshape(3, 3) / 10, jnp.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(np.asarray(plan(a2, b2)), np.asarray(jnp.linalg.solve(a2 + 3 * jnp.eye(3), b2)),
                               rtol=1e-5, atol=1e-6)


def test_cli_recorded_guarded_program_checks_its_guard(recorded_samples):
    _, plans, inputs = recorded_samples
    plan = plans["guarded"]
    (x,) = inputs["guarded"]
    assert [g.op for g in _value_guards(plan.plan.guards)] == ["jax.Array.__float__"]
    _assert_same(plan(x), progs.guarded(x), exact=True)
    with pytest.raises(Exception) as err:
        plan(-x)
    assert "Guard" in type(err.value).__name__


# -- hand-built jax plans: params the runtime rebuilds, and what it refuses --------------------

def _conv_plan(record):
    from ivytrace.v1 import plan_pb2
    Arg = common_pb2.Arg

    def slot(s):
        return Arg(tensor=common_pb2.TensorRef(value=s))

    def ints(*v):
        return Arg(tuple=common_pb2.ArgList(items=[Arg(i=i) for i in v]))

    p = plan_pb2.Plan(name="conv", framework="jax", num_slots=3)
    p.inputs.add(name="x", value=slot(0))
    p.inputs.add(name="w", value=slot(1))
    kw = {"window_strides": ints(1, 1), "padding": Arg(tuple=common_pb2.ArgList(items=[ints(0, 0), ints(0, 0)])),
          "lhs_dilation": ints(1, 1), "rhs_dilation": ints(1, 1), "dimension_numbers": record,
          "feature_group_count": Arg(i=1), "batch_group_count": Arg(i=1), "precision": Arg(none=True),
          "preferred_element_type": Arg(dtype=common_pb2.FLOAT32), "out_sharding": Arg(none=True)}
    p.steps.add(function="jax.lax.conv_general_dilated_p", args=[slot(0), slot(1)], result=slot(2),
                kwargs=[common_pb2.KwArg(name=k, value=v) for k, v in kw.items()])
    p.outputs.CopyFrom(slot(2))
    return p


def _record_arg(type_name, **fields):
    keys = ["__type__"] + list(fields)
    values = [common_pb2.Arg(s=type_name)] + [
        common_pb2.Arg(tuple=common_pb2.ArgList(items=[common_pb2.Arg(i=i) for i in v])) for v in fields.values()]
    return common_pb2.Arg(dict=common_pb2.ArgDict(keys=keys, values=values))


def test_jax_plan_rebuilds_dimension_number_records(tmp_path):
    from ivytrace.runtime.plan import write_plan_file
    rec = _record_arg("jax.lax.ConvDimensionNumbers", lhs_spec=(0, 1, 2, 3), rhs_spec=(0, 1, 2, 3),
                      out_spec=(0, 1, 2, 3))
    write_plan_file(tmp_path / "c.ivyplan", _conv_plan(rec))
    plan = load_plan(tmp_path / "c.ivyplan")
    x = jnp.asarray(np.random.RandomState(0).randn(1, 2, 5, 5).astype(np.float32))
    w = jnp.asarray(np.random.RandomState(1).randn(3, 2, 3, 3).astype(np.float32))
    want = lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=("NCHW", "OIHW", "NCHW"))
    np.testing.assert_allclose(np.asarray(plan(x, w)), np.asarray(want), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("type_name, message", [
    ("os.system", "not in the allow-list"),
    ("jax.lax.Precision.HIGH", "not a class"),
    ("jax.lax.GatherDimensionNumbers", "cannot rebuild"),
])
def test_jax_plan_refuses_records_naming_anything_else(tmp_path, type_name, message):
    from ivytrace.runtime.plan import write_plan_file
    rec = _record_arg(type_name, lhs_spec=(0, 1, 2, 3))
    write_plan_file(tmp_path / "c.ivyplan", _conv_plan(rec))
    with pytest.raises(ivytrace.PlanError) as err:
        load_plan(tmp_path / "c.ivyplan")
    assert message in str(err.value) and "step 0 (jax.lax.conv_general_dilated_p)" in str(err.value)
