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
