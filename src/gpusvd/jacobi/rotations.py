"""Jacobi rotations by the Rutishauser formulas (paper 003, §4.3.1, eqs. (13)–(18), App. B).

One step of the one-sided Jacobi method postmultiplies a pivot pair of columns
``[g_p g_q]`` by a 2×2 transformation that makes them orthogonal (trigonometric,
𝔱 = +1) or J-orthogonal (hyperbolic, 𝔱 = −1, when the signs of p and q differ: HSVD).
From the pivot Gram matrix (3), ``h_pp = ‖g_p‖²``, ``h_qq = ‖g_q‖²`` and
``h_pq = g_pᴴ g_q = |h_pq|·e^{iα}``, :func:`rotation` computes

    (15)  ct2φ  = 𝔱·(h_qq − 𝔱·h_pp) / (2·|h_pq|)
    (16)  |ctφ| = |ct2φ| + √(ct2φ² + 𝔱)
    (17)  tnφ   = sgn(ct2φ) / |ctφ|                    (sgn(0) = +1)
    (18)  csφ   = |ctφ| / √(|ctφ|² + 𝔱)                 (the paper's cs₂ choice, App. B)

with the special cases of §4.3.1: for 𝔱 = −1 a |coth 2φ| that is numerically at most 1
becomes 5/4 (paper's ref. [41]); |ct2φ| < √u gives |ctφ| = |ct2φ| + 1 (trigonometric);
|ct2φ| ≥ √(2/u) gives tnφ = sgn(ct2φ)·(½ / |ct2φ|) and csφ = 1, and |ctφ| ≥ √(2/u) gives
csφ = 1, which also keeps the squares from overflowing (u = 2^-53 or 2^-24, the unit
roundoff of the real type).

The transformation, (13) and (14) extended to complex columns by the phase e^{iα}, is

    g_p' = cs·(g_p − 𝔱·tn·e^{−iα}·g_q),    g_q' = cs·(g_q + tn·e^{iα}·g_p),

that is ``[g_p g_q] · [[cs, cs·tn·e^{iα}], [−𝔱·cs·tn·e^{−iα}, cs]]``: unitary for 𝔱 = 1,
J-unitary for 𝔱 = −1, and g_p'ᴴ g_q' = 0 in exact arithmetic. For a real pair the phase
is the sign of h_pq. The new squared norms of a trigonometric step are
``h_pp − tn·|h_pq|`` and ``h_qq + tn·|h_pq|`` (the paper's step 5 in §4.3 writes them as
fma(±tan φ, h_pq, ·) for its sign convention of tan φ). A rotation is *proper* when
csφ ≠ 1 (§4.3, step 4); the others are applied but not counted by the stopping rule (§4.5).

Departure from the paper: it evaluates ct2φ² + 𝔱 and |ctφ|² + 𝔱 with one fused
multiply-add. Numba on Python 3.11 has no fma, so the trigonometric case computes
``x·x + 1`` (no cancellation) and the hyperbolic case ``(x − 1)·(x + 1)``, which is as
accurate as the fma near x = 1 because x − 1 is then exact (Sterbenz). The GPU twin
(``kernels/inner_jacobi.cu``, ``jacobi_rotation``) evaluates the same expressions in the
same order, with every product and sum explicitly rounded, so it gives the same bits.

:func:`rotation` is the reference both inner Jacobi kernels call per pivot pair, in
float64 for every dtype (their Gram sums of float32 columns are formed in float64: see
:mod:`.inner`), except the small SVD's float32 data, which takes (15) in float64 and
(16)–(18) in float32 (:func:`rotation_of`); its inputs are of one real type (float32 or
float64) and so is every intermediate, and the float32 version is checked on the same
table of cases.
``tests/jacobi/rotation_cases.py`` is the one table of cases both twins must pass.
"""

import numba
import numpy as np
from numba import types
from numba.extending import overload

# Value that replaces a hyperbolic |coth 2φ| <= 1 (§4.3.1, after Veselić, the paper's [41]).
_COTH_SUBSTITUTE = 1.25


def _unit_roundoff(dtype):
    """u = eps/2: 2^-53 for float64 and 2^-24 for float32 (the paper's ε)."""
    return float(np.finfo(dtype).eps) / 2


def _real_of(x):
    return np.float32 if x == types.float32 else np.float64


def _like(x, value):
    """``value`` as a scalar of ``x``'s real type (Python code path: for docs only)."""
    return type(x)(value)


@overload(_like)
def _like_impl(x, value):
    cast = _real_of(x)
    return lambda x, value: cast(value)


def _thresholds(x):
    """(√u, √(2/u)) in ``x``'s real type (Python code path)."""
    u = _unit_roundoff(type(x))
    return type(x)(np.sqrt(u)), type(x)(np.sqrt(2 / u))


@overload(_thresholds)
def _thresholds_impl(x):
    real = _real_of(x)
    u = _unit_roundoff(real)
    small, big = real(np.sqrt(u)), real(np.sqrt(2 / u))
    return lambda x: (small, big)


