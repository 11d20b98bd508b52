"""The optimizer passes on real recorded programs: what each pass removes, and that the plan after
the full pipeline replays exactly what the program computed."""
import json
import re

import pytest
import torch

import ivytrace
from ivytrace.v1 import graph_pb2
from models import make_input, make_model

GRAPH_MAGIC = b"IVYGRF01"


def load_graph(path):
    data = path.read_bytes()
    assert data[:8] == GRAPH_MAGIC
    g = graph_pb2.Graph()
    g.ParseFromString(data[8:])
    return g


def ops_of(cli, path):
    return json.loads(cli("inspect", path, "--json", check=True).stdout)["ops"]


def report_rows(stdout):
    """`optimize --report` rows as {pass: (before, after)}; a fixed-point stage's later rounds are
    named pass#2, pass#3, ..."""
    rows = {}
    for line in stdout.splitlines()[1:]:
        if line.startswith(("shape reads", "time:")):
            continue
        name, before, after, *_ = line.split()
        rows[name] = (int(before), int(after))
    return rows


def caching_fn(x):
    b = torch.tensor([2])
    a = torch.tensor([2])
    return x ** (a + b)


def test_array_caching_folds_the_constant_ops_into_one_recorded_value(cli, tmp_path):
    x = torch.tensor([1.0, 2.0, 3.0])
    graph = ivytrace.trace_graph(caching_fn, args=(x,))
    trace = graph.save(tmp_path / "caching.ivt")
    assert ops_of(cli, trace) == {"torch.tensor": 2, "torch.Tensor.add": 1, "torch.Tensor.__pow__": 1}

    folded = tmp_path / "folded.ivg"
    run = cli("optimize", trace, "-o", folded, "--verify", "--report", check=True)
    assert report_rows(run.stdout)["constant-fold"] == (4, 1)
    assert ops_of(cli, folded) == {"torch.Tensor.__pow__": 1}
    g = load_graph(folded)
    (power,) = g.nodes
    exponent = g.values[power.args[1].tensor.value]
    assert exponent.kind == graph_pb2.CONSTANT_VALUE
    const = g.constants[exponent.constant]
    assert list(const.shape) == [1]
    assert int.from_bytes(const.data, "little", signed=True) == 4  # int64 [4]

    kept = tmp_path / "kept.ivg"
    cli("optimize", trace, "-o", kept, "--no-array-caching", check=True)
    assert ops_of(cli, kept) == {"torch.tensor": 2, "torch.Tensor.add": 1, "torch.Tensor.__pow__": 1}

    # The folding plan (what trace_graph replays) and the uncached one agree with fn on new x.
    fresh = torch.tensor([[0.5, -1.0], [3.0, 4.0]])
    assert torch.equal(graph(fresh), caching_fn(fresh))
    uncached = ivytrace.trace_graph(caching_fn, args=(x,), array_caching=False)
    assert torch.equal(uncached(fresh), caching_fn(fresh))
    plan = tmp_path / "kept.plan"
    cli("export", trace, "--to", "plan", "-o", plan, "--no-array-caching", check=True)
    assert torch.equal(ivytrace.load_plan(plan)(fresh), caching_fn(fresh))


def test_fold_size_limit_keeps_larger_values(cli, tmp_path):
    x = torch.tensor([1.0, 2.0, 3.0])
    trace = ivytrace.trace_graph(caching_fn, args=(x,)).save(tmp_path / "limit.ivt")
    out = tmp_path / "limit.ivg"
    cli("optimize", trace, "-o", out, "--fold-size-limit", "4", check=True)  # int64 values: 8 bytes
    assert ops_of(cli, out)["torch.tensor"] == 2


@pytest.fixture(scope="module", params=["mlp", "cnn"])
def sample(request, cli, tmp_path_factory):
    name = request.param
    d = tmp_path_factory.mktemp(f"passes_{name}")
    model, x = make_model(name), make_input(name)
    with torch.no_grad():
        graph = ivytrace.freeze(model, args=(x,))   # parameters as constants, as the passes expect
        expected = model(x)
    return dict(name=name, dir=d, trace=graph.save(d / f"{name}.ivt"), x=x, expected=expected, model=model)


