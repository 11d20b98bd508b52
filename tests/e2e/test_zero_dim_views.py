"""Views of 0-d tensors: torch takes dims 0 and -1 for a scalar (x.transpose(0, 0)); the graph
builder must too, for every command (this once crashed optimize, viz and export)."""
import sys

import pytest
import torch

import ivytrace

PROGRAM = """
import torch, ivytrace
x = torch.tensor(2.0)
with ivytrace.region("r", inputs={"x": x}) as r:
    y = x.transpose(0, 0) + 1
    z = x.clone()
    z.transpose(-1, 0).mul_(3)
    r.set_result((y, z))
"""


def test_transpose_of_a_scalar_replays(cli):
    def f(x):
        return x.transpose(0, 0) + 1

    g = ivytrace.trace_graph(f, args=(torch.tensor(2.0),))
    assert g(torch.tensor(5.0)).item() == 6.0


def test_every_command_handles_a_recorded_scalar_transpose(cli, tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    trace = tmp_path / "t.ivt"
    cli("record", "-o", trace, "--", sys.executable, prog, check=True)
    cli("optimize", trace, "-o", tmp_path / "g.ivg", check=True)
    cli("viz", trace, "-o", tmp_path / "g.dot", check=True)
    cli("export", trace, "--to", "plan", "-o", tmp_path / "g.plan", check=True)
    plan = ivytrace.load_plan(str(tmp_path / "g.plan"))
    y, z = plan(torch.tensor(4.0))
    assert y.item() == 5.0 and z.item() == 12.0
