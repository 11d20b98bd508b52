"""The seeds' first example: only the power survives, and new shapes work."""
import json

import torch

import ivytrace
from seeds_example import fn  # samples/: the same program a user runs


def test_seeds_first_example_optimizes_to_the_power(cli, tmp_path, capsys):
    x = torch.tensor([1.0, 2.0, 3.0])
    y = torch.tensor([2.0, 3.0, 4.0])
    graph = ivytrace.trace_graph(fn, args=(x, y))
    trace = tmp_path / "seeds.ivt"
    graph.save(trace)
    raw = json.loads(cli("inspect", trace, "--json", check=True).stdout)["ops"]
    assert raw["torch.cat"] == 1 and raw["torch.sum"] == 1  # recorded...
    optimized = tmp_path / "seeds.ivg"
    cli("optimize", trace, "-o", optimized, check=True)
    ops = json.loads(cli("inspect", optimized, "--json", check=True).stdout)["ops"]
    assert ops == {"torch.Tensor.__pow__": 1}  # ...and removed

    assert torch.equal(graph(x, y), fn(x, y))
    a = torch.tensor([[1.0, 2.0]])
    b = torch.tensor([[2.0, 3.0]])
    capsys.readouterr()
    out = graph(a, b)
    assert torch.equal(out, a**b)
    assert capsys.readouterr().out == "", "the replay must not print: print is not part of the graph"


def test_lazy_graph_traces_on_first_call():
    lazy = ivytrace.trace_graph(fn)
    x = torch.tensor([1.0, 2.0, 3.0])
    y = torch.tensor([2.0, 3.0, 4.0])
    assert torch.equal(lazy(x, y), x**y)
    assert torch.equal(lazy(y, x), y**x)
