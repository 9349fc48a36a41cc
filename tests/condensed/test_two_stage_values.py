"""two_stage_singular_values (condensed/driver.py) against LAPACK's values, within 30·n·ε·‖A‖
(testing.sv_error is in units of ‖A‖·ε), on gpusvd.testing's matrices; its values
solvers (driver._VALUES_SOLVERS: dqds on the CPU, bisection on the GPU) against each
other on the bidiagonals that stages 1 and 2 emit, each value relative to itself; the
GPU's solver, bisection in the working precision, run end to end on the CPU."""

import numpy as np
import pytest
import scipy.linalg

import gpusvd
from gpusvd import testing
from gpusvd._core import tunables
from gpusvd.condensed import driver
from gpusvd.condensed.band import band_of, reduce_to_band
from gpusvd.condensed.bulge import band_to_bidiagonal
from gpusvd.condensed.driver import two_stage_singular_values

from ..bidiagonal import bisection_cases

BOUND = 30  # in units of n·ε, as gr's property tests
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


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scale", [1e-300, 1e300, 1e-320, 1e-42, 1e36])
def test_far_from_one(scale, dtype):
    """Called directly (no front end), a matrix far from 1 is scaled into the safe range by
    an exact power of two and back, subnormal max|A| included: finite, accurate values."""
    if not float(np.finfo(dtype).smallest_subnormal) <= scale <= float(np.finfo(dtype).max) / 100:
        pytest.skip("not representable in this dtype")
    base = testing.random_matrix(40, 30, dtype=np.float64, seed=6)
    a = (base * scale).astype(dtype)
    s = two_stage_singular_values(a, bandwidth=6)
    assert np.isfinite(s).all()
    ref = scipy.linalg.svdvals(a.astype(np.float64))
    tol = BOUND * 40 * np.finfo(dtype).eps * ref[0]
    tol = max(tol, 40 * float(np.finfo(dtype).smallest_subnormal))  # subnormal input
    assert np.abs(s - ref).max() <= tol


def test_bad_bandwidth():
    with pytest.raises(ValueError, match="bandwidth"):
        two_stage_singular_values(np.eye(4), bandwidth=0)


def _matrix(kind, dtype):
    n = 120
    if kind == "graded":
        return testing.graded(n, n, side="both", dtype=dtype, seed=6)
    if kind == "low_rank":
        return testing.low_rank(n, n, 9, dtype=dtype, seed=7)
    if kind in ("near_underflow", "near_overflow"):
        return testing.lapack_type(kind, n, n, dtype=dtype, seed=8)
    return testing.random_matrix(n, n, dtype=dtype, seed=9)


KINDS = ["random", "graded", "low_rank", "near_underflow", "near_overflow"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", KINDS)
def test_bisection_agrees_with_dqds_on_stage_two_bidiagonals(kind, dtype):
    """Both solvers are relatively accurate on a bidiagonal (bisection 4·n·ε in its own
    precision, dqds a few ulps in float64), so on the same bidiagonal every value agrees
    to that, however small: low rank gives values near ε·‖A‖, graded down to 1e-10."""
    a = _matrix(kind, dtype)
    bd = band_to_bidiagonal(band_of(reduce_to_band(np.asfortranarray(a), bandwidth=8)))
    s_bisection = driver._bisection(bd)
    s_dqds = driver._dqds_on_host(bd)
    real = np.finfo(dtype).dtype
    assert s_bisection.dtype == real
    n = len(s_dqds)
    bound = (bisection_cases.BOUND + 10) * n * float(np.finfo(real).eps)
    assert testing.relative_sv_error(s_bisection.astype(np.float64), s_dqds) <= bound


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", KINDS)
def test_the_gpu_solver_on_the_cpu(kind, dtype, monkeypatch):
    """The GPU's path (bisection in the working precision: float32 stays float32) run
    on the CPU through the public function, to gr's bound."""
    monkeypatch.setitem(driver._VALUES_SOLVERS, "numpy", driver._bisection)
    a = _matrix(kind, dtype)
    s = gpusvd.svdvals(a, method="gr", reduction="two-stage", device="cpu")
    assert s.dtype == np.finfo(dtype).dtype
    assert np.all(s[:-1] >= s[1:]) and np.all(s >= 0)
    ref = scipy.linalg.svdvals(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64))
    assert testing.sv_error(s, ref) < BOUND * a.shape[1]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(300, 200), (1000, 1000)])
def test_gpu_values_by_bisection_on_the_device(shape, dtype, monkeypatch):
    """On the GPU the bidiagonal's values are bisection's, on the device, in the working
    precision (float32 for float32 and complex64), to gr's bound against LAPACK."""
    import cupy

    seen = []
    bisect = driver.bidiagonal_singular_values_bisection

    def spy(d, e):
        seen.append((type(d), d.dtype))
        return bisect(d, e)
    monkeypatch.setattr(driver, "bidiagonal_singular_values_bisection", spy)
    a = testing.random_matrix(*shape, dtype=dtype, seed=10)
    s = gpusvd.svdvals(cupy.asarray(a), method="gr", reduction="two-stage")
    real = np.finfo(dtype).dtype
    assert seen == [(cupy.ndarray, real)]
    assert isinstance(s, cupy.ndarray) and s.dtype == real
    s = s.get()
    assert np.all(s[:-1] >= s[1:]) and np.all(s >= 0)
    ref = scipy.linalg.svdvals(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64))
    assert testing.sv_error(s, ref) < BOUND * max(shape)
