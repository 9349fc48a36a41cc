"""The cosine tree's children's means by segments (quic/means_cuda.py): the pieces, the
host twin against the GEMM form, the kernel's host build against the twin bit for bit, and
on the GPU the kernel against the twin."""

import numpy as np
import pytest

from gpusvd.quic import cosine_tree, means_cuda

DTYPES = [np.float32, np.float64]


def _split(m, n, nchild, dtype, seed):
    """A, rows spread over ``nchild`` children (some empty, one longer than a piece),
    sign-and-count weights as a split makes them, a center."""
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((m, n)) + 3.0).astype(dtype)
    rows = rng.permutation(m)[: m - 7]
    child = rng.integers(0, nchild, len(rows))
    child[child == 1] = 0                    # child 1 empty
    child[: m // 2] = nchild - 1              # one child longer than PIECE_ROWS
    counts = np.bincount(child, minlength=nchild)
    weights = rng.choice([-1.0, 1.0], len(rows)) / np.maximum(counts[child], 1)
    center = a[rows].astype(np.float64).mean(axis=0).astype(dtype)
    return a, rows, child, weights, center


def _sorted(rows, child, weights, nchild):
    by_child = np.argsort(child, kind="stable")
    starts = np.concatenate([[0], np.cumsum(np.bincount(child, minlength=nchild))])
    return rows[by_child], starts, weights[by_child]


def test_pieces_cover_each_segment():
    rng = np.random.default_rng(0)
    starts = np.concatenate([[0], np.cumsum(rng.integers(0, 20, 30))])
    for piece_rows in (1, 3, 7, 64):
        piece_start, first_piece = means_cuda.pieces(starts, piece_rows)
        assert piece_start[0] == 0 and piece_start[-1] == starts[-1]
        lengths = np.diff(piece_start)
        assert (lengths >= 1).all() and (lengths <= piece_rows).all()
        for c in range(len(starts) - 1):
            own = slice(first_piece[c], first_piece[c + 1])
            assert lengths[own].sum() == starts[c + 1] - starts[c]
            if first_piece[c + 1] > first_piece[c]:
                assert piece_start[first_piece[c]] == starts[c]


@pytest.mark.parametrize("dtype", DTYPES)
def test_host_twin_against_the_gemm_form(dtype, monkeypatch):
    """The twin (float64 sums by pieces) against cosine_tree's GEMM of the selection
    matrix, to 30·rows·ε of the entries' size; PIECE_ROWS small enough for several pieces
    a child."""
    monkeypatch.setattr(means_cuda, "PIECE_ROWS", 16)
    m, n, nchild = 300, 40, 6
    a, rows, child, weights, center = _split(m, n, nchild, dtype, 1)
    by_row = np.argsort(rows, kind="stable")
    gemm = cosine_tree._weighted_means(a, rows, child, weights, nchild, by_row, center, np)
    twin = means_cuda.weighted_means_host(a, *_sorted(rows, child, weights, nchild), center)
    eps = np.finfo(dtype).eps
    assert twin.dtype == a.dtype and twin.shape == (nchild, n)
    assert np.abs(twin - gemm).max() <= 30 * m * eps * np.abs(a - center).max()
    assert not twin[1].any()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("piece_rows", [16, 128])
def test_kernel_against_the_twin(dtype, piece_rows, monkeypatch):
    """The kernel against the host twin: both sum in float64, so they agree to float64
    rounding before the cast (one unit of the dtype's last place at most); the same bits
    on a second call; A untouched; a Fortran-order A takes the GEMM form."""
    import cupy

    monkeypatch.setattr(means_cuda, "PIECE_ROWS", piece_rows)
    m, n, nchild = 700, 300, 9
    a, rows, child, weights, center = _split(m, n, nchild, dtype, 2)
    entries = _sorted(rows, child, weights, nchild)
    twin = means_cuda.weighted_means_host(a, *entries, center)
    a_d, center_d = cupy.asarray(a), cupy.asarray(center)
    got = means_cuda.weighted_means(a_d, *entries, center_d)
    again = means_cuda.weighted_means(a_d, *entries, center_d)
    assert got.dtype == a.dtype
    assert bool((got == again).all())
    assert bool((a_d == cupy.asarray(a)).all())
    eps = np.finfo(dtype).eps
    scale = np.abs(twin).max()
    assert np.abs(got.get() - twin).max() <= 2 * eps * scale + 1e-300
    # The root's mean: the kernel with weights 1/m, against its twin as above, and
    # against NumPy's mean to the bound of a sum of m terms, m·ε of the mean of |rows|.
    root = cosine_tree.root_mean(a_d, rows, cupy).get()
    uniform = np.full(len(rows), 1.0 / len(rows))
    root_twin = means_cuda.weighted_means_host(a, rows, np.array([0, len(rows)]),
                                               uniform)[0].astype(dtype)
    assert np.abs(root - root_twin).max() <= 2 * eps * np.abs(root_twin).max()
    want = a[rows].astype(np.float64).mean(axis=0)
    bound = len(rows) * eps * np.abs(a[rows].astype(np.float64)).mean(axis=0).max()
    assert np.abs(root - want).max() <= bound
    fortran = cupy.asfortranarray(a_d)
    assert not means_cuda.applies(fortran)
    by_row = np.argsort(rows, kind="stable")
    gemm = cosine_tree._weighted_means(fortran, rows, child, weights, nchild, by_row,
                                       center_d, cupy).get()
    assert np.abs(gemm - twin).max() <= 30 * m * eps * np.abs(a - center).max()


@pytest.fixture(scope="module")
def host_build(tmp_path_factory):
    from ..jacobi import host_kernel
    from . import host_weighted_means
    return host_kernel.built_or_skip(host_weighted_means.build, tmp_path_factory,
                                     "weighted_means")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("piece_rows", [16, 128])
def test_host_build_against_the_twin(dtype, piece_rows, host_build, monkeypatch):
    """The kernel's own source, run on the host grid block by block: the twin's bits."""
    from . import host_weighted_means

    monkeypatch.setattr(means_cuda, "PIECE_ROWS", piece_rows)
    m, n, nchild = 300, 300, 7
    a, rows, child, weights, center = _split(m, n, nchild, dtype, 4)
    entries = _sorted(rows, child, weights, nchild)
    twin = means_cuda.weighted_means_host(a, *entries, center)
    built = host_weighted_means.weighted_means(host_build, a, *entries, center, piece_rows)
    assert np.array_equal(built, twin)


def _dot_entries(m, n, dtype, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, n)).astype(dtype)
    rows = rng.permutation(m)[: m - 5]
    pivots = rng.choice(m, 9, replace=False)
    partners = pivots[rng.integers(0, 9, len(rows))]
    return a, rows, partners


