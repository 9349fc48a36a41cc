"""The CUDA inner solve of the blocked Takagi sweep (``takagi_solve_block_pairs``), built
for the host with a thread per CUDA thread (host_takagi_steps.py), against its Numba twin
(:func:`gpusvd.takagi.steps.solve_block_pairs`): the same operations in the same order per
entry, so in complex128 the same bits, whatever the number of warps. In complex64 the
libraries' single-precision hypot and sqrt may round differently from Numba's, so there
the two agree to rounding."""

import numpy as np
import pytest

from . import host_takagi_steps
from . import naive_takagi as naive
from gpusvd import testing
from gpusvd.takagi import driver, steps
from gpusvd.takagi.ordering import chess_tournament

DTYPES = (np.complex64, np.complex128)


@pytest.fixture(scope="module")
def host_kernels(tmp_path_factory):
    kernels = host_takagi_steps.build(tmp_path_factory.mktemp("takagi_host"))
    if kernels is None:
        pytest.skip("g++ is not on PATH")
    return kernels


@pytest.fixture(scope="module")
def host_solve(host_kernels):
    return host_kernels.solve_block_pairs


def _twins(host_solve, a, block, sweeps, threads):
    pairs = chess_tournament(a.shape[0] // block)[1]
    want = steps.solve_block_pairs(a, pairs, block, sweeps, chess_tournament(2 * block))
    return pairs, want, host_solve(a, pairs, block, sweeps, threads)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("block, sweeps, threads", [(1, 1, 64), (4, 1, 64), (4, 2, 96),
                                                    (8, 1, 128), (8, 3, 64), (16, 1, 256),
                                                    (5, 2, 64), (9, 1, 64)])
def test_host_build_matches_numba(host_solve, block, sweeps, threads, dtype):
    n = 4 * block
    a = testing.complex_symmetric(n, dtype=dtype, seed=block + sweeps)
    a[n - 3:, :] = a[:, n - 3:] = 0  # zero padding in the last block
    pairs, want, got = _twins(host_solve, a, block, sweeps, threads)
    if dtype == np.complex128:
        np.testing.assert_array_equal(got, want)
    else:
        steps_done = sweeps * 2 * block
        np.testing.assert_allclose(got, want, rtol=0,
                                   atol=32 * np.sqrt(steps_done) * np.finfo(dtype).eps)
    last = int(np.flatnonzero(pairs.ravel() == n // block - 1)[0]) // 2
    width = 2 * block
    rows = width - 3 if pairs[last][1] == n // block - 1 else block - 3
    # the padding's rows of G stay the identity's (rows of the padded indices)
    if rows >= 0:
        assert np.array_equal(got[last][rows:rows + 3], np.eye(width)[rows:rows + 3])


@pytest.mark.parametrize("threads", [64, 128])
def test_host_build_matches_numba_with_a_floor(host_solve, threads):
    """The sweeps' floor (entries at most ε·‖A‖_F left alone) in both builds: a graded
    matrix, whose small block sits near the floor, gets the same bits."""
    block, sweeps = 8, 3
    a = naive.graded_symmetric(4 * block, 1e-7, dtype=np.complex128, seed=5)
    floor = float(np.finfo(float).eps * np.linalg.norm(a))
    pairs = chess_tournament(4)[1]
    want = steps.solve_block_pairs(a, pairs, block, sweeps, chess_tournament(2 * block),
                                   floor)
    got = host_solve(a, pairs, block, sweeps, threads, floor)
    np.testing.assert_array_equal(got, want)
    unfloored = steps.solve_block_pairs(a, pairs, block, sweeps,
                                        chess_tournament(2 * block))
    assert not np.array_equal(want, unfloored)   # the floor left some entries alone


@pytest.mark.parametrize("dtype", DTYPES)
def test_host_build_diagonalizes_graded_tiles(host_solve, dtype):
    block, sweeps = 8, 4
    n = 4 * block
    a = naive.graded_symmetric(n, 1e-2, dtype=dtype, seed=7)
    pairs, _, got = _twins(host_solve, a, block, sweeps, 128)
    eps = np.finfo(dtype).eps
    for p, (bi, bj) in enumerate(pairs):
        index = np.r_[bi * block:(bi + 1) * block, bj * block:(bj + 1) * block]
        tile = a[np.ix_(index, index)].astype(np.complex128)
        assert testing.orthogonality(got[p]) < 100
        g = got[p].astype(np.complex128)
        d = g.conj().T @ tile @ g.conj()
        off = np.linalg.norm(d - np.diag(np.diag(d)))
        assert off < 100 * 2 * block * eps * np.linalg.norm(tile)


# The one-launch factorization of a matrix that is one tile (takagi_solve_one_tile),
# against the driver's steps on the host (takagi.driver on NumPy): the same scaling and
# symmetrization, the same tournament steps with the tile updated in place instead of by
# GEMMs, so the same values to rounding.

def _one_tile(host_kernels, a, threads, tol=None, max_sweeps=driver.MAX_SWEEPS):
    """The kernel on one matrix (a stack of one)."""
    n = a.shape[0]
    tol = driver.default_tol(n, a.dtype) if tol is None else tol
    s, u, status = host_kernels.solve_one_tile(a[None], tol, max_sweeps, threads)
    return s[0], u[0], status[0]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, threads", [(1, 64), (2, 64), (5, 64), (16, 96), (31, 128),
                                        (64, 256)])
def test_one_tile_factors_the_matrix(host_kernels, n, threads, dtype):
    a = testing.complex_symmetric(n, dtype=dtype, seed=n) * 1e3
    s, u, status = _one_tile(host_kernels, a, threads)
    sweeps, off2, norm2, asym2, _, off_diagonal, scale = status
    peak = np.maximum(np.abs(a.real), np.abs(a.imag)).max()
    assert 2.0 ** (scale - 1) <= peak < 2.0 ** scale      # A·2^-k: its largest in [1/2, 1)
    assert asym2 == 0 and off_diagonal == (n > 1)
    eps = np.finfo(dtype).eps
    assert off2 <= driver.default_tol(n, dtype) ** 2 * norm2
    assert sweeps <= 12 if n > 1 else sweeps == 0
    assert np.all(s[:-1] >= s[1:]) and np.all(s >= 0)
    assert testing.orthogonality(u) < 10
    assert testing.svd_residual(a, u, s, u.T) < 10
    want = np.linalg.svd(a.astype(np.complex128), compute_uv=False)
    np.testing.assert_allclose(s, want, rtol=0, atol=10 * n * eps * want[0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_one_tile_of_a_diagonal_matrix_is_its_phase_matrix(host_kernels, dtype):
    """No sweep: the values in descending order (ties in index order), U the phases
    e^{i arg(d)/2} in their columns, exactly 1 for a non-negative real d."""
    d = np.array([0.5, -1j, 2.0, 0.0, -1j], dtype)
    s, u, status = _one_tile(host_kernels, np.diag(d), 64)
    assert status[0] == 0 and status[1] == 0 and status[5] == 0
    order = [2, 1, 4, 0, 3]
    assert np.array_equal(s, np.abs(d)[order])
    assert np.array_equal(u != 0, np.eye(5, dtype=bool)[:, order])
    assert u[2, 0] == 1 and u[0, 3] == 1 and u[3, 4] == 1
    np.testing.assert_allclose(u[1, 1] ** 2, -1j, rtol=0, atol=2 * np.finfo(dtype).eps)


@pytest.mark.parametrize("dtype", DTYPES)
def test_one_tile_reports_no_convergence(host_kernels, dtype):
    b = testing.complex_symmetric(12, dtype=dtype, seed=3)
    _, _, status = _one_tile(host_kernels, b, 64, tol=1e-30, max_sweeps=2)
    assert status[0] == 2 and status[1] > 1e-60 * status[2]


@pytest.mark.parametrize("threads", [64, 160])
def test_one_tile_matches_the_sweeps_of_the_driver(host_kernels, threads):
    n = 24
    a = testing.complex_symmetric(n, dtype=np.complex128, seed=11) * 3e-7
    s1, u1, _ = _one_tile(host_kernels, a, threads)
    s2, u2 = driver.factorize(a, np, tol=driver.default_tol(n, a.dtype),
                              max_sweeps=driver.MAX_SWEEPS)
    eps = np.finfo(float).eps
    np.testing.assert_allclose(s1, s2, rtol=0, atol=100 * n * eps * s2[0])
    sign = np.sign(np.real(np.sum(u1.conj() * u2, axis=0)))   # each column's ±1
    gap = np.min(np.diff(-s1)) / s1[0]
    np.testing.assert_allclose(u1 * sign, u2, rtol=0, atol=100 * n * eps / gap)


@pytest.mark.parametrize("dtype", DTYPES)
def test_one_tile_takes_each_matrix_of_a_stack_as_alone(host_kernels, dtype):
    """A thread block per matrix: each matrix's results are those it gets alone, a zero
    matrix in the stack included."""
    n = 9
    stack = np.stack([testing.complex_symmetric(n, dtype=dtype, seed=k) for k in range(3)]
                     + [np.zeros((n, n), dtype)])
    tol = driver.default_tol(n, dtype)
    s, u, status = host_kernels.solve_one_tile(stack, tol, driver.MAX_SWEEPS, 64)
    for k, a in enumerate(stack):
        alone = _one_tile(host_kernels, a, 64)
        for got, want in zip((s[k], u[k], status[k]), alone):
            assert np.array_equal(got, want)
    assert np.array_equal(u[3], np.eye(n)) and not s[3].any() and status[3][0] == 0


@pytest.mark.parametrize("dtype", DTYPES)
def test_one_tile_commutes_with_powers_of_two(host_kernels, dtype):
    """The kernel scales A by the power of two of its largest entry, so A·2^j gives the
    same U and S·2^j, bit for bit, far from over- and underflow."""
    a = testing.complex_symmetric(10, dtype=dtype, seed=4)
    s, u, _ = _one_tile(host_kernels, a, 64)
    for j in (-60, -7, 9, 60):
        scaled = (np.ldexp(a.real, j) + 1j * np.ldexp(a.imag, j)).astype(dtype)
        sj, uj, _ = _one_tile(host_kernels, scaled, 64)
        assert np.array_equal(uj, u) and np.array_equal(sj, np.ldexp(s, j))


@pytest.mark.parametrize("dtype", DTYPES)
def test_one_tile_factors_the_symmetric_part_and_measures_the_rest(host_kernels, dtype):
    """A slightly asymmetric A: the factorization of (A + Aᵀ)/2, bit for bit, and
    ‖A − Aᵀ‖_F / ‖A‖_F in the status, as the front end's check computes it."""
    a = testing.complex_symmetric(12, dtype=dtype, seed=8)
    rng = np.random.default_rng(8)
    a = a + (1e-4 * rng.standard_normal((12, 12))).astype(dtype)
    symmetric = (a + a.T) * np.finfo(dtype).dtype.type(0.5)
    s, u, status = _one_tile(host_kernels, a, 64)
    s2, u2, _ = _one_tile(host_kernels, symmetric, 64)
    assert np.array_equal(s, s2) and np.array_equal(u, u2)
    want = np.linalg.norm(a - a.T) / np.linalg.norm(a)
    np.testing.assert_allclose(np.sqrt(status[3] / status[4]), want, rtol=1e-4)
