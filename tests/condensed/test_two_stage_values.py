"""two_stage_singular_values (condensed/driver.py) against LAPACK's values, within 30·n·ε·‖A‖
(testing.sv_error is in units of ‖A‖·ε), on gpusvd.testing's matrices."""

import numpy as np
import pytest
import scipy.linalg

from gpusvd import testing
from gpusvd._core import tunables
from gpusvd.condensed.driver import two_stage_singular_values

BOUND = 30  # in units of n·ε, as gr's property tests (issue 2)
DTYPES = (np.float32, np.float64, np.complex64, np.complex128)


def _check(a, **kw):
    saved = a.copy()
    s = two_stage_singular_values(a, **kw)
    m, n = a.shape
    assert np.array_equal(a, saved)
    assert s.dtype == np.finfo(a.dtype).dtype and s.shape == (min(m, n),)
    assert np.all(s[:-1] >= s[1:]) and np.all(s >= 0)
    s_ref = scipy.linalg.svdvals(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64))
    assert testing.sv_error(s, s_ref) < BOUND * max(m, n, 1)
    return s


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["zero", "identity", "evenly_spaced", "near_underflow",
                                  "near_overflow"])
@pytest.mark.parametrize("shape", [(25, 25), (40, 21), (21, 40), (70, 66)])
def test_lapack_types(kind, shape, dtype):
    s = _check(testing.lapack_type(kind, *shape, dtype=dtype, seed=4), bandwidth=8)
    if kind == "zero":
        assert not s.any()
    if kind == "identity":
        assert np.all(s == 1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("side", ["left", "right", "both"])
def test_graded(side, dtype):
    _check(testing.graded(45, 33, side=side, dtype=dtype, seed=3), bandwidth=6)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rank", [0, 1, 7])
def test_low_rank(rank, dtype):
    _check(testing.low_rank(50, 40, rank, dtype=dtype, seed=5), bandwidth=8)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (0, 0), (0, 3), (3, 0), (1, 7), (7, 1), (2, 2),
                                   (5, 5), (100, 20), (60, 45), (45, 60), (130, 97)])
def test_shapes(shape, dtype):
    """Tall (QR first from m ≥ 1.6·n), square, wide, n < b (the default b), 1×1, empty."""
    _check(testing.random_matrix(*shape, dtype=dtype, seed=1))


@pytest.mark.parametrize("bandwidth", [1, 2, 5, 8, 31, 64])
def test_every_bandwidth(bandwidth):
    a = testing.random_matrix(80, 64, dtype=np.complex128, seed=2)
    s = _check(a, bandwidth=bandwidth)
    with tunables.override(two_stage_bandwidth=bandwidth):
        assert np.array_equal(two_stage_singular_values(a), s)


def test_bad_bandwidth():
    with pytest.raises(ValueError, match="bandwidth"):
        two_stage_singular_values(np.eye(4), bandwidth=0)
