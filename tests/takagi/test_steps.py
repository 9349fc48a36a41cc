"""The parallel steps (pointwise and blocked inner solve) against the naive oracle, and
each CUDA kernel against its Numba twin on identical input."""

import numpy as np
import pytest

from . import naive_takagi as naive
from gpusvd import testing
from gpusvd.takagi import driver, steps
from gpusvd.takagi.ordering import chess_tournament
from gpusvd.takagi.rotation import takagi_rotation

DTYPES = (np.complex64, np.complex128)
BOUND = 100  # orthogonality and congruence of a sweep, units of n·ε


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


def _off(a):
    return np.linalg.norm(a - np.diag(np.diag(a)))


# The CUDA kernels and their Numba twins round differently (FMA contraction; Numba
# evaluates parts of the complex64 step in float64), and a Jacobi sweep on a random matrix
# amplifies rounding chaotically: a rotation of two nearly equal diagonal moduli is
# ill-conditioned, and everything after it inherits the difference. Measured on the CPU
# with 1-ulp perturbations of the input of the Numba twin alone: after one sweep at
# n = 257 its A moved by 10⁴–10⁵ times the tolerance below, the blocked inner solve
# (b = 32) by 15–26 times. So the twins are compared entry by entry on graded input
# (naive_takagi.graded_symmetric: same perturbation, ≤ 3 ε on A, ≤ 100 ε on U after two
# sweeps), and on random input through what rounding does not change: the congruence,
# unitarity, and the off-diagonal norm reached (stable to 0.5 % under the perturbations).
# The CUDA index logic itself was checked by emulating every launch in Python: bit-equal
# to the Numba twins on these inputs, and no thread touches another's entries.


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [2, 7, 64, 257])
def test_cuda_step_matches_numba(n, dtype):
    import cupy

    from gpusvd.takagi import steps_cuda

    table = chess_tournament(n)
    a = naive.graded_symmetric(n, 1e-3, dtype=dtype, seed=n)
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
@pytest.mark.parametrize("n", [7, 64, 257])
def test_cuda_sweep_on_random_input(n, dtype):
    """A sweep of the CUDA kernels is a unitary congruence that reduces off(A) as much
    as the Numba sweep does."""
    import cupy

    from gpusvd.takagi import steps_cuda

    a0 = _symmetric(n, dtype, seed=n)
    table = chess_tournament(n)
    a, u = a0.copy(), np.eye(n, dtype=dtype)
    steps.jacobi_sweep(a, u, table)
    d_a, d_u = cupy.asarray(a0), cupy.eye(n, dtype=dtype)
    steps_cuda.jacobi_sweep(d_a, d_u, cupy.asarray(table))
    got_a, got_u = d_a.get(), d_u.get()
    eps = np.finfo(dtype).eps
    assert testing.orthogonality(got_u) < BOUND
    assert np.linalg.norm(got_u @ got_a @ got_u.T - a0) < BOUND * n * eps * np.linalg.norm(a0)
    np.testing.assert_allclose(_off(got_a), _off(a), rtol=0.1)


def _block_pair_solves(block, sweeps, dtype, a):
    import cupy

    from gpusvd.takagi import steps_cuda

    pairs = chess_tournament(a.shape[0] // block)[2]
    want = steps.solve_block_pairs(a, pairs, block, sweeps, chess_tournament(2 * block))
    got = steps_cuda.solve_block_pairs(cupy.asarray(a), cupy.asarray(pairs), block, sweeps)
    return pairs, want, got.get()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("block, sweeps", [(1, 1), (4, 1), (8, 2), (32, 1)])
def test_cuda_solve_block_pairs_matches_numba(block, sweeps, dtype):
    n = 6 * block
    a = naive.graded_symmetric(n, 1e-2, dtype=dtype, seed=block)
    a[n - 3:, :] = a[:, n - 3:] = 0  # zero padding in the last block
    _, want, got = _block_pair_solves(block, sweeps, dtype, a)
    np.testing.assert_allclose(got, want, rtol=0, atol=_tol(dtype, sweeps * 2 * block))
    assert np.array_equal(got[0][-3:], np.eye(2 * block)[-3:])  # pair 0 holds the padding


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("block", [8, 32])
def test_cuda_solve_block_pairs_on_random_input(block, dtype):
    """Each G_p is unitary and diagonalizes its tile as far as the Numba twin's does."""
    n = 6 * block
    a = _symmetric(n, dtype, seed=block)
    pairs, want, got = _block_pair_solves(block, 1, dtype, a)
    for p, (bi, bj) in enumerate(pairs):
        index = np.r_[bi * block:(bi + 1) * block, bj * block:(bj + 1) * block]
        tile = a[np.ix_(index, index)]
        assert testing.orthogonality(got[p]) < BOUND
        np.testing.assert_allclose(_off(got[p].conj().T @ tile @ got[p].conj()),
                                   _off(want[p].conj().T @ tile @ want[p].conj()), rtol=0.1)


def test_the_floor_speeds_the_sweeps_of_a_degenerate_matrix():
    """35 zero and 25 equal Takagi values (thewalrus's test_degenerate): with entries at
    most ε·‖A‖_F left alone the sweeps reach the driver's tolerance in fewer sweeps (the
    zero cluster no longer stirs its neighbours), to the same accuracy."""
    rng = np.random.default_rng(4)
    q = testing.haar_orthogonal(60, dtype=np.complex128, seed=4)
    a0 = (q * np.r_[np.zeros(25), np.full(25, rng.random()), np.zeros(10)]) @ q.T
    norm, eps = np.linalg.norm(a0), np.finfo(float).eps
    taken = []
    for floor in (0.0, eps * norm):
        a, u = a0.copy(), np.eye(60, dtype=a0.dtype)
        for sweep in range(80):
            if _off(a) <= driver.default_tol(60, a.dtype) * norm:
                break
            steps.jacobi_sweep(a, u, chess_tournament(60), floor)
        taken.append(sweep)
        assert testing.svd_residual(a0, u, np.diag(a), u.T) < 10
        assert testing.orthogonality(u) < 10
    assert taken[1] <= 30 and taken[1] < taken[0], taken
