"""Plane rotations and the SVD of a 2×2 upper triangular matrix, for the bidiagonal QR.

The scalar kernels of the Demmel–Kahan bidiagonal QR (qr.py) and of dqds
(dqds.py), with LAPACK's safeguards: :func:`plane_rotation` as dlartg (Anderson's safe
scaling, ACM TOMS 2017), :func:`singular_values_2x2` as dlas2 and :func:`svd_2x2` as
dlasv2, each accurate to a few ulps relative to every value.
"""

import math

import numba
import numpy as np

# Safe-scaling bounds of the plane rotation (Anderson, "Algorithm 978: Safe scaling in
# the Level 1 BLAS", ACM TOMS 2017; LAPACK 3.10's dlartg): f² + g² cannot over- or
# underflow when both |f| and |g| lie in [_RTMIN, _RTMAX].
_SAFMIN = float(np.finfo(np.float64).tiny)
_SAFMAX = 1.0 / _SAFMIN
_RTMIN = math.sqrt(_SAFMIN)
_RTMAX = math.sqrt(_SAFMAX / 2.0)
# The 2×2 SVD treats g as dominant when |f|/|g| < the arithmetic's epsilon (float64).
_EPS64 = float(np.finfo(np.float64).eps)


@numba.njit(cache=True)
def plane_rotation(f, g):
    """Plane rotation (c, s, r) with c·f + s·g = r and -s·f + c·g = 0 (like dlartg).

    c >= 0, r has the sign of f (r = |g| and s = sign(g) when f = 0); f² + g² is
    formed with safe scaling so that neither overflows nor underflows.
    """
    if g == 0.0:
        return 1.0, 0.0, f
    if f == 0.0:
        return 0.0, math.copysign(1.0, g), abs(g)
    f1, g1 = abs(f), abs(g)
    if _RTMIN < f1 < _RTMAX and _RTMIN < g1 < _RTMAX:
        # One division and two products instead of two divisions: the rotation is on
        # the QR's sequential critical path.
        h = math.sqrt(f * f + g * g)
        r = math.copysign(h, f)
        rinv = 1.0 / r
        return f * rinv, g * rinv, r
    u = min(_SAFMAX, max(_SAFMIN, f1, g1))
    fs, gs = f / u, g / u
    h = math.sqrt(fs * fs + gs * gs)
    rs = math.copysign(h, f)
    return abs(fs) / h, gs / rs, rs * u


@numba.njit(cache=True)
def singular_values_2x2(f, g, h):
    """Singular values (smin, smax) of [[f, g], [0, h]] (like dlas2).

    Accurate to a few ulps relative to each value, and free of overflow whenever the
    values themselves are representable.
    """
    fa, ga, ha = abs(f), abs(g), abs(h)
    fhmn, fhmx = min(fa, ha), max(fa, ha)
    if fhmn == 0.0:
        if fhmx == 0.0:
            return 0.0, ga
        big, small = max(fhmx, ga), min(fhmx, ga)
        return 0.0, big * math.sqrt(1.0 + (small / big) ** 2)
    if ga < fhmx:
        sum_ratio = 1.0 + fhmn / fhmx
        diff_ratio = (fhmx - fhmn) / fhmx
        gr2 = (ga / fhmx) ** 2
        c = 2.0 / (math.sqrt(sum_ratio * sum_ratio + gr2) + math.sqrt(diff_ratio * diff_ratio + gr2))
        return fhmn * c, fhmx / c
    gr = fhmx / ga
    if gr == 0.0:
        # |f|, |h| << |g|: smin = |f·h|/|g|, computed in an order that cannot underflow early.
        return (fhmn * fhmx) / ga, ga
    sum_ratio = 1.0 + fhmn / fhmx
    diff_ratio = (fhmx - fhmn) / fhmx
    c = 1.0 / (math.sqrt(1.0 + (sum_ratio * gr) ** 2) + math.sqrt(1.0 + (diff_ratio * gr) ** 2))
    return 2.0 * ((fhmn * c) * gr), ga / (c + c)


@numba.njit(cache=True)
def svd_2x2(f, g, h):
    """SVD of the upper triangular [[f, g], [0, h]] (like dlasv2).

    Returns (smin, smax, sin_r, cos_r, sin_l, cos_l) with
    [[cos_l, sin_l], [-sin_l, cos_l]] · [[f, g], [0, h]] · [[cos_r, -sin_r], [sin_r, cos_r]]
    = diag(smax, smin), |smax| >= |smin|; the values carry signs so that this holds
    exactly in exact arithmetic. Relative accuracy as in :func:`singular_values_2x2`.
    """
    ft, fa, ht, ha = f, abs(f), h, abs(h)
    largest = 0  # 0: f, 1: g, 2: h is the entry of largest magnitude
    swap = ha > fa
    if swap:  # work on the transpose-flipped matrix so that |ft| >= |ht|
        largest = 2
        ft, ht, fa, ha = ht, ft, ha, fa
    gt, ga = g, abs(g)
    if ga == 0.0:
        smin, smax = ha, fa
        clt, slt, crt, srt = 1.0, 0.0, 1.0, 0.0
    elif ga > fa and fa / ga < _EPS64:
        # g dominates to working precision: singular values |g| and |f·h/g|.
        largest = 1
        smax = ga
        smin = fa / (ga / ha) if ha > 1.0 else (fa / ga) * ha
        clt, slt, crt, srt = 1.0, ht / gt, ft / gt, 1.0
    else:
        if ga > fa:
            largest = 1
        diff = fa - ha
        el = 1.0 if diff == fa else diff / fa  # (|f|-|h|)/|f|, exactly 1 when h is negligible
        m = gt / ft
        t = 2.0 - el
        mm, tt = m * m, t * t
        s = math.sqrt(tt + mm)
        r = abs(m) if el == 0.0 else math.sqrt(el * el + mm)
        a = 0.5 * (s + r)  # smax/|f|, between 1 and 1+|m|
        smin, smax = ha / a, fa * a
        if mm == 0.0:
            if el == 0.0:
                t = math.copysign(2.0, ft) * math.copysign(1.0, gt)
            else:
                t = gt / math.copysign(diff, ft) + m / t
        else:
            t = (m / (s + t) + m / (r + el)) * (1.0 + a)
        el = math.sqrt(t * t + 4.0)
        crt, srt = 2.0 / el, t / el
        clt = (crt + srt * m) / a
        slt = (ht / ft) * srt / a
    if swap:
        cos_l, sin_l, cos_r, sin_r = srt, crt, slt, clt
    else:
        cos_l, sin_l, cos_r, sin_r = clt, slt, crt, srt
    # Signs: the product of the rotations' signs and the largest entry's fixes smax's.
    if largest == 0:
        sign = math.copysign(1.0, cos_r) * math.copysign(1.0, cos_l) * math.copysign(1.0, f)
    elif largest == 1:
        sign = math.copysign(1.0, sin_r) * math.copysign(1.0, cos_l) * math.copysign(1.0, g)
    else:
        sign = math.copysign(1.0, sin_r) * math.copysign(1.0, sin_l) * math.copysign(1.0, h)
    smax = math.copysign(smax, sign)
    smin = math.copysign(smin, sign * math.copysign(1.0, f) * math.copysign(1.0, h))
    return smin, smax, sin_r, cos_r, sin_l, cos_l
