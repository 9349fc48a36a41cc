"""QDWH on a whole stack at once: the polar factor of every matrix, weights per matrix.

The iteration is the one of :mod:`gpusvd.polar_svd.qdwh` (Nakatsukasa, Bai & Gygi, SIAM J.
Matrix Anal. Appl. 31(5), 2010, eq. (3.3)–(3.5); Nakatsukasa & Higham, SIAM J. Sci.
Comput. 35(3), 2013, eq. (3.5) and (4.2)), with X₀ = A/α per matrix. What a stack
changes:

- **The weights are planned before the first step.** Each matrix's bound l₀ is
  estimated once (one host synchronization for the whole stack), and its whole schedule
  l₀ → l₁ → … → 1 follows from NBG eq. (3.4) on the host. Step k runs on the matrices
  whose schedule has a step k, each with its own (a, b, c): a well-conditioned matrix
  stops after its 3–4 steps while an ill-conditioned one in the same stack takes its 6,
  and one hard matrix does not turn the easy ones' Cholesky steps into QR steps.
- **The QR step of NH eq. (3.5)** factors [√c·X; I] by shifted CholeskyQR3
  (:mod:`.cholesky_qr`): batched Gram products, Cholesky factorizations and triangular
  solves, where a Householder QR of a stack is a loop over its matrices. κ₂ of the
  stacked matrix is at most √(1 + c), ≤ 5·10¹⁰ for l₀ = ε in float64, inside shifted
  CholeskyQR3's reach (κ₂ ≲ 1/(11·p·n·u)).
- **The estimates** come from the Gram matrix XᴴX, formed in float64: ‖A‖₂² by power
  iteration on it, σ_min² by inverse iteration with its Cholesky factor, shifted by
  n·u·‖A‖₂² so that it exists. Where the estimate of σ_min² is not well above that
  shift it says nothing, and l₀ is ε (the worst-case schedule, ≤ 6 steps).
- **The stopping test** is on the result, not on each step: after its schedule a
  matrix's iterate must satisfy ‖XᴴX − I‖_F ≤ ORTHONORMAL_TOL·n·ε. A matrix that fails
  with an estimated l₀ (the estimate was too large) runs the worst-case schedule again
  from its current iterate, whose singular values lie in [0, 1] (as
  :func:`gpusvd.polar_svd.qdwh.qdwh` restarts); one that fails with l₀ = ε is numerically
  rank deficient, and its polar factor is a partial isometry that the SVD driver
  completes (NH §5.5).

The iterate is held conjugate-transposed, Y = Xᴴ (batch, n, m), the form in which the
triangular solves of both steps take it without a copy. The iteration runs in float64
(complex128) whatever the input: products of float32 numbers are exact there, the Gram
matrices of the estimates and of the QR step need the range, and on the H100 a float64
GEMM is as fast as a float32 one (docs/design.md, "Ceilings and targets").
"""

import numpy as np

from .._core import tunables
from ..polar_svd.qdwh import (CHOLESKY_IN_DOUBLE_MAX_C, CHOLESKY_MAX_C, INVERSE_STEPS,
                              NORM_SAFETY, NORM_STEPS, SIGMA_MIN_SAFETY, SINGLE_EPS_FROM,
                              coefficients, next_lower_bound)
from .cholesky_qr import add_to_diagonal, cholesky, gram, shifted_cholesky_qr, solve_lower

# The Cholesky factor's shift is at least this (√ of float64's smallest normal), so that
# the inverse iteration on a zero matrix stays finite (a zero matrix's G is 0).
SHIFT_FLOOR = np.finfo(np.float64).tiny ** 0.5
# An estimate of σ_min² below this many times the Cholesky factor's shift n·u·‖A‖₂² is
# not trusted (the Gram matrix's rounding errors are of the shift's size), and l₀ = ε.
TRUST_ABOVE_SHIFT = 100.0
# A matrix whose iterate after its schedule has ‖XᴴX − I‖_F above this many n·ε of the
# input's dtype has not converged (converged QDWH: 0.4–0.6 n·ε).
ORTHONORMAL_TOL = 10.0
# The schedule stops once 1 − l_k ≤ this many ε (NH Algorithm 4.1's |1 − l_k| ≤ 10ε).
L_TOL_FACTOR = 10.0
# Squarings of the Gram matrix and of its inverse where the estimates square (the tunable
# batched_explicit_inverse_max_work): G¹⁶ is 17 steps of power iteration (NORM_STEPS = 12
# where they iterate), (L⁻ᴴL⁻¹)⁴ five (INVERSE_STEPS = 4).
POWER_SQUARINGS = 4
INVERSE_SQUARINGS = 2
# Upper bound on ‖X₀‖₂² for the QR step's shift: X₀ = A/α with α ≥ ‖A‖₂ up to the power
# iteration's error, which NORM_SAFETY covers; twice that is safe.
X_NORM2_BOUND = 2.0


