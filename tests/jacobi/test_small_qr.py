"""The batched small Householder QR (kernels/small_qr.cu, small_qr_cuda.py).

Without a GPU the kernel's source runs on the CPU (host_small_qr.py, one thread per
block) against LAPACK through NumPy: Q·R = A column by column to n·ε of each column's
norm (Householder QR is column-wise backward stable, which the preconditioning of graded
matrices relies on), Q orthonormal, R upper triangular with a real diagonal, and R equal to
LAPACK's up to the phases of its rows, for every dtype, m >= n including m = n, graded,
rank-deficient and zero input, and Q economic, complete and in between. On the GPU
(marked gpu) the CUDA kernel must agree with the host build to rounding, and ``jacobi_svd``
on a stack of 2000 matrices of order 32, which goes through it, with the CPU.
"""

import types

import numpy as np
import pytest

from gpusvd import testing
from gpusvd.jacobi import blocked, driver, inner, jacobi_svd, small_qr_cuda
from gpusvd.jacobi.small_qr_cuda import launch_config, shared_bytes
from . import host_small_qr
from . import host_kernel

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
SHAPES = [(1, 1), (5, 5), (8, 3), (32, 32), (40, 17), (67, 64)]
BOUND = 10    # in units of n·ε (of the column's norm, or of 1 for orthogonality)


@pytest.fixture(scope="module")
def host_qr(tmp_path_factory):
    return host_kernel.built_or_skip(host_small_qr.build, tmp_path_factory, "host_small_qr")


def _eps(dtype):
    return float(np.finfo(dtype).eps)


