"""condensed.driver.two_stage_svd called directly (gr's property tests run it through
gpusvd.svd: tests/golub_reinsch/test_svd_gr.py, TestSVD_GR_TwoStage_*): each bidiagonal
solver of driver._VECTORS_SOLVERS on the CPU, matrices far from 1, shapes. Bounds in units
of max(m, n)·ε (testing's residual and orthogonality)."""

import numpy as np
import pytest
import scipy.linalg

from gpusvd import testing
from gpusvd.condensed import driver
from gpusvd.condensed.driver import two_stage_svd

BOUND = 30
DTYPES = (np.float32, np.float64, np.complex64, np.complex128)


def _check(a, full_matrices=False, **kw):
    saved = a.copy()
    u, s, vh = two_stage_svd(a, full_matrices=full_matrices, **kw)
    m, n = a.shape
    k = min(m, n)
    assert np.array_equal(a, saved)
    assert u.shape == ((m, m) if full_matrices else (m, k))
    assert vh.shape == ((n, n) if full_matrices else (k, n))
    assert u.dtype == a.dtype and vh.dtype == a.dtype and s.dtype == np.finfo(a.dtype).dtype
    assert np.all(s[:-1] >= s[1:]) and np.all(s >= 0)
    assert testing.svd_residual(a, u, s, vh) < BOUND
    assert testing.orthogonality(u) < BOUND
    assert testing.orthogonality(vh, rows=True) < BOUND
    return u, s, vh


@pytest.mark.parametrize("solver", sorted(driver._VECTORS_SOLVERS))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (40, 40), (60, 45), (45, 60), (100, 30)])
def test_each_bidiagonal_solver(shape, dtype, solver, monkeypatch):
    """The GPU's solver (the QR with its rotations) runs here on NumPy arrays."""
    monkeypatch.setitem(driver._VECTORS_SOLVERS, "numpy", driver._VECTORS_SOLVERS[solver])
    a = testing.random_matrix(*shape, dtype=dtype, seed=3)
    _check(a, bandwidth=8)
    _check(a, full_matrices=True, bandwidth=5)


@pytest.mark.parametrize("shape", [(0, 0), (0, 3), (3, 0)])
def test_empty(shape):
    a = np.zeros(shape)
    u, s, vh = two_stage_svd(a)
    assert u.shape == (shape[0], 0) and s.shape == (0,) and vh.shape == (0, shape[1])
    u, s, vh = two_stage_svd(a, full_matrices=True)
    assert np.array_equal(u, np.eye(shape[0])) and np.array_equal(vh, np.eye(shape[1]))


@pytest.mark.parametrize("scale", [1e-300, 1e300, 1e-320])
def test_far_from_one(scale):
    """Scaled into the safe range by an exact power of two and back, subnormal max|A|
    included."""
    base = testing.random_matrix(40, 30, seed=6)
    a = base * scale
    u, s, vh = two_stage_svd(a, bandwidth=6)
    assert np.isfinite(u).all() and np.isfinite(s).all() and np.isfinite(vh).all()
    ref = scipy.linalg.svdvals(base) * scale
    tol = max(BOUND * 40 * np.finfo(np.float64).eps * ref[0],
              40 * np.finfo(np.float64).smallest_subnormal)
    assert np.abs(s - ref).max() <= tol
    assert testing.orthogonality(u) < BOUND and testing.orthogonality(vh, rows=True) < BOUND
