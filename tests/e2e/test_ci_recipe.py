"""Runs the README's "ivytrace in CI" recipe exactly as written: it passes against a baseline of the
same program, and fails with diff's gate status (7) against a baseline of another model."""
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def recipe() -> str:
    text = (REPO / "README.md").read_text()
    m = re.search(r"<!-- ci-recipe:[^>]*-->\s*```sh\n(.*?)```", text, re.S)
    assert m, "README.md has no ci-recipe block"
    return m.group(1)


def run_recipe(cwd, ivytrace_bin):
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(ivytrace_bin).parent), str(Path(sys.executable).parent), env["PATH"]])
    return subprocess.run(["bash", "-c", recipe()], cwd=cwd, env=env, capture_output=True, text=True)


def test_ci_recipe_passes_then_catches_a_model_change(cli, ivytrace_bin, tmp_path):
    (tmp_path / "samples").symlink_to(REPO / "samples")
    (tmp_path / "ci").mkdir()
    # The baseline, made as the README says.
    cli("record", "-o", tmp_path / "base.ivt", "--", sys.executable, "samples/run_model.py", "mlp", check=True, cwd=tmp_path)
    baseline = cli("inspect", tmp_path / "base.ivt", "--graph", "--json", check=True).stdout
    (tmp_path / "ci" / "baseline.json").write_text(baseline)
    proc = run_recipe(tmp_path, ivytrace_bin)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASSED" in proc.stdout and (tmp_path / "check.xml").exists() and "identical" in proc.stdout
    # A baseline of another model: the diff gate fails the job with its own status.
    cli("record", "-o", tmp_path / "other.ivt", "--", sys.executable, "samples/run_model.py", "cnn", check=True, cwd=tmp_path)
    (tmp_path / "ci" / "baseline.json").write_text(cli("inspect", tmp_path / "other.ivt", "--graph", "--json", check=True).stdout)
    proc = run_recipe(tmp_path, ivytrace_bin)
    assert proc.returncode == 7, proc.stdout + proc.stderr
    assert "TRIPPED" in proc.stdout
