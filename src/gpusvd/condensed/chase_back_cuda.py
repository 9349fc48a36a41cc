"""One wavefront step of chase_back.py on the GPU: two strided-batched cuBLAS GEMMs on the
rows of C in place.

A step updates ``count`` disjoint row windows of C (C-ordered, n + g + b rows of m),
window i starting at row r0 + i·(g + b) and ``span`` = b + g − 1 rows long, each by its
group's block reflector: C_i ← C_i − V_i·(W_i·C_i). ``cupy.matmul`` on the strided batch
view copies it, makes the product and its difference as temporaries, and writes back:
about five passes over the rows a step touches, and a step touches up to all of C. Read
column-major, the C-ordered rows are the columns of Cᵀ (leading dimension m), so
Cᵢᵀ ← Cᵢᵀ − (Cᵢᵀ·Wᵢᵀ)·Vᵢᵀ is two ``gemmStridedBatched`` calls on Cᵀ as it lies: X ← Cᵀ·Wᵀ
(m × g per window), then Cᵀ −= X·Vᵀ with β = 1: three passes. V_i (span × g) and W_i
(g × span), C-ordered in chase_back's ``vs`` and ``wy``, are read as they lie. The
NumPy twin is chase_back's ``_step_host``.
"""

import numpy as np

from .band_cuda import _OPS, _PREFIX, _SCALARS


def wavefront_step(work, r0, count, span, period, vs, wy, first, stride):
    """Windows i < ``count`` of ``work`` (rows r0 + i·period …, ``span`` long) ←
    window − vs[g_i]·(wy[g_i]·window), g_i = first + i·stride (chase_back's groups)."""
    import cupy
    from cupy.cuda import cublas

    m = work.shape[1]
    g = wy.shape[1]
    if m == 0:
        return
    item = work.itemsize
    if not (work.flags.c_contiguous and wy.flags.c_contiguous and vs.flags.c_contiguous):
        raise ValueError("wavefront_step reads C-ordered work, vs and wy")
    x = cupy.empty((count, g, m), work.dtype)
    prefix = _PREFIX[np.dtype(work.dtype)]
    one, subtract = _SCALARS[np.dtype(work.dtype)][False], _SCALARS[np.dtype(work.dtype)][True]
    handle = cupy.cuda.device.get_cublas_handle()
    cublas.setStream(handle, cupy.cuda.get_current_stream().ptr)
    cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
    batched = getattr(cublas, prefix + "gemmStridedBatched")
    c_ptr = work.data.ptr + r0 * m * item
    # X_i (m × g) = C_iᵀ (m × span, ld m) · W_iᵀ (span × g: wy's row-major g × span, ld span)
    batched(handle, _OPS["N"], _OPS["N"], m, g, span,
            one.ctypes.data, c_ptr, m, period * m,
            wy.data.ptr + first * g * span * item, span, stride * g * span,
            one.ctypes.data + one.itemsize, x.data.ptr, m, g * m, count)
    # C_iᵀ ← C_iᵀ − X_i · V_iᵀ (V_iᵀ: vs's row-major span × g read column-major, ld g)
    batched(handle, _OPS["N"], _OPS["N"], m, span, g,
            subtract.ctypes.data, x.data.ptr, m, g * m,
            vs.data.ptr + first * span * g * item, g, stride * span * g,
            subtract.ctypes.data + subtract.itemsize, c_ptr, m, period * m, count)
