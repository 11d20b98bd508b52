"""`ivytrace record` on a program with regions of every kind (bare decorator, named decorator,
`with` block, a block that raises) and a second thread: each region builds and replays, every op
record carries the recording thread's id, the program's output and exit status pass through and
the trace still gets a footer naming the exception."""
import sys
import textwrap

import numpy as np
import pytest
import torch

from ivytrace.recorder.reader import read_trace
from ivytrace.runtime.plan import load_plan

EXIT_BAD_INPUT = 3

PROGRAM = """\
import sys, threading, numpy as np, torch, ivytrace

@ivytrace.region
def bare(x, y):
    return torch.tanh(x) * y

@ivytrace.region("named")
def named(a):
    return np.exp(a) + 1

def worker():
    torch.ones(2) * 5          # another thread: not recorded (torch modes are per thread)
    np.ones(2) * 5

x, y = torch.randn(3), torch.randn(3)
print("main", threading.get_ident())
bare(x, y)
named(np.arange(4.0))
t = threading.Thread(target=worker)
t.start()
t.join()
with ivytrace.region("block", inputs={"x": x}) as r:
    r.set_result(torch.relu(x) - 1)
print("to stderr", file=sys.stderr)
with ivytrace.region("fails", inputs={"x": x}):
    z = x + 1
    raise ValueError("boom")
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory, cli):
    d = tmp_path_factory.mktemp("regions")
    prog = d / "prog.py"
    prog.write_text(PROGRAM)
    trace = d / "t.ivt"
    proc = cli("record", "-o", trace, "--", sys.executable, prog)
    return d, prog, trace, proc


def test_output_exit_status_and_footer(recorded):
    d, prog, trace, proc = recorded
    assert proc.returncode == 1
    main_thread = int(proc.stdout.split()[1])
    assert proc.stdout == f"main {main_thread}\n"
    assert proc.stderr.startswith("to stderr\nTraceback (most recent call last):")
    assert proc.stderr.endswith("ValueError: boom\n")
    t = read_trace(str(trace))
    assert t.footer.error == "ValueError: boom" and t.footer.exit_status == 1


def test_every_op_carries_the_recording_thread(recorded):
    d, prog, trace, proc = recorded
    main_thread = int(proc.stdout.split()[1])
    t = read_trace(str(trace))
    ops = t.ops()
    assert len(ops) == 10
    assert {o.thread for o in ops} == {main_thread}
    assert "torch.ones" not in t.op_names() and "numpy.ones" not in t.op_names()


@pytest.mark.parametrize("region", ["bare", "named", "block"])
def test_decorator_and_block_regions_replay(recorded, cli, region):
    d, prog, trace, proc = recorded
    plan_path = d / f"{region}.plan"
    cli("export", trace, "--to", "plan", "--region", region, "-o", plan_path, check=True)
    plan = load_plan(plan_path)
    if region == "bare":
        x, y = torch.randn(6), torch.randn(6)
        torch.testing.assert_close(plan(x, y), torch.tanh(x) * y, rtol=1e-4, atol=1e-5)
    elif region == "named":
        a = np.linspace(0, 2, 7)
        np.testing.assert_allclose(plan(a), np.exp(a) + 1, rtol=1e-4, atol=1e-5)
    else:
        x = torch.randn(5)
        torch.testing.assert_close(plan(x), torch.relu(x) - 1, rtol=1e-4, atol=1e-5)


def test_a_region_that_raised_is_refused_by_name(recorded, cli):
    d, prog, trace, proc = recorded
    out = d / "fails.plan"
    done = cli("export", trace, "--to", "plan", "--region", "fails", "-o", out)
    assert done.returncode == EXIT_BAD_INPUT
    assert f"trace '{trace}': region 'fails:0' ended by an exception" in done.stderr
    assert not out.exists()
