"""Every test, in-process or through `ivytrace record` subprocesses, uses the `ivytrace` package of
this checkout, not one installed into the interpreter from another checkout (the end-to-end tests
import ivytrace before tests/python/conftest.py runs, and the CLI finds the package through the
child interpreter's sys.path)."""
import os
import sys
from pathlib import Path

PYTHON_DIR = str(Path(__file__).resolve().parents[1] / "python")
if sys.path[:1] != [PYTHON_DIR]:
    sys.path.insert(0, PYTHON_DIR)
_pp = os.environ.get("PYTHONPATH", "")
if _pp.split(os.pathsep)[:1] != [PYTHON_DIR]:
    os.environ["PYTHONPATH"] = os.pathsep.join([PYTHON_DIR] + ([_pp] if _pp else []))
