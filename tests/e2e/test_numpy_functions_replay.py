"""NumPy functions that were not in schemas/ (trace_graph refused any program calling one: "not in
schemas/: the runtime's allow-list refuses it"), now listed from NumPy's own signatures
(scripts/numpy_schema_entries.py): each program is traced at one batch and replayed at others,
against NumPy. Most replay as opaque NumPy calls; the aliases of canonical ops (np.arccos, np.isinf,
np.trunc, np.fmod, np.logical_xor) also export."""
import warnings

import numpy as np
import pytest

import ivytrace

W = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)


def _b(x):   # read the batch, so it is an input dim of the graph
    return x.reshape(x.shape[0], -1)


PROGRAMS = {
    "statistics": lambda x: (np.median(_b(x), axis=1) + np.percentile(_b(x), 30, axis=1) + np.quantile(_b(x), 0.7, axis=1)
                             + np.average(_b(x), axis=1, weights=W) + np.nanmean(np.where(_b(x) > 1, np.nan, _b(x)), axis=1)
                             + np.nanstd(_b(x), axis=1) + np.nanmax(_b(x), axis=1)),
    "cov_corrcoef": lambda x: np.cov(_b(x)).sum(0) + np.corrcoef(_b(x).T).sum() + np.count_nonzero(_b(x) > 0, axis=1),
    "data_dependent": lambda x: np.concatenate([np.nonzero(_b(x) > 0)[1], np.argwhere(_b(x) < 0).ravel(),
                                                np.unique(np.round(_b(x))).astype(np.int64), np.flatnonzero(_b(x) > 1)]),
    "search_and_bins": lambda x: (np.searchsorted(W, _b(x)) + np.digitize(_b(x), W) + np.isin(np.round(_b(x)), [0.0, 1.0])
                                  + np.bincount(np.abs(np.round(_b(x) * 2)).astype(np.int64).ravel(), minlength=12)[:4]),
    "interp_convolve_gradient": lambda x: (np.interp(_b(x), W, W[::-1]) + np.gradient(_b(x), axis=1)
                                           + np.convolve(_b(x)[0], np.ones(3, np.float32) / 3, mode="same")),
    "linalg": lambda x: (np.linalg.inv(_b(x).T @ _b(x) + np.eye(4, dtype=np.float32)).sum(0)
                         + np.linalg.solve(_b(x).T @ _b(x) + np.eye(4), W) + np.linalg.det(np.eye(4) + _b(x)[:4, :4] * 0.1)
                         + np.linalg.svd(_b(x), compute_uv=False).sum() + np.linalg.vector_norm(_b(x), axis=0)),
    "shapes_and_sets": lambda x: (np.diag(_b(x)[:, :4] @ _b(x)[:, :4].T).sum() + np.kron(_b(x)[:2, :2], W[:2]).sum()
                                  + np.inner(_b(x), _b(x)).sum(0)[:1] + np.cross(_b(x)[:, :3], _b(x)[:, 1:]).sum()
                                  + np.append(_b(x), W[None], axis=0).sum(0) + np.delete(_b(x), 1, axis=1).sum(1).sum()),
    "select_partition": lambda x: (np.select([_b(x) < -0.5, _b(x) > 0.5], [_b(x), -_b(x)], default=0.0)
                                   + np.sort(np.partition(_b(x), 1, axis=1), axis=1) + np.sort(np.argpartition(_b(x), 2, axis=1), axis=1)),
    "canonical_aliases": lambda x: (np.arccos(np.clip(_b(x), -0.9, 0.9)) + np.isinf(_b(x) / (_b(x) > 0)) + np.trunc(3 * _b(x))
                                    + np.fmod(_b(x), 0.3) + np.logical_xor(_b(x) > 0, _b(x) > 1) + np.fix(-2.5 * _b(x))),
    "in_place_writes": lambda x: _writes(_b(x)),
    "polynomials": lambda x: np.polyval(np.polyder([1.0, -2.0, 0.5, 3.0]), _b(x)) + np.polyval(np.polyfit(W, W ** 2, 2), _b(x)),
    # Issue 11 (specfn): np.i0 (its parameter x), np.gcd and np.lcm, which lower to ONNX now.
    # Issue 11 item 2: numpy.fft's transforms and the parts of their complex results (z.real and
    # z.imag recorded as np.real / np.imag).
    "fft": lambda x: (np.abs(np.fft.rfft(_b(x))) + np.fft.fft(_b(x)).real[:, :3] + np.fft.irfft(np.fft.rfft(_b(x)), n=4)[:, :3]
                      + np.fft.fft2(_b(x)).imag[:, 1:] + np.real(np.fft.ifftn(_b(x), axes=(0,)))[:, :3]
                      + np.imag(np.fft.ihfft(_b(x), norm="ortho")) + np.fft.hfft(np.fft.rfft(_b(x)), n=3)),
    "i0_gcd_lcm": lambda x: (np.i0(_b(x)) + np.i0(x=_b(x) * 2) + np.gcd((_b(x) * 10).astype(np.int64), 12)
                             + np.lcm((_b(x) * 10).astype(np.int32), 4)),
    # Issue 11 item 2: np.insert, np.kaiser, np.histogram2d, np.histogramdd.
    "insert_kaiser_histograms": lambda x: np.concatenate([np.insert(_b(x), 1, 0.5, axis=1).ravel(), np.kaiser(6, 3.0).astype(np.float32),
                                                          np.histogram2d(_b(x)[:, 0], _b(x)[:, 1], bins=3, range=[[-1, 1], [-1, 1]])[0].ravel().astype(np.float32),
                                                          np.histogramdd(_b(x)[:, :2], bins=2)[0].ravel().astype(np.float32)]),
}


