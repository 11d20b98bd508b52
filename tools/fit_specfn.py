"""Chebyshev fits used by core/export/onnx/lowerings_specfn.cc (i0e, i1e, erfinv/ndtri, Bessel J0, J1,
Y0, Y1; the latter to an absolute error, as they have zeros).

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


# Bessel J0, J1, Y0, Y1 (absolute error: the functions have zeros). |x| <= 8: even functions of x
# in t = x^2 / 32 - 1: J0, J1 / x, R0 = Y0 - (2/pi) J0 log x, R1 = (Y1 - (2/pi)(J1 log x - 1/x)) / x.
# x > 8: the Hankel asymptotic form J = sqrt(2 / (pi x)) (P cos chi - Q sin chi), Y = sqrt(2 / (pi x))
# (P sin chi + Q cos chi), chi = x - pi/4 (order 0), x - 3 pi/4 (order 1); P and 8 Q / x... fitted in
# t = 2 (8 / x)^2 - 1, from P = sqrt(pi x / 2) (J cos chi + Y sin chi), Q = sqrt(pi x / 2) (Y cos chi - J sin chi).
def fit_abs(name, f, var, tol=2e-10):
    tt = np.cos(np.pi * (np.arange(400) + 0.5) / 400)
    dense = np.linspace(-1, 1, 2001)
    ft, fd = f(tt), f(dense)
    for deg in range(4, 60):
        c = C.chebfit(tt, ft, deg)
        err = np.max(np.abs(C.chebval(dense, c) - fd))
        if err < tol:
            break
    print(f"// {name}: {var}, degree {deg}, max absolute error {err:.1e}")
    print(f"constexpr double k{name}[] = {{" + ", ".join(f"{x:.17g}" for x in c) + "};")


def xs(t):  # t = x^2 / 32 - 1 -> x
    return np.sqrt(np.maximum((t + 1) * 32, 0))


def xl(t):  # t = 2 (8 / x)^2 - 1 -> x (t = -1 is x = inf: sampled just inside)
    return 8 / np.sqrt(np.maximum((t + 1) / 2, 1e-12))


fit_abs("J0Small", lambda t: sp.j0(xs(t)), "t = x^2/32 - 1")
fit_abs("J1Small", lambda t: np.where(xs(t) == 0, 0.5, sp.j1(xs(t)) / np.where(xs(t) == 0, 1, xs(t))), "t = x^2/32 - 1 (J1 / x)")
fit_abs("Y0Small", lambda t: np.where(xs(t) == 0, sp.y0(1e-300) - 2 / np.pi * np.log(1e-300),
                                      sp.y0(xs(t)) - 2 / np.pi * sp.j0(xs(t)) * np.log(np.where(xs(t) == 0, 1, xs(t)))), "t (R0)")
def r1(t):  # in 40-digit mpmath: Y1 and 2 / (pi x) cancel near 0 in float64
    import mpmath
    mpmath.mp.dps = 40
    out = []
    for v in np.atleast_1d(t):
        x = mpmath.sqrt(max((mpmath.mpf(v) + 1) * 32, mpmath.mpf("1e-30")))
        out.append(float((mpmath.bessely(1, x) - 2 / mpmath.pi * (mpmath.besselj(1, x) * mpmath.log(x) - 1 / x)) / x))
    return np.array(out)
fit_abs("Y1Small", r1, "t (R1)")
for order, shift in ((0, np.pi / 4), (1, 3 * np.pi / 4)):
    J, Y = (sp.j0, sp.y0) if order == 0 else (sp.j1, sp.y1)
    def P(t, J=J, Y=Y, shift=shift):
        x = xl(t); chi = x - shift
        return np.sqrt(np.pi * x / 2) * (J(x) * np.cos(chi) + Y(x) * np.sin(chi))
    def Q(t, J=J, Y=Y, shift=shift):
        x = xl(t); chi = x - shift
        return np.sqrt(np.pi * x / 2) * (Y(x) * np.cos(chi) - J(x) * np.sin(chi)) * x / 8
    fit_abs(f"P{order}", P, "t = 2 (8/x)^2 - 1")
    fit_abs(f"Q{order}", Q, "t = 2 (8/x)^2 - 1 (Q x / 8)")


# Modified Bessel K0, K1 (relative error). x <= 2: K0 + log(x / 2) I0 and (K1 - log(x / 2) I1) x, even
# smooth functions, in t = x^2 / 2 - 1 (Cephes' split); x > 2: sqrt(x) e^x K in v = 4 / x - 1.
def xk(t):
    return np.sqrt(np.maximum((t + 1) * 2, 0))


def k0s(t):
    x = xk(t)
    xx = np.where(x == 0, 1e-300, x)
    return sp.k0(xx) + np.log(xx / 2) * sp.i0(xx)


def k1s(t):
    import mpmath
    mpmath.mp.dps = 40
    out = []
    for v in np.atleast_1d(t):
        x = mpmath.sqrt(max((mpmath.mpf(v) + 1) * 2, mpmath.mpf("1e-30")))
        out.append(float((mpmath.besselk(1, x) - mpmath.log(x / 2) * mpmath.besseli(1, x)) * x))
    return np.array(out)


def xb(v):  # v = 4 / x - 1 -> x
    return 4 / np.maximum(v + 1, 1e-12)


fit_abs("K0Small", k0s, "t = x^2/2 - 1 (K0 + log(x/2) I0)", tol=1e-10)
fit_abs("K1Small", k1s, "t = x^2/2 - 1 ((K1 - log(x/2) I1) x)", tol=1e-10)
fit_abs("K0eLarge", lambda v: np.sqrt(xb(v)) * sp.k0e(xb(v)), "v = 4/x - 1 (sqrt(x) k0e)", tol=1e-10)
fit_abs("K1eLarge", lambda v: np.sqrt(xb(v)) * sp.k1e(xb(v)), "v = 4/x - 1 (sqrt(x) k1e)", tol=1e-10)
