"""Record -> optimize -> export -> onnxruntime / plan replay, on the sample MLP and ResNet-style CNN.

These run the real recorder on real programs and the real CLI on the traces they leave.
"""
import copy
import json
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

import ivytrace
from pathlib import Path

from models import make_input, make_model

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

RTOL, ATOL = 1e-4, 1e-5


@pytest.fixture(scope="module", params=["mlp", "cnn", "gpt"])
def recorded(request, cli, tmp_path_factory):
    """Records samples/run_model.py through `ivytrace record`, then optimizes and exports it."""
    name = request.param
    d = tmp_path_factory.mktemp(name)
    trace, io = d / f"{name}.ivt", d / "io.pt"
    rec = cli("record", "-o", trace, "--", sys.executable, SAMPLES / "run_model.py", name, "--save-io", io)
    assert rec.returncode == 0, rec.stderr
    assert f"{name}: input" in rec.stdout, "the program's stdout must pass through"
    graph = d / f"{name}.ivg"
    cli("optimize", trace, "-o", graph, "--verify", check=True)
    onnx_path, plan_path = d / f"{name}.onnx", d / f"{name}.plan"
    cli("export", graph, "--to", "onnx", "-o", onnx_path, check=True)
    cli("export", trace, "--to", "plan", "-o", plan_path, check=True)
    return dict(name=name, dir=d, trace=trace, graph=graph, onnx=onnx_path, plan=plan_path,
                io=torch.load(io))


def run_onnx(path, x):
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (inp,) = sess.get_inputs()
    (out,) = sess.run(None, {inp.name: x.numpy()})
    return out


def test_onnx_matches_torch_on_recorded_and_fresh_inputs(recorded):
    io = recorded["io"]
    np.testing.assert_allclose(run_onnx(recorded["onnx"], io["input"]), io["output"].numpy(), rtol=RTOL, atol=ATOL)
    # Fresh inputs of another batch size: the exported batch dimension is symbolic (also for the
    # GPT block, whose views were recorded with the batch size the program read from x.shape).
    model = make_model(recorded["name"])
    fresh = make_input(recorded["name"], batch=7, seed=123)
    with torch.no_grad():
        expected = model(fresh)
    np.testing.assert_allclose(run_onnx(recorded["onnx"], fresh), expected.numpy(), rtol=RTOL, atol=ATOL)


def test_onnx_model_passes_checker_and_names_initializers_after_parameters(recorded):
    model = onnx.load(str(recorded["onnx"]))
    onnx.checker.check_model(model, full_check=True)
    names = {i.name for i in model.graph.initializer}
    expected = {"mlp": {"fc1.weight", "fc1.bias", "head.weight"},
                # fold-conv-bn (default pipeline) replaces each conv's weight by one with its batch norm folded in
                "cnn": {"conv1.weight.folded_bn", "conv1.bias.folded_bn", "layer1.0.conv1.weight.folded_bn",
                        "layer2.0.downsample.0.weight.folded_bn", "fc.weight"},
                # a linear weight of a 3-d input is stored transposed for MatMul (FoldInitializerTransposes);
                # q, k and v, which read one input, are one MatMul by their weights side by side
                # (FuseParallelMatMuls), named after the first and listing all three
                "gpt": {"ln1.weight", "ln1.bias", "q.weight.T.fused", "fc2.bias"}}
    assert expected[recorded["name"]] <= names, sorted(names)
    if recorded["name"] == "gpt":
        fused = next(i for i in model.graph.initializer if i.name == "q.weight.T.fused")
        assert "q.weight.T, k.weight.T, v.weight.T" in fused.doc_string
    assert [i.name for i in model.graph.input] == ["x"]


def test_plan_replay_matches_torch_on_recorded_input(recorded):
    graph = ivytrace.load_plan(recorded["plan"])
    io = recorded["io"]
    with torch.no_grad():
        out = graph(io["input"])
    if recorded["name"] == "cnn":
        # fold-conv-bn changes the rounding: close, not bit-equal
        torch.testing.assert_close(out, io["output"], rtol=1e-4, atol=1e-5)
    else:
        assert torch.equal(out, io["output"])


def test_optimized_graph_holds_only_the_forward_pass(recorded, cli):
    info = json.loads(cli("inspect", recorded["graph"], "--json", check=True).stdout)
    ops = info["ops"]
    # argmax/tolist run after the region returns: they are not part of the graph.
    assert not any("argmax" in op or "tolist" in op for op in ops), ops
    if recorded["name"] == "cnn":
        # stem 1 + layer1 2x2 + layer2 (2 + downsample 1) + 2
        assert ops["torch.nn.functional.conv2d"] == 10
        assert "torch.nn.functional.batch_norm" not in ops  # all folded into the convs
        assert ops["torch.Tensor.add_"] == 4  # `out += identity` in each block, in place
    elif recorded["name"] == "gpt":
        assert ops["torch.nn.functional.linear"] == 6 and ops["torch.nn.functional.layer_norm"] == 2
        assert "torch.Tensor.contiguous" not in ops and "torch.nn.functional.dropout" not in ops
    else:
        assert ops["torch.nn.functional.linear"] == 3
    trace_info = json.loads(cli("inspect", recorded["trace"], "--json", check=True).stdout)
    assert trace_info["complete"] is True
    assert [r["name"] for r in trace_info["regions"]] == ["forward"]


def test_trace_graph_of_module_replays_the_recorded_result(recorded):
    model = make_model(recorded["name"])
    eager = copy.deepcopy(model)   # trace_graph(model) replaces model.forward by the replay
    x = make_input(recorded["name"])
    with torch.no_grad():
        graph = ivytrace.trace_graph(model, args=(x,))
        assert graph is model
        expected = eager(x)
        if recorded["name"] == "cnn":  # batch norms folded into the convs: other rounding
            torch.testing.assert_close(graph(x), expected, rtol=1e-4, atol=1e-5)
        else:
            assert torch.equal(graph(x), expected)
        # (the GPT block's views hold the recorded batch size: a plan replays the recorded shapes)
        fresh = make_input(recorded["name"], batch=4 if recorded["name"] == "gpt" else 5, seed=9)
        torch.testing.assert_close(graph(fresh), eager(fresh), rtol=RTOL, atol=ATOL)


def test_viz_writes_svg_and_dot(recorded, cli):
    svg, dot = recorded["dir"] / "g.svg", recorded["dir"] / "g.dot"
    cli("viz", recorded["graph"], "-o", svg, check=True)
    cli("viz", recorded["trace"], "-o", dot, check=True)
    text = svg.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    assert "digraph" in dot.read_text()
