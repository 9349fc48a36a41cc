"""Shifted CholeskyQR3, and the batched Gram products, Cholesky factorizations and
triangular solves that it and QDWH's steps are made of.

Fukaya, Kannan, Nakatsukasa, Yamamoto & Yanagisawa, *Shifted Cholesky QR for computing
the QR factorization of ill-conditioned matrices*, SIAM J. Sci. Comput. 42(1), 2020
(FKNYY), Algorithm 4.2: one Cholesky QR of the Gram matrix shifted by

    s = 11·(p·n + n·(n + 1))·u·‖W‖₂²                                   (FKNYY eq. (4.2))

takes W (p×n) with κ₂(W) up to O(u⁻¹) to a factor Q₁ with κ₂(Q₁) = O(u^(-1/2)), and two
plain Cholesky QRs (CholeskyQR2) then give Q with ‖QᴴQ − I‖ = O(p·n·u) and W = Q·R to
O(u·‖W‖). Each pass is a Gram product, a Cholesky factorization and a triangular solve,
where Householder QR is a chain of panel factorizations (and, for a stack, a loop over its
matrices: cuSOLVER has no batched geqrf). The passes run in float64 (complex128).

Two forms, for the two kinds of caller:

- :func:`shifted_cholesky_qr`: Qᴴ of every matrix of a stack, passed and returned
  conjugate-transposed (Wᴴ, n×p), the form in which the triangular solves R⁻ᴴ·Wᴴ need
  no copy and which QDWH's iterate keeps; the shift from a known bound on ‖W‖₂², no
  check (QDWH's QR step, whose κ₂ is bounded by its weight).
- :func:`cholesky_qr`: Q and R of one tall matrix of unknown condition (the QR before
  QDWH of a tall A, and the QR step of one large matrix), column-major with solves from
  the right, checked: None where W is too ill-conditioned, for Householder QR to take
  over.
"""

import numpy as np
import scipy.linalg

from .._core import libraries
from .._core.backend import scipy_linalg

# FKNYY eq. (4.2): the shift's constant.
SHIFT_CONSTANT = 11.0
# Cholesky QRs after the shifted one (FKNYY Algorithm 4.2: CholeskyQR2).
PLAIN_PASSES = 2
# The passes run in float64 (complex128): its unit roundoff.
_UNIT_ROUNDOFF = np.finfo(np.float64).eps / 2
# :func:`cholesky_qr`'s Q is accepted when the Gram matrix of its last pass is within
# this of I in the Frobenius norm: CholeskyQR of a Q_k with ‖Q_kᴴQ_k − I‖ ≤ 0.1 (κ(Q_k)² ≤
# 1.25) is orthonormal to O(u) (Yamamoto et al. 2015), and a rank-deficient A, whose Q₁ is
# singular, shows here as a large or non-finite deviation. Where the shifted pass's Q₁ is
# within it already (κ(A) up to about 1e3 at 100000 × 1000 in float64), the second pass
# is the last: CholeskyQR2 after the shift, one Gram product and one GEMM fewer.
ACCEPT = 0.1
# Float64 input to :func:`cholesky_qr`: the second pass multiplies by the explicit L₂⁻ᴴ
# (a GEMM) instead of solving when ‖Q₁ᴴQ₁ − I‖_F is at most this, so κ(L₂) = κ(Q₁) ≤ √3
# and the product's error, about n·u·κ(L₂), is a solve's (well-conditioned A have it).
GEMM_BELOW = 0.5


