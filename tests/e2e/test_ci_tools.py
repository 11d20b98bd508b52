"""The commands a CI pipeline gates on: `check`, `diff`, `inspect --json`, the refusal of empty
exports, and stable output files. Real recordings through the CLI, real onnxruntime runs."""
import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
EXIT_UNSUPPORTED, EXIT_CHECK_FAILED, EXIT_GATE, EXIT_MISSING = 5, 6, 7, 8

# A program whose model can grow a layer (argv[1] == "deeper"), recorded as a user would.
PROGRAM = textwrap.dedent("""
    import sys
    import torch
    import ivytrace

    class Net(torch.nn.Module):
        def __init__(self, deeper):
            super().__init__()
            self.fc1 = torch.nn.Linear(8, 16)
            self.fc2 = torch.nn.Linear(16, 16)
            self.extra = torch.nn.Linear(16, 16) if deeper else None
            self.head = torch.nn.Linear(16, 4)

        def forward(self, x):
            h = torch.relu(self.fc1(x))
            h = torch.relu(self.fc2(h))
            if self.extra is not None:
                h = torch.relu(self.extra(h))
            return torch.softmax(self.head(h), dim=-1)

    torch.manual_seed(0)
    net = Net(len(sys.argv) > 1 and sys.argv[1] == "deeper").eval()
    x = torch.randn(5, 8)
    with torch.no_grad(), ivytrace.region("forward", inputs={"x": x}) as r:
        r.set_result(net(x))
    """)

NO_REGION = textwrap.dedent("""
    import torch
    x = torch.randn(3, 4)
    print((x * 2).relu().sum().item())
    """)


@pytest.fixture(scope="module")
def work(cli, tmp_path_factory):
    d = tmp_path_factory.mktemp("ci")
    (d / "prog.py").write_text(PROGRAM)
    out = {}
    for tag, extra in (("base", []), ("again", []), ("deeper", ["deeper"])):
        trace = d / f"{tag}.ivt"
        cli("record", "-o", trace, "--", sys.executable, "prog.py", *extra, check=True, cwd=d)
        cli("optimize", trace, "-o", d / f"{tag}.ivg", check=True)
        out[tag] = trace
    cli("export", d / "base.ivg", "--to", "onnx", "-o", d / "base.onnx", check=True)
    cli("export", d / "base.ivg", "--to", "plan", "-o", d / "base.plan", check=True)
    return d


def report_of(proc):
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"no JSON on stdout (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}")


# --- check ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("artifact", ["base.onnx", "base.plan"])
def test_check_passes_on_a_good_export(cli, work, artifact):
    proc = cli("check", work / artifact, "--against", work / "base.ivt", "--random", "3", "--json")
    report = report_of(proc)
    assert proc.returncode == 0, proc.stderr
    assert report["schema"] == "ivytrace.check/1" and report["passed"] is True
    assert [c["name"] for c in report["cases"]] == ["recorded", "random.0", "random.1", "random.2"]
    rec = report["cases"][0]["outputs"][0]
    assert rec["name"] == "output" and rec["shape"] == [5, 4] and rec["max_abs_error"] < 1e-5
    if artifact.endswith(".onnx"):
        # The batch dim is symbolic in the ONNX model: later random trials use other batch sizes.
        assert [c["inputs"][0][0] for c in report["cases"]] == [5, 5, 6, 7]
    # The text report: one row per case and output, and the verdict.
    text = cli("check", work / artifact, "--against", work / "base.ivt", check=True).stdout
    assert "recorded" in text and "PASSED" in text


def test_check_fails_on_a_damaged_initializer(cli, work, tmp_path):
    model = onnx.load(str(work / "base.onnx"))
    init = max(model.graph.initializer, key=lambda t: np.prod(t.dims))
    w = numpy_helper.to_array(init).copy()
    w.flat[0] += 0.5
    init.CopyFrom(numpy_helper.from_array(w, init.name))
    damaged = tmp_path / "damaged.onnx"
    onnx.save(model, str(damaged))
    junit = tmp_path / "report.xml"
    proc = cli("check", damaged, "--against", work / "base.ivt", "--json", "--junit-xml", junit)
    assert proc.returncode == EXIT_CHECK_FAILED, proc.stderr
    report = report_of(proc)
    assert report["passed"] is False
    (out,) = report["cases"][0]["outputs"]
    assert out["passed"] is False and out["max_abs_error"] > 1e-3 and out["mismatched"] > 0
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("failures") == "1" and suite.find("testcase/failure") is not None
    # A tolerance loose enough for the damage passes; a per-output tolerance applies by name.
    assert cli("check", damaged, "--against", work / "base.ivt", "--atol", "output=10").returncode == 0
    # A median statistic ignores a few bad elements, max does not.
    assert cli("check", damaged, "--against", work / "base.ivt", "--error-stat", "median").returncode == 0


