"""SVD extraction from the basis V̂ and truncation to the smallest rank (paper 001 §2.3).

The paper (and mlpack) forms P = A·V̂ (m × k), then an SVD or eigendecomposition of
PᵀP, and U = P·V'·Σ⁻¹. That squares the condition number of P: singular values below
√u·σ₁ come out as noise and U loses orthogonality. Here P = Q·R by Householder QR and
R = U_R·Σ·Wᵀ by LAPACK's SVD of the small k × k factor; then

    A·V̂V̂ᵀ = (Q·U_R)·Σ·(V̂·W)ᵀ,   U = Q·U_R,   Vh = Wᵀ·V̂ᵀ.

Truncation. For any r ≤ k, with U_r, Σ_r, W_r the leading r terms,

    A − U_rΣ_r(V̂W_r)ᵀ = (A − A·V̂V̂ᵀ) + (A·V̂V̂ᵀ − U_rΣ_r(V̂W_r)ᵀ).

Every row of the first term is orthogonal to span(V̂) and every row of the second lies
in it, so the squared Frobenius norms add (Pythagoras, row by row):

    ‖A − U_rΣ_rVh_r‖²_F = ‖A − A·V̂V̂ᵀ‖²_F + Σ_{j>r} σ_j².

The second term is exact from the small SVD; the first, the residual, is computed
directly — ‖A_i − P_i·V̂ᵀ‖²_F block by block in the same pass that forms P, not as
‖A‖²_F − ‖P‖²_F, which cancels in float32 — so the error of every rank r is known, and
the returned rank is the smallest whose error is ≤ eps·‖A‖²_F.
"""

import numpy as np

from .cosine_tree import CHUNK_ENTRIES


def project(block, v, xp):
    """P_i = A_i·V̂ and, accumulated in float64, ‖A_i − P_i·V̂ᵀ‖²_F and ‖A_i‖²_F.

    The residual is formed in row chunks of about ``CHUNK_ENTRIES`` entries so that its
    temporary stays small. Returns ``(P_i, residual, mass)`` with host floats.
    """
    p = block @ v
    res = xp.zeros((), dtype=xp.float64)
    mass = xp.zeros((), dtype=xp.float64)
    step = max(1, CHUNK_ENTRIES // max(block.shape[1], 1))
    for r0 in range(0, block.shape[0], step):
        rows = block[r0:r0 + step]
        rest = rows - p[r0:r0 + step] @ v.T if v.shape[1] else rows
        res += (rest * rest).sum(dtype=xp.float64)
        mass += (rows * rows).sum(dtype=xp.float64)
    return p, float(res), float(mass)


def truncation_rank(s, residual, mass, eps, max_rank):
    """Smallest r with residual + Σ_{j≥r} s_j² ≤ eps·mass, at most ``max_rank``.

    Returns ``(r, error)`` with ``error`` = (residual + Σ_{j≥r} s_j²)/mass, the squared
    relative Frobenius error of the rank-r result (0 for a zero matrix). When no r meets
    eps, r = len(s) (or ``max_rank``).
    """
    s2 = np.asarray(s, dtype=np.float64) ** 2
    tail = np.concatenate([np.cumsum(s2[::-1])[::-1], [0.0]])
    fits = np.flatnonzero(residual + tail <= eps * mass)
    r = int(fits[0]) if len(fits) else len(s2)
    if max_rank is not None:
        r = min(r, max_rank)
    error = (residual + tail[r]) / mass if mass > 0 else 0.0
    return r, float(error)


def extract(p, v, residual, mass, eps, max_rank, xp):
    """U (m × r), S (r), Vh (r × n) of A·V̂V̂ᵀ truncated to the smallest rank meeting eps.

    ``p`` = A·V̂ (m × k, m ≥ k), ``v`` = V̂ (n × k), ``residual`` = ‖A − A·V̂V̂ᵀ‖²_F and
    ``mass`` = ‖A‖²_F (host floats). Returns ``(U, S, Vh, error)``.
    """
    m, k = p.shape
    dtype = p.dtype
    if k == 0:
        r, error = truncation_rank(np.zeros(0), residual, mass, eps, max_rank)
        return (xp.zeros((m, 0), dtype), xp.zeros(0, dtype), xp.zeros((0, v.shape[0]), dtype),
                error)
    q, r_factor = xp.linalg.qr(p)
    r_host = r_factor.get() if hasattr(r_factor, "get") else np.asarray(r_factor)
    u_r, s, wt = np.linalg.svd(r_host.astype(np.float64))
    rank, error = truncation_rank(s, residual, mass, eps, max_rank)
    u = q @ xp.asarray(u_r[:, :rank].astype(dtype))
    vh = xp.asarray(wt[:rank].astype(dtype)) @ v.T
    return u, xp.asarray(s[:rank].astype(dtype)), xp.ascontiguousarray(vh), error
