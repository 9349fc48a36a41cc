"""Singular values of a bidiagonal by dqds: relative accuracy against a 60-digit oracle."""

import mpmath
import numpy as np
import pytest
import scipy.linalg

import gpusvd
from gpusvd import testing
from gpusvd._core import tunables
from gpusvd._core.errors import LinAlgError
from gpusvd.bidiagonal import dqds
from gpusvd.bidiagonal.qr import BidiagonalQR
from gpusvd.bidiagonal.dqds import bidiagonal_singular_values

EPS = np.finfo(np.float64).eps
BOUND = 10  # relative error per singular value, in units of n·eps (the brief's target)


def _count_below(off, x):
    """#{sigma_i < x} for x > 0: negative pivots of T - x·I, T the Golub–Kahan tridiagonal
    (zero diagonal, off-diagonals d1, e1, d2, ...), minus the n negative eigenvalues."""
    p = -x
    negative = int(p < 0)
    for a in off:
        if p == 0:
            p = -x * mpmath.mpf(2) ** -400
        p = -x - a * a / p
        negative += int(p < 0)
    return negative - (len(off) + 1) // 2


def reference_singular_values(d, e, digits=60):
    """Descending singular values by bisection on the Golub–Kahan tridiagonal (Sturm
    counts, as LAPACK's dbdsvdx) in ``digits``-digit arithmetic, each to ~1e-40 relative.
    A value below 1e-330·‖B‖ is returned as 0."""
    n = len(d)
    with mpmath.workdps(digits):
        off = [mpmath.mpf(float(x)) for pair in zip(d, list(e) + [0.0]) for x in pair][:2 * n - 1]
        top = 2 * max((abs(x) for x in off), default=mpmath.mpf(0))
        if top == 0:
            return np.zeros(n)
        floor = top * mpmath.mpf(10) ** -330
        values = []
        for k in range(n):  # the (k+1)-th smallest
            if _count_below(off, floor) > k:
                values.append(0.0)
                continue
            lo, hi = floor, top
            while hi / lo - 1 > mpmath.mpf(10) ** -40:
                mid = mpmath.sqrt(lo * hi)
                if _count_below(off, mid) > k:
                    hi = mid
                else:
                    lo = mid
            values.append(float(mpmath.sqrt(lo * hi)))
        return np.array(values[::-1])


def _graded(n, decades, seed, increasing=False):
    rng = np.random.default_rng(seed)
    entries = rng.uniform(1, 2, 2 * n - 1) * 10.0 ** (-decades * np.linspace(0, 1, 2 * n - 1))
    entries *= rng.choice([-1.0, 1.0], 2 * n - 1)
    if increasing:
        entries = entries[::-1].copy()
    return entries[0::2].copy(), entries[1::2].copy()


def _random(n, seed, scale=1.0):
    rng = np.random.default_rng(seed)
    return scale * rng.standard_normal(n), scale * rng.standard_normal(n - 1)


