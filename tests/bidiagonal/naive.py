"""Slow, obviously correct references for the Golub–Reinsch kernels (the tests' oracles)."""

import numpy as np


def bidiagonal_matrix(d, e):
    """The dense upper bidiagonal matrix with diagonal ``d`` and superdiagonal ``e``."""
    d = np.asarray(d, dtype=np.float64)
    b = np.diag(d)
    if len(d) > 1:
        b += np.diag(np.asarray(e, dtype=np.float64), 1)
    return b


def apply_rotations_naive(x, sweeps, cs):
    """Apply a rotation log to the columns of ``x`` in place, one rotation at a time.

    Sweep (lo, count, direction) rotates the column pairs (lo+j, lo+j+1) in increasing
    j for direction +1 and decreasing j for -1, with (c, s) = cs[off + j];
    a <- c·a + s·b, b <- -s·a + c·b on the old columns a, b.
    """
    off = 0
    for lo, count, direction in np.asarray(sweeps).reshape(-1, 3):
        order = range(count) if direction == 1 else range(count - 1, -1, -1)
        for j in order:
            c, s = cs[off + j]
            a, b = x[:, lo + j].copy(), x[:, lo + j + 1].copy()
            x[:, lo + j] = c * a + s * b
            x[:, lo + j + 1] = -s * a + c * b
        off += count


def random_rotation_log(rng, n, k):
    """k sweeps of random ranges and directions over n columns, with random angles."""
    lo = rng.integers(0, n - 1, size=k)
    count = rng.integers(1, n - lo)  # 1 <= count <= n-1-lo
    direction = rng.choice([-1, 1], size=k)
    sweeps = np.stack([lo, count, direction], axis=1).astype(np.int64)
    angle = rng.uniform(-np.pi, np.pi, size=int(count.sum()))
    return sweeps, np.stack([np.cos(angle), np.sin(angle)], axis=1)
