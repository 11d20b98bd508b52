"""NumPy end to end: record (trace_graph or `ivytrace record`) -> CLI optimize/export plan -> replay.

Each program in samples/numpy_programs.py is plain NumPy. The replay must give the original's
outputs exactly on the recorded inputs and within rtol 1e-4 / atol 1e-5 on fresh inputs, except
where a guard fires (then the error's type name contains "Guard").
"""
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import ivytrace
from ivytrace.runtime.plan import load_plan
from ivytrace.v1 import graph_pb2

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "samples"))
import numpy_programs as progs  # noqa: E402


@pytest.fixture(autouse=True)
def _needs_cli(cli_binary):
    return cli_binary


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _copies(args):
    return tuple(a.copy() for a in args)


def _run(fn, args, seed):
    np.random.seed(seed)
    return fn(*args)


def _trace(fn, args, seed=7, **options):
    np.random.seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return ivytrace.trace_graph(fn, args=_copies(args), **options)


NAMES = ["mlp", "cnn", "attention", "rnn", "inplace", "random_ops"]


@pytest.mark.parametrize("name", NAMES)
def test_program_replays_exactly_on_recorded_inputs_and_closely_on_fresh_ones(name):
    fn, make = progs.PROGRAMS[name]
    args = make(np.random.RandomState(11))
    graph = _trace(fn, args)
    assert graph.plan.plan.framework == "numpy"
    # NumPy calls, and the shape arithmetic that follows new shapes (ivytrace.sym.*)
    assert all(s.function.startswith(("numpy.", "ivytrace.sym.")) for s in graph.plan.plan.steps)
    # Recorded inputs: bit-identical (random ops draw from the same seeded global generator).
    expect = _flat(_run(fn, _copies(args), seed=7))
    got = _flat(_run(graph, _copies(args), seed=7))
    assert len(expect) == len(got)
    for e, g in zip(expect, got):
        assert type(g) is not progs.np.ndarray or g.dtype == np.asarray(e).dtype
        np.testing.assert_array_equal(np.asarray(g), np.asarray(e))
    # Fresh inputs of the same shapes.
    for seed in (1, 2):
        fresh = make(np.random.RandomState(100 + seed))
        expect = _flat(_run(fn, _copies(fresh), seed=seed))
        got = _flat(_run(graph, _copies(fresh), seed=seed))
        for e, g in zip(expect, got):
            np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-4, atol=1e-5)


def test_inplace_program_records_writes_and_replays_them_into_the_callers_array():
    fn, make = progs.PROGRAMS["inplace"]
    a, b = make(np.random.RandomState(3))
    graph = _trace(fn, (a, b))
    functions = [s.function for s in graph.plan.plan.steps]
    for op in ("numpy.add", "numpy.ndarray.__setitem__", "numpy.multiply", "numpy.add.accumulate",
               "numpy.add.reduce", "numpy.subtract"):
        assert op in functions, functions
    out_kwargs = [k.name for s in graph.plan.plan.steps for k in s.kwargs]
    assert "out" in out_kwargs and "where" in out_kwargs
    a1, a2 = a.copy(), a.copy()
    fn(a1, b.copy())
    graph(a2, b.copy())
    np.testing.assert_array_equal(a2, a1)          # `a -= 0.5` reached the caller's array
    assert not np.array_equal(a2, a)


def test_guard_replays_on_the_same_branch_and_raises_on_the_other():
    fn, make = progs.PROGRAMS["guarded"]
    (x,) = make(np.random.RandomState(0))
    with pytest.warns(RuntimeWarning, match="specialized"):
        graph = ivytrace.trace_graph(fn, args=(x.copy(),))
    g = graph.plan.plan.guards
    assert len(g) == 1 and g[0].op == "numpy.ndarray.__float__"
    assert g[0].loc.file.endswith("numpy_programs.py") and g[0].loc.line > 0
    np.testing.assert_array_equal(graph(x.copy()), fn(x.copy()))
    # float() hands Python the value itself: any input that changes it fails the guard, including
    # one that would take the same branch.
    for other in (-x, x + 1.0):
        with pytest.raises(Exception) as err:
            graph(other)
        assert "Guard" in type(err.value).__name__


@pytest.mark.parametrize("op", ["bool", "item", "int", "tolist"])
def test_other_guards_are_recorded_and_checked(op):
    take = {"bool": lambda s: bool(s > 0), "item": lambda s: s.item() > 0,
            "int": lambda s: int(s) > 0, "tolist": lambda s: s.tolist() > 0}[op]

    def fn(x):
        if take(x.sum()):
            return x * 3
        return x

    x = np.arange(1.0, 4.0)
    graph = _trace(fn, (x,))
    assert len(graph.plan.plan.guards) >= 1
    np.testing.assert_array_equal(graph(x), x * 3)
    with pytest.raises(Exception) as err:
        graph(-x)
    assert "Guard" in type(err.value).__name__