def _with_zeros(n, seed, where):
    d, e = _random(n, seed)
    if where in ("d", "both"):
        d[[0, n // 2, n - 1]] = 0.0
    if where in ("e", "both"):
        e[[1, n // 2]] = 0.0
    return d, e


def _small_inside(n, seed, e_mid):
    """A small value whose vector sits inside the block (row n/3), above an e of e_mid
    at row 2n/3: negligible (|e| <= 4ε/‖B⁻¹·e_k‖, about 4ε·1e-8 here) at 1e-30, so
    dqds splits there; not at 1e-18."""
    d, e = _random(n, seed)
    d[n // 3] = 1e-8
    e[2 * n // 3] = e_mid
    return d, e


CASES = {
    "1x1": ([3.0], []),
    "1x1-negative": ([-2.5], []),
    "1x1-zero": ([0.0], []),
    "2x2": ([3.0, 1.0], [4.0]),
    "2x2-diagonal": ([1.0, -7.0], [0.0]),
    "2x2-zero-d": ([0.0, 2.0], [1e-200]),
    "2x2-huge-e": ([1.0, 1.0], [1e100]),
    "zero": ([0.0, 0.0, 0.0], [0.0, 0.0]),
    "random-3": _random(3, 1),
    "random-12": _random(12, 2),
    "random-20": _random(20, 3),
    "tiny": _random(12, 4, scale=1e-300),
    "huge": _random(12, 5, scale=1e300),
    "graded-down": _graded(14, 150, 6),
    "graded-up": _graded(14, 150, 7, increasing=True),
    "graded-down-300": _graded(8, 300, 8),
    "zeros-in-d": _with_zeros(12, 9, "d"),
    "zeros-in-e": _with_zeros(12, 10, "e"),
    "zeros-in-both": _with_zeros(12, 11, "both"),
    "clustered": testing.bidiagonal(16, kind="clustered", seed=12),
    "identical": (np.ones(10), np.full(9, 1e-9)),
    "testing-graded": testing.bidiagonal(16, kind="graded", seed=13),
    "toeplitz": (np.ones(15), np.ones(14)),
    "small-inside-split": _small_inside(30, 14, 1e-30),
    "small-inside-kept": _small_inside(30, 15, 1e-18),
    "random-60": _random(60, 16),   # i.i.d.: localized vectors, values down to ~1e-3
}


@pytest.mark.parametrize("name", CASES)
def test_relative_accuracy(name):
    d, e = (np.asarray(x, dtype=np.float64) for x in CASES[name])
    s = bidiagonal_singular_values(d, e)
    ref = reference_singular_values(d, e)
    assert s.dtype == np.float64 and s.shape == d.shape
    assert np.all(s[:-1] >= s[1:]) and np.all(s >= 0)
    assert testing.relative_sv_error(s, ref) <= BOUND * len(d) * EPS


@pytest.mark.parametrize("e_mid, negligible", [(1e-16, True), (1e-14, False)])
def test_step_drops_a_negligible_e(e_mid, negligible):
    """The dqds step takes a negligible e as zero (so the caller splits there), and
    only such an e: |e_k| <= tol·√d_k."""
    q = np.array([4.0, 1.0, 9.0])        # qd array: squares of B's entries
    # d at the second row: 4·1/(4+1) = 0.8 (tau = 0), so the bound is 4ε·√0.8 ≈ 8e-16
    e = np.array([1.0, e_mid ** 2])
    qq, ee = np.empty(3), np.empty(2)
    dmin2, dn1, dn, emin = dqds._dqds_step(q, e, qq, ee, 0, 2, 0.0, dqds._TOL ** 2)
    assert dmin2 > 0 and dn1 > 0 and dn > 0
    assert (ee[1] == 0.0) == negligible and (emin == 0.0) == negligible
    assert ee[0] > 0


def test_zero_shift_d_is_the_inverse_column_norm():
    """What makes the split test sound: with no shift, d_k = 1/‖B⁻¹·e_k‖²."""
    d, e = _random(9, 17)
    b = np.diag(d) + np.diag(e, 1)
    qq, ee = np.empty(9), np.empty(8)
    *_, dn, _ = dqds._dqds_step(d ** 2, e ** 2, qq, ee, 0, 8, 0.0, 0.0)
    column = np.linalg.solve(b, np.eye(9)[:, 8])
    assert dn * (column @ column) == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_agrees_with_bidiagonal_qr(seed):
    n = 500
    d, e = _random(n, 20 + seed)
    qr = BidiagonalQR(d, e, eps=EPS, compute_rotations=False)
    qr.run(None, None, None)
    assert testing.relative_sv_error(bidiagonal_singular_values(d, e),
                                     qr.singular_values()[0]) < BOUND * n * EPS


def test_gaussian_bidiagonal_against_dense():
    # The bidiagonal of a Gaussian matrix (chi-distributed entries), the benchmark's input.
    n = 300
    rng = np.random.default_rng(30)
    d = np.sqrt(rng.chisquare(np.arange(n, 0, -1)))
    e = np.sqrt(rng.chisquare(np.arange(n - 1, 0, -1)))
    s = bidiagonal_singular_values(d, e)
    dense = scipy.linalg.svdvals(np.diag(d) + np.diag(e, 1))
    assert testing.sv_error(s, dense) < BOUND * n


def test_input_unchanged_and_deterministic():
    d, e = _graded(40, 100, 31)
    kept = d.copy(), e.copy()
    first = bidiagonal_singular_values(d, e)
    assert np.array_equal(d, kept[0]) and np.array_equal(e, kept[1])
    assert np.array_equal(first, bidiagonal_singular_values(d, e))


def test_empty():
    assert bidiagonal_singular_values([], []).shape == (0,)


@pytest.mark.parametrize("d, e, match", [
    ([1.0, 2.0], [1.0, 2.0], "n-1 = 1"),
    ([1.0], [1.0], "n-1 = 0"),
    ([1.0, np.nan], [1.0], "finite"),
    ([1.0, 2.0], [np.inf], "finite"),
])
def test_bad_input(d, e, match):
    with pytest.raises(ValueError, match=match):
        bidiagonal_singular_values(d, e)


def test_sweep_limit():
    with tunables.override(dqds_max_steps_per_value=0), \
            pytest.raises(LinAlgError, match="did not converge"):
        bidiagonal_singular_values(*_random(10, 40))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_svdvals_end_to_end(dtype):
    # Values only go through dqds; a graded matrix's small values stay accurate. The
    # relative comparison holds where both see the same bidiagonal: the one-stage one.
    a = testing.graded(60, 40, side="left", grading=1e-12, dtype=dtype, seed=41)
    s = gpusvd.svdvals(a, method="gr", reduction="one-stage")
    assert s.dtype == dtype
    ref = scipy.linalg.svdvals(a.astype(np.float64))
    assert testing.sv_error(s, ref) < 30 * 60
    _, s_uv, _ = gpusvd.svd(a, method="gr", reduction="one-stage")
    assert testing.relative_sv_error(s, s_uv) < BOUND * 60 * np.finfo(dtype).eps
