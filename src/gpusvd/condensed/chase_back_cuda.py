"""One wavefront step of chase_back.py on the GPU, on the rows of C in place: float64 by
one launch of ``kernels/chase_back.cu`` (the tensor cores, each window's tile read and
written once; the kernel's comment says why), other dtypes and shapes by two
strided-batched cuBLAS GEMMs.

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

from typing import NamedTuple

import numpy as np

from .._core import kernels
from .band_cuda import _OPS, _PREFIX, _SCALARS

_KERNEL_FILE = "condensed/kernels/chase_back.cu"
_TILE = 64           # STEP_TILE: columns of C a tile
_TILES = 4           # STEP_TILES: tiles a block
_MAX_ROWS = 64       # STEP_MAX_ROWS: span <= this
_THREADS = 256       # STEP_THREADS
_PAD, _FRAG_PAD = 8, 4
_MAX_G = 32          # STEP_MAX_G


class Operand(NamedTuple):
    """A batch of column-major matrices in one buffer: element (r, c) of matrix i at
    ``offset + i·stride + r + c·ld`` (in elements)."""

    buffer: str   # "work", "vs", "wy" or "x"
    offset: int
    ld: int
    stride: int


class StridedGemm(NamedTuple):
    """C_i ← α·A_i·B_i + β·C_i for i < count (cublas<t>gemmStridedBatched, no transposes)."""

    m: int
    n: int
    k: int
    a: Operand
    b: Operand
    c: Operand
    subtract: bool   # (α, β) = (−1, 1), else (1, 0)


def plan(m, r0, count, span, period, g, first, stride):
    """The two GEMMs of one step (module docstring) on ``work`` (C-ordered rows of m),
    ``vs``, ``wy`` (C-ordered groups) and ``x`` (count × g × m)."""
    window = Operand("work", r0 * m, m, period * m)
    x = Operand("x", 0, m, g * m)
    # X_i (m × g) = C_iᵀ (m × span) · W_iᵀ (wy's row-major g × span read column-major)
    first_gemm = StridedGemm(m, g, span, window, Operand("wy", first * g * span, span,
                                                         stride * g * span), x, False)
    # C_iᵀ ← C_iᵀ − X_i · V_iᵀ (vs's row-major span × g read column-major, ld g)
    second_gemm = StridedGemm(m, span, g, x, Operand("vs", first * span * g, g,
                                                     stride * span * g), window, True)
    return first_gemm, second_gemm


def fused_shared_bytes(span, g):
    """Dynamic shared memory of the fused step (the kernel's layout): the tile, −V and W;
    float64.

    Examples
    --------
    >>> fused_shared_bytes(63, 32)
    72704
    """
    rows = -(-span // 8) * 8
    return 8 * (rows * (_TILE + _PAD) + rows * (g + _FRAG_PAD) + g * (rows + _FRAG_PAD))


def fused(dtype, span, g):
    """Whether the fused kernel takes a step: float64, g a multiple of 8 up to 32 and a
    window of at most 64 rows (b = g = 32, the default: 71 KiB of shared memory, three
    blocks an SM).

    Examples
    --------
    >>> import numpy as np
    >>> fused(np.float64, 63, 32), fused(np.float32, 63, 32), fused(np.float64, 95, 64)
    (True, False, False)
    """
    return (np.dtype(dtype) == np.float64 and g % 8 == 0 and 0 < g <= _MAX_G
            and span <= _MAX_ROWS)


def wavefront_step(work, r0, count, span, period, vs, wy, first, stride):
    """Windows i < ``count`` of ``work`` (rows r0 + i·period …, ``span`` long) ←
    window − vs[g_i]·(wy[g_i]·window), g_i = first + i·stride (chase_back's groups):
    the fused kernel where :func:`fused` holds, else :func:`cublas_step`."""
    if work.shape[1] == 0:
        return
    if not (work.flags.c_contiguous and wy.flags.c_contiguous and vs.flags.c_contiguous):
        raise ValueError("wavefront_step reads C-ordered work, vs and wy")
    step = fused_step if fused(work.dtype, span, wy.shape[1]) else cublas_step
    step(work, r0, count, span, period, vs, wy, first, stride)


def fused_step(work, r0, count, span, period, vs, wy, first, stride):
    """:func:`wavefront_step` by one launch of ``kernels/chase_back.cu`` (float64)."""
    m, g = work.shape[1], wy.shape[1]
    shared = fused_shared_bytes(span, g)
    kernel = kernels.get_kernel(_KERNEL_FILE, "wavefront_step<double>")
    if kernel.max_dynamic_shared_size_bytes < shared:
        kernel.max_dynamic_shared_size_bytes = shared  # opt in above the default 48 KB
    kernel((-(-m // (_TILE * _TILES)), count), (_THREADS,),
           (work, np.int32(m), np.int64(r0), np.int64(period), np.int32(span), np.int32(g),
            vs, wy, np.int64(first), np.int64(stride)), shared_mem=shared)


def cublas_step(work, r0, count, span, period, vs, wy, first, stride):
    """:func:`wavefront_step` by two strided-batched cuBLAS GEMMs (:func:`plan`)."""
    import cupy
    from cupy.cuda import cublas

    m = work.shape[1]
    g = wy.shape[1]
    x = cupy.empty((count, g, m), work.dtype)
    buffers = {"work": work, "vs": vs, "wy": wy, "x": x}
    dtype = np.dtype(work.dtype)
    handle = cupy.cuda.device.get_cublas_handle()
    cublas.setStream(handle, cupy.cuda.get_current_stream().ptr)
    cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
    batched = getattr(cublas, _PREFIX[dtype] + "gemmStridedBatched")

    def pointer(op):
        return buffers[op.buffer].data.ptr + op.offset * dtype.itemsize

    for gemm in plan(m, r0, count, span, period, g, first, stride):
        scalars = _SCALARS[dtype][gemm.subtract]
        batched(handle, _OPS["N"], _OPS["N"], gemm.m, gemm.n, gemm.k,
                scalars.ctypes.data, pointer(gemm.a), gemm.a.ld, gemm.a.stride,
                pointer(gemm.b), gemm.b.ld, gemm.b.stride,
                scalars.ctypes.data + dtype.itemsize, pointer(gemm.c), gemm.c.ld,
                gemm.c.stride, count)
