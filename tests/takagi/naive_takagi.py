"""Slow, obviously correct references for the Takagi tests (test oracles)."""

import numpy as np

from gpusvd import testing
from gpusvd.takagi.rotation import rotation_matrix


def apply_step(a, u, pairs, rotation):
    """One parallel step, rotation by rotation with explicit n×n matrices.

    Every V of the step is computed from the input ``a`` (the pairs are disjoint), then
    A ← Gᴴ A Ḡ and U ← U G with G the identity except G[[i, j]][:, [i, j]] = V.
    """
    n = a.shape[0]
    g = np.eye(n, dtype=np.complex128)
    for i, j in pairs:
        if i < n and j < n:
            g[np.ix_([i, j], [i, j])] = rotation_matrix(*rotation(a[i, i], a[i, j], a[j, j]))
    return g.conj().T @ a @ g.conj(), u @ g


def with_takagi_values(s, *, dtype=np.complex128, seed=None):
    """A = Q diag(s) Qᵀ with Q Haar unitary: Takagi values s (any order)."""
    s = np.asarray(s, dtype=np.float64)
    q = testing.haar_orthogonal(s.size, dtype=np.complex128, seed=seed)
    return ((q * s) @ q.T).astype(dtype)


def cycle_graph(n):
    """Adjacency matrix of the n-cycle: eigenvalues 2cos(2πk/n), so repeated |values|."""
    a = np.zeros((n, n))
    idx = np.arange(n)
    a[idx, (idx + 1) % n] = a[(idx + 1) % n, idx] = 1
    return a


def random_graph(n, p, *, seed=None):
    """Adjacency matrix of an Erdős–Rényi graph G(n, p)."""
    upper = np.triu(np.random.default_rng(seed).random((n, n)) < p, 1)
    return (upper | upper.T).astype(np.float64)


def graded_symmetric(n, off, *, dtype=np.complex128, seed=None):
    """D^{1/2} (P + off·E) D^{1/2}: D = diag(0.9^k), P = diag of random phases, E complex
    symmetric with max |E| = 1. Neighbouring diagonal moduli differ by 10 % ≫ off, so
    every Jacobi rotation is a smooth function of the entries (angle ≲ 10·off) and
    implementations that round differently stay within rounding of each other; on a
    random matrix they do not (see test_steps.py)."""
    phases = np.exp(2j * np.pi * np.random.default_rng(seed).random(n))
    e = testing.complex_symmetric(n, dtype=np.complex128, seed=seed)
    root = GRADING ** (0.5 * np.arange(n))
    return (root[:, None] * (np.diag(phases) + off * e / np.abs(e).max()) * root).astype(dtype)


GRADING = 0.9  # ratio of neighbouring diagonal moduli in graded_symmetric
