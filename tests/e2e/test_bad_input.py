"""Bad input gets a clear error naming the file (and byte offset), a non-zero exit, no output."""
import sys

import pytest
import torch

import ivytrace

EXIT_USAGE, EXIT_BAD_INPUT, EXIT_OUTPUT, EXIT_UNSUPPORTED = 2, 3, 4, 5


@pytest.fixture(scope="module")
def good_trace(tmp_path_factory):
    d = tmp_path_factory.mktemp("good")

    def f(x):
        return torch.relu(x * 2 + 1).sum(dim=0)

    graph = ivytrace.trace_graph(f, args=(torch.randn(4, 3),))
    path = d / "good.ivt"
    graph.save(path)
    return path


def variants(good_trace, tmp_path):
    data = good_trace.read_bytes()
    out = {}
    out["truncated"] = tmp_path / "truncated.ivt"
    out["truncated"].write_bytes(data[:-3])  # cut inside the last record
    garbage = bytearray(data)
    mid = len(data) // 2
    garbage[mid:mid + 32] = b"\xff" * 32
    out["garbage"] = tmp_path / "garbage.ivt"
    out["garbage"].write_bytes(bytes(garbage))
    out["not_a_trace"] = tmp_path / "notes.txt"
    out["not_a_trace"].write_text("this is not a trace\n")
    out["missing"] = tmp_path / "missing.ivt"
    return out


COMMANDS = {
    "inspect": lambda f, o: ["inspect", f],
    "optimize": lambda f, o: ["optimize", f, "-o", o],
    "viz": lambda f, o: ["viz", f, "-o", o],
    "export-onnx": lambda f, o: ["export", f, "--to", "onnx", "-o", o],
    "export-plan": lambda f, o: ["export", f, "--to", "plan", "-o", o],
}


