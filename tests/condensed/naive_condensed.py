"""Slow, obviously correct references for the two-stage reduction (the tests' oracles).

Dense matrices only; every reflector is applied to whole rows or columns and Q, P are
accumulated explicitly, so nothing here depends on which entries are known to be zero.
"""

import numpy as np


def householder(x):
    """(v, tau, beta): (I − tau·v·vᴴ)ᴴ·x = beta·e_0, v[0] = 1, beta real (LAPACK zlarfg)."""
    x = np.array(x)
    alpha = x[0]
    xnorm = np.linalg.norm(x[1:])
    v = np.zeros_like(x)
    v[0] = 1
    if xnorm == 0 and np.imag(alpha) == 0:
        return v, x.dtype.type(0), np.real(alpha)
    beta = -np.copysign(np.hypot(abs(alpha), xnorm), np.real(alpha))
    v[1:] = x[1:] / (alpha - beta)
    return v, (beta - alpha) / beta, beta


def _reflect_left(a, q, r0, v, tau):
    """a ← Hᴴ·a on rows r0:, q ← q·H (q accumulates the left factor)."""
    h = np.eye(a.shape[0], dtype=a.dtype)
    h[r0:r0 + len(v), r0:r0 + len(v)] -= tau * np.outer(v, v.conj())
    a[...] = h.conj().T @ a
    q[...] = q @ h


def _reflect_right(a, p, c0, u, tau):
    """a ← a·H on columns c0:, p ← p·H."""
    h = np.eye(a.shape[1], dtype=a.dtype)
    h[c0:c0 + len(u), c0:c0 + len(u)] -= tau * np.outer(u, u.conj())
    a[...] = a @ h
    p[...] = p @ h


def reduce_to_band(a, b):
    """Unblocked: for each column i, a left reflector zeroes A(i+1:, i), then a right one
    zeroes A(i, i+b+1:) acting on columns i+b:. Returns (B, Q, P), A = Q·B·Pᴴ.

    The right reflector of row i touches no column left of i+b, so it spares the
    columns the later left reflectors of the same panel see: B is the band of the blocked
    reduction, to rounding."""
    a = np.array(a, dtype=np.result_type(a, np.float32))
    m, n = a.shape
    q = np.eye(m, dtype=a.dtype)
    p = np.eye(n, dtype=a.dtype)
    for i in range(n):
        v, tau, _ = householder(a[i:, i])
        _reflect_left(a, q, i, v, tau)
        a[i + 1:, i] = 0
        if n - (i + b) >= 1:
            u, tau, _ = householder(a[i, i + b:].conj())
            _reflect_right(a, p, i + b, u, tau)
            a[i, i + b + 1:] = 0
    return a, q, p


def band_to_bidiagonal(a, b):
    """The chase of gpusvd.condensed.bulge on a dense upper band matrix ``a`` (n×n), each
    reflector applied to whole rows or columns. Returns (B, Q, P), A = Q·B·Pᴴ, B upper
    bidiagonal but not yet made real."""
    a = np.array(a)
    n = a.shape[0]
    q = np.eye(n, dtype=a.dtype)
    p = np.eye(n, dtype=a.dtype)

    def row(r, c0, c1):
        u, tau, _ = householder(a[r, c0:c1].conj())
        _reflect_right(a, p, c0, u, tau)
        a[r, c0 + 1:c1] = 0

    def column(c, r1):
        v, tau, _ = householder(a[c:r1, c])
        _reflect_left(a, q, c, v, tau)
        a[c + 1:r1, c] = 0

    for s in range(n - 1):
        st, ed = s + 1, min(s + b, n - 1)
        if ed == st:
            break
        row(s, st, ed + 1)
        while True:
            column(st, ed + 1)
            j1, j2 = ed + 1, min(ed + b, n - 1)
            if j2 <= j1:
                break
            row(st, j1, j2 + 1)
            st, ed = j1, j2
    return a, q, p


def apply_chase_reflectors(refl, n, c, *, side):
    """Q₂·c (side "left") or P₂·c ("right") from recorded ChaseReflectors, one reflector
    at a time, the last first."""
    v, tau = (refl.v_left, refl.tau_left) if side == "left" else (refl.v_right, refl.tau_right)
    c = np.array(c)
    for s in reversed(range(v.shape[0])):
        for k in reversed(range(v.shape[1])):
            start = s + 1 + k * refl.bandwidth
            if start >= n:
                continue
            ln = min(refl.bandwidth, n - start)
            vec = v[s, k, :ln]
            c[start:start + ln] -= tau[s, k] * np.outer(vec, vec.conj() @ c[start:start + ln])
    return c


def bidiagonal_matrix(d, e, m=None):
    """The dense m×n (default n×n) upper bidiagonal matrix of d and e."""
    n = len(d)
    b = np.zeros((n if m is None else m, n), dtype=np.result_type(d, e))
    b[np.arange(n), np.arange(n)] = d
    b[np.arange(n - 1), np.arange(1, n)] = e
    return b
