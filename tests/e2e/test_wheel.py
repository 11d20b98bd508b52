"""The wheel, as a user gets it: built from python/ by scikit-build-core (which compiles the CLI
through CMake), installed into a fresh venv with no network and no torch, then used only through
what it installed: the `ivytrace` console script, `python -m ivytrace`, `import ivytrace`.

- In the venv without torch: --version and --help of the console script and of `python -m`,
  `import ivytrace` (and its runtime, C extension and protobuf modules) with no torch to import,
  `trace_graph` of a NumPy function, and a CI recipe on a NumPy program: record -> optimize ->
  export (plan) -> check -> diff against a committed baseline, which then catches a model change.
- The README's CI recipe exactly as written (tests/e2e/test_ci_recipe.py's block: a torch program,
  an ONNX export checked in onnxruntime) through the same installed console script. torch and
  onnxruntime are not installed for that (torch must never be downloaded, and the venv stays
  offline): a .pth file appends the test interpreter's site-packages to the venv's sys.path, after
  the venv's own, so ivytrace, numpy and protobuf still come from the wheel's install.

Building the wheel reuses the configured CMake tree build/ of scripts/setup.sh (`-C build-dir=`), so
it compiles nothing that is up to date. That needs scikit-build-core importable by this interpreter
(python/requirements.txt) and no build isolation: scikit-build-core clears a build tree it finds
configured from another installation of itself. The wheel's dependencies come from build/wheelhouse,
which scripts/setup.sh fills.
"""
import importlib.util
import json
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build"
WHEELHOUSE = BUILD / "wheelhouse"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_ci_recipe import recipe as readme_recipe  # noqa: E402

# Variables that would point the installed package at this checkout instead of itself.
_LEAKS = ("PYTHONPATH", "PYTHONHOME", "IVYTRACE_BIN", "IVYTRACE_PYTHON", "VIRTUAL_ENV", "IVYTRACE_NO_SPEEDUPS")


def _missing_prerequisite(msg):
    if os.environ.get("CI"):
        pytest.fail(msg)
    pytest.skip(msg)


def _adopt_build_tree():
    """scikit-build-core records in build/.skbuild-info.json which installation of it configured the
    tree, and clears CMakeCache.txt and CMakeFiles/ (every object file: a full C++ build follows)
    when another one builds there. The tree is scripts/setup.sh's, configured with the same
    settings, so a record left by another installation (a .venv made anew) is dropped instead."""
    import scikit_build_core
    info = BUILD / ".skbuild-info.json"
    try:
        recorded = json.loads(info.read_text()).get("skbuild_path")
    except (OSError, ValueError, AttributeError):
        return
    if recorded != str(Path(scikit_build_core.__file__).parent.resolve()):
        info.unlink()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    if not (BUILD / "CMakeCache.txt").is_file():
        _missing_prerequisite(f"no configured CMake tree at {BUILD}: run scripts/setup.sh")
    if importlib.util.find_spec("scikit_build_core") is None:
        _missing_prerequisite(f"scikit-build-core is not installed in {sys.executable}: run scripts/setup.sh")
    if not list(WHEELHOUSE.glob("numpy-*.whl")) or not list(WHEELHOUSE.glob("protobuf-*.whl")):
        _missing_prerequisite(f"no numpy/protobuf wheels in {WHEELHOUSE}: run scripts/setup.sh")
    _adopt_build_tree()
    out = tmp_path_factory.mktemp("dist")
    env = dict(os.environ, CMAKE_BUILD_PARALLEL_LEVEL=str(os.cpu_count() or 2))
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
         "-w", str(out), "-C", f"build-dir={BUILD}", str(REPO / "python")],
        capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    wheels = list(out.glob("ivytrace-0.1.0-*.whl"))
    assert len(wheels) == 1, list(out.iterdir())
    return wheels[0]


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory):
    """A fresh venv (no torch, no pip) with the wheel installed offline from build/wheelhouse."""
    root = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in _LEAKS}
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-index",
         "--find-links", str(WHEELHOUSE), str(wheel)], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return root


