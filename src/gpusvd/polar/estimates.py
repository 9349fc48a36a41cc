"""Where QDWH starts: α ≈ ‖A‖₂ (X₀ = A/α) and l₀, a lower bound on σ_min(X₀).

Nakatsukasa & Higham, SIAM J. Sci. Comput. 35(3), 2013, §4: any α ≥ ‖A‖₂ and
l₀ ≤ σ_min(A)/α serve, and the closer they are, the fewer steps QDWH takes (six at most
for κ(A) ≤ 10¹⁶ from l₀ = ε, two of them QR steps). Three ways to get them:

- **None**: α = √(‖A‖₁·‖A‖_∞) ≥ ‖A‖₂ and l₀ = ε (as JAX's QDWH takes them), for single
  precision and below the tunable ``polar_estimates_min_n`` columns (:func:`one_matrix`
  says why);
- **From the Gram matrix** (:func:`from_gram`, every matrix of a stack at once, and one
  matrix up to ``polar_gram_estimates_max_n`` columns): ‖A‖₂² by power iteration on
  G = AᴴA formed in float64, σ_min² by inverse iteration with the Cholesky factor of G
  shifted by n·u·‖A‖₂² so that it exists; where the estimate of σ_min² is not well above
  that shift it says nothing, and l₀ = ε. One host synchronization for the whole stack.
- **From A itself** (:func:`norm2_estimate`, :func:`lower_bound`, one large matrix):
  power iteration on AᴴA by matrix–vector products, and inverse iteration with the LU
  factors of A, or with R where A is R of a QR.

An estimate too large costs only extra (cheap, Cholesky) steps, never accuracy: QDWH
tests the iterate itself, and restarts from l = ε where l₀ proves too large (qdwh.py).
"""

import warnings

import numpy as np
import scipy.linalg

from .._core import tunables
from .._core.backend import scipy_linalg
from .cholesky_qr import add_to_diagonal, cholesky, gram, solve_lower

# Power iteration for ‖A‖₂: steps, and the factor that makes the estimate (a lower bound
# that converges from below) an upper bound in practice.
NORM_STEPS = 12
NORM_SAFETY = 1.1
# Inverse power iteration for ‖A⁻¹‖₂: steps, and the factor by which l₀ is taken below
# the estimate's σ_min (the estimate is an upper bound on σ_min).
INVERSE_STEPS = 4
SIGMA_MIN_SAFETY = 2.0
# Input whose ε exceeds this is single precision (float32, complex64): no estimates.
SINGLE_EPS_FROM = 1e-10
# The Cholesky factor's shift is at least this (√ of float64's smallest normal), so that
# the inverse iteration on a zero matrix stays finite (a zero matrix's G is 0).
SHIFT_FLOOR = np.finfo(np.float64).tiny ** 0.5
# An estimate of σ_min² below this many times the Cholesky factor's shift n·u·‖A‖₂² is
# not trusted (the Gram matrix's rounding errors are of the shift's size), and l₀ = ε.
TRUST_ABOVE_SHIFT = 100.0
# Squarings of the Gram matrix and of its inverse where the estimates square (the tunable
# batched_explicit_inverse_max_work): G¹⁶ is 17 steps of power iteration (NORM_STEPS = 12
# where they iterate), (L⁻ᴴL⁻¹)⁴ five (INVERSE_STEPS = 4).
POWER_SQUARINGS = 4
INVERSE_SQUARINGS = 2


def _ct(x):
    return x.conj().swapaxes(-1, -2)


def unit_scaled(a, xp):
    """(A', e): each matrix of ``a`` (batch, m, n) in float64 (complex128) times 2^−e_b, so
    that its largest entry lies in [1/2, 1) (exact; e_b = 0 for a zero matrix)."""
    wide = np.complex128 if a.dtype.kind == "c" else np.float64
    big = xp.abs(a).max(axis=(1, 2))
    _, e = xp.frexp(xp.where(big > 0, big, 1).astype(np.float64))
    return a.astype(wide) * xp.ldexp(xp.ones(len(a)), -e)[:, None, None], e


def frobenius(xp, x):
    """‖X‖_F of each matrix of the stack ``x`` (batch, n, k), shape (batch, 1, 1). A stack
    of one takes the whole-array norm: CuPy reduces axes (1, 2) into a single output in
    one thread block, some fifty times slower at 2048² than the whole array's reduction;
    with many matrices each has its block."""
    if len(x) == 1:
        return xp.linalg.norm(x).reshape(1, 1, 1)
    return xp.linalg.norm(x, axis=(1, 2), keepdims=True)


