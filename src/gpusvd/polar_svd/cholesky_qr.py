"""Shifted CholeskyQR3 of one tall matrix, in float64: the QR of a tall A before QDWH
(driver.py) and of the stacked [√c·X; I] of QDWH's QR step (qdwh.py) on the GPU.

Fukaya, Kannan, Nakatsukasa, Yamamoto & Yanagisawa, *Shifted Cholesky QR for computing
the QR factorization of ill-conditioned matrices*, SIAM J. Sci. Comput. 42(1), 2020,
Algorithm 4.2: one Cholesky QR of the Gram matrix shifted by s = 11·(m·n + n(n + 1))·u·‖A‖²
(here ‖A‖_F², an upper bound), then two plain ones. Where Householder QR is a chain of
panel factorizations, each pass is a Gram product, a Cholesky factorization and a
triangular solve or a GEMM, with one host synchronization in all. The batched engine's
twin for stacks is :mod:`gpusvd.batched.cholesky_qr`.
"""

import numpy as np
import scipy.linalg

from .._core.backend import scipy_linalg
from ..batched.cholesky_qr import PLAIN_PASSES
from ..batched.cholesky_qr import shift as fknyy_shift

# Shifted CholeskyQR3's Q is accepted when the Gram matrix of its last pass is within
# this of I in the Frobenius norm: CholeskyQR of a Q_k with ‖Q_kᴴQ_k − I‖ ≤ 0.1 (κ(Q_k)² ≤
# 1.25) is orthonormal to O(u) (Yamamoto et al. 2015), and a rank-deficient A, whose Q₁ is
# singular, shows here as a large or non-finite deviation. Where the shifted pass's Q₁ is
# within it already (κ(A) up to about 1e3 at 100000 × 1000 in float64), the second pass
# is the last: CholeskyQR2 after the shift, one Gram product and one GEMM fewer.
ACCEPT = 0.1
# Float64 input: the second pass multiplies by the explicit L₂⁻ᴴ (a GEMM) instead of
# solving when ‖Q₁ᴴQ₁ − I‖_F is at most this, so κ(L₂) = κ(Q₁) ≤ √3 and the product's
# error, about n·u·κ(L₂), is a solve's (well-conditioned A, e.g. tall data, have it).
GEMM_BELOW = 0.5


def _ct(x):
    return x.conj().T


def _solve_right_host(w, low):
    """W·L⁻ᴴ by a triangular solve (NumPy): backward stable row by row."""
    return _ct(scipy.linalg.solve_triangular(low, _ct(w), lower=True, check_finite=False))


def _solve_right_cuda(w, low):
    """W ← W·L⁻ᴴ in place by cuBLAS's right-side trsm (``w`` F-ordered, float64 or
    complex128): on the H100 12 ms at 100000 × 1000 where the left-side
    solve of Wᴴ (cupyx's solve_triangular) took 22."""
    import cupy
    from cupy_backends.cuda.libs import cublas

    w = cupy.asfortranarray(w)
    m, n = w.shape
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


def cholesky_qr(a, xp, *, with_r=True):
    """(Q, R) of a tall ``a`` (m×n, m > n) with Q economy, by shifted CholeskyQR3 (Fukaya,
    Kannan, Nakatsukasa, Yamamoto & Yanagisawa, SIAM J. Sci. Comput. 42(1), 2020,
    Algorithm 4.2) in float64 (complex128), returned in ``a``'s dtype; None where it
    fails (A numerically rank deficient in float64, or κ(A) past the shift's reach,
    ~1e11 at 100000 × 1000), for Householder QR to take over. R is None without
    ``with_r``.

    Each pass is a Gram product, a Cholesky factorization L·Lᴴ and W ← W·L⁻ᴴ, with one
    host synchronization in all, where Householder QR of a tall matrix is a chain of panel
    factorizations. W·L⁻ᴴ is a GEMM with the explicit inverse where that is accurate
    enough: its error, about n·u₆₄·κ(L), is at most √(n·u₆₄/(11·m)) ≈ 3e-9 after the
    shift (κ(L₁) ≤ 1/√(11·m·n·u₆₄)), far below float32's ε, and O(u₆₄) in the third pass
    (κ(L₃) ≤ 1.1, ACCEPT). For float64 input the first pass solves instead (a triangular
    solve is backward stable row by row), and the second too unless ‖Q₁ᴴQ₁ − I‖_F ≤
    GEMM_BELOW. On the H100: 200000 × 256 float32 4.7 ms against
    Householder's 15.2; 100000 × 1000 float64 about 33 ms with two solves against 50.9.
    R = R₃·R₂·R₁ is upper triangular; A = Q·R to O(u·‖A‖).

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
    shift = fknyy_shift(m, n, xp.linalg.norm(w) ** 2) + np.finfo(np.float64).tiny
    sla = scipy_linalg(xp)
    eye = xp.eye(n, dtype=wide)
    factors, deviation = [], np.inf
    try:
        for step in range(1 + PLAIN_PASSES):
            if step == 2 and float(deviation) <= ACCEPT:
                # Q₁ was within ACCEPT of orthonormal: the plain pass on it made Q₂
                # orthonormal to O(u) (ACCEPT's argument), and a third would not change it.
                break
            g = xp.ascontiguousarray(_ct(w) @ w)
            if step == 0:
                g.reshape(-1)[::n + 1] += shift
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
