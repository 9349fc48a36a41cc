"""gpusvd._core.libraries: each cuBLAS/cuSOLVER call against its NumPy twin, and the
twins against the formulas they stand for (tolerances in units of n·ε)."""

import numpy as np
import pytest

from gpusvd import testing
from gpusvd._core import libraries

DTYPES = [np.float32, np.float64]


def _rng(seed):
    return np.random.default_rng(seed)


def _cases(dtype):
    """(a, b, trans_a, trans_b) of every transposition, rectangular shapes."""
    rng = _rng(0)
    for trans_a in (False, True):
        for trans_b in (False, True):
            a = rng.standard_normal((7, 5) if trans_a else (5, 7)).astype(dtype)
            b = rng.standard_normal((3, 7) if trans_b else (7, 3)).astype(dtype)
            yield a, b, trans_a, trans_b


def _spd(n, dtype, seed):
    x = _rng(seed).standard_normal((2 * n, n))
    return (np.eye(n) + 0.3 * x.T @ x).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gemm_host(dtype):
    eps = np.finfo(dtype).eps
    for a, b, trans_a, trans_b in _cases(dtype):
        c0 = _rng(1).standard_normal((5, 3)).astype(dtype)
        want = 2.0 * (a.T if trans_a else a) @ (b.T if trans_b else b) - 0.5 * c0
        got = libraries.gemm(np, a, b, out=c0.copy(), trans_a=trans_a, trans_b=trans_b,
                             alpha=2.0, beta=-0.5)
        assert np.abs(got - want).max() <= 30 * 7 * eps * np.abs(want).max()


@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky_solve_host(dtype):
    n, eps = 9, np.finfo(dtype).eps
    z = _spd(n, dtype, 2)
    x = _rng(3).standard_normal((13, n)).astype(dtype)
    got = libraries.cholesky_solve(np, z.copy(), x.copy())
    residual = np.linalg.norm(got @ z - x) / (np.linalg.norm(z) * np.linalg.norm(got))
    assert residual <= 30 * n * eps


@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky_qr_host(dtype):
    """Two passes of Cholesky QR (CholeskyQR2) of a matrix of κ = 1e3: Q orthonormal to
    30 n·ε and Q·R = W."""
    m, n = 50, 8
    w = testing.with_condition(m, n, 1e3, dtype=dtype, seed=5)
    q = w.copy()
    for _ in range(2):
        q = libraries.cholesky_qr_solve(np, q, libraries.cholesky_factor(np, q.T @ q))
    eps = np.finfo(dtype).eps
    assert np.linalg.norm(q.T @ q - np.eye(n)) <= 30 * n * eps
    r = q.T @ w
    assert np.linalg.norm(q @ r - w) <= 30 * n * eps * np.linalg.norm(w)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_twins_agree(dtype):
    """The CUDA calls against the NumPy twins, within 30 n·ε of the result's size."""
    import cupy

    eps = np.finfo(dtype).eps
    for a, b, trans_a, trans_b in _cases(dtype):
        c0 = _rng(1).standard_normal((5, 3)).astype(dtype)
        host = libraries.gemm(np, a, b, out=c0.copy(), trans_a=trans_a, trans_b=trans_b,
                              alpha=2.0, beta=-0.5)
        device = libraries.gemm(cupy, cupy.asarray(a), cupy.asarray(b),
                                out=cupy.asarray(c0), trans_a=trans_a, trans_b=trans_b,
                                alpha=2.0, beta=-0.5).get()
        assert np.abs(device - host).max() <= 30 * 7 * eps * np.abs(host).max()
    n = 40
    z = _spd(n, dtype, 5)
    x = _rng(6).standard_normal((70, n)).astype(dtype)
    host = libraries.cholesky_solve(np, z.copy(), x.copy())
    device = libraries.cholesky_solve(cupy, cupy.asarray(z), cupy.asarray(x)).get()
    assert np.abs(device - host).max() <= 30 * n * eps * np.linalg.cond(z) * np.abs(host).max()
    w = testing.with_condition(300, n, 1e3, dtype=dtype, seed=7)
    host = libraries.cholesky_qr_solve(np, w.copy(), libraries.cholesky_factor(np, w.T @ w))
    g = cupy.asarray(w.T @ w)
    device = libraries.cholesky_qr_solve(cupy, cupy.asarray(w),
                                         libraries.cholesky_factor(cupy, g)).get()
    assert np.abs(device - host).max() <= 30 * n * eps * 1e3


