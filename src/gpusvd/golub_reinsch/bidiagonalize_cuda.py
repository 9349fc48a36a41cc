"""The GPU twin of ``bidiagonalize._reduce_panel``: one panel in one cooperative kernel.

``kernels/bidiagonalize_panel.cu`` does the nb column and row steps of LAPACK's dlabrd
(paper 000, Alg. 2, steps 3–19) with four grid-wide barriers per column instead of the
~60 CuPy launches the array-namespace version needs, which on a GPU are pure launch
overhead. The trailing update stays two GEMMs in :func:`bidiagonalize.bidiagonalize`.
Complex panels (zlabrd) run the same kernel on the two-member complex of _core/cuda/complex.cuh.
"""

import numpy as np

from .._core import kernels

_KERNEL_FILE = "golub_reinsch/kernels/bidiagonalize_panel.cu"
_THREADS = 256          # PANEL_THREADS in the kernel
_BLOCKS_PER_SM = 2      # __launch_bounds__(PANEL_THREADS, 2): all blocks stay resident
_SCALARS = 8            # S_END in the kernel
_CHUNK_MIN_COLUMNS = 64  # a column chunk of the a·u product is at least this wide


def _column_major_ld(v):
    """Leading dimension of a column-major view, or ValueError."""
    item = v.dtype.itemsize
    if v.strides[0] != item:
        raise ValueError("the GPU panel kernel needs column-major (Fortran-ordered) arrays")
    return v.strides[1] // item if v.ndim == 2 and v.shape[1] > 1 else max(v.shape[0], 1)


def reduce_panel(a, nb, x, y, d, e, tauq, taup):
    """Reduce the first nb columns and rows of the M×N CuPy view ``a`` (see the NumPy twin).

    Same contract as ``bidiagonalize._reduce_panel``: ``x`` (M×nb) and ``y`` (N×nb) are
    column-major scratch, the reflectors' unit entries are left on the diagonal and the
    superdiagonal, and the trailing update is owed by the caller. Needs N > nb.
    """
    import cupy

    m, n = a.shape
    lda, ldx, ldy = _column_major_ld(a), _column_major_ld(x), _column_major_ld(y)
    kernel = kernels.get_kernel(_KERNEL_FILE,
                                f"bidiagonalize_panel<{kernels.CTYPE[a.dtype]}>")
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    grid = _BLOCKS_PER_SM * sms
    tiles = -(-m // _THREADS)
    nchunks = int(max(1, min(-(-grid // tiles), n // _CHUNK_MIN_COLUMNS)))
    partials = 4 * grid * -(-8 // a.dtype.itemsize)  # 4 grid doubles, in a's elements
    work = cupy.empty(_SCALARS + partials + n + 3 * nb + nchunks * m, dtype=a.dtype)
    kernel((grid,), (_THREADS,),
           (a, np.int64(lda), np.int32(m), np.int32(n), np.int32(nb), x, np.int64(ldx), y,
            np.int64(ldy), d, e, tauq, taup, work, np.int32(nchunks)),
           shared_mem=4 * nb * a.dtype.itemsize)
