"""The inner pointwise Jacobi (CPU twin of the pStep core) on batches of small matrices."""

import numpy as np
import pytest

from gpusvd.jacobi.inner import inner_jacobi
from gpusvd.jacobi.rotations import orthogonality_tol
from gpusvd.jacobi.strategies import pivot_strategy
from gpusvd.testing import random_matrix
from .naive_jacobi import one_sided_jacobi

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def _batch(dtype, batch, m, k, seed):
    return np.stack([random_matrix(m, k, dtype=dtype, seed=seed + i) for i in range(batch)])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("strategy", ["row-reverse", "brent-luk", "modulus"])
def test_converges_to_orthogonal_sorted_columns(dtype, strategy):
    batch, m, k = 4, 24, 16
    a = _batch(dtype, batch, m, k, 10)
    g, v = a.copy(), np.repeat(np.eye(k, dtype=dtype)[None], batch, axis=0)
    real = np.finfo(dtype).dtype
    rot, sweeps = inner_jacobi(g, v, np.ones(k, real), pivot_strategy(strategy, k), 30,
                               orthogonality_tol(dtype, m))
    eps = float(np.finfo(dtype).eps)
    assert rot.dtype == np.int64 and sweeps.dtype == np.int32
    assert (sweeps < 30).all() and (rot > 0).all()
    norms = np.linalg.norm(g, axis=1)
    assert (np.diff(norms, axis=1) <= 0).all()                      # step 5: sorted
    gram = np.conj(g.transpose(0, 2, 1)) @ g / (norms[:, :, None] * norms[:, None, :])
    assert np.abs(gram - np.eye(k)).max() < 4 * k * eps
    assert np.abs(a @ v - g).max() < 8 * k * eps * np.abs(a).max()
    assert np.abs(np.conj(v.transpose(0, 2, 1)) @ v - np.eye(k)).max() < 4 * k * eps
    np.testing.assert_allclose(norms, np.linalg.svd(a, compute_uv=False), rtol=50 * k * eps)


def test_matches_the_textbook_jacobi():
    a = random_matrix(12, 8, seed=3)
    g, v = a[None].copy(), np.eye(8)[None].copy()
    inner_jacobi(g, v, np.ones(8), pivot_strategy("row", 8), 30, 1e-15)
    np.testing.assert_allclose(np.linalg.norm(g[0], axis=0), one_sided_jacobi(a, 1e-15),
                               rtol=1e-14)


def test_one_sweep_and_counts():
    a = _batch(np.float64, 3, 16, 16, 1)
    g, v = a.copy(), np.repeat(np.eye(16)[None], 3, axis=0)
    rot, sweeps = inner_jacobi(g, v, np.ones(16), pivot_strategy("row", 16), 1, 1e-15)
    assert (sweeps == 1).all() and (rot <= 16 * 15 // 2).all() and (rot > 0).all()
    # An orthogonal matrix: nothing to rotate, one sweep.
    q = np.linalg.qr(a[0])[0][None].copy()
    rot, sweeps = inner_jacobi(q, np.eye(16)[None].copy(), np.ones(16),
                               pivot_strategy("row", 16), 5, 1e-12)
    assert rot[0] == 0 and sweeps[0] == 1


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_hyperbolic_pairs_keep_v_j_unitary(dtype):
    k = 8
    signs = np.array([1, 1, 1, 1, 1, -1, -1, -1], dtype=np.finfo(dtype).dtype)
    a = _batch(dtype, 2, 12, k, 7)
    g, v = a.copy(), np.repeat(np.eye(k, dtype=dtype)[None], 2, axis=0)
    rot, sweeps = inner_jacobi(g, v, signs, pivot_strategy("row-reverse", k), 40, 1e-15)
    assert (sweeps < 40).all()
    j = np.diag(signs)
    vjv = np.conj(v.transpose(0, 2, 1)) @ j @ v
    assert np.abs(vjv - j).max() < 1e-11 * np.abs(v).max() ** 2
    norms = np.linalg.norm(g, axis=1)
    gram = np.conj(g.transpose(0, 2, 1)) @ g / (norms[:, :, None] * norms[:, None, :])
    assert np.abs(gram - np.eye(k)).max() < 1e-12
    assert np.abs(a @ v - g).max() < 1e-12 * np.abs(g).max()


def test_bad_arguments():
    g, v, s = np.zeros((1, 4, 4)), np.zeros((1, 4, 4)), np.ones(4)
    pairs = pivot_strategy("row", 4)
    for bad in [dict(g=np.zeros((1, 3, 4))), dict(g=np.zeros((1, 5, 3))),
                dict(v=np.zeros((1, 3, 3))), dict(signs=np.ones(3)),
                dict(signs=np.ones(4, np.float32)), dict(pairs=pairs.astype(np.int64)),
                dict(max_sweeps=0), dict(g=np.zeros((1, 4, 4), np.int64)),
                dict(v=np.broadcast_to(np.eye(4), (1, 4, 4)))]:
        args = dict(g=g, v=v, signs=s, pairs=pairs, max_sweeps=1, tol=1e-15) | bad
        with pytest.raises(ValueError):
            inner_jacobi(**args)
