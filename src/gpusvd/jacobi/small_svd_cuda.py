"""The GPU twin of :func:`gpusvd.jacobi.small_svd.small_svd`: the whole SVD of each small
matrix of a stack in one launch (``kernels/small_svd.cu``), for ``method="auto"``.

One thread block per matrix keeps X (padded to the pivot order), V and the completion's
work arrays in shared memory from the load of A to the write of U, S and Vh; the host
queues one launch and nothing waits until the caller asks for the :class:`Status`, which
the kernel writes to page-locked host memory (no memset before and no copy after: 11 µs
of a 2×2 call's 77 on the H100). :func:`fits` says whether a shape
fits a block's shared memory; :func:`launch_config` and :func:`shared_bytes` are plain
Python, tested without a GPU.
"""

import functools
import math
from typing import NamedTuple

import numpy as np

from .._core import kernels
from .inner_cuda import _DEFAULT_SHARED, optin_shared, threads_per_block
from .rotations import orthogonality_tol
from .small_svd import MAX_SWEEPS, STRATEGY, Shape
from .strategies import pivot_strategy

_KERNEL_FILE = "jacobi/kernels/small_svd.cu"
_STATIC_SHARED = 4112   # bytes of static shared memory (ptxas --resource-usage)
_ALIGN = 16             # SMALL_ALIGN: the double work arrays start on this boundary


class LaunchConfig(NamedTuple):
    lanes: int          # threads per pivot pair and per column norm
    threads: int        # lanes × groups, groups <= k/2
    shared_bytes: int   # dynamic shared memory per block


