"""The distributed polar SVD in one process: the edge cases a user meets, against
``gpusvd.svd`` on the same input (the MPI runs of test_distributed.py check the rest)."""

import numpy as np
import pytest

pytest.importorskip("mpi4py")

import gpusvd  # noqa: E402
from gpusvd import distributed, testing  # noqa: E402


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0), (4, 3), (3, 5)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_empty_and_zero_matrices_as_the_one_process_svd(shape, full_matrices):
    """Empty: empty factors; zero: S = 0 with identities, as gpusvd.svd gives them."""
    a = np.zeros(shape)
    out = distributed.svd(a, full_matrices=full_matrices, device="cpu")
    ref = gpusvd.svd(a, full_matrices=full_matrices, device="cpu")
    for got, want in zip(out, ref):
        assert got.shape == want.shape and got.dtype == want.dtype
        assert np.array_equal(got, want)
    assert distributed.svd(a, compute_uv=False, device="cpu").shape == (min(shape),)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_dtypes_and_scaling(dtype):
    """Each dtype keeps its own, and entries far from 1 are scaled and scaled back."""
    a = testing.random_matrix(30, 20, dtype=dtype, seed=3) * np.finfo(dtype).dtype.type(1e30)
    u, s, vh = distributed.svd(a, full_matrices=False, device="cpu")
    assert u.dtype == vh.dtype == dtype and s.dtype == np.finfo(dtype).dtype
    assert testing.svd_residual(a, u, s, vh) < 30
    assert testing.orthogonality(u) < 30 and testing.orthogonality(vh.conj().T) < 30


def test_a_stack_is_refused():
    with pytest.raises(ValueError, match="distributed svd decomposes one matrix"):
        distributed.svd(np.ones((2, 3, 3)), device="cpu")


@pytest.mark.parametrize("shape, full_matrices", [((30, 20), False), ((20, 20), True),
                                                  ((48, 48), True)])
def test_rows_on_one_rank_are_a_on_root(shape, full_matrices):
    """One rank holding every row: the same bits as A on root (a rank-deficient A too,
    whose U is made orthonormal on root)."""
    a = (testing.random_matrix(*shape, seed=2) if shape[0] != 48
         else testing.low_rank(48, 48, 12, seed=48))
    got = distributed.svd(a, full_matrices=full_matrices, device="cpu", rows=True)
    want = distributed.svd(a, full_matrices=full_matrices, device="cpu")
    for x, y in zip(got, want):
        assert np.array_equal(x, y)
    assert np.array_equal(distributed.svd(a, compute_uv=False, device="cpu", rows=True),
                          distributed.svd(a, compute_uv=False, device="cpu"))


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (4, 0), (0, 0)])
def test_rows_of_a_zero_or_empty_matrix(shape):
    u, s, vh = distributed.svd(np.zeros(shape), full_matrices=False, device="cpu",
                               rows=True)
    ref = gpusvd.svd(np.zeros(shape), full_matrices=False, device="cpu")
    for got, want in zip((u, s, vh), ref):
        assert np.array_equal(got, want) and got.dtype == want.dtype


def test_rows_refuse_wide_input_and_a_complete_u_of_a_tall_one():
    with pytest.raises(ValueError, match=r"tall or square A \(M >= N\)"):
        distributed.svd(np.ones((3, 5)), device="cpu", rows=True)
    with pytest.raises(ValueError, match="full_matrices=False"):
        distributed.svd(np.ones((5, 3)), device="cpu", rows=True)
    assert distributed.svd(np.ones((5, 3)), compute_uv=False, device="cpu",
                           rows=True).shape == (3,)


def test_rows_with_nan():
    a = testing.random_matrix(6, 4, seed=1)
    a[2, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        distributed.svd(a, full_matrices=False, device="cpu", rows=True)
    u, s, vh = distributed.svd(a, full_matrices=False, device="cpu", rows=True,
                               check_finite=False)
    assert np.isnan(u).all() and np.isnan(s).all() and np.isnan(vh).all()


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.complex128])
def test_rows_keep_the_dtype_and_scale(dtype):
    a = testing.random_matrix(30, 20, dtype=dtype, seed=3) * np.finfo(dtype).dtype.type(1e-30)
    u, s, vh = distributed.svd(a, full_matrices=False, device="cpu", rows=True)
    assert u.dtype == vh.dtype == dtype and s.dtype == np.finfo(dtype).dtype
    assert testing.svd_residual(a, u, s, vh) < 30 and testing.orthogonality(u) < 30


