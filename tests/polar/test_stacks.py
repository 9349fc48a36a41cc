"""The batched engine: ``gpusvd.svd(stack, method="polar")`` decomposes a whole
stack in batched steps. Every matrix of every stack is held to the contract of the other
methods: residual and orthogonality of U and V below BOUND in units of n·ε, values
against LAPACK's below BOUND·n·ε·σ₁, per matrix; the input unchanged; the same bits
twice. ``TestBatched_GPU`` reruns every test with CuPy input (marker ``gpu``).
"""

import numpy as np
import pytest
import scipy.linalg

import gpusvd
from gpusvd import testing
from gpusvd._core import tunables
from gpusvd.polar import cholesky_qr, estimates, qdwh
from gpusvd.polar import svd as driver
from gpusvd.jacobi import small_svd
from gpusvd.polar.qdwh import CHOLESKY_MAX_C

BOUND = 30  # units of n·ε
DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
SHAPES = [(2, 2), (8, 8), (40, 40), (67, 30), (30, 67), (130, 97), (200, 8)]


def _host(x):
    return x.get() if hasattr(x, "get") else np.asarray(x)


def _stack(kinds, m, n, dtype, seed=0):
    return testing.mixed_stack(kinds, m, n, dtype=dtype, seed=seed)


class TestBatched_CPU:
    device = "cpu"

    def put(self, a):
        return a

    def decompose(self, x, **kw):
        return gpusvd.svd(x, method="polar", device=self.device, **kw)

    def svd(self, a, **kw):
        return self.decompose(self.put(a), **kw)

    def check(self, stack, full_matrices=False):
        before = stack.copy()
        x = self.put(stack)
        u, s, vh = (_host(t) for t in self.decompose(x, full_matrices=full_matrices))
        np.testing.assert_array_equal(_host(x), before)  # the input unchanged
        batch, m, n = stack.shape
        k = min(m, n)
        assert u.shape == (batch, m, m if full_matrices else k) and u.dtype == stack.dtype
        assert vh.shape == (batch, n if full_matrices else k, n) and vh.dtype == stack.dtype
        assert s.shape == (batch, k) and s.dtype == np.finfo(stack.dtype).dtype
        for a, ui, si, vhi in zip(stack, u, s, vh):
            assert np.all(si[:-1] >= si[1:]) and np.all(si >= 0)
            assert testing.svd_residual(a, ui, si, vhi) < BOUND
            assert testing.orthogonality(ui) < BOUND
            assert testing.orthogonality(vhi, rows=True) < BOUND
            s_ref = scipy.linalg.svd(a.astype(np.complex128 if a.dtype.kind == "c"
                                              else np.float64), compute_uv=False)
            assert testing.sv_error(si, s_ref) < BOUND * max(m, n)
        values = _host(self.decompose(x, compute_uv=False))
        assert values.dtype == s.dtype
        for si, vi in zip(s, values):
            assert testing.sv_error(vi, si.astype(np.float64)) < BOUND * max(m, n)
        return u, s, vh

    @pytest.mark.parametrize("dtype", DTYPES)
    @pytest.mark.parametrize("shape", SHAPES)
    def test_random(self, shape, dtype):
        self.check(_stack(["random"] * 3, *shape, dtype))

    @pytest.mark.parametrize("dtype", DTYPES)
    @pytest.mark.parametrize("shape", [(40, 40), (67, 30), (30, 67)])
    def test_lapack_types(self, shape, dtype):
        kinds = ["zero", "identity", "evenly_spaced", "near_underflow", "near_overflow"]
        self.check(_stack(kinds, *shape, dtype))

    @pytest.mark.parametrize("dtype", (np.float32, np.float64))
    @pytest.mark.parametrize("shape", [(40, 40), (67, 30)])
    def test_hard(self, shape, dtype):
        self.check(_stack(["rank", "graded", "kappa1e12", "zero", "identity"], *shape, dtype))

    @pytest.mark.parametrize("dtype", (np.float64, np.complex64))
    @pytest.mark.parametrize("shape", [(9, 9), (31, 12), (12, 31)])
    def test_full_matrices(self, shape, dtype):
        self.check(_stack(["random", "rank", "zero"], *shape, dtype), full_matrices=True)

    def test_one_hard_among_easy(self):
        """The easy matrices of a mixed stack come out as they do alone (to rounding)."""
        easy = _stack(["random"] * 4, 50, 50, np.float64, seed=3)
        hard = _stack(["kappa1e12"], 50, 50, np.float64, seed=4)
        mixed = np.concatenate([easy[:2], hard, easy[2:]])
        u, s, vh = self.check(mixed)
        u0, s0, vh0 = (_host(t) for t in self.svd(easy, full_matrices=False))
        eps = np.finfo(np.float64).eps
        keep = [0, 1, 3, 4]
        assert np.abs(s[keep] - s0).max() <= 4 * 50 * eps * s0.max()
        assert np.abs(np.abs(u[keep]) - np.abs(u0)).max() < 1e-8

    def test_same_bits_twice(self):
        stack = _stack(["random", "rank", "kappa1e12"], 33, 20, np.float64)
        first = [_host(t) for t in self.svd(stack)]
        second = [_host(t) for t in self.svd(stack)]
        for x, y in zip(first, second):
            np.testing.assert_array_equal(x, y)

    def test_stack_dimensions(self):
        stack = _stack(["random"] * 6, 10, 7, np.float64).reshape(2, 3, 10, 7)
        u, s, vh = (_host(t) for t in self.svd(stack, full_matrices=False))
        assert u.shape == (2, 3, 10, 7) and s.shape == (2, 3, 7) and vh.shape == (2, 3, 7, 7)
        np.testing.assert_allclose((u * s[..., None, :]) @ vh, stack, atol=1e-13)

    @pytest.mark.parametrize("shape", [(0, 4), (4, 0)])
    def test_empty_matrices(self, shape):
        u, s, vh = (_host(t) for t in self.svd(np.zeros((3, *shape))))
        assert s.shape == (3, 0) and u.shape == (3, shape[0], shape[0])
        assert vh.shape == (3, shape[1], shape[1])
        # The complete factors are orthonormal, as NumPy's: identities.
        assert np.array_equal(u, np.broadcast_to(np.eye(shape[0]), u.shape))
        assert np.array_equal(vh, np.broadcast_to(np.eye(shape[1]), vh.shape))


