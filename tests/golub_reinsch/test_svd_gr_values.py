"""The singular values of the full Golub–Reinsch SVD are dqds', as with values only.

The bidiagonal QR's own values stop at its tolerance (~90·ε relative to neighbouring
entries); dqds' are accurate to a few ulps each. These tests fail with the QR's values:
on the two 600×600 matrices below they are 75 and 114 units (``testing.sv_error``) from
LAPACK's, the dqds values 15 and 16.
"""

import types

import numpy as np
import pytest
import scipy.linalg

import gpusvd
from gpusvd import testing
from gpusvd._core import tunables
from gpusvd.bidiagonal import qr_svd
from gpusvd.golub_reinsch import driver


@pytest.mark.parametrize("seed", [0, 2])
def test_full_svd_values_are_accurate(seed):
    a = testing.random_matrix(600, 600, seed=seed)
    u, s, vh = gpusvd.svd(a, method="gr", device="cpu")
    assert testing.sv_error(s, scipy.linalg.svdvals(a)) < 40
    assert testing.svd_residual(a, u, s, vh) < 10


@pytest.mark.parametrize("n", [qr_svd._DQDS_THREAD_MIN_N - 1,
                               qr_svd._DQDS_THREAD_MIN_N, 300])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_full_and_values_only_agree_bitwise(n, dtype):
    """Same bidiagonal, same dqds: on the thread (n >= the threshold) or after the QR
    (values only through the one-stage reduction, as the full SVD)."""
    a = testing.random_matrix(n, n, dtype=dtype, seed=n)
    _, s, _ = gpusvd.svd(a, method="gr", device="cpu", reduction="one-stage")
    assert np.array_equal(s, gpusvd.svdvals(a, method="gr", device="cpu",
                                            reduction="one-stage"))


def test_qr_values_are_kept_when_dqds_fails(monkeypatch):
    def fail(d, e):
        raise gpusvd.LinAlgError("dqds did not converge (test)")
    monkeypatch.setattr(qr_svd, "bidiagonal_singular_values", fail)
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
    assert cupy.array_equal(s, gpusvd.svdvals(a, method="gr", reduction="one-stage"))
    assert testing.sv_error(s.get(), scipy.linalg.svdvals(a.get())) < 60


def _put(device):
    if device == "cpu":
        return np.asarray
    import cupy
    return cupy.asarray


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_auto_reduction_rule(device, monkeypatch):
    """reduction="auto": values only two-stage from min(m, n) ≥ the device's tunable;
    with vectors one-stage outside the CPU's window (here set empty on the CPU: the GPU
    has none); the explicit reductions whatever the size."""
    shapes = []
    two_stage = driver.two_stage_singular_values
    monkeypatch.setattr(driver, "two_stage_singular_values",
                        lambda a, xp: shapes.append(a.shape) or two_stage(a, xp))
    put = _put(device)
    a, b = testing.random_matrix(30, 19, seed=1), testing.random_matrix(20, 40, seed=2)
    with tunables.override(**{f"two_stage_values_min_n_{device}": 20,
                              "two_stage_vectors_max_n_cpu": 0}):
        s_a = gpusvd.svdvals(put(a), method="gr", device=device)
        gpusvd.svd(put(b), method="gr", device=device)
        assert shapes == []
        s_b = gpusvd.svd(put(b), compute_uv=False, method="gr", device=device)
        gpusvd.svdvals(put(a), method="gr", reduction="two-stage", device=device)
        gpusvd.svdvals(put(b), method="gr", reduction="one-stage", device=device)
        gpusvd.svdvals(put(np.stack([b, b])), method="gr", device=device)
    assert shapes == [(20, 40), (30, 19), (20, 40), (20, 40)]
    for x, s in ((a, s_a), (b, s_b)):
        assert testing.sv_error(s, put(scipy.linalg.svdvals(x))) < 30 * 40


@pytest.mark.parametrize("n, expected", [(15, "one-stage"), (16, "two-stage"),
                                         (1099, "two-stage"), (1100, "one-stage")])
def test_auto_reduction_with_vectors_on_the_cpu(n, expected):
    assert driver.choose_reduction("auto", n, True, np) == expected
    assert driver.choose_reduction("one-stage", n, True, np) == "one-stage"


def test_auto_reduction_with_vectors_on_the_gpu():
    """Two-stage from the tunable on up (the namespace is told by its name alone)."""
    gpu = types.SimpleNamespace(__name__="cupy")
    low = tunables.get().two_stage_vectors_min_n_gpu
    assert driver.choose_reduction("auto", low - 1, True, gpu) == "one-stage"
    assert driver.choose_reduction("auto", low, True, gpu) == "two-stage"
    assert driver.choose_reduction("auto", 10 * low, True, gpu) == "two-stage"
    assert driver.choose_reduction("one-stage", low, True, gpu) == "one-stage"