def test_full_pipeline_report_lists_the_passes_and_plan_replays(sample, cli):
    out = sample["dir"] / "opt.ivg"
    run = cli("optimize", sample["trace"], "-o", out, "--verify", "--report", check=True)
    rows = report_rows(run.stdout)
    listing = cli("optimize", "--list-passes", check=True).stdout
    pipeline = next(line for line in listing.splitlines() if line.startswith("default pipeline:"))
    listed = pipeline.split(":")[1].replace("(", " ").replace(")*", " ").split()
    assert [name for name in rows if "#" not in name] == listed
    assert "constant-fold" in rows and "dce" in rows
    print(sample["name"], rows)
    plan = sample["dir"] / "opt.plan"
    cli("export", out, "--to", "plan", "-o", plan, check=True)
    with torch.no_grad():
        got = ivytrace.load_plan(plan)(sample["x"])
    if sample["name"] == "cnn":
        # the 10 batch norms fold into their convs: the arithmetic changes, within tolerance
        assert rows["fold-conv-bn"][0] - rows["fold-conv-bn"][1] == 10
        torch.testing.assert_close(got, sample["expected"], rtol=1e-4, atol=1e-5)
    else:
        assert rows["fold-conv-bn"][0] == rows["fold-conv-bn"][1]
        assert torch.equal(got, sample["expected"])


def generators_fn(x):
    a = torch.randint(0, 100, size=[1])
    z = x**a
    return z + torch.rand([1])


def test_bake_generators_replaces_random_ops_by_their_recorded_values(cli, tmp_path):
    x = torch.tensor([1.0, 1.5, 2.0], dtype=torch.float64)
    torch.manual_seed(0)
    expected = generators_fn(x)
    torch.manual_seed(0)
    graph = ivytrace.trace_graph(generators_fn, args=(x,))
    trace = graph.save(tmp_path / "gen.ivt")

    default = tmp_path / "default.ivg"
    cli("optimize", trace, "-o", default, check=True)
    assert ops_of(cli, default) == {"torch.randint": 1, "torch.rand": 1, "torch.Tensor.__pow__": 1,
                                    "torch.Tensor.add": 1}

    baked = tmp_path / "baked.ivg"
    run = cli("optimize", trace, "-o", baked, "--bake-generators", "--verify", "--report", check=True)
    assert report_rows(run.stdout)["bake-generators"] == (4, 2)
    assert ops_of(cli, baked) == {"torch.Tensor.__pow__": 1, "torch.Tensor.add": 1}
    plan = tmp_path / "baked.plan"
    cli("export", trace, "--to", "plan", "-o", plan, "--bake-generators", check=True)
    replay = ivytrace.load_plan(plan)
    assert torch.equal(replay(x), expected)
    assert torch.equal(replay(x), expected)  # the same draws on every call
    torch.manual_seed(1)
    again = generators_fn(x)
    torch.manual_seed(1)
    traced = ivytrace.trace_graph(generators_fn, args=(x,), include_generators=False)
    assert torch.equal(traced(x), again) and torch.equal(traced(x), again)


def test_bake_generators_refuses_random_ops_that_read_an_input(cli, tmp_path):
    def noisy(x):
        return x + torch.rand_like(x)

    trace = ivytrace.trace_graph(noisy, args=(torch.ones(3),)).save(tmp_path / "noisy.ivt")
    run = cli("optimize", trace, "-o", tmp_path / "noisy.ivg", "--bake-generators")
    assert run.returncode == 2, run.stderr
    assert "torch.rand_like" in run.stderr and "test_passes_e2e.py:" in run.stderr, run.stderr
    assert "region input" in run.stderr
    assert not (tmp_path / "noisy.ivg").exists()


def repeated_fn(x):
    a = torch.relu(x * 2)
    b = torch.relu(x * 2)  # the same computation again: merged into a
    c = x * 2
    c.add_(1)  # written in place: must stay its own tensor
    return a + b + c


def test_cse_merges_repeated_pure_calls_but_not_one_written_in_place(cli, tmp_path):
    x = torch.tensor([-1.0, 0.5, 2.0])
    graph = ivytrace.trace_graph(repeated_fn, args=(x,))
    trace = graph.save(tmp_path / "cse.ivt")
    out = tmp_path / "cse.ivg"
    run = cli("optimize", trace, "-o", out, "--verify", "--report", check=True)
    assert report_rows(run.stdout)["cse"][0] - report_rows(run.stdout)["cse"][1] == 2
    ops = ops_of(cli, out)
    assert ops["torch.relu"] == 1 and ops["torch.Tensor.mul"] == 2 and ops["torch.Tensor.add_"] == 1, ops
    fresh = torch.tensor([3.0, -2.0, 0.0, 1.0])
    assert torch.equal(graph(fresh), repeated_fn(fresh))


def identities_fn(x):
    y = x.detach().contiguous() * 1
    y = torch.nn.functional.dropout(y, 0.5, training=False) + 0
    y = y.view(x.shape) / 1
    z = y.clone()
    z.mul_(3)  # written in place: this clone stays
    return torch.relu(y) + z + x.int() * 1.0  # int * 1.0 promotes to float: the mul stays


