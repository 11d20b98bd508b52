"""Shared fixtures for end-to-end tests: the real CLI binary, run as a user would run it."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
sys.path.insert(0, str(SAMPLES))
if str(REPO / "python") not in sys.path:  # this checkout's package, installed or not
    sys.path.insert(0, str(REPO / "python"))


def find_binary():
    env = os.environ.get("IVYTRACE_BIN")
    if env:
        return env
    built = REPO / "build" / "ivytrace"
    if built.exists():
        return str(built)
    return shutil.which("ivytrace")


@pytest.fixture(scope="session")
def ivytrace_bin():
    path = find_binary()
    if not path:
        pytest.fail("the ivytrace binary is not built: run scripts/setup.sh (or set IVYTRACE_BIN)")
    return path


@pytest.fixture(scope="session")
def cli(ivytrace_bin):
    """cli(*args) runs the binary and returns the CompletedProcess (text mode)."""

    # `ivytrace record` runs programs that must load this checkout's ivytrace package (the one
    # these tests import), not another copy installed in the interpreter.
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "python")] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))

    def run(*args, check=False, **kw):
        kw.setdefault("env", env)
        proc = subprocess.run([ivytrace_bin, *map(str, args)], capture_output=True, text=True, **kw)
        if check and proc.returncode != 0:
            raise AssertionError(f"ivytrace {' '.join(map(str, args))} failed ({proc.returncode}):\n"
                                 f"{proc.stdout}\n{proc.stderr}")
        return proc

    return run