def test_check_input_errors_are_not_check_failures(cli, work, tmp_path):
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x01not a model at all")
    proc = cli("check", junk, "--against", work / "base.ivt")
    assert proc.returncode == 3 and "junk.onnx" in proc.stderr
    proc = cli("check", work / "base.ivg", "--against", work / "base.ivt")
    assert proc.returncode == 2 and "ONNX model or plan" in proc.stderr
    proc = cli("check", work / "base.onnx", "--against", work / "base.ivt", "--error-stat", "p99")
    assert proc.returncode == 2 and "quantile" in proc.stderr


def test_check_says_what_is_missing_in_python(cli, work, tmp_path):
    # An interpreter without the ivytrace package: exit 8, naming the interpreter and the way out.
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    proc = cli("check", work / "base.onnx", "--against", work / "base.ivt", "--python", venv / "bin" / "python")
    assert proc.returncode == EXIT_MISSING, (proc.stdout, proc.stderr)
    assert "cannot be imported" in proc.stderr and "--python" in proc.stderr
    proc = cli("check", work / "base.onnx", "--against", work / "base.ivt", "--python", tmp_path / "no-such-python")
    assert proc.returncode == EXIT_MISSING and "no-such-python" in proc.stderr
    # onnxruntime missing (a module on PYTHONPATH that fails to import stands in for it): an ONNX
    # check says so; a plan check does not need it.
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "onnxruntime.py").write_text("raise ImportError('onnxruntime is not installed (test)')\n")
    env = dict(os.environ, PYTHONPATH=f"{blocked}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    proc = cli("check", work / "base.onnx", "--against", work / "base.ivt", "--python", sys.executable, env=env)
    assert proc.returncode == EXIT_MISSING and "onnxruntime" in proc.stderr and "pip install onnxruntime" in proc.stderr
    assert cli("check", work / "base.plan", "--against", work / "base.ivt", "--python", sys.executable,
               env=env).returncode == 0


def test_check_on_a_graph_compares_random_inputs_with_its_replay(cli, work):
    proc = cli("check", work / "base.onnx", "--against", work / "base.ivg", "--json")
    report = report_of(proc)
    assert proc.returncode == 0, proc.stderr
    assert [c["name"] for c in report["cases"]] == ["random.0", "random.1", "random.2"]


# --- diff -----------------------------------------------------------------------------------------

def test_two_recordings_give_identical_graph_files_and_diff_identical(cli, work):
    assert (work / "base.ivg").read_bytes() == (work / "again.ivg").read_bytes()
    gates = "added-ops,removed-ops,changed-nodes,shape-change,guards,params,nodes>+0%"
    for a, b in (("base.ivt", "again.ivt"), ("base.ivg", "again.ivg")):
        proc = cli("diff", work / a, work / b, "--fail-on", gates)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "identical" in proc.stdout.splitlines()[-8:][0:8] or "\nidentical\n" in proc.stdout


def test_diff_catches_an_added_layer(cli, work, tmp_path):
    proc = cli("diff", work / "base.ivg", work / "deeper.ivg", "--fail-on", "added-ops", "--json")
    assert proc.returncode == EXIT_GATE, proc.stderr
    d = report_of(proc)
    assert d["schema"] == "ivytrace.diff/1" and d["tripped"] is True and d["identical"] is False
    added = [a["node"] for a in d["added"]]
    # The new layer's linear (in module "extra") and the relu forward() applies to it.
    assert sorted((n["canonical"], n["module"]) for n in added) == [("linear", "extra"), ("relu", "")], added
    assert d["op_deltas"]["torch.nn.functional.linear"] == {"a": 3, "b": 4, "delta": 1}
    assert d["parameters"]["delta"] == 16 * 16 + 16
    assert d["removed"] == []
    # Removing is what --fail-on removed-ops catches; a node-count gate trips on growth.
    assert cli("diff", work / "deeper.ivg", work / "base.ivg", "--fail-on", "removed-ops").returncode == EXIT_GATE
    assert cli("diff", work / "base.ivg", work / "deeper.ivg", "--fail-on", "removed-ops").returncode == 0
    assert cli("diff", work / "base.ivg", work / "deeper.ivg", "--fail-on", "nodes>+5%").returncode == EXIT_GATE
    assert cli("diff", work / "base.ivg", work / "deeper.ivg", "--fail-on", "nodes>+50%").returncode == 0
    assert cli("diff", work / "base.ivg", work / "deeper.ivg", "--fail-on", "bogus").returncode == 2


def test_diff_against_a_committed_baseline(cli, work, tmp_path):
    baseline = tmp_path / "baseline.json"
    baseline.write_text(cli("inspect", work / "base.ivg", "--json", check=True).stdout)
    doc = json.loads(baseline.read_text())
    assert doc["schema"] == "ivytrace.inspect/1" and doc["node_count"] == len(doc["nodes"]) > 0
    assert {"op", "canonical", "module", "args", "outputs", "loc"} <= set(doc["nodes"][0])
    assert cli("diff", baseline, work / "again.ivg", "--fail-on", "added-ops,removed-ops,shape-change").returncode == 0
    assert cli("diff", baseline, work / "deeper.ivg", "--fail-on", "added-ops").returncode == EXIT_GATE
    # ONNX models diff too: the deeper model has one more Gemm/MatMul chain.
    cli("export", work / "deeper.ivg", "--to", "onnx", "-o", tmp_path / "deeper.onnx", check=True)
    proc = cli("diff", work / "base.onnx", tmp_path / "deeper.onnx", "--json")
    d = report_of(proc)
    assert proc.returncode == 0 and d["added"] and d["parameters"]["delta"] == 16 * 16 + 16
    assert any(a["node"]["module"] == "extra" and a["node"]["loc"].startswith("prog.py:") for a in d["added"]), d["added"]
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}')
    proc = cli("diff", bad, work / "base.ivg")
    assert proc.returncode == 3 and "inspect --json" in proc.stderr


