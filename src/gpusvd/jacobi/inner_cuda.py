"""The GPU twin of :func:`gpusvd.jacobi.inner.inner_jacobi`: the pStep core in one launch.

Paper 003, §4.3 (subphases 1–7 of orthogonalize, Alg. 4.1/4.2 after the shortening):
``kernels/inner_jacobi.cu`` runs one thread block per matrix of the batch, with g and v
in shared memory for all sweeps, each p-step's pivot pairs handled concurrently by groups
of ``lanes`` threads, and the rotation count and the sweep count written per matrix. The
paper's Kepler kernel had 16 kB of shared memory for two 32×32 double matrices; an H100
block may opt in to 227 kB, which holds square blocks up to k = 168 in float32, 120 in
float64 and complex64, and 84 in complex128.

:func:`launch_config` (threads, lanes and shared memory for a shape) is plain Python so
it can be tested without a GPU; :func:`inner_jacobi` launches without a host sync.
"""

import functools
from typing import NamedTuple

import numpy as np

from .._core import kernels, tunables
from .inner import _check

_KERNEL_FILE = "jacobi/kernels/inner_jacobi.cu"
_LANES = (4, 8, 16, 32)   # lanes per pivot pair instantiated in kernels.REGISTRY
_MAX_THREADS = 512        # INNER_MAX_THREADS, the kernel's __launch_bounds__
_ROWS_PER_LANE = 4        # automatic lanes: about this many rows of g per lane
_STATIC_SHARED = 16       # bytes of static shared memory in the kernel (ptxas --resource-usage)
_DEFAULT_SHARED = 48 * 1024  # above this a kernel must opt in to more dynamic shared memory
_ATTR_MAX_SHARED_OPTIN = 97  # cudaDevAttrMaxSharedMemoryPerBlockOptin (CUDA runtime API)
_TABLE_THREADS = 128      # threads per block of rotation_table (one case each)


class LaunchConfig(NamedTuple):
    lanes: int          # threads per pivot pair (a sub-warp or a warp)
    threads: int        # threads per block: lanes × groups, groups <= k/2
    shared_bytes: int   # dynamic shared memory per block: g and v, column-major


def shared_bytes(m, k, itemsize):
    """Dynamic shared memory of one block: g (m×k) and v (k×k) with odd leading dimensions.

    Examples
    --------
    >>> shared_bytes(32, 32, 8)   # two 33×32 double matrices
    16896
    """
    return ((m | 1) * k + (k | 1) * k) * itemsize


def launch_config(m, k, itemsize, max_shared, lanes=0):
    """Lanes, threads and shared memory of the inner kernel for (m×k) matrices.

    Parameters
    ----------
    m, k : int
        Rows and columns of each g, m >= k >= 2, k even.
    itemsize : int
        Bytes per element (8 for float64 and complex64).
    max_shared : int
        Dynamic shared memory a block may use on the device (opt-in limit minus the
        kernel's static shared memory).
    lanes : int
        4, 8, 16 or 32, or 0 for the smallest count that gives each lane at most
        about four rows of g.

    Returns
    -------
    LaunchConfig

    Raises
    ------
    ValueError
        If ``lanes`` is not one of the instantiated counts, or g and v do not fit in
        ``max_shared`` bytes.

    Examples
    --------
    >>> launch_config(32, 32, 8, 227 * 1024)
    LaunchConfig(lanes=8, threads=128, shared_bytes=16896)
    """
    lanes, threads = block_shape(m, k, lanes)
    nbytes = shared_bytes(m, k, itemsize)
    if nbytes > max_shared:
        largest = max((n for n in range(2, k + 1, 2) if shared_bytes(n, n, itemsize)
                       <= max_shared), default=0)
        raise ValueError(
            f"the CUDA inner Jacobi kernel keeps g ({m}x{k}) and v ({k}x{k}) in shared "
            f"memory: {nbytes} bytes of {itemsize}-byte elements, but a block may use "
            f"{max_shared}; square blocks fit up to k = {largest} for this dtype")
    return LaunchConfig(lanes, threads, nbytes)


def block_shape(m, k, lanes=0):
    """(lanes, threads) of a block that runs the pivot pairs of k columns of m rows:
    ``lanes`` per pair (0: the fewest that give each lane at most about four rows), as
    many pairs at once as fit :data:`_MAX_THREADS` threads. Also the small-SVD kernel's
    (small_svd_cuda.py), which runs the same pair steps.

    Examples
    --------
    >>> block_shape(64, 64)
    (16, 512)
    """
    if lanes == 0:
        lanes = next((n for n in _LANES if n * _ROWS_PER_LANE >= m), _LANES[-1])
    elif lanes not in _LANES:
        raise ValueError(f"lanes per pivot pair must be one of {_LANES} (or 0: automatic), "
                         f"got {lanes}")
    return lanes, threads_per_block(lanes, k)


