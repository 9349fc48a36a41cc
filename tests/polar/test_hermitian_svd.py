"""``svd(a, hermitian=True)``: the SVD of a Hermitian matrix through its eigendecomposition
(``polar.eigh.hermitian_svd``), as ``numpy.linalg.svd(hermitian=True)``."""

import numpy as np
import pytest

import gpusvd
from gpusvd import testing
from gpusvd._core.backend import cupy_or_none

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def _hermitian(n, dtype, seed, batch=()):
    rng = np.random.default_rng(seed)
    b = rng.standard_normal((*batch, n, n))
    if np.dtype(dtype).kind == "c":
        b = b + 1j * rng.standard_normal((*batch, n, n))
    return (b + np.swapaxes(b, -1, -2).conj()).astype(dtype)


def _check(a, out, dtype):
    """Residual and orthogonality of each matrix within 30 n·ε, S descending and
    nonnegative, the values LAPACK's to 30·n·ε·σ₁."""
    u, s, vh = out
    n = a.shape[-1]
    eps = np.finfo(dtype).eps
    assert u.dtype == vh.dtype == dtype and s.dtype == np.finfo(dtype).dtype
    for i in np.ndindex(a.shape[:-2]):
        assert testing.svd_residual(a[i], u[i], s[i], vh[i]) < 30
        assert testing.orthogonality(u[i]) < 30
        assert testing.orthogonality(vh[i].conj().T) < 30
        assert (np.diff(s[i]) <= 0).all() and (s[i] >= 0).all()
        ref = np.linalg.svd(a[i].astype(np.complex128), compute_uv=False)
        assert np.abs(s[i] - ref).max() <= 30 * n * eps * ref[0]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", [(), (3,), (2, 2)])
def test_dtypes_and_stacks(dtype, batch):
    a = _hermitian(12, dtype, seed=1, batch=batch)
    _check(a, gpusvd.svd(a, hermitian=True, device="cpu"), dtype)
    s = gpusvd.svdvals(a, hermitian=True, device="cpu")
    assert np.array_equal(s, gpusvd.svd(a, compute_uv=False, hermitian=True, device="cpu"))


def test_signs_zero_and_repeated_eigenvalues():
    """S = |λ|; a negative eigenvalue's sign goes to Vh, a zero one takes +1 (Vh unitary),
    repeated values come out as a basis of their space."""
    q, _ = np.linalg.qr(np.random.default_rng(2).standard_normal((6, 6)))
    lam = np.array([3.0, -3.0, 0.0, -1.0, 2.0, 0.0])
    a = (q * lam) @ q.T
    a = (a + a.T) / 2
    u, s, vh = gpusvd.svd(a, hermitian=True, device="cpu")
    assert np.allclose(s, [3, 3, 2, 1, 0, 0], atol=1e-14)
    _check(a, (u, s, vh), np.float64)
    # each value's right vector is its left vector times the eigenvalue's sign (±1, also
    # at the computed zeros); an exact zero eigenvalue takes +1
    signs = np.einsum("ij,ji->i", vh, u)
    assert np.allclose(np.abs(signs), 1, atol=1e-12)
    u, s, vh = gpusvd.svd(np.diag([2.0, 0.0, -1.0]), hermitian=True, device="cpu")
    assert np.array_equal(s, [2.0, 1.0, 0.0]) and np.array_equal(vh @ u, np.diag([1, -1, 1]))


@pytest.mark.parametrize("scale", [1e-300, 1e300])
def test_entries_far_from_one(scale):
    a = _hermitian(8, np.float64, seed=3) * scale
    u, s, vh = gpusvd.svd(a, hermitian=True, device="cpu")
    assert np.isfinite(s).all()
    _check(a / scale, (u, s / scale, vh), np.float64)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match=r"takes square matrices, got 3×4"):
        gpusvd.svd(np.ones((3, 4)), hermitian=True)
    with pytest.raises(ValueError, match="the input is not Hermitian"):
        gpusvd.svd(np.arange(9.0).reshape(3, 3), hermitian=True)
    stack = np.stack([np.eye(3), np.triu(np.ones((3, 3)))])
    with pytest.raises(ValueError, match="matrix 1 of the stack is not Hermitian"):
        gpusvd.svdvals(stack, hermitian=True)
    with pytest.raises(ValueError, match="hermitian must be True or False"):
        gpusvd.svd(np.eye(3), hermitian="yes")
    # rounding-level asymmetry (a product's two triangles) is Hermitian enough
    b = np.random.default_rng(4).standard_normal((50, 50))
    gpusvd.svd(b @ np.diag(np.linspace(-1, 1, 50)) @ b.T, hermitian=True)