def unit_scaled(a, xp):
    """(A', e): each matrix of ``a`` (batch, m, n) in float64 (complex128) times 2^−e_b, so
    that its largest entry lies in [1/2, 1) (exact; e_b = 0 for a zero matrix)."""
    wide = np.complex128 if a.dtype.kind == "c" else np.float64
    big = xp.abs(a).max(axis=(1, 2))
    _, e = xp.frexp(xp.where(big > 0, big, 1).astype(np.float64))
    return a.astype(wide) * xp.ldexp(xp.ones(len(a)), -e)[:, None, None], e


def _column(xp, values, dtype):
    """Host values (batch,) as an ``xp`` array (batch, 1, 1) of ``dtype``."""
    return xp.asarray(np.asarray(values).reshape(-1, 1, 1)).astype(dtype)


def _frobenius(xp, x):
    """‖X‖_F of each matrix of the stack ``x`` (batch, n, k), shape (batch, 1, 1). A stack
    of one takes the whole-array norm: CuPy reduces axes (1, 2) into a single output in
    one thread block, 2.5 ms at 2048² on the H100 against ~0.05 ms for the
    whole array's reduction; with many matrices each has its block."""
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
        size = _frobenius(xp, q)
        q = q / xp.where(size > 0, size, 1)
        q = xp.matmul(q, q)
    x = xp.matmul(q, start)
    size = xp.linalg.norm(x, axis=(1, 2), keepdims=True)
    return (xp.linalg.norm(xp.matmul(p, x), axis=(1, 2), keepdims=True)
            / xp.where(size > 0, size, 1))


def estimates(xp, y, eps):
    """α ≈ 1.1·‖A‖₂ and the bound l₀ in [ε, 1] of each matrix, as host arrays, from its
    conjugate transpose ``y`` (batch, n, m) in float64 or complex128; ``eps`` is the
    input dtype's ε. One host synchronization.

    While batch·n³ ≤ the tunable ``batched_explicit_inverse_max_work`` the power
    iterations run by repeated squaring (G¹⁶ for ‖A‖₂², (L⁻ᴴL⁻¹)⁴ for 1/σ_min²): some 50
    array operations for one matrix instead of some 100, each a CuPy call of 20–45 µs of
    host time that a small matrix's GPU work does not hide (H100; NOTES.md, "One matrix
    of 128–1024 and tall matrices: QDWH")."""
    batch, n, _ = y.shape
    g = gram(xp, y)
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
        # L⁻¹ by one triangular solve, then products: two solves a step cost ~0.3 ms of
        # host time each in CuPy (8 of a 256² SVD's 10.8 ms went to 16 such calls).
        low_inv = solve_lower(xp, low, xp.broadcast_to(xp.eye(n, dtype=g.dtype),
                                                       (batch, n, n)).copy())
        # L⁻¹ scaled to unit Frobenius norm first: for a zero A (shift SHIFT_FLOOR) its
        # entries are ~1e77, and L⁻ᴴL⁻¹'s squares would overflow the norms.
        size = _frobenius(xp, low_inv)
        low_inv = low_inv / size
        g_inv = xp.matmul(low_inv.conj().swapaxes(-1, -2), low_inv)
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


def schedule(l0, eps):
    """The weights of every step of every matrix: a list over steps of (a, b, c) host
    arrays (batch,), NaN where a matrix's schedule has ended (its 1 − l_k ≤ 10ε)."""
    l = np.asarray(l0, np.float64).copy()
    steps = []
    while True:
        active = 1.0 - l > L_TOL_FACTOR * eps
        if not active.any():
            return steps
        a, b, c = coefficients(np.where(active, l, 1.0))
        l = np.where(active, next_lower_bound(l, a, b, c), l)
        nan = np.full_like(a, np.nan)
        steps.append(tuple(np.where(active, w, nan) for w in (a, b, c)))


