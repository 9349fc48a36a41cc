"""Bisection for a bidiagonal's singular values (bidiagonal/bisection.py), the Numba twin.

Each value to 4·n·ε relative (bisection.py's bound: 1.5ε per entry over 2n − 1 entries,
Demmel & Kahan 1990 Thm 2, plus ε of the stopping rule) against the 60-digit oracle on
the case table (values down to 1e-306 in float64, 1e-30 in float32, zeros, clusters,
n = 1, 2), against dqds (bidiagonal/dqds.py) and LAPACK's bisection (dstebz on T_GK)
at n = 300-500; the Sturm count against the oracle's values; the invariants (descending,
>= 0, dtype, the input unchanged, the same bits every call and for any number of lanes);
the step limit; bad input.
"""

import numpy as np
import pytest
import scipy.linalg

from gpusvd import testing
from gpusvd._core import tunables
from gpusvd._core.errors import LinAlgError
from gpusvd.bidiagonal import bisection
from gpusvd.bidiagonal.bisection import (bidiagonal_singular_values_bisection,
                                        golub_kahan_offdiagonal)
from gpusvd.bidiagonal.dqds import bidiagonal_singular_values

from . import bisection_cases
from .bisection_cases import BOUND, CASES, CASES32, COUNT_CASES, SUBNORMAL32

DQDS_BOUND = 10  # dqds's own bound in units of n·ε (tests/bidiagonal/test_dqds.py)


def _eps(dtype):
    return float(np.finfo(dtype).eps)


def _check(s, n, dtype):
    assert s.dtype == dtype and s.shape == (n,)
    assert np.all(s[:-1] >= s[1:]) and np.all(s >= 0)


@pytest.mark.parametrize("name", CASES)
def test_relative_accuracy_float64(name):
    d, e = bisection_cases.case(name)
    s = bidiagonal_singular_values_bisection(d, e)
    _check(s, len(d), np.float64)
    ref = bisection_cases.reference(name)
    assert testing.relative_sv_error(s, ref) <= BOUND * len(d) * _eps(np.float64)


@pytest.mark.parametrize("name", CASES32)
def test_relative_accuracy_float32(name):
    d, e = bisection_cases.case(name, np.float32)
    s = bidiagonal_singular_values_bisection(d, e)
    _check(s, len(d), np.float32)
    ref = bisection_cases.reference(name, np.float32)
    assert testing.relative_sv_error(s.astype(np.float64), ref) <= (
        BOUND * len(d) * _eps(np.float32))


@pytest.mark.parametrize("name, dtype", [(name, np.float64) for name in CASES]
                         + [(name, np.float32) for name in CASES32])
def test_near_values_give_the_same_bits(name, dtype):
    """Bisection with ``near``, right or wrong, gives the bits it gives without."""
    d, e = bisection_cases.case(name, dtype)
    s = bidiagonal_singular_values_bisection(d, e)
    for label, near, slack in bisection_cases.nears(s):
        got = bidiagonal_singular_values_bisection(d, e, near=near, slack=slack)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, s, err_msg=label)


@pytest.mark.parametrize("kind", ["random", "graded", "clustered", "gaussian", "equal",
                                  "zeros", "rank-deficient"])
def test_near_a_divide_and_conquer_s_values(kind):
    """The solver's use (condensed/driver.py): the divide and conquer's values, within
    2·n·ε·σ₁ of the bisection's, as ``near``."""
    from gpusvd.bidiagonal.dc_svd import bidiagonal_svd_dc

    from .test_dc_svd import _family

    n = 700
    d, e = _family(kind, n, 3)
    _, near, _ = bidiagonal_svd_dc(d, e)
    s = bidiagonal_singular_values_bisection(d, e)
    np.testing.assert_array_equal(bidiagonal_singular_values_bisection(
        d, e, near=near, slack=2 * n * _eps(np.float64) * near[0]), s)


@pytest.mark.parametrize("near, slack, match", [
    (np.ones(3), None, "slack"), (np.ones(3), -1.0, "slack"), (np.ones(3), np.nan, "slack"),
    (np.ones(2), 0.1, "n = 3")])
def test_near_bad_input(near, slack, match):
    with pytest.raises(ValueError, match=match):
        bidiagonal_singular_values_bisection(np.ones(3), np.ones(2), near=near, slack=slack)