def test_methods_attributes_indexing_and_dtypes():
    def fn(x, idx):
        y = x.T.reshape(2, -1).astype(np.float32)
        y[:, 0] = y[:, 1] * 2
        z = y[idx] + np.mean(y, axis=0)
        return z.sum(axis=1), y.max(), np.argmax(z, axis=1)

    x = np.arange(12.0).reshape(3, 4)
    idx = np.array([1, 0])
    graph = _trace(fn, (x, idx))
    for e, g in zip(fn(x.copy(), idx), graph(x.copy(), idx)):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(e))
        assert np.asarray(g).dtype == np.asarray(e).dtype
    x2 = np.random.RandomState(0).randn(3, 4)
    for e, g in zip(fn(x2.copy(), idx), graph(x2.copy(), idx)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-4, atol=1e-5)


# -- the seeds' examples, in NumPy -------------------------------------------------------------

def _cli(cli_binary, *args):
    return subprocess.run([str(cli_binary), *map(str, args)], capture_output=True, text=True, check=True)


def _graph(path):
    data = Path(path).read_bytes()
    return graph_pb2.Graph.FromString(data[8:])


def _live_ops(path):
    return [n.op for n in _graph(path).nodes]


def seeds_first(x, y):
    z = x**y
    k = x * y
    j = np.concatenate([x, z, y])
    s = np.sum(j)
    return z


def seeds_caching(x):
    b = [2]
    a = [2]
    z = x ** (np.array(a) + np.array(b))
    return z


def seeds_generators(x):
    a = np.random.randint(0, 100, size=[1])
    z = x * a
    return z + np.random.rand(1)


def test_seeds_first_example_optimizes_to_only_the_power(cli_binary, tmp_path):
    x, y = np.array([1.0, 2.0, 3.0]), np.array([2.0, 3.0, 4.0])
    graph = _trace(seeds_first, (x, y))
    trace = graph.save(tmp_path / "first.ivytrace")
    _cli(cli_binary, "optimize", trace, "-o", tmp_path / "first.ivygraph")
    assert _live_ops(tmp_path / "first.ivygraph") == ["numpy.power"]
    assert [s.function for s in graph.plan.plan.steps] == ["numpy.power"]
    np.testing.assert_array_equal(graph(x, y), x**y)
    a, b = np.array([[1.0, 2.0]]), np.array([[2.0, 3.0]])
    np.testing.assert_array_equal(graph(a, b), seeds_first(a, b))


def test_seeds_array_caching_folds_to_power_with_constant_4(cli_binary, tmp_path):
    x = np.array([1.0, 2.0, 3.0])
    trace = _trace(seeds_caching, (x,)).save(tmp_path / "cache.ivytrace")
    _cli(cli_binary, "optimize", trace, "-o", tmp_path / "on.ivygraph")
    g = _graph(tmp_path / "on.ivygraph")
    assert [n.op for n in g.nodes] == ["numpy.power"]
    consts = [np.frombuffer(c.data, dtype=np.int64) for c in g.constants if c.data]
    assert any(c.tolist() == [4] for c in consts), consts
    _cli(cli_binary, "optimize", trace, "--no-array-caching", "-o", tmp_path / "off.ivygraph")
    ops = _live_ops(tmp_path / "off.ivygraph")
    assert "numpy.add" in ops and "numpy.power" in ops
    for flag in ([], ["--no-array-caching"]):
        _cli(cli_binary, "export", trace, "--to", "plan", *flag, "-o", tmp_path / "p.ivyplan")
        plan = load_plan(tmp_path / "p.ivyplan")
        np.testing.assert_array_equal(plan(x + 1), seeds_caching(x + 1))


def test_seeds_generators_kept_by_default_and_baked_on_request(cli_binary, tmp_path):
    x = np.array([1.0, 2.0, 3.0])
    np.random.seed(4)
    recorded = seeds_generators(x)
    trace = _trace(seeds_generators, (x,), seed=4).save(tmp_path / "gen.ivytrace")
    _cli(cli_binary, "optimize", trace, "-o", tmp_path / "kept.ivygraph")
    kept = _live_ops(tmp_path / "kept.ivygraph")
    assert "numpy.random.randint" in kept and "numpy.random.rand" in kept
    _cli(cli_binary, "optimize", trace, "--bake-generators", "-o", tmp_path / "baked.ivygraph")
    baked = _live_ops(tmp_path / "baked.ivygraph")
    assert not any(op.startswith("numpy.random.") for op in baked), baked
    # Baked: the recorded random values, whatever the generator state now.
    _cli(cli_binary, "export", trace, "--to", "plan", "--bake-generators", "-o", tmp_path / "b.ivyplan")
    np.random.seed(99)
    np.testing.assert_array_equal(load_plan(tmp_path / "b.ivyplan")(x), recorded)
    # Kept: drawn again on replay, from the same seed the same values.
    _cli(cli_binary, "export", trace, "--to", "plan", "-o", tmp_path / "k.ivyplan")
    np.random.seed(4)
    np.testing.assert_array_equal(load_plan(tmp_path / "k.ivyplan")(x), recorded)


