"""Parallel Jacobi steps of the Takagi factorization on the CPU (Numba kernels).

Paper 002, Alg. 2: in each parallel step every pair (i, j) of the chess-tournament step
gets its 2×2 rotation V from the current A (:func:`~gpusvd.takagi.rotation.takagi_rotation`),
then all row updates [A_i; A_j] ← Vᴴ [A_i; A_j] are done, then (after the paper's global
synchronization) all column updates [A_i A_j] ← [A_i A_j] V̄ and U updates
[U_i U_j] ← [U_i U_j] V. Full storage: A is kept whole, not as a triangle. The pairs of a
step are disjoint, so a step is one unitary congruence A ← Gᴴ A Ḡ with G block diagonal
after a permutation, whatever the order of the pairs.

The row update and the column update use the same coefficients (a row update Vᴴ X is
the transpose of the column update Xᵀ V̄); every update goes through
:func:`~gpusvd.takagi.rotation.rotate`.

- :func:`jacobi_step` / :func:`jacobi_sweep`: the pointwise method on a whole matrix;
  the GPU twins are ``takagi_rotations``, ``takagi_rotate_rows`` and
  ``takagi_rotate_columns`` in ``kernels/takagi_steps.cu``.
- :func:`solve_block_pairs`: the inner solve of the blocked form (``driver.py``): for each
  pair of b-index blocks (I, J), sweeps of the pointwise method on the 2b×2b submatrix
  A[I∪J, I∪J], accumulating its 2b×2b unitary. GPU twin: ``takagi_solve_block_pairs``.
"""

import numba
import numpy as np

from .rotation import rotate, takagi_rotation


@numba.njit(cache=True)
def jacobi_step(a, u, pairs, floor=0.0):
    """One parallel step on the n×n arrays ``a`` and ``u``, in place.

    ``pairs`` is one step of :func:`~gpusvd.takagi.ordering.chess_tournament` (pairs,
    2); a pair holding an index ≥ n (the dummy of odd n) is skipped, and so is a pair
    whose off-diagonal entry is at most ``floor`` (:func:`.rotation.takagi_rotation`).
    """
    n = a.shape[0]
    count = pairs.shape[0]
    g = np.zeros((count, 4), a.dtype)
    for p in range(count):
        i, j = pairs[p, 0], pairs[p, 1]
        if i < n and j < n:
            w1, w2, mu, sn = takagi_rotation(a[i, i], a[i, j], a[j, j], floor)
            g[p, 0], g[p, 1], g[p, 2], g[p, 3] = w1, w2, mu, sn
    for p in range(count):                       # row updates: rows ← Vᴴ rows
        i, j = pairs[p, 0], pairs[p, 1]
        if i < n and j < n:
            q1, q2, mu, sn = g[p, 0].conjugate(), g[p, 1].conjugate(), g[p, 2], g[p, 3]
            for col in range(n):
                a[i, col], a[j, col] = rotate(a[i, col], a[j, col], q1, q2, mu, sn)
    for r in range(n):                           # column updates and U ← U V
        for p in range(count):
            i, j = pairs[p, 0], pairs[p, 1]
            if i < n and j < n:
                w1, w2, mu, sn = g[p, 0], g[p, 1], g[p, 2], g[p, 3]
                a[r, i], a[r, j] = rotate(a[r, i], a[r, j], w1.conjugate(), w2.conjugate(),
                                          mu, sn)
                u[r, i], u[r, j] = rotate(u[r, i], u[r, j], w1, w2, mu, sn.conjugate())


@numba.njit(cache=True)
def jacobi_sweep(a, u, ordering, floor=0.0):
    """All steps of ``ordering`` (steps, pairs, 2): one sweep over every pair, in place."""
    for s in range(ordering.shape[0]):
        jacobi_step(a, u, ordering[s], floor)


@numba.njit(cache=True)
def solve_block_pairs(a, block_pairs, block, sweeps, local_ordering, floor=0.0):
    """The 2b×2b unitaries of the inner solves of one blocked step.

    Parameters
    ----------
    a : (n, n) complex ndarray
        The (padded) matrix; n a multiple of 2b. Not modified.
    block_pairs : (count, 2) int ndarray
        Pairs (I, J) of disjoint blocks of ``block`` = b consecutive indices.
    block : int
        b.
    sweeps : int
        Inner sweeps of the pointwise method per block pair.
    local_ordering : ndarray
        ``chess_tournament(2 * block)``.
    floor : float, optional
        Pairs whose off-diagonal entry is at most this are skipped.

    Returns
    -------
    (count, 2b, 2b) ndarray
        G_p with G_pᴴ A[P, P] Ḡ_p (nearly) diagonal, P = (I·b … I·b + b − 1, J·b … J·b + b − 1).
    """
    count = block_pairs.shape[0]
    width = 2 * block
    out = np.zeros((count, width, width), a.dtype)
    for p in range(count):
        index = np.empty(width, np.int64)
        for k in range(block):
            index[k] = block_pairs[p, 0] * block + k
            index[block + k] = block_pairs[p, 1] * block + k
        tile = np.empty((width, width), a.dtype)
        for r in range(width):
            for col in range(width):
                tile[r, col] = a[index[r], index[col]]
        g = np.eye(width, dtype=a.dtype)
        for _ in range(sweeps):
            jacobi_sweep(tile, g, local_ordering, floor)
        out[p] = g
    return out
