"""Small NumPy programs, traced once and then run at NEW batch sizes: the replay
(`ivytrace.trace_graph`) and the exported ONNX model (onnxruntime) must give NumPy's own result,
or refuse naming an ivytrace guard; never another number.

Each program starts with `x.reshape(x.shape[0], -1)`: reading the batch keeps it an input dim of
the graph (a dim never read is specialized, by design), so sizes along it (rolls, splits, flips,
linspace's num, slices) are exercised at sizes the trace never saw. The grids below compare
negative-step slices and arctan2's special values with NumPy element by element.
"""
import os
import re
import warnings

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
import ivytrace  # noqa: E402


@pytest.fixture(autouse=True)
def _binary(ivytrace_bin, monkeypatch):
    monkeypatch.setenv("IVYTRACE_BIN", ivytrace_bin)


def _b(x):
    return x.reshape(x.shape[0], -1)


PROGRAMS = {
    "tril_triu": lambda x: np.tril(_b(x) @ _b(x).T, k=-1) + np.triu(np.ones((x.shape[0], x.shape[0]), x.dtype), 1),
    "roll": lambda x: np.roll(_b(x), shift=1, axis=0) - np.roll(_b(x), -3, axis=1) + np.roll(_b(x), 5),
    "take_along_axis_argsort": lambda x: np.take_along_axis(_b(x), np.argsort(_b(x), axis=0)[::-1], axis=0),
    "take_along_axis_broadcast": lambda x: np.take_along_axis(_b(x), np.array([[2, 0, 1]]), axis=1),
    "ptp_minmax_norm": lambda x: (_b(x) - _b(x).min(axis=0, keepdims=True)) / (np.ptp(_b(x), axis=0, keepdims=True) + 1e-6),
    "array_split": lambda x: np.stack([p.sum(0) for p in np.array_split(_b(x), 2, axis=0)]),
    "array_split_many": lambda x: np.concatenate([p.sum(0, keepdims=True) for p in np.array_split(_b(x), 4)]),
    "vsplit_hsplit": lambda x: np.vsplit(_b(x), [1])[1].sum(0) + np.hsplit(_b(x), 2)[0].sum(0).repeat(2),
    "diff": lambda x: np.diff(np.cumsum(np.tanh(_b(x)), axis=0), axis=0),
    "diff_n2_prepend": lambda x: np.diff(_b(x), n=2, axis=0, prepend=_b(x)[:1]),
    "nan_to_num": lambda x: np.nan_to_num(np.where(_b(x) > 1, np.nan, np.log(np.abs(_b(x)) > 0.3) * _b(x)), nan=-2.0),
    "flip": lambda x: np.flip(_b(x), axis=0) + np.flip(_b(x)) - np.flipud(_b(x)) * np.fliplr(_b(x)),
    "negative_step": lambda x: np.concatenate([_b(x)[::-1], _b(x)[-2::-2][:1].repeat(x.shape[0], 0)[: x.shape[0]]], axis=1),
    "arctan2": lambda x: np.arctan2(_b(x), _b(x)[::-1]) + np.arctan2(_b(x), np.float32(0.0)),
    "eye_dtype": lambda x: _b(x).T @ (np.eye(x.shape[0], dtype=x.dtype) * 2.0) + np.eye(6, x.shape[0], k=1, dtype=np.float32),
    "linspace_dtype": lambda x: _b(x) * np.linspace(0.0, 1.0, x.shape[0], dtype=x.dtype)[:, None],
    "linspace_int": lambda x: _b(x) + np.linspace(-2, 9, x.shape[0], endpoint=False, dtype=np.int32)[:, None],
    # np.moveaxis and np.trace lower since issue 11 (lowerings_views.cc).
    "moveaxis": lambda x: np.moveaxis(_b(x)[:, :, None], 0, -1).sum(1),
    "trace": lambda x: np.trace(_b(x)) + _b(x).trace(offset=1),
    # np.rot90 shares torch.rot90's lowering (lowerings_torch_extra.cc).
    "rot90": lambda x: np.rot90(_b(x)) + np.rot90(_b(x), 2).sum(),
    "transpose_varargs": lambda x: x.reshape(x.shape[0], 3, 2).transpose(1, 0, 2).sum((0, 2)) + x.transpose().sum((0, 1)),
    # NumPy's own keyword names (a=, a_min=, correction=, constant_values=, initial=) and keywords that
    # only type or hint (dtype=, copy=, optimize=).
    "keywords_numpy_spells": lambda x: (np.clip(_b(x), a_min=-0.5, a_max=0.7) + np.sum(a=_b(x), axis=0)
                                        + np.std(_b(x), axis=0, correction=1) + np.dot(a=_b(x).T, b=_b(x))[0]),
    "reduce_initial": lambda x: (np.max(_b(x), axis=1, initial=0.25) + np.min(_b(x), axis=1, initial=-0.1)
                                 + np.sum(_b(x), axis=1, initial=2.0) + _b(x).prod(axis=1, initial=0.5)),
    "pad_constant_values": lambda x: np.pad(_b(x), ((1, 0), (2, 1)), constant_values=1.5)[:-1, :6] * 2,
    "typing_keywords": lambda x: (np.concatenate([_b(x), _b(x)], axis=1, dtype=np.float64).astype(np.float32, copy=False)
                                  + np.einsum("bi,bj->bij", _b(x), _b(x), optimize=True).sum(2).repeat(2, 1)),
    "atleast": lambda x: np.atleast_2d(_b(x)[0]) + np.atleast_3d(_b(x)).sum((0, 2)) + np.atleast_1d(_b(x)[0, 0]),
    "copysign_signbit_logaddexp": lambda x: np.copysign(1.5, _b(x)) + np.signbit(_b(x)) + np.logaddexp(_b(x), 0.5 * _b(x)),
}


