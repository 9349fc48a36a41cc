"""Scaling by powers of two (``_core.scaling``): exact, subnormals included.

The GPU flushes float32 subnormals in and out of its arithmetic (H100, 2026-11-25: a
matrix of entries ≈ 1e-40 read as zero), so the float32 paths work on the integer bits.
On the CPU NumPy does not flush, and its float64 arithmetic is the exact reference here.
"""

import numpy as np
import pytest

from gpusvd._core import scaling, tunables

SCALES = [1e-45, 1e-40, 1e-38, 1e-20, 1.0, 1e30, 1e38]
EXPONENTS = [-160, -20, 0, 20, 140]


def _exact(x, k):
    with np.errstate(all="ignore"):
        return (x.astype(np.float64) * 2.0 ** k).astype(np.float32)


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("k", EXPONENTS)
def test_float32_times_power_of_two_is_exact(scale, k):
    x = (np.random.default_rng(0).uniform(-3, 3, 500) * scale).astype(np.float32)
    x[:3] = (0.0, -0.0, np.float32(scale))
    with np.errstate(over="ignore"):  # entries scaled past float32's range become ±inf
        got = scaling.times_power_of_two(x, k, np)
    assert np.array_equal(got.view(np.int32), _exact(x, k).view(np.int32))


def test_complex64_scaled_by_parts_per_matrix():
    rng = np.random.default_rng(1)
    z = ((rng.standard_normal((2, 3, 4)) + 1j * rng.standard_normal((2, 3, 4))) * 1e-40
         ).astype(np.complex64)
    k = np.array([130, 131]).reshape(2, 1, 1)
    got = scaling.times_power_of_two(z, k, np)
    assert got.dtype == np.complex64
    for i in range(2):
        ref = _exact(z[i].view(np.float32), int(k[i, 0, 0])).view(np.complex64)
        assert np.array_equal(got[i], ref)


def test_scale_values_rounds_to_subnormal():
    s = np.array([1.0, 1.5, 3.0], np.float32)
    got = scaling.scale_values(s, -140, np)
    assert np.array_equal(got, _exact(s, -140)) and got[0] > 0


def test_largest_entries_sees_subnormals_and_non_finite():
    stack = np.array([[[1e-40, -3e-40]], [[np.nan, 1.0]], [[np.inf, 2.0]], [[-3.0, 1.0]]],
                     np.float32)
    big = scaling.largest_entries(stack, np)
    assert big[0] == np.float32(3e-40) and np.isnan(big[1]) and np.isinf(big[2])
    assert big[3] == 3.0


@pytest.mark.parametrize("shape", [(3, 40, 7), (2, 7, 40), (1, 1, 90)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
def test_largest_entries_in_two_passes_past_the_one_pass_size(shape, dtype):
    """Matrices past the tunable ``scaling_one_pass_entries`` (2^31 − 1 entries by default)
    take the maxima of their rows or columns first: the same maxima, NaN and infinity
    included."""
    rng = np.random.default_rng(1)
    stack = (rng.standard_normal(shape) * 1e-39).astype(dtype)
    stack[1 % shape[0], -1, -1] = np.nan
    stack[0, 0, shape[2] // 2] = -np.inf if shape[0] > 1 else 7e-39
    one_pass = scaling.largest_entries(stack, np)
    with tunables.override(scaling_one_pass_entries=30):
        two_pass = scaling.largest_entries(stack, np)
    assert np.array_equal(one_pass, two_pass, equal_nan=True)
    magnitudes = np.maximum(np.abs(stack.real), np.abs(stack.imag)).astype(np.float64)
    assert np.array_equal(two_pass, magnitudes.max(axis=(1, 2)), equal_nan=True)
