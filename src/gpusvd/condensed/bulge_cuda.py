"""The GPU twin of the bulge chasing loop of :mod:`gpusvd.condensed.bulge` (stage 2).

``kernels/bulge.cu`` runs the same sweeps, tasks and floating-point operations as the
Numba loop ``bulge._chase``, on the same compact band (3b−1 stored diagonals) held in
device memory, with many sweeps in flight: one thread block per sweep in a persistent
kernel, sweeps handed out by a ticket counter, and task h of sweep s started once sweep
s−1 has finished its task h+2, the one entry it shares with task h+3 (its corner) read
only once that task is done too (PLASMA's dependency, refined; the kernel's comment
derives it and tests/condensed/test_bulge_cuda.py checks it). The result is the Numba
loop's to rounding (bit for bit but for CUDA's hypot; the host build of the tests gives
the same bits).

Per band: n − 2 sweeps of 2·⌈(n−2−s)/b⌉ tasks, each a reflector of length ≤ b applied to
≤ 2b−1 rows or columns. Sweep s+1 trails sweep s by two tasks at least, so at most
(n−2)/b + 1 sweeps can run at once (257 at n = 8192, b = 32), and the critical path is
about 3n tasks less the part of each task before its corner; :func:`launch_config`
bounds the grid by that and by the resident blocks the device holds. Real and complex
bands (complex arithmetic as the Numba loop's; complex data waits for task h+3 at the
start).

:func:`launch_config` is plain Python so it is tested without a GPU.
"""

import time
from typing import NamedTuple

import numpy as np

from .._core import kernels, tunables

_KERNEL_FILE = "condensed/kernels/bulge.cu"
_WARP = 32
_MAX_THREADS = 256  # CHASE_MAX_THREADS, the kernel's __launch_bounds__
_LAG = 2            # CHASE_LAG: sweep s+1 trails sweep s by this many tasks at least
_SWEEP_DONE = 0x7FFFFFFF  # chase_common.cuh's SWEEP_DONE: a sweep's progress once it is done
# follow's wait between reads of the progress: at n = 8192 the chase finishes a leaf's
# 128 rows every 2 ms or so.
_FOLLOW_INTERVAL = 1e-3


class LaunchConfig(NamedTuple):
    blocks: int         # thread blocks, each one sweep at a time
    threads: int        # threads per block: whole warps
    shared_bytes: int   # dynamic shared memory per block


def supports(dtype):
    """Whether the kernel chases bands of ``dtype``: float32, float64, complex64 and
    complex128."""
    return np.dtype(dtype) in kernels.CTYPE


