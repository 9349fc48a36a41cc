"""Chess-tournament ordering of the index pairs of a Jacobi sweep (paper 002, Alg. 1).

A sweep visits every pair (i, j), i ≠ j, of n indices once. Pairs that share no index can
be rotated at the same time, so the sweep is split into n − 1 parallel steps of n/2
disjoint pairs each: a round-robin tournament of n players (the circle method: player
n − 1 stays fixed, the others turn one seat per step). For odd n a dummy index n joins
the tournament and every pair holding it is skipped (its player sits the round out).

The paper's Alg. 1 gives, for thread ``t`` of step ``s`` with N players,
``i = (t + s) mod (N − 1)`` and ``j = ((N − t) + s) mod (N − 1)`` (t ≠ 0) or N − 1 (t = 0).
As printed it pairs (1, 0) at step 0 for N = 10, while the paper's Fig. 1 and text list
(0, 9), (1, 8), (2, 7), (3, 6), (4, 5); those need ``j = ((N − 1 − t) + s) mod (N − 1)``,
which is what is used here (and in ``kernels/takagi_steps.cu``).
"""

import numpy as np


def players(n):
    """The number of tournament players for n indices: n, or n + 1 (a dummy) if n is odd."""
    return n + (n % 2)


def chess_tournament(n):
    """The pairs of every parallel step of a sweep over n indices.

    Returns
    -------
    ndarray
        int32 array (steps, pairs, 2) with steps = N − 1 and pairs = N/2, N = n rounded up
        to even. The pairs of a step are disjoint; over all steps every pair of distinct
        indices of ``range(n)`` occurs exactly once. For odd n, pairs that hold the dummy
        index n occur too (one per step); callers skip them.

    Examples
    --------
    >>> chess_tournament(4)[0].tolist()
    [[0, 3], [1, 2]]
    >>> chess_tournament(3).shape
    (3, 2, 2)
    """
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    count = players(n)
    if count < 2:
        return np.zeros((0, 0, 2), np.int32)
    t = np.arange(count // 2)[None, :]
    s = np.arange(count - 1)[:, None]
    first = (t + s) % (count - 1)
    second = np.where(t == 0, count - 1, (count - 1 - t + s) % (count - 1))
    return np.stack(np.broadcast_arrays(first, second), axis=-1).astype(np.int32)
