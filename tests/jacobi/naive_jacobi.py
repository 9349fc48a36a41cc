"""Slow, obviously correct references for the Jacobi tests (mpmath, plain loops)."""

import mpmath
import numpy as np


def singular_values(a, dps=40):
    """Singular values of ``a`` in ``dps``-digit arithmetic, descending, as float64."""
    with mpmath.workdps(dps):
        m = mpmath.matrix(np.asarray(a, dtype=np.complex128 if np.iscomplexobj(a)
                                     else np.float64).tolist())
        s = mpmath.svd_c(m, compute_uv=False) if np.iscomplexobj(a) else \
            mpmath.svd_r(m, compute_uv=False)
        return np.sort(np.array([float(x) for x in s]))[::-1]


def eigenvalues(g, signs, dps=40):
    """Eigenvalues of H = G·diag(signs)·Gᴴ in ``dps``-digit arithmetic, ascending."""
    with mpmath.workdps(dps):
        complex_ = np.iscomplexobj(g)
        gm = mpmath.matrix(np.asarray(g, dtype=np.complex128 if complex_
                                      else np.float64).tolist())
        h = gm * mpmath.diag([mpmath.mpf(float(s)) for s in signs]) * gm.H
        w = (mpmath.eighe if complex_ else mpmath.eigsy)(h, eigvals_only=True)
        return np.sort(np.array([float(x) for x in w]))


def one_sided_jacobi(g, tol):
    """Textbook cyclic one-sided Jacobi: the column norms of G·V, descending."""
    g = np.array(g, dtype=np.float64)
    n = g.shape[1]
    for _ in range(60):
        rotated = False
        for p in range(n - 1):
            for q in range(p + 1, n):
                a, b, c = g[:, p] @ g[:, p], g[:, q] @ g[:, q], g[:, p] @ g[:, q]
                if abs(c) <= tol * np.sqrt(a * b):
                    continue
                rotated = True
                zeta = (b - a) / (2 * c)
                t = np.sign(zeta or 1) / (abs(zeta) + np.hypot(1, zeta))
                cs = 1 / np.hypot(1, t)
                g[:, [p, q]] = g[:, [p, q]] @ np.array([[cs, cs * t], [-cs * t, cs]])
        if not rotated:
            break
    return np.sort(np.linalg.norm(g, axis=0))[::-1]
