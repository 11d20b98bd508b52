"""Exhaustive damage to one small file of each kind: a changed byte at every offset and a cut at
every offset give exit 3 naming the file and a byte offset (PlanError naming both, for a plan), or
a result identical to the undamaged file's. Exit 0 with different content never happens."""
import subprocess

import pytest
import torch

import ivytrace
from ivytrace.runtime.plan import load_plan

EXIT_BAD_INPUT = 3


def tiny(x):
    return x * 2 + 1


@pytest.fixture(scope="module")
def files(tmp_path_factory, ivytrace_bin):
    d = tmp_path_factory.mktemp("integrity")
    trace = d / "t.ivt"
    ivytrace.trace_graph(tiny, args=(torch.ones(2),)).save(trace)
    graph, plan = d / "g.ivg", d / "p.plan"
    subprocess.run([ivytrace_bin, "optimize", trace, "-o", graph], check=True)
    subprocess.run([ivytrace_bin, "export", graph, "--to", "plan", "-o", plan], check=True)
    return {"trace": trace, "graph": graph, "plan": plan}


def damaged(data, masks=(0xFF,)):
    """Every one-byte change (xor each mask: 0xff flips the whole byte, 0x01 its low bit) and
    every truncation. The CLI cases take one mask (one process per case keeps them slow)."""
    for i in range(len(data)):
        for mask in masks:
            b = bytearray(data)
            b[i] ^= mask
            yield f"byte {i} ^ {mask:#x}", bytes(b)
    for n in range(len(data)):
        yield f"cut at {n}", data[:n]


def check_cli(ivytrace_bin, tmp_path, src, args_for, kind):
    ref_out = tmp_path / "ref.out"
    subprocess.run([ivytrace_bin, *args_for(src, ref_out)], check=True, capture_output=True)
    reference = ref_out.read_bytes()
    bad = tmp_path / f"bad.{kind}"
    out = tmp_path / "out.bin"
    silent = []
    for what, data in damaged(src.read_bytes()):
        bad.write_bytes(data)
        out.unlink(missing_ok=True)
        proc = subprocess.run([ivytrace_bin, *args_for(bad, out)], capture_output=True)
        proc.stderr = proc.stderr.decode()  # messages are text, whatever the file held
        if proc.returncode == 0:
            if out.read_bytes() != reference:
                silent.append(what)
            continue
        assert proc.returncode == EXIT_BAD_INPUT, (what, proc.returncode, proc.stderr)
        assert str(bad) in proc.stderr and "byte" in proc.stderr, (what, proc.stderr)
        assert not out.exists(), what
    assert not silent, f"damage accepted with a different result: {silent[:20]}"


def test_damaged_trace_is_reported_or_harmless(ivytrace_bin, files, tmp_path):
    check_cli(ivytrace_bin, tmp_path, files["trace"], lambda f, o: ["optimize", f, "-o", o], "ivt")


def test_damaged_graph_file_is_reported_or_harmless(ivytrace_bin, files, tmp_path):
    check_cli(ivytrace_bin, tmp_path, files["graph"], lambda f, o: ["export", f, "--to", "plan", "-o", o], "ivg")


def test_damaged_plan_file_is_reported_or_harmless(files, tmp_path):
    reference = load_plan(files["plan"])
    x = torch.arange(3.0)
    expected = reference(x)
    bad = tmp_path / "bad.plan"
    silent = []
    for what, data in damaged(files["plan"].read_bytes(), masks=(0xFF, 0x01)):
        bad.write_bytes(data)
        try:
            plan = load_plan(bad)
        except ivytrace.PlanError as e:
            assert str(bad) in str(e) and "byte" in str(e), (what, str(e))
            continue
        if plan.plan != reference.plan or not torch.equal(plan(x), expected):
            silent.append(what)
    assert not silent, f"damage accepted with a different result: {silent[:20]}"
