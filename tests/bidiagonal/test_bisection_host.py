"""kernels/bisection.cu compiled for the host (host_bisection.py), no GPU: the CUDA
source must give the Numba twin's bits on the whole case table, in float32 and float64,
on graded bidiagonals of n = 300 spanning the dtype's range, and the Sturm count's
table. Both twins do the same IEEE operations in the same order (no fma: g++ with
-ffp-contract=off here, mul_rn on the GPU), and both bisect every value from the same
interval by the same rule, so equal bits is the tolerance."""

import numpy as np
import pytest

from gpusvd import testing
from gpusvd.bidiagonal import bisection
from gpusvd.bidiagonal.bisection import golub_kahan_offdiagonal

from . import bisection_cases
from . import host_bisection
from ..jacobi import host_kernel
from .bisection_cases import CASES, CASES32, COUNT_CASES


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    return host_kernel.built_or_skip(host_bisection.build, tmp_path_factory, "host_bisection")


def _both(host, d, e):
    t, _ = golub_kahan_offdiagonal(np, d, e)
    b = bisection.bounds(d.dtype)
    return host.bisect(t, len(d), b), bisection._numba_twin(t, len(d), b)


@pytest.mark.parametrize("name", CASES)
def test_float64_cases_bit_for_bit(host, name):
    kernel, twin = _both(host, *bisection_cases.case(name))
    np.testing.assert_array_equal(kernel, twin)


@pytest.mark.parametrize("name", CASES32)
def test_float32_cases_bit_for_bit(host, name):
    kernel, twin = _both(host, *bisection_cases.case(name, np.float32))
    assert kernel.dtype == np.float32
    np.testing.assert_array_equal(kernel, twin)


@pytest.mark.parametrize("dtype, decades", [(np.float64, 300), (np.float32, 30)])
@pytest.mark.parametrize("kind", ["graded", "random", "clustered"])
def test_larger_bit_for_bit(host, dtype, decades, kind):
    if kind == "graded":
        d, e = (x.astype(dtype) for x in bisection_cases.graded(300, decades, 50))
    else:
        d, e = testing.bidiagonal(300, kind=kind, dtype=dtype, seed=51)
    kernel, twin = _both(host, d, e)
    np.testing.assert_array_equal(kernel, twin)


@pytest.mark.parametrize("dtype, decades", [(np.float64, 300), (np.float32, 30)])
@pytest.mark.parametrize("kind", ["table", "graded", "random", "clustered"])
def test_near_bit_for_bit(host, dtype, decades, kind):
    """With ``near``, right or wrong (bisection_cases.nears), the kernel gives the Numba
    twin's bits, and both the bits without it."""
    if kind == "table":
        pairs = [bisection_cases.case(name, dtype)
                 for name in (CASES if dtype == np.float64 else CASES32)]
    elif kind == "graded":
        pairs = [tuple(x.astype(dtype) for x in bisection_cases.graded(300, decades, 52))]
    else:
        pairs = [testing.bidiagonal(300, kind=kind, dtype=dtype, seed=53)]
    for d, e in pairs:
        t, exponent = golub_kahan_offdiagonal(np, d, e)
        b = bisection.bounds(d.dtype)
        s = bisection._numba_twin(t, len(d), b)
        for label, near, slack in bisection_cases.nears(np.ldexp(s, exponent)):
            scaled, slack = np.ldexp(near, -exponent).astype(dtype), np.ldexp(slack, -exponent)
            kernel = host.bisect(t, len(d), b, scaled, slack)
            np.testing.assert_array_equal(kernel, s, err_msg=label)
            np.testing.assert_array_equal(
                bisection._numba_twin(t, len(d), b, scaled, slack), s, err_msg=label)


@pytest.mark.parametrize("name", COUNT_CASES)
def test_sturm_count_table(host, name):
    d, e, shifts = COUNT_CASES[name]
    d, e = np.asarray(d, np.float64), np.asarray(e, np.float64)
    ref = bisection_cases.reference_singular_values(d, e)
    t, exponent = golub_kahan_offdiagonal(np, d, e)
    x = np.ldexp(np.asarray(shifts, np.float64), -exponent)
    counts = host.count_below(t, x, bisection.bounds(np.float64).pivmin)
    assert counts.tolist() == [int(np.sum(ref < shift)) for shift in shifts]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_node_of_a_round_is_the_bisection_s_point(host, dtype):
    """A GPU round counts at the 15 nodes of the next four steps' tree at once
    (kernels/bisection.cu, LEVELS = 4; the host build runs LEVELS = 1): each node's point
    must be, bit for bit, the midpoint one thread's bisection reaches there by the
    decisions that lead to it, on intervals from geometric (hi > 2·lo, far apart) to
    arithmetic ones a few ulps wide."""
    real = np.dtype(dtype).type
    two = real(2)

    def midpoint(lo, hi):
        return np.sqrt(lo) * np.sqrt(hi) if hi > lo + lo else (lo + hi) * real(0.5)

    rng = np.random.default_rng(4)
    tiny = np.finfo(dtype).smallest_normal
    intervals = [(real(tiny), real(4)), (real(1e-30), real(3e-30)), (real(0.5), real(0.75))]
    for _ in range(20):
        lo = real(rng.uniform(0.1, 2.0))
        intervals.append((lo, lo * real(1 + 16 * np.finfo(dtype).eps)))
        intervals.append((lo, lo * two ** real(rng.integers(2, 40))))
    for lo0, hi0 in intervals:
        for node in range(1, 16):
            lo, hi, at, step = lo0, hi0, 8, 4
            while True:  # one thread's steps to the node
                mid = midpoint(lo, hi)
                if node == at:
                    break
                lo, hi = (lo, mid) if node < at else (mid, hi)
                at, step = (at - step if node < at else at + step), step // 2
            got = host.node_point(lo0, hi0, node, 4, dtype)
            assert real(got) == mid, (lo0, hi0, node)
