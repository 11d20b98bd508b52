"""trace_graph's parameters as the seeds document them (issue 14), in each framework where they
apply: several callables, Python modules, the decorator form, modules in and out (live weights,
autograd, train()/eval()), freeze(), static_argnums/static_argnames, return_backend_traced_fn,
and the checks on `to`. Every graph is recorded, exported by the real CLI and replayed."""
import copy
import inspect
import types
import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn as nn

import ivytrace
from ivytrace.runtime.plan import load_plan


@pytest.fixture(autouse=True)
def _needs_cli(cli_binary):
    return cli_binary


def _plan_inputs(graph):
    return [i.name for i in ivytrace.graph_of(graph).plan.plan.inputs]


# -- *objs -----------------------------------------------------------------------------------------
def test_several_callables_give_one_graph_each():
    def f1(x, y):
        return x * y

    def f2(x, y):
        return x - y

    x, y = torch.randn(3), torch.randn(3)
    g1, g2 = ivytrace.trace_graph(f1, f2, args=(x, y))
    assert isinstance(g1, ivytrace.Graph) and isinstance(g2, ivytrace.Graph)
    a, b = torch.randn(4, 2), torch.randn(4, 2)
    assert torch.equal(g1(a, b), a * b) and torch.equal(g2(a, b), a - b)
    lazy1, lazy2 = ivytrace.trace_graph(f1, f2)
    assert isinstance(lazy1, ivytrace.LazyGraph) and not lazy2.initialized
    assert torch.equal(lazy2(a, b), a - b) and lazy2.initialized and not lazy1.initialized


def test_arguments_passed_positionally_are_a_clear_error():
    with pytest.raises(TypeError, match=r"positional argument 2 is a tuple.*args=\(\.\.\.\)"):
        ivytrace.trace_graph(lambda x: x, (torch.ones(2),))


def test_numpy_several_callables():
    def mean(x):
        return np.mean(x, axis=0)

    def scale(x):
        return x * 3.0

    x = np.arange(6.0).reshape(3, 2)
    gm, gs = ivytrace.trace_graph(mean, scale, args=(x,))
    z = np.random.default_rng(0).standard_normal((5, 2))
    np.testing.assert_allclose(gm(z), np.mean(z, axis=0), rtol=1e-12)
    np.testing.assert_allclose(gs(z), z * 3.0, rtol=1e-12)


# -- a Python module -------------------------------------------------------------------------------
def _make_module():
    mod = types.ModuleType("ivytrace_test_mathlib", "a small library of torch functions")
    src = (
        "import torch\n"
        "from math import sqrt\n"
        "def double(x):\n    return x * 2\n"
        "def normalize(x):\n    return (x - torch.mean(x)) / torch.std(x)\n"
        "def _private(x):\n    return x\n"
        "SCALE = 3\n"
    )
    exec(compile(src, "<ivytrace_test_mathlib>", "exec"), mod.__dict__)
    mod.__dict__["__name__"] = "ivytrace_test_mathlib"
    for n in ("double", "normalize", "_private"):
        mod.__dict__[n].__module__ = "ivytrace_test_mathlib"
    return mod


def test_a_python_module_comes_back_as_a_copy_with_its_functions_lazily_traced():
    mod = _make_module()
    traced = ivytrace.trace_graph(mod)
    assert isinstance(traced, types.ModuleType) and traced is not mod
    assert traced.__name__ == mod.__name__ and traced.SCALE == 3 and traced.sqrt is mod.sqrt
    assert isinstance(traced.double, ivytrace.LazyGraph) and isinstance(traced.normalize, ivytrace.LazyGraph)
    assert traced._private is mod._private       # not public: left alone
    assert inspect.isfunction(mod.double)        # the original module is untouched
    x = torch.randn(5)
    assert not traced.double.initialized
    assert torch.equal(traced.double(x), x * 2)
    assert traced.double.initialized and not traced.normalize.initialized
    torch.testing.assert_close(traced.normalize(x), mod.normalize(x))
    y = torch.randn(9)
    torch.testing.assert_close(traced.normalize(y), mod.normalize(y))
    with pytest.raises(ValueError, match="traced lazily"):
        ivytrace.trace_graph(mod, args=(x,))