def test_rows_of_a_torch_tensor_come_back_as_torch():
    """A framework's local piece (a DTensor's to_local()) in, its rows of U out, in its type."""
    torch = pytest.importorskip("torch")
    t = torch.from_numpy(testing.random_matrix(9, 4, seed=6))
    u, s, vh = distributed.svd(t, full_matrices=False, device="cpu", rows=True)
    assert all(isinstance(x, torch.Tensor) for x in (u, s, vh))
    want = distributed.svd(t.numpy(), full_matrices=False, device="cpu", rows=True)
    for got, ref in zip((u, s, vh), want):
        assert np.array_equal(got.numpy(), ref)


def test_gpus_asked_for_where_a_rank_has_none(monkeypatch):
    """device='gpu' with a rank that sees no GPU (here, every rank: CuPy finds none):
    ValueError on every rank, before any work."""
    from gpusvd.distributed import comm as comm_module

    monkeypatch.setattr(comm_module, "cupy_or_none", lambda: None)
    with pytest.raises(ValueError, match="some rank sees no usable GPU"):
        distributed.svd(np.eye(3), device="gpu")
    with pytest.raises(ValueError, match="device must be"):
        distributed.svd(np.eye(3), device="all")


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_summed_on_one_rank_is_the_part(dtype):
    from gpusvd.distributed.comm import Comm

    part = testing.random_matrix(5, 4, dtype=dtype, seed=9)
    with Comm(device="cpu") as comm:
        total = comm.summed(part, 0)
        assert total.dtype == dtype and np.array_equal(total, part)
        assert comm.summed(np.zeros((0, 3), dtype), 0).shape == (0, 3)


def test_a_tall_matrix_takes_its_qr_first_a_rank_deficient_one_qdwh(monkeypatch):
    """m > 1.15·n: CholeskyQR over the ranks, then R's SVD on root; where CholeskyQR
    fails (A numerically rank deficient), QDWH over the ranks as for a square A."""
    from gpusvd.distributed import polar as distributed_polar

    taken = []
    tall = distributed_polar._tall

    def spied(*args, **kwargs):
        found = tall(*args, **kwargs)
        taken.append(found is not None)
        return found

    monkeypatch.setattr(distributed_polar, "_tall", spied)
    for rows in (False, True):
        a = testing.random_matrix(60, 20, seed=4)
        u, s, vh = distributed.svd(a, full_matrices=False, device="cpu", rows=rows)
        assert testing.svd_residual(a, u, s, vh) < 30 and testing.orthogonality(u) < 30
        b = testing.low_rank(120, 40, 10, seed=120)
        u, s, vh = distributed.svd(b, full_matrices=False, device="cpu", rows=rows)
        assert testing.svd_residual(b, u, s, vh) < 30 and testing.orthogonality(u) < 30
    assert taken == [True, False, True, False]


@pytest.mark.parametrize("shape", [(40, 12), (16, 16)])
@pytest.mark.parametrize("peak", [0.75, 3.0])
@pytest.mark.parametrize("kind", ["array", "read-only memmap"])
def test_rows_are_read_not_written(tmp_path, shape, peak, kind):
    """float64 rows are taken as they are, without a copy: the caller's block, a
    read-only memmap too, is left unchanged, with max|A| already in [1/2, 1) (no scaling:
    the block itself goes to the QR or to QDWH) and outside it."""
    m, n = shape
    a = testing.random_matrix(m, n, seed=8)
    a *= peak / np.abs(a).max()
    block = a.copy()
    if kind != "array":
        np.save(tmp_path / "a.npy", a)
        block = np.load(tmp_path / "a.npy", mmap_mode="r")
    u, s, vh = distributed.svd(block, full_matrices=False, device="cpu", rows=True)
    assert np.array_equal(block, a)
    assert testing.svd_residual(a, u, s, vh) < 30 and testing.orthogonality(u) < 30
    ref = gpusvd.svd(a, full_matrices=False, method="polar", device="cpu")
    assert np.abs(s - ref.S).max() <= 10 * m * np.finfo(float).eps * ref.S[0]
