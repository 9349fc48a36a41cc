"""The GPU twin of the bisection in :mod:`gpusvd.bidiagonal.bisection`: the launcher of
``kernels/bisection.cu``, a group of lanes per singular value.

A value's bisection takes about 64 Sturm counts of 2n − 1 steps in float64 (32 in
float32), each a chain of dependent divisions: with one thread a value, the GPU waits on
that chain with most of its schedulers idle. A group of :data:`GROUP` lanes counts at
the :data:`LEVELS` levels of the next steps' tree at once (the kernel's comment), so a
value takes LEVELS times fewer rounds of counts and comes out bit for bit as one
thread's bisection (BENCHMARKS.md, "Values only on the GPU"). One launch, no host
synchronization: the caller reads the values when it needs them.
"""

import numpy as np

from .._core import kernels, tunables

_KERNEL_FILE = "bidiagonal/kernels/bisection.cu"
# Bisection steps a round of counts (the kernel's LEVELS, its instantiation), and the
# lanes of a value's group: 2^LEVELS − 1 count, one idles.
LEVELS = 4
GROUP = 1 << LEVELS


def bisect(t, n, b):
    """The n singular values of the scaled B whose Golub–Kahan off-diagonal is the CuPy
    array ``t`` (2n − 1 entries in [0, 1)), descending, by the constants ``b``
    (:func:`gpusvd.bidiagonal.bisection.bounds`); the twin of ``bisection._numba_twin``."""
    import cupy

    out = cupy.empty(n, t.dtype)
    kernel = kernels.get_kernel(
        _KERNEL_FILE, f"bisection_singular_values<{kernels.CTYPE[t.dtype]}, {LEVELS}>")
    threads = -(-max(tunables.get().bisection_threads_per_block, GROUP) // 32) * 32
    lanes = n * GROUP
    real = t.dtype.type
    kernel(((lanes + threads - 1) // threads,), (threads,),
           (cupy.ascontiguousarray(t), np.int64(n), real(b.floor), real(b.pivmin),
            real(b.top), real(b.two_eps), np.int32(b.max_steps), out))
    return out
