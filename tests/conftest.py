"""Every test imports the ivytrace package of this checkout (python/), also when another copy is
installed into the interpreter (an editable install of another checkout sharing the venv)."""
import sys
from pathlib import Path

PYTHON_DIR = str(Path(__file__).resolve().parents[1] / "python")
if sys.path[:1] != [PYTHON_DIR]:
    sys.path.insert(0, PYTHON_DIR)
