"""The Cholesky shortening kernel (kernels/gram_cholesky.cu, gram_cholesky_cuda.py).

Without a GPU the kernel's source runs on the CPU (host_gram_cholesky.py, one thread per
block) against its twin on the same H, ``blocked.factor_gram`` (NumPy's Cholesky): R
upper triangular, RᴴR = H to the rounding of H, and R equal to the twin's to rounding, for
every dtype, on random, graded, rank-deficient pairs and pairs with zero columns; pairs
that are not positive definite after the shift are refactored with a larger one (as the
host path does) and stay finite; V is set to the identity. On the GPU (marked gpu) the
CUDA kernel must agree with the host build, and the blocked driver that uses it with the
CPU.
"""

import numpy as np
import pytest

from gpusvd import testing
from gpusvd.jacobi import blocked
from gpusvd.jacobi.gram_cholesky_cuda import launch_config
from . import host_gram_cholesky
from . import host_kernel

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


@pytest.fixture(scope="module")
def host_gc(tmp_path_factory):
    return host_kernel.built_or_skip(host_gram_cholesky.build, tmp_path_factory,
                                     "host_gram_cholesky")


def _pairs(kind, m, k, dtype, batch=3, seed=0):
    """Rows x (batch, k, m) of block pairs: the transposed columns of random, column-graded,
    rank-deficient matrices, or random ones with k/4 zero columns."""
    make = {
        "random": lambda s: testing.random_matrix(m, k, dtype=dtype, seed=s),
        "graded": lambda s: testing.graded(m, k, side="right", grading=1e-10, dtype=dtype,
                                           seed=s),
        "rank": lambda s: testing.low_rank(m, k, max(1, k // 3), dtype=dtype, seed=s),
        "zeros": lambda s: testing.random_matrix(m, k, dtype=dtype, seed=s)
        * (np.arange(k) % 4 != 1),
    }[kind]
    return np.ascontiguousarray(np.stack([make(seed + i).T for i in range(batch)]))


def _shift(k, m, dtype):
    gram = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
    return k * max(m, k) * float(np.finfo(gram).eps) / 2


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["random", "graded", "rank", "zeros"])
@pytest.mark.parametrize("m,k", [(64, 64), (100, 16), (40, 7)])
def test_host_kernel_matches_the_host_path(host_gc, dtype, kind, m, k):
    x = _pairs(kind, m, k, dtype, seed=m + k)
    shift = _shift(k, m, dtype)
    h = blocked.gram(np, x)
    h0 = h.copy()
    r, v = host_gc(h, shift, dtype, kv=k + 2)
    twin = blocked.factor_gram(np, h, shift, dtype)
    np.testing.assert_array_equal(h, h0)
    assert r.dtype == dtype and r.shape == (3, k, k)
    assert np.all(np.tril(r, -1) == 0)
    np.testing.assert_array_equal(v, np.broadcast_to(np.eye(k + 2, dtype=dtype), v.shape))
    eps = float(np.finfo(dtype).eps)
    d = np.sqrt(np.diagonal(h, axis1=1, axis2=2).real)
    scale = np.where(d > 0, d, 1.0)[:, None, :]
    if kind != "rank":
        # R agrees with the twin's to rounding, column j relative to its norm d_j (not
        # for rank-deficient pairs: their trailing block is set by the rounding errors).
        assert (np.abs(r.astype(complex) - twin) / scale).max() <= 50 * k * max(eps, 1e-15)
    # RᴴR = H + shift·diag(d²) to the rounding of H (in units of d_i d_j).
    wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
    rr = r.astype(wide)
    back = rr.conj().transpose(0, 2, 1) @ rr
    dd = scale * scale.transpose(0, 2, 1)
    assert (np.abs(back - h) / dd).max() <= 10 * k * (eps + shift)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_not_positive_definite_is_refactored_with_a_larger_shift(host_gc, dtype):
    # Two equal columns and a third -1 times the first: H is singular with rounding
    # pushing pivots below zero once shift is 0.
    rng = np.random.default_rng(3)
    c = rng.standard_normal(50).astype(dtype)
    x = np.stack([c, c, -c, rng.standard_normal(50).astype(dtype)])[None]
    h = blocked.gram(np, x)
    h[0, 1, 1] *= 1 - 1e-12           # make the trailing pivot negative after rounding
    r = host_gc(h, 1e-14, dtype)
    assert np.all(np.isfinite(r.view(np.float64)))
    twin = blocked.factor_gram(np, h, 1e-14, dtype)     # the host path's retries
    assert np.all(np.isfinite(twin.view(np.float64)))
    assert abs(r[0, 0, 0]) == pytest.approx(np.linalg.norm(c), rel=1e-12)
    np.testing.assert_allclose(r[0, 0], twin[0, 0], rtol=0, atol=1e-12 * np.linalg.norm(c))


@pytest.mark.parametrize("shift", [0.0, 1e-14])
def test_not_finite_gram_ends_with_nan(host_gc, shift):
    """A NaN Gram matrix fails every Cholesky pivot: the retries stop at Gershgorin's
    bound (k + 1) with a NaN factor (NumPy's Cholesky on the host path returns NaN
    itself); neither loops forever (a NaN matrix once hung the GPU Jacobi SVD). A
    zero ``shift`` grows too."""
    h = np.full((1, 5, 5), np.nan)
    h[0][np.diag_indices(5)] = 1.0
    assert np.isnan(host_gc(h, shift, np.float64)).all()
    assert np.isnan(blocked.factor_gram(np, h, shift, np.float64)).any()


def test_host_path_grows_a_zero_shift():
    """Singular after rounding with shift 0: the host path's retries start from k·ε."""
    c = np.random.default_rng(4).standard_normal(40)
    h = blocked.gram(np, np.stack([c, c, -c])[None])
    h[0, 1, 1] *= 1 - 1e-12
    r = blocked.factor_gram(np, h, 0.0, np.float64)
    assert np.all(np.isfinite(r))


def test_zero_pair_gives_zero_r(host_gc):
    h = np.zeros((2, 6, 6))
    r, v = host_gc(h, 1e-15, np.float64, kv=6)
    assert np.all(r == 0)
    np.testing.assert_array_equal(v[1], np.eye(6))


def test_launch_config():
    assert launch_config(64, False, 227 * 1024).shared_bytes == 65 * 64 * 8 + 64 * 8
    assert launch_config(64, True, 227 * 1024).shared_bytes == 65 * 64 * 16 + 64 * 8
    assert launch_config(2, False, 1024).threads == 32
    with pytest.raises(ValueError, match="shared memory"):
        launch_config(200, True, 227 * 1024)
    with pytest.raises(ValueError):
        launch_config(0, False, 1024)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["random", "graded", "rank", "zeros"])
