"""Conversions between torch and NumPy as the recorder writes them (recorder/convert.py)."""
import numpy as np
import pytest
import torch

from ivytrace.recorder.reader import read_trace
from ivytrace.recorder.recorder import Recorder


def recorded(tmp_path, fn):
    path = tmp_path / "t.ivt"
    with Recorder(path, frameworks=("torch", "numpy")):
        out = fn()
    return read_trace(str(path)), out


def defined_ids(t):
    """(op name, tensor id) of every tensor an op returns."""
    out = []
    for o in t.ops():
        if o.result.HasField("tensor"):
            out.append((t.string(o.op), o.result.tensor.id))
    return out


def test_tensor_ids_never_collide_between_the_frameworks(tmp_path):
    def fn():
        a = np.ones(3) * 2               # NumPy first
        x = torch.ones(3) + 1            # then torch
        b = np.exp(a) - 1
        y = torch.from_numpy(b) * x
        return np.asarray(y) + a
    t, _ = recorded(tmp_path, fn)
    ids = defined_ids(t)
    assert len({i for _, i in ids}) == len(ids), ids
    names = [n for n, _ in ids]
    assert "torch.from_numpy" in names and "numpy.asarray" in names


def test_conversion_ops_join_the_references(tmp_path):
    def fn():
        x = torch.arange(4.0)
        a = x.numpy()
        return torch.as_tensor(np.sin(a))
    t, out = recorded(tmp_path, fn)
    ops = {t.string(o.op): o for o in t.ops()}
    conv = ops["torch.Tensor.numpy"]
    assert conv.args[0].tensor.id == ops["torch.arange"].result.tensor.id
    assert ops["numpy.sin"].args[0].tensor.id == conv.result.tensor.id
    assert ops["torch.as_tensor"].args[0].tensor.id == ops["numpy.sin"].result.tensor.id
    assert all(o.thread for o in t.ops())
    assert isinstance(out, torch.Tensor)


# np.array(t) warns about torch's __array__ signature with or without ivytrace (NumPy 2).
@pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword")
def test_a_copy_is_not_linked_a_view_is(tmp_path):
    def fn():
        x = torch.ones(3)
        copy = np.array(x)               # np.array copies: a later torch write does not reach it
        view = np.asarray(x)             # shares x's memory
        x.add_(1)
        return copy + 0, view + 0
    t, (copy, view) = recorded(tmp_path, fn)
    assert copy.tolist() == [1.0, 1.0, 1.0] and view.tolist() == [2.0, 2.0, 2.0]
    names = t.op_names()
    # One re-made array (the view, read after the torch write), none for the copy.
    assert names.count("torch.Tensor.numpy") == 1
    assert names.index("torch.Tensor.add_") < names.index("torch.Tensor.numpy")


def test_from_numpy_is_put_back_when_recording_stops(tmp_path):
    original = torch.from_numpy
    with Recorder(tmp_path / "t.ivt", frameworks=("torch", "numpy")):
        assert torch.from_numpy is not original
        torch.from_numpy(np.ones(2))
    assert torch.from_numpy is original


def test_links_of_dead_conversions_are_dropped(tmp_path):
    with Recorder(tmp_path / "t.ivt", frameworks=("torch", "numpy")) as rec:
        x = torch.ones(2)
        for _ in range(3000):
            (x * 1).numpy()
        assert len(rec.numpy._links) < 2100   # swept with the id table, not one per call forever