@pytest.mark.parametrize("kind", ["truncated", "garbage", "not_a_trace", "missing"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_bad_trace_is_reported_and_leaves_no_output(cli, good_trace, tmp_path, kind, command):
    bad = variants(good_trace, tmp_path)[kind]
    out = tmp_path / ("out.svg" if command == "viz" else "out.bin")
    proc = cli(*COMMANDS[command](bad, out))
    assert proc.returncode == EXIT_BAD_INPUT, proc.stderr
    assert str(bad) in proc.stderr
    if kind in ("truncated", "garbage"):
        assert "byte" in proc.stderr, proc.stderr
    if kind == "missing":
        assert "no such file" in proc.stderr
    assert not out.exists()
    assert list(tmp_path.glob("out.*")) == [], "no temporary file may be left behind"


@pytest.mark.parametrize("command", ["optimize", "viz", "export-onnx", "export-plan"])
def test_unwritable_output_path(cli, good_trace, tmp_path, command):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    out = blocker / ("sub.svg" if command == "viz" else "sub.bin")  # parent is a file
    proc = cli(*COMMANDS[command](good_trace, out))
    assert proc.returncode == EXIT_OUTPUT, proc.stderr
    assert str(out) in proc.stderr


def test_failed_export_keeps_the_previous_good_file(cli, good_trace, tmp_path):
    out = tmp_path / "model.onnx"
    cli("export", good_trace, "--to", "onnx", "-o", out, check=True)
    before = out.read_bytes()
    truncated = variants(good_trace, tmp_path)["truncated"]
    assert cli("export", truncated, "--to", "onnx", "-o", out).returncode == EXIT_BAD_INPUT
    assert out.read_bytes() == before


def test_wrong_flags_are_usage_errors(cli, good_trace, tmp_path):
    assert cli("export", good_trace, "--to", "tflite", "-o", tmp_path / "x").returncode == EXIT_USAGE
    assert cli("optimize", good_trace, "-o", tmp_path / "x", "--passes", "nope").returncode == EXIT_USAGE
    assert cli("frobnicate").returncode == EXIT_USAGE
    assert cli("viz", good_trace, "-o", tmp_path / "g.png").returncode == EXIT_USAGE


def test_unsupported_ops_are_listed_with_counts_and_lines(cli, tmp_path):
    def f(x):  # (igamma and zeta have no ONNX lowering; erfinv, lgamma, cummax and mse_loss lower since issue 11)
        y = torch.igamma(x.abs() + 1, x.abs())
        return torch.igamma(y + 1, x.abs()) + torch.special.zeta(x.abs() + 2, x.abs() + 1)

    graph = ivytrace.trace_graph(f, args=(torch.randn(5),))
    trace = tmp_path / "igamma.ivt"
    graph.save(trace)
    out = tmp_path / "f.onnx"
    proc = cli("export", trace, "--to", "onnx", "-o", out)
    assert proc.returncode == EXIT_UNSUPPORTED
    assert "torch.igamma  x2" in proc.stderr, proc.stderr
    assert "torch.special.zeta  x1" in proc.stderr, proc.stderr
    assert "test_bad_input.py:" in proc.stderr
    assert not out.exists()


def test_help_documents_exit_statuses(cli):
    for command in ["", "inspect", "optimize", "viz", "export"]:
        proc = cli(*([command] if command else []), "--help")
        assert proc.returncode == 0
        assert "Exit status" in proc.stdout and "3 bad input" in proc.stdout


class TestRecord:
    def test_missing_program_exits_127_and_writes_nothing(self, cli, tmp_path):
        out = tmp_path / "t.ivt"
        proc = cli("record", "-o", out, "--", "definitely-not-a-program-xyz")
        assert proc.returncode == 127
        assert "definitely-not-a-program-xyz" in proc.stderr
        assert not out.exists()

    def test_program_exit_status_and_output_pass_through(self, cli, tmp_path):
        prog = tmp_path / "p.py"
        prog.write_text("import sys, torch\nprint('hello out')\nprint('hello err', file=sys.stderr)\n"
                        "x = torch.ones(3) * 2\nsys.exit(3)\n")
        out = tmp_path / "t.ivt"
        proc = cli("record", "-o", out, "--", sys.executable, prog)
        assert proc.returncode == 3
        assert proc.stdout == "hello out\n"
        assert proc.stderr == "hello err\n"
        info = cli("inspect", out, "--json", check=True)
        assert '"torch.Tensor.mul"' in info.stdout

    def test_program_that_fails_to_import(self, cli, tmp_path):
        prog = tmp_path / "p.py"
        prog.write_text("import no_such_module_xyz\n")
        out = tmp_path / "t.ivt"
        proc = cli("record", "-o", out, "--", sys.executable, prog)
        assert proc.returncode == 1
        assert "no_such_module_xyz" in proc.stderr
        # The trace that exists is complete (the recorder closes it at exit), never damaged.
        if out.exists():
            assert cli("inspect", out).returncode == 0

    def test_unwritable_trace_path_and_unknown_framework(self, cli, tmp_path):
        proc = cli("record", "-o", tmp_path / "nodir" / "t.ivt", "--", sys.executable, "-c", "pass")
        assert proc.returncode == EXIT_OUTPUT
        assert "nodir" in proc.stderr
        proc = cli("record", "--frameworks", "tensorflow", "-o", tmp_path / "t.ivt", "--", sys.executable, "-c", "pass")
        assert proc.returncode == EXIT_USAGE
        assert "tensorflow" in proc.stderr

    def test_killed_program_leaves_a_readable_prefix(self, cli, tmp_path):
        prog = tmp_path / "p.py"
        prog.write_text("import os, signal, torch\nx = torch.ones(3)\nfor _ in range(50):\n    x = x + 1\n"
                        "os.kill(os.getpid(), signal.SIGKILL)\n")
        out = tmp_path / "t.ivt"
        proc = cli("record", "-o", out, "--", sys.executable, prog)
        assert proc.returncode == 128 + 9
        info = cli("inspect", out)
        assert info.returncode == 0, info.stderr
        assert "no footer" in info.stdout
        assert "torch.Tensor.add" in info.stdout  # the 50 additions flushed before the kill
        # Building a graph needs a complete region or a closed trace: a clear error, not a crash.
        proc = cli("optimize", out, "-o", tmp_path / "g.ivg")
        assert proc.returncode == EXIT_BAD_INPUT
        assert "without a footer" in proc.stderr


def test_changed_bytes_anywhere_are_caught(cli, good_trace, tmp_path):
    """Garbage written over any part of a recorded trace (including tensor values, which still
    parse) is reported: the footer's checksum covers what the structure checks cannot."""
    data = good_trace.read_bytes()
    bad = tmp_path / "bad.ivt"
    missed = []
    for at in range(8, len(data) - 1, 5):
        damaged = bytearray(data)
        damaged[at:at + 32] = b"\xff" * len(damaged[at:at + 32])
        if damaged == data:
            continue
        bad.write_bytes(bytes(damaged))
        for command in ("inspect", "optimize"):
            proc = cli(*COMMANDS[command](bad, tmp_path / "out.bin"))
            if proc.returncode != EXIT_BAD_INPUT or "byte" not in proc.stderr:
                missed.append((at, command, proc.returncode, proc.stderr))
    assert missed == []
    assert list(tmp_path.glob("out.*")) == []