def shared_bytes(shape, dtype, want_uv):
    """Dynamic shared memory of one block of the kernel for a :class:`Shape`: g with
    its odd leading dimension and the columns of U past n, V, then the work arrays
    (the layout of small_svd.cu).

    Examples
    --------
    >>> shared_bytes(Shape(16, 16, False), np.dtype(np.float64), True)
    4864
    """
    dtype = np.dtype(dtype)
    mp = max(shape.m, shape.k)
    kc = shape.k + (shape.ku - shape.n) if want_uv else shape.k
    nbytes = ((mp | 1) * kc + ((shape.k | 1) * shape.k if want_uv else 0)) * dtype.itemsize
    nbytes = -(-nbytes // _ALIGN) * _ALIGN
    work = 16 if dtype.kind == "c" else 8
    return nbytes + (mp + kc) * work + shape.k * (np.finfo(dtype).dtype.itemsize + 8)


# Lanes per pivot pair, by the matrix's dtype character and pivot order k (rounded up to
# a power of two, at most 64), one entry per batch of BATCH_GRID: the fastest of 2, 4, 8,
# 16 and 32 for square Gaussian matrices on the H100 (bench/results/small_lanes_h100.json;
# k = 8 takes 8 everywhere and k <= 4 takes 4, where the counts differ by less than the
# noise). float32 and complex64 from 512 matrices, with their rotations in float
# (lanes_narrow_h100.json): 1000 × 32² float32 0.62 ms with 2 lanes against 8 lanes' 0.90,
# 5000 × 64² 13.1 ms with 2 against 4 lanes' 18.9. Few matrices leave most of the GPU idle and
# each step's latency decides: 16 lanes, few rows each (16² float64, one matrix: 0.115
# ms against 4 lanes' 0.166). Many fill it and the lanes' redundant work decides, since
# every lane of a group computes its pair's rotation: 32768 × 32² float32 12.4 ms with 2
# lanes against 8 lanes' 21.9 and 16 lanes' 38.4.
BATCH_GRID = (1, 8, 64, 512, 4096, 32768)
_SMALL_ORDERS = {2: (4,) * 6, 4: (4,) * 6, 8: (8,) * 6}
LANES_BY_BATCH = {
    "f": {**_SMALL_ORDERS, 16: (16, 16, 16, 8, 4, 4), 32: (16, 16, 16, 2, 2, 2),
          64: (16, 16, 16, 2, 2, 2)},
    "d": {**_SMALL_ORDERS, 16: (16, 16, 16, 8, 2, 2), 32: (16, 16, 16, 8, 2, 2),
          64: (16, 16, 16, 8, 8, 8)},
    "F": {**_SMALL_ORDERS, 16: (16, 16, 16, 8, 4, 4), 32: (16, 16, 16, 2, 2, 2),
          64: (16, 16, 16, 8, 8, 8)},
    "D": {**_SMALL_ORDERS, 16: (16, 16, 16, 8, 4, 4), 32: (16, 16, 16, 8, 8, 8),
          64: (16, 16, 16, 8, 8, 8)},
}
LANES = (2, 4, 8, 16, 32)  # the instantiations in kernels.REGISTRY


def lanes_for(shape, dtype, batch):
    """Lanes per pivot pair for ``batch`` matrices of a :class:`Shape`: LANES_BY_BATCH's
    entry at the grid batch nearest on a log scale, doubled (up to 32) while X has at least
    twice the rows per lane of the measured square.

    Examples
    --------
    >>> lanes_for(Shape(16, 16, False), np.float64, 1) in LANES
    True
    """
    order = min(64, 1 << max(1, (shape.k - 1).bit_length()))
    point = min(len(BATCH_GRID) - 1, round(math.log(max(batch, 1), BATCH_GRID[1])))
    measured = lanes = LANES_BY_BATCH[np.dtype(dtype).char][order][point]
    while lanes < LANES[-1] and 2 * lanes * order <= max(shape.m, shape.k) * measured:
        lanes *= 2
    return lanes


def launch_config(shape, dtype, want_uv, batch=1, lanes=0):
    """Lanes, threads and shared memory for ``batch`` matrices of a :class:`Shape`;
    ``lanes`` 0 picks them (:func:`lanes_for`), else one of :data:`LANES`.

    Examples
    --------
    >>> launch_config(Shape(16, 16, False), np.float64, True, lanes=4)
    LaunchConfig(lanes=4, threads=32, shared_bytes=4864)
    """
    if lanes == 0:
        lanes = lanes_for(shape, dtype, batch)
    elif lanes not in LANES:
        raise ValueError(f"lanes per pivot pair must be one of {LANES} (or 0: automatic), "
                         f"got {lanes}")
    return LaunchConfig(lanes, threads_per_block(lanes, shape.k),
                        shared_bytes(shape, dtype, want_uv))


# Per call, cached: a small matrix's call is host-bound (the shape is _plan's own object).
_launch_config = functools.lru_cache(maxsize=256)(launch_config)


def _max_shared(device_id):
    return optin_shared(device_id) - _STATIC_SHARED


class _Plan(NamedTuple):
    shape: Shape
    shared_bytes: int
    fits: bool
    tolerance: float


@functools.cache
def _plan(rows, cols, dtype, full_matrices, compute_uv, device_id):
    """What a call computes from its shape alone, once per shape: a small matrix's call
    is host-bound (16×16 float64 on the H100: 0.28 ms, of which the kernel 0.21)."""
    shape = Shape(rows, cols, full_matrices)
    nbytes = shared_bytes(shape, dtype, compute_uv)
    return _Plan(shape, nbytes, nbytes <= _max_shared(device_id),
                 orthogonality_tol(dtype, shape.m))


def fits(rows, cols, dtype, *, full_matrices, compute_uv):
    """Whether one block of the kernel holds a (rows × cols) matrix of ``dtype`` on the
    current device."""
    import cupy

    return _plan(rows, cols, np.dtype(dtype), full_matrices, compute_uv,
                 cupy.cuda.Device().id).fits


@functools.cache
def _pairs(k, device_id):
    import cupy

    with cupy.cuda.Device(device_id):
        return cupy.asarray(pivot_strategy(STRATEGY, k))


class Status:
    """The kernel's status bits (:data:`~gpusvd.jacobi.small_svd.NOT_FINITE`,
    :data:`~gpusvd.jacobi.small_svd.NOT_CONVERGED`) in page-locked host memory, which the
    device reaches through unified addressing: zeroed here, before the launch, and read by
    :meth:`wait` after the launch's stream is synchronized."""

    def __init__(self):
        import cupy

        self._slot = cupy.cuda.alloc_pinned_memory(4)
        self._flags = np.frombuffer(self._slot, np.int32, 1)
        self._flags[0] = 0
        self._stream = cupy.cuda.get_current_stream()
        self.pointer = np.uint64(self._slot.ptr)  # the kernel's int *status

    def wait(self):
        """Wait for the launch and return its status bits (an int)."""
        self._stream.synchronize()
        return int(self._flags[0])


def small_svd(a, *, compute_uv, full_matrices, max_sweeps=MAX_SWEEPS, lanes=0):
    """The SVD of each matrix of the CuPy stack ``a`` (batch, rows, cols) in one launch.

    Same contract as :func:`gpusvd.jacobi.small_svd.small_svd` (results NaN for a matrix
    that is not finite), except that the status comes back as a :class:`Status`, so that
    the caller decides when to wait for it (``status.wait()``). ``a`` must fit one block
    (:func:`fits`); ``ValueError`` otherwise. ``lanes``: threads per pivot pair, one of
    :data:`LANES`, or 0 to pick them by shape and batch (:func:`lanes_for`).
    """
    import cupy

    batch, rows, cols = a.shape
    a = cupy.ascontiguousarray(a)
    device = a.device.id
    shape, nbytes, fitting, tolerance = _plan(rows, cols, a.dtype, full_matrices,
                                              compute_uv, device)
    config = _launch_config(shape, a.dtype, compute_uv, batch, lanes)
    real = np.finfo(a.dtype).dtype
    status = Status()
    s = cupy.empty((batch, shape.n), real)
    u = cupy.empty((batch, *shape.u), a.dtype) if compute_uv else s
    vh = cupy.empty((batch, *shape.vh), a.dtype) if compute_uv else s
    if batch == 0:
        return (u if compute_uv else None), s, (vh if compute_uv else None), status
    if not fitting:
        raise ValueError(f"a {rows}x{cols} {a.dtype} matrix does not fit one block of the "
                         f"small-SVD kernel ({nbytes} bytes of shared memory)")
    kernel = kernels.get_kernel(_KERNEL_FILE,
                                f"small_svd<{kernels.CTYPE[a.dtype]}, {config.lanes}>")
    if config.shared_bytes > _DEFAULT_SHARED:
        kernel.max_dynamic_shared_size_bytes = config.shared_bytes
    pairs = _pairs(shape.k, device)
    kernel((batch,), (config.threads,),
           (a, np.int32(rows), np.int32(cols), np.int32(shape.wide), pairs,
            np.int32(pairs.shape[0]), np.int32(shape.k), np.int32(max_sweeps + 1),
            real.type(tolerance), np.int32(compute_uv),
            np.int32(shape.ku), s, u, vh, status.pointer),
           shared_mem=config.shared_bytes)
    if not compute_uv:
        return None, s, None, status
    return u, s, vh, status
