"""Golub–Reinsch SVD of one matrix (Lahabar & Narayanan, papers 000/004).

1. Bidiagonalization A = Q·B·Pᴴ by blocked Householder transformations (Alg. 2), on the
   device that holds A.
2. Singular vectors of the upper bidiagonal B by the implicitly shifted QR of Demmel and
   Kahan (Alg. 3) on the host; the iteration emits its rotations in chunks. Its singular
   values are replaced by those of dqds, computed on another host thread meanwhile (see
   :func:`_svd_bidiagonal`).
3. The rotations applied to X = I and Y = I (Alg. 4, 5), by a Numba kernel on the CPU or
   a CUDA kernel on the GPU while the host computes the next chunk, so B = X·Σ·Yᵀ.
4. U = Q·X and Vᴴ = (P·Y)ᴴ by blocked back-transformation (matrix products).

Complex A is bidiagonalized as by LAPACK's zgebrd (on the GPU by the same panel kernel,
instantiated for complex), with complex reflectors that leave B real: steps 2 and 3 are
then the real ones, X and Y real, and only step 4 is complex, as in zgesvd.

For m >= 1.6·n (dgesvd's crossover) A = Q_R·R is computed first and R takes steps 1-4;
then U = Q_R·U_R. Paper 000 bidiagonalizes tall matrices directly; the QR first removes
most of the bidiagonalization's memory-bound matrix–vector traffic there.

Like LAPACK's dgesvd, A is first scaled by a power of two into the range where the
bidiagonalization cannot overflow or lose the smallest entries, and Σ is scaled back.
A wide matrix is decomposed through its conjugate transpose.

The two-stage reduction can replace step 1 (``reduction``: condensed/driver.py, dense →
band by GEMMs, band → bidiagonal by bulge chasing, then a values solver, or with vectors
divide and conquer on the bidiagonal and blocked back-transformations); with
``reduction="auto"`` values only take it from min(m, n) ≥ a tunable per device, and
vectors for moderate sizes on the CPU (:func:`choose_reduction`; the tunables say what
measured them).
"""

import math

import numpy as np

from .._core import profile, tunables, validation
from .._core.backend import to_host
from .._core.scaling import safe_scale
from ..bidiagonal.dqds import bidiagonal_singular_values
from ..bidiagonal.qr_svd import bidiagonal_svd
from ..condensed.driver import two_stage_singular_values, two_stage_svd
from .bidiagonalize import _ct, apply_p, apply_q, bidiagonalize


# dgesvd's crossover (LAPACK ILAENV ispec 6: MNTHR = 1.6·min(m, n)): from m >= 1.6·n on, a
# QR decomposition first makes the bidiagonalization n×n instead of m×n.
_QR_FIRST_RATIO = 1.6

# The options of method="gr" beyond svd's arguments, and the values of ``reduction``.
OPTIONS = ("reduction",)
REDUCTIONS = ("auto", "one-stage", "two-stage")

# The range [low, high) of min(m, n) in which reduction="auto" takes the two-stage
# reduction, for values only and with vectors, by the array namespace's name (the
# tunables say what measured them).
_TWO_STAGE_VALUES_RANGE = {"numpy": lambda t: (t.two_stage_values_min_n_cpu, math.inf),
                           "cupy": lambda t: (t.two_stage_values_min_n_gpu, math.inf)}
_TWO_STAGE_VECTORS_RANGE = {
    "numpy": lambda t: (t.two_stage_vectors_min_n_cpu, t.two_stage_vectors_max_n_cpu),
    "cupy": lambda t: (t.two_stage_vectors_min_n_gpu, math.inf)}


def check_options(options, *, compute_uv, what):
    """The options of ``method="gr"`` (``reduction``) as keyword arguments of :func:`svd`;
    ``ValueError`` for an unknown option or value."""
    validation.check_no_options({k: v for k, v in options.items() if k not in OPTIONS},
                                what=what)
    reduction = options.get("reduction", "auto")
    validation.check_choice("reduction", reduction, REDUCTIONS)
    return {"reduction": reduction}


def choose_reduction(reduction, n, compute_uv, xp):
    """The reduction ``"one-stage"`` or ``"two-stage"`` that runs for ``reduction`` on
    matrices with min(m, n) = ``n`` on ``xp``: "auto" takes for values only the two-stage
    one from n ≥ the device's tunable (``two_stage_values_min_n_cpu`` / ``_gpu``), and
    with vectors for n in [``two_stage_vectors_min_n_cpu``, ``…_max_n_cpu``) on the CPU and
    from ``two_stage_vectors_min_n_gpu`` on the GPU."""
    if reduction != "auto":
        return reduction
    low, high = (_TWO_STAGE_VECTORS_RANGE if compute_uv
                 else _TWO_STAGE_VALUES_RANGE)[xp.__name__](tunables.get())
    return "two-stage" if low <= n < high else "one-stage"


def _svd_tall(a, xp, dtype, full_matrices, compute_uv):
    """SVD of an m×n matrix with m >= n >= 1, all of whose entries are finite."""
    m, n = a.shape
    anrm = float(xp.abs(a).max())
    scale = safe_scale(anrm, dtype)
    work = a * dtype.type(scale) if scale != 1.0 else a
    if m >= _QR_FIRST_RATIO * n:
        return _svd_qr_first(work, scale, xp, dtype, full_matrices, compute_uv)
    return _svd_bidiagonal(work, scale, xp, dtype, full_matrices, compute_uv)


