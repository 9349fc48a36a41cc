"""Slow, obviously correct references for stage 2 of the Hermitian reduction (the oracles of
test_sym_bulge.py): dense matrices, every reflector applied to whole rows and columns."""

import numpy as np

from naive_condensed import householder


def tridiagonal_matrix(d, e):
    """The dense symmetric tridiagonal matrix of d and e."""
    return np.diag(d) + np.diag(e, -1) + np.diag(e, 1)


def band_to_tridiagonal(a, b):
    """The chase of gpusvd.condensed.sym_bulge on a dense Hermitian band matrix ``a``, each
    reflector H applied as A ← Hᴴ·A·H to the whole matrix. Returns (T, Q), A = Q·T·Qᴴ, T
    Hermitian tridiagonal but not yet made real."""
    a = np.array(a)
    n = a.shape[0]
    q = np.eye(n, dtype=a.dtype)

    def annihilate(c, r0, r1):
        v, tau, _ = householder(a[r0:r1, c])
        h = np.eye(n, dtype=a.dtype)
        h[r0:r1, r0:r1] -= tau * np.outer(v, v.conj())
        a[...] = h.conj().T @ a @ h
        a[r0 + 1:r1, c] = 0
        a[c, r0 + 1:r1] = 0
        q[...] = q @ h

    for s in range(n - 2):
        st, ed = s + 1, min(s + b, n - 1)
        annihilate(s, st, ed + 1)
        while True:
            j1, j2 = ed + 1, min(ed + b, n - 1)
            if j2 <= j1:
                break
            annihilate(st, j1, j2 + 1)
            st, ed = j1, j2
    return a, q
