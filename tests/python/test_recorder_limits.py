"""Recorder(max_ops=..., max_bytes=...): whatever the limit, the trace is valid (whole records,
counts and CRC right, a footer that records the limit) and the program keeps running."""
import numpy as np
import pytest
import torch

from ivytrace.recorder.reader import read_trace
from ivytrace.recorder.recorder import Recorder


def program():
    """27 ops over torch and numpy, with constants (TensorData records) along the way."""
    x = torch.ones(3)
    for i in range(10):
        x = x + torch.full((3,), float(i))
    a = np.ones(5)
    for i in range(8):
        a = a * np.arange(5.0)
    return float(x.sum()), float(a.sum())


def run(path, capsys, **limits):
    with Recorder(path, frameworks=("torch", "numpy"), **limits) as rec:
        result = program()
    return rec, result, capsys.readouterr().err


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    path = tmp_path_factory.mktemp("full") / "full.ivt"
    with Recorder(path, frameworks=("torch", "numpy")):
        result = program()
    return read_trace(str(path)), result


@pytest.mark.parametrize("buffer_bytes", [0, 300])
def test_every_op_limit_gives_a_valid_prefix(tmp_path, capsys, full, buffer_bytes):
    whole, expected = full
    names = whole.op_names()
    for limit in range(0, len(names) + 2):
        path = tmp_path / f"t{limit}.ivt"
        with Recorder(path, frameworks=("torch", "numpy"), max_ops=limit, buffer_bytes=buffer_bytes):
            assert program() == expected          # the program is not disturbed
        err = capsys.readouterr().err
        t = read_trace(str(path))                 # structure, counts, CRC
        assert t.footer is not None and not t.truncated
        got = t.op_names()
        assert got == names[:len(got)]
        if buffer_bytes == 0:
            assert len(got) == min(limit, len(names))
        else:
            assert len(got) <= limit              # cut at a write boundary
        hit = t.footer.HasField("stopped_by_limit")
        assert hit == (limit < len(names)), limit
        assert err.count("recording stopped at the limit max_ops") == (1 if hit else 0)
        if hit:
            assert t.footer.stopped_by_limit.ops_recorded == len(got)
            assert t.footer.stopped_by_limit.file.endswith("test_recorder_limits.py")


def test_byte_limits_keep_the_file_within_the_limit(tmp_path, capsys, full):
    whole, expected = full
    names = whole.op_names()
    cut = 0
    for limit in (4096, 4500, 5000, 6000, 8000):
        path = tmp_path / f"b{limit}.ivt"
        rec, result, err = run(path, capsys, max_bytes=limit)
        assert result == expected
        assert path.stat().st_size <= limit
        t = read_trace(str(path))
        got = t.op_names()
        assert got == names[:len(got)]
        if t.footer.HasField("stopped_by_limit"):
            assert t.footer.stopped_by_limit.kind == t.footer.stopped_by_limit.MAX_BYTES
            assert f"recording stopped at the limit max_bytes {limit}" in err
            cut += 1
    assert cut >= 3


def test_recording_stops_for_good_after_the_limit(tmp_path, capsys):
    path = tmp_path / "t.ivt"
    with Recorder(path, max_ops=2) as rec:
        x = torch.ones(2) + 1
        y = x * 3                     # the third op hits the limit
        assert rec.stopped
        z = y - 1
    assert z.tolist() == [5.0, 5.0]
    assert read_trace(str(path)).op_names() == ["torch.ones", "torch.Tensor.add"]
    assert capsys.readouterr().err.count("recording stopped") == 1


@pytest.mark.parametrize("bad", [-1, 1.5, "10", True])
def test_wrong_limits_are_refused(tmp_path, bad):
    with pytest.raises(ValueError, match="max_ops must be a non-negative integer"):
        Recorder(tmp_path / "t.ivt", max_ops=bad)


def test_a_long_error_is_cut_to_keep_the_file_within_the_byte_limit(tmp_path):
    path = tmp_path / "t.ivt"
    rec = Recorder(path, max_bytes=4096).start()
    torch.ones(2) * 3
    rec.stop(error="RuntimeError: " + "x" * 6000, exit_status=1)
    assert path.stat().st_size <= 4096
    t = read_trace(str(path))
    assert t.footer.error.startswith("...") and t.footer.error.endswith("xxx")
    assert t.footer.exit_status == 1 and not t.footer.HasField("stopped_by_limit")
