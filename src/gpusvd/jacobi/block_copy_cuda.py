"""Gathers and scatters of whole block-columns on the GPU (``kernels/block_copy.cu``).

The blocked Jacobi method holds G and V transposed, so block-column b of width w is the
contiguous rows b·w … b·w + w − 1. These copy whole block-columns in one launch with
16-byte units, where CuPy's fancy indexing spends most of its time on per-element index
arithmetic. The CPU path of :mod:`.blocked` indexes with NumPy instead.
"""

import numpy as np

from .._core import kernels

_KERNEL_FILE = "jacobi/kernels/block_copy.cu"
_THREADS = 256
_WIDE = 16      # bytes per copy unit when a block-column's size allows (ulonglong2)


def _launch(src, dst, index, block_bytes, scatter):
    import cupy

    wide = block_bytes % _WIDE == 0
    unit = _WIDE if wide else 4
    units = block_bytes // unit
    kernel = kernels.get_kernel(_KERNEL_FILE,
                                "copy_blocks<ulonglong2>" if wide else "copy_blocks<unsigned int>")
    count = index.size
    if count == 0 or units == 0:
        return
    per_block = max(1, min(-(-units // _THREADS), 64))
    kernel((per_block, count), (_THREADS,),
           (src, dst, cupy.ascontiguousarray(index, dtype=np.int32), np.int64(units),
            np.int32(scatter)))


def gather_blocks(a, index, width):
    """``a``'s block-columns ``index`` (rows index[i]·width …) as (len(index)·width, row).

    ``a`` is a C-contiguous (blocks·width, row) CuPy array, ``index`` a CuPy int array.
    """
    import cupy

    length = a.shape[1]
    out = cupy.empty((index.size * width, length), a.dtype)
    _launch(a, out, index, width * length * a.itemsize, 0)
    return out


def scatter_blocks(a, index, width, values):
    """Write ``values`` (len(index)·width, row) into ``a``'s block-columns ``index``."""
    import cupy

    values = cupy.ascontiguousarray(values, dtype=a.dtype)
    _launch(values, a, index, width * a.shape[1] * a.itemsize, 1)
