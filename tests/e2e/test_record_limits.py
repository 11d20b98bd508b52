"""`ivytrace record --max-ops / --max-bytes`: recording stops cleanly at the limit, the program
does not notice, the trace stays valid and says why it ends, and a region the limit cut is refused
by name."""
import json
import sys
import textwrap

import pytest

from ivytrace.recorder.reader import read_trace

EXIT_USAGE, EXIT_BAD_INPUT = 2, 3

# 1 op (ones) + 20 adds before the region; the region "r" does 1 mul + 10 subs; then 5 muls.
PROGRAM = """\
import sys, torch, ivytrace
x = torch.ones(4)
for i in range(20):
    x = x + 1
with ivytrace.region("r", inputs={"x": x}) as r:
    y = x * 2
    for i in range(10):
        y = y - 1
    r.set_result(y)
for i in range(5):
    y = y * 1
print("result", float(y.sum()))
print("to stderr", file=sys.stderr)
sys.exit(7)
"""
LIMIT_LINE = "ivytrace record: recording stopped at the limit"


@pytest.fixture
def program(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    return prog


def record(cli, tmp_path, prog, *flags, name="t.ivt"):
    out = tmp_path / name
    return cli("record", *flags, "-o", out, "--", sys.executable, prog), out


def info(cli, trace):
    return json.loads(cli("inspect", trace, "--json", check=True).stdout)


def test_max_ops_stops_cleanly_and_the_program_does_not_notice(cli, tmp_path, program):
    proc, trace = record(cli, tmp_path, program, "--max-ops", "10")
    assert proc.returncode == 7
    assert proc.stdout == "result 128.0\n"   # the program ran to its end: (21 * 2 - 10) * 4
    lines = proc.stderr.splitlines()
    assert lines.count("to stderr") == 1
    limit = [ln for ln in lines if ln.startswith(LIMIT_LINE)]
    assert len(limit) == 1, proc.stderr
    assert "--max-ops 10" in limit[0] and "op 11 (torch.Tensor.add at " in limit[0]
    assert f"{program}:4)" in limit[0] and "holds the first 10 ops" in limit[0]
    assert len(lines) == 2

    t = read_trace(str(trace))   # checks structure, counts and the CRC
    assert t.footer is not None and not t.truncated
    assert t.op_names() == ["torch.ones"] + ["torch.Tensor.add"] * 9
    hit = t.footer.stopped_by_limit
    assert (hit.kind, hit.value, hit.ops_recorded, hit.op, hit.file, hit.line) == \
        (hit.MAX_OPS, 10, 10, "torch.Tensor.add", str(program), 4)

    j = info(cli, trace)
    assert j["op_events"] == 10 and j["complete"] is True
    assert j["stopped_by_limit"] == {"limit": "max_ops", "value": 10, "ops_recorded": 10,
                                     "op": "torch.Tensor.add", "file": str(program), "line": 4}
    text = cli("inspect", trace, check=True).stdout
    assert "stopped   at a recording limit: --max-ops 10, hit by op 11 (torch.Tensor.add at" in text


def test_a_region_cut_by_the_limit_is_refused_by_name(cli, tmp_path, program):
    # 21 ops before the region, the region's mul and 3 subs, then the limit.
    proc, trace = record(cli, tmp_path, program, "--max-ops", "25")
    assert proc.returncode == 7
    assert "op 26 (torch.Tensor.sub at " in proc.stderr
    text = cli("inspect", trace, check=True).stdout
    assert "r:0  4 ops, 1 inputs  (not ended: cut by the limit)" in text
    for command in (["optimize", trace, "-o", tmp_path / "g.ivg"],
                    ["export", trace, "--to", "plan", "-o", tmp_path / "g.plan"]):
        done = cli(*command)
        assert done.returncode == EXIT_BAD_INPUT, done.stderr
        assert f"trace '{trace}': region 'r:0' was cut by a recording limit before it ended" in done.stderr
        assert "--max-ops 25" in done.stderr and "record again with a higher limit" in done.stderr
    assert not (tmp_path / "g.ivg").exists() and not (tmp_path / "g.plan").exists()


def test_a_region_that_ended_before_the_limit_still_replays(cli, tmp_path, program):
    proc, trace = record(cli, tmp_path, program, "--max-ops", "33")   # stops in the last loop
    assert proc.returncode == 7 and "op 34 (torch.Tensor.mul at " in proc.stderr
    cli("export", trace, "--to", "plan", "-o", tmp_path / "r.plan", check=True)
    import torch
    import ivytrace
    plan = ivytrace.load_plan(tmp_path / "r.plan")
    x = torch.arange(6.0)
    torch.testing.assert_close(plan(x), x * 2 - 10, rtol=0, atol=0)


def test_a_limit_not_reached_leaves_no_mark(cli, tmp_path, program):
    proc, trace = record(cli, tmp_path, program, "--max-ops", "1000", "--max-bytes", "1M")
    assert proc.returncode == 7 and LIMIT_LINE not in proc.stderr
    j = info(cli, trace)
    assert j["stopped_by_limit"] is None and j["op_events"] == 38   # ones, 20 adds, mul, 10 subs, 5 muls, sum
    assert read_trace(str(trace)).footer.exit_status == 7


def test_max_bytes_keeps_the_file_under_the_limit(cli, tmp_path):
    prog = tmp_path / "big.py"
    prog.write_text(textwrap.dedent("""\
        import torch
        x = torch.zeros(64)
        for i in range(500):
            x = x + torch.full((64,), float(i))   # a new 256-byte constant per step
        print(float(x.sum()))
    """))
    proc, trace = record(cli, tmp_path, prog, "--max-bytes", "16K")
    assert proc.returncode == 0 and proc.stdout == f"{64.0 * sum(range(500))}\n"
    assert proc.stderr.count(LIMIT_LINE) == 1
    assert "--max-bytes 16384: the records of op" in proc.stderr and f"{prog}:4)" in proc.stderr
    size = trace.stat().st_size
    assert 8 * 1024 < size <= 16 * 1024
    t = read_trace(str(trace))
    hit = t.footer.stopped_by_limit
    assert hit.kind == hit.MAX_BYTES and hit.value == 16384 and hit.ops_recorded == t.footer.op_events
    # Every value the recorded ops read is in the trace: the whole-trace graph still builds.
    done = cli("optimize", trace, "-o", tmp_path / "g.ivg")
    assert done.returncode == 0, done.stderr
    assert "was stopped by a recording limit (--max-bytes 16384" in done.stderr


@pytest.mark.parametrize("flags, message", [
    (["--max-ops", "-1"], "--max-ops: expected a whole number of ops"),
    (["--max-ops", "abc"], "--max-ops: expected a whole number of ops (0 to 2^64-1), not 'abc'"),
    (["--max-ops", "1e3"], "--max-ops: expected a whole number of ops"),
    (["--max-bytes", "10XB"], "--max-bytes: xb unit not recognized"),
    (["--max-bytes", "-5"], "--max-bytes: expected a whole number of bytes"),
    (["--max-bytes", "100"], "--max-bytes 100 is too small: a trace needs at least 4096 bytes"),
    (["--max-bytes", "2k"], "--max-bytes 2048 is too small"),   # K = 1024
])
def test_wrong_limit_values_are_usage_errors(cli, tmp_path, program, flags, message):
    proc, trace = record(cli, tmp_path, program, *flags)
    assert proc.returncode == EXIT_USAGE
    assert message in proc.stderr, proc.stderr
    assert proc.stdout == ""          # the program did not run
    assert not trace.exists() and list(tmp_path.glob("t.ivt*")) == []


def test_help_documents_the_limits(cli):
    proc = cli("record", "--help")
    assert proc.returncode == 0
    assert "--max-ops N" in proc.stdout and "--max-bytes SIZE" in proc.stdout
    assert "suffixes K, M, G = 1024-based; at least 4096" in proc.stdout