# -- `ivytrace record` on an unmodified NumPy program -------------------------------------------

def test_cli_records_a_numpy_program_and_its_regions_replay(cli_binary, tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(REPO / 'samples')!r})\n"
        "import numpy as np\n"
        "import ivytrace\n"
        "import numpy_programs as p\n"
        "np.random.seed(0)\n"
        "x = np.random.randn(5, 8).astype(np.float32)\n"
        "with ivytrace.region('mlp', inputs={'x': x}) as r:\n"
        "    y = p.mlp(x)\n"
        "    r.set_result(y)\n"
        "np.save(sys.argv[1], x.view(np.ndarray))\n"
        "np.save(sys.argv[2], y.view(np.ndarray))\n"
        "h = np.tanh(x).sum()\n"
        "if h > 0:\n"
        "    print('positive')\n")
    trace = tmp_path / "run.ivytrace"
    env_py = sys.executable
    subprocess.run([str(cli_binary), "record", "--frameworks", "numpy", "-o", str(trace), "--", env_py,
                    str(prog), str(tmp_path / "x.npy"), str(tmp_path / "y.npy")],
                   check=True, capture_output=True, text=True,
                   env={**__import__("os").environ, "PYTHONPATH": str(REPO / "python")})
    _cli(cli_binary, "export", trace, "--to", "plan", "--region", "mlp", "-o", tmp_path / "mlp.ivyplan")
    plan = load_plan(tmp_path / "mlp.ivyplan")
    x, y = np.load(tmp_path / "x.npy"), np.load(tmp_path / "y.npy")
    np.testing.assert_array_equal(plan(x), y)
    fresh = np.random.RandomState(5).randn(7, 8).astype(np.float32)
    np.testing.assert_allclose(plan(fresh), progs.mlp(fresh), rtol=1e-4, atol=1e-5)
    info = subprocess.run([str(cli_binary), "inspect", str(trace), "--json"], capture_output=True, text=True)
    assert "numpy" in info.stdout


def test_onnx_export_of_an_elementwise_and_matmul_numpy_graph(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    w = np.random.RandomState(0).rand(8, 3).astype(np.float32)

    def fn(x, y):
        return np.maximum(np.tanh(x * y + x) @ w, np.float32(0.1))

    x, y = (np.random.RandomState(s).rand(4, 8).astype(np.float32) for s in (1, 2))
    graph = _trace(fn, (x, y))
    path = graph.export(tmp_path / "fn.onnx")
    sess = ort.InferenceSession(str(path))
    fresh = np.random.RandomState(3).rand(4, 8).astype(np.float32)
    out = sess.run(None, {i.name: v for i, v in zip(sess.get_inputs(), (fresh, y))})[0]
    np.testing.assert_allclose(out, fn(fresh, y), rtol=1e-4, atol=1e-5)


def test_onnx_export_of_numpy_arithmetic_with_python_scalars(tmp_path):
    ort = pytest.importorskip("onnxruntime")

    def fn(x):
        return (np.tanh(x) * 2.0 - 1.0) / 4.0 + 3

    x = np.random.RandomState(1).rand(4, 8).astype(np.float32)
    graph = _trace(fn, (x,))
    sess = ort.InferenceSession(str(graph.export(tmp_path / "fn.onnx")))
    fresh = np.random.RandomState(3).rand(6, 8).astype(np.float32)
    out = sess.run(None, {sess.get_inputs()[0].name: fresh})[0]
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, fn(fresh), rtol=1e-5, atol=1e-6)


def test_cli_record_default_frameworks_include_numpy(cli_binary, tmp_path):
    prog = tmp_path / "p.py"
    prog.write_text("import numpy as np\nx = np.ones(3)\ny = np.exp(x) + x\nprint(float(y.sum()) > 0)\n")
    trace = tmp_path / "d.ivytrace"
    done = subprocess.run([str(cli_binary), "record", "-o", str(trace), "--", sys.executable, str(prog)],
                          capture_output=True, text=True,
                          env={**__import__("os").environ, "PYTHONPATH": str(REPO / "python")})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
    from ivytrace.recorder.reader import read_trace
    t = read_trace(str(trace))
    assert "numpy" in [f.name for f in t.header.frameworks]
    names = list(t.op_names())
    assert "numpy.exp" in names and "numpy.add" in names and "numpy.ones" in names
    assert [t.string(g.op) for g in t.of_kind("guard")] == ["numpy.ndarray.__float__"]


