"""Where -o points decides how it is written: inputs are never overwritten, special files are
written through (never replaced), symlinks are followed, `-` is stdout."""
import os
import stat
import subprocess
import sys
import threading

import pytest
import torch

import ivytrace

EXIT_USAGE = 2


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    d = tmp_path_factory.mktemp("outputs")

    def f(x):
        return torch.relu(x * 2 + 1).sum(dim=0)

    path = d / "t.ivt"
    ivytrace.trace_graph(f, args=(torch.randn(4, 3),)).save(path)
    return path


@pytest.fixture()
def graph(cli, trace, tmp_path):
    path = tmp_path / "g.ivg"
    cli("optimize", trace, "-o", path, check=True)
    return path


def copy(src, dst):
    dst.write_bytes(src.read_bytes())
    return dst


@pytest.mark.parametrize("spelling", ["same", "dot-slash", "symlink", "hardlink"])
def test_output_naming_the_input_is_refused_and_the_input_kept(cli, trace, tmp_path, spelling):
    a = copy(trace, tmp_path / "a.ivt")
    before = a.read_bytes()
    os.chdir(tmp_path)
    out = {"same": "a.ivt", "dot-slash": "./a.ivt"}.get(spelling)
    if spelling == "symlink":
        os.symlink("a.ivt", tmp_path / "link.ivt")
        out = "link.ivt"
    if spelling == "hardlink":
        os.link("a.ivt", tmp_path / "hard.ivt")
        out = "hard.ivt"
    for args in (["optimize", "a.ivt", "-o", out], ["export", "a.ivt", "--to", "plan", "-o", out],
                 ["export", "a.ivt", "--to", "onnx", "-o", out]):
        proc = cli(*args)
        assert proc.returncode == EXIT_USAGE, (args, proc.stderr)
        assert "a.ivt" in proc.stderr and "same file" in proc.stderr, proc.stderr
        assert a.read_bytes() == before
        assert sorted(p.name for p in tmp_path.iterdir() if p.is_file() and not p.is_symlink()) == \
            sorted(["a.ivt"] + (["hard.ivt"] if spelling == "hardlink" else []))


def test_viz_output_linked_to_its_input_is_refused(cli, trace, tmp_path):
    a = copy(trace, tmp_path / "a.ivt")
    before = a.read_bytes()
    os.symlink(a.name, tmp_path / "a.svg")
    proc = cli("viz", a, "-o", tmp_path / "a.svg")
    assert proc.returncode == EXIT_USAGE, proc.stderr
    assert "same file" in proc.stderr and a.read_bytes() == before


def test_export_of_a_graph_onto_itself_is_refused(cli, graph):
    before = graph.read_bytes()
    proc = cli("export", graph, "--to", "plan", "-o", graph)
    assert proc.returncode == EXIT_USAGE, proc.stderr
    assert graph.read_bytes() == before


def test_symlink_output_is_written_through_to_its_target(cli, trace, tmp_path):
    target = tmp_path / "real.ivg"
    target.write_bytes(b"old")
    link = tmp_path / "link.ivg"
    os.symlink(target.name, link)
    cli("optimize", trace, "-o", link, check=True)
    assert link.is_symlink() and os.readlink(link) == target.name
    assert target.read_bytes().startswith(b"IVYGRF01")
    # A dangling link names the file to create.
    dangling = tmp_path / "dangling.ivg"
    os.symlink("made.ivg", dangling)
    cli("optimize", trace, "-o", dangling, check=True)
    assert dangling.is_symlink() and (tmp_path / "made.ivg").read_bytes().startswith(b"IVYGRF01")
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]


def test_fifo_output_is_written_through_not_replaced(cli, trace, tmp_path):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got = {}

    def reader():
        with open(fifo, "rb") as f:
            got["data"] = f.read()

    t = threading.Thread(target=reader)
    t.start()
    proc = cli("optimize", trace, "-o", fifo)
    t.join(timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced by a regular file"
    assert got["data"].startswith(b"IVYGRF01")


def test_character_device_output_is_written_through_not_replaced(cli, trace):
    before = os.stat("/dev/null")
    proc = cli("optimize", trace, "-o", "/dev/null")
    assert proc.returncode == 0, proc.stderr
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


@pytest.mark.parametrize("spelling", ["-", "/dev/stdout"])
def test_stdout_output_gets_the_bytes(ivytrace_bin, trace, tmp_path, spelling):
    ref = tmp_path / "ref.onnx"
    subprocess.run([ivytrace_bin, "export", trace, "--to", "onnx", "-o", ref], check=True)
    proc = subprocess.run([ivytrace_bin, "export", trace, "--to", "onnx", "-o", spelling],
                          capture_output=True, check=True)
    assert proc.stdout == ref.read_bytes()
    graph = subprocess.run([ivytrace_bin, "optimize", trace, "-o", spelling], capture_output=True, check=True)
    assert graph.stdout.startswith(b"IVYGRF01")


def test_stdout_redirected_onto_the_input_is_refused(ivytrace_bin, trace, tmp_path):
    a = copy(trace, tmp_path / "a.ivt")
    before = a.read_bytes()
    with open(a, "r+b") as f:  # stdout is the input itself (opened without truncating)
        proc = subprocess.run([ivytrace_bin, "optimize", a, "-o", "-"], stdout=f, stderr=subprocess.PIPE)
    assert proc.returncode == EXIT_USAGE, proc.stderr
    assert a.read_bytes() == before


PROGRAM = "import torch\nprint(torch.ones(2).sum().item())\n"


def test_record_never_writes_over_its_own_program(cli, tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    for out in (prog, tmp_path / "." / "prog.py"):
        proc = cli("record", "-o", out, "--", sys.executable, prog)
        assert proc.returncode == EXIT_USAGE, proc.stderr
        assert "prog.py" in proc.stderr
        assert prog.read_text() == PROGRAM
    # --force does not make the program an output either.
    proc = cli("record", "--force", "-o", prog, "--", sys.executable, prog)
    assert proc.returncode == EXIT_USAGE and prog.read_text() == PROGRAM


def test_record_keeps_an_existing_file_that_is_not_a_trace_unless_forced(cli, tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    proc = cli("record", "-o", notes, "--", sys.executable, prog)
    assert proc.returncode == EXIT_USAGE, proc.stderr
    assert "--force" in proc.stderr and notes.read_text() == "my notes\n"
    # An existing trace is replaced as before; --force replaces anything.
    trace = tmp_path / "t.ivt"
    cli("record", "-o", trace, "--", sys.executable, prog, check=True)
    cli("record", "-o", trace, "--", sys.executable, prog, check=True)
    cli("record", "--force", "-o", notes, "--", sys.executable, prog, check=True)
    assert notes.read_bytes().startswith(b"IVYTRC01")


def test_record_through_a_symlink_and_into_a_fifo(cli, tmp_path):  # noqa: C901
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    target = tmp_path / "real.ivt"
    link = tmp_path / "link.ivt"
    os.symlink(target.name, link)
    cli("record", "-o", link, "--", sys.executable, prog, check=True)
    assert link.is_symlink() and target.read_bytes().startswith(b"IVYTRC01")
    fifo = tmp_path / "t.fifo"
    os.mkfifo(fifo)
    got = {}

    def reader():
        with open(fifo, "rb") as f:
            got["data"] = f.read()

    t = threading.Thread(target=reader)
    t.start()
    proc = cli("record", "-o", fifo, "--", sys.executable, prog)
    t.join(timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    copy_ = tmp_path / "from_fifo.ivt"
    copy_.write_bytes(got["data"])
    assert cli("inspect", copy_).returncode == 0
