"""condensed.tall: the row-blocked QR of very tall matrices against one QR."""

import numpy as np
import pytest

from gpusvd.condensed import tall
from gpusvd.testing import generators


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 600 entries, so that the test matrices take several."""
    monkeypatch.setattr(tall, "BLOCK_ENTRIES", 600)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize(("m", "n"), [(500, 7), (333, 20), (61, 20), (40, 20)])
def test_blocked_qr_is_a_qr(small_blocks, m, n, dtype):
    a = generators.random_matrix(m, n, dtype=dtype, seed=m + n)
    a0 = a.copy()
    q, r = tall.tall_qr(a, np)
    eps = np.finfo(dtype).eps
    unit = max(m, n) * eps
    assert q.shape == (m, n) and r.shape == (n, n) and q.dtype == r.dtype == a.dtype
    assert np.array_equal(a, a0)
    assert np.linalg.norm(q @ r - a) / np.linalg.norm(a) <= 10 * unit
    assert np.linalg.norm(q.conj().T @ q - np.eye(n)) <= 10 * unit
    assert np.abs(np.tril(r, -1)).max(initial=0) <= 10 * unit * np.abs(r).max()
    # R is A's R up to the signs of its rows: the same singular values
    s = np.linalg.svd(r, compute_uv=False)
    s_ref = np.linalg.svd(a.astype(np.complex128), compute_uv=False)
    assert np.abs(s - s_ref).max() <= 30 * unit * s_ref[0]
    r_only = tall.tall_qr(a, np, mode="r")
    assert np.allclose(np.abs(r_only), np.abs(r), atol=30 * unit * s_ref[0])


def test_blocks_have_at_least_n_rows_and_cover_a(small_blocks):
    for m, n in [(500, 7), (61, 20), (40, 20), (39, 20), (20, 20), (10**6, 1)]:
        bounds = tall._row_blocks(m, n)
        assert bounds[0] == 0 and bounds[-1] == m
        sizes = np.diff(bounds)
        assert (sizes >= n).all()
        assert sizes.max() * n <= max(600, 2 * n * n)


def test_complete_and_one_block_are_one_qr():
    a = generators.random_matrix(30, 4, seed=1)
    for mode in ("complete", "reduced", "r"):
        ours = tall.tall_qr(a, np, mode=mode)
        ref = np.linalg.qr(a, mode=mode)
        for x, y in zip(ours if mode != "r" else [ours], ref if mode != "r" else [ref]):
            assert np.array_equal(x, y)


def test_unknown_mode(small_blocks):
    with pytest.raises(ValueError, match="mode must be"):
        tall.tall_qr(np.ones((100, 2)), np, mode="raw")


@pytest.mark.parametrize("method", ["polar"])
@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_svd_of_a_matrix_taken_in_row_blocks(small_blocks, method, dtype):
    """The SVDs that factor a tall matrix first give the same accuracy through blocks."""
    import gpusvd

    a = generators.with_condition(400, 6, 1e3, dtype=dtype, seed=3)
    for full in (False, True):
        u, s, vh = gpusvd.svd(a, full_matrices=full, method=method)
        assert u.shape == (400, 400 if full else 6)
        s_ref = np.linalg.svd(a.astype(np.complex128), compute_uv=False)
        unit = 400 * np.finfo(dtype).eps
        assert np.abs(s - s_ref).max() <= 30 * unit * s_ref[0]
        assert np.linalg.norm(u[:, :6] * s @ vh - a) <= 30 * unit * s_ref[0]
        assert np.linalg.norm(u.conj().T @ u - np.eye(u.shape[1])) <= 30 * unit
    assert np.abs(gpusvd.svdvals(a, method=method) - s_ref).max() <= 30 * unit * s_ref[0]
