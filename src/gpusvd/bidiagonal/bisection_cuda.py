"""The GPU twin of the bisection in :mod:`gpusvd.bidiagonal.bisection`: the launcher of
``kernels/bisection.cu``, one thread per singular value.

Each thread runs its own bisection (about 64 Sturm counts of 2n − 1 steps in float64, 32
in float32) with no communication; the threads of a warp read the same t[k] together.
One launch, no host synchronization: the caller reads the values when it needs them.
"""

import numpy as np

from .._core import kernels, tunables

_KERNEL_FILE = "bidiagonal/kernels/bisection.cu"


def bisect(t, n, b):
    """The n singular values of the scaled B whose Golub–Kahan off-diagonal is the CuPy
    array ``t`` (2n − 1 entries in [0, 1)), descending, by the constants ``b``
    (:func:`gpusvd.bidiagonal.bisection.bounds`); the twin of ``bisection._numba_twin``."""
    import cupy

    out = cupy.empty(n, t.dtype)
    kernel = kernels.get_kernel(_KERNEL_FILE,
                                f"bisection_singular_values<{kernels.CTYPE[t.dtype]}>")
    threads = tunables.get().bisection_threads_per_block
    real = t.dtype.type
    kernel(((n + threads - 1) // threads,), (threads,),
           (cupy.ascontiguousarray(t), np.int64(n), real(b.floor), real(b.pivmin),
            real(b.top), real(b.two_eps), np.int32(b.max_steps), out))
    return out