def _writes(x):
    # np.put / place / putmask / copyto / fill / fill_diagonal write their first argument (session 15:
    # they have ONNX lowerings now); the copies keep x itself unchanged.
    a = x.copy()
    np.put(a, [0, -1], [5.0, 6.0])
    np.place(a, a < -1, W[:3])
    np.putmask(a, a > 1, W)
    b = np.empty_like(x)
    np.copyto(b, x[:1] * 2)
    c = x[:, :3].copy()
    c.fill(0.5)
    np.fill_diagonal(c, -1.0, wrap=True)
    return np.concatenate([a, b, np.pad(c, ((0, 0), (0, 1)))], axis=1)


def _inputs(b, seed):
    return (np.random.RandomState(seed).randn(b, 2, 2).astype(np.float32),)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_function_replays_at_a_new_batch(name, ivytrace_bin, monkeypatch):
    monkeypatch.setenv("IVYTRACE_BIN", ivytrace_bin)
    fn = PROGRAMS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = ivytrace.trace_graph(fn, args=_inputs(5, 0))
        for b, seed in ((5, 1), (7, 2), (4, 3)):
            got, want = traced(*_inputs(b, seed)), fn(*_inputs(b, seed))
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)
            assert np.asarray(got).dtype == want.dtype


def test_aliases_of_canonical_ops_export_to_onnx(tmp_path, ivytrace_bin, monkeypatch):
    ort = pytest.importorskip("onnxruntime")
    monkeypatch.setenv("IVYTRACE_BIN", ivytrace_bin)
    fn = PROGRAMS["canonical_aliases"]
    path = str(tmp_path / "m.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ivytrace.export(fn, path, args=_inputs(5, 0))
        sess = ort.InferenceSession(path)
        for b, seed in ((5, 1), (7, 2)):
            (x,) = _inputs(b, seed)
            got = sess.run(None, {sess.get_inputs()[0].name: x})[0]
            np.testing.assert_allclose(got, fn(x), rtol=1e-5, atol=1e-6)
