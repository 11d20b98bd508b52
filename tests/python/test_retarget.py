"""Retargeting: a plan recorded in one framework replays in another (issue 14 item 3).

The sample programs (samples/models.py, torch_programs.py, numpy_programs.py, jax_programs.py) are
traced with trace_graph in their own framework; the exported plan is loaded with
load_plan(path, target=X), or exported by the CLI with `export --to plan --framework X`, and run in
X on fresh inputs. The result must be X's arrays and match the original program within rtol 1e-4,
atol 1e-5. Ops X does not implement are refused at load (and by the CLI), all listed with their
source lines.
"""
import inspect
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import ivytrace
from ivytrace.runtime.allowlist import default_allowlist
from ivytrace.runtime.errors import PlanError
from ivytrace.runtime.plan import load_plan

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "samples"))
import jax_programs  # noqa: E402
import models  # noqa: E402
import numpy_programs  # noqa: E402
import torch_programs  # noqa: E402

jax = pytest.importorskip("jax")

RTOL, ATOL = 1e-4, 1e-5


@pytest.fixture(autouse=True)
def _needs_cli(cli_binary):
    return cli_binary


def _np(x):
    if isinstance(x, torch.Tensor):
        return x.detach().numpy()
    return np.asarray(x)


def _is_target_array(x, target):
    if target == "torch":
        return isinstance(x, torch.Tensor)
    if target == "numpy":
        return isinstance(x, np.ndarray)
    return isinstance(x, jax.Array)


def _trace(fn, args):
    # Frozen: the plan holds the weights the samples reach through their closures and globals
    # (trace_graph's own plan reads them on every call, as inputs).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ivytrace.freeze(fn, args=args)


# (source, name) -> (fn, inputs at trace time, fresh inputs)
def _torch_case(name):
    if name in ("mlp", "cnn"):
        m = models.make_model(name)
        fn = lambda x: m(x)  # noqa: E731
        return fn, (models.make_input(name, seed=1),), (models.make_input(name, seed=2),)
    return torch_programs.attention_block, torch_programs.attention_inputs(0), torch_programs.attention_inputs(3)


def _numpy_case(name):
    fn, make = numpy_programs.PROGRAMS[name]
    return fn, make(np.random.RandomState(11)), make(np.random.RandomState(12))


def _jax_case(name):
    fn, make = jax_programs.PROGRAMS[name]
    return fn, make(np.random.RandomState(11)), make(np.random.RandomState(12))


CASES = {"torch": _torch_case, "numpy": _numpy_case, "jax": _jax_case}
PAIRS = [(s, t) for s in ("torch", "numpy", "jax") for t in ("torch", "numpy", "jax") if s != t]


@pytest.mark.parametrize("source,target", PAIRS)
@pytest.mark.parametrize("name", ["mlp", "cnn", "attention"])
def test_sample_replays_in_another_framework(source, target, name):
    fn, args, fresh = CASES[source](name)
    copies = lambda a: tuple(x.copy() if isinstance(x, np.ndarray) else x for x in a)  # noqa: E731
    with torch.no_grad():
        graph = _trace(fn, copies(args))
        plan = load_plan(graph.plan_path, target=target)
        assert plan.framework == target
        want = fn(*copies(fresh))
        got = plan(*copies(fresh))
    assert _is_target_array(got, target), type(got)
    np.testing.assert_allclose(_np(got).astype(np.float64), _np(want).astype(np.float64), rtol=RTOL, atol=ATOL)
    # The steps still name the recorded framework's functions: the plan is not rewritten.
    assert all(s.function.split(".")[0] in (source, "ivytrace") for s in plan.plan.steps)


def test_inputs_of_any_framework_are_converted_and_constants_are_converted_once():
    m = models.make_model("mlp")
    x = models.make_input("mlp", batch=3, seed=4)
    with torch.no_grad():
        graph = _trace(lambda t: m(t), (x,))
        want = m(x).numpy()
    plan = load_plan(graph.plan_path, target="jax")
    for arg in (x, x.numpy(), jax.numpy.asarray(x.numpy())):
        got = plan(arg)
        assert isinstance(got, jax.Array)
        np.testing.assert_allclose(np.asarray(got), want, rtol=RTOL, atol=ATOL)
    ns_plan = load_plan(graph.plan_path, target="numpy")
    consts = [ns_plan.namespace[k] for k in ns_plan.namespace if k[0] in "cs" and k[1:].isdigit()]
    assert consts and all(isinstance(c, np.ndarray) for c in consts)   # made as NumPy arrays at load