# -- the decorator form ----------------------------------------------------------------------------
def test_decorator_with_options_and_bare():
    @ivytrace.trace_graph(include_generators=False)
    def noisy(x):
        return x + torch.rand(3)

    @ivytrace.trace_graph
    def plain(x):
        return x * 2

    x = torch.zeros(3)
    first = noisy(x)
    assert isinstance(noisy, ivytrace.LazyGraph) and isinstance(plain, ivytrace.LazyGraph)
    assert torch.equal(noisy(x), first)       # the random draw is baked: the same every call
    assert torch.equal(plain(torch.ones(2)), torch.full((2,), 2.0))


def test_decorator_with_args_traces_at_once():
    @ivytrace.trace_graph(args=(torch.ones(2),))
    def f(x):
        return x + 1

    assert isinstance(f, ivytrace.Graph) and f.traces == 1
    assert torch.equal(f(torch.zeros(4)), torch.ones(4))


# -- modules in, modules out -------------------------------------------------------------------------
def _mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))


def test_a_module_comes_back_itself_with_live_weights():
    model = _mlp()
    eager = copy.deepcopy(model)
    x = torch.randn(5, 4)
    assert ivytrace.trace_graph(model, args=(x,)) is model
    graph = ivytrace.graph_of(model)
    assert model.forward is graph and graph.traces == 1
    names = _plan_inputs(model)
    assert names[0] == "input" and sorted(names[1:]) == sorted(f"param:{n}" for n, _ in model.named_parameters())
    torch.testing.assert_close(model(x), eager(x), rtol=0, atol=0)
    with torch.no_grad():   # a weight update is seen by the next replay
        for m in (model, eager):
            m[0].weight.mul_(-0.5)
            m[2].bias.add_(1.0)
    y = torch.randn(2, 4)
    torch.testing.assert_close(model(y), eager(y), rtol=1e-6, atol=1e-6)
    with torch.no_grad():   # so is a parameter replaced by assignment
        new = nn.Parameter(torch.randn(3, 8))
        model[2].weight = new
        eager[2].weight = nn.Parameter(new.detach().clone())
    torch.testing.assert_close(model(y), eager(y), rtol=1e-6, atol=1e-6)
    assert graph.traces == 1


def test_autograd_flows_through_the_replay():
    model = _mlp()
    eager = copy.deepcopy(model)
    ivytrace.trace_graph(model, args=(torch.randn(2, 4),))
    x = torch.randn(6, 4, requires_grad=True)
    x2 = x.detach().clone().requires_grad_(True)
    out = model(x)
    assert out.requires_grad and out.grad_fn is not None
    out.pow(2).sum().backward()
    eager(x2).pow(2).sum().backward()
    for (n, p), q in zip(model.named_parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-6, atol=1e-7, msg=n)
    torch.testing.assert_close(x.grad, x2.grad, rtol=1e-6, atol=1e-7)


class _DropNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.bn = nn.BatchNorm1d(4)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.bn(self.lin(x)))


def test_train_and_eval_keep_their_meaning():
    torch.manual_seed(0)
    model = _DropNorm().eval()
    eager = copy.deepcopy(model)
    x = torch.randn(8, 4)
    ivytrace.trace_graph(model, args=(x,))
    graph = ivytrace.graph_of(model)
    torch.testing.assert_close(model(x), eager(x))           # eval: no dropout, running stats
    model.train()
    eager.train()
    with pytest.warns(ivytrace.RetraceWarning, match="eval mode when traced and is in train mode"):
        torch.manual_seed(1)
        got = model(x)
    torch.manual_seed(1)
    want = eager(x)
    assert graph.traces == 2
    torch.testing.assert_close(got, want)                    # the same dropout mask, batch stats
    assert (got == 0).any()
    # train mode updated the running statistics, in both
    torch.testing.assert_close(model.bn.running_mean, eager.bn.running_mean)
    torch.manual_seed(2)
    got = model(x + 1)
    torch.manual_seed(2)
    torch.testing.assert_close(got, eager(x + 1))
    torch.testing.assert_close(model.bn.running_var, eager.bn.running_var)
    model.eval()
    eager.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("error")                       # back to the first specialization
        torch.testing.assert_close(model(x), eager(x))       # with the updated running stats
    assert graph.traces == 2


