"""The GPU twin of the bisection in :mod:`gpusvd.bidiagonal.bisection`: the launcher of
``kernels/bisection.cu``, a group of lanes per singular value.

A value's bisection takes about 64 Sturm counts of 2n − 1 steps in float64 (32 in
float32), each a chain of dependent divisions: with one thread a value, the GPU waits on
that chain with most of its schedulers idle. A group of 2^LEVELS lanes counts at the
points of the next LEVELS steps' tree at once (the kernel's comment), so a value takes
LEVELS times fewer rounds of counts and comes out bit for bit as one thread's bisection.
One launch, no host synchronization: the caller reads the values when it needs them.

The group's size follows n: more levels mean fewer rounds but more counts a value
(2^LEVELS − 1 for LEVELS steps), which pays only while the GPU has lanes to spare. About
:data:`LANES` lanes in all was fastest at n = 4096, 8192 and 16384, float32 and float64
alike (LEVELS 4, 3, 2 there; NOTES.md, "Where things stand", values only).
"""

import numpy as np

from .._core import kernels, tunables

_KERNEL_FILE = "bidiagonal/kernels/bisection.cu"
# The kernel's instantiations: bisection steps a round of counts (its LEVELS template
# argument); a value's group is 2^LEVELS lanes, 2^LEVELS − 1 counting and one idle.
LEVELS = (2, 3, 4)
# Lanes in flight, n·2^LEVELS, that the choice of LEVELS aims at.
LANES = 1 << 16


def levels(n):
    """The kernel's LEVELS for n values: the most (of :data:`LEVELS`) that keeps
    n·2^LEVELS within :data:`LANES`, and at least the fewest."""
    fit = (LANES // max(n, 1)).bit_length() - 1
    return min(max(fit, LEVELS[0]), LEVELS[-1])


def bisect(t, n, b, steps_a_round=None, *, near=None, slack=0.0):
    """The n singular values of the scaled B whose Golub–Kahan off-diagonal is the CuPy
    array ``t`` (2n − 1 entries in [0, 1)), descending, by the constants ``b``
    (:func:`gpusvd.bidiagonal.bisection.bounds`); the twin of ``bisection._numba_twin``.
    ``steps_a_round`` is the kernel's LEVELS, :func:`levels` of n unless given; ``near``
    (a CuPy array of n on t's scale, or None) and ``slack`` as in
    :func:`gpusvd.bidiagonal.bisection.bidiagonal_singular_values_bisection`."""
    steps_a_round = levels(n) if steps_a_round is None else steps_a_round
    if steps_a_round not in LEVELS:
        raise ValueError(f"steps_a_round must be one of {LEVELS}, got {steps_a_round}")
    import cupy

    group = 1 << steps_a_round
    out = cupy.empty(n, t.dtype)
    kernel = kernels.get_kernel(
        _KERNEL_FILE,
        f"bisection_singular_values<{kernels.CTYPE[t.dtype]}, {steps_a_round}>")
    threads = -(-max(tunables.get().bisection_threads_per_block, group) // 32) * 32
    lanes = n * group
    real = t.dtype.type
    kernel(((lanes + threads - 1) // threads,), (threads,),
           (cupy.ascontiguousarray(t), np.int64(n), real(b.floor), real(b.pivmin),
            real(b.top), real(b.two_eps), np.int32(b.max_steps),
            out if near is None else cupy.ascontiguousarray(near), real(slack),
            np.int32(near is not None), out))
    return out
