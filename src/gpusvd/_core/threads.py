"""CPU threads: Numba's parallel loops and the BLAS pool sized together (threadpoolctl).

On the CPU, gpusvd's parallel Numba kernels (``prange``: the inner Jacobi of
:mod:`gpusvd.jacobi.inner`, the rotation application of :mod:`gpusvd.bidiagonal.
rotations`) run one thread per core, and so does the BLAS pool of NumPy and SciPy
(OpenBLAS, MKL). A pool's threads keep the cores busy after their work is done: OpenBLAS's
workers spin for a while after each call before they sleep, and GNU OpenMP's (Numba's
``omp`` layer) spin after each parallel region. Where a driver alternates the two every
millisecond, both pools compete for every core, and each parallel region waits for its
slowest, descheduled thread. Measured on a 2-core machine shared with other work
(float64, median of 3, interleaved): the CPU Jacobi SVD of a 500×500 matrix
took 3.27 s with both pools at their default of 2 threads, 2.93 s with BLAS limited to
one thread only while the Numba kernel runs, 1.39 s with BLAS at one thread for the whole
decomposition, 1.63 s with Numba at one thread instead; the blocked Takagi factorization
of n = 160, whose update is hundreds of tiny GEMMs, took 0.36–12.2 s with 2 BLAS
threads and 0.37 s with one. Tiny GEMMs gain nothing from a second thread.

So, within :func:`single_threaded_blas`, every BLAS pool runs one thread and the cores
belong to Numba's threads. It is entered at the call of each parallel Numba kernel, around
the Takagi block update, and for the whole of a Jacobi SVD, whose sweeps interleave the
Numba kernel with GEMMs of one block pair. Golub–Reinsch keeps BLAS's threads for its
bidiagonalization (large GEMMs, where they pay: 1000×1000 0.69 s against 0.75–1.03 s
with one thread) and limits them only while its rotations are applied.

OpenBLAS's size is process-wide. threadpoolctl (3.8 on) lets one Python thread at a time
set it, so calls from several threads at once neither undo each other's limit nor leave
one behind (``tests/core/test_threads.py``); a call from another thread meanwhile runs
with BLAS's threads as they are.
"""

import contextlib
import functools
import os

from threadpoolctl import ThreadpoolController


@functools.cache
def _controller():
    """The BLAS and OpenMP libraries loaded in this process, found once (a search costs
    about 1 ms, a limit through it about 16 µs). gpusvd imports NumPy and SciPy, whose
    BLAS libraries are the ones its CPU path calls, before any limit is asked for."""
    return ThreadpoolController()


@contextlib.contextmanager
def single_threaded_blas():
    """Within the block, every BLAS pool runs one thread; their sizes are restored after.

    Nesting is allowed (the inner block restores one thread). The limit is process-wide,
    as BLAS's own setting is (the module docstring says what that means for threads).

    Examples
    --------
    >>> from threadpoolctl import threadpool_info
    >>> from gpusvd._core.threads import single_threaded_blas
    >>> with single_threaded_blas():
    ...     {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}
    {1}
    """
    with _controller().limit(limits=1, user_api="blas"):
        yield


def usable_cores():
    """The cores this process may run on: its CPU affinity where the system has one (a
    rank that MPI bound to one core gets 1, not the machine's count), else the count."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1