def test_simplify_forwards_identities_and_keeps_what_changes_values(cli, tmp_path):
    x = torch.tensor([-1.0, 0.5, 2.0])
    graph = ivytrace.trace_graph(identities_fn, args=(x,))
    trace = graph.save(tmp_path / "ids.ivt")
    out = tmp_path / "ids.ivg"
    run = cli("optimize", trace, "-o", out, "--verify", "--report", check=True)
    before, after = report_rows(run.stdout)["simplify"]
    assert before - after == 7, run.stdout
    ops = ops_of(cli, out)
    for gone in ("torch.Tensor.detach", "torch.Tensor.contiguous", "torch.nn.functional.dropout",
                 "torch.Tensor.view"):
        assert gone not in ops, ops
    assert ops["torch.Tensor.clone"] == 1 and ops["torch.Tensor.mul_"] == 1, ops
    fresh = torch.tensor([3.0, -2.0, 0.25, 1.0])
    assert torch.equal(graph(fresh), identities_fn(fresh))
    # view(x.shape) read x's shape: the graph is guarded on the input's rank (the size it
    # follows symbolically), so a 2-D input raises instead of being viewed as 1-D.
    with pytest.raises(ivytrace.GuardError, match="torch.Tensor.dim"):
        graph(torch.tensor([[3.0, -2.0], [0.25, 1.0]]))


def dead_write_fn(x):
    y = x * 2
    z = y.clone()  # forwardable only once nothing writes y any more
    y.add_(1)  # writes a temporary that nothing reads afterwards: dead
    return z * 3


def test_cleanups_run_to_a_fixed_point(cli, tmp_path):
    """dce drops the dead in-place write; only then may simplify forward the clone of the written
    tensor. The default pipeline repeats simplify, cse and dce until a round changes nothing."""
    x = torch.tensor([1.0, -2.0, 3.0])
    graph = ivytrace.trace_graph(dead_write_fn, args=(x,))
    trace = graph.save(tmp_path / "dead_write.ivt")
    out = tmp_path / "dead_write.ivg"
    run = cli("optimize", trace, "-o", out, "--verify", "--report", check=True)
    rows = report_rows(run.stdout)
    assert rows["simplify"][0] == rows["simplify"][1], run.stdout  # round 1: the clone must stay
    assert rows["dce"][0] - rows["dce"][1] == 1, run.stdout  # the add_
    assert rows["simplify#2"][0] - rows["simplify#2"][1] == 1, run.stdout  # now the clone goes
    assert "dce#3" in rows and "simplify#4" not in rows, run.stdout  # round 3 changed nothing: done
    assert ops_of(cli, out) == {"torch.Tensor.mul": 2}
    once = tmp_path / "once.ivg"
    cli("optimize", trace, "-o", once, "--passes", "simplify,cse,dce", check=True)
    assert ops_of(cli, once)["torch.Tensor.clone"] == 1  # one round, as asked
    plan = tmp_path / "dead_write.plan"
    cli("export", out, "--to", "plan", "-o", plan, check=True)
    fresh = torch.tensor([0.5, 4.0, -1.0])
    assert torch.equal(ivytrace.load_plan(plan)(fresh), dead_write_fn(fresh.clone()))


def test_attention_block_drops_contiguous_and_replays_exactly(cli, tmp_path):
    """A GPT-style block (samples/models.py): the default pipeline folds the causal mask, merges
    the three layer norms of one input, drops dropout, the same-dtype casts and .contiguous(), and
    makes the .view() after it a reshape: the transposed tensor it now reads is not contiguous."""
    model, x = make_model("gpt"), make_input("gpt")
    with torch.no_grad():
        graph = ivytrace.freeze(model, args=(x,))   # parameters as constants, as the passes expect
        trace = graph.save(tmp_path / "gpt.ivt")
        fresh = torch.randn(4, 8, 32)
        assert torch.equal(graph(x), model(x))
        assert torch.equal(graph(fresh), model(fresh))
        # the view sizes and the mask slice follow x.shape (symbolic): another batch and length too
        other = torch.randn(2, 5, 32)
        assert torch.equal(graph(other), model(other))
    out = tmp_path / "gpt.ivg"
    run = cli("optimize", trace, "-o", out, "--verify", "--report", check=True)
    rows = report_rows(run.stdout)
    # ones, tril; the mask's [:t, :t], view and == 0 depend on the length t (symbolic)
    assert rows["constant-fold"][0] - rows["constant-fold"][1] == 2, run.stdout
    assert rows["cse"][0] - rows["cse"][1] == 2, run.stdout  # ln1(x) three times -> once
    ops = ops_of(cli, out)
    assert ops["torch.nn.functional.layer_norm"] == 2, ops
    for gone in ("torch.Tensor.contiguous", "torch.nn.functional.dropout", "torch.Tensor.float",
                 "torch.Tensor.type_as", "torch.tril", "torch.ones"):
        assert gone not in ops, ops
    assert ops["torch.Tensor.reshape"] == 1 and ops["torch.Tensor.view"] == 4, ops
    # k.transpose(1, 2) then .transpose(-2, -1): one permute
    assert ops["torch.permute"] == 1 and ops["torch.Tensor.transpose"] == 3, ops
    # b, t, c and c // heads: read once each (cse), computed from the input on every replay
    assert ops["ivytrace.sym.size"] == 3 and ops["ivytrace.sym.floordiv"] == 1, ops
    # 1.0 / d**0.5: a symbolic float, not a guard on the head size
    assert ops["ivytrace.sym.pow"] == 1 and ops["ivytrace.sym.truediv"] == 1, ops
    assert sum(ops.values()) == 33, ops