def _inputs(b, seed):
    return (np.random.RandomState(seed).randn(b, 3, 2).astype(np.float32),)


def _close(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_replay_and_onnx_match_numpy_at_new_batch_sizes(name, tmp_path):
    fn = PROGRAMS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        replay = ivytrace.trace_graph(fn, args=_inputs(4, 0))
        path = str(tmp_path / "m.onnx")
        ivytrace.export(fn, path, args=_inputs(4, 0), allow_specialized=True)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        assert sess.get_inputs()[0].shape[0] == "batch", sess.get_inputs()[0].shape
        for b, seed in ((4, 1), (3, 2), (7, 3), (6, 4)):
            (x,) = _inputs(b, seed)
            want = fn(x)
            _close(replay(x), want)
            _close(sess.run(None, {sess.get_inputs()[0].name: x})[0], want)


# --- replayed only (ONNX refuses them, naming the op): the replay follows new batch sizes ------------

REPLAY_ONLY = {
    # (atleast_Nd and signbit lowered in session 14: they moved to PROGRAMS.)
    "spacing_nextafter": lambda x: np.spacing(_b(x)) + np.nextafter(_b(x), 0.0),
    "linalg_svd": lambda x: np.linalg.svd(_b(x).reshape(x.shape[0], 2, -1), compute_uv=False),
}


@pytest.mark.parametrize("name", sorted(REPLAY_ONLY))
def test_replay_only_programs_follow_new_batch_sizes(name, tmp_path):
    fn = REPLAY_ONLY[name]
    replay = ivytrace.trace_graph(fn, args=_inputs(4, 0))
    for b, seed in ((4, 1), (3, 2), (7, 3)):
        (x,) = _inputs(b, seed)
        _close(replay(x), fn(x))
    with pytest.raises(ivytrace.CLIError, match="no ONNX lowering"):
        ivytrace.export(fn, str(tmp_path / "m.onnx"), args=_inputs(4, 0), allow_specialized=True)


# --- ndarray methods NumPy computes in C without dispatch: recorded, so a replay either matches or
# is refused; never the trace's values as constants ----------------------------------------------

METHODS = {
    "sort": lambda x: (lambda y: (y.sort(axis=0), y)[1])(_b(x).copy()),
    "partition": lambda x: (lambda y: (y.partition(1, axis=0), y[:2])[1])(_b(x).copy()),
    "put": lambda x: (lambda y: (y.put([0, 2], 5.0), y)[1])(_b(x).copy()),
    "searchsorted": lambda x: np.sort(_b(x)[:, 0]).searchsorted(_b(x)[:, 1]) * 1.0,
    "compress": lambda x: _b(x).compress([True, False, True, True, False, False], axis=1),
    "trace": lambda x: _b(x).trace(offset=1),
}


@pytest.mark.parametrize("name", sorted(METHODS))
def test_unlisted_c_methods_are_never_replayed_as_constants(name):
    fn = METHODS[name]
    try:
        replay = ivytrace.trace_graph(fn, args=_inputs(4, 0))
        results = [(replay(x), fn(x)) for x in (_inputs(4, 1)[0], _inputs(5, 2)[0])]
    except ivytrace.CLIError as e:
        assert "cannot be lowered" in str(e) and f"numpy.ndarray.{name}" in str(e)
        return
    for got, want in results:
        _close(got, want)


# --- functions that write into an argument: the replay must see the write --------------------------

def _put_along_axis(x):
    y = _b(x).copy()
    np.put_along_axis(y, np.argmax(y, axis=1)[:, None], -1.0, axis=1)
    return y


def _copyto(x):
    y = np.zeros_like(_b(x))
    np.copyto(y, _b(x) * 2, where=_b(x) > 0)
    return y


def _putmask_put_place(x):
    y = _b(x).copy()
    np.putmask(y, y < 0, 7.0)
    np.put(y, [0, 3], [5.0, 6.0])
    np.place(y, y > 1, [9.0, 8.0])
    return y


def _fill_diagonal(x):
    y = _b(x)[:, :2].copy()
    np.fill_diagonal(y, 3.0)
    return y


@pytest.mark.parametrize("fn", [_put_along_axis, _copyto, _putmask_put_place, _fill_diagonal], ids=lambda f: f.__name__)
def test_replay_sees_writes_into_arguments(fn):
    replay = ivytrace.trace_graph(fn, args=_inputs(4, 0))
    for b, seed in ((4, 1), (3, 2), (5, 3)):
        (x,) = _inputs(b, seed)
        want = fn(x)
        assert not np.array_equal(want, _b(x)[:, : want.shape[1]])   # the write changes the result
        np.testing.assert_array_equal(replay(x), want)


# --- negative-step slices against NumPy, at batch sizes the trace never saw ------------------------

_BOUNDS = [None, -9, -6, -5, -3, -1, 0, 1, 2, 4, 5, 8]
_SLICES = [slice(a, b, c) for a in _BOUNDS for b in _BOUNDS for c in (-1, -2, -3)]


def _sliced(x):
    x = x.reshape(x.shape[0], 2)
    return tuple(x[s] for s in _SLICES) + tuple(x[1:, s] for s in _SLICES[::5])


def test_negative_step_slices_match_numpy(tmp_path):
    path = str(tmp_path / "m.onnx")
    ivytrace.export(_sliced, path, args=(np.arange(10, dtype=np.float32).reshape(5, 2),), allow_specialized=True)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for b in (5, 3, 8, 1, 0, 12, 2):
        x = np.arange(b * 2, dtype=np.float32).reshape(b, 2)
        got = sess.run(None, {sess.get_inputs()[0].name: x})
        want = _sliced(x)
        assert len(got) == len(want)
        for k, (g, w) in enumerate(zip(got, want)):
            s = _SLICES[k] if k < len(_SLICES) else _SLICES[::5][k - len(_SLICES)]
            assert g.shape == w.shape and np.array_equal(g, w), f"batch {b}, x[{s}]: {g.tolist()} != {w.tolist()}"


# --- arctan2's special values: zeros of both signs, infinities, NaN ---------------------------------

def test_arctan2_special_values_match_numpy(tmp_path):
    v = np.array([0.0, -0.0, 1.0, -1.0, 2.5, -3.0, 1e-30, -1e-30, 1e30, -1e30, np.inf, -np.inf, np.nan, 0.5, -7.25],
                 dtype=np.float32)
    y, x = (a.ravel() for a in np.meshgrid(v, v, indexing="ij"))

    def prog(y, x):
        return np.arctan2(y, x), np.arctan2(y, np.float32(-0.0)), np.arctan2(np.float32(-np.inf), x)
    path = str(tmp_path / "m.onnx")
    ivytrace.export(prog, path, args=(y, x), allow_specialized=True)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = sess.run(None, {"y": y, "x": x})
    for g, w in zip(got, prog(y, x)):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=0)   # NaN where NumPy's is NaN
        bad = np.nonzero(np.signbit(g) != np.signbit(w))[0]
        assert not len(bad), [(y[i], x[i], g[i], w[i]) for i in bad[:5]]


