"""condensed.driver.two_stage_eigenvalues: dense Hermitian → band → tridiagonal → values."""

import numpy as np
import pytest
import scipy.linalg

from gpusvd import testing
from gpusvd.condensed.driver import two_stage_eigenvalues

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
BOUND = 30  # units of n·ε·‖A‖₂


def _hermitian(n, dtype, seed, spectrum=None):
    """Q·diag(spectrum)·Qᴴ (random normal Hermitian when ``spectrum`` is None)."""
    if spectrum is None:
        g = testing.random_matrix(n, n, dtype=np.complex128 if np.dtype(dtype).kind == "c"
                                  else np.float64, seed=seed)
        return ((g + g.conj().T) / 2).astype(dtype)
    q = testing.haar_orthogonal(n, dtype=np.complex128 if np.dtype(dtype).kind == "c"
                                else np.float64, seed=seed)
    return ((q * spectrum) @ q.conj().T).astype(dtype)


def _check(a, w, xp=np):
    ref = scipy.linalg.eigvalsh(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64))
    n = a.shape[0]
    unit = n * np.finfo(a.dtype).eps * max(np.abs(ref).max(), np.finfo(np.float64).tiny)
    w = xp.asnumpy(w) if xp is not np else w
    assert w.dtype == np.finfo(a.dtype).dtype and w.shape == (n,)
    assert np.all(np.diff(w) >= 0)
    assert np.abs(w - ref).max() <= BOUND * unit, np.abs(w - ref).max() / unit


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("n", "b"), [(1, 4), (2, 1), (3, 2), (40, 1), (40, 8), (97, 16),
                                      (130, 32), (200, None)])
def test_random_hermitian(n, b, dtype):
    a = _hermitian(n, dtype, seed=n + 7)
    a0 = a.copy()
    _check(a, two_stage_eigenvalues(a, bandwidth=b))
    assert np.array_equal(a, a0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["clustered", "graded", "indefinite_graded", "rank_5",
                                  "zero", "identity"])
def test_spectra(kind, dtype):
    n = 90
    spectrum = {"clustered": np.r_[np.ones(45), 1 + 1e-9 * np.arange(45)],
                "graded": np.logspace(0, -12, n),
                "indefinite_graded": np.logspace(0, -12, n) * (-1) ** np.arange(n),
                "rank_5": np.r_[np.arange(1, 6.0), np.zeros(n - 5)],
                "zero": np.zeros(n), "identity": np.ones(n)}[kind]
    a = _hermitian(n, dtype, seed=3, spectrum=spectrum)
    _check(a, two_stage_eigenvalues(a, bandwidth=8))


@pytest.mark.parametrize("scale", [1e-300, 1e300, 1e-320])
def test_far_from_one(scale):
    """Scaled into the safe range and back (dlascl's rule): finite, accurate values."""
    a = _hermitian(60, np.float64, seed=5) * scale
    w = two_stage_eigenvalues(a, bandwidth=8)
    assert np.isfinite(w).all()
    ref = scipy.linalg.eigvalsh(a / scale) * scale
    tol = BOUND * 60 * np.finfo(np.float64).eps * np.abs(ref).max()
    tol = max(tol, 60 * np.finfo(np.float64).smallest_subnormal)  # 1e-320: subnormal input
    assert np.abs(w - ref).max() <= tol


def test_only_the_lower_triangle_is_read():
    a = _hermitian(50, np.complex128, seed=9)
    junk = np.triu(np.full((50, 50), 7 + 3j), 1) + 1j * np.diag(np.arange(50.0))
    w = two_stage_eigenvalues(np.tril(a, -1) + np.diag(a.diagonal().real) + junk, bandwidth=6)
    _check(a, w)


def test_empty_and_not_square():
    assert two_stage_eigenvalues(np.zeros((0, 0))).shape == (0,)
    with pytest.raises(ValueError, match="square"):
        two_stage_eigenvalues(np.zeros((3, 4)))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("n", "b"), [(3, 2), (97, 16), (300, 32)])
def test_gpu_matches_lapack(n, b, dtype):
    import cupy

    a = _hermitian(n, dtype, seed=n)
    w = two_stage_eigenvalues(cupy.asarray(a), bandwidth=b)
    assert isinstance(w, cupy.ndarray)
    _check(a, w, cupy)