def _svd_qr_first(work, scale, xp, dtype, full_matrices, compute_uv):
    """A = Q·R first, then the SVD of the n×n R: U = Q·U_R (as dgesvd does for m ≫ n).

    The bidiagonalization then reduces n×n instead of m×n: 2mn² − 2n³/3 flops for the
    (GEMM-rich, blocked) QR plus 8n³/3 for R, against 4mn² − 4n³/3, and its memory-bound
    matrix–vector products read (16/3)·n³ instead of about 16·m·n² bytes (in float64).
    """
    m, n = work.shape
    with profile.phase("qr", xp):
        if compute_uv:
            q, r = xp.linalg.qr(work, mode="complete" if full_matrices else "reduced")
        else:
            r = xp.linalg.qr(work, mode="r")
        r = xp.asfortranarray(xp.triu(r[:n]))
    u_r, s, vh = _svd_bidiagonal(r, scale, xp, dtype, False, compute_uv)
    if not compute_uv:
        return None, s, None
    with profile.phase("back_transform", xp):
        if full_matrices:
            u = q.copy()
            u[:, :n] = q[:, :n] @ u_r
        else:
            u = q @ u_r
    return xp.ascontiguousarray(u), s, vh


def _svd_bidiagonal(work, scale, xp, dtype, full_matrices, compute_uv):
    """Steps 1-4 of the module docstring on the scaled m×n ``work`` (m >= n >= 1); the
    bidiagonal's SVD by bidiagonal/qr_svd.py (QR with rotations, dqds' values)."""
    m, n = work.shape
    real = np.finfo(dtype).dtype  # of B, Σ, X and Y
    with profile.phase("bidiagonalize", xp):
        bd = bidiagonalize(work, block_size=tunables.get().bidiag_block_size)
        d = np.asarray(to_host(bd.d), np.float64)
        e = np.asarray(to_host(bd.e), np.float64)
    with profile.phase("bidiagonal_qr", xp):
        if not compute_uv:
            # dqds, as LAPACK does for values only: ~2.4x faster than the QR, as accurate
            s_host = bidiagonal_singular_values(d, e)
            return None, xp.asarray((s_host / scale).astype(real)), None
        x, y, s_host = bidiagonal_svd(d, e, xp, real)
    s = xp.asarray((s_host / scale).astype(real))
    with profile.phase("back_transform", xp):
        k = m if full_matrices else n
        c = xp.zeros((m, k), dtype=dtype, order="F")
        c[:n, :n] = x
        if full_matrices and m > n:
            c[n:, n:] = xp.eye(m - n, dtype=dtype)
        u = apply_q(bd, c)
        v = apply_p(bd, y.astype(dtype, copy=False))
    return xp.ascontiguousarray(u), s, xp.ascontiguousarray(_ct(v))


def _svd_empty(m, n, xp, dtype, full_matrices):
    s = xp.zeros(0, dtype=np.finfo(dtype).dtype)
    u = xp.eye(m, dtype=dtype) if full_matrices else xp.zeros((m, 0), dtype=dtype)
    vh = xp.eye(n, dtype=dtype) if full_matrices else xp.zeros((0, n), dtype=dtype)
    return u, s, vh


def svd(a, xp, *, full_matrices, compute_uv, overwrite_a, reduction="auto"):
    """Golub–Reinsch SVD of one finite matrix ``a`` (NumPy or CuPy) in its own dtype.

    Returns ``(U, S, Vh)`` (``U`` and ``Vh`` are ``None`` when ``compute_uv`` is false;
    ``S`` is of the real dtype). ``a`` is used as the workspace only when ``overwrite_a``
    is true. ``a`` is real or complex, on either device.

    ``reduction`` is how ``a`` is brought to bidiagonal form: ``"one-stage"``, the
    paper's blocked Householder bidiagonalization (steps 1-4 of the module docstring);
    ``"two-stage"``, dense → band → bidiagonal (:mod:`gpusvd.condensed.driver`);
    ``"auto"`` (default), :func:`choose_reduction`'s rule.

    Examples
    --------
    >>> z = np.array([[1.0, 2.0j], [0.0, 1.0]])
    >>> u, s, vh = svd(z, np, full_matrices=False, compute_uv=True, overwrite_a=False)
    >>> np.round(s, 6)                                    # 1 + √2 and √2 − 1
    array([2.414214, 0.414214])
    >>> bool(np.allclose(u * s @ vh, z))
    True
    >>> _, s2, _ = svd(z, np, full_matrices=False, compute_uv=False, overwrite_a=False,
    ...                reduction="two-stage")
    >>> bool(np.allclose(s2, s, rtol=0, atol=4 * 2 * np.finfo(float).eps * s[0]))
    True
    """
    reduction = check_options({"reduction": reduction}, compute_uv=compute_uv,
                              what="svd")["reduction"]
    m, n = a.shape
    dtype = a.dtype
    if m == 0 or n == 0:
        u, s, vh = _svd_empty(m, n, xp, dtype, full_matrices)
        return (u, s, vh) if compute_uv else (None, s, None)
    if choose_reduction(reduction, min(m, n), compute_uv, xp) == "two-stage":
        if compute_uv:
            return two_stage_svd(a, xp, full_matrices=full_matrices)
        return None, two_stage_singular_values(a, xp), None
    if m < n:
        # Aᴴ = U·Σ·Vh gives A = Vhᴴ·Σ·Uᴴ; the conjugate of complex A is a private copy.
        u, s, vh = svd(_ct(a), xp, full_matrices=full_matrices, compute_uv=compute_uv,
                       overwrite_a=overwrite_a or dtype.kind == "c", reduction="one-stage")
        return (None if vh is None else xp.ascontiguousarray(_ct(vh)), s,
                None if u is None else xp.ascontiguousarray(_ct(u)))
    work = a if overwrite_a and a.flags.f_contiguous else xp.array(a, order="F", copy=True)
    return _svd_tall(work, xp, dtype, full_matrices, compute_uv)
