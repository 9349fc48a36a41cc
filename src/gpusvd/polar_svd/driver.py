"""SVD through the polar decomposition (``method="polar"``).

Higham & Papadimitriou, *A parallel algorithm for computing the polar decomposition*,
Parallel Comput. 20, 1994, §4, with the QDWH polar factor of Nakatsukasa & Higham, SIAM J.
Sci. Comput. 35(3), 2013, Algorithm 5.1 (QDWH-SVD):

1. A = U_p·H, the polar decomposition, by QDWH (qdwh.py);
2. H = V·Σ·Vᴴ, the Hermitian eigendecomposition of H = U_pᴴ·A (LAPACK/cuSOLVER syevd);
3. U = U_p·V, so A = U·Σ·Vᴴ.

Nearly all the work is matrix products, QR and Cholesky factorizations and one
eigendecomposition: on a GPU these run near the GEMM rate, where the Golub–Reinsch SVD's
one-stage bidiagonalization is memory bound and its QR loop sequential.

Shapes: a wide A is decomposed through Aᴴ. A tall A with m > 1.15·n is first reduced by
a QR factorization A = Q·R (as NH §5 and JAX do: QDWH on the n×n R costs O(n³) instead of
O(mn²) per step), and U = Q·U_R. Values only skip step 3 and take eigenvalues only.

Numerical rank deficiency: U_p is unique only for full-rank A; its columns on singular
values that QDWH did not bring to 1 need not be orthonormal (NH §5.3; cuSOLVER's gesvdp
documents that its U "may not be a full unitary"). With U_p = W·f(Σ)·Vᴴ (A = W·Σ·Vᴴ, f the
iteration's composed rational function), U = U_p·V = W·f(Σ) has orthogonal columns of norms
f(σ_i): every f(σ_i) is 1 exactly when every column norm is, so the check is one pass over
U (max |‖u_i‖ − 1| ≤ 10·√n·ε). Where it fails the driver replaces U by the Q factor of
U's Householder QR, signs fixed (NH §5.5): the columns with f(σ_i) = 1 change by O(ε),
the others become an orthonormal completion; their σ_i lie below the iteration's reach,
ε·‖A‖₂, so the residual grows by O(ε·‖A‖₂). ``full_matrices`` completes U the same way.
Values only skip the check: an unconverged σ_i below ε·‖A‖₂ is returned as f(σ_i)·σ_i,
within the same bound.

A is scaled by a power of two to max|A| ≈ 1 first where max|A| is far from 1 (exact; the
front end's dlascl-like scaling keeps it only inside dgesvd's safe range): the power
iteration for ‖A‖₂ squares norms of AᴴA·x, which overflow from max|A| ≈ 10⁷⁷ in float64
(10¹⁰ in float32) and underflow likewise.
"""

import numpy as np

from .._core import profile, tunables
from .._core.scaling import scale_values, times_power_of_two, unit_exponent
from ..batched import qdwh as batched_qdwh
from . import cholesky_qr, fixed_schedule, qdwh

# Columns of U = U_p·V with max |‖u_i‖ − 1| above this, in units of √n·ε, mark U_p a partial
# isometry (module docstring): converged QDWH gives O(ε) per column (‖U_pᴴU_p − I‖_F
# measured 0.4–0.6 n·ε on the H100), and a column at the bound adds 20/√n n·ε to U's.
ORTHONORMAL_TOL = 10.0
# A is normalized only when max|A| is outside [2^−8, 2^8]: inside, ‖A·x‖ ≤ √(mn)·2^8 and
# the squares that norms of AᴴA·x sum stay below 10³⁰ even in float32 for m·n ≤ 2⁶².
NORMALIZE_BEYOND = 8
# NH §5 and JAX's svd.py: QR first for m > 1.15·n. LAPACK's dgesvd crosses over at 1.6·n
# for its one-stage bidiagonalization; QDWH's steps cost O(m·n²) each, so it gains sooner.
QR_FIRST_RATIO = 1.15


def _ct(x):
    return x.conj().T


