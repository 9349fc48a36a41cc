"""The distributed Golub–Reinsch SVD (``method="gr"``) in one process: the edge cases a
user meets, against ``gpusvd.svd(method="gr")`` on the same input (the MPI runs of
test_distributed.py share the back-transformations out among ranks)."""

import numpy as np
import pytest

pytest.importorskip("mpi4py")

import gpusvd  # noqa: E402
from gpusvd import distributed, testing  # noqa: E402


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (4, 3), (3, 5), (1, 1)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_empty_and_zero_matrices_as_the_one_process_svd(shape, full_matrices):
    """Empty: empty factors; zero: S = 0 with orthonormal factors, as gpusvd.svd."""
    a = np.zeros(shape)
    out = distributed.svd(a, full_matrices=full_matrices, device="cpu", method="gr")
    ref = gpusvd.svd(a, full_matrices=full_matrices, device="cpu", method="gr")
    for got, want in zip(out, ref):
        assert got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(out.S, ref.S)
    if min(shape):
        assert testing.orthogonality(out.U) < 30
        assert testing.orthogonality(out.Vh.conj().T) < 30
    s = distributed.svd(a, compute_uv=False, device="cpu", method="gr")
    assert s.shape == (min(shape),)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("shape", [(30, 20), (20, 30), (70, 20)])
def test_dtypes_shapes_and_scaling(dtype, shape):
    """Each dtype keeps its own (A's precision throughout, unlike the polar method's
    float64), entries far from 1 are scaled and scaled back, and the values are the
    one-process method's to a few n·ε·σ₁."""
    a = testing.random_matrix(*shape, dtype=dtype, seed=3) * np.finfo(dtype).dtype.type(1e30)
    u, s, vh = distributed.svd(a, full_matrices=False, device="cpu", method="gr")
    assert u.dtype == vh.dtype == dtype and s.dtype == np.finfo(dtype).dtype
    assert testing.svd_residual(a, u, s, vh) < 30
    assert testing.orthogonality(u) < 30 and testing.orthogonality(vh.conj().T) < 30
    ref = gpusvd.svd(a, compute_uv=False, device="cpu", method="gr")
    eps = np.finfo(dtype).eps
    assert np.abs(s - ref).max() <= 4 * max(shape) * eps * ref[0]


def test_not_finite_and_options_are_refused():
    a = np.ones((4, 4))
    a[1, 2] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        distributed.svd(a, device="cpu", method="gr")
    assert np.isnan(distributed.svd(a, device="cpu", method="gr", check_finite=False).S).all()
    with pytest.raises(ValueError, match="polar method only"):
        distributed.svd(np.ones((4, 3)), device="cpu", method="gr", rows=True)
    with pytest.raises(ValueError, match="unknown method 'qr'"):
        distributed.svd(np.ones((4, 3)), device="cpu", method="qr")


def test_the_input_is_untouched_and_the_call_repeatable():
    a = testing.random_matrix(40, 30, seed=5)
    kept = a.copy()
    first = distributed.svd(a, device="cpu", method="gr")
    second = distributed.svd(a, device="cpu", method="gr")
    assert np.array_equal(a, kept)
    for x, y in zip(first, second):
        assert np.array_equal(x, y)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32])
@pytest.mark.parametrize("compute_uv", [True, False])
def test_auto_takes_the_method_gpusvd_svd_takes_on_a_gpu(monkeypatch, dtype, compute_uv):
    """method="auto": the Golub–Reinsch SVD from the crossovers auto_*_gr_min_n_gpu* on
    (lowered here to the test's size), the polar method below them and for rows=True;
    the result is the chosen method's, bit for bit."""
    from gpusvd._core import tunables
    from gpusvd.distributed import exact

    a = testing.random_matrix(40, 30, dtype=dtype, seed=5)
    called = []
    for method, module in (("gr", exact.golub_reinsch), ("polar", exact.polar)):
        monkeypatch.setattr(module, "svd", lambda *args, _f=module.svd, _m=method:
                            called.append(_m) or _f(*args))
    crossovers = ("auto_values_gr_min_n_gpu_float64", "auto_values_gr_min_n_gpu_float32",
                  "auto_values_gr_min_n_gpu_complex",
                  "auto_vectors_gr_min_n_gpu_complex", "auto_vectors_gr_min_n_gpu_float64",
                  "auto_vectors_gr_min_n_gpu_float32")
    for k, want in ((30, "gr"), (31, "polar")):
        with tunables.override(**dict.fromkeys(crossovers, k)):
            called.clear()
            auto = distributed.svd(a, compute_uv=compute_uv, device="cpu")
            assert called == [want]
        chosen = distributed.svd(a, compute_uv=compute_uv, device="cpu", method=want)
        for x, y in zip(*((auto, chosen) if compute_uv else ([auto], [chosen]))):
            assert type(x) is type(y) and np.array_equal(x, y)
    with tunables.override(**dict.fromkeys(crossovers, 1)):
        called.clear()
        distributed.svd(a, full_matrices=False, compute_uv=compute_uv, device="cpu",
                        rows=True)
        assert called == ["polar"]


def test_auto_refuses_bad_input_as_the_methods_do():
    a = np.ones((4, 4))
    a[1, 2] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        distributed.svd(a, device="cpu")
    assert np.isnan(distributed.svd(a, device="cpu", check_finite=False).S).all()
    with pytest.raises(ValueError, match="one matrix"):
        distributed.svd(np.ones((2, 4, 4)), device="cpu")
