"""The parallel steps (pointwise and blocked inner solve) against the naive oracle, and
each CUDA kernel against its Numba twin on identical input."""

import numpy as np
import pytest

import naive_takagi as naive
from gpusvd import testing
from gpusvd.takagi import steps
from gpusvd.takagi.ordering import chess_tournament
from gpusvd.takagi.rotation import takagi_rotation

DTYPES = (np.complex64, np.complex128)


def _symmetric(n, dtype, seed):
    return testing.complex_symmetric(n, dtype=dtype, seed=seed)


def _unitary(n, dtype, seed):
    return np.ascontiguousarray(testing.haar_orthogonal(n, dtype=dtype, seed=seed))


def _tol(dtype, steps_done=1):
    return 32 * np.sqrt(steps_done) * np.finfo(dtype).eps


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [2, 5, 8, 13])
def test_step_matches_naive(n, dtype):
    table = chess_tournament(n)
    a = _symmetric(n, dtype, seed=n)
    u = _unitary(n, dtype, seed=n + 1)
    for s in range(len(table)):
        ref_a, ref_u = naive.apply_step(a.astype(np.complex128), u.astype(np.complex128),
                                        table[s], takagi_rotation)
        got_a, got_u = a.copy(), u.copy()
        steps.jacobi_step(got_a, got_u, table[s])
        scale = np.abs(a).max()
        np.testing.assert_allclose(got_a, ref_a, rtol=0, atol=_tol(dtype) * scale)
        np.testing.assert_allclose(got_u, ref_u, rtol=0, atol=_tol(dtype))
        a, u = got_a, got_u


@pytest.mark.parametrize("n", [6, 9])
def test_sweep_reduces_off_diagonal(n):
    a = _symmetric(n, np.complex128, seed=3)
    u = np.eye(n, dtype=np.complex128)
    work = a.copy()
    off = [np.linalg.norm(work - np.diag(np.diag(work)))]
    for _ in range(6):
        steps.jacobi_sweep(work, u, chess_tournament(n))
        off.append(np.linalg.norm(work - np.diag(np.diag(work))))
    assert off[-1] < 1e-13 * np.linalg.norm(a)  # quadratic convergence: done in 6 sweeps
    assert testing.orthogonality(u) < 10
    assert np.linalg.norm(u @ work @ u.T - a) < 1e-13 * np.linalg.norm(a)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("block, sweeps", [(1, 1), (3, 1), (4, 2)])
def test_solve_block_pairs_matches_naive(block, sweeps, dtype):
    nblocks = 4
    n = nblocks * block
    a = _symmetric(n, dtype, seed=block)
    pairs = chess_tournament(nblocks)[1]
    local = chess_tournament(2 * block)
    g = steps.solve_block_pairs(a, pairs, block, sweeps, local)
    assert g.shape == (nblocks // 2, 2 * block, 2 * block) and g.dtype == dtype
    for p, (bi, bj) in enumerate(pairs):
        index = np.r_[bi * block:(bi + 1) * block, bj * block:(bj + 1) * block]
        tile = a[np.ix_(index, index)].astype(np.complex128)
        acc = np.eye(2 * block, dtype=np.complex128)
        for _ in range(sweeps):
            for step in local:
                tile, acc = naive.apply_step(tile, acc, step, takagi_rotation)
        np.testing.assert_allclose(g[p], acc, rtol=0, atol=_tol(dtype, sweeps * 4 * block))
    assert np.array_equal(a, _symmetric(n, dtype, seed=block))  # a is not modified


def test_solve_block_pairs_leaves_zero_padding_alone():
    a = np.zeros((8, 8), np.complex128)
    a[:5, :5] = _symmetric(5, np.complex128, seed=4)
    g = steps.solve_block_pairs(a, np.array([[0, 1]], np.int32), 4, 1, chess_tournament(8))[0]
    assert np.array_equal(g[5:, :], np.eye(8)[5:, :])  # padded indices: exact identity
    assert np.array_equal(g[:, 5:], np.eye(8)[:, 5:])


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [2, 7, 64, 257])
def test_cuda_step_matches_numba(n, dtype):
    import cupy

    from gpusvd.takagi import steps_cuda

    table = chess_tournament(n)
    a = _symmetric(n, dtype, seed=n)
    u = _unitary(n, dtype, seed=n + 1)
    d_a, d_u = cupy.asarray(a), cupy.asarray(u)
    d_table = cupy.asarray(table)
    count = min(len(table), 5)
    for s in range(count):
        steps.jacobi_step(a, u, table[s])
        steps_cuda.jacobi_step(d_a, d_u, d_table[s])
    scale = np.abs(a).max()
    np.testing.assert_allclose(d_a.get(), a, rtol=0, atol=_tol(dtype, count) * scale)
    np.testing.assert_allclose(d_u.get(), u, rtol=0, atol=_tol(dtype, count))
    steps.jacobi_sweep(a, u, table)
    steps_cuda.jacobi_sweep(d_a, d_u, d_table)
    tol = _tol(dtype, count + len(table))
    np.testing.assert_allclose(d_a.get(), a, rtol=0, atol=tol * scale)
    np.testing.assert_allclose(d_u.get(), u, rtol=0, atol=tol)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("block, sweeps", [(1, 1), (4, 1), (8, 2), (32, 1)])
def test_cuda_solve_block_pairs_matches_numba(block, sweeps, dtype):
    import cupy

    from gpusvd.takagi import steps_cuda

    nblocks = 6
    n = nblocks * block
    a = _symmetric(n, dtype, seed=block)
    a[n - 3:, :] = a[:, n - 3:] = 0  # zero padding in the last block
    pairs = chess_tournament(nblocks)[2]
    want = steps.solve_block_pairs(a, pairs, block, sweeps, chess_tournament(2 * block))
    got = steps_cuda.solve_block_pairs(cupy.asarray(a), cupy.asarray(pairs), block, sweeps)
    np.testing.assert_allclose(got.get(), want, rtol=0,
                               atol=_tol(dtype, sweeps * 2 * block))
