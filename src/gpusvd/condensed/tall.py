"""The QR factorization that comes first for a tall matrix (m ≫ n), in row blocks.

LAPACK's dgesvd and the SVDs of this package factor a tall A = Q·R first and decompose
the n×n R; U is then Q·U_R, one GEMM. One call of ``xp.linalg.qr`` does that factorization,
except on very tall matrices: on the H100 (2026-11-25, ``tall_h100_s8.json``) the whole
SVD of a 1,000,000 × 1000 float32 matrix took 0.52 s and of a 2,200,000 × 1000 one 2.59 s,
five times more for 2.2 times the rows, both dominated by cuSOLVER's QR, while torch's
QR of the same matrices scaled linearly (0.40 and 0.78 s with its small SVD).

A tall matrix is therefore split into row blocks of at most ``BLOCK_ENTRIES`` entries,
each is factored, and the stacked n×n R factors are factored once more (TSQR, Demmel,
Grigori, Hoemmen & Langou 2012, with one level of reduction):

    A = [A_1; …; A_p],  A_i = Q_i·R_i,  [R_1; …; R_p] = Q'·R,  Q = diag(Q_i)·Q',

so Q's block i is Q_i·Q'_i, one GEMM per block (2mn² flops, the price of the blocks).
Both levels are Householder QRs, so Q is orthonormal and A − Q·R small to O(ε) as for
one QR.
"""

import math

import numpy as np

# Row blocks of at most 2^30 entries: the 1,000,000 × 1000 case (10^9 < 2^30 entries)
# factored at the linear rate, 2,200,000 × 1000 (past 2^31) did not (module docstring).
BLOCK_ENTRIES = 1 << 30


def _row_blocks(m, n):
    """Row boundaries of blocks of at most BLOCK_ENTRIES entries and at least n rows
    each (every block's R is then n×n), nearly equal; one block if A fits."""
    count = max(1, math.ceil(m * n / BLOCK_ENTRIES))
    count = min(count, max(1, m // max(n, 1)))
    return [m * i // count for i in range(count + 1)]


def tall_qr(a, xp, *, mode="reduced"):
    """A = Q·R of an m×n array with m ≥ n, in row blocks where A is very tall.

    Parameters
    ----------
    a : (m, n) array
        m ≥ n; NumPy or CuPy, float32/64 or complex64/128. Not modified.
    xp : module
        ``numpy`` or ``cupy``, the namespace of ``a``.
    mode : {"reduced", "r", "complete"}
        As ``numpy.linalg.qr``: Q (m, n) and R (n, n); R alone; Q (m, m) and R (m, n).
        "complete" is one ``xp.linalg.qr`` call whatever the shape.

    Returns
    -------
    (Q, R) or R
        R upper triangular (entries below the diagonal may be rounding noise of the
        library's QR: take ``xp.triu`` where it matters).

    Examples
    --------
    >>> import numpy as np
    >>> a = np.random.default_rng(0).standard_normal((50, 4))
    >>> q, r = tall_qr(a, np)
    >>> bool(np.allclose(q @ r, a)), bool(np.allclose(q.T @ q, np.eye(4)))
    (True, True)
    """
    if mode not in ("reduced", "r", "complete"):
        raise ValueError(f"mode must be 'reduced', 'r' or 'complete', got {mode!r}")
    m, n = a.shape
    bounds = _row_blocks(m, n)
    if mode == "complete" or len(bounds) == 2:
        return xp.linalg.qr(a, mode=mode)
    want_q = mode == "reduced"
    factors = [xp.linalg.qr(a[lo:hi], mode=mode) for lo, hi in zip(bounds, bounds[1:])]
    blocks_q = [f[0] for f in factors] if want_q else None
    stacked = xp.concatenate([xp.triu(f[1] if want_q else f[:n]) for f in factors])
    del factors
    if not want_q:
        return xp.linalg.qr(stacked, mode="r")[:n]
    q_small, r = xp.linalg.qr(stacked, mode="reduced")
    q = xp.empty((m, n), dtype=a.dtype)
    for i, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
        xp.matmul(blocks_q[i], q_small[i * n:(i + 1) * n], out=q[lo:hi])
        blocks_q[i] = None  # frees block i's Q before the next product
    return q, r