def _cholesky_step(xp, y, a, b, c):
    """Y·(b/c) + (a − b/c)·Z⁻¹·Y with Z = I + c·YYᴴ = L·Lᴴ (NH eq. (4.2), transposed);
    ``a``, ``b``, ``c`` (batch, 1, 1) arrays."""
    z = gram(xp, y) * c
    low = cholesky(xp, add_to_diagonal(xp, z, xp.ones(len(y), np.float64)))
    w = solve_lower(xp, low, solve_lower(xp, low, y), conjugate=True)
    return y * (b / c) + w * (a - b / c)


def _qr_step(xp, y, a, b, c):
    """Y·(b/c) + (a − b/c)/√c·Q₂·Q₁ᴴ with [√c·X; I] = [Q₁; Q₂]·R (NH eq. (3.5),
    transposed), the QR by shifted CholeskyQR3."""
    batch, n, m = y.shape
    root = xp.sqrt(c)
    wh = xp.concatenate([y * root, xp.broadcast_to(xp.eye(n, dtype=y.dtype), (batch, n, n))],
                        axis=2)
    norm2 = (1.0 + c[:, 0, 0] * X_NORM2_BOUND)
    qh = shifted_cholesky_qr(xp, wh, norm2)
    q2 = qh[:, :, m:].conj().swapaxes(-1, -2)
    return y * (b / c) + xp.matmul(q2, qh[:, :, :m]) * ((a - b / c) / root)


def _run(xp, y, weights, cholesky_max_c):
    """Apply the steps of ``weights`` (:func:`schedule`) to ``y`` in place, each step to
    the matrices it has weights for, QR and Cholesky steps (those with c at most
    ``cholesky_max_c``) on their own subsets."""
    for a, b, c in weights:
        for kind, chosen in ((_qr_step, c > cholesky_max_c),
                             (_cholesky_step, c <= cholesky_max_c)):
            index = np.flatnonzero(chosen)
            if index.size == 0:
                continue
            whole = index.size == len(y)
            part = y if whole else y[xp.asarray(index)]
            ws = [_column(xp, w[index], np.float64) for w in (a, b, c)]
            part = kind(xp, part, *ws)
            if whole:
                y[...] = part
            else:
                y[xp.asarray(index)] = part
    return y


def _deviation(xp, y):
    """‖YYᴴ − I‖_F of each matrix, on the host (one synchronization)."""
    d = add_to_diagonal(xp, gram(xp, y), -xp.ones(len(y), np.float64))
    dev = _frobenius(xp, d).reshape(len(y))
    return dev.get() if hasattr(dev, "get") else dev


def polar_factor(xp, y, eps):
    """U_pᴴ of each matrix from Y = Aᴴ (batch, n, m), m >= n, float64 or complex128,
    max|A| of order 1; ``eps`` the input dtype's ε. ``y`` is overwritten.

    Returns (U_pᴴ, converged): ``converged`` (batch,) bool is false where the matrix is
    numerically rank deficient and U_p only a partial isometry (module docstring).

    Examples
    --------
    >>> a = np.array([[[3.0, 0.0], [4.0, 5.0]]])
    >>> uh, ok = polar_factor(np, a.swapaxes(-1, -2).copy(), np.finfo(float).eps)
    >>> bool(ok[0]), bool(np.allclose(uh[0] @ uh[0].T, np.eye(2)))
    (True, True)
    >>> h = uh[0] @ a[0]                      # U_pᴴ·A: symmetric positive definite
    >>> bool(np.allclose(h, h.T)), bool(np.all(np.linalg.eigvalsh(h) > 0))
    (True, True)
    """
    n = y.shape[1]
    # Single-precision input: Cholesky steps up to c = CHOLESKY_IN_DOUBLE_MAX_C, as the
    # one-matrix QDWH takes them (its module says why); the iteration is in float64 here.
    limit = CHOLESKY_IN_DOUBLE_MAX_C if eps > SINGLE_EPS_FROM else CHOLESKY_MAX_C
    alpha, l0 = estimates(xp, y, eps)
    y *= _column(xp, 1.0 / alpha, np.float64).astype(y.dtype)
    _run(xp, y, schedule(l0, eps), limit)
    failed = _deviation(xp, y) > ORTHONORMAL_TOL * n * eps
    again = failed & (l0 > eps)
    if again.any():
        index = np.flatnonzero(again)
        part = y[xp.asarray(index)]
        part = _run(xp, part, schedule(np.full(index.size, eps), eps), limit)
        y[xp.asarray(index)] = part
        failed[index] = _deviation(xp, part) > ORTHONORMAL_TOL * n * eps
    return y, ~failed