def _dominant_by_squaring(xp, p, start, squarings):
    """‖P·x‖/‖x‖ with x = P^(2^k)·start (k = ``squarings``): the largest eigenvalue of
    each Hermitian positive semidefinite P of the stack (batch, n, n), from below, as
    2^k + 1 steps of power iteration in k + 2 matrix products, each square normalized by
    its Frobenius norm."""
    q = p
    for _ in range(squarings):
        size = frobenius(xp, q)
        q = q / xp.where(size > 0, size, 1)
        q = xp.matmul(q, q)
    x = xp.matmul(q, start)
    size = xp.linalg.norm(x, axis=(1, 2), keepdims=True)
    return (xp.linalg.norm(xp.matmul(p, x), axis=(1, 2), keepdims=True)
            / xp.where(size > 0, size, 1))


def from_gram(xp, y, eps, *, gram_of=gram):
    """α ≈ 1.1·‖A‖₂ and the bound l₀ in [ε, 1] of each matrix, as host arrays, from its
    conjugate transpose ``y`` (batch, n, m) in float64 or complex128; ``eps`` is the
    input dtype's ε; ``gram_of(xp, y)`` the Gram products AᴴA (default
    :func:`.cholesky_qr.gram`). One host synchronization.

    While batch·n³ ≤ the tunable ``batched_explicit_inverse_max_work`` the power
    iterations run by repeated squaring (G¹⁶ for ‖A‖₂², (L⁻ᴴL⁻¹)⁴ for 1/σ_min²): some 50
    array operations for one matrix instead of some 100, each a call of tens of µs of
    host time that a small matrix's GPU work does not hide (NOTES.md, "One matrix of
    128–1024 and tall matrices: QDWH")."""
    batch, n, _ = y.shape
    g = gram_of(xp, y)
    start = np.random.default_rng(0).standard_normal(n)
    start = xp.asarray(np.broadcast_to(start / np.linalg.norm(start), (batch, n))[..., None])
    start = start.astype(g.dtype)
    explicit = batch * n ** 3 <= tunables.get().batched_explicit_inverse_max_work
    if explicit:
        top = _dominant_by_squaring(xp, g, start, POWER_SQUARINGS)
    else:
        x = start
        for _ in range(NORM_STEPS):
            w = xp.matmul(g, x)
            top = xp.linalg.norm(w, axis=(1, 2), keepdims=True)
            x = w / xp.where(top > 0, top, 1)
    shift = n * np.finfo(np.float64).eps * top[:, 0, 0] + SHIFT_FLOOR
    low = cholesky(xp, add_to_diagonal(xp, g, shift))
    if explicit:
        # L⁻¹ by one triangular solve, then products: two solves a step cost more host
        # time than a small matrix's products.
        low_inv = solve_lower(xp, low, xp.broadcast_to(xp.eye(n, dtype=g.dtype),
                                                       (batch, n, n)).copy())
        # L⁻¹ scaled to unit Frobenius norm first: for a zero A (shift SHIFT_FLOOR) its
        # entries are ~1e77, and L⁻ᴴL⁻¹'s squares would overflow the norms.
        size = frobenius(xp, low_inv)
        low_inv = low_inv / size
        g_inv = xp.matmul(_ct(low_inv), low_inv)
        inverse = _dominant_by_squaring(xp, g_inv, start, INVERSE_SQUARINGS) * size ** 2
    else:
        x = start
        for _ in range(INVERSE_STEPS):
            w = solve_lower(xp, low, solve_lower(xp, low, x), conjugate=True)
            inverse = xp.linalg.norm(w, axis=(1, 2), keepdims=True)
            x = w / inverse
    found = xp.stack([top[:, 0, 0], 1.0 / inverse[:, 0, 0], shift])
    top, bottom, shift = (found.get() if hasattr(found, "get") else found)
    alpha = NORM_SAFETY * np.sqrt(top)
    alpha = np.where(alpha > 0, alpha, 1.0)
    trusted = np.isfinite(bottom) & (bottom > TRUST_ABOVE_SHIFT * shift)
    with np.errstate(invalid="ignore"):
        l0 = np.sqrt(np.where(trusted, bottom, 0.0)) / (alpha * SIGMA_MIN_SAFETY)
    return alpha, np.clip(np.where(trusted, l0, eps), eps, 1.0)


def norm2_estimate(a, xp):
    """An estimate of ‖A‖₂ from below, by power iteration on AᴴA from a fixed start.

    The start is a seeded Gaussian vector (deterministic, and almost surely not orthogonal
    to the top singular vector). Each step is two matrix–vector products.
    """
    n = a.shape[1]
    start = np.random.default_rng(0).standard_normal(n).astype(a.dtype)
    x = xp.asarray(start / np.linalg.norm(start))
    est = xp.zeros((), dtype=np.finfo(a.dtype).dtype)
    for _ in range(NORM_STEPS):
        y = a @ x
        z = _ct(a) @ y
        est = xp.linalg.norm(y)
        norm_z = xp.linalg.norm(z)
        x = z / xp.where(norm_z > 0, norm_z, 1)
    return float(est)


