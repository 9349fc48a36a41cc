"""The Q factor of a stack of full-rank tall matrices by shifted CholeskyQR3.

Fukaya, Kannan, Nakatsukasa, Yamamoto & Yanagisawa, *Shifted Cholesky QR for computing
the QR factorization of ill-conditioned matrices*, SIAM J. Sci. Comput. 42(1), 2020
(FKNYY), Algorithm 4.2: one Cholesky QR of the Gram matrix shifted by

    s = 11·(p·n + n·(n + 1))·u·‖W‖₂²                                   (FKNYY eq. (4.2))

takes W (p×n) with κ₂(W) up to O(u⁻¹) to a factor Q₁ with κ₂(Q₁) = O(u^(-1/2)), and two
plain Cholesky QRs (CholeskyQR2) then give Q with ‖QᴴQ − I‖ = O(p·n·u) and W = Q·R to
O(u·‖W‖). Every step is a batched Gram product, a batched Cholesky factorization and a
batched triangular solve, so a whole stack is factored by a fixed number of launches,
where a Householder QR of a stack is a loop over its matrices (cuSOLVER has no batched
geqrf; CuPy and torch loop).

Departure: the matrices are passed and returned conjugate-transposed (Wᴴ, n×p), the form
in which the triangular solves R⁻ᴴ·Wᴴ need no copy, and which the batched QDWH keeps.
"""

import numpy as np

from .._core.backend import scipy_linalg

# FKNYY eq. (4.2): the shift's constant.
SHIFT_CONSTANT = 11.0
# Cholesky QRs after the shifted one (FKNYY Algorithm 4.2: CholeskyQR2).
PLAIN_PASSES = 2
# The passes run in float64 (complex128): its unit roundoff.
_UNIT_ROUNDOFF = np.finfo(np.float64).eps / 2


def solve_lower(xp, low, b, *, conjugate=False):
    """L⁻¹·B, or L⁻ᴴ·B with ``conjugate``, for each matrix of the stacks ``low``
    (batch, n, n; lower triangular) and ``b`` (batch, n, k). A stack of one takes the
    unbatched solve (see :func:`cholesky`)."""
    sla = scipy_linalg(xp)
    trans = "C" if conjugate else "N"
    if len(low) == 1:
        return sla.solve_triangular(low[0], b[0], lower=True, trans=trans,
                                    check_finite=False)[None]
    return sla.solve_triangular(low, b, lower=True, trans=trans, check_finite=False)


def cholesky(xp, g):
    """The lower Cholesky factor of each matrix of the stack ``g`` (batch, n, n). A stack
    of one takes the unbatched factorization: cuSOLVER's potrfBatched and cuBLAS's
    trsmBatched are made for many small matrices, and one matrix through them costs most
    of a single-matrix SVD's QDWH estimates on the H100 (4.8–5.8 ms of 12–34 ms from 128²
    to 1024² float64; NOTES.md, "One matrix of 128–1024 and tall matrices: QDWH")."""
    if len(g) == 1:
        return xp.linalg.cholesky(g[0])[None]
    return xp.linalg.cholesky(g)


def gram(xp, wh):
    """Wᴴ·W of each matrix, from its conjugate transpose ``wh`` (batch, n, p)."""
    return xp.matmul(wh, wh.conj().swapaxes(-1, -2))


def add_to_diagonal(xp, g, shift):
    """``g`` + diag(``shift``) for each matrix, ``shift`` (batch,) real, in place."""
    n = g.shape[-1]
    diagonal = xp.arange(n)
    g[:, diagonal, diagonal] += shift[:, None].astype(g.dtype)
    return g


def shift(rows, cols, norm2):
    """FKNYY eq. (4.2)'s shift s = 11·(p·n + n·(n + 1))·u·‖W‖₂² of a float64 (complex128)
    p×n matrix W, ``norm2`` an upper bound on ‖W‖₂² (a float or an array).

    Examples
    --------
    >>> bool(shift(100, 10, 1.0) == 11 * (1000 + 110) * 2.0 ** -53)
    True
    """
    return SHIFT_CONSTANT * (rows * cols + cols * (cols + 1)) * _UNIT_ROUNDOFF * norm2


def shifted_cholesky_qr(xp, wh, norm2):
    """Qᴴ of W = Q·R for each matrix, from Wᴴ (batch, n, p), p >= n, W of full rank with
    κ₂(W) ≲ 1/u; ``norm2`` (batch,) an upper bound on ‖W‖₂² (0 where W is 0).

    Examples
    --------
    >>> w = np.array([[[1.0, 0.0], [1.0, 1e-9], [0.0, 1.0]]])
    >>> qh = shifted_cholesky_qr(np, w.swapaxes(-1, -2), np.array([3.0]))
    >>> bool(np.abs(qh @ qh.swapaxes(-1, -2) - np.eye(2)).max() < 1e-14)
    True
    """
    _, n, p = wh.shape
    shifts = shift(p, n, norm2)
    shifts = xp.where(shifts > 0, shifts, np.finfo(wh.dtype).tiny)
    low = cholesky(xp, add_to_diagonal(xp, gram(xp, wh), shifts))
    qh = solve_lower(xp, low, wh)
    for _ in range(PLAIN_PASSES):
        qh = solve_lower(xp, cholesky(xp, gram(xp, qh)), qh)
    return qh