# --- stable outputs -------------------------------------------------------------------------------

def test_same_recording_gives_identical_files(cli, work, tmp_path):
    for ext, args in (("ivg", ["optimize"]), ("plan", ["export", "--to", "plan"]), ("onnx", ["export", "--to", "onnx"])):
        a, b = tmp_path / f"a.{ext}", tmp_path / f"b.{ext}"
        cli(*args[:1], work / "base.ivt", *args[1:], "-o", a, check=True)
        cli(*args[:1], work / "base.ivt", *args[1:], "-o", b, check=True)
        assert a.read_bytes() == b.read_bytes(), ext
    # Two recordings of one program: the plans and ONNX models are identical too.
    for ext, args in (("plan", ["--to", "plan"]), ("onnx", ["--to", "onnx"])):
        a, b = tmp_path / f"base2.{ext}", tmp_path / f"again2.{ext}"
        cli("export", work / "base.ivt", *args, "-o", a, check=True)
        cli("export", work / "again.ivt", *args, "-o", b, check=True)
        assert a.read_bytes() == b.read_bytes(), ext


def test_source_locations_are_relative_to_the_recording_directory(cli, work):
    doc = json.loads(cli("inspect", work / "base.ivg", "--json", check=True).stdout)
    locs = {n["loc"] for n in doc["nodes"]}
    assert any(loc.startswith("prog.py:") for loc in locs), locs
    assert not any(str(work) in loc for loc in locs)
    assert str(work) not in cli("inspect", work / "base.ivt", "--graph", check=True).stdout


# --- never pass on nothing, papercuts -------------------------------------------------------------

def test_export_refuses_a_trace_with_no_region(cli, tmp_path):
    (tmp_path / "noregion.py").write_text(NO_REGION)
    trace = tmp_path / "noregion.ivt"
    cli("record", "-o", trace, "--", sys.executable, "noregion.py", check=True, cwd=tmp_path)
    for to in ("onnx", "plan"):
        out = tmp_path / f"out.{to}"
        proc = cli("export", trace, "--to", to, "-o", out)
        assert proc.returncode == EXIT_UNSUPPORTED and "ivytrace.region" in proc.stderr, proc.stderr
        assert not out.exists()
        cli("export", trace, "--to", to, "-o", out, "--allow-empty", check=True)
        assert out.exists()


def test_unknown_command_suggests_the_closest(cli):
    proc = cli("inpsect", "x.ivt")
    assert proc.returncode == 2 and "did you mean 'inspect'" in proc.stderr
    proc = cli("frobnicate")
    assert proc.returncode == 2 and "unknown command 'frobnicate'" in proc.stderr and "check" in proc.stderr


def test_inspect_shows_plans_and_onnx_models(cli, work):
    for f, word in (("base.plan", "plan"), ("base.onnx", "ONNX model")):
        proc = cli("inspect", work / f, check=True)
        assert proc.stdout.startswith(word), proc.stdout
        doc = json.loads(cli("inspect", work / f, "--json", check=True).stdout)
        assert doc["schema"] == "ivytrace.inspect/1" and doc["nodes"] and doc["parameters"]["elements"] > 0


def test_each_help_lists_only_its_exit_statuses(cli):
    diff = cli("diff", "--help", check=True).stdout
    assert "7 a --fail-on gate tripped" in diff and "5 unsupported" not in diff and "6 check failed" not in diff
    check = cli("check", "--help", check=True).stdout
    assert "6 check failed" in check and "onnxruntime" in check and "gate" not in check
    inspect = cli("inspect", "--help", check=True).stdout
    assert "3 bad input" in inspect and "5 unsupported" not in inspect and "4 output" not in inspect
