"""The GPU twin of the symmetric bulge chasing loop of :mod:`gpusvd.condensed.sym_bulge`
(stage 2 of the two-stage Hermitian reduction).

``kernels/sym_bulge.cu`` runs the same sweeps, tasks and floating-point operations as the
Numba loop ``sym_bulge._chase``, on the same compact band (2b stored diagonals of the
lower triangle) held in device memory, with many sweeps in flight: bulge_cuda's scheme,
one thread block per sweep in a persistent kernel, sweeps handed out by a ticket
counter, and task h of sweep s (block h of the sweep: its reflector, the two-sided update
of its diagonal block, the bulge below it) started once sweep s−1 has finished its task
h+2. The kernel's comment derives that lag from the rows and columns each task touches;
tests/condensed/test_sym_bulge_cuda.py checks it on the index sets and on the host build.
The result is the Numba loop's to rounding (bit for bit but for CUDA's hypot; the host
build gives the same bits).

Per band: n − 2 sweeps of about (n−2−s)/b tasks, each a reflector of length ≤ b, a
rank-2 update of a b×b block and a one-sided application to ≤ b rows and ≤ b−1 columns.
Task h of sweep s+1 waits for task h+2 of sweep s, so about (n−2)/(2b) sweeps can run
at once (129 at n = 8192, b = 32); :func:`launch_config` bounds the grid by that and by
the resident blocks the device holds. Real bands only (:func:`supports`, bulge_cuda's).

:func:`sym_bulge.band_to_tridiagonal` chases a real CuPy band with it (its ``_TWINS``).
:func:`launch_config` is plain Python so it is tested without a GPU.
"""

import numpy as np

from .._core import kernels, tunables
from .bulge_cuda import LaunchConfig, supports  # the same launch and the same dtypes

_KERNEL_FILE = "condensed/kernels/sym_bulge.cu"
_WARP = 32
_MAX_THREADS = 256  # CHASE_MAX_THREADS, the kernel's __launch_bounds__
_LAG = 2            # CHASE_LAG: sweep s+1 trails sweep s by this many tasks


def sweeps_in_flight(n, b):
    """The most sweeps that can run at once: sweep 0's tasks over the lag, and one.

    Examples
    --------
    >>> sweeps_in_flight(8192, 32)
    129
    """
    tasks = (n - 3) // b + 1
    return tasks // _LAG + 1


def launch_config(n, b, itemsize, multiprocessors, blocks_per_sm):
    """Grid, block and shared memory of the chase of an n×n band of bandwidth b ≥ 2.

    One thread per row or column a task updates (b at most), in whole warps; at most
    ``multiprocessors · blocks_per_sm`` blocks, and no more than :func:`sweeps_in_flight`
    (more would only spin). Shared memory: the reflector's squares, tau and v·wᵀ's scalar
    (double), the reflector and w = A·v.

    Examples
    --------
    >>> launch_config(8192, 32, 8, 132, 4)
    LaunchConfig(blocks=129, threads=32, shared_bytes=784)
    """
    threads = min(_MAX_THREADS, -(-b // _WARP) * _WARP)
    blocks = max(1, min(n - 2, multiprocessors * blocks_per_sm, sweeps_in_flight(n, b)))
    return LaunchConfig(blocks, threads, (b + 2) * 8 + 2 * b * itemsize)


def chase(ab, b, v, tau, record):
    """All sweeps on the CuPy band ``ab`` (n, 2b), in place: the contract of
    ``sym_bulge._chase``, whose reflector arrays (recorded when ``record``) it fills the
    same way. Launches without a host synchronization.

    Raises
    ------
    ValueError
        For a dtype the kernel does not take (:func:`supports`), or a band that is not
        C-contiguous of shape (n, 2b).

    Examples
    --------
    On a GPU (the GPU tests run it; CI has none)::

        import cupy as cp
        from gpusvd.condensed import sym_bulge
        t = sym_bulge.band_to_tridiagonal(cp.random.standard_normal((1000, 33)))
        # t.d, t.e: CuPy arrays, the Numba loop's to rounding
    """
    if not supports(ab.dtype):
        raise ValueError(f"the GPU symmetric bulge chasing takes float32 and float64 bands, "
                         f"got {ab.dtype}; complex bands are chased on the host")
    import cupy

    n = ab.shape[0]
    if n <= 2 or b <= 1:
        return
    if ab.shape[1] != 2 * b or not ab.flags.c_contiguous:
        raise ValueError(f"the band must be C-contiguous of shape (n, 2b) = ({n}, {2 * b}), "
                         f"got {ab.shape}")
    with ab.device:
        config = launch_config(n, b, ab.itemsize,
                               ab.device.attributes["MultiProcessorCount"],
                               tunables.get().chase_blocks_per_sm)
        sync = cupy.zeros(n - 1, dtype=np.int32)  # the ticket, then each sweep's progress
        kernel = kernels.get_kernel(_KERNEL_FILE,
                                    f"sym_chase_band<{kernels.CTYPE[ab.dtype]}>")
        kernel((config.blocks,), (config.threads,),
               (ab, np.int32(n), np.int32(b), sync, v, tau,
                np.int32(v.shape[1] if record else 0)),
               shared_mem=config.shared_bytes)
