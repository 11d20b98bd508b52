"""Long plans are generated as a chain of functions (runtime/codegen.py, CHUNK_LINES): CPython
compiles one huge function in superlinear time. The chain must compute what one function does,
with values crossing any number of chunk boundaries, and drop them as the single function did."""
import torch

from ivytrace.runtime import codegen
from ivytrace.runtime.plan import load_plan, write_plan_file
from ivytrace.v1 import common_pb2, plan_pb2


def _slot(i):
    return common_pb2.Arg(tensor=common_pb2.TensorRef(value=i))


def _plan(n):
    """x, y -> a chain of n steps over x; every 7th step also reads y (live across the whole plan);
    every 10th result is kept and summed at the end (values that cross many chunks); one step
    returns a tuple (torch.chunk) that is unpacked."""
    p = plan_pb2.Plan(name="chain", framework="torch")
    p.inputs.add(name="x", value=_slot(0))
    p.inputs.add(name="y", value=_slot(1))
    cur, nxt, kept = 0, 2, []
    for i in range(n):
        s = p.steps.add()
        if i % 7 == 3:
            s.function = "torch.add"
            s.args.extend([_slot(cur), _slot(1)])
        elif i == n // 2:
            s.function = "torch.chunk"
            s.args.extend([_slot(cur), common_pb2.Arg(i=2)])
            s.result.tuple.items.extend([_slot(nxt), _slot(nxt + 1)])
            s.free_after.append(cur)
            p.steps.add(function="torch.cat", args=[common_pb2.Arg(list=common_pb2.ArgList(items=[_slot(nxt), _slot(nxt + 1)]))],
                        result=_slot(nxt + 2), free_after=[nxt, nxt + 1])
            cur, nxt = nxt + 2, nxt + 3
            continue
        else:
            s.function = "torch.tanh" if i % 2 else "torch.Tensor.mul"
            s.args.append(_slot(cur))
            if not i % 2:
                s.args.append(common_pb2.Arg(f=0.9))
        s.result.CopyFrom(_slot(nxt))
        if cur not in kept and cur != 0:
            s.free_after.append(cur)
        if i % 10 == 0:
            kept.append(nxt)
        cur, nxt = nxt, nxt + 1
    total = kept[0]
    for k in kept[1:]:
        p.steps.add(function="torch.add", args=[_slot(total), _slot(k)], result=_slot(nxt), free_after=[total, k])
        total, nxt = nxt, nxt + 1
    p.steps.add(function="torch.add", args=[_slot(total), _slot(cur)], result=_slot(nxt))
    p.outputs.tuple.items.extend([_slot(nxt), _slot(0)])
    p.num_slots = nxt + 1
    return p


def _eager(n, x, y):
    cur, kept = x, []
    for i in range(n):
        if i % 7 == 3:
            new = torch.add(cur, y)
        elif i == n // 2:
            a, b = torch.chunk(cur, 2)
            cur = torch.cat([a, b])
            continue
        else:
            new = torch.tanh(cur) if i % 2 else cur * 0.9
        if i % 10 == 0:
            kept.append(new)
        cur = new
    total = kept[0]
    for k in kept[1:]:
        total = torch.add(total, k)
    return torch.add(total, cur), x


def test_a_long_plan_runs_as_a_chain_of_functions_and_computes_the_same(tmp_path, monkeypatch):
    monkeypatch.setattr(codegen, "CHUNK_LINES", 37)   # many boundaries, at awkward places
    n = 600
    path = tmp_path / "chain.ivyplan"
    write_plan_file(path, _plan(n))
    plan = load_plan(path, machine=False)
    assert plan.source.count("\ndef _c") + plan.source.startswith("def _c") > 15
    x, y = torch.randn(6), torch.randn(6)
    got = plan(x, y)
    want = _eager(n, x, y)
    torch.testing.assert_close(got[0], want[0])
    assert got[1] is x
    # The plan machine (ivytrace._replay, what long plans run in) computes the same, exactly.
    if codegen._replay is not None:
        m = load_plan(path, machine=True)
        assert m.machine and torch.equal(m(x, y)[0], got[0]) and m(x, y)[1] is x
    # forward drops a value after the last chunk that reads it: y is read to the end, the
    # kept values are deleted as the sum consumes them.
    fwd = plan.source[plan.source.index("def forward"):]
    assert "del " in fwd


def test_a_short_plan_is_one_function(tmp_path):
    path = tmp_path / "short.ivyplan"
    write_plan_file(path, _plan(30))
    plan = load_plan(path, machine=False)
    assert "def _c" not in plan.source
    x, y = torch.randn(6), torch.randn(6)
    torch.testing.assert_close(plan(x, y)[0], _eager(30, x, y)[0])
