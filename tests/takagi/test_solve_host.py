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
from gpusvd.takagi import steps
from gpusvd.takagi.ordering import chess_tournament

DTYPES = (np.complex64, np.complex128)


@pytest.fixture(scope="module")
def host_solve(tmp_path_factory):
    solve = host_takagi_steps.build(tmp_path_factory.mktemp("takagi_host"))
    if solve is None:
        pytest.skip("g++ is not on PATH")
    return solve


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