def _stack(kind, m, n, dtype, batch=3, seed=0):
    """A stack of random, column-graded (columns 1 … 1e-12 after presorting), both-sides
    graded, rank-deficient (rank n/3) matrices, or random ones with n/3 zero columns."""
    make = {
        "random": lambda s: testing.random_matrix(m, n, dtype=dtype, seed=s),
        "graded": lambda s: testing.graded(m, n, side="right", grading=1e-12, dtype=dtype,
                                           seed=s),
        "both": lambda s: testing.graded(m, n, side="both", grading=1e-12, dtype=dtype,
                                         seed=s),
        "rank": lambda s: testing.low_rank(m, n, max(1, n // 3), dtype=dtype, seed=s),
        "zeros": lambda s: testing.random_matrix(m, n, dtype=dtype, seed=s)
        * (np.arange(n) < n - n // 3),
    }[kind]
    a = np.stack([make(seed + i) for i in range(batch)])
    norms = np.linalg.norm(a, axis=1)   # presorted as the preconditioning does
    order = np.argsort(-norms, axis=-1, kind="stable")
    return np.ascontiguousarray(np.take_along_axis(a, order[:, None, :], axis=2))


def check_factorization(a, q, r):
    """Q·R = A column-wise, QᴴQ = I, R upper triangular with a real diagonal."""
    batch, m, n = a.shape
    eps = _eps(a.dtype)
    wide = np.complex128 if np.iscomplexobj(a) else np.float64
    a64, q64, r64 = (x.astype(wide) for x in (a, q, r))
    assert np.all(np.tril(r64, -1) == 0)
    assert np.all(np.diagonal(r64, axis1=1, axis2=2).imag == 0)
    residual = np.linalg.norm(q64[..., :n] @ r64 - a64, axis=1)
    scale = np.linalg.norm(a64, axis=1)
    assert np.all(residual <= BOUND * m * eps * scale)
    gram = q64.conj().transpose(0, 2, 1) @ q64
    assert np.abs(gram - np.eye(q.shape[2])).max() <= BOUND * m * eps


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kind", ["random", "graded", "both", "rank", "zeros"])
def test_host_kernel_factors_like_lapack(host_qr, dtype, shape, kind):
    a = _stack(kind, *shape, dtype, seed=sum(shape))
    a0 = a.copy()
    q, r = host_qr(a, shape[1])
    np.testing.assert_array_equal(a, a0)
    check_factorization(a, q, r)
    # LAPACK's R, rounded in the data's type, up to the phases of its rows, column-wise.
    r_ref = np.linalg.qr(a, mode="r")
    d_ref, d = np.diagonal(r_ref, axis1=1, axis2=2), np.diagonal(r, axis1=1, axis2=2)
    nonzero = np.abs(d_ref) > 0
    phase = np.where(nonzero, d / np.where(nonzero, d_ref, 1), 1)
    phase = phase / np.where(np.abs(phase) > 0, np.abs(phase), 1)
    if kind != "rank":   # there R's trailing rows are rounding errors, their phases noise
        error = np.linalg.norm(phase[:, :, None] * r_ref - r, axis=1)
        scale = np.linalg.norm(a.astype(np.complex128), axis=1)
        assert np.all(error <= BOUND * shape[0] * _eps(dtype) * scale)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m, n", [(9, 4), (6, 6), (33, 31)])
def test_host_kernel_complete_and_partial_q(host_qr, dtype, m, n):
    a = _stack("random", m, n, dtype, seed=m)
    q_econ, r = host_qr(a, n)
    for qcols in sorted({n, (m + n) // 2, m}):
        q, r_again = host_qr(a, qcols)
        np.testing.assert_array_equal(r_again, r)
        np.testing.assert_array_equal(q[..., :n], q_econ)
        check_factorization(a, q, r)
    none, r_only = host_qr(a, 0)
    assert none is None
    np.testing.assert_array_equal(r_only, r)


def test_host_kernel_zero_matrix_and_zero_columns(host_qr):
    zero = np.zeros((2, 7, 4))
    q, r = host_qr(zero, 7)
    assert np.all(r == 0)
    np.testing.assert_array_equal(q, np.broadcast_to(np.eye(7), (2, 7, 7)))
    # Trailing zero columns (U with σ = 0): Q completes the others orthonormally.
    u = np.zeros((1, 6, 4))
    u[0, :, :2] = testing.haar_orthogonal(6, seed=1)[:, :2]
    q, r = host_qr(u, 6)
    check_factorization(u, q, r)
    assert np.abs(u[0, :, :2].T @ q[0, :, 2:]).max() < 10 * 6 * _eps(np.float64)


def test_host_kernel_tiny_columns_do_not_underflow(host_qr):
    a = testing.random_matrix(12, 5, seed=4)[None] * np.array([1, 1e-100, 1e-200, 1e-300,
                                                                1e-305])
    q, r = host_qr(a, 5)
    check_factorization(a, q, r)
    diag = np.abs(np.diagonal(r[0]))
    ref = np.abs(np.diagonal(np.linalg.qr(a[0] * 2.0 ** 1000, mode="r"))) * 2.0 ** -1000
    assert np.all(np.abs(diag - ref) <= 1e-13 * ref)


def _numpy_posing_as_cupy():
    """NumPy's namespace under CuPy's name: the drivers take their GPU branches (the twin
    tables are keyed by the namespace's ``__name__``)."""
    fake = types.SimpleNamespace(**{k: getattr(np, k) for k in dir(np) if k[0] != "_"})
    fake.__name__ = "cupy"
    return fake


@pytest.mark.parametrize("full_matrices", [True, False])
@pytest.mark.parametrize("precondition", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_gpu_small_stack_path_with_the_host_kernel(host_qr, monkeypatch, dtype,
                                                   precondition, full_matrices):
    """The driver's GPU branches (preconditioning by the small QR, U completed by it) run
    on the CPU with the host-built kernel, on random, graded, rank-deficient 12×9 and
    12×9 with zero columns (σ = 0 exactly: U is completed)."""
    calls = []
    monkeypatch.setattr(small_qr_cuda, "small_qr",
                        lambda a, qcols: calls.append(qcols) or host_qr(a, qcols))
    monkeypatch.setattr(small_qr_cuda, "_max_shared", lambda device: 227 * 1024)
    monkeypatch.setattr(small_qr_cuda, "_device_id", lambda: 0)
    monkeypatch.setattr(blocked, "inner_for", lambda xp: inner.inner_jacobi)
    m, n = 12, 9
    a = np.concatenate([_stack(kind, m, n, dtype, batch=2, seed=5)
                        for kind in ("random", "graded", "rank", "zeros")])
    options = driver.DEFAULTS._replace(precondition=precondition)
    u, s, vh = driver.decompose(a, _numpy_posing_as_cupy(), full_matrices=full_matrices,
                                compute_uv=True, options=options)
    s_ref = driver.decompose(a, np, full_matrices=False, compute_uv=False,
                             options=options)[1]
    k = m if full_matrices else n
    # The preconditioning's QR, then the completion of U for the rank-deficient matrices.
    assert calls == ([k if full_matrices else n, n] if precondition else [k])
    eps = _eps(dtype)
    assert np.all(np.abs(s - s_ref) <= BOUND * m * eps * s_ref[:, :1])
    assert u.shape == (len(a), m, m if full_matrices else n)
    for i in range(len(a)):
        assert testing.svd_residual(a[i], u[i][:, :n], s[i], vh[i]) < BOUND
        assert testing.orthogonality(u[i]) < BOUND
        assert testing.orthogonality(vh[i], rows=True) < BOUND


def test_launch_config():
    assert launch_config(32, 32, 32, 8, False, 227 * 1024).threads == 128
    assert launch_config(128, 8, 0, 16, True, 227 * 1024).threads == 32
    assert launch_config(256, 128, 128, 4, False, 227 * 1024).threads == 256
    assert shared_bytes(5, 3, 5, 4, False) == 112 + 24   # 5·5·4 = 100 → 112, 3 doubles
    with pytest.raises(ValueError, match="shared memory"):
        launch_config(128, 128, 128, 16, True, 227 * 1024)
    with pytest.raises(ValueError, match="m >= n"):
        launch_config(4, 5, 0, 8, False, 227 * 1024)
    with pytest.raises(ValueError, match="q columns"):
        launch_config(8, 5, 3, 8, False, 227 * 1024)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 5), (32, 32), (40, 17), (128, 64)])
@pytest.mark.parametrize("kind", ["random", "graded", "rank", "zeros"])
def test_cuda_kernel_agrees_with_host_build(host_qr, dtype, shape, kind):
    """The same steps, but sums in another order and fma: R and Q agree to rounding
    amplified by the condition of A with unit columns (not compared where it is
    rank-deficient: there only the factorization's properties)."""
    import cupy

    from gpusvd.jacobi.small_qr_cuda import small_qr, supports

    m, n = shape
    a = _stack(kind, m, n, dtype, batch=50, seed=7)
    counts = [q for q in (0, n, m) if supports(a.shape, a.dtype, q)]
    assert counts[:2] == [0, n]   # complete Q of 128×64 complex128 needs 264 kB
    wide = a.astype(np.complex128)
    scale = np.linalg.norm(wide, axis=1)
    if kind not in ("rank", "zeros"):
        kappa = np.linalg.cond(wide / scale[:, None, :])[:, None]
        tol = BOUND * m * _eps(dtype) * kappa
    for qcols in counts:
        q_gpu, r_gpu = small_qr(cupy.asarray(a), qcols)
        q_host, r_host = host_qr(a, qcols)
        r_gpu = r_gpu.get()
        if qcols:
            check_factorization(a, q_gpu.get(), r_gpu)
        if kind in ("rank", "zeros"):
            continue
        assert np.all(np.linalg.norm(r_gpu - r_host, axis=1) <= tol * scale)
        if qcols:
            error = np.abs(q_gpu.get() - q_host)[..., :n].max(axis=(1, 2))
            assert np.all(error <= tol[:, 0])


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_jacobi_svd_on_a_stack_of_small_matrices_matches_cpu(dtype):
    import cupy

    batch, n = 2000, 32
    rng = np.random.default_rng(3)
    a = np.stack([testing.random_matrix(n, n, dtype=dtype, seed=i) for i in range(batch)])
    a[::7] *= np.logspace(0, -12, n)               # some column-graded ones
    a[1::7] = np.stack([testing.low_rank(n, n, 9, dtype=dtype, seed=i)
                        for i in range(len(a[1::7]))])   # some of rank 9
    a *= rng.uniform(0.5, 2, (batch, 1, 1)).astype(a.real.dtype)
    u, s, vh = (x.get() for x in jacobi_svd(cupy.asarray(a)))
    _, s_cpu, _ = jacobi_svd(a, device="cpu")
    eps = _eps(dtype)
    assert np.all(np.abs(s - s_cpu) <= 30 * n * eps * s_cpu[:, :1])
    # Graded: relatively accurate (an absolute error of n·ε would be 1e12 times more).
    full = np.abs(s - s_cpu)[::7] <= 1e4 * n * eps * s_cpu[::7]
    assert full.all()
    for i in range(0, batch, 97):
        assert testing.svd_residual(a[i], u[i], s[i], vh[i]) < 30
        assert testing.orthogonality(u[i]) < 30
        assert testing.orthogonality(vh[i], rows=True) < 30