@pytest.mark.gpu
class TestBatched_GPU(TestBatched_CPU):
    device = "gpu"

    def put(self, a):
        import cupy

        return cupy.asarray(a)


class TestSmallJacobi_CPU(TestBatched_CPU):
    """The path of ``method="auto"`` for matrices of at most 2b columns on the GPU (one
    kernel launch, ``jacobi/small_svd.py`` its twin), held to the same contract."""

    def decompose(self, x, full_matrices=True, compute_uv=True):
        batch, (m, n) = x.shape[:-2], x.shape[-2:]
        u, s, vh, status = small_svd.small_svd(x.reshape(int(np.prod(batch)), m, n),
                                               full_matrices=full_matrices,
                                               compute_uv=compute_uv)
        assert status == 0
        s = s.reshape(*batch, -1)
        if not compute_uv:
            return s
        return u.reshape(*batch, *u.shape[1:]), s, vh.reshape(*batch, *vh.shape[1:])


@pytest.mark.gpu
class TestSmallJacobi_GPU(TestBatched_CPU):
    """``method="auto"`` on CuPy stacks: the kernel where a matrix fits one block."""

    device = "gpu"

    def decompose(self, x, **kw):
        return gpusvd.svd(x, **kw)

    def put(self, a):
        import cupy

        return cupy.asarray(a)


def test_chunks_give_the_stack(monkeypatch):
    """A stack decomposed in chunks (as when it does not fit the GPU) gives the results of
    the whole stack at once."""
    stack = _stack(["random", "rank", "kappa1e12", "identity", "random"], 20, 12,
                   np.float64)
    whole = driver.svd(stack, np, full_matrices=True, compute_uv=True)
    monkeypatch.setattr(driver, "chunk_size", lambda *args: 2)
    chunked = driver.svd(stack, np, full_matrices=True, compute_uv=True)
    for x, y in zip(whole, chunked):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-13)


def test_schedule_per_matrix():
    """A well-conditioned matrix's schedule is short and all Cholesky steps; only the
    ill-conditioned one's starts with QR steps."""
    eps = np.finfo(np.float64).eps
    steps = qdwh.schedule(np.array([0.5, 0.05, eps]), eps)
    c = np.array([w[2] for w in steps])
    lengths = (~np.isnan(c)).sum(axis=0)
    assert lengths[0] <= 3 and lengths[1] <= 5 and lengths[2] <= 6
    assert np.nanmax(c[:, 0]) <= CHOLESKY_MAX_C and np.nanmax(c[:, 1]) <= CHOLESKY_MAX_C
    assert np.nanmax(c[:, 2]) > CHOLESKY_MAX_C


@pytest.mark.parametrize("kappa", [1e2, 1e8, 1e11])
def test_shifted_cholesky_qr(kappa):
    """Q of shifted CholeskyQR3 is orthonormal and W = Q·(QᴴW) to O(u) up to κ ≈ 1e11 (the
    QR step's stacked matrices reach 5e10)."""
    eps = np.finfo(np.float64).eps
    w = np.stack([testing.with_condition(120, 50, kappa, seed=1),
                  3 * testing.with_condition(120, 50, kappa, seed=2)])
    qh = cholesky_qr.shifted_cholesky_qr(np, w.swapaxes(-1, -2).copy(),
                                         np.array([1.0, 9.0]))
    assert np.abs(qh @ qh.swapaxes(-1, -2) - np.eye(50)).max() < 120 * eps
    assert np.abs(qh.swapaxes(-1, -2) @ (qh @ w) - w).max() < 120 * eps * 3


@pytest.mark.parametrize("explicit_inverse", [True, False])
def test_estimates_bound_the_spectrum(explicit_inverse):
    """α ≥ ‖A‖₂ and l₀ ≤ σ_min/α where the estimate is trusted; ε where it is not; the
    inverse iteration through the explicit L⁻¹ and through two solves a step alike."""
    eps = np.finfo(np.float64).eps
    stack = _stack(["random", "kappa1e12", "rank", "zero"], 30, 30, np.float64)
    two_solves = {} if explicit_inverse else {"batched_explicit_inverse_max_work": 0}
    with tunables.override(**two_solves):
        alpha, l0 = estimates.from_gram(np, stack.swapaxes(-1, -2).copy(), eps)
    s = np.linalg.svd(stack, compute_uv=False)
    assert np.all(alpha[:3] >= s[:3, 0]) and np.all(alpha[:3] <= 1.2 * s[:3, 0])
    assert s[0, -1] / alpha[0] / 4 <= l0[0] <= s[0, -1] / alpha[0]
    assert l0[1] == eps and l0[2] == eps and l0[3] == eps