def test_array_caching_folds_what_depends_on_no_parameter_and_no_input():
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            k = torch.tensor([2.0]) * torch.tensor([3.0]) + torch.tensor([1.0])   # constant: folded
            w = self.lin.weight * 2                                                # reads a parameter: kept
            return x @ w.t() * k

    torch.manual_seed(0)
    cached, uncached = Scaled(), Scaled()
    uncached.load_state_dict(cached.state_dict())
    eager = copy.deepcopy(cached)
    x = torch.randn(2, 3)
    ivytrace.trace_graph(cached, args=(x,))
    ivytrace.trace_graph(uncached, args=(x,), array_caching=False)
    fns = lambda m: [s.function for s in ivytrace.graph_of(m).plan.plan.steps]   # noqa: E731
    assert len(fns(cached)) < len(fns(uncached))
    assert "torch.tensor" not in fns(cached) and "torch.tensor" in fns(uncached)
    # weight * 2 is still computed on every call, beside the product with the folded k
    assert fns(cached).count("torch.Tensor.mul") == 2 and "torch.Tensor.t" in fns(cached)
    with torch.no_grad():
        for m in (cached, uncached, eager):
            m.lin.weight.add_(0.25)
    torch.testing.assert_close(cached(x), eager(x))
    torch.testing.assert_close(uncached(x), eager(x))


def test_freeze_gives_the_frozen_weights_graph():
    model = _mlp()
    x = torch.randn(2, 4)
    ivytrace.trace_graph(model, args=(x,))
    frozen = ivytrace.freeze(model)
    assert isinstance(frozen, ivytrace.Graph) and _plan_inputs(frozen) == ["input"]
    before = frozen(x)
    torch.testing.assert_close(before, model(x))
    with torch.no_grad():
        model[0].weight.mul_(2)
    torch.testing.assert_close(frozen(x), before)       # frozen: the update is not seen
    assert not torch.allclose(model(x), before)          # the module's own replay sees it
    assert ivytrace.graph_of(model) is model.forward     # freezing left the module as it was
    # freeze() of a module never traced, with arguments
    other = ivytrace.freeze(_mlp(), args=(x,))
    assert _plan_inputs(other) == ["input"]
    with pytest.raises(TypeError, match="torch.nn.Module, a function"):
        ivytrace.freeze(3)
    # A function: the weights it reaches through its closure are constants of its plan.
    m = _mlp()
    fz = ivytrace.freeze(lambda v: m(v), args=(x,))
    assert len(_plan_inputs(fz)) == 1
    with torch.no_grad():
        torch.testing.assert_close(fz(x), m(x))


def test_a_module_traced_again_replaces_its_replay():
    model = _mlp()
    ivytrace.trace_graph(model, args=(torch.randn(2, 4),))
    first = model.forward
    ivytrace.trace_graph(model, args=(torch.randn(3, 4),), array_caching=False)
    assert model.forward is not first and model.forward.traces == 1
    eager = type(model).forward.__get__(model)
    x = torch.randn(4, 4)
    torch.testing.assert_close(model(x), eager(x))


def test_lazy_module_traces_on_first_call():
    model = _mlp()
    eager = copy.deepcopy(model)
    assert ivytrace.trace_graph(model) is model
    assert isinstance(model.forward, ivytrace.LazyGraph) and not model.forward.initialized
    x = torch.randn(3, 4)
    torch.testing.assert_close(model(x), eager(x))
    assert model.forward.initialized
    torch.testing.assert_close(model(x * 2), eager(x * 2))


