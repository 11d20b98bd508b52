"""Progress lines on stderr: shown in a (pseudo-)terminal, absent when stderr is a pipe, forced by
--progress."""
import os
import pty
import subprocess
import sys
import textwrap

import pytest

# About three seconds of recorded ops, so that the once-a-second progress line comes up.
SLOW = textwrap.dedent("""
    import time
    import torch
    x = torch.zeros(4)
    end = time.monotonic() + 3.0
    while time.monotonic() < end:
        x = x + 1
    print("done", int(x[0]))
    """)


def run_in_pty(argv, cwd, env):
    """Runs argv with stdin/stdout/stderr on a pseudo-terminal; returns (status, output)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(cwd)
        os.execve(argv[0], argv, env)
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace")


@pytest.fixture
def slow_program(tmp_path):
    (tmp_path / "slow.py").write_text(SLOW)
    return tmp_path


def test_record_shows_progress_in_a_terminal(ivytrace_bin, slow_program):
    env = dict(os.environ)
    status, out = run_in_pty([ivytrace_bin, "record", "-o", "t.ivt", "--", sys.executable, "slow.py"],
                             slow_program, env)
    assert status == 0, out
    assert "done" in out
    lines = [l for l in out.splitlines() if l.startswith("ivytrace record:") and "ops recorded so far" in l]
    assert lines, out
    counts = [int(l.split(":")[1].split("ops")[0].replace(",", "")) for l in lines]
    assert counts == sorted(counts) and counts[-1] > 0, lines


def test_no_progress_when_stderr_is_not_a_terminal(cli, slow_program):
    proc = cli("record", "-o", "t.ivt", "--", sys.executable, "slow.py", cwd=slow_program)
    assert proc.returncode == 0 and "ops recorded so far" not in proc.stderr
    proc = cli("record", "--progress", "-o", "t2.ivt", "--", sys.executable, "slow.py", cwd=slow_program)
    assert proc.returncode == 0 and "ops recorded so far" in proc.stderr, proc.stderr
    # optimize/export: phases only on large inputs or with --progress.
    proc = cli("optimize", "t.ivt", "-o", "t.ivg", cwd=slow_program, check=True)
    assert "ivytrace optimize:" not in proc.stderr
    proc = cli("optimize", "t.ivt", "-o", "t.ivg", "--progress", cwd=slow_program, check=True)
    assert "ivytrace optimize: reading t.ivt" in proc.stderr and "running the passes" in proc.stderr
