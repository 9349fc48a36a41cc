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


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_leaves_solved_during_the_chase_give_the_same_bits(dtype, monkeypatch):
    """On the GPU the divide and conquer's leaves are solved on host threads while the
    chase still runs (driver._leaves_ahead): every leaf is taken (the rows read early
    were the final ones), and U, s, Vᴴ are bit for bit those of the call that solves
    them after the chase."""
    import contextlib

    import cupy

    a = cupy.asarray(np.random.default_rng(7).standard_normal((1500, 1500)).astype(dtype))
    feeds = []

    class Recorded(driver.LeafFeed):
        def __init__(self, *args):
            super().__init__(*args)
            feeds.append(self)

    monkeypatch.setattr(driver, "LeafFeed", Recorded)
    fed = [x.get() for x in two_stage_svd(a)]
    assert len(feeds) == 1 and feeds[0].taken == len(feeds[0].leaves) > 1
    monkeypatch.setattr(driver, "_leaves_ahead", lambda bd, xp: contextlib.nullcontext())
    after = [x.get() for x in two_stage_svd(a)]
    for x, y in zip(fed, after):
        assert np.array_equal(x, y)