def test_cli_export_framework_writes_a_plan_that_replays_in_the_target(tmp_path, cli_binary):
    fn, args, fresh = _numpy_case("attention")
    graph = _trace(fn, tuple(a.copy() for a in args))
    out = tmp_path / "attention.jax.ivyplan"
    r = subprocess.run([cli_binary, "export", graph.trace_path, "--to", "plan", "--framework", "jax", "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    plan = load_plan(out)      # no target given: the plan's own
    assert plan.plan.framework == "numpy" and plan.plan.target == "jax" and plan.framework == "jax"
    got = plan(*fresh)
    assert isinstance(got, jax.Array)
    np.testing.assert_allclose(np.asarray(got), fn(*fresh), rtol=RTOL, atol=ATOL)
    # ... and load_plan(target=...) still overrides it
    back = load_plan(out, target="torch")(*fresh)
    assert isinstance(back, torch.Tensor)


def _unsupported_in_numpy(x):
    y = torch.cumsum(x, dim=0)                   # no NumPy impl in the schemas
    z = torch.nn.functional.silu(y)               # nor this
    return torch.cumsum(z, dim=0) + torch.tanh(x)  # tanh has one


def test_ops_without_an_implementation_are_all_refused_with_their_source_lines(tmp_path, cli_binary):
    graph = _trace(_unsupported_in_numpy, (torch.randn(5),))
    with pytest.raises(PlanError) as e:
        load_plan(graph.plan_path, target="numpy")
    msg = str(e.value)
    assert "cannot replay in numpy: 3 calls of 2 ops" in msg, msg
    assert "torch.cumsum  x2" in msg and "silu" in msg and "tanh" not in msg.replace("torch.cumsum", "")
    src = Path(__file__).name
    body, first = inspect.getsourcelines(_unsupported_in_numpy)
    lines = [first + 1, first + 2]    # the cumsum and silu lines
    assert "cumsum" in body[1] and "silu" in body[2]
    for n in lines:
        assert f"{src}:{n}" in msg, (n, msg)
    # The CLI refuses the same ops before writing anything.
    out = tmp_path / "p.ivyplan"
    r = subprocess.run([cli_binary, "export", graph.trace_path, "--to", "plan", "--framework", "numpy", "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert "torch.cumsum" in r.stderr and "silu" in r.stderr and f"{src}:{lines[0]}" in r.stderr, r.stderr
    assert not out.exists()
    # ... and in torch itself the plan replays fine
    x = torch.randn(5)
    torch.testing.assert_close(load_plan(graph.plan_path)(x), _unsupported_in_numpy(x))


def test_cli_framework_flag_is_for_plans_only(tmp_path, cli_binary):
    graph = _trace(torch_programs.attention_block, torch_programs.attention_inputs(0))
    r = subprocess.run([cli_binary, "export", graph.trace_path, "--to", "onnx", "--framework", "jax",
                        "-o", str(tmp_path / "m.onnx")], capture_output=True, text=True)
    assert r.returncode == 2 and "--framework applies to --to plan only" in r.stderr
    r = subprocess.run([cli_binary, "export", graph.trace_path, "--to", "plan", "--framework", "tensorflow",
                        "-o", str(tmp_path / "p.ivyplan")], capture_output=True, text=True)
    assert r.returncode != 0 and "tensorflow" in r.stderr


def test_unknown_target_is_refused():
    graph = _trace(torch_programs.attention_block, torch_programs.attention_inputs(0))
    with pytest.raises(PlanError, match="cannot retarget to 'tensorflow'"):
        load_plan(graph.plan_path, target="tensorflow")


def test_allow_list_grows_by_the_schemas_impl_functions_only():
    allow = default_allowlist()
    extra = allow.functions - set(allow.ops)
    named = {c.function for by_op in allow.impls.values() for impls in by_op.values() for i in impls for c in i.call}
    assert extra and extra <= named
    # every impl function resolves in this installation (a typo in the schemas fails here)
    for f in sorted(named):
        allow.function(f, "test")


def test_jax_plan_runs_op_by_op_through_jax_numpy_or_under_one_jit():
    fn, args, fresh = _jax_case("attention")
    graph = _trace(fn, args)
    ops = load_plan(graph.plan_path)
    assert not ops.jitted
    # Primitives with a jax.numpy function call it (no Primitive.bind), bit for bit as un-jitted JAX.
    called = {v for k, v in ops.namespace.items() if k[0] == "f" and k[1:].isdigit()}
    assert jax.numpy.add in called and jax.lax.add_p.bind not in called
    with jax.disable_jit():
        want = fn(*fresh)
    np.testing.assert_array_equal(np.asarray(ops(*fresh)), np.asarray(want))
    plan = load_plan(graph.plan_path, jit=True)
    assert plan.jitted
    np.testing.assert_allclose(np.asarray(plan(*fresh)), np.asarray(fn(*fresh)), rtol=RTOL, atol=ATOL)
    # A retargeted plan runs under jit too, its inputs converted outside it.
    tm = models.make_model("mlp")
    x = models.make_input("mlp", batch=2)
    with torch.no_grad():
        tg = _trace(lambda t: tm(t), (x,))
        jp = load_plan(tg.plan_path, target="jax", jit=True)
        assert jp.jitted
        np.testing.assert_allclose(np.asarray(jp(x)), tm(x).numpy(), rtol=RTOL, atol=ATOL)
    # A guard on a value (float(x.sum()) > 0) needs the concrete array: op by op only.
    g2 = _trace(jax_programs.guarded, (jax.numpy.ones(4),))
    with pytest.raises(PlanError, match="cannot run under jax.jit"):
        load_plan(g2.plan_path, jit=True)
