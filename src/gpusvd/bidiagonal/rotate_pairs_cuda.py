"""The GPU twin of deflation's column rotations in the bidiagonal divide and conquer
(:func:`gpusvd.bidiagonal.dc_svd._rotate_host`): the launcher of
``kernels/rotate_pairs.cu``, one thread per row through every rotation in order.

Whole-column CuPy operations (``dc_svd._rotate_columns``) cost six launches per
rotation, and a merge of clustered values deflates by rotation up to k − 1 times; here a
merge's rotations are one launch.
"""

import numpy as np

from .._core import kernels

_KERNEL_FILE = "bidiagonal/kernels/rotate_pairs.cu"
_THREADS = 256
_MAX_BLOCKS = 4096  # a grid-stride loop past them


def rotate_pairs(q, pairs, cs):
    """Columns p, r of the column-major CuPy view ``q`` ← (c·q_p + s·q_r, c·q_r − s·q_p)
    for each row (p, r) of ``pairs`` and (c, s) of ``cs``, in order: host arrays, or
    C-contiguous CuPy arrays of int64 and of q's dtype (one copy for many calls)."""
    import cupy

    count = len(pairs)
    rows = q.shape[0]
    if count == 0 or rows == 0:
        return
    item = q.itemsize
    if q.strides[0] != item:
        raise ValueError("rotate_pairs needs a column-major q (Fortran order or a view of it)")
    kernel = kernels.get_kernel(_KERNEL_FILE, f"rotate_pairs<{kernels.CTYPE[q.dtype]}>")
    if not isinstance(pairs, cupy.ndarray):
        pairs = cupy.asarray(np.ascontiguousarray(pairs, np.int64))
    if not isinstance(cs, cupy.ndarray):
        cs = cupy.asarray(np.ascontiguousarray(cs, q.dtype))
    blocks = min((rows + _THREADS - 1) // _THREADS, _MAX_BLOCKS)
    kernel((blocks,), (_THREADS,), (q, np.int64(rows), np.int64(q.strides[1] // item), pairs,
                                    cs, np.int64(count)))