def _ct(x):
    return x.conj().swapaxes(-1, -2)


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
    of a single-matrix SVD's QDWH estimates (NOTES.md, "One matrix of 128–1024 and tall
    matrices: QDWH"). That one factor is column-major on the GPU: CuPy's triangular solve
    copies a row-major factor at every call, and the estimates' inverse iteration solves
    eight times with one factor (4096² float64: 5.2 ms, 2.5 with the factor column-major;
    NOTES.md, open question 2)."""
    if len(g) == 1:
        low = xp.linalg.cholesky(g[0])
        return (low if xp is np else xp.asfortranarray(low))[None]
    return xp.linalg.cholesky(g)


def gram(xp, wh):
    """Wᴴ·W of each matrix, from its conjugate transpose ``wh`` (batch, n, p); a stack of
    one by an unbatched product."""
    if len(wh) == 1:
        return xp.matmul(wh[0], _ct(wh[0]))[None]
    return xp.matmul(wh, _ct(wh))


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


def shifted_cholesky_qr(xp, wh, norm2, *, summed=None, rows=None):
    """Qᴴ of W = Q·R for each matrix, from Wᴴ (batch, n, p), p >= n, W of full rank with
    κ₂(W) ≲ 1/u; ``norm2`` (batch,) an upper bound on ‖W‖₂² (0 where W is 0).
    ``summed``: applied to each pass's Gram products Wᴴ·W (default: none; the ranks that
    hold W's rows sum theirs), ``rows``: W's rows for the shift (default p). One real
    matrix takes each pass as syrk, potrf and a triangular solve from the right
    (:mod:`gpusvd._core.libraries`): half the Gram product's flops.

    Examples
    --------
    >>> w = np.array([[[1.0, 0.0], [1.0, 1e-9], [0.0, 1.0]]])
    >>> qh = shifted_cholesky_qr(np, w.swapaxes(-1, -2), np.array([3.0]))
    >>> bool(np.abs(qh @ qh.swapaxes(-1, -2) - np.eye(2)).max() < 1e-14)
    True
    """
    _, n, p = wh.shape
    total = summed or (lambda g: g)
    shifts = shift(p if rows is None else rows, n, norm2)
    shifts = xp.where(shifts > 0, shifts, np.finfo(wh.dtype).tiny)
    if len(wh) == 1 and wh.dtype in libraries.REAL:
        qh = xp.array(wh[0], order="C")
        for k in range(1 + PLAIN_PASSES):
            g = total(libraries.gram_lower(xp, qh))
            if k == 0:
                g.reshape(-1)[::n + 1] += shifts[0]
            factor, _ = libraries.factor_checked(xp, g)  # a failure shows as NaN in Q
            qh = libraries.solve_columns(xp, factor, qh)
        return qh[None]
    low = cholesky(xp, add_to_diagonal(xp, total(gram(xp, wh)), shifts))
    qh = solve_lower(xp, low, wh)
    for _ in range(PLAIN_PASSES):
        qh = solve_lower(xp, cholesky(xp, total(gram(xp, qh))), qh)
    return qh


def _solve_right_host(w, low):
    """W·L⁻ᴴ by a triangular solve (NumPy): backward stable row by row."""
    return _ct(scipy.linalg.solve_triangular(low, _ct(w), lower=True, check_finite=False))


def _solve_right_cuda(w, low):
    """W ← W·L⁻ᴴ in place by cuBLAS's right-side trsm (``w`` F-ordered, float64 or
    complex128): at 100000 × 1000 about half the time of the left-side solve of Wᴴ
    (cupyx's solve_triangular)."""
    import cupy
    from cupy_backends.cuda.libs import cublas

    w = cupy.asfortranarray(w)
    m, n = w.shape
    if not m:   # a rank that holds no rows of a distributed W: trsm refuses ldb = 0
        return w
    low = cupy.asfortranarray(low)
    handle = cupy.cuda.device.get_cublas_handle()
    cublas.setStream(handle, cupy.cuda.get_current_stream().ptr)
    cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
    one = np.ones(1, w.dtype)
    trsm = cublas.ztrsm if w.dtype.kind == "c" else cublas.dtrsm
    trsm(handle, cublas.CUBLAS_SIDE_RIGHT, cublas.CUBLAS_FILL_MODE_LOWER, cublas.CUBLAS_OP_C,
         cublas.CUBLAS_DIAG_NON_UNIT, m, n, one.ctypes.data, low.data.ptr, n, w.data.ptr, m)
    return w


_SOLVE_RIGHT = {"numpy": _solve_right_host, "cupy": _solve_right_cuda}


def cholesky_qr(a, xp, *, with_r=True, gram_of=None, rows=None):
    """(Q, R) of one tall ``a`` (m×n, m > n) with Q economy, by shifted CholeskyQR3 in
    float64 (complex128), returned in ``a``'s dtype; None where it fails (A numerically
    rank deficient in float64, or κ(A) past the shift's reach, ~1e11 at 100000 × 1000),
    for Householder QR to take over. R is None without ``with_r``.

    ``gram_of(w)``: the Gram product Wᴴ·W of each pass's float64 W, where A's rows are
    spread over the ranks of a distributed computation and ``a`` is this rank's (the
    ranks sum theirs; the first shift then comes from its trace, ‖W‖_F², and ``rows``,
    the rows of the whole A). Every decision is taken on the Gram matrix, the same on
    every rank.

    The shift is from ‖A‖_F² (an upper bound on ‖A‖₂²), and the passes stop where the
    last Gram matrix is within ACCEPT of I. W·L⁻ᴴ is a GEMM with the explicit inverse
    where that is accurate enough: its error, about n·u₆₄·κ(L), is at most
    √(n·u₆₄/(11·m)) ≈ 3e-9 after the shift (κ(L₁) ≤ 1/√(11·m·n·u₆₄)), far below float32's
    ε, and O(u₆₄) in the third pass (κ(L₃) ≤ 1.1, ACCEPT). For float64 input the first
    pass solves instead (a triangular solve is backward stable row by row), and the
    second too unless ‖Q₁ᴴQ₁ − I‖_F ≤ GEMM_BELOW. R = R₃·R₂·R₁ is upper triangular;
    A = Q·R to O(u·‖A‖).

    Examples
    --------
    >>> a = np.random.default_rng(0).standard_normal((50, 4))
    >>> q, r = cholesky_qr(a, np)
    >>> bool(np.allclose(q @ r, a)), bool(np.allclose(q.T @ q, np.eye(4)))
    (True, True)
    >>> cholesky_qr(np.zeros((50, 4)), np) is None
    True
    """
    m, n = a.shape
    wide = np.complex128 if a.dtype.kind == "c" else np.float64
    exact = np.finfo(a.dtype).dtype == np.float64
    w = xp.asarray(a, dtype=wide, order="F")
    if w is a:
        w = w.copy(order="F")
    if gram_of is None:
        first_shift = shift(m, n, xp.linalg.norm(w) ** 2) + np.finfo(np.float64).tiny
    sla = scipy_linalg(xp)
    eye = xp.eye(n, dtype=wide)
    factors, deviation = [], np.inf
    try:
        for step in range(1 + PLAIN_PASSES):
            if step == 2 and float(deviation) <= ACCEPT:
                # Q₁ was within ACCEPT of orthonormal: the plain pass on it made Q₂
                # orthonormal to O(u) (ACCEPT's argument), and a third would not change it.
                break
            g = xp.ascontiguousarray(_ct(w) @ w) if gram_of is None else gram_of(w)
            if step == 0:
                if gram_of is not None:
                    first_shift = (shift(m if rows is None else rows, n,
                                         float(xp.trace(g).real))
                                   + np.finfo(np.float64).tiny)
                g.reshape(-1)[::n + 1] += first_shift
            else:
                deviation = xp.linalg.norm(g - eye)
            low = xp.linalg.cholesky(g)
            # float64 input: the first pass solves; the second too unless Q₁ is already
            # near orthonormal (one read-back), so that κ(L₂) ≤ √3.
            if exact and (step == 0 or step == 1 and not float(deviation) <= GEMM_BELOW):
                w = _SOLVE_RIGHT[xp.__name__](w, low)
            else:
                w = w @ _ct(sla.solve_triangular(low, eye, lower=True, check_finite=False))
            factors.append(_ct(low))
    except np.linalg.LinAlgError:   # NumPy's Cholesky refuses a matrix not positive definite
        return None
    if not float(deviation) <= ACCEPT:    # NaN included
        return None
    q = w.astype(a.dtype, copy=False)
    if not with_r:
        return q, None
    r = factors[0]
    for factor in factors[1:]:
        r = factor @ r
    return q, r.astype(a.dtype)