def _orthonormal_columns(u, xp, *, complete):
    """Q of the Householder QR of ``u`` (m×k), each column's sign that of R's diagonal:
    orthonormal even where ``u``'s columns are not, equal to them to O(ε) where they are
    (R ≈ ±I there). ``complete``: m columns, the last m − k an orthonormal completion."""
    m, k = u.shape
    q, r = xp.linalg.qr(u, mode="complete" if complete else "reduced")
    signs = xp.sign(xp.diagonal(r).real)
    signs = xp.where(signs == 0, 1, signs).astype(u.dtype)
    q[:, :k] *= signs
    return q


def _householder_qr(work, xp, *, full_matrices, compute_uv):
    """(Q, R) of ``work`` by Householder QR (Q None without ``compute_uv``)."""
    n = work.shape[1]
    if compute_uv:
        q, r = xp.linalg.qr(work, mode="complete" if full_matrices else "reduced")
        return q, xp.triu(r[:n])
    return None, xp.triu(xp.linalg.qr(work, mode="r")[:n])


def _tall_qr(work, xp, *, full_matrices, compute_uv):
    """(Q, R) of a tall ``work`` (m > QR_FIRST_RATIO·n): on the GPU by shifted CholeskyQR3
    up to the tunable ``cholesky_qr_max_entries`` where it succeeds (economy Q: not for a
    complete U), else by Householder QR;
    on the CPU by Householder QR (LAPACK's geqrf is as fast there, in fewer flops)."""
    t = tunables.get()
    if (xp.__name__ in t.cholesky_qr_namespaces and not (compute_uv and full_matrices)
            and work.size <= t.cholesky_qr_max_entries):
        found = cholesky_qr.cholesky_qr(work, xp)
        if found is not None:
            return found
    return _householder_qr(work, xp, full_matrices=full_matrices, compute_uv=compute_uv)


def _estimates(a, xp, *, triangular):
    """α ≈ 1.1·‖A‖₂ and l₀ of the QDWH of ``a`` (m×n, m ≥ n): up to the tunable
    ``polar_gram_estimates_max_n`` columns from the Gram matrix in one host
    synchronization (the batched engine's :func:`gpusvd.batched.qdwh.estimates`, in
    float64), beyond by power iteration and, for a square matrix, inverse iteration with
    its LU or triangular factor (l₀ = ε for a rectangular one). In single precision and
    below ``polar_estimates_min_n`` columns, no estimate: α = √(‖A‖₁·‖A‖_∞) ≥ ‖A‖₂ (as
    JAX's QDWH takes it) and l₀ = ε (qdwh.SINGLE_EPS_FROM)."""
    m, n = a.shape
    eps = float(np.finfo(a.dtype).eps)
    t = tunables.get()
    if eps > qdwh.SINGLE_EPS_FROM or n < t.polar_estimates_min_n:
        # Single precision (ε above qdwh.SINGLE_EPS_FROM: float32, complex64): from l₀ = ε
        # the schedule is one step past the Cholesky bound (taken in float64) and three
        # Cholesky steps, the same as from any l₀ in [ε, 1e-3], that is for every
        # κ(A) ≳ 1000 (random matrices from n ≈ 100); the estimates cost 3–5 ms of one
        # matrix from 256² to 1024² on the H100, about 67 ms at 8192².
        # Small n: the estimates' host cost exceeds the QR step they save.
        absolute = xp.abs(a)
        product = absolute.sum(axis=0).max() * absolute.sum(axis=1).max()
        return float(xp.sqrt(product)), eps
    if n <= t.polar_gram_estimates_max_n:
        wide = np.complex128 if a.dtype.kind == "c" else np.float64
        alpha, l0 = batched_qdwh.estimates(xp, _ct(a)[None].astype(wide), eps)
        return float(alpha[0]), float(l0[0])
    alpha = qdwh.NORM_SAFETY * qdwh.norm2_estimate(a, xp)
    return alpha, (qdwh.lower_bound(a, alpha, xp, triangular=triangular) if m == n else eps)


