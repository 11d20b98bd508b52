"""Helpers for the recorder and runtime tests: record a function into a trace and read it back."""
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PYTHON_DIR = REPO / "python"
if str(PYTHON_DIR) not in sys.path:  # the package from this checkout, installed or not
    sys.path.insert(0, str(PYTHON_DIR))

from ivytrace.recorder.reader import read_trace  # noqa: E402
from ivytrace.recorder.recorder import Recorder  # noqa: E402


class Recorded:
    """A trace read back, with lookups the tests need."""

    def __init__(self, trace):
        self.trace = trace
        self.records = trace.records
        self.s = trace.string

    def kinds(self):
        return [r.WhichOneof("kind") for r in self.records]

    def ops(self, name=None):
        ops = self.trace.ops()
        return [o for o in ops if name is None or self.s(o.op) == name]

    def op_names(self):
        return self.trace.op_names()

    def tensors(self, role=None):
        return [t for t in self.trace.tensor_data() if role is None or t.value.role == role]

    def of_kind(self, kind):
        return self.trace.of_kind(kind)

    def index_of(self, pred):
        for i, r in enumerate(self.records):
            if pred(r):
                return i
        raise AssertionError("no such record")


@pytest.fixture
def record(tmp_path):
    """record(fn, **recorder_options) -> Recorded: runs fn() under a Recorder."""
    counter = [0]

    def run(fn, **options):
        counter[0] += 1
        path = tmp_path / f"trace{counter[0]}.ivytrace"
        with Recorder(path, **options):
            fn()
        return Recorded(read_trace(str(path)))

    return run


@pytest.fixture(scope="session")
def cli_binary():
    from ivytrace.cli_bin import CLIError, find_cli
    try:
        return find_cli()
    except CLIError as e:
        pytest.skip(f"the ivytrace CLI is not built ({e}); build it with cmake to run end-to-end tests")

