"""JAX primitives that were not in schemas/ (trace_graph refused any program applying one: "not in
schemas/: the runtime's allow-list refuses it"): linear algebra (cholesky, eigh, svd, qr), the
special functions (i0e, gammainc, polygamma, zeta, betainc), the comparisons jnp.searchsorted and
jnp.interp sort with (lt_to, le_to), and jnp.linalg.solve/inv, whose custom_linear_solve holds
jaxprs a plan cannot: it is not recorded itself, the primitives it evaluates are. Each program is
traced at one input and replayed at new values and another batch, against JAX."""
import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
import jax.scipy.special as jss  # noqa: E402

import ivytrace  # noqa: E402

GRID = jnp.array([-1.0, -0.2, 0.3, 1.5])


def _spd(x):   # a symmetric positive definite (4, 4) matrix from a (b, 4) batch
    return x.T @ x / x.shape[0] + jnp.eye(4)


PROGRAMS = {
    "solve_inv": lambda x: jnp.linalg.solve(_spd(x), x.T).T + jnp.linalg.inv(_spd(x)).sum(0),
    "cholesky_eigh": lambda x: x @ jnp.linalg.cholesky(_spd(x)) + jnp.linalg.eigh(_spd(x))[0],
    "svd_qr": lambda x: jnp.linalg.svd(x, compute_uv=False).sum() + jnp.abs(jnp.linalg.qr(_spd(x))[1]).sum(0) + x,
    "searchsorted_interp": lambda x: jnp.searchsorted(GRID, x) + jnp.interp(x, GRID, GRID ** 2),
    "special": lambda x: (jss.i0e(x) + jss.i1e(x) + jss.gammainc(jnp.abs(x) + 1, jnp.abs(x)) + jss.polygamma(1, jnp.abs(x) + 1)
                          + jss.zeta(jnp.abs(x) + 2, 1.0) + jss.betainc(2.0, 3.0, jax.nn.sigmoid(x))),
    # Issue 11 item 2: lax.fft_p (FFT, IFFT, RFFT, IRFFT; its fft_type a jax.lax.FftType symbol).
    "fft": lambda x: (jnp.fft.fft(x).real + jnp.fft.ifft(x).imag + jnp.abs(jnp.fft.rfft(x)).sum(1, keepdims=True)
                      + jnp.fft.irfft(jnp.fft.rfft(x)) + jnp.fft.fft2(x).imag + jnp.fft.fft(x, axis=0).real),
    # Issue 11 item 2: lax.scatter_max / scatter_min (jnp's x.at[].max/min).
    "scatter_max_min": lambda x: x.at[jnp.array([0, 2])].max(x[:2] * 2) + x.at[jnp.array([1, 1])].min(-x[:2]),
}


GUARDED_SHAPES = {"solve_inv", "searchsorted_interp", "scatter_max_min"}  # jnp.at reads the shape


def _x(b, seed):
    return jnp.asarray(np.random.RandomState(seed).randn(b, 4).astype(np.float32))


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_primitive_replays_at_new_values_and_batch(name, ivytrace_bin, monkeypatch):
    monkeypatch.setenv("IVYTRACE_BIN", ivytrace_bin)
    fn = PROGRAMS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = ivytrace.trace_graph(fn, args=(_x(6, 0),))
        x = _x(6, 1)
        np.testing.assert_allclose(np.asarray(traced(x)), np.asarray(fn(x)), rtol=2e-5, atol=2e-6)
        # Another batch: the graph follows it where JAX's symbolic shapes prove the params follow the
        # inputs; where the eager run differs from the symbolic jaxpr (custom_linear_solve evaluated
        # eagerly, searchsorted's loop unrolled) the inputs' shapes are guarded: refused, never wrong.
        x = _x(9, 2)
        if name in GUARDED_SHAPES:
            with pytest.raises(ivytrace.GuardError, match="jax.Array.shape"):
                traced(x)
        else:
            np.testing.assert_allclose(np.asarray(traced(x)), np.asarray(fn(x)), rtol=2e-5, atol=2e-6)
