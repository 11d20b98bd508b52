"""`python -m ivytrace` runs the CLI binary, with this interpreter as the one its commands use."""
import os
import subprocess
import sys

import pytest

from ivytrace.cli_bin import find_cli


def run(*args, **env):
    return subprocess.run([sys.executable, "-m", "ivytrace", *args], capture_output=True, text=True,
                          env=dict(os.environ, **env))


def test_python_m_ivytrace_runs_the_cli():
    proc = run("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("ivytrace "), proc.stderr
    proc = run("inpsect", "x.ivt")
    assert proc.returncode == 2 and "did you mean 'inspect'" in proc.stderr


def test_python_m_ivytrace_hands_its_interpreter_to_the_cli(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "IVYTRACE_PYTHON"}
    proc = subprocess.run([sys.executable, "-m", "ivytrace", "record", "-o", str(tmp_path / "t.ivt"), "--",
                           sys.executable, "-c", "import os; print(os.environ['IVYTRACE_PYTHON'])"],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == sys.executable


def test_find_cli_skips_a_console_script_on_path(tmp_path, monkeypatch):
    script = tmp_path / "ivytrace"
    script.write_text("#!/bin/sh\nexec python -m ivytrace \"$@\"\n")
    script.chmod(0o755)
    monkeypatch.delenv("IVYTRACE_BIN", raising=False)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    try:
        found = find_cli()
    except Exception as e:  # no binary anywhere: the script must still not be taken for one
        pytest.skip(f"no ivytrace binary to find here: {e}")
    assert found != str(script)
