"""The GPU twins of :mod:`gpusvd.takagi.steps`: launchers of ``kernels/takagi_steps.cu``.

Every launch goes on the current stream and nothing waits for the device: a sweep of the
pointwise method is 3(n − 1) launches (rotations, row updates, column and U updates per
step: Alg. 2's two global synchronizations become kernel boundaries), a blocked step one
launch of the inner solve.
"""

import numpy as np

from .._core import kernels, tunables

_FILE = "takagi/kernels/takagi_steps.cu"
_THREADS = 256  # threads per block of every launch: 8 warps, enough to hide latency


def _kernel(name, dtype):
    real = np.dtype(np.finfo(dtype).dtype)
    return kernels.get_kernel(_FILE, f"{name}<{kernels.CTYPE[real]}>")


def _blocks(count):
    return (count + _THREADS - 1) // _THREADS


def jacobi_step(a, u, pairs, g=None, floor=0.0):
    """One parallel step on the C-contiguous n×n CuPy arrays ``a``, ``u``, in place.

    ``pairs`` is a C-contiguous int32 CuPy array (pairs, 2), one step of the chess
    tournament; pairs holding an index ≥ n, or an off-diagonal entry at most ``floor``,
    are skipped. ``g`` (pairs, 4) of a's dtype receives the rotations (allocated if not
    given).
    """
    import cupy

    n, count = a.shape[0], pairs.shape[0]
    if n == 0 or count == 0:
        return
    if g is None:
        g = cupy.empty((count, 4), a.dtype)
    real = np.finfo(a.dtype).dtype
    _kernel("takagi_rotations", a.dtype)((_blocks(count),), (_THREADS,),
                                         (a, np.int32(n), pairs, np.int32(count), g,
                                          real.type(floor)))
    _kernel("takagi_rotate_rows", a.dtype)((_blocks(n), count), (_THREADS,),
                                           (a, np.int32(n), pairs, g))
    _kernel("takagi_rotate_columns", a.dtype)((_blocks(n), count), (_THREADS,),
                                              (a, u, np.int32(n), pairs, g))


def jacobi_sweep(a, u, ordering, floor=0.0):
    """All steps of ``ordering`` (an int32 CuPy array (steps, pairs, 2)), in place."""
    import cupy

    g = cupy.empty((ordering.shape[1], 4), a.dtype)
    for s in range(ordering.shape[0]):
        jacobi_step(a, u, ordering[s], g, floor)


def shared_bytes(block, dtype):
    """Dynamic shared memory of the inner solve: tile and unitary (2b × (2b + 1)), two
    steps' b rotations of four entries and two steps' pair tables (2 × 2b int32)."""
    width = 2 * block
    return (2 * width * (width + 1) + 8 * block) * np.dtype(dtype).itemsize + 4 * 2 * width


def solve_block_pairs(a, block_pairs, block, sweeps, out=None, threads=None, floor=0.0):
    """GPU twin of :func:`gpusvd.takagi.steps.solve_block_pairs` (CuPy arrays; the
    ordering of the 2b indices is computed by the kernel). ``out``: a C-contiguous
    (count, 2b, 2b) array of a's dtype to write into (allocated if not given).
    ``threads`` per thread block, a multiple of 32 from 64 to 1024 (default: the tunable
    ``takagi_solve_threads``), lowered to the kernel's limit for its registers where that
    is smaller (complex128 does not launch with 1024). ``floor``: as the steps'."""
    import cupy

    if threads is None:
        threads = tunables.get().takagi_solve_threads
    if threads % 32 or not 64 <= threads <= 1024:
        raise ValueError(f"takagi_solve_threads must be a multiple of 32 in [64, 1024], "
                         f"got {threads}")

    count, width = block_pairs.shape[0], 2 * block
    if out is None:
        out = cupy.empty((count, width, width), a.dtype)
    if count == 0:
        return out
    kernel = _kernel("takagi_solve_block_pairs", a.dtype)
    threads = min(threads, kernel.max_threads_per_block // 32 * 32)
    shared = shared_bytes(block, a.dtype)
    if kernel.max_dynamic_shared_size_bytes < shared:
        kernel.max_dynamic_shared_size_bytes = shared  # opt in above the default 48 KB
    real = np.finfo(a.dtype).dtype
    kernel((count,), (threads,),
           (a, np.int32(a.shape[0]), block_pairs, np.int32(block), np.int32(sweeps), out,
            real.type(floor)), shared_mem=shared)
    return out


# The entries of solve_one_tile's status per matrix (TAKAGI_STATUS of the kernel).
STATUS = 7


def solve_one_tile(a, tol, max_sweeps, threads=None):
    """The Takagi factorization of each matrix of the C-contiguous CuPy stack ``a``
    (batch, n, n), finite, n at most twice the tunable ``takagi_block_size`` (the tile and
    its unitary in shared memory), in one launch, a thread block per matrix, each step as
    :func:`.driver.factorize` takes it: A scaled by the power of two 2^-k that brings its
    largest entry to [1/2, 1), (A + Aᵀ)/2, sweeps until ‖off(A)‖_F ≤ ``tol``·‖A‖_F, at
    most ``max_sweeps`` (with the driver's floor, ε·‖A‖_F), then the values ordered and
    scaled back and the phases moved into U. Returns (S, U, status) CuPy stacks: S
    descending (ties in index order), U with A ≈ U diag(S) Uᵀ, and for each matrix the
    :data:`STATUS` entries, of the real dtype: (sweeps, ‖off(A)‖_F², ‖A‖_F² of the scaled
    symmetric matrix at the end, ‖A − Aᵀ‖_F², ‖A‖_F² of the scaled input, 1 where an
    entry off the diagonal is nonzero, k). Nothing waits for the device."""
    import cupy

    batch, n = a.shape[:2]
    block = max(1, -(-n // 2))
    if threads is None:
        threads = tunables.get().takagi_solve_threads
    real = np.finfo(a.dtype).dtype
    s = cupy.empty((batch, n), real)
    u = cupy.empty((batch, n, n), a.dtype)
    status = cupy.empty((batch, STATUS), real)
    if batch == 0 or n == 0:
        return s, u, status
    kernel = _kernel("takagi_solve_one_tile", a.dtype)
    threads = min(threads, kernel.max_threads_per_block // 32 * 32)
    shared = shared_bytes(block, a.dtype) + threads * real.itemsize
    if kernel.max_dynamic_shared_size_bytes < shared:
        kernel.max_dynamic_shared_size_bytes = shared
    kernel((batch,), (threads,), (a, np.int32(n), np.int32(block), real.type(tol),
                                  real.type(np.finfo(real).eps), np.int32(max_sweeps), s, u,
                                  status), shared_mem=shared)
    return s, u, status
