"""condensed.driver.two_stage_eigh: dense Hermitian → band → tridiagonal → values and
vectors, against LAPACK (scipy.linalg.eigh): the values to BOUND·n·ε·‖A‖₂, the residual
‖A − V·W·Vᴴ‖_F/(‖A‖_F·n·ε) and ‖VᴴV − I‖_F/(n·ε) (gpusvd.testing's units) to BOUND."""

import numpy as np
import pytest
import scipy.linalg

from gpusvd import testing
from gpusvd._core import profile
from gpusvd.condensed.driver import two_stage_eigh

from test_two_stage_eigenvalues import BOUND, DTYPES, _check, _hermitian

SIZES = (0, 1, 2, 3, 33, 100, 300)
BANDWIDTHS = (1, 2, 8, 32)
_PHASES = ("eigh_stage1", "eigh_stage2", "eigh_solver", "eigh_back_transform")


def _check_eigh(a, w, v, xp=np):
    """Values against LAPACK (``_check``: dtype, ascending, error), then V: its dtype and
    namespace, the residual and orthogonality in units of n·ε."""
    n = a.shape[0]
    assert w.shape == (n,) and v.shape == (n, n) and v.dtype == a.dtype
    assert isinstance(w, xp.ndarray) and isinstance(v, xp.ndarray)
    if n:
        _check(a, w, xp)
    assert testing.svd_residual(a, v, w, v.conj().T) <= BOUND
    assert testing.orthogonality(v) <= BOUND


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("b", BANDWIDTHS)
@pytest.mark.parametrize("n", SIZES)
def test_random_hermitian(n, b, dtype):
    a = _hermitian(n, dtype, seed=n + b)
    a0 = a.copy()
    _check_eigh(a, *two_stage_eigh(a, bandwidth=b))
    assert np.array_equal(a, a0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["clustered", "repeated", "rank_5", "zero", "identity",
                                  "graded"])
def test_spectra(kind, dtype):
    """Repeated and clustered eigenvalues (the divide and conquer deflates them), and
    rank-deficient matrices: V stays orthonormal and A = V·W·Vᴴ."""
    n = 90
    spectrum = {"clustered": np.r_[np.ones(45), 1 + 1e-9 * np.arange(45)],
                "repeated": np.repeat([-2.0, 0.5, 0.5 + 1e-14, 3.0], [20, 30, 10, 30]),
                "rank_5": np.r_[np.arange(1, 6.0), np.zeros(n - 5)],
                "zero": np.zeros(n), "identity": np.ones(n),
                "graded": np.logspace(0, -12, n) * (-1) ** np.arange(n)}[kind]
    a = _hermitian(n, dtype, seed=3, spectrum=spectrum)
    _check_eigh(a, *two_stage_eigh(a, bandwidth=8))


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("scale", [1e-300, 1e300, 1e-320])
def test_far_from_one(scale, dtype):
    """Scaled into the safe range and back by a power of two (exact): finite, accurate
    values, and V the eigenvectors of A·2^e (exact, max|A·2^e| in [1/2, 1)), judged with
    A·2^e's own values: subnormal values carry a few digits only."""
    a = _hermitian(60, dtype, seed=5) * scale
    w, v = two_stage_eigh(a, bandwidth=8)
    assert np.isfinite(w).all() and np.isfinite(v).all()
    exponent = -np.frexp(np.abs(a).max())[1]
    scaled = np.ldexp(a.real, exponent) + (1j * np.ldexp(a.imag, exponent) if a.imag.any() else 0)
    ref = np.ldexp(scipy.linalg.eigvalsh(scaled), -exponent)
    tol = BOUND * 60 * np.finfo(np.float64).eps * np.abs(ref).max()
    tol = max(tol, 60 * np.finfo(np.float64).smallest_subnormal)  # 1e-320: subnormal input
    assert np.abs(w - ref).max() <= tol
    assert testing.orthogonality(v) <= BOUND
    assert testing.svd_residual(scaled, v, scipy.linalg.eigvalsh(scaled), v.conj().T) <= BOUND


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_only_the_lower_triangle_is_read(dtype):
    a = _hermitian(50, dtype, seed=9)
    junk = np.triu(np.full((50, 50), 7), 1).astype(dtype)
    if a.dtype.kind == "c":
        junk += np.triu(np.full((50, 50), 3j), 1) + 1j * np.diag(np.arange(50.0))
    scribbled = np.tril(a, -1) + np.diag(a.diagonal().real) + junk
    _check_eigh(a, *two_stage_eigh(scribbled, bandwidth=6))


def test_phases_are_recorded():
    with profile.recording() as phases:
        two_stage_eigh(_hermitian(40, np.float64, seed=1), bandwidth=4)
    assert set(_PHASES) <= set(phases)  # with the solver's own (tridiagonal_dc.py)


def test_not_square():
    with pytest.raises(ValueError, match="square"):
        two_stage_eigh(np.zeros((3, 4)))


@pytest.mark.gpu
@pytest.mark.parametrize(("n", "dtype"), [(300, np.float32), (300, np.float64),
                                          (1000, np.float32), (1000, np.float64),
                                          (300, np.complex128)])
def test_gpu_matches_lapack(n, dtype):
    """CuPy in, CuPy out: stage 1 and the back-transformations on the device, stage 2 by
    the CUDA chase (real) or the Numba loop on the host (complex)."""
    import cupy

    a = _hermitian(n, dtype, seed=n)
    w, v = two_stage_eigh(cupy.asarray(a), bandwidth=32)
    _check_eigh(a, w, v, cupy)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["repeated", "rank_5"])
def test_gpu_spectra(kind):
    import cupy

    n = 300
    spectrum = {"repeated": np.repeat([-2.0, 0.5, 3.0], [100, 150, 50]),
                "rank_5": np.r_[np.arange(1, 6.0), np.zeros(n - 5)]}[kind]
    a = _hermitian(n, np.float64, seed=4, spectrum=spectrum)
    w, v = two_stage_eigh(cupy.asarray(a), bandwidth=32)
    _check_eigh(a, w, v, cupy)
