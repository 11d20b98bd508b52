"""Chebyshev fits used by core/export/onnx/lowerings_specfn.cc (i0e, i1e, erfinv/ndtri).

Each function is sampled in float64 from scipy.special (reference implementations) at Chebyshev
nodes of its interval, fitted with numpy's chebinterpolate-style least squares, and the series is
cut at the first degree whose maximum relative error on a dense grid is below 2e-9 (far under
float32's 6e-8). Run: python tools/fit_specfn.py > coefficients (pasted into the .cc file).
"""
import numpy as np
from numpy.polynomial import chebyshev as C
from scipy import special as sp


def fit(name, f, a, b, var, tol=2e-9, maxdeg=60):
    # t in [-1, 1] <-> the function's variable v = a + (t + 1) (b - a) / 2
    tt = np.cos(np.pi * (np.arange(400) + 0.5) / 400)
    dense = np.linspace(-1, 1, 20001)
    for deg in range(4, maxdeg):
        c = C.chebfit(tt, f(a + (tt + 1) * (b - a) / 2), deg)
        ref = f(a + (dense + 1) * (b - a) / 2)
        err = np.max(np.abs(C.chebval(dense, c) - ref) / np.maximum(np.abs(ref), 1e-300))
        if err < tol:
            break
    print(f"// {name}: {var} in [{a:g}, {b:g}], degree {deg}, max relative error {err:.1e}")
    print(f"constexpr double k{name}[] = {{" + ", ".join(f"{x:.17g}" for x in c) + "};")


# i0e / i1e: |x| <= 8 in t = x / 4 - 1; |x| > 8 in u = 16 / x - 1 (x in [8, inf) is u in (-1, 1]).
fit("I0eSmall", lambda x: sp.i0e(x), 0.0, 8.0, "x")
fit("I0eLarge", lambda u: np.sqrt(16 / (u + 1)) * sp.i0e(16 / (u + 1)), -1.0 + 1e-12, 1.0, "u = 16/x - 1")
fit("I1eSmall", lambda x: np.where(x == 0, 0.5, sp.i1e(x) / np.where(x == 0, 1, x)), 0.0, 8.0, "x (i1e(x) / x)")
fit("I1eLarge", lambda u: np.sqrt(16 / (u + 1)) * sp.i1e(16 / (u + 1)), -1.0 + 1e-12, 1.0, "u = 16/x - 1")
# erfinv(x) / x against w = -log(1 - x^2), w in [0, 5]; erfinv against s = sqrt(w) above.
def center(w):
    x = np.sqrt(-np.expm1(-w))
    return np.where(w == 0, np.sqrt(np.pi) / 2, sp.erfinv(x) / np.where(w == 0, 1, x))
def tail(s):
    w = s * s
    return sp.erfcinv(np.exp(-w) / (1 + np.sqrt(-np.expm1(-w))))
fit("ErfinvCenter", center, 0.0, 5.0, "w")
fit("ErfinvTail", tail, np.sqrt(5.0), 6.5, "s")
fit("ErfinvFar", tail, 6.5, 27.0, "s")