def layout_fn(x):
    a = x.float().to(torch.float32)  # casts to the recorded dtype: forwarded
    b = a.transpose(0, 1).transpose(1, 0)  # composes to identity
    c = b.permute(1, 2, 0).permute(2, 0, 1)  # composes to identity
    d = c.reshape(6, 4).view(4, 6).flatten().reshape(3, 8)  # chain: reads x directly
    e = x.transpose(0, 2).transpose(0, 1)  # not the identity: one permute of x
    return d * 2, e + 1, x.double() + 1  # the double() cast changes the dtype: stays


def test_simplify_removes_noop_casts_transposes_and_reshape_chains(cli, tmp_path):
    x = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)
    graph = ivytrace.trace_graph(layout_fn, args=(x,))
    trace = graph.save(tmp_path / "layout.ivt")
    raw = ops_of(cli, trace)
    assert raw["torch.Tensor.transpose"] == 4 and raw["torch.Tensor.permute"] == 2
    out = tmp_path / "layout.ivg"
    cli("optimize", trace, "-o", out, "--verify", check=True)
    ops = ops_of(cli, out)
    assert "torch.Tensor.transpose" not in ops and ops["torch.permute"] == 1, ops  # e's pair, composed
    assert "torch.Tensor.permute" not in ops and "torch.Tensor.float" not in ops, ops
    assert "torch.Tensor.to" not in ops and "torch.Tensor.view" not in ops, ops
    assert ops["torch.Tensor.reshape"] == 1 and ops["torch.Tensor.double"] == 1, ops
    plan = tmp_path / "layout.plan"
    cli("export", out, "--to", "plan", "-o", plan, check=True)
    fresh = torch.randn(2, 3, 4)
    for got, want in zip(ivytrace.load_plan(plan)(fresh), layout_fn(fresh)):
        assert torch.equal(got, want)


def test_print_after_prints_the_graph_after_the_named_pass(cli, tmp_path):
    x = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)
    trace = ivytrace.trace_graph(layout_fn, args=(x,)).save(tmp_path / "layout.ivt")
    run = cli("optimize", trace, "-o", tmp_path / "o.ivg", "--print-after", "simplify", check=True)
    # after each round of simplify (the cleanups run to a fixed point), and after nothing else
    headers = [line for line in run.stdout.splitlines() if line.startswith("// after ")]
    assert headers == ["// after simplify", "// after simplify (round 2)"], headers
    assert "transpose" in run.stdout
    bad = cli("optimize", trace, "-o", tmp_path / "o.ivg", "--print-after", "nope")
    assert bad.returncode == 2 and "nope" in bad.stderr


def shape_reads_fn(x):
    h = torch.relu(x)
    n, d = h.shape[0], h.dim()
    return x * float(n * d)


def test_shape_reads_are_symbolic_and_guarded_where_they_leave(cli, tmp_path):
    """float(n * d) takes a shape-derived int out of the graph: the plan computes it from the
    input and guards its value, so another batch size raises instead of reusing 3 * 2."""
    x = torch.ones(3, 2)
    graph = ivytrace.trace_graph(shape_reads_fn, args=(x,))
    trace = graph.save(tmp_path / "shapes.ivt")
    info = json.loads(cli("inspect", trace, "--json", check=True).stdout)
    assert info["shape_reads"] >= 2
    out = tmp_path / "shapes.ivg"
    run = cli("optimize", trace, "-o", out, "--report", check=True)
    assert f"shape reads: {info['shape_reads']} (symbolic" in run.stdout
    assert re.search(r"^time: read \+ build [0-9.]+ ms, passes [0-9.]+ ms, write [0-9.]+ ms$", run.stdout, re.M)
    ops = ops_of(cli, out)
    assert "ivytrace.sym.size" in ops and "ivytrace.sym.mul" in ops
    plan = tmp_path / "shapes.plan"
    cli("export", out, "--to", "plan", "-o", plan, check=True)
    replay = ivytrace.load_plan(plan)
    assert torch.equal(replay(x), shape_reads_fn(x))
    assert torch.equal(replay(torch.ones(3, 2) * 2), shape_reads_fn(torch.ones(3, 2) * 2))
    with pytest.raises(ivytrace.GuardError, match="ivytrace.sym"):
        replay(torch.ones(5, 2))