def _env(venv):
    """The environment of a user of the venv: its bin/ first on PATH, nothing of this checkout."""
    env = {k: v for k, v in os.environ.items() if k not in _LEAKS}
    keep = [p for p in env.get("PATH", "").split(os.pathsep) if p and Path(p).resolve() != BUILD.resolve()]
    env["PATH"] = os.pathsep.join([str(venv / "bin"), *keep])
    return env


def _run(venv, args, cwd=None, **kw):
    return subprocess.run(args, cwd=cwd, env=_env(venv), capture_output=True, text=True, **kw)


def _site(venv):
    return Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True, env=_env(venv)).stdout.strip())


def test_wheel_holds_the_cli_generated_modules_schemas_and_extension(wheel):
    import zipfile
    names = set(zipfile.ZipFile(wheel).namelist())
    for must in ("ivytrace/bin/ivytrace", "ivytrace/__main__.py", "ivytrace/cli_bin.py", "ivytrace/_boot/sitecustomize.py",
                 "ivytrace/v1/trace_pb2.py", "ivytrace/v1/plan_pb2.py", "ivytrace/schemas/torch.textproto",
                 "ivytrace/schemas/numpy.textproto"):
        assert must in names, must
    assert any(re.fullmatch(r"ivytrace/_speedups\.cpython-.*\.so", n) for n in names), sorted(names)
    assert any(re.fullmatch(r"ivytrace/_replay\.cpython-.*\.so", n) for n in names), sorted(names)
    # Not the checkout's binary schema cache (schema.py writes it beside the text when used in place).
    assert not [n for n in names if "__pycache__" in n and n.startswith("ivytrace/schemas/")], sorted(names)
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "ivytrace = ivytrace.__main__:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
    # Only the Python package: not the C++ install (lib/, include/, the CMake package).
    assert not [n for n in names if n.split("/")[0] not in ("ivytrace",) and ".dist-info/" not in n], sorted(names)


def test_console_script_and_python_m_run_the_bundled_cli(venv):
    for cmd in ([str(venv / "bin" / "ivytrace")], ["ivytrace"], [str(venv / "bin" / "python"), "-m", "ivytrace"]):
        proc = _run(venv, [*cmd, "--version"])
        assert proc.returncode == 0, proc.stderr
        assert "0.1.0" in proc.stdout + proc.stderr
        proc = _run(venv, [*cmd, "--help"])
        assert proc.returncode == 0, proc.stderr
        for sub in ("record", "optimize", "export", "check", "diff", "inspect"):
            assert sub in proc.stdout, (sub, proc.stdout)
    proc = _run(venv, ["ivytrace", "frobnicate"])
    assert proc.returncode != 0 and "frobnicate" in proc.stderr


def test_import_without_torch_uses_the_installed_package(venv):
    code = r"""
import importlib.util, json, sys
import numpy as np
import ivytrace, ivytrace.v1.trace_pb2, ivytrace.v1.plan_pb2, ivytrace._speedups, ivytrace._replay
from ivytrace.cli_bin import find_cli
from ivytrace.runtime.plan import load_plan

W = np.random.RandomState(0).randn(8, 4).astype(np.float32)
def fn(x):
    return np.tanh(np.maximum(x @ W, 0)).sum(axis=1)

x = np.random.RandomState(1).randn(3, 8).astype(np.float32)
graph = ivytrace.trace_graph(fn, args=(x,))
x2 = np.random.RandomState(2).randn(3, 8).astype(np.float32)
machine = load_plan(graph.plan_path, machine=True)   # the plan machine, as long plans run
print(json.dumps({"machine_ok": bool(np.array_equal(machine(x2), load_plan(graph.plan_path, machine=False)(x2))),
                  "torch_spec": importlib.util.find_spec("torch") is not None,
                  "torch_loaded": "torch" in sys.modules,
                  "file": ivytrace.__file__, "cli": find_cli(), "speedups": ivytrace._speedups.__file__,
                  "replay_ok": bool(np.allclose(graph(x2), fn(x2), rtol=1e-5, atol=1e-6))}))
"""
    proc = _run(venv, [str(venv / "bin" / "python"), "-c", code], cwd=str(venv))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    site = _site(venv)
    assert got["torch_spec"] is False and got["torch_loaded"] is False, got
    assert Path(got["file"]).resolve() == (site / "ivytrace" / "__init__.py").resolve(), got
    assert Path(got["cli"]).resolve() == (site / "ivytrace" / "bin" / "ivytrace").resolve(), got
    assert Path(got["speedups"]).parent.resolve() == (site / "ivytrace").resolve(), got
    assert got["replay_ok"] and got["machine_ok"], got


