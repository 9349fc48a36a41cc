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

The small SVD (:func:`small_svd`). The truncation needs the tail sums
Σ_{j>r} σ_j² to a small fraction of eps·‖A‖²_F; a backward-stable SVD of R in a precision
with unit roundoff u has |σ̂_j − σ_j| ≲ u·σ₁, so the tail is off by about
2u·σ₁·Σ_{j>r} σ_j ≤ 2u·√(k·eps)·‖A‖²_F — in float32 (u = 6e-8), k = 500, eps = 1e-8, at
most 3 % of eps, and of the order of the rounding of the residual itself, whose rows
A_i − P_i·V̂ᵀ are formed in the working precision. Two ways, by R's dtype:

- float64: LAPACK's gesdd of R on the host.
- float32: on the device, the eigendecomposition G = RᵀR = W·Λ·Wᵀ in float64 (cuSOLVER
  syevd), Σ = Λ^½, U_R = R·W·Σ⁻¹. For a float32 R the float64 Gram holds the squares the
  truncation needs to float64 rounding, |λ̂_j − σ_j²| ≲ u₆₄·σ₁², better than a float32 SVD
  does; the squaring costs accuracy only in the singular values below √u₆₄·σ₁ = 1.5e-8·σ₁,
  under float32's own resolution. R·W·Σ⁻¹ has orthogonality ≈ u₆₄·σ₁²/(σ_i·σ_j), below
  float32's u while σ_r² ≥ c·(u₆₄/u)·σ₁², c the tunable ``quic_gram_divide_above``; past
  that U_R is the Q of a float64 QR of R·W_r. (For float64 input the squaring would lose
  the singular values below 1.5e-8·σ₁.) It took 0.78–0.82× the time of gesdd in float64 on
  the host, and of gesdd in float32 or cuSOLVER's gesvd on the device, at k = 400
  (BENCHMARKS.md, "The tunables' defaults").
"""

import numpy as np
import scipy.linalg

from .._core import tunables
from .._core.backend import to_host, total
from .cosine_tree import CHUNK_ENTRIES


def project(block, v, xp):
    """P_i = A_i·V̂ and, accumulated in float64, ‖A_i − P_i·V̂ᵀ‖²_F and ‖A_i‖²_F.

    The residual is formed in row chunks of about ``CHUNK_ENTRIES`` entries so that its
    temporary stays small (its squares summed by :func:`.backend.total`). Returns
    ``(P_i, residual, mass)`` with host floats.
    """
    p = block @ v
    res = xp.zeros((), dtype=xp.float64)
    mass = xp.zeros((), dtype=xp.float64)
    step = max(1, CHUNK_ENTRIES // max(block.shape[1], 1))
    for r0 in range(0, block.shape[0], step):
        rows = block[r0:r0 + step]
        rest = rows - p[r0:r0 + step] @ v.T if v.shape[1] else rows
        res += total(rest * rest, dtype=xp.float64)
        mass += total(rows * rows, dtype=xp.float64)
    res, mass = to_host(xp.stack([res, mass])).tolist()  # one synchronization
    return p, res, mass


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


def _cast(factors, dtype, xp):
    return tuple(xp.asarray(f).astype(dtype, copy=False) for f in factors)


def _svd_on_host(r, dtype, xp, work):
    u_r, s, wt = scipy.linalg.svd(to_host(r).astype(work), lapack_driver="gesdd",
                                  overwrite_a=True, check_finite=False)
    return (s.astype(np.float64),
            lambda rank: _cast((u_r[:, :rank], s[:rank], wt[:rank]), dtype, xp))


def _svd_gram(r, dtype, xp):
    r64 = r.astype(xp.float64)
    lam, w = xp.linalg.eigh(r64.T @ r64)
    w = w[:, ::-1]
    s = np.sqrt(np.maximum(to_host(lam)[::-1], 0.0))
    divide_above = (tunables.get().quic_gram_divide_above * np.finfo(np.float64).eps
                    / np.finfo(dtype).eps)

    def factors(rank):
        w_r = w[:, :rank]
        c = r64 @ w_r  # U_R·Σ_r
        if rank == 0 or (s[rank - 1] > 0 and s[rank - 1] ** 2 >= divide_above * s[0] ** 2):
            u_r = c / xp.asarray(s[:rank])
        else:
            q, rr = xp.linalg.qr(c)
            u_r = q * xp.where(xp.diagonal(rr) >= 0, 1.0, -1.0)
        return _cast((u_r, s[:rank], w_r.T), dtype, xp)

    return s, factors


def small_svd(r, xp):
    """σ (descending, host float64) of the k × k factor ``r``, and ``factors(rank)``: the
    leading ``rank`` terms (U_R, Σ, Wᵀ) on ``xp`` in r's dtype: by gesdd on the host for
    float64, from the float64 Gram matrix on the device otherwise (module docstring)."""
    dtype = np.dtype(r.dtype)
    if dtype == np.float64:
        return _svd_on_host(r, dtype, xp, np.float64)
    return _svd_gram(r, dtype, xp)


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
    s, factors = small_svd(r_factor, xp)
    rank, error = truncation_rank(s, residual, mass, eps, max_rank)
    u_r, s_r, wt = factors(rank)
    return q @ u_r, s_r, xp.ascontiguousarray(wt @ v.T), error