@pytest.mark.parametrize("dtype", DTYPES)
def test_row_dots_twin_against_the_products(dtype):
    """The twin against the rows' inner products in float64, to 30·n·ε64 of their size."""
    a, rows, partners = _dot_entries(200, 70, dtype, 5)
    want = np.einsum("ij,ij->i", a[rows].astype(np.float64), a[partners].astype(np.float64))
    got = means_cuda.row_dots_host(a, rows, partners)
    scale = np.linalg.norm(a.astype(np.float64), axis=1).max() ** 2
    assert np.abs(got - want).max() <= 30 * 70 * np.finfo(np.float64).eps * scale


@pytest.mark.parametrize("dtype", DTYPES)
def test_row_dots_host_build_against_the_twin(dtype, host_build):
    from . import host_weighted_means

    a, rows, partners = _dot_entries(200, 300, dtype, 6)
    built = host_weighted_means.row_dots(host_build, a, rows, partners)
    assert np.array_equal(built, means_cuda.row_dots_host(a, rows, partners))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_row_dots_kernel_against_the_twin(dtype):
    """The kernel's tree sum against the twin's scan, both in float64: to 30·n·ε64 of the
    products' size; the same bits twice; the split's cosines from either agree."""
    import cupy

    a, rows, partners = _dot_entries(500, 1000, dtype, 7)
    a_d = cupy.asarray(a)
    got = means_cuda.row_dots(a_d, rows, partners)
    again = means_cuda.row_dots(a_d, rows, partners)
    assert bool((got == again).all())
    twin = means_cuda.row_dots_host(a, rows, partners)
    scale = np.linalg.norm(a.astype(np.float64), axis=1).max() ** 2
    assert np.abs(got.get() - twin).max() <= 30 * 1000 * np.finfo(np.float64).eps * scale
