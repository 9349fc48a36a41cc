"""Stage 1's kernels on CuPy views, in place: cuBLAS GEMM, cuSOLVER geqrf, and the per-panel
V and T of kernels/wy.cu.

band.py's trailing updates are sub-blocks of the column-major matrix being reduced,
``a[k:, j:]``: columns contiguous, leading dimension m. ``cupy.matmul`` on such a view makes
a contiguous copy of it, and ``c -= x @ y`` adds a temporary the size of c and a third pass,
so each step of the reduction moved about five trailing-matrix-sized arrays where three
suffice (NOTES.md, "Stage 1's time": 0.25 s of trailing updates at n = 8192, b = 64,
several times the bytes of the GEMMs alone). Here the views go to cuBLAS as they lie
(pointer, leading dimension), with β = 1 for the subtraction; the panel QR runs on the
panel's own view (cuSOLVER geqrf, lda = m) instead of ``cupy.linalg.qr``'s transposed copy
and the copy back. V and T of each panel come from one launch each (kernels/wy.cu, which
says why). The NumPy twins are band.py's ``_gemm_host``, ``_geqrf_host``, ``_unit_lower``
and ``_wy_factor_host``.
"""

import numpy as np

from .._core import kernels
from . import compact_wy

_KERNEL_FILE = "condensed/kernels/wy.cu"
# Threads per block of unit_lower, and its most blocks (a grid-stride loop past them).
_THREADS = 256
_MAX_BLOCKS = 4096
# larft_gram gives each row of T a thread of one block: at most this many reflectors.
_MAX_REFLECTORS = 1024

# cuBLAS's cublasOperation_t for op(X) = X, Xᵀ, Xᴴ.
_OPS = {"N": 0, "T": 1, "C": 2}
# The transpose of op(X) when X is read through its transpose (a row-major operand is its
# transpose in column-major storage): Xᵀ = op_T(Xᵀ_stored), X = op_N(Xᵀ_stored).
_FLIP = {"N": "T", "T": "N"}
_PREFIX = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
           np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}
# α and β on the host (pointer mode host), by dtype: one = (1, 0), subtract = (−1, 1).
_SCALARS = {dt: {False: np.array([1, 0], dt), True: np.array([-1, 1], dt)} for dt in _PREFIX}


def _column_major(x, op):
    """(x or a copy, op, leading dimension) so that x is column-major with op(x) unchanged."""
    import cupy

    item = x.itemsize
    rows, cols = x.shape
    if op == "C" and x.dtype.kind != "c":
        op = "T"
    if x.strides[0] == item and (cols == 1 or x.strides[1] >= rows * item):
        return x, op, max(x.strides[1] // item, rows, 1)
    if op in _FLIP and x.strides[1] == item and (rows == 1 or x.strides[0] >= cols * item):
        return x, _FLIP[op], max(x.strides[0] // item, cols, 1)
    x = cupy.asfortranarray(x)
    return x, op, max(rows, 1)


def gemm_into(c, a, b, *, op_a="N", op_b="N", subtract=False):
    """c ← op(a)·op(b), or c ← c − op(a)·op(b) with ``subtract``, in place on the view c.

    ``c`` must be column-major (a column slice of a Fortran-ordered array); ``a`` and ``b``
    are read as they lie when column- or row-major, else through a copy. op ∈ N, T, C."""
    import cupy
    from cupy.cuda import cublas

    rows, cols = c.shape
    inner = a.shape[1] if op_a == "N" else a.shape[0]
    if rows == 0 or cols == 0:
        return c
    if c.strides[0] != c.itemsize:
        raise ValueError("gemm_into writes a column-major view only")
    ldc = max(c.strides[1] // c.itemsize, rows) if cols > 1 else max(rows, 1)
    if inner == 0:
        if not subtract:
            c.fill(0)
        return c
    a, op_a, lda = _column_major(a, op_a)
    b, op_b, ldb = _column_major(b, op_b)
    scalars = _SCALARS[np.dtype(c.dtype)][subtract]
    handle = cupy.cuda.device.get_cublas_handle()
    cublas.setStream(handle, cupy.cuda.get_current_stream().ptr)
    cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
    gemm = getattr(cublas, _PREFIX[np.dtype(c.dtype)] + "gemm")
    gemm(handle, _OPS[op_a], _OPS[op_b], rows, cols, inner,
         scalars.ctypes.data, a.data.ptr, lda, b.data.ptr, ldb,
         scalars.ctypes.data + scalars.itemsize, c.data.ptr, ldc)
    return c


def geqrf_into(panel):
    """LAPACK's geqrf on the column-major view ``panel`` in place (R on and above the
    diagonal, the Householder vectors below it); returns τ."""
    import cupy
    from cupy.cuda import cusolver

    rows, cols = panel.shape
    if panel.strides[0] != panel.itemsize:
        raise ValueError("geqrf_into factors a column-major view only")
    lda = max(panel.strides[1] // panel.itemsize, rows) if cols > 1 else max(rows, 1)
    tau = cupy.empty(min(rows, cols), panel.dtype)
    if tau.size == 0:
        return tau
    prefix = _PREFIX[np.dtype(panel.dtype)]
    handle = cupy.cuda.device.get_cusolver_handle()
    cusolver.setStream(handle, cupy.cuda.get_current_stream().ptr)
    size = getattr(cusolver, prefix + "geqrf_bufferSize")(handle, rows, cols,
                                                          panel.data.ptr, lda)
    work = cupy.empty(max(size, 1), panel.dtype)
    info = cupy.empty(1, np.int32)
    getattr(cusolver, prefix + "geqrf")(handle, rows, cols, panel.data.ptr, lda,
                                        tau.data.ptr, work.data.ptr, size, info.data.ptr)
    return tau


def unit_lower(h):
    """V of the column-major view ``h``: its strictly lower part with ones on the diagonal,
    as a new column-major array (band.py's ``_unit_lower``)."""
    import cupy

    rows, cols = h.shape
    out = cupy.empty((rows, cols), h.dtype, order="F")
    if out.size == 0:
        return out
    h, op, ld = _column_major(h, "N")
    if op != "N":  # a row-major h: the kernel reads columns
        h, ld = cupy.asfortranarray(h), max(rows, 1)
    kernel = kernels.get_kernel(_KERNEL_FILE, f"unit_lower<{kernels.CTYPE[h.dtype]}>")
    blocks = min(-(-out.size // _THREADS), _MAX_BLOCKS)
    kernel((blocks,), (_THREADS,), (h, np.int64(ld), np.int32(rows), np.int32(cols), out))
    return out


def wy_factor_into(v, tau, out):
    """T of the compact WY form of V and τ (:func:`.compact_wy.wy_factor`) into the row-major
    view ``out`` (r × r), from VᴴV by one launch of the dlarft recurrence."""
    import cupy

    r = tau.shape[0]
    if r == 0:
        return out
    if r > _MAX_REFLECTORS or out.strides[1] != out.itemsize:
        out[...] = compact_wy.wy_factor(v, tau)
        return out
    gram = cupy.empty((r, r), v.dtype, order="F")
    gemm_into(gram, v, v, op_a="C")
    kernel = kernels.get_kernel(_KERNEL_FILE, f"larft_gram<{kernels.CTYPE[v.dtype]}>")
    kernel((1,), (r,), (gram, np.int32(r), cupy.ascontiguousarray(tau), np.int32(r), out,
                        np.int32(out.strides[0] // out.itemsize)))
    return out
