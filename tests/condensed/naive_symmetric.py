"""A slow, obviously correct reference for condensed/sym_band.py (the tests' oracle).

One Householder reflector at a time on the whole dense Hermitian matrix: column j's entries
below subdiagonal b are annihilated by H_j acting on rows and columns j + b:, applied from
both sides, A ← H_jᴴ·A·H_j, with Q ← Q·H_j accumulated explicitly.  Nothing depends on
which entries are known to be zero.
"""

import numpy as np

from naive_condensed import householder


def reduce_to_hermitian_band(a, b):
    """(B, Q) with A = Q·B·Qᴴ, B Hermitian with bandwidth b.  A column with one entry below
    the band gets its one-entry reflector too, which makes that entry real."""
    a = np.array(a, dtype=np.result_type(a, np.float32))
    n = a.shape[0]
    q = np.eye(n, dtype=a.dtype)
    for j in range(n - b):
        v, tau, _ = householder(a[j + b:, j])
        h = np.eye(n, dtype=a.dtype)
        h[j + b:, j + b:] -= tau * np.outer(v, v.conj())
        a = h.conj().T @ a @ h
        q = q @ h
        a[j + b + 1:, j] = 0
        a[j, j + b + 1:] = 0
    return a, q