NUMPY_PROGRAM = r'''
import sys
import numpy as np
import ivytrace

rng = np.random.RandomState(0)
W1 = rng.randn(8, 16).astype(np.float32) * 0.3
W2 = rng.randn(16, 4).astype(np.float32) * 0.3
B2 = rng.randn(4).astype(np.float32) * 0.1

@ivytrace.region("mlp")
def mlp(x):
    h = np.maximum(x @ W1, 0)
    if len(sys.argv) > 1:          # "changed": the model gains a layer
        h = np.tanh(h)
    return np.dot(h, W2) + B2

print(mlp(np.random.RandomState(1).randn(2, 8).astype(np.float32)).sum())
'''

NUMPY_RECIPE = """set -e
ivytrace record -o model.ivt -- python prog.py $CHANGE
ivytrace optimize model.ivt -o model.ivg
ivytrace export model.ivg --to plan -o model.plan
ivytrace check model.plan --against model.ivt --random 2 --junit-xml check.xml
ivytrace diff ci/baseline.json model.ivt --fail-on added-ops,removed-ops,shape-change,guards
"""


def test_ci_recipe_on_a_numpy_program_without_torch(venv, tmp_path):
    (tmp_path / "prog.py").write_text(NUMPY_PROGRAM)
    (tmp_path / "ci").mkdir()
    proc = _run(venv, ["ivytrace", "record", "-o", "base.ivt", "--", "python", "prog.py"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    proc = _run(venv, ["ivytrace", "inspect", "base.ivt", "--graph", "--json"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "ci" / "baseline.json").write_text(proc.stdout)

    proc = _run(venv, ["bash", "-c", NUMPY_RECIPE], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASSED" in proc.stdout and "identical" in proc.stdout, proc.stdout
    assert (tmp_path / "check.xml").is_file() and (tmp_path / "model.plan").is_file()

    # The program gains a layer: the diff gate fails the job with its own status.
    proc = _run(venv, ["bash", "-c", NUMPY_RECIPE.replace("$CHANGE", "changed")], cwd=tmp_path)
    assert proc.returncode == 7, proc.stdout + proc.stderr
    assert "TRIPPED" in proc.stdout and "tanh" in proc.stdout, proc.stdout


def test_readme_ci_recipe_through_the_installed_console_script(venv, tmp_path):
    """The README's block as written, with torch and onnxruntime borrowed from this interpreter."""
    pytest.importorskip("torch")
    pytest.importorskip("onnxruntime")
    site = _site(venv)
    borrowed = sysconfig.get_paths()["purelib"]
    pth = site / "zz-borrow-torch-onnxruntime.pth"   # after the venv's own site-packages
    pth.write_text(borrowed + "\n")
    try:
        proc = _run(venv, [str(venv / "bin" / "python"), "-c",
                           "import ivytrace, numpy, google.protobuf, torch; print(ivytrace.__file__); print(numpy.__file__)"])
        assert proc.returncode == 0, proc.stderr
        for line in proc.stdout.split():
            assert Path(line).resolve().is_relative_to(site.resolve()), proc.stdout

        (tmp_path / "samples").symlink_to(REPO / "samples")
        (tmp_path / "ci").mkdir()
        proc = _run(venv, ["ivytrace", "record", "-o", "base.ivt", "--", "python", "samples/run_model.py", "mlp"], cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        proc = _run(venv, ["ivytrace", "inspect", "base.ivt", "--graph", "--json"], cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        (tmp_path / "ci" / "baseline.json").write_text(proc.stdout)

        proc = _run(venv, ["bash", "-c", readme_recipe()], cwd=tmp_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "PASSED" in proc.stdout and "identical" in proc.stdout, proc.stdout
        assert (tmp_path / "check.xml").is_file() and (tmp_path / "model.onnx").is_file()
    finally:
        pth.unlink()
