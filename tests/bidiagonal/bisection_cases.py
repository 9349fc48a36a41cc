"""The one table of bidiagonals that every twin of the bisection solver must pass
(bidiagonal/bisection.py: Numba; kernels/bisection.cu: on the GPU and compiled for the
host), with its 60-digit oracle, and the table of Sturm counts.

The oracle is ``reference_singular_values`` of tests/bidiagonal/test_dqds.py
(bisection on the Golub–Kahan tridiagonal in mpmath), imported, not copied, as are its
generators of random and graded bidiagonals.
"""

import functools

import numpy as np

from gpusvd import testing

from .test_dqds import _graded as graded, _random, reference_singular_values

# Relative error per value in units of n·ε: (2n − 1)·1.5 + 1 <= 4n (bisection.py's bound).
BOUND = 4


def _with_zeros(n, seed, d_at=(), e_at=()):
    d, e = _random(n, seed)
    d[list(d_at)] = 0.0
    e[list(e_at)] = 0.0
    return d, e


def _cluster(n, seed):
    """Pairs of values within a few ε of each other: two copies of one bidiagonal
    joined by an e of 1e-17."""
    d, e = _random(n // 2, seed)
    return np.concatenate([d, d]), np.concatenate([e, [1e-17], e])


# name -> (d, e), float64 (the float32 tests round them).
CASES = {
    "1x1": ([3.0], []),
    "1x1-negative": ([-2.5], []),
    "1x1-zero": ([0.0], []),
    "2x2": ([3.0, 1.0], [4.0]),
    "2x2-golden": ([1.0, 1.0], [1.0]),           # q₂ = 0 exactly at x = 1
    "2x2-diagonal": ([1.0, -7.0], [0.0]),
    "2x2-zero-d": ([0.0, 2.0], [1e-200]),
    "2x2-huge-e": ([1.0, 1.0], [1e100]),
    "zero": ([0.0, 0.0, 0.0], [0.0, 0.0]),
    "random-3": _random(3, 1),
    "random-20": _random(20, 3),
    "random-60": _random(60, 16),
    "tiny": _random(12, 4, scale=1e-300),
    "huge": _random(12, 5, scale=1e300),
    "graded-down-150": graded(14, 150, 6),
    "graded-up-150": graded(14, 150, 7, increasing=True),
    "graded-down-300": graded(20, 300, 8),
    "graded-up-300": graded(20, 300, 9, increasing=True),
    "zeros-in-d": _with_zeros(12, 10, d_at=(0, 6, 11)),
    "zeros-in-e": _with_zeros(12, 11, e_at=(1, 6)),
    "zeros-in-both": _with_zeros(12, 12, d_at=(0, 6, 11), e_at=(1, 6)),
    "zero-first-and-last-d": _with_zeros(9, 13, d_at=(0, 8)),
    "clustered": testing.bidiagonal(16, kind="clustered", seed=14),
    "identical": (np.ones(10), np.full(9, 1e-9)),
    "pairs": _cluster(24, 15),
    "toeplitz": (np.ones(15), np.ones(14)),
    "testing-graded": testing.bidiagonal(16, kind="graded", seed=17),
}

# float32 cases: the float64 table's that fit float32's range, and graded 1 … 1e-30.
CASES32 = {name: CASES[name] for name in CASES
           if name not in ("tiny", "huge", "2x2-zero-d", "2x2-huge-e")
           and "150" not in name and "300" not in name}
CASES32.update({
    "graded-down-30": graded(16, 30, 18),
    "graded-up-30": graded(16, 30, 19, increasing=True),
    "2x2-huge-e": ([1.0, 1.0], [1e15]),
})


def case(name, dtype=np.float64):
    """(d, e) of a case as arrays of ``dtype``."""
    d, e = (CASES if dtype == np.float64 else CASES32)[name]
    return np.asarray(d, dtype), np.asarray(e, dtype)

# A float32 bidiagonal of subnormal entries (the smallest normal float32 is 1.2e-38).
SUBNORMAL32 = (np.array([3e-40, 1e-40, 2e-41], np.float32), np.array([2e-40, 5e-41], np.float32))


@functools.cache
def reference(name, dtype=np.float64):
    """The oracle's descending values of the case in ``dtype`` (its entries as rounded)."""
    d, e = case(name, dtype)
    return reference_singular_values(d.astype(np.float64), e.astype(np.float64))


# Sturm counts: (d, e, shifts). The count at x is #{σ < x} of the oracle's values; no
# shift lies within 1e-9 relative of a value. "2x2-golden" at x = 1 makes the second
# pivot exactly zero (q₂ = −1 + 1/1), the safeguard's case; the others have zero entries,
# a tiny last pivot and shifts near the floor.
COUNT_CASES = {
    "2x2": ([3.0, 1.0], [4.0], [0.5, 0.6, 1.0, 5.0, 5.1, 3.0]),
    "2x2-golden": ([1.0, 1.0], [1.0], [1.0, 0.5, 0.7, 1.7]),
    "zeros": ([0.0, 0.5, 0.0], [0.25, 0.0], [1e-300, 0.1, 0.3, 0.6, 0.9]),
    "graded-300": (*graded(20, 300, 8), [1e-307, 1e-301, 1e-290, 1e-150, 1e-20, 0.1, 0.9]),
    "random": (*[x * 0.2 for x in _random(30, 20)], [1e-3, 1e-2, 0.1, 0.2, 0.4, 0.6]),
}


def nears(s, seed=0):
    """(label, near, slack) for the bisection's ``near`` (bisection.py), from the values
    ``s`` it gives without: right ones (exact; within the slack, as a divide and
    conquer's: slack 2·n·ε·σ₁, ε of ``s``'s dtype) and wrong ones (a quarter of the values
    outside the slack, reversed, zeros, NaN), each of which must give the bits of ``s``.
    In float64."""
    eps = float(np.finfo(np.asarray(s).dtype).eps)
    s = np.asarray(s, np.float64)
    n = s.shape[0]
    slack = 2 * n * eps * max(float(s[0]), 1e-300)
    rng = np.random.default_rng(seed)
    within = s + slack * rng.uniform(-0.9, 0.9, n)
    outside = within.copy()
    outside[rng.integers(0, n, max(1, n // 4))] += 3 * slack
    return [("exact", s, 0.0), ("within", within, slack), ("outside", outside, slack),
            ("reversed", s[::-1].copy(), slack), ("zeros", np.zeros(n), slack),
            ("nan", np.full(n, np.nan), slack), ("far", s + 1.0, 1e-3)]
