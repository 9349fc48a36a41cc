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