@pytest.mark.parametrize("name", COUNT_CASES)
def test_sturm_count(name):
    d, e, shifts = COUNT_CASES[name]
    d, e = np.asarray(d, np.float64), np.asarray(e, np.float64)
    ref = bisection_cases.reference_singular_values(d, e)
    t, exponent = golub_kahan_offdiagonal(np, d, e)
    x = np.ldexp(np.asarray(shifts, np.float64), -exponent)
    counts = np.empty(len(x), np.int64)
    bisection.count_below(t, x, bisection.bounds(np.float64).pivmin, counts)
    expected = [int(np.sum(ref < shift)) for shift in shifts]
    assert counts.tolist() == expected


def test_exact_zero_pivot_is_counted_as_a_nearby_shift():
    # B = [[1, 1], [0, 1]] at x = 1 (scaled: t = 1/2, x = 1/2): q₂ = 0 exactly, which
    # becomes −pivmin, so q₃ is huge and positive and q₄ ≈ −x: the count of x = 1 + δ.
    t = np.full(3, 0.5)
    counts = np.empty(1, np.int64)
    bisection.count_below(t, np.array([0.5]), bisection.bounds(np.float64).pivmin, counts)
    assert counts[0] == 1  # the values are 1.618 and 0.618


@pytest.mark.parametrize("kind", ["random", "graded", "clustered"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_agrees_with_dqds(kind, dtype):
    n = 400
    d, e = testing.bidiagonal(n, kind=kind, dtype=dtype, seed=21)
    s = bidiagonal_singular_values_bisection(d, e)
    _check(s, n, dtype)
    # dqds computes in float64 from the same entries: its error is negligible in float32
    ref = bidiagonal_singular_values(d, e)
    bound = (BOUND + DQDS_BOUND) * n * _eps(np.float64) if dtype == np.float64 \
        else BOUND * n * _eps(np.float32)
    assert testing.relative_sv_error(s.astype(np.float64), ref) <= bound


def test_gaussian_bidiagonal_against_lapack():
    # The bidiagonal of a Gaussian matrix (chi-distributed entries): the two-stage
    # reduction's output. LAPACK's dstebz bisects T_GK (zero diagonal) with abstol = the
    # smallest normal number, so it too is relatively accurate here.
    n = 300
    rng = np.random.default_rng(30)
    d = np.sqrt(rng.chisquare(np.arange(n, 0, -1)))
    e = np.sqrt(rng.chisquare(np.arange(n - 1, 0, -1)))
    s = bidiagonal_singular_values_bisection(d, e)
    off = np.empty(2 * n - 1)
    off[0::2], off[1::2] = d, e
    lapack = scipy.linalg.eigvalsh_tridiagonal(
        np.zeros(2 * n), off, select="i", select_range=(n, 2 * n - 1),
        lapack_driver="stebz", tol=np.finfo(np.float64).tiny)[::-1]
    assert testing.relative_sv_error(s, lapack) <= 2 * BOUND * n * _eps(np.float64)
    dense = scipy.linalg.svdvals(np.diag(d) + np.diag(e, 1))
    assert testing.sv_error(s, dense) < 30 * n


def test_graded_300_decades_large():
    # n = 200, entries from 1 to 1e-300: every value relative to itself, against dqds
    # (the oracle would take minutes at this size).
    n = 200
    d, e = bisection_cases.graded(n, 300, 40)
    s = bidiagonal_singular_values_bisection(d, e)
    assert s[-1] < 1e-295
    assert testing.relative_sv_error(s, bidiagonal_singular_values(d, e)) <= (
        (BOUND + DQDS_BOUND) * n * _eps(np.float64))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_below_the_floor_is_zero(dtype):
    tiny = float(np.finfo(dtype).smallest_normal)
    s = bidiagonal_singular_values_bisection(np.array([1.0, tiny / 64], dtype),
                                             np.array([0.0], dtype))
    assert s[1] == 0 and abs(s[0] - 1) <= _eps(dtype)


def test_scaling_is_exact():
    d, e = bisection_cases.graded(30, 100, 41)
    s = bidiagonal_singular_values_bisection(d, e)
    for k in (-600, -40, 40, 900):  # the values stay normal
        scaled = bidiagonal_singular_values_bisection(np.ldexp(d, k), np.ldexp(e, k))
        assert np.array_equal(scaled, np.ldexp(s, k))


def test_subnormal_float32_input():
    # Entries near 1e-40 (float32 subnormals) are scaled exactly into range first, which
    # a GPU's flush of float32 subnormals must not undo (the GPU test runs this too).
    d, e = SUBNORMAL32
    s = bidiagonal_singular_values_bisection(d, e)
    ref = bisection_cases.reference_singular_values(d.astype(np.float64), e.astype(np.float64))
    assert s.dtype == np.float32 and s[-1] > 0
    # the values are float32 subnormals too: their rounding adds half the smallest one
    rounding = float(np.finfo(np.float32).smallest_subnormal) / 2
    assert np.all(np.abs(s - ref) <= BOUND * 3 * _eps(np.float32) * ref + rounding)


def test_lanes_do_not_change_the_bits():
    d, e = testing.bidiagonal(37, kind="graded", seed=42)
    results = []
    for lanes in (1, 3, 8, 64):
        with tunables.override(bisection_cpu_lanes=lanes):
            results.append(bidiagonal_singular_values_bisection(d, e))
    for s in results[1:]:
        assert np.array_equal(s, results[0])


def test_identical_values_come_out_ordered():
    # Values equal to within ε follow the same midpoints, so they come out ordered.
    d, e = np.ones(50), np.full(49, 1e-18)
    s = bidiagonal_singular_values_bisection(d, e)
    assert np.all(s[:-1] >= s[1:]) and np.all(np.abs(s - 1) <= _eps(np.float64))


def test_input_unchanged_and_deterministic():
    d, e = bisection_cases.graded(40, 100, 31)
    kept = d.copy(), e.copy()
    first = bidiagonal_singular_values_bisection(d, e)
    assert np.array_equal(d, kept[0]) and np.array_equal(e, kept[1])
    assert np.array_equal(first, bidiagonal_singular_values_bisection(d, e))


def test_empty_and_lists():
    s = bidiagonal_singular_values_bisection(np.zeros(0), np.zeros(0))
    assert s.shape == (0,) and s.dtype == np.float64
    assert bidiagonal_singular_values_bisection([3], []).tolist() == pytest.approx([3.0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_step_limit_is_never_reached_on_finite_input(dtype):
    # The limit (max_bisection_steps) is derived, not tuned: ten times it gives the same
    # bits on values spanning the whole range of the dtype.
    decades = 300 if dtype == np.float64 else 30
    d, e = (x.astype(dtype) for x in bisection_cases.graded(50, decades, 43))
    t, _ = golub_kahan_offdiagonal(np, d, e)
    b = bisection.bounds(dtype)
    assert np.array_equal(bisection._numba_twin(t, 50, b),
                          bisection._numba_twin(t, 50, b._replace(max_steps=10 * b.max_steps)))


def test_nan_ends_within_the_limit():
    t = np.full(9, np.nan)
    s = bisection._numba_twin(t, 5, bisection.bounds(np.float64))
    assert s.shape == (5,)


@pytest.mark.parametrize("d, e, error, match", [
    ([1.0, 2.0], [1.0, 2.0], ValueError, "n-1 = 1"),
    ([1.0], [1.0], ValueError, "n-1 = 0"),
    ([1.0, np.nan], [1.0], LinAlgError, "finite"),
    ([1.0, 2.0], [np.inf], LinAlgError, "finite"),
])
def test_bad_input(d, e, error, match):
    with pytest.raises(error, match=match):
        bidiagonal_singular_values_bisection(np.array(d), np.array(e))


def test_every_namespace_has_a_twin():
    assert set(bisection._TWINS) == {"numpy", "cupy"}


@pytest.mark.parametrize("n, expected", [(1, 4), (1500, 4), (4096, 4), (4097, 3),
                                         (8192, 3), (16384, 2), (65536, 2)])
def test_gpu_levels_keep_the_lanes_within_the_target(n, expected):
    """The CUDA kernel's steps a round by n (bisection_cuda.levels): the most that keeps
    n·2^LEVELS within LANES, clamped to the shipped instantiations."""
    from gpusvd.bidiagonal import bisection_cuda

    assert bisection_cuda.levels(n) == expected
    if expected > bisection_cuda.LEVELS[0]:
        assert n << expected <= bisection_cuda.LANES


def test_gpu_levels_refuses_an_unshipped_instantiation():
    from gpusvd.bidiagonal import bisection_cuda

    with pytest.raises(ValueError, match="steps_a_round"):
        bisection_cuda.bisect(None, 4, None, steps_a_round=5)