def threads_per_block(lanes, k):
    """Threads of a block that runs the k/2 pivot pairs of a step with ``lanes`` each: as
    many pairs at once as fit :data:`_MAX_THREADS` (the small-SVD kernel's too).

    Examples
    --------
    >>> threads_per_block(16, 64), threads_per_block(2, 2)
    (512, 2)
    """
    return lanes * max(1, min(k // 2, _MAX_THREADS // lanes))


@functools.cache
def optin_shared(device_id):
    """Bytes of shared memory a block may opt in to on the device: the kernels' dynamic
    shared memory is this minus their static shared memory."""
    import cupy

    return cupy.cuda.runtime.deviceGetAttribute(_ATTR_MAX_SHARED_OPTIN, device_id)


def _max_shared(device_id):
    return optin_shared(device_id) - _STATIC_SHARED


def rotations(app, aqq, apq_abs, hyperbolic):
    """The kernel's rotation formula over 1-D arrays: the GPU twin of
    :func:`gpusvd.jacobi.rotations.rotations`, for checking it on a table of cases.

    Parameters
    ----------
    app, aqq, apq_abs : (n,) float32 or float64 arrays of one dtype (NumPy or CuPy)
    hyperbolic : (n,) bool array

    Returns
    -------
    cs, tn : (n,) cupy.ndarray of the same dtype

    Examples
    --------
    >>> import numpy as np
    >>> cs, tn = rotations(np.array([1.0]), np.array([1.0]), np.array([0.5]),
    ...                    np.array([False]))  # doctest: +SKIP
    >>> float(tn[0])  # doctest: +SKIP
    1.0
    """
    import cupy

    app, aqq, apq_abs = (cupy.ascontiguousarray(cupy.asarray(x)) for x in (app, aqq, apq_abs))
    hyperbolic = cupy.ascontiguousarray(cupy.asarray(hyperbolic, dtype=cupy.bool_))
    dtype = app.dtype
    if dtype not in (np.float32, np.float64) or not dtype == aqq.dtype == apq_abs.dtype:
        raise ValueError("app, aqq and apq_abs must be float32 or float64 arrays of one dtype")
    n = app.size
    if not (app.shape == aqq.shape == apq_abs.shape == hyperbolic.shape == (n,)):
        raise ValueError("app, aqq, apq_abs and hyperbolic must be 1-D arrays of one length")
    cs, tn = cupy.empty_like(app), cupy.empty_like(app)
    if n:
        kernel = kernels.get_kernel(_KERNEL_FILE, f"rotation_table<{kernels.CTYPE[dtype]}>")
        kernel(((n + _TABLE_THREADS - 1) // _TABLE_THREADS,), (_TABLE_THREADS,),
               (app, aqq, apq_abs, hyperbolic, cs, tn, np.int32(n)))
    return cs, tn


def inner_jacobi(g, v, signs, pairs, max_sweeps, tol, floor2=0.0):
    """One-sided Jacobi on each matrix of a batch on the GPU, in place (the pStep core).

    Same contract as the CPU twin :func:`gpusvd.jacobi.inner.inner_jacobi`, on CuPy
    arrays; the kernel is queued on the current stream and nothing waits for it. The
    lanes per pivot pair come from the tunable ``jacobi_inner_lanes``.

    Parameters
    ----------
    g : (batch, m, k) cupy.ndarray
        Changed in place, as by the CPU twin.
    v : (batch, k, k) cupy.ndarray
        Changed in place, as by the CPU twin.
    signs : (k,) array (CuPy, or NumPy copied to the device)
    pairs : (steps, k // 2, 2) int32 array (CuPy, or NumPy copied to the device)
        The pairs of a step are rotated concurrently, so they must be disjoint, as in
        every parallel strategy; indices are not range-checked on the device.
    max_sweeps : int >= 1
    tol : float
    floor2 : float, optional
        A pair with h_pp or h_qq at or below it is never rotated, as in the CPU twin.

    Returns
    -------
    rotations : (batch,) cupy.ndarray of int64
    sweeps : (batch,) cupy.ndarray of int32

    Raises
    ------
    ValueError
        For arrays of the wrong shape, dtype or layout, or matrices too large for the
        block's shared memory (the message says which k fits).

    Examples
    --------
    >>> import cupy as cp  # doctest: +SKIP
    >>> from gpusvd.jacobi.strategies import pivot_strategy
    >>> g = cp.asarray([[[3.0, 0.0], [4.0, 5.0]]])  # doctest: +SKIP
    >>> v = cp.eye(2)[None].copy()  # doctest: +SKIP
    >>> rot, sw = inner_jacobi(g, v, cp.ones(2), cp.asarray(pivot_strategy("row", 2)),
    ...                        10, 1e-15)  # doctest: +SKIP
    >>> cp.linalg.norm(g[0], axis=0) ** 2  # doctest: +SKIP
    array([45.,  5.])
    """
    import cupy

    _check(g, v, signs, pairs, max_sweeps)
    batch, m, k = g.shape
    with g.device:
        rotations = cupy.zeros(batch, np.int64)
        sweeps = cupy.zeros(batch, np.int32)
        if batch == 0 or k == 0:
            return rotations, sweeps
        config = launch_config(m, k, g.dtype.itemsize, _max_shared(g.device.id),
                               tunables.get().jacobi_inner_lanes)
        kernel = kernels.get_kernel(_KERNEL_FILE,
                                    f"inner_jacobi<{kernels.CTYPE[g.dtype]}, {config.lanes}>")
        if config.shared_bytes > _DEFAULT_SHARED:
            kernel.max_dynamic_shared_size_bytes = config.shared_bytes
        signs = cupy.ascontiguousarray(cupy.asarray(signs))
        pairs = cupy.ascontiguousarray(cupy.asarray(pairs))
        real = g.real.dtype.type
        kernel((batch,), (config.threads,),
               (g, v, signs, pairs, np.int32(pairs.shape[0]), np.int32(pairs.shape[1]),
                np.int32(m), np.int32(k), np.int32(max_sweeps), real(tol), np.float64(floor2),
                rotations, sweeps),
               shared_mem=config.shared_bytes)
    return rotations, sweeps
