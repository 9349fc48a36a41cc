"""The roots of a bidiagonal divide-and-conquer merge's secular equation on the GPU: the
launcher of ``kernels/secular.cu``.

On the host the bidiagonal SVD (dc_svd.py) finds each merge's k roots with
Numba, one root per thread (:func:`.secular_svd._root`, dlasd4), O(k) work per step and
O(k²) per merge. At n = 8192 that is 0.23 s on a 16-core H100 host over 255 merges, on the
critical path between two GPU phases, with the merge's poles and weights crossing to the
host and its roots back. Here a tree level's merges' roots are one launch on device
arrays, a warp (32 lanes) per root and a row of the grid per merge, with no
synchronization: the caller checks convergence
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


def _problems(total, starts, sizes):
    """The problems' (starts, sizes) as host int64 arrays: one problem of all ``total``
    entries by default; a ValueError for an empty or misplaced one."""
    if sizes is None:
        starts, sizes = [0], [total]
    starts, sizes = np.asarray(starts, np.int64), np.asarray(sizes, np.int64)
    if not len(sizes) or starts.shape != sizes.shape or (sizes < 1).any() \
            or (starts < 0).any() or (starts + sizes > total).any():
        raise ValueError(f"secular equation: need problems of k >= 1 poles within the "
                         f"{total} given, got starts {starts} and sizes {sizes}")
    return starts, sizes


def svd_roots(d, z, max_steps=None, *, starts=None, sizes=None):
    """The roots of f(σ) = 1 + Σ z_j²/((d_j − σ)(d_j + σ)) on the GPU, each as an
    offset from a pole: the twin of :func:`.secular_svd.secular_singular_values`, without
    its convergence check, for one problem or several in one launch (a tree level's
    merges).

    Parameters
    ----------
    d, z : (total,) CuPy arrays of float64
        The poles, nonnegative and strictly increasing within a problem (d[0] = 0 in a
        merge), and the weights, all nonzero.
    max_steps : int, optional
        Steps per root before it counts as not converged; by default the tunable
        ``secular_max_steps``.
    starts, sizes : sequences of int, optional
        Problem p is the ``sizes[p]`` ≥ 1 entries of d and z from ``starts[p]``; by
        default one problem of all of them.

    Returns
    -------
    origin, tau, steps : (total,) CuPy arrays of int64, float64, int64
        Problem p's root i, at ``starts[p] + i``, is σ_i = ``d[starts[p] + origin] +
        tau`` (origin counted within its problem); ``steps > max_steps`` where it did not
        converge (pass ``steps`` on the host to :func:`.secular.check_converged`).
        Entries in no problem are left unset. Not synchronized.

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

    total = d.shape[0]
    if z.shape != (total,):
        raise ValueError(f"secular equation: need as many weights as poles, got "
                         f"{d.shape} and {z.shape}")
    starts, sizes = _problems(total, starts, sizes)
    if max_steps is None:
        max_steps = tunables.get().secular_max_steps
    d = cupy.ascontiguousarray(d, np.float64)
    z = cupy.ascontiguousarray(z, np.float64)
    problems = cupy.asarray(np.concatenate((starts, sizes)))
    origin, tau = cupy.empty(total, np.int64), cupy.empty(total)
    steps = cupy.empty(total, np.int64)
    roots = _THREADS // _LANES
    ctype = kernels.CTYPE[np.dtype(np.float64)]
    kernels.get_kernel(_KERNEL_FILE, f"svd_secular_roots<{ctype}>")(
        ((int(sizes.max()) + roots - 1) // roots, len(sizes)), (_THREADS,),
        (d, z, problems[:len(sizes)], problems[len(sizes):], np.int64(max_steps),
         np.float64(_UNIT_ROUNDOFF), origin, tau, steps))
    return origin, tau, steps
