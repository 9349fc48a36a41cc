"""Zero columns that fill a Jacobi problem to an order its pivot strategy supports.

R∥ and C∥ (and their reverses) exist here only for orders 2^k·o with a small odd part o
(:data:`.strategies.MAX_SEARCHED_ODD_PART`), every parallel strategy only for even
orders. A problem with n columns is therefore run at the order k >= n of
:func:`.strategies.padded_order`, with k − n zero columns appended (and zero rows, so
that m >= k). A zero column never fails the orthogonality test (|h_pq| = 0 is not above
tol·0), so it is never rotated; it is only swapped (step 5 of :mod:`.inner`) towards the
end. Its column of V therefore stays the unit vector it started as, while every other
column of V stays zero in the padding rows: the padding is found from V alone, exactly,
and dropped afterwards. This is how the block level fills its blocks (:mod:`.blocked`).
"""

import numpy as np


def pad_columns(g, k, xp):
    """``g`` (batch, m, n) filled to (batch, max(m, k), k) with zeros, and V = I of order k.

    Returns a new C-contiguous g and the identity stack v (batch, k, k).
    """
    batch, m, n = g.shape
    out = xp.zeros((batch, max(m, k), k), g.dtype)
    out[:, :m, :n] = g
    return out, xp.repeat(xp.eye(k, dtype=g.dtype)[None], batch, axis=0)


def pad_signs(signs, k):
    """``signs`` (..., n) NumPy extended to (..., k) by +1, the sign of the padding."""
    fill = np.ones(signs.shape[:-1] + (k - signs.shape[-1],), signs.dtype)
    return np.concatenate([signs, fill], axis=-1)


def kept_columns(v, n, xp):
    """(batch, n) positions of the original columns after the inner Jacobi, ascending.

    ``v`` (batch, k, k) is the transformation accumulated from the identity of
    :func:`pad_columns`; a padding column is the one column that is nonzero in rows
    n…k−1. No host synchronization (a stable argsort, also on CuPy).
    """
    padding = (v[:, n:, :] != 0).any(axis=1).astype(np.int8)
    return xp.argsort(padding, axis=1, kind="stable")[:, :n]


def drop_columns(x, keep, xp):
    """The columns ``keep`` (batch, n) of each matrix of ``x`` (batch, ·, k)."""
    return xp.take_along_axis(x, keep[:, None, :], axis=2)