def sweeps_in_flight(n, b):
    """The most sweeps that can run at once: sweep 0's tasks over the lag, and one.

    Examples
    --------
    >>> sweeps_in_flight(8192, 32)
    257
    """
    tasks = 2 * -(-(n - 2) // b)
    return tasks // _LAG + 1


def _aligned(nbytes):
    return -(-nbytes // 16) * 16


def launch_config(n, b, itemsize, multiprocessors, blocks_per_sm, complex_data=False):
    """Grid, block and shared memory of the chase of an n×n band of bandwidth b ≥ 2.

    One thread per row or column a task updates (2b − 1 at most), in whole warps; at most
    ``multiprocessors · blocks_per_sm`` blocks, and no more than :func:`sweeps_in_flight`
    (more would only spin). Shared memory (the kernel's Scratch): the reflector's squares
    (b doubles), its tau (a double, or two for complex data), then the reflector (b
    entries of ``itemsize`` bytes), each part starting on 16 bytes.

    Examples
    --------
    >>> launch_config(8192, 32, 8, 132, 4)
    LaunchConfig(blocks=257, threads=64, shared_bytes=528)
    """
    threads = min(_MAX_THREADS, -(-(2 * b - 1) // _WARP) * _WARP)
    blocks = max(1, min(n - 2, multiprocessors * blocks_per_sm, sweeps_in_flight(n, b)))
    tau_bytes = 16 if complex_data else 8
    reflector_at = _aligned(_aligned(8 * b) + tau_bytes)
    return LaunchConfig(blocks, threads, reflector_at + b * itemsize)


def chase(ab, b, v_left, tau_left, v_right, tau_right, record):
    """All sweeps on the CuPy band ``ab`` (n, 3b−1), in place: the contract of
    ``bulge._chase``, whose arrays (the reflectors, recorded when ``record``) it fills the
    same way. Launches without a host synchronization, and returns its
    :class:`Progress` (for :func:`follow`), None where there was nothing to chase.

    Raises
    ------
    ValueError
        For a dtype the kernel does not take (:func:`supports`).

    Examples
    --------
    On a GPU (the GPU tests run it; CI has none)::

        import cupy as cp
        from gpusvd.condensed import bulge
        bd = bulge.band_to_bidiagonal(cp.random.standard_normal((1000, 33)))
        # bd.d, bd.e: CuPy arrays, the Numba loop's to rounding
    """
    if not supports(ab.dtype):
        raise ValueError(f"the GPU bulge chasing takes float32, float64, complex64 and "
                         f"complex128 bands, got {ab.dtype}")
    import cupy

    n = ab.shape[0]
    if n <= 2 or b <= 1:
        return None
    if ab.shape[1] != 3 * b - 1 or not ab.flags.c_contiguous:
        raise ValueError(f"the band must be C-contiguous of shape (n, 3b - 1) = "
                         f"({n}, {3 * b - 1}), got {ab.shape}")
    with ab.device:
        config = launch_config(n, b, ab.itemsize,
                               ab.device.attributes["MultiProcessorCount"],
                               tunables.get().chase_blocks_per_sm, ab.dtype.kind == "c")
        sync = cupy.zeros(n - 1, dtype=np.int32)  # the ticket, then each sweep's progress
        kernel = kernels.get_kernel(_KERNEL_FILE, f"chase_band<{kernels.CTYPE[ab.dtype]}>")
        launched = cupy.cuda.get_current_stream().record()
        kernel((config.blocks,), (config.threads,),
               (ab, np.int32(n), np.int32(b), sync, v_left, tau_left, v_right, tau_right,
                np.int32(v_left.shape[1] if record else 0)),
               shared_mem=config.shared_bytes)
    return Progress(sync, launched)


class Progress(NamedTuple):
    """A launched chase's state for :func:`follow`."""

    sync: object      # the kernel's ticket, then each sweep's progress (int32, device)
    launched: object  # a CUDA event after the band and sync were set, before the kernel


def follow(ab, b, progress, *, interval=_FOLLOW_INTERVAL):
    """B's rows as the chase running on ``ab`` finishes them: yields (start, d, e), the
    |diagonal| and |superdiagonal| (float64 host arrays) of rows start … start + len(d) − 1,
    in order, until all n rows have come (e one shorter than d in the last piece).

    Row r is final once sweep r has done its task 0, its row's reflector (row r's
    superdiagonal); sweep r − 1's column reflector, which sets its diagonal, came before
    (sweep r starts two tasks behind sweep r − 1) and no later task writes either. The
    kernel's sync array (``progress``, from :func:`chase`) says which sweeps have
    started; both it and the band are read on a stream of their own, once the band and
    the array are set, while the kernel runs, every ``interval`` seconds. The band's rows
    are read after the progress that covers them, but these reads race the kernel, which
    orders its stores for its own blocks only, and the device's |x| of float32 flushes
    subnormals where the host's does not: a caller must take the rows as a guess to
    check against the final d and e (dc_svd's LeafFeed does)."""
    import cupy
    import cupyx

    n = ab.shape[0]
    side = cupy.cuda.Stream(non_blocking=True)
    side.wait_event(progress.launched)
    sweeps = cupyx.empty_pinned(n - 2, np.int32)
    rows = cupyx.empty_pinned(ab.shape, ab.dtype)
    done = 0
    while done < n:
        progress.sync[1:].get(stream=side, out=sweeps)
        started = int(np.count_nonzero(sweeps))
        final = n if started == n - 2 and (sweeps == _SWEEP_DONE).all() else started
        if final > done:
            ab[done:final].get(stream=side, out=rows[done:final])
            yield (done, np.abs(rows[done:final, b - 1]).astype(np.float64),
                   np.abs(rows[done:min(final, n - 1), b]).astype(np.float64))
            done = final
        elif done < n:
            time.sleep(interval)
