"""The singular values of the full Golub–Reinsch SVD are dqds', as with values only.

The bidiagonal QR's own values stop at its tolerance (~90·ε relative to neighbouring
entries); dqds' are accurate to a few ulps each. These tests fail with the QR's values:
on the two 600×600 matrices below they are 75 and 114 units (``testing.sv_error``) from
LAPACK's, the dqds values 15 and 16.
"""

import numpy as np
import pytest
import scipy.linalg

import gpusvd
from gpusvd import testing
from gpusvd.golub_reinsch import driver


@pytest.mark.parametrize("seed", [0, 2])
def test_full_svd_values_are_accurate(seed):
    a = testing.random_matrix(600, 600, seed=seed)
    u, s, vh = gpusvd.svd(a, method="gr", device="cpu")
    assert testing.sv_error(s, scipy.linalg.svdvals(a)) < 40
    assert testing.svd_residual(a, u, s, vh) < 10


@pytest.mark.parametrize("n", [driver._DQDS_THREAD_MIN_N - 1, driver._DQDS_THREAD_MIN_N, 300])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_full_and_values_only_agree_bitwise(n, dtype):
    """Same bidiagonal, same dqds: on the thread (n >= the threshold) or after the QR."""
    a = testing.random_matrix(n, n, dtype=dtype, seed=n)
    _, s, _ = gpusvd.svd(a, method="gr", device="cpu")
    assert np.array_equal(s, gpusvd.svdvals(a, method="gr", device="cpu"))


def test_qr_values_are_kept_when_dqds_fails(monkeypatch):
    def fail(d, e):
        raise gpusvd.LinAlgError("dqds did not converge (test)")
    monkeypatch.setattr(driver, "bidiagonal_singular_values", fail)
    a = testing.random_matrix(100, 80, seed=5)
    u, s, vh = gpusvd.svd(a, method="gr", device="cpu", full_matrices=False)
    assert testing.sv_error(s, scipy.linalg.svdvals(a)) < 20 * 80
    assert testing.svd_residual(a, u, s, vh) < 10


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_gpu_full_and_values_only_agree(dtype):
    import cupy

    a = cupy.asarray(testing.random_matrix(700, 700, dtype=dtype, seed=3))
    _, s, _ = gpusvd.svd(a, method="gr")
    assert cupy.array_equal(s, gpusvd.svdvals(a, method="gr"))
    assert testing.sv_error(s.get(), scipy.linalg.svdvals(a.get())) < 60