def _region_values(trace_path):
    """{region name: (inputs, outputs)} as recorded (REGION_INPUT / REGION_OUTPUT values, in order)."""
    from ivytrace.recorder.reader import read_trace
    from ivytrace.v1 import common_pb2
    dt = {common_pb2.FLOAT32: np.float32, common_pb2.FLOAT64: np.float64, common_pb2.INT64: np.int64,
          common_pb2.BOOL: np.bool_}
    out, name = {}, None
    for rec in read_trace(str(trace_path)).records:
        kind = rec.WhichOneof("kind")
        if kind == "region_begin":
            name = rec.region_begin.name
            out[name] = ([], [])
        elif kind == "tensor" and name is not None and rec.tensor.value.role in (
                common_pb2.REGION_INPUT, common_pb2.REGION_OUTPUT):
            v = rec.tensor.value
            arr = np.frombuffer(v.data, dtype=dt[v.dtype]).reshape(tuple(v.shape))
            out[name][0 if v.role == common_pb2.REGION_INPUT else 1].append(arr)
    return out


def test_cli_records_every_sample_program_and_each_region_replays_its_recorded_outputs(cli_binary, tmp_path):
    trace = tmp_path / "all.ivytrace"
    done = subprocess.run([str(cli_binary), "record", "--frameworks", "numpy", "-o", str(trace), "--",
                           sys.executable, str(REPO / "samples" / "numpy_programs.py")],
                          capture_output=True, text=True,
                          env={**__import__("os").environ, "PYTHONPATH": str(REPO / "python")})
    assert done.returncode == 0, done.stderr
    values = _region_values(trace)
    assert set(values) == set(progs.PROGRAMS)
    for name, (inputs, outputs) in values.items():
        plan_path = tmp_path / f"{name}.ivyplan"
        # random_ops: the recorded draws are baked in, so the replay gives the recorded outputs.
        flags = ["--bake-generators"] if name == "random_ops" else []
        _cli(cli_binary, "export", trace, "--to", "plan", "--region", name, *flags, "-o", plan_path)
        plan = load_plan(plan_path)
        got = _flat(plan(*[a.copy() for a in inputs]))
        assert len(got) == len(outputs), name
        for g, e in zip(got, outputs):
            np.testing.assert_array_equal(np.asarray(g), e, err_msg=name)


def test_lexsort_of_a_list_of_arrays_is_recorded_not_baked():
    # np.lexsort's dispatcher takes a list as one object: NumPy read the recorded arrays in C
    # without dispatching, and the traced order came back on other inputs, silently.
    a, b = np.array([1, 0, 1, 0]), np.array([3, 2, 1, 0])
    a2, b2 = np.array([0, 1, 0, 1]), np.array([0, 1, 2, 3])
    for fn in (lambda a, b: np.lexsort([b, a]), lambda a, b: np.lexsort(keys=[b, a]), lambda a, b: np.lexsort((b, a))):
        g = ivytrace.trace_graph(fn, args=(a, b))
        np.testing.assert_array_equal(g(a2, b2), fn(a2, b2))
        np.testing.assert_array_equal(g(a, b), fn(a, b))


def test_ufunc_at_writes_its_array_in_place_on_replay():
    # np.add.at(y, idx, b) returns None and writes y: the recorder did not list y as written,
    # so the call was dropped as dead code and the replay returned y untouched, silently.
    def scatter(x, idx):
        y = x.copy()
        np.add.at(y, idx, 1.0)
        np.maximum.at(y, [0], x[1:2] * 3)
        np.negative.at(y, [2])
        return y
    x, idx = np.arange(4.0), np.array([0, 0, 1])
    g = ivytrace.trace_graph(scatter, args=(x, idx))
    for x2, i2 in ((np.array([5.0, -1.0, 2.0, 7.0]), np.array([3, 3, 3])), (np.ones(4), idx)):
        np.testing.assert_array_equal(g(x2, i2), scatter(x2, i2))


def test_iterating_over_an_array_guards_its_length():
    # `for row in x` was unrolled for the traced number of rows with no guard: another number
    # of rows summed the traced count, silently. The length is now read as recorded.
    def row_max_sum(x):
        s = 0.0
        for row in x:
            s = s + row.max()
        return s
    g = ivytrace.trace_graph(row_max_sum, args=(np.ones((4, 3)),))
    x = np.random.default_rng(0).standard_normal((4, 3))
    np.testing.assert_allclose(g(x), row_max_sum(x))
    with pytest.raises(ivytrace.GuardError, match="ivytrace.sym"):
        g(np.ones((6, 3)))
    first, second = ivytrace.trace_graph(lambda x: tuple(x), args=(np.ones((2, 3)),))(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(second, [3.0, 4.0, 5.0])