def inverse_norm2_estimate(solve, solve_ct, n, dtype, xp):
    """An estimate of ‖A⁻¹‖₂ from below by inverse power iteration: ``solve(y)`` returns
    A⁻¹·y and ``solve_ct(y)`` A⁻ᴴ·y (with the LU or triangular factor of A)."""
    start = np.random.default_rng(1).standard_normal(n).astype(dtype)
    x = xp.asarray(start / np.linalg.norm(start))
    est = 0.0
    for _ in range(INVERSE_STEPS):
        y = solve(x)
        z = solve_ct(y)
        norm_z = float(xp.linalg.norm(z))
        est = float(xp.linalg.norm(y))
        if not np.isfinite(norm_z) or norm_z == 0.0:
            return np.inf if not np.isfinite(norm_z) else est
        x = z / norm_z
    return est


def lower_bound(a, alpha, xp, *, triangular=False):
    """l₀: an estimate of σ_min(A)/α, kept in [ε, 1].

    ``a`` square; ``triangular``: ``a`` is upper triangular (R of a QR), so its own
    triangular solves serve; otherwise its LU factors do.
    """
    n = a.shape[0]
    eps = float(np.finfo(a.dtype).eps)
    sla = scipy_linalg(xp)
    if triangular:
        def solve(y):
            return sla.solve_triangular(a, y, lower=False)

        def solve_ct(y):
            return sla.solve_triangular(a, y, lower=False, trans="C")
    else:
        # An exactly singular A is a case this estimate handles (l₀ = ε below), not news
        # for the user: SciPy's LinAlgWarning about a zero pivot, and CuPy's
        # RuntimeWarning ("Diagonal number ... is exactly zero"), stay inside.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
            warnings.filterwarnings("ignore", "Diagonal number", RuntimeWarning)
            lu = sla.lu_factor(a, check_finite=False)

        def solve(y):
            return sla.lu_solve(lu, y, check_finite=False)

        def solve_ct(y):
            return sla.lu_solve(lu, y, trans=2, check_finite=False)
    with np.errstate(all="ignore"):
        try:
            inv_norm = inverse_norm2_estimate(solve, solve_ct, n, a.dtype, xp)
        except np.linalg.LinAlgError:  # SciPy's solves refuse an exactly singular factor
            return eps
    if not np.isfinite(inv_norm) or inv_norm <= 0.0:
        return eps
    return float(min(1.0, max(eps, 1.0 / (inv_norm * alpha * SIGMA_MIN_SAFETY))))


def one_matrix(a, xp, *, triangular):
    """α ≈ 1.1·‖A‖₂ and l₀ of the QDWH of one ``a`` (m×n, m ≥ n) in its own precision: up
    to the tunable ``polar_gram_estimates_max_n`` columns by :func:`from_gram` (in
    float64), beyond by power iteration and, for a square matrix, inverse iteration with
    its LU or triangular factor (``triangular``: ``a`` is R of a QR; l₀ = ε for a
    rectangular one).

    Single precision (ε above SINGLE_EPS_FROM) and fewer than ``polar_estimates_min_n``
    columns take none: α = √(‖A‖₁·‖A‖_∞) ≥ ‖A‖₂ and l₀ = ε. In single precision the
    schedule from l₀ = ε is one step past the Cholesky bound (taken in float64) and
    three Cholesky steps, the same as from any l₀ in [ε, 1e-3], that is for every
    κ(A) ≳ 1000 (random matrices from n ≈ 100), so an estimate saves nothing; below
    ``polar_estimates_min_n`` its host time exceeds the QR step it saves."""
    m, n = a.shape
    eps = float(np.finfo(a.dtype).eps)
    t = tunables.get()
    if eps > SINGLE_EPS_FROM or n < t.polar_estimates_min_n:
        absolute = xp.abs(a)
        product = absolute.sum(axis=0).max() * absolute.sum(axis=1).max()
        return float(xp.sqrt(product)), eps
    if n <= t.polar_gram_estimates_max_n:
        wide = np.complex128 if a.dtype.kind == "c" else np.float64
        alpha, l0 = from_gram(xp, _ct(a)[None].astype(wide), eps)
        return float(alpha[0]), float(l0[0])
    alpha = NORM_SAFETY * norm2_estimate(a, xp)
    return alpha, (lower_bound(a, alpha, xp, triangular=triangular) if m == n else eps)
