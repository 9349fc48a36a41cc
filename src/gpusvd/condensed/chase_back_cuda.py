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

For real C and the bandwidths of :data:`PASS_GROUPS`, :func:`passes` replaces the whole
wavefront by one launch of ``kernels/chase_back.cu`` (which says how), one reflector at a
time in registers: no padded trapezoids (half the flops), and C moves through memory
about once per ``warps`` passes where each wavefront step moved all of it. On the H200 at
n = 8192 float64 the wavefront takes 0.18 s a side (10× a GEMM of 2n³ flops).
"""

from typing import NamedTuple

import numpy as np

from .._core import kernels
from .band_cuda import _OPS, _PREFIX, _SCALARS

_KERNEL_FILE = "condensed/kernels/chase_back.cu"
# The kernel's sweeps per pass G by bandwidth b and real dtype (its instantiations). A
# lane keeps a window of b + G − 1 entries in registers: at b = 32 float64 G = 32 spills
# (0.084 s against 0.088 at G = 16, n = 8192 on the H200); float32 G = 32 takes 0.049 s
# (G = 16: 0.053).
PASS_GROUPS = {(32, np.dtype(np.float64)): 16, (32, np.dtype(np.float32)): 32,
               (16, np.dtype(np.float64)): 16, (16, np.dtype(np.float32)): 16}
# Passes a block takes at once (its warps, at most the kernel's launch bound of four), one
# 32-column slab of C per block.
PASS_WARPS = 4


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


def wavefront_step(work, r0, count, span, period, vs, wy, first, stride):
    """Windows i < ``count`` of ``work`` (rows r0 + i·period …, ``span`` long) ←
    window − vs[g_i]·(wy[g_i]·window), g_i = first + i·stride (chase_back's groups)."""
    import cupy
    from cupy.cuda import cublas

    m = work.shape[1]
    g = wy.shape[1]
    if m == 0:
        return
    if not (work.flags.c_contiguous and wy.flags.c_contiguous and vs.flags.c_contiguous):
        raise ValueError("wavefront_step reads C-ordered work, vs and wy")
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


def passes(c, v, tau, b, g, warps=PASS_WARPS):
    """c ← Q·c in place by ``kernels/chase_back.cu``: c a C-ordered real CuPy array (n×m),
    v (S, K, b) and τ (S, K) the chase's reflectors of one side in c's dtype (S = n − 1),
    ``g`` sweeps a pass (an instantiation: :data:`PASS_GROUPS`), ``warps`` passes at once."""
    import cupy

    n, m = c.shape
    sweeps, blocks = tau.shape
    if m == 0 or sweeps == 0:
        return
    if not c.flags.c_contiguous:
        raise ValueError("passes works on a C-ordered c")
    if not 1 <= warps <= PASS_WARPS:
        raise ValueError(f"warps must be 1 to {PASS_WARPS} (the kernel's launch bound), "
                         f"got {warps}")
    ctype = kernels.CTYPE[np.dtype(c.dtype)]
    kernel = kernels.get_kernel(_KERNEL_FILE, f"chase_back_passes<{ctype}, {b}, {g}>")
    shared = warps * (2 * g * b + 2 * g + 32 * b) * c.itemsize  # kernel's PassShared
    kernel.max_dynamic_shared_size_bytes = shared
    kernel(((m + 31) // 32,), (32 * warps,),
           (c, np.int64(n), np.int64(m), np.int64(m), cupy.ascontiguousarray(v),
            cupy.ascontiguousarray(tau), np.int64(sweeps), np.int64(blocks)),
           shared_mem=shared)