def polar_factor(a, xp, *, triangular):
    """The unitary polar factor U_p of an m×n, m ≥ n (square or nearly), finite matrix
    scaled as :func:`svd` scales it, by QDWH with its estimates (step 1; ``triangular``:
    ``a`` is R of a QR). Returns ``(U_p, converged)`` (:func:`.qdwh.qdwh`); also the
    unitary factor of ``gpusvd.polar`` for one matrix."""
    with profile.phase("qdwh_estimates", xp):
        alpha, l0 = _estimates(a, xp, triangular=triangular)
    up, _, converged = qdwh.qdwh(a, xp, alpha=alpha, l0=l0)
    return up, converged


def _svd_square(a, xp, *, compute_uv, triangular, fixed):
    """The economy SVD of an m×n, m ≥ n, finite, scaled matrix by steps 1–3 (U_p only
    when no QR came first, so ``a`` is square or nearly): ``(U, S, Vᴴ, orthonormal)``,
    ``orthonormal`` whether U passed :func:`_orthonormal_enough` where that is known
    already (the fixed sequence measures it), else None. ``fixed``: a real matrix of up
    to the tunable ``fixed_schedule_max_n`` columns on the GPU takes the fixed sequence,
    replayed as a CUDA graph (fixed_schedule.py)."""
    if fixed and fixed_schedule.applies(a, xp):
        found = _fixed(a, xp, compute_uv=compute_uv)
        if found is not None:
            return found
    real = np.finfo(a.dtype).dtype
    up, _ = polar_factor(a, xp, triangular=triangular)
    with profile.phase("polar_h", xp):
        h = _ct(up) @ a
        h = (h + _ct(h)) * real.type(0.5)
    with profile.phase("eigh", xp):
        if not compute_uv:
            lam = xp.linalg.eigvalsh(h)
            return None, xp.sort(xp.abs(lam))[::-1].astype(real), None, None
        lam, v = xp.linalg.eigh(h)
    # H is positive semidefinite; an eigenvalue below 0 is rounding (|λ| ≤ O(ε)‖A‖):
    # σ = |λ| with u = −U_p·v keeps A = U·Σ·Vᴴ exact.
    order = xp.argsort(-xp.abs(lam), kind="stable")
    lam, v = lam[order], v[:, order]
    s = xp.abs(lam).astype(real)
    with profile.phase("polar_u", xp):
        u = up @ (v * xp.where(lam < 0, -1, 1).astype(a.dtype))
    return u, s, _ct(v), None


def _fixed(a, xp, *, compute_uv, accept=None):
    """fixed_schedule.svd's result as :func:`_svd_square` returns it, or None (also
    where ``accept`` refuses max|A|)."""
    found = fixed_schedule.svd(a, xp, compute_uv=compute_uv)
    if found is None or (accept is not None and not accept(found.largest)):
        return None
    orthonormal = found.deviation <= _orthonormal_tolerance(a.shape[1], a.dtype)
    return found.u, found.s, found.vh, orthonormal


def _orthonormal_tolerance(n, dtype):
    """ORTHONORMAL_TOL·√n·ε: the largest max |‖u_i‖ − 1| of an orthonormal U."""
    return ORTHONORMAL_TOL * np.sqrt(n) * float(np.finfo(dtype).eps)


def _orthonormal_enough(u, xp):
    """Whether every column of ``u`` has norm 1 within ORTHONORMAL_TOL·√n·ε, which for
    U = W·f(Σ) means U is orthonormal to working precision (module docstring)."""
    deviation = float(xp.abs(xp.linalg.norm(u, axis=0) - 1).max())
    return deviation <= _orthonormal_tolerance(u.shape[1], u.dtype)


def normalized(a, xp):
    """(A·2^e, e) with max|A·2^e| near 1, or (A, 0) where max|A| lies within
    2^±NORMALIZE_BEYOND (no copy of A where its norms cannot overflow: a 2.2e9-entry
    case); None for a zero A. The scaling of :func:`svd` and of ``gpusvd.polar``."""
    anrm = float(xp.abs(a).max())
    if anrm == 0.0:
        return None
    exponent = unit_exponent(anrm)
    if abs(exponent) <= NORMALIZE_BEYOND:
        return a, 0
    return times_power_of_two(a, exponent, xp), exponent