# --- linspace as NumPy computes it ------------------------------------------------------------------

@pytest.mark.parametrize("start,stop,endpoint,dtype", [
    (0.0, 1.0, True, np.float32), (-3, 7, True, None), (2.5, -1.25, False, np.float64), (1e-3, 1e3, True, np.float32),
    (-3.5, 7, True, np.int64), (0, 10, False, np.int32), (5.0, 5.0, True, np.float32), (1, 1e-300, True, None)])
def test_linspace_matches_numpy_for_every_num(start, stop, endpoint, dtype, tmp_path):
    def prog(x):
        return np.linspace(start, stop, x.shape[0], endpoint=endpoint, dtype=dtype)
    path = str(tmp_path / "m.onnx")
    ivytrace.export(prog, path, args=(np.zeros((5, 1), np.float32),), allow_specialized=True)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for n in (5, 0, 1, 2, 3, 17):
        got = sess.run(None, {sess.get_inputs()[0].name: np.zeros((n, 1), np.float32)})[0]
        want = prog(np.zeros((n, 1)))
        assert got.dtype == want.dtype and got.shape == want.shape, (n, got.dtype, want.dtype, got.shape)
        np.testing.assert_array_equal(got, want, err_msg=f"num={n}")


@pytest.mark.parametrize("fn,param", [
    (lambda x: np.ravel(_b(x), order="F"), "order='F'"),
    (lambda x: _b(x).flatten(order="F"), "order='F'"),
    (lambda x: np.zeros_like(_b(x), shape=(2, 2)) + x[0, 0, 0], "shape=(2, 2)"),
])
def test_an_argument_no_lowering_reads_is_refused_not_dropped(fn, param, tmp_path):
    # Exporting these while ignoring the argument would give C-order / the input's shape: another
    # number with exit 0. The export names the argument instead.
    with pytest.raises(ivytrace.CLIError, match=r"does not read .*" + re.escape(param)):
        ivytrace.export(fn, str(tmp_path / "m.onnx"), args=_inputs(2, 0))
    assert not (tmp_path / "m.onnx").exists()


def test_vander_of_another_length_fails_rather_than_keeping_the_traced_width(tmp_path):
    # np.vander(v) has len(v) columns, unrolled for the traced length: another length used to give
    # a matrix of the traced width, silently. The model now refuses it.
    path = ivytrace.export(lambda v: np.vander(v), str(tmp_path / "v.onnx"), args=(np.arange(4.0),))
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    np.testing.assert_allclose(sess.run(None, {name: np.arange(4.0) + 1})[0], np.vander(np.arange(4.0) + 1))
    with pytest.raises(Exception, match="Reshape|dimension"):
        sess.run(None, {name: np.arange(6.0)})
