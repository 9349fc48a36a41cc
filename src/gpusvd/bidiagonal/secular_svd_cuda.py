"""The roots of a bidiagonal divide-and-conquer merge's secular equation on the GPU: the
launcher of ``kernels/secular.cu``.

On the host the bidiagonal SVD (dc_svd.py) finds each merge's k roots with
Numba, one root per thread (:func:`.secular_svd._root`, dlasd4), O(k) work per step and
O(k²) per merge. At n = 8192 that is 0.23 s on a 16-core H100 host over 255 merges, on the
critical path between two GPU phases, with the merge's poles and weights crossing to the
host and its roots back. Here a merge's roots are one launch on device arrays, a warp (32
lanes) per root, with no synchronization: the caller checks convergence
(:func:`.secular.check_converged`) once the step counts reach the host for another
reason.

The kernel is the Numba ``_root`` operation by operation (the same models, safeguards,
stopping test, constants, origin choice and the k = 1 and last-root cases); the one
difference is the order of each step's sums over the poles j, split over the 32 lanes and
added by shuffles. A root may then differ from the Numba twin's by the rounding of those
sums carried through the iteration (a few ulps of the root's scale, and at times one step
more or less); with one lane per root (the host build of the tests) it is the Numba
twin's bit for bit.
"""

import numpy as np

from .._core import kernels, tunables
from .secular import _UNIT_ROUNDOFF

_KERNEL_FILE = "bidiagonal/kernels/secular.cu"
# Threads per block: 8 roots of 32 lanes (a warp per root, as merge_vectors_cuda's rows).
_THREADS = 256
_LANES = 32


def svd_roots(d, z, max_steps=None):
    """The roots of f(σ) = 1 + Σ z_j²/((d_j − σ)(d_j + σ)) on the GPU, each as an
    offset from a pole: the twin of :func:`.secular_svd.secular_singular_values`, without
    its convergence check.

    Parameters
    ----------
    d, z : (k,) CuPy arrays of float64, k ≥ 1
        The poles, nonnegative and strictly increasing (d[0] = 0 in a merge), and the
        weights, all nonzero.
    max_steps : int, optional
        Steps per root before it counts as not converged; by default the tunable
        ``secular_max_steps``.

    Returns
    -------
    origin, tau, steps : (k,) CuPy arrays of int64, float64, int64
        Root i is σ_i = ``d[origin[i]] + tau[i]``; ``steps[i] > max_steps`` where it did
        not converge (pass ``steps`` on the host to :func:`.secular.check_converged`).
        Not synchronized.

    Examples
    --------
    The singular values of e₁zᵀ + diag(d) (on a GPU):

    >>> import cupy as cp  # doctest: +SKIP
    >>> from gpusvd.bidiagonal.secular import check_converged  # doctest: +SKIP
    >>> origin, tau, steps = svd_roots(cp.array([0.0, 1.0, 2.0]),
    ...                                cp.array([0.6, 0.64, 0.48]))  # doctest: +SKIP
    >>> check_converged(steps.get())  # doctest: +SKIP
    """
    import cupy

    k = d.shape[0]
    if k < 1 or z.shape != (k,):
        raise ValueError(f"secular equation: need k >= 1 poles and as many weights, got "
                         f"{d.shape} and {z.shape}")
    if max_steps is None:
        max_steps = tunables.get().secular_max_steps
    d = cupy.ascontiguousarray(d, np.float64)
    z = cupy.ascontiguousarray(z, np.float64)
    origin, tau, steps = cupy.empty(k, np.int64), cupy.empty(k), cupy.empty(k, np.int64)
    roots = _THREADS // _LANES
    ctype = kernels.CTYPE[np.dtype(np.float64)]
    kernels.get_kernel(_KERNEL_FILE, f"svd_secular_roots<{ctype}>")(
        ((k + roots - 1) // roots,), (_THREADS,),
        (d, z, np.int64(k), np.int64(max_steps), np.float64(_UNIT_ROUNDOFF), origin, tau,
         steps))
    return origin, tau, steps