def test_check_runs_the_modules_own_forward():
    model = _mlp()
    ivytrace.trace_graph(model, args=(torch.randn(2, 4),))
    report = ivytrace.graph_of(model).check()
    assert report and report.outputs


# -- static_argnums / static_argnames and Python numbers -----------------------------------------
def scaled_sum(x, n, axis=0):
    return x.sum(axis) * n


def test_a_python_int_is_an_input_not_baked():
    x = torch.randn(3, 4)
    g = ivytrace.trace_graph(scaled_sum, args=(x, 3))
    assert "n" in _plan_inputs(g)
    for n in (3, 7, -2):
        torch.testing.assert_close(g(x, n), scaled_sum(x, n))
    assert g.traces == 1


def test_a_python_int_is_an_input_of_a_numpy_graph_too():
    def f(x, n):
        return x * n + np.arange(n).sum() - n * x * len(x)   # the int on either side

    x = np.arange(3, dtype=np.float32)
    g = ivytrace.trace_graph(f, args=(x, 4))
    assert "n" in _plan_inputs(g)
    for n in (4, 7, 1):
        np.testing.assert_allclose(g(x, n), f(x, n))
    assert g.traces == 1


@pytest.mark.parametrize("framework", ["torch", "numpy"])
def test_a_split_into_another_count_of_pieces_is_a_guard_failure(framework):
    # The count of a split's results follows the int; the replay unpacks the traced count.
    if framework == "torch":
        def f(x, k):
            return torch.chunk(x, k)[0] * k
        x = torch.arange(12.0)
    else:
        def f(x, k):
            return np.split(x, k)[0] * k
        x = np.arange(12.0)
    g = ivytrace.trace_graph(f, args=(x, 3))
    assert g(x, 3).tolist() == f(x, 3).tolist()
    with pytest.raises(ivytrace.GuardError, match=r"returned 3 values; on these inputs it returns 4"):
        g(x, 4)
    lazy = ivytrace.trace_graph(f, retrace=True)
    lazy(x, 3)
    with pytest.warns(ivytrace.RetraceWarning, match="returned 3 values"):
        assert lazy(x, 4).tolist() == f(x, 4).tolist()


def test_static_argnums_specializes_with_a_guard():
    x = torch.randn(3, 4)
    g = ivytrace.trace_graph(scaled_sum, args=(x, 3), static_argnums=1)
    torch.testing.assert_close(g(x, 3), scaled_sum(x, 3))
    with pytest.raises(ivytrace.GuardError, match=r"input 'n' was 3 when traced and is 7 now"):
        g(x, 7)
    g = ivytrace.trace_graph(scaled_sum, args=(x, 3), static_argnums=[1], retrace=True)
    with pytest.warns(ivytrace.RetraceWarning, match="'n' was 3"):
        torch.testing.assert_close(g(x, 7), scaled_sum(x, 7))
    assert g.traces == 2


def test_static_argnames_specializes_with_a_guard():
    x = torch.randn(3, 4)
    g = ivytrace.trace_graph(scaled_sum, args=(x, 2), kwargs={"axis": 1}, static_argnames="axis")
    torch.testing.assert_close(g(x, 5, axis=1), scaled_sum(x, 5, axis=1))   # n is an input
    with pytest.raises(ivytrace.GuardError, match="'axis' was 1"):
        g(x, 5, axis=0)
    # static_argnums names the same parameter passed by keyword (as jax.jit does)
    g = ivytrace.trace_graph(scaled_sum, args=(x,), kwargs={"n": 2}, static_argnums=1)
    with pytest.raises(ivytrace.GuardError, match="'n' was 2"):
        g(x, n=4)


