"""Float arguments as graph inputs (recorder/sym.py SymFloat), tested against eager execution on
generated programs: whatever Python arithmetic and control flow a program does with its float,
a replay with another float either gives eager's result or raises a GuardError, never a wrong
answer."""
import math
import os

import hypothesis
import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

import ivytrace

# Each step maps (a, n) -> a: `a` the float argument (or what it became), `n` an int argument.
STEPS = {
    "add": lambda a, n: a + 0.25,
    "rsub": lambda a, n: 1.5 - a,
    "mul_int": lambda a, n: a * n,
    "rmul": lambda a, n: 3 * a,
    "div": lambda a, n: a / 1.7,
    "rdiv": lambda a, n: 2.0 / a,
    "div_int": lambda a, n: a / n,
    "floordiv": lambda a, n: a // 0.3,
    "mod": lambda a, n: a % 0.4,
    "rmod": lambda a, n: 5.0 % a,
    "pow": lambda a, n: a ** 2,
    "neg_abs": lambda a, n: abs(-a),
    "branch": lambda a, n: a * 2 if a > 0.5 else a - 1,
    "sqrt": lambda a, n: math.sqrt(abs(a)),
    "round": lambda a, n: round(a, 1),
    "max": lambda a, n: max(a, 0.1),
}


def _program(steps):
    def fn(x, a, n):
        for s in steps:
            a = STEPS[s](a, n)
        return x * a + a
    return fn


def _run(fn, x, a, n):
    try:
        return fn(x, a, n), None
    except (ZeroDivisionError, OverflowError, ValueError) as e:
        return None, e


@settings(max_examples=int(os.environ.get("IVYTRACE_HYPOTHESIS_EXAMPLES", "25")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.sampled_from(sorted(STEPS)), min_size=1, max_size=4),
       framework=st.sampled_from(["torch", "numpy"]),
       values=st.lists(st.tuples(st.floats(-4, 4, allow_nan=False).filter(lambda v: abs(v) > 1e-3),
                                 st.integers(1, 5)), min_size=3, max_size=3))
def test_generated_float_programs_replay_right_or_raise(steps, framework, values):
    fn = _program(steps)
    x = torch.linspace(-1, 1, 4) if framework == "torch" else np.linspace(-1, 1, 4)
    a0, n0 = values[0]
    want0, err = _run(fn, x, a0, n0)
    hypothesis.assume(err is None)
    g = ivytrace.trace_graph(fn, args=(x, a0, n0))
    for a, n in values:
        want, err = _run(fn, x, a, n)
        if err is not None:
            continue
        try:
            got = g(x, a, n)
        except ivytrace.GuardError:
            continue
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6,
                                   err_msg=f"{steps} traced at {values[0]}, replayed at {(a, n)}")


def test_arithmetic_alone_never_retraces():
    fn = _program(["add", "rsub", "mul_int", "div", "floordiv", "mod", "pow", "neg_abs"])
    x = torch.linspace(-1, 1, 4)
    g = ivytrace.trace_graph(fn, args=(x, 0.7, 2), retrace=True)
    for a, n in ((0.7, 2), (1.9, 3), (-2.5, 1), (3.3, 5)):
        torch.testing.assert_close(g(x, a, n), fn(x, a, n))
    assert g.traces == 1


@pytest.mark.parametrize("step", ["branch", "sqrt", "round"])
def test_control_flow_and_ways_out_are_guards(step):
    fn = _program([step])
    x = torch.linspace(-1, 1, 4)
    g = ivytrace.trace_graph(fn, args=(x, 0.7, 2))
    with pytest.raises(ivytrace.GuardError):
        g(x, 0.2 if step == "branch" else 2.9, 2)
