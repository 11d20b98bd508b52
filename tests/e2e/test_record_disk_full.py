"""A recorder I/O fault (here: a full disk, a 256 KiB tmpfs) never reaches the program: it runs
to its end with its own output and exit status, one line on stderr says recording stopped, and
the trace holds the whole records written before the fault. Needs root to mount the tmpfs; the
write() path is also tested without root through a file descriptor that fails."""
import errno
import os
import subprocess
import sys
import uuid

import pytest
import torch

from ivytrace.recorder import writer as writer_mod
from ivytrace.recorder.writer import TraceWriter

PROGRAM = """
import sys, torch
x = torch.ones(64, 64)
for i in range(4000):
    x = x * 1.0001 + 0.5
print("done", float(x[0, 0]) > 0)
sys.exit(7)
"""


@pytest.fixture()
def small_disk(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    yield mnt
    subprocess.run(["umount", str(mnt)], check=False)


@pytest.mark.parametrize("speedups", ["1", "0"])
def test_program_filling_the_disk_runs_to_its_end(cli, small_disk, tmp_path, speedups):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    out = small_disk / "t.ivt"
    env = dict(os.environ, IVYTRACE_NO_SPEEDUPS="0" if speedups == "1" else "1")
    env["PYTHONPATH"] = str(writer_mod.__file__).rsplit("/ivytrace/", 1)[0]
    proc = cli("record", "-o", out, "--", sys.executable, prog, env=env)
    assert proc.returncode == 7, proc.stderr
    assert proc.stdout.strip() == "done True"
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if "recording stopped" in ln]
    assert len(lines) == 1 and "No space left on device" in lines[0], proc.stderr
    # Readable up to its last whole record: inspect reads it (no footer: the disk had no room).
    shown = cli("inspect", out)
    assert shown.returncode == 0, shown.stderr
    assert "torch.Tensor.mul" in shown.stdout or "torch.mul" in shown.stdout or "__mul__" in shown.stdout, shown.stdout


def test_previous_trace_survives_when_recording_never_began(cli, small_disk, tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    out = small_disk / "t.ivt"
    good = tmp_path / "good.ivt"
    cli("record", "-o", good, "--", sys.executable, prog)
    out.write_bytes(good.read_bytes()[:4096] if good.stat().st_size > 4096 else good.read_bytes())
    before = out.read_bytes()
    filler = small_disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)  # fill the disk completely
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)
    proc = cli("record", "-o", out, "--", sys.executable, prog)
    assert "done True" in proc.stdout and "Traceback" not in proc.stderr, proc.stderr
    assert out.read_bytes() == before


class FailingAfter:
    """os.write that fails with ENOSPC once `budget` bytes went through."""

    def __init__(self, budget):
        self.budget = budget
        self.real = os.write

    def __call__(self, fd, data):
        if self.budget <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        n = min(len(data), self.budget)
        self.budget -= n
        return self.real(fd, bytes(data[:n]))


def test_write_path_fault_stops_the_trace_at_a_whole_record(tmp_path, monkeypatch, capsys):
    path = tmp_path / "t.ivt"
    monkeypatch.setattr(TraceWriter, "use_sink", False)
    w = TraceWriter(str(path))
    fail = FailingAfter(200)
    monkeypatch.setattr(writer_mod.os, "write", fail)
    for i in range(50):
        w.emit(writer_mod.TAG_INTERN, f"\x08{chr(i + 1)}\x12\x05name{i % 10}".encode())
    w.close(writer_mod.trace_pb2.Footer())
    err = capsys.readouterr().err
    assert err.count("recording stopped") == 1 and "No space left" in err
    data = path.read_bytes()
    assert 8 <= len(data) <= 200
    # Whole records only: every length prefix is followed by all of its bytes.
    pos = 8
    while pos < len(data):
        n = data[pos]
        assert n < 0x80 and pos + 1 + n <= len(data), "a record was cut"
        pos += 1 + n
    assert pos == len(data)