def test_a_python_float_is_an_input_not_baked():
    def f(x, alpha, beta):
        s = alpha * 2 - beta            # Python arithmetic on the floats is recorded too
        return x * s + torch.full_like(x, alpha) + x.clamp(min=-alpha) * (1 / alpha) + alpha // 0.3 + alpha % 0.4

    x = torch.randn(3)
    g = ivytrace.trace_graph(f, args=(x, 0.7, 0.5))
    assert _plan_inputs(g) == ["x", "alpha", "beta"]
    for alpha, beta in ((0.7, 0.5), (1.9, -3.0), (-0.35, 0.0)):
        torch.testing.assert_close(g(x, alpha, beta), f(x, alpha, beta))
    assert g.traces == 1


def test_a_python_float_is_an_input_of_a_numpy_graph_too():
    def f(a, s):
        return a * s + np.float32(1.0) - s ** 2

    a = np.ones(2, np.float32)
    g = ivytrace.trace_graph(f, args=(a, 0.5))
    for s in (0.5, 3.0, -1.25):
        np.testing.assert_allclose(g(a, s), f(a, s), rtol=1e-6)
    assert g.traces == 1


def test_a_float_that_decides_control_flow_or_leaves_python_is_guarded():
    def branch(x, t):
        return x * t if t > 0.5 else x - t

    def leaves(x, t):
        return x * math.sqrt(t)         # math.sqrt takes the plain float: the graph holds its result

    x = torch.randn(3)
    g = ivytrace.trace_graph(branch, args=(x, 0.7))
    torch.testing.assert_close(g(x, 0.9), branch(x, 0.9))     # the comparison holds: no retrace
    with pytest.raises(ivytrace.GuardError, match=r"ivytrace.sym.__bool__ gave True; on these inputs it gives False"):
        g(x, 0.1)
    g = ivytrace.trace_graph(leaves, args=(x, 4.0))
    torch.testing.assert_close(g(x, 4.0), leaves(x, 4.0))
    with pytest.raises(ivytrace.GuardError, match=r"__float__ gave 4.0; on these inputs it gives 9.0"):
        g(x, 9.0)


def test_static_argnums_specializes_a_float_with_a_guard():
    x = torch.randn(3)
    g = ivytrace.trace_graph(lambda x, s: x * s, args=(x, 0.5), static_argnums=1)
    torch.testing.assert_close(g(x, 0.5), x * 0.5)
    with pytest.raises(ivytrace.GuardError, match="was 0.5 when traced and is 1.5 now"):
        g(x, 1.5)


def test_an_int_used_in_control_flow_is_guarded():
    def reps(x, n):
        for _ in range(n):
            x = x + 1
        return x

    x = torch.zeros(2)
    g = ivytrace.trace_graph(reps, args=(x, 3))
    assert torch.equal(g(x, 3), torch.full((2,), 3.0))
    with pytest.raises(ivytrace.GuardError):
        g(x, 4)


@pytest.mark.parametrize("op", ["flip", "softmax", "transpose", "topk"])
def test_an_int_naming_a_dim_or_a_count_is_an_input_too(op):
    fns = {"flip": lambda x, d: torch.flip(x, (d,)), "softmax": lambda x, d: torch.softmax(x, d),
           "transpose": lambda x, d: x.transpose(d, 0), "topk": lambda x, d: torch.topk(x, d).values}
    f = fns[op]
    x = torch.randn(3, 4)
    g = ivytrace.trace_graph(f, args=(x, 1))
    assert _plan_inputs(g) == ["x", "d"]
    torch.testing.assert_close(g(x, 0 if op != "topk" else 3), f(x, 0 if op != "topk" else 3))
    assert g.traces == 1


def test_an_export_failure_with_int_inputs_is_the_clis_error_not_a_warning():
    # The CLI refuses the op itself: specializing the int does not help, and nothing claims it would.
    with warnings.catch_warnings():
        warnings.simplefilter("error", ivytrace.StateWarning)
        with pytest.raises(ivytrace.CLIError, match="torch.as_strided"):
            ivytrace.trace_graph(lambda x, d: torch.as_strided(x, (2,), (2,), d), args=(torch.randn(5), 0))


