"""The outer level's pieces in one process: one outer block step
(``gpusvd.distributed.local``) with the orthogonality test that ends it early and its
block sweeps per pair, and the pairs per rank (``gpusvd.distributed.outer``)."""

import numpy as np
import pytest

from gpusvd._core import tunables
from gpusvd.distributed.local import outer_block_step
from gpusvd.distributed.outer import _pairs_per_rank
from gpusvd.jacobi.driver import DEFAULTS
from gpusvd.jacobi.rotations import orthogonality_tol
from gpusvd.testing import haar_orthogonal, random_matrix

OPTIONS = DEFAULTS._replace(variant="block-oriented")
SHORTEN = ["cholesky", "qr"]


def pair_with_cosine(cosine, m=200, k=40, seed=0):
    """Rows of a pair (k columns of length m, transposed): orthogonal columns of
    graded norms, except that columns 3 and 17 have the cosine ``cosine``."""
    q = haar_orthogonal(m, seed=seed)[:, :k]
    g = q * np.geomspace(1.0, 1e-3, k)
    g[:, 17] = (cosine * q[:, 3] + np.sqrt(1 - cosine ** 2) * q[:, 17]) * 1e-2
    return np.ascontiguousarray(g.T)


def step(gt, shorten="cholesky", **kw):
    vt = np.eye(gt.shape[0])
    options = OPTIONS._replace(shorten=shorten)
    return outer_block_step(gt.copy(), vt, np.ones(gt.shape[0]), np, options, **kw)


@pytest.mark.parametrize("shorten", SHORTEN)
def test_orthogonal_pair_ends_after_the_gram_matrix(shorten):
    gt = pair_with_cosine(0.0)
    out, vt, rotated, skipped = step(gt, shorten)
    assert skipped and not rotated
    assert np.array_equal(out, gt) and np.array_equal(vt, np.eye(len(gt)))


@pytest.mark.parametrize("shorten", SHORTEN)
def test_the_test_is_u_sqrt_m(shorten):
    tol = orthogonality_tol(np.float64, 200)
    assert step(pair_with_cosine(0.5 * tol), shorten)[3]
    out, vt, rotated, skipped = step(pair_with_cosine(4 * tol), shorten)
    assert not skipped
    assert not np.array_equal(vt, np.eye(len(vt)))   # the pair was rotated


def test_a_users_tol_replaces_u_sqrt_m():
    gt = pair_with_cosine(1e-10)
    assert not step(gt)[3]
    options = OPTIONS._replace(tol=1e-8)
    assert outer_block_step(gt, None, np.ones(len(gt)), np, options)[3]


def test_skip_orthogonal_false_runs_every_step():
    out, vt, rotated, skipped = step(pair_with_cosine(0.0), skip_orthogonal=False)
    assert not skipped and not rotated


@pytest.mark.parametrize("shorten", SHORTEN)
def test_a_step_orthogonalizes_the_pair(shorten):
    gt = random_matrix(40, 120, seed=2)
    out, vt, rotated, skipped = step(gt, shorten, pair_sweeps=30)
    assert rotated and not skipped
    np.testing.assert_allclose(vt @ gt, out, atol=1e-13)   # G·V̂, V̂ = vtᵀ
    assert not step(out, shorten)[2]      # converged: no proper rotation is left


def test_more_pair_sweeps_leave_the_pair_more_orthogonal():
    gt = random_matrix(96, 200, seed=3)

    def worst_cosine(rows):
        h = rows @ rows.T
        d = np.sqrt(np.diag(h))
        return (np.abs(h - np.diag(np.diag(h))) / np.outer(d, d)).max()

    one, four = (worst_cosine(step(gt, pair_sweeps=s)[0]) for s in (1, 4))
    assert four < 0.03 * one    # measured 0.17 and 0.0017


@pytest.mark.parametrize("n, ranks, wanted, c", [
    (4096, 2, 4, 4), (4096, 2, 1, 1), (200, 2, 4, 3), (127, 2, 2, 1), (10, 4, 3, 1)])
def test_pairs_per_rank_keep_block_columns_one_block_wide(n, ranks, wanted, c):
    with tunables.override(jacobi_block_width=16):
        assert _pairs_per_rank(n, ranks, wanted, np) == c


class _GpuLike:
    """Any namespace that is not NumPy: block_width takes the GPU's."""


@pytest.mark.parametrize("n, ranks, c", [
    (16384, 2, 2), (16384, 4, 1), (8192, 2, 1), (32768, 2, 4), (1000, 2, 1)])
def test_pairs_per_rank_default_keeps_gpu_pairs_4096_wide(n, ranks, c):
    with tunables.override(distributed_pair_width=4096, jacobi_block_width_gpu=32):
        assert _pairs_per_rank(n, ranks, None, _GpuLike()) == c
    assert _pairs_per_rank(n, ranks, None, np) == 1     # CPU ranks: the paper's one pair
