"""Slow, obvious references for the QUIC-SVD tests."""

import numpy as np


def paper_low_rank(m, n, rank, *, dtype=np.float64, seed=None):
    """The generator of paper 001 §3: (m × rank)·(rank × n), entries uniform in [−1, 1]."""
    rng = np.random.default_rng(seed)
    g = rng.uniform(-1.0, 1.0, (m, rank))
    h = rng.uniform(-1.0, 1.0, (rank, n))
    return (g @ h).astype(dtype)


def relative_error(a, u, s, vh):
    """‖A − U·diag(S)·Vh‖²_F / ‖A‖²_F in float64 (0 for a zero matrix)."""
    a = np.asarray(a, dtype=np.float64)
    approx = (np.asarray(u, np.float64) * np.asarray(s, np.float64)) @ np.asarray(vh, np.float64)
    total = np.sum(a * a)
    return float(np.sum((a - approx) ** 2) / total) if total > 0 else 0.0


def optimal_rank(a, eps):
    """Smallest r with Σ_{j>r} σ_j² ≤ eps·‖A‖²_F, from LAPACK's SVD (Eckart–Young)."""
    s2 = np.linalg.svd(np.asarray(a, np.float64), compute_uv=False) ** 2
    tail = np.concatenate([np.cumsum(s2[::-1])[::-1], [0.0]])
    return int(np.flatnonzero(tail <= eps * s2.sum())[0])


def length_squared_pick(rows, norms2, rng):
    """One row of ``rows`` drawn with probability ∝ ‖r_i‖² (one ``rng.random()`` call)."""
    cum = np.cumsum(norms2[rows])
    k = int(np.searchsorted(cum, rng.random() * cum[-1], side="right"))
    return int(rows[min(k, len(rows) - 1)])


def cosine_split(a, rows, pivot):
    """The split of mlpack's CosineTree, row by row: (rows nearer the minimum |cos| with
    the pivot, rows nearer the maximum), the maximum taken without the pivot itself; the
    pivot alone against the rest when the rule leaves a side empty."""
    def cos(i):
        return abs(a[i] @ a[pivot]) / np.sqrt((a[i] @ a[i]) * (a[pivot] @ a[pivot]))

    c = {i: cos(i) for i in rows}
    cmin = min(c.values())
    cmax = max(c[i] for i in rows if i != pivot)
    near_max = [i for i in rows if cmax - c[i] <= c[i] - cmin]
    near_min = [i for i in rows if cmax - c[i] > c[i] - cmin]
    if not near_max or not near_min:
        near_max, near_min = [pivot], [i for i in rows if i != pivot]
    return near_min, near_max
