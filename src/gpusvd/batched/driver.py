"""The SVD of a whole stack through its polar decompositions, in batched steps.

Higham & Papadimitriou, *A parallel algorithm for computing the polar decomposition*,
Parallel Comput. 20, 1994, §4, and Nakatsukasa & Higham, SIAM J. Sci. Comput. 35(3),
2013, Algorithm 5.1, as :mod:`gpusvd.polar_svd.driver` does for one matrix, here for every
matrix of a stack (batch, m, n) at once:

1. A = U_p·H for each matrix by the batched QDWH (:mod:`.qdwh`);
2. H = U_pᴴ·A = V·Σ·Vᴴ by one batched Hermitian eigensolver call (:mod:`.eigh`);
3. U = U_p·V, one batched GEMM.

Every step is a batched GEMM, Cholesky factorization, triangular solve or
eigensolver over the whole stack, so the number of launches does not grow with the
batch: no matrix-by-matrix loop (a cliff in time at some batch size would be a bug).

Shapes: a wide stack goes through its conjugate transposes. A tall matrix runs QDWH on
its m×n self (its steps cost O(m·n²), the estimates are on the n×n Gram matrix), not
through a QR first as the one-matrix driver does: a batched Householder QR does not
exist, and Cholesky QR of A itself would need A of full rank.

Each matrix is scaled by a power of two to max|A| in [1/2, 1) (exact), and the
iteration runs in float64 (complex128) for every input (:mod:`.qdwh` says why); H, its
eigendecomposition and U are in the input's dtype. Where U's columns are not
orthonormal (numerically rank-deficient input, :mod:`.qdwh`), U is replaced by the Q
factor of its QR factorization with R's signs, as :mod:`gpusvd.polar_svd.driver` does, for
those matrices only; ``full_matrices`` completes U that way for all.

A stack too large for the GPU's free memory is decomposed in chunks of matrices
(:func:`chunk_size`).
"""

import numpy as np

from .._core import profile, tunables
from .._core.backend import to_host
from ..jacobi.small_qr_cuda import stack_qr
from . import qdwh
from .eigh import eigh

# Columns of U with max |‖u_i‖ − 1| above this many √n·ε mark U_p a partial isometry,
# as in gpusvd.polar_svd.driver (ORTHONORMAL_TOL there).
COLUMN_NORM_TOL = 10.0
# Bytes of device memory per matrix entry of A that one matrix's decomposition uses at
# its peak: the float64 iterate and the QR step's stacked copy, its Q, the Gram
# matrices and the results (a count of the arrays alive at once, rounded up).
WORK_BYTES_PER_ENTRY = 96


def chunk_size(batch, m, n, xp):
    """Matrices per chunk: all of them on the CPU; on the GPU as many as fit in the share
    ``batched_memory_share`` of its free memory (at least one)."""
    if xp is np:
        return batch
    import cupy

    free, _ = cupy.cuda.runtime.memGetInfo()
    pool = cupy.get_default_memory_pool()
    free += pool.total_bytes() - pool.used_bytes()
    per_matrix = WORK_BYTES_PER_ENTRY * (m + n) * n
    share = tunables.get().batched_memory_share
    return max(1, min(batch, int(free * share) // per_matrix))


def _orthonormalized(u, xp, qcols):
    """Q of the Householder QR of each matrix of ``u`` (batch, m, k), ``qcols`` columns,
    each of the first k with the sign of R's diagonal (:func:`gpusvd.polar_svd.driver`)."""
    k = u.shape[2]
    q, r = stack_qr(u, xp, qcols)
    signs = xp.sign(xp.diagonal(r, axis1=1, axis2=2).real)
    signs = xp.where(signs == 0, 1, signs).astype(u.dtype)
    q[:, :, :k] *= signs[:, None, :]
    return q


def _decompose_tall(a, xp, *, full_matrices, compute_uv):
    """(U, S, Vh) of a stack (batch, m, n), m >= n >= 1, finite."""
    _, m, n = a.shape
    dtype = a.dtype
    eps = float(np.finfo(dtype).eps)
    with profile.phase("batched_scale", xp):
        a64, e = qdwh.unit_scaled(a, xp)
        y = a64.conj().swapaxes(-1, -2).copy()  # a new array: QDWH overwrites it
    uh, converged = qdwh.polar_factor(xp, y, eps)
    with profile.phase("batched_eigh", xp):
        h = xp.matmul(uh, a64)
        h = ((h + h.conj().swapaxes(-1, -2)) * 0.5).astype(dtype)
        lam, v = eigh(h, xp, vectors=compute_uv)
    real = np.finfo(dtype).dtype
    order = xp.argsort(-xp.abs(lam), axis=1)
    s = xp.ldexp(xp.take_along_axis(xp.abs(lam), order, axis=1).astype(np.float64),
                 e[:, None]).astype(real)
    if not compute_uv:
        return None, s, None
    with profile.phase("batched_u", xp):
        lam = xp.take_along_axis(lam, order, axis=1)
        v = xp.take_along_axis(v, order[:, None, :], axis=2)
        flip = xp.where(lam < 0, -1, 1).astype(dtype)[:, None, :]
        u = xp.matmul(uh.conj().swapaxes(-1, -2).astype(dtype), v * flip)
        deviation = xp.abs(xp.linalg.norm(u, axis=1) - 1).max(axis=1)
        fix = to_host(deviation > COLUMN_NORM_TOL * np.sqrt(n) * eps) | ~converged
        if full_matrices and m > n:
            u = _orthonormalized(u, xp, m)
        elif fix.any():
            index = xp.asarray(np.flatnonzero(fix))
            u[index] = _orthonormalized(u[index], xp, n)
    return u, s, v.conj().swapaxes(-1, -2)


def svd(a, xp, *, full_matrices, compute_uv):
    """SVD of each matrix of the finite stack ``a`` (batch, m, n), NumPy or CuPy, in
    batched steps (module docstring). ``a`` is not changed.

    Returns (U, S, Vh) stacks, U and Vh None without ``compute_uv``; S descending, of the
    real dtype of ``a``.

    Examples
    --------
    >>> a = np.array([[[3.0, 0.0], [4.0, 5.0]], [[1.0, 0.0], [0.0, 2.0]]])
    >>> u, s, vh = svd(a, np, full_matrices=False, compute_uv=True)
    >>> np.round(s ** 2, 10)
    array([[45.,  5.],
           [ 4.,  1.]])
    >>> bool(np.allclose((u * s[:, None, :]) @ vh, a))
    True
    """
    batch, m, n = a.shape
    if m < n:
        u, s, vh = svd(a.conj().swapaxes(-1, -2), xp, full_matrices=full_matrices,
                       compute_uv=compute_uv)
        if not compute_uv:
            return None, s, None
        return vh.conj().swapaxes(-1, -2), s, u.conj().swapaxes(-1, -2)
    step = chunk_size(batch, m, n, xp)
    if step >= batch:
        return _decompose_tall(a, xp, full_matrices=full_matrices, compute_uv=compute_uv)
    parts = [_decompose_tall(a[i:i + step], xp, full_matrices=full_matrices,
                             compute_uv=compute_uv) for i in range(0, batch, step)]
    s = xp.concatenate([p[1] for p in parts])
    if not compute_uv:
        return None, s, None
    return (xp.concatenate([p[0] for p in parts]), s,
            xp.concatenate([p[2] for p in parts]))