def test_bad_static_arguments_are_clear_errors():
    with pytest.raises(TypeError, match="static_argnums must be an int or a list of ints"):
        ivytrace.trace_graph(scaled_sum, static_argnums="n")
    with pytest.raises(TypeError, match="static_argnames must be a str"):
        ivytrace.trace_graph(scaled_sum, static_argnames=[1])


# -- return_backend_traced_fn ----------------------------------------------------------------------
def test_return_backend_traced_fn_torch_compiles_the_replay():
    def f(x, y):
        return torch.relu(x @ y) + 1

    x, y = torch.randn(4, 5), torch.randn(5, 3)
    g = ivytrace.trace_graph(f, args=(x, y), return_backend_traced_fn=True)
    spec = g._latest()
    assert spec.backend == "torch.compile" and spec.fn is not spec.plan._fn
    torch.testing.assert_close(g(x, y), f(x, y))
    a, b = torch.randn(4, 5), torch.randn(5, 3)
    torch.testing.assert_close(g(a, b), f(a, b))


def test_return_backend_traced_fn_numpy_is_a_clear_error():
    with pytest.raises(ValueError, match="NumPy has no compiler"):
        ivytrace.trace_graph(lambda x: x + 1, args=(np.ones(3),), return_backend_traced_fn=True)
    with pytest.raises(ValueError, match="NumPy has no compiler"):
        ivytrace.trace_graph(lambda x: x + 1, to="numpy", return_backend_traced_fn=True)


# -- to= -------------------------------------------------------------------------------------------
def test_to_names_a_known_framework():
    with pytest.raises(ValueError, match="to='tensorflow'.*'torch', 'numpy', 'jax'"):
        ivytrace.trace_graph(lambda x: x, to="tensorflow")
    x = torch.randn(3)
    g = ivytrace.trace_graph(lambda x: x * 2, args=(x,), to="torch")   # the traced framework
    assert torch.equal(g(x), x * 2)


def test_to_replays_a_torch_graph_in_numpy_and_jax():
    # The runtime's retargeting (load_plan(target=...)): inputs converted at the boundary, the
    # outputs are the target's arrays.
    lin = torch.nn.Linear(4, 3)

    def f(x):
        return torch.relu(lin(x)) * 2

    x = torch.randn(5, 4)
    with torch.no_grad():
        want = f(x).numpy()
        g_np = ivytrace.trace_graph(f, args=(x,), to="numpy")
        g_jax = ivytrace.trace_graph(f, args=(x,), to="jax")
    got_np = g_np(x.numpy())
    assert isinstance(got_np, np.ndarray)
    np.testing.assert_allclose(got_np, want, rtol=1e-4, atol=1e-5)
    got_jax = g_jax(x)
    assert type(got_jax).__module__.startswith("jax")
    np.testing.assert_allclose(np.asarray(got_jax), want, rtol=1e-4, atol=1e-5)


# -- stateful: keyword arguments -------------------------------------------------------------------
def test_kwarg_stateful_idxs_writes_the_attribute_back():
    def step(x, state=None):
        state.total = state.total + x.sum()
        return x * 2

    x = torch.ones(3)
    g = ivytrace.trace_graph(step, args=(x,), kwargs={"state": types.SimpleNamespace(total=torch.zeros(()))},
                             kwarg_stateful_idxs=["state"])
    s = types.SimpleNamespace(total=torch.tensor(10.0))
    assert torch.equal(g(torch.ones(2), state=s), torch.full((2,), 2.0))
    assert float(s.total) == 12.0
    g(torch.ones(5), state=s)
    assert float(s.total) == 17.0