def test_another_method_computes_the_svd_as_without_it():
    a = _hermitian(10, np.float64, seed=5)
    for method in ("gr", "jacobi", "polar"):
        got = gpusvd.svd(a, hermitian=True, method=method, device="cpu")
        want = gpusvd.svd(a, method=method, device="cpu")
        for x, y in zip(got, want):
            assert np.array_equal(x, y)


def test_input_untouched_and_the_same_bits_twice():
    a = _hermitian(9, np.complex128, seed=6)
    kept = a.copy()
    first = gpusvd.svd(a, hermitian=True, device="cpu")
    assert np.array_equal(a, kept)
    again = gpusvd.svd(kept.copy(), hermitian=True, device="cpu", overwrite_a=True)
    for x, y in zip(first, again):
        assert np.array_equal(x, y)


def test_empty():
    u, s, vh = gpusvd.svd(np.empty((0, 0)), hermitian=True)
    assert u.shape == vh.shape == (0, 0) and s.shape == (0,)
    assert gpusvd.svdvals(np.empty((2, 0, 0)), hermitian=True).shape == (2, 0)


@pytest.mark.gpu
def test_gpu_empty():
    """0×0 matrices never reach cuSOLVER, which refuses n = 0."""
    cp = cupy_or_none()
    if cp is None:
        pytest.skip("needs a CUDA GPU and CuPy (scripts/gpu-tests)")
    u, s, vh = gpusvd.svd(cp.empty((3, 0, 0)), hermitian=True)
    assert u.shape == vh.shape == (3, 0, 0) and s.shape == (3, 0)
    assert gpusvd.svdvals(cp.empty((0, 0), cp.complex64), hermitian=True).shape == (0,)


def test_torch_derivatives_are_the_svds():
    """Gradients through A = B + Bᴴ (a Hermitian perturbation for every B), of the
    values and of U·Vᴴ, against finite differences; second order too."""
    torch = pytest.importorskip("torch")
    b = torch.randn(5, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(7),
                    requires_grad=True)

    def factors(x):
        u, s, vh = gpusvd.svd(x + x.T, hermitian=True)
        return s.sum() + (u @ vh * torch.arange(25.0, dtype=x.dtype).reshape(5, 5)).sum()

    assert torch.autograd.gradcheck(factors, (b,))
    assert torch.autograd.gradgradcheck(
        lambda x: gpusvd.svdvals(x + x.T, hermitian=True).pow(2).sum(), (b,))


def test_jax_derivatives_are_the_svds():
    jax = pytest.importorskip("jax")
    from jax.test_util import check_grads

    with jax.enable_x64(True):
        x = jax.numpy.asarray(np.random.default_rng(8).standard_normal((4, 4)))

        def f(x):
            u, s, vh = gpusvd.svd(x + x.T, hermitian=True)
            return s.sum() + (u @ vh * jax.numpy.arange(16.0).reshape(4, 4)).sum()

        check_grads(f, (x,), order=2, modes=("fwd", "rev"))
        assert float(jax.jit(f)(x)) == pytest.approx(float(f(x)), rel=1e-13)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, batch", [(40, (3,)), (None, (2,))])
def test_gpu_as_the_cpu(dtype, n, batch):
    """A stack through the batched eigensolver, and matrices past the stack engine's
    sizes (``batched_max_n`` + 1) one at a time."""
    from gpusvd._core import tunables

    cp = cupy_or_none()
    if cp is None:
        pytest.skip("needs a CUDA GPU and CuPy (scripts/gpu-tests)")
    n = n or tunables.get().batched_max_n + 1
    a = _hermitian(n, dtype, seed=9, batch=batch)
    out = gpusvd.svd(cp.asarray(a), hermitian=True)
    host = tuple(x.get() for x in out)
    _check(a, host, dtype)
    s_cpu = gpusvd.svdvals(a, hermitian=True, device="cpu")
    assert np.abs(host[1] - s_cpu).max() <= 30 * n * np.finfo(dtype).eps * s_cpu.max()
    values = gpusvd.svdvals(cp.asarray(a), hermitian=True).get()
    assert np.abs(values - s_cpu).max() <= 30 * n * np.finfo(dtype).eps * s_cpu.max()
