"""Apply a rotation log of the bidiagonal QR to the columns of X or Y (CPU kernel).

Paper 000, Algorithms 4 and 5 apply one QR sweep's rotations to the rows of Yᵀ (and the
columns of X), forward or backward, parallel over the entries of a row. Here every row
of x is independent (a rotation of columns i, i+1 mixes only entries of the same row), so
the kernel is parallel over blocks of rows and takes each block through *all* sweeps of
the chunk while it sits in cache — one pass over x per chunk instead of one per sweep. The GPU
twin is ``kernels/apply_rotations.cu``; both do the same floating-point operations in the
same order, so they agree to rounding (no fused multiply-add here: Numba does not
contract without fastmath).

The log's format is documented in :class:`gpusvd.bidiagonal.qr.BidiagonalQR`.
"""

import numba
import numpy as np

from .._core.threads import single_threaded_blas


# Rows handled together: each (c, s) is loaded once per block, and the block is held
# transposed (n × _ROW_BLOCK) so that one rotation updates _ROW_BLOCK contiguous rows with
# SIMD. 32 was 3-5× faster than one row at a time and than 16 rows, for n = 1000-3000 in
# float32 and float64 (AMD EPYC, 2 threads); 64 was no better for float64.
_ROW_BLOCK = 32


@numba.njit(parallel=True, cache=True)
def _apply_rotations(x, sweeps, cs):
    rows, n = x.shape
    nsweeps = sweeps.shape[0]
    offsets = np.empty(nsweeps, np.int64)
    total = 0
    for t in range(nsweeps):
        offsets[t] = total
        total += sweeps[t, 1]
    for block in numba.prange((rows + _ROW_BLOCK - 1) // _ROW_BLOCK):
        r0 = block * _ROW_BLOCK
        nr = min(_ROW_BLOCK, rows - r0)
        buf = np.zeros((n, _ROW_BLOCK), x.dtype)  # padding rows stay zero
        for i in range(n):
            for r in range(nr):
                buf[i, r] = x[r0 + r, i]
        for t in range(nsweeps):
            lo, count, off = sweeps[t, 0], sweeps[t, 1], offsets[t]
            # Alg. 4 (forward) or Alg. 5 (backward) on the rows of the block.
            first, stop, step = (0, count, 1) if sweeps[t, 2] == 1 else (count - 1, -1, -1)
            for j in range(first, stop, step):
                c, s = cs[off + j, 0], cs[off + j, 1]
                for r in range(_ROW_BLOCK):
                    a, b = buf[lo + j, r], buf[lo + j + 1, r]
                    buf[lo + j, r] = c * a + s * b
                    buf[lo + j + 1, r] = -s * a + c * b
        for i in range(n):
            for r in range(nr):
                x[r0 + r, i] = buf[i, r]


def apply_rotations(x, sweeps, cs):
    """Apply a chunk of the rotation log to the columns of ``x``, in place.

    Parameters
    ----------
    x : ndarray
        C-contiguous (rows, n) float32 or float64 array.
    sweeps : ndarray
        int64 (k, 3): rows (lo, count, direction) of the log.
    cs : ndarray
        (sum of counts, 2) of (c, s), already of ``x.dtype``.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.eye(3)
    >>> apply_rotations(x, np.array([[0, 2, 1]]), np.array([[0.0, 1.0], [0.0, 1.0]]))
    >>> x
    array([[0., 0., 1.],
           [1., 0., 0.],
           [0., 1., 0.]])
    """
    if x.ndim != 2 or x.dtype not in (np.float32, np.float64) or not x.flags.c_contiguous:
        raise ValueError("x must be a C-contiguous 2-D float32 or float64 array")
    if cs.dtype != x.dtype or cs.ndim != 2 or cs.shape[1] != 2:
        raise ValueError(f"cs must be a (total, 2) array of x's dtype {x.dtype}")
    sweeps = np.asarray(sweeps, dtype=np.int64).reshape(-1, 3)
    lo, count, direction = sweeps.T
    if len(sweeps) and (lo.min() < 0 or count.min() < 0 or (lo + count).max() >= max(x.shape[1], 1)
                        or not np.isin(direction, (-1, 1)).all()):
        raise ValueError("sweeps must hold rows (lo, count, ±1) with 0 <= lo, lo + count < n")
    if count.sum() > cs.shape[0]:
        raise ValueError(f"cs has {cs.shape[0]} rows, the sweeps need {count.sum()}")
    if x.size and len(sweeps):
        with single_threaded_blas():  # the cores to Numba's threads (_core/threads.py)
            _apply_rotations(x, sweeps, np.ascontiguousarray(cs))