# -- JAX ---------------------------------------------------------------------------------------------
def test_jax_return_backend_traced_fn_jits_the_replay_with_static_args():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def f(x, k, scale):
        return jnp.tanh(x @ x.T) * scale + k

    x = jnp.asarray(np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32))
    g = ivytrace.trace_graph(f, args=(x, 2, 0.5), static_argnums=(1,), static_argnames="scale",
                             return_backend_traced_fn=True)
    spec = g._latest()
    assert spec.backend == "jax.jit"
    np.testing.assert_allclose(np.asarray(g(x, 2, 0.5)), np.asarray(f(x, 2, 0.5)), rtol=1e-5, atol=1e-6)
    y = jnp.asarray(np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32))
    np.testing.assert_allclose(np.asarray(g(y, 2, 0.5)), np.asarray(f(y, 2, 0.5)), rtol=1e-5, atol=1e-6)
    assert spec.fn._cache_size() == 1      # compiled once, reused for same-shaped inputs
    with pytest.raises(ivytrace.GuardError, match="'k' was 2"):
        g(x, 3, 0.5)


def test_jax_several_callables_and_int_arguments():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def first(x, n):
        return x[:n].sum()

    def second(x, n):
        return x * n

    x = jnp.arange(6.0)
    g1, g2 = ivytrace.trace_graph(first, second, args=(x, 2))
    assert float(g1(x, 2)) == 1.0
    # An int the program computes with is an input of the graph, as in torch and NumPy ...
    np.testing.assert_array_equal(np.asarray(g2(x + 1, 2)), np.asarray((x + 1) * 2))
    np.testing.assert_array_equal(np.asarray(g2(x, 5)), np.asarray(x * 5))
    # ... and one JAX bakes into a primitive (a slice bound) is guarded.
    with pytest.raises(ivytrace.GuardError, match=r"ivytrace.sym.__index__ gave 2"):
        g1(x, 5)


def test_flax_apply_keeps_params_as_inputs():
    pytest.importorskip("flax")
    import flax.linen as fnn
    import jax
    import jax.numpy as jnp

    class MLP(fnn.Module):
        @fnn.compact
        def __call__(self, x):
            return fnn.Dense(3)(fnn.relu(fnn.Dense(8)(x)))

    model = MLP()
    x = jnp.asarray(np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32))
    params = model.init(jax.random.PRNGKey(0), x)
    g = ivytrace.trace_graph(model.apply, args=(params, x))
    np.testing.assert_allclose(np.asarray(g(params, x)), np.asarray(model.apply(params, x)), rtol=1e-5, atol=1e-6)
    # New weights (as an optimizer step makes them): the replay reads them, nothing was frozen.
    new = jax.tree_util.tree_map(lambda p: p * 1.5 + 0.1, params)
    want = model.apply(new, x)
    assert not np.allclose(np.asarray(want), np.asarray(model.apply(params, x)))
    np.testing.assert_allclose(np.asarray(g(new, x)), np.asarray(want), rtol=1e-5, atol=1e-6)
    assert g.traces == 1


def test_specializations_alternate_through_the_direct_call_path():
    """A Graph calls its newest specialization's replay directly when the call's arguments are
    its inputs as they are; a guard that fails there goes on to the other specializations (each
    replayed once), and the one that took the call becomes the newest."""
    calls = []

    def branch(x):
        calls.append(x.shape[0])
        return x * 2 if x.shape[0] > 2 else x - 1

    g = ivytrace.trace_graph(branch, retrace=True)
    small, big = torch.randn(2, 3), torch.randn(4, 3)
    torch.testing.assert_close(g(small), small - 1)
    with pytest.warns(ivytrace.RetraceWarning):
        torch.testing.assert_close(g(big), big * 2)
    traced = len(calls)
    for x in (small, big, big, small, small, big):
        torch.testing.assert_close(g(x), branch(x))
    assert g.traces == 2
    assert len(calls) == traced + 6   # the replays never ran the function; only the comparisons did
    with pytest.raises(TypeError):
        g(small, small)              # a wrong number of arguments still binds as before
    torch.testing.assert_close(g(x=big), big * 2)   # and keywords