def test_cuda_kernel_agrees_with_host_build(host_gc, dtype, kind):
    import cupy as cp

    from gpusvd.jacobi.gram_cholesky_cuda import gram_cholesky

    m, k = 128, 64
    x = _pairs(kind, m, k, dtype, batch=5, seed=7)
    shift = _shift(k, m, dtype)
    h = blocked.gram(np, x)
    r_host, v_host = host_gc(h, shift, dtype, kv=k)
    r_gpu, v_gpu = gram_cholesky(cp.asarray(h), shift, dtype, kv=k)
    r_gpu, v_gpu = r_gpu.get(), v_gpu.get()
    np.testing.assert_array_equal(v_gpu, v_host)
    assert np.all(np.tril(r_gpu, -1) == 0)
    d = np.sqrt(np.diagonal(h, axis1=1, axis2=2).real)
    scale = np.where(d > 0, d, 1.0)[:, None, :]
    eps = float(np.finfo(dtype).eps)
    wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
    rr = r_gpu.astype(wide)
    back = rr.conj().transpose(0, 2, 1) @ rr
    assert (np.abs(back - h) / (scale * scale.transpose(0, 2, 1))).max() \
        <= 10 * k * (eps + shift)
    if kind != "rank":
        assert (np.abs(r_gpu.astype(complex) - r_host) / scale).max() \
            <= 50 * k * max(eps, 1e-15)