@numba.njit(cache=True)
def rotation(app, aqq, apq_abs, hyperbolic):
    """Cosine and tangent (or cosh and tanh) of the Jacobi rotation for one pivot pair.

    Parameters
    ----------
    app, aqq : float32 or float64
        h_pp = ‖g_p‖² and h_qq = ‖g_q‖², >= 0, of one real type.
    apq_abs : same type
        |h_pq| = |g_pᴴ g_q| > 0 (callers rotate only pairs that fail the orthogonality test).
    hyperbolic : bool
        True when the signs of p and q differ (𝔱 = −1).

    Returns
    -------
    cs, tn : the real type
        csφ >= 1 hyperbolic, in (0, 1] trigonometric; tnφ with |tnφ| <= 1 (< 1 hyperbolic).
        Apply them as in the module docstring; the rotation is proper when ``cs != 1``.

    Examples
    --------
    >>> import numpy as np
    >>> cs, tn = rotation(np.float64(1.0), np.float64(1.0), np.float64(0.5), False)
    >>> float(tn), round(float(cs), 12)  # equal norms: φ = 45°
    (1.0, 0.707106781187)
    """
    return rotation_of(cot_2phi(app, aqq, apq_abs, hyperbolic), hyperbolic, app)


@numba.njit(cache=True)
def cot_2phi(app, aqq, apq_abs, hyperbolic):
    """(15): ct2φ = 𝔱·(h_qq − 𝔱·h_pp) / (2·|h_pq|) in the inputs' real type."""
    one = _like(app, 1.0)
    t = -one if hyperbolic else one
    return (t * (aqq - t * app)) / (_like(app, 2.0) * apq_abs)


@numba.njit(cache=True)
def rotation_of(ct2, hyperbolic, like):
    """(16)–(18) from ct2φ, in the real type of ``like`` (its value is not used).

    ``ct2`` is of that type, or float64 with ``like`` float32 (the small SVD's float
    rotations from float64 Gram sums, :mod:`.inner`): |ct2φ| at or past √(2/u) then gives
    tnφ = sgn·(½/|ct2φ|) in float64, rounded once (it may lie below float32's normal
    range), and only a smaller |ct2φ| is rounded to float32. With ct2 of ``like``'s type
    this is the second half of :func:`rotation`, bit for bit.

    Examples
    --------
    >>> import numpy as np
    >>> cs, tn = rotation_of(np.float64(0.0), False, np.float32(0))
    >>> float(tn), float(cs) == float(np.float32(np.sqrt(0.5)))  # φ = 45°, cs in float32
    (1.0, True)
    """
    one = _like(like, 1.0)
    small, big = _thresholds(like)
    wide = abs(ct2)
    sg = one if ct2 >= 0 else -one
    if hyperbolic and wide <= 1:
        wide = _like(ct2, _COTH_SUBSTITUTE)
    if wide >= big:
        return one, _like(like, _like(ct2, sg) * (_like(ct2, 0.5) / wide))
    a = _like(like, wide)
    if hyperbolic:
        root = np.sqrt((a - one) * (a + one))                         # (16)
    elif a < small:
        root = one
    else:
        root = np.sqrt(a * a + one)
    ct = a + root
    tn = sg / ct                                                      # (17)
    if ct >= big:
        cs = one
    elif hyperbolic:
        cs = ct / np.sqrt((ct - one) * (ct + one))                    # (18), cs₂
    else:
        cs = ct / np.sqrt(ct * ct + one)
    return cs, tn


@numba.njit(cache=True)
def _rotation_table(app, aqq, apq_abs, hyperbolic, cs, tn):
    for i in range(app.shape[0]):
        cs[i], tn[i] = rotation(app[i], aqq[i], apq_abs[i], hyperbolic[i])


def rotations(app, aqq, apq_abs, hyperbolic):
    """:func:`rotation` over 1-D arrays: the reference outputs for a table of cases.

    Parameters
    ----------
    app, aqq, apq_abs : (k,) float32 or float64 arrays of one dtype
    hyperbolic : (k,) bool array

    Returns
    -------
    cs, tn : (k,) arrays of the same dtype

    Examples
    --------
    >>> import numpy as np
    >>> cs, tn = rotations(np.array([4.0]), np.array([1.0]), np.array([2.0]), np.array([True]))
    >>> bool(cs[0] > 1 and abs(tn[0]) < 1)
    True
    """
    app, aqq, apq_abs = (np.ascontiguousarray(x) for x in (app, aqq, apq_abs))
    hyperbolic = np.ascontiguousarray(hyperbolic, dtype=np.bool_)
    if app.dtype not in (np.float32, np.float64) or not app.dtype == aqq.dtype == apq_abs.dtype:
        raise ValueError("app, aqq and apq_abs must be float32 or float64 arrays of one dtype")
    cs = np.empty_like(app)
    tn = np.empty_like(app)
    _rotation_table(app, aqq, apq_abs, hyperbolic, cs, tn)
    return cs, tn


def orthogonality_tol(dtype, n):
    """c(ε) = u·√n, the relative orthogonality threshold of §4.3 (u the unit roundoff).

    A pair is rotated when ``|g_pᴴ g_q| > c(ε)·‖g_p‖·‖g_q‖``; LAPACK's dgesvj uses the
    same threshold with n the number of rows.

    Examples
    --------
    >>> orthogonality_tol(np.float64, 4) == 2.0 ** -52
    True
    """
    return _unit_roundoff(np.finfo(np.dtype(dtype)).dtype) * float(np.sqrt(max(n, 1)))