def _svd_tall(a, xp, *, full_matrices, compute_uv, accept):
    """SVD of an m×n, m ≥ n ≥ 1, finite matrix; ``accept``: :func:`svd`'s."""
    m, n = a.shape
    q, exponent, found = None, 0, None
    square = m <= QR_FIRST_RATIO * n
    if square and fixed_schedule.applies(a, xp):
        # No normalization: without estimates nothing squares A's norms, and the front
        # end's safe range keeps √(‖A‖₁‖A‖_∞) in range.
        found = _fixed(a, xp, compute_uv=compute_uv, accept=accept)
    if found is None and accept is not None:
        return None
    if found is None:
        scaled = normalized(a, xp)
        if scaled is None:
            return _svd_zero(m, n, xp, a.dtype, full_matrices, compute_uv)
        work, exponent = scaled
        if square:
            found = _svd_square(work, xp, compute_uv=compute_uv, triangular=False,
                                fixed=False)
        else:
            with profile.phase("qr", xp):
                q, r = _tall_qr(work, xp, full_matrices=full_matrices,
                                compute_uv=compute_uv)
            found = _svd_square(r, xp, compute_uv=compute_uv, triangular=True, fixed=True)
    u, s, vh, orthonormal = found
    if exponent:
        s = scale_values(s, -exponent, xp)
    if not compute_uv:
        return None, s, None
    with profile.phase("polar_u", xp):
        if not (_orthonormal_enough(u, xp) if orthonormal is None else orthonormal):
            u = _orthonormal_columns(u, xp, complete=False)
        if q is not None:
            if full_matrices:
                q[:, :n] = q[:, :n] @ u
                u = q
            else:
                u = q @ u
        elif full_matrices and m > n:
            u = _orthonormal_columns(u, xp, complete=True)
    return xp.ascontiguousarray(u), s, xp.ascontiguousarray(vh)


def _svd_zero(m, n, xp, dtype, full_matrices, compute_uv):
    s = xp.zeros(n, dtype=np.finfo(dtype).dtype)
    if not compute_uv:
        return None, s, None
    u = xp.eye(m, m if full_matrices else n, dtype=dtype)
    return u, s, xp.eye(n, dtype=dtype)


def svd(a, xp, *, full_matrices, compute_uv, overwrite_a, accept=None):
    """SVD of one finite matrix ``a`` (NumPy or CuPy) through its polar decomposition.

    Returns ``(U, S, Vh)``; ``U`` and ``Vh`` are ``None`` when ``compute_uv`` is false, and
    ``S`` has the real dtype of ``a``. ``a`` is never written (``overwrite_a`` is accepted
    for the common driver signature: A is needed again for H = U_pᴴ·A).

    ``accept``: for a matrix the front end has not scanned, a function of max|A| that
    says whether the scan would have left it as it is. Then only the fixed sequence
    (fixed_schedule.py) runs, which measures max|A| itself, and None is returned where it
    does not apply or ``accept`` refuses.

    Examples
    --------
    >>> a = np.array([[3.0, 0.0], [4.0, 5.0]])
    >>> u, s, vh = svd(a, np, full_matrices=False, compute_uv=True, overwrite_a=False)
    >>> np.round(s ** 2, 10)
    array([45.,  5.])
    >>> bool(np.allclose(u * s @ vh, a))
    True
    """
    del overwrite_a
    m, n = a.shape
    if m == 0 or n == 0:
        s = xp.zeros(0, dtype=np.finfo(a.dtype).dtype)
        if not compute_uv:
            return None, s, None
        k_u, k_v = (m, n) if full_matrices else (0, 0)
        return xp.eye(m, k_u, dtype=a.dtype), s, xp.eye(k_v, n, dtype=a.dtype)
    if m < n:
        found = _svd_tall(_ct(a), xp, full_matrices=full_matrices, compute_uv=compute_uv,
                          accept=accept)
        if found is None or not compute_uv:
            return found
        u, s, vh = found
        return xp.ascontiguousarray(_ct(vh)), s, xp.ascontiguousarray(_ct(u))
    return _svd_tall(a, xp, full_matrices=full_matrices, compute_uv=compute_uv,
                     accept=accept)