def _gram_cases(dtype):
    """(y, c) of QDWH's Cholesky step: square, wide (Y = Xᴴ of a tall X) and tall Y, with
    weights from Halley's 3 to the first step's 10³."""
    rng = _rng(8)
    for (n, m), c in (((9, 9), 3.0), ((6, 17), 1e3), ((12, 5), 40.0), ((1, 4), 0.0)):
        yield rng.standard_normal((n, m)).astype(dtype) / np.sqrt(m), c


@pytest.mark.parametrize("dtype", DTYPES)
def test_shifted_gram_solve_host(dtype):
    """Z·X = Y for Z = I + c·Y·Yᵀ to 30 n·ε·κ(Z) of the result's size; Y untouched."""
    eps = np.finfo(dtype).eps
    for y, c in _gram_cases(dtype):
        n = y.shape[0]
        kept = y.copy()
        x, info = libraries.shifted_gram_solve(np, y, c)
        z = np.eye(n) + c * y.astype(np.float64) @ y.T.astype(np.float64)
        assert int(info[0]) == 0 and x.dtype == y.dtype
        assert np.array_equal(y, kept)
        residual = np.abs(z @ x - y).max() / (np.linalg.norm(z, 2) * np.abs(x).max())
        assert residual <= 30 * n * eps, (y.shape, c, residual)


def _not_positive_definite(xp, dtype):
    """Whether an indefinite Z (c < 0) gives info > 0, and whether a NaN in Y gives info
    > 0 or a result that is not finite (LAPACK's potrf need not flag a NaN)."""
    y = np.ones((3, 4), dtype)
    _, info = libraries.shifted_gram_solve(xp, xp.asarray(y), -1.0)
    y[1, 2] = np.nan
    x, nan_info = libraries.shifted_gram_solve(xp, xp.asarray(y), 2.0)
    x, nan_info = (v.get() if hasattr(v, "get") else v for v in (x, nan_info))
    return int(np.asarray(info)[0] if xp is np else info.get()[0]) > 0, (
        int(nan_info[0]) > 0 or not np.isfinite(x).all())


@pytest.mark.parametrize("dtype", DTYPES)
def test_shifted_gram_solve_host_not_positive_definite(dtype):
    assert _not_positive_definite(np, dtype) == (True, True)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_shifted_gram_solve_twins_agree(dtype):
    """syrk, potrf and the right-side trsm against the NumPy twin, within 30 n·ε·κ(Z) of
    the result's size; an indefinite Z and a NaN in Y are flagged as on the host."""
    import cupy

    eps = np.finfo(dtype).eps
    for y, c in _gram_cases(dtype):
        n = y.shape[0]
        host, _ = libraries.shifted_gram_solve(np, y, c)
        device, info = libraries.shifted_gram_solve(cupy, cupy.asarray(y), c)
        kappa = 1 + c * np.linalg.norm(y.astype(np.float64), 2) ** 2
        assert int(info.get()[0]) == 0
        assert np.abs(device.get() - host).max() <= 30 * n * eps * kappa * np.abs(host).max()
    assert _not_positive_definite(cupy, dtype) == (True, True)


def test_host_workspace_outside_a_capture():
    """A buffer of the size asked (at least one byte) wherever no stream is captured."""
    assert len(libraries.host_workspace(0, "none")) == 1
    assert len(libraries.host_workspace(4096, "some")) == 4096


@pytest.mark.gpu
def test_uncapturable_work_runs_eagerly():
    """Work that asks for host workspace under capture is refused there (graphs.Uncapturable)
    and its key then runs eagerly on every call, with the eager call's result; clear()
    forgets it."""
    import cupy

    from gpusvd._core import graphs

    graphs.clear()
    calls = []

    def work(x):
        calls.append(graphs.capturing())
        libraries.host_workspace(64, "test work")
        return (x * 2,)

    x = cupy.arange(5.0)
    for _ in range(4):
        (y,) = graphs.replayed(("uncapturable",), work, x)
        assert bool((y == 2 * x).all())
    assert calls == [False, True, False, False, False]
    assert graphs.cached() == 0
    graphs.clear()
    graphs.replayed(("uncapturable",), work, x)
    graphs.replayed(("uncapturable",), work, x)
    assert calls[5:] == [False, True, False]


@pytest.mark.gpu
def test_memory_release_frees_the_graphs():
    """After a MemoryError the kept graphs and their pools are gone too."""
    import cupy

    from gpusvd._core import graphs, memory

    x = cupy.arange(5.0)
    for _ in range(3):
        graphs.replayed(("kept",), lambda v: (v + 1,), x)
    assert graphs.cached() >= 1
    memory.release_pools()
    assert graphs.cached() == 0
