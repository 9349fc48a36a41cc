"""The one table of rotation cases that both inner-Jacobi twins must pass (paper 003, §4.3.1).

Each case gives the inputs of :func:`gpusvd.jacobi.rotations.rotation` and what is
expected of its output (cs, tn): values exact to the bit where the formulas make them
exact, and everywhere agreement with the exact-arithmetic formulas (15)–(18) of the same
rounded inputs, orthogonalization of the 2×2 pivot Gram matrix and (J-)orthogonality of
the rotation, within ``ulps`` units of the unit roundoff. The CPU test feeds the table to
the Numba function; the GPU test feeds it to the CUDA device function and calls
:func:`check` on what comes back.
"""

from typing import NamedTuple, Optional

import mpmath
import numpy as np


class RotationCase(NamedTuple):
    name: str
    app: float
    aqq: float
    apq_abs: float
    hyperbolic: bool
    exact_cs: Optional[float] = None  # cs that must come out bit for bit, if any
    exact_tn: Optional[float] = None
    ulps: float = 8.0                 # error budget in units of u (input conditioning)
    diagonalizes: bool = True         # False where §4.3.1 substitutes coth 2φ on purpose
    only: Optional[str] = None        # the one dtype the case is built for, if any


CASES = (
    RotationCase("equal norms: φ = 45°", 1.0, 1.0, 0.5, False, exact_tn=1.0),
    RotationCase("h_pp > h_qq", 3.0, 2.0, 1.0, False),
    RotationCase("h_qq > h_pp", 2.0, 3.0, 1.0, False),
    RotationCase("nearly parallel", 1.0, 1.0 + 2.0 ** -20, 0.999, False),
    RotationCase("|ct2φ| < √u: |ctφ| = |ct2φ| + 1", 1.0, 1.0 + 2.0 ** -30, 0.25, False),
    RotationCase("|ct2φ| >= √(2/u): cs = 1", 1.0, 1.0e12, 1.0e-3, False, exact_cs=1.0),
    RotationCase("|ctφ| >= √(2/u) but |ct2φ| < √(2/u)", 0.0, 0.75 * 2.0 ** 12, 0.5, False,
                 exact_cs=1.0, only="float32"),
    RotationCase("|ctφ| >= √(2/u) but |ct2φ| < √(2/u)", 0.0, 0.75 * 2.0 ** 27, 0.5, False,
                 exact_cs=1.0, only="float64"),
    RotationCase("ct2φ overflows to inf", 1.0e30, 1.0, 1.0e-30, False, exact_cs=1.0),
    RotationCase("wide range of norms", 1.0e-20, 1.0e20, 1.0e-1, False, exact_cs=1.0),
    RotationCase("hyperbolic", 4.0, 1.0, 1.0, True),
    RotationCase("hyperbolic, h_qq > h_pp", 1.0, 9.0, 2.5, True),
    RotationCase("hyperbolic |coth 2φ| = 1 -> 5/4", 1.0, 1.0, 1.0, True, exact_tn=-0.5,
                 diagonalizes=False),
    RotationCase("hyperbolic |coth 2φ| < 1 numerically -> 5/4", 1.0, 1.0, 1.0000001, True,
                 exact_tn=-0.5, diagonalizes=False),
    RotationCase("hyperbolic |coth 2φ| slightly above 1", 1.0, 1.0, 0.999, True, ulps=4000.0),
    RotationCase("hyperbolic |ct2φ| >= √(2/u): cosh = 1", 1.0e12, 1.0, 1.0e-3, True,
                 exact_cs=1.0),
    # Pivot pairs of the float32 contract cases that failed on the H100 (graded side="both"
    # 45×33 and rank-7 50×40, see test_inner_host.py); the inner kernels form them in
    # float64 from float32 columns.
    RotationCase("graded float32 columns: norms 1e-3 and 1e-10 apart", 5.35002e-07,
                 3.1443568e-20, 6.376347e-17, False, exact_cs=1.0),
    RotationCase("float32 columns of entries 1e-21: Gram below float32's normal range",
                 2.5e-41, 1.0e-41, 1.2e-41, False, only="float64"),
    RotationCase("rank-deficient noise columns: tiny, nearly equal, nearly parallel",
                 1.0e-14, 1.0000001e-14, 0.9999e-14, False),
    RotationCase("graded hyperbolic pair in float32's subnormal range", 3.0e-40, 1.0e-42,
                 2.0e-41, True, only="float64"),
)


def cases(dtype):
    """The cases that apply to ``dtype`` (float32 or float64)."""
    return [c for c in CASES if c.only in (None, np.dtype(dtype).name)]


def _mp(x):
    return mpmath.mpf(float(x))


def reference(case, dtype):
    """(cs, tn) of (15)–(18) with §4.3.1's substitutions, in 50-digit arithmetic."""
    u = np.finfo(dtype).eps / 2
    big = mpmath.sqrt(2 / _mp(u))
    with mpmath.workdps(50):
        app, aqq, apq = (_mp(dtype(v)) for v in (case.app, case.aqq, case.apq_abs))
        t = -1 if case.hyperbolic else 1
        ct2 = t * (aqq - t * app) / (2 * apq)
        a = abs(ct2)
        sg = 1 if ct2 >= 0 else -1
        if case.hyperbolic and a <= 1:
            a = mpmath.mpf("1.25")
        if a >= big:
            return mpmath.mpf(1), sg / (2 * a)
        ct = a + mpmath.sqrt(a * a + t)
        cs = mpmath.mpf(1) if ct >= big else ct / mpmath.sqrt(ct * ct + t)
        return cs, sg / ct


def check(case, dtype, cs, tn):
    """Assert that ``(cs, tn)`` computed in ``dtype`` meets what ``case`` expects."""
    u = float(np.finfo(dtype).eps) / 2
    cs, tn = np.asarray(cs), np.asarray(tn)
    assert cs.dtype == tn.dtype == np.dtype(dtype), (case.name, cs.dtype, tn.dtype)
    if case.exact_cs is not None:
        assert cs == dtype(case.exact_cs), (case.name, cs)
    if case.exact_tn is not None:
        assert tn == dtype(case.exact_tn), (case.name, tn)
    budget = case.ulps * u
    with mpmath.workdps(50):
        ref_cs, ref_tn = reference(case, dtype)
        assert abs(_mp(cs) - ref_cs) <= budget * ref_cs, (case.name, cs, ref_cs)
        # A tangent below the normal range may flush to zero.
        assert abs(_mp(tn) - ref_tn) <= budget * abs(ref_tn) + float(np.finfo(dtype).tiny), \
            (case.name, tn, ref_tn)
        t = -1 if case.hyperbolic else 1
        c, s = _mp(cs), _mp(tn)
        assert abs(c * c * (1 + t * s * s) - 1) <= budget * max(1, c * c), (case.name, "J")
        if case.diagonalizes:
            app, aqq, apq = (_mp(dtype(v)) for v in (case.app, case.aqq, case.apq_abs))
            m = mpmath.matrix([[c, c * s], [-t * c * s, c]])
            h = m.T * mpmath.matrix([[app, apq], [apq, aqq]]) * m
            assert abs(h[0, 1]) <= budget * max(mpmath.sqrt(abs(h[0, 0] * h[1, 1])),
                                                 abs(apq) * c * c), (case.name, "offdiag")
