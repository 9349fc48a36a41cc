"""gpusvd.takagi: properties against SciPy's SVD.

``TestTakagi_CPU`` runs the paper's Jacobi method (``method="jacobi"``) on NumPy input;
``TestTakagi_GPU`` reruns every test with CuPy input (marker ``gpu``). The small
matrices go through the pointwise sweeps; ``test_blocked`` forces the blocked form with
small blocks. ``TestTakagiEigh_CPU`` reruns the properties with ``method="auto"``, the
real symmetric eigenproblem on the CPU (``method="eigh"``), to 30 n·ε;
``TestTakagiEigh_GPU`` with CuPy input. ``TestTakagiOneLaunch_GPU`` reruns the GPU tests
with the matrices of up to 64 indices factored in one launch.
"""

import numpy as np
import pytest
import scipy.linalg

from . import naive_takagi as naive
from gpusvd import LinAlgError, testing
from gpusvd._core import tunables
from gpusvd.takagi import driver, factorization, takagi

BOUND = 100  # residual, orthogonality, Takagi value error: units of n·ε
COMPLEX = (np.complex64, np.complex128)
REAL = (np.float32, np.float64)
WORKING = {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128,
           np.dtype(np.complex64): np.complex64, np.dtype(np.complex128): np.complex128}


def _host(x):
    return x.get() if hasattr(x, "get") else np.asarray(x)


class TestTakagi_CPU:
    device = "cpu"
    method = "jacobi"
    bound = BOUND

    def put(self, a):
        return a

    def takagi(self, a, **kw):
        return takagi(self.put(a), device=self.device, **{"method": self.method, **kw})

    def check(self, a, **kw):
        """Factor a and assert every property; returns (S, U) on the host."""
        s, u = (_host(x) for x in self.takagi(a, **kw))
        n = a.shape[0]
        dtype = np.dtype(WORKING.get(np.dtype(a.dtype), np.complex128))
        eps = np.finfo(dtype).eps
        assert u.dtype == dtype and s.dtype == np.finfo(dtype).dtype
        assert s.shape == (n,) and u.shape == (n, n)
        assert np.all(s >= 0) and np.all(s[:-1] >= s[1:])
        assert testing.svd_residual(a.astype(dtype), u, s, u.T) < self.bound
        assert testing.orthogonality(u) < self.bound
        s_ref = scipy.linalg.svdvals(a.astype(np.complex128))
        norm = np.linalg.norm(a.astype(np.complex128))
        assert np.max(np.abs(s - s_ref), initial=0) <= self.bound * max(n, 1) * eps * norm
        return s, u

    @pytest.mark.parametrize("dtype", COMPLEX + REAL)
    @pytest.mark.parametrize("n", [1, 2, 3, 8, 33, 64])
    def test_random(self, n, dtype):
        self.check(testing.complex_symmetric(n, dtype=dtype, seed=n))

    @pytest.mark.parametrize("dtype", COMPLEX)
    @pytest.mark.parametrize("n, block, inner", [(8, 4, 1), (21, 4, 1), (40, 4, 2),
                                                 (40, 8, 1), (21, 32, 1), (1, 32, 1)])
    def test_blocked(self, n, block, inner, dtype):
        a = testing.complex_symmetric(n, dtype=dtype, seed=n + block)
        with tunables.override(takagi_blocked_min_n=0, takagi_block_size=block,
                               takagi_inner_sweeps=inner):
            self.check(a)

    @pytest.mark.parametrize("dtype", COMPLEX)
    def test_rank_deficient(self, dtype):
        values = np.r_[np.linspace(3, 1, 5), np.zeros(25)]
        s, _ = self.check(naive.with_takagi_values(values, dtype=dtype, seed=1))
        assert np.all(s[5:] <= self.bound * 30 * np.finfo(dtype).eps * 3)

    @pytest.mark.parametrize("dtype", COMPLEX)
    def test_repeated_values(self, dtype):
        values = np.repeat([2.0, 1.0, 0.5], [6, 10, 4])
        s, _ = self.check(naive.with_takagi_values(values, dtype=dtype, seed=2))
        np.testing.assert_allclose(s, np.sort(values)[::-1], rtol=0,
                                   atol=self.bound * 20 * np.finfo(dtype).eps)

    @pytest.mark.parametrize("dtype", COMPLEX + REAL)
    @pytest.mark.parametrize("value", [0, 1], ids=["zero", "identity"])
    def test_zero_and_identity_give_the_identity(self, dtype, value):
        # thewalrus's own tests ask this of a Takagi factorization (its test_zeros, and
        # the Bloch-Messiah decomposition of the identity), on every method and device.
        s, u = self.check(value * np.eye(6, dtype=dtype))
        assert np.array_equal(s, np.full(6, value)) and np.array_equal(u, np.eye(6))

    @pytest.mark.parametrize("dtype", COMPLEX + REAL)
    def test_diagonal(self, dtype):
        # A diagonal input: U a phase matrix, its columns in the values' descending order
        # (ties in index order), U·diag(S)·Uᵀ = A.
        d = np.array([1j, -3.0, 0.0, 2 + 2j, -0.5j, 1e-3, -3.0])
        d = (d if np.dtype(dtype).kind == "c" else d.real + d.imag).astype(dtype)
        s, u = self.check(np.diag(d))
        order = np.argsort(-np.abs(d), kind="stable")
        np.testing.assert_allclose(s, np.abs(d)[order], rtol=4 * np.finfo(dtype).eps)
        assert np.array_equal(u != 0, np.eye(len(d), dtype=bool)[:, order])

    def test_diagonal_matrices_in_a_stack_get_their_phase_matrix(self):
        rng = np.random.default_rng(7)
        g = rng.standard_normal((5, 5)) + 1j * rng.standard_normal((5, 5))
        stack = np.stack([np.diag([2.0, 1j, 3.0, 0.0, 1.0]), g + g.T, np.zeros((5, 5))])
        s, u = (_host(x) for x in self.takagi(stack))
        assert np.array_equal(u[2], np.eye(5)) and not s[2].any()
        assert np.array_equal(u[0] != 0, np.eye(5, dtype=bool)[:, [2, 0, 1, 4, 3]])
        for k in range(3):
            assert testing.svd_residual(stack[k], u[k], s[k], u[k].T) < self.bound

    @pytest.mark.parametrize("dtype", COMPLEX)
    def test_zero_leading_entry(self, dtype):
        a = testing.complex_symmetric(20, dtype=dtype, seed=5)
        a[0, 0] = 0
        self.check(a)

    @pytest.mark.parametrize("dtype", COMPLEX)
    def test_real_with_tiny_imaginary_part(self, dtype):
        real = testing.complex_symmetric(24, dtype=np.float64, seed=6)
        tiny = testing.complex_symmetric(24, dtype=np.float64, seed=7)
        a = (real + 1j * 1e3 * np.finfo(dtype).eps * tiny).astype(dtype)
        self.check(a)

    @pytest.mark.parametrize("a", [naive.cycle_graph(24), naive.random_graph(30, 0.2, seed=8)],
                             ids=["cycle", "random"])
    def test_graph_adjacency(self, a):
        s, _ = self.check(a)
        np.testing.assert_allclose(s, np.sort(np.abs(np.linalg.eigvalsh(a)))[::-1],
                                   rtol=0, atol=self.bound * a.shape[0] * np.finfo(float).eps)

    @pytest.mark.parametrize("scale", [1e-300, 1e300])
    def test_extreme_scale(self, scale):
        a = testing.complex_symmetric(12, seed=9)
        s, u = (_host(x) for x in self.takagi(a * scale))
        s_ref, u_ref = (_host(x) for x in self.takagi(a))
        np.testing.assert_allclose(s / scale, s_ref, rtol=1e-13)  # measured unscaled:
        assert testing.svd_residual(a, u, s / scale, u.T) < self.bound  # no metric underflows
        assert testing.orthogonality(u) < self.bound

    def test_integer_input(self):
        a = np.array([[2, 1, 0], [1, 0, 3], [0, 3, 1]])
        s, u = self.check(a)
        assert u.dtype == np.complex128

    def test_nearly_symmetric_accepted(self):
        a = testing.complex_symmetric(10, seed=10)
        a[0, 1] *= 1 + 4 * np.finfo(float).eps
        self.check(a)

    def test_stacked(self):
        a = np.stack([testing.complex_symmetric(7, seed=k) for k in range(6)]).reshape(2, 3, 7, 7)
        s, u = (_host(x) for x in self.takagi(a))
        assert s.shape == (2, 3, 7) and u.shape == (2, 3, 7, 7)
        for idx in np.ndindex(2, 3):
            assert testing.svd_residual(a[idx], u[idx], s[idx], u[idx].T) < self.bound
        s, u = (_host(x) for x in self.takagi(np.zeros((0, 4, 4))))
        assert s.shape == (0, 4) and u.shape == (0, 4, 4)

    def test_empty(self):
        s, u = (_host(x) for x in self.takagi(np.zeros((0, 0), np.complex64)))
        assert s.shape == (0,) and u.shape == (0, 0) and u.dtype == np.complex64

    @pytest.mark.parametrize("dtype", [np.complex128, np.float64])
    def test_input_unchanged(self, dtype):
        a = testing.complex_symmetric(15, dtype=dtype, seed=11)
        kept = a.copy()
        x = self.put(a)
        self.takagi(x)
        assert np.array_equal(_host(x), kept)

    def test_deterministic(self):
        a = testing.complex_symmetric(30, seed=12)
        first = [_host(x) for x in self.takagi(a)]
        second = [_host(x) for x in self.takagi(a)]
        for p, q in zip(first, second):
            assert np.array_equal(p, q)

    def test_not_converged_raises(self):
        a = testing.complex_symmetric(20, seed=13)
        with pytest.raises(LinAlgError, match="did not converge in 1 sweeps"):
            self.takagi(a, max_sweeps=1)
        assert issubclass(LinAlgError, np.linalg.LinAlgError)

    def test_tol(self):
        a = testing.complex_symmetric(20, seed=14)
        s, u = (_host(x) for x in self.takagi(a, tol=1e-3))
        assert testing.svd_residual(a, u, s, u.T) < 1e-3 / (20 * np.finfo(float).eps)

    @pytest.mark.parametrize("bad", [np.nan, np.inf])
    def test_non_finite_raises(self, bad):
        a = testing.complex_symmetric(5, seed=15)
        a[1, 2] = a[2, 1] = bad
        with pytest.raises(ValueError, match="NaN or infinity"):
            self.takagi(a)

    def test_bad_input_raises(self):
        with pytest.raises(ValueError, match="2-D"):
            self.takagi(np.ones(4))
        with pytest.raises(ValueError, match="square"):
            self.takagi(np.ones((3, 4)))
        with pytest.raises(ValueError, match="max_sweeps"):
            self.takagi(np.eye(3), max_sweeps=-1)
        with pytest.raises(ValueError, match="tol"):
            self.takagi(np.eye(3), tol=-1.0)

    def test_not_symmetric_raises(self):
        a = testing.random_matrix(6, 6, dtype=np.complex128, seed=16)
        asymmetry = np.linalg.norm(a - a.T) / np.linalg.norm(a)
        with pytest.raises(ValueError, match=f"not symmetric.*{asymmetry:.3g}"):
            self.takagi(a)
        hermitian = a + a.conj().T
        with pytest.raises(ValueError, match="not Hermitian"):
            self.takagi(hermitian)


@pytest.mark.gpu
class TestTakagi_GPU(TestTakagi_CPU):
    device = "auto"

    def put(self, a):
        import cupy
        return cupy.asarray(a)

    @pytest.mark.parametrize("dtype", COMPLEX + REAL)
    @pytest.mark.parametrize("n", [127, 128, 300])
    def test_default_blocking(self, n, dtype):
        """Sizes around the switch to the blocked form, with the default block size."""
        self.check(testing.complex_symmetric(n, dtype=dtype, seed=n))

    def test_strided_update_stream(self):
        """U's GEMMs on a second stream or on the current one: the same operations on the
        same data (cuBLAS may pick another kernel for another handle: rounding apart)."""
        a = testing.complex_symmetric(600, seed=21)
        got = []
        for overlap in (True, False):
            with tunables.override(takagi_update_overlap=overlap):
                got.append(self.check(a))
        (s1, u1), (s2, u2) = got
        tol = BOUND * 600 * np.finfo(float).eps
        np.testing.assert_allclose(s2, s1, rtol=0, atol=tol * s1[0])
        sign = np.sign(np.real(np.sum(u1.conj() * u2, axis=0)))
        np.testing.assert_allclose(u2, u1 * sign, rtol=0, atol=tol * s1[0] / np.min(np.diff(-s1)))

    def test_degenerate_input_converges_by_default(self):
        """thewalrus's test_degenerate: 35 zero and 25 equal Takagi values, where the sweeps
        may converge only linearly; the default method falls back to the eigensolver
        rather than raise."""
        import cupy

        for seed in range(12):
            rng = np.random.default_rng(seed)
            u = testing.haar_orthogonal(60, dtype=np.complex128, seed=seed)
            a = (u * np.r_[np.zeros(25), np.full(25, rng.random()), np.zeros(10)]) @ u.T
            s, v = (_host(x) for x in takagi(cupy.asarray(a)))
            assert testing.svd_residual(a, v, s, v.T) < BOUND
            assert testing.orthogonality(v) < BOUND

    def test_numpy_input_returns_numpy(self):
        a = testing.complex_symmetric(300, seed=17)
        s, u = takagi(a, device="gpu")
        assert isinstance(s, np.ndarray) and isinstance(u, np.ndarray)
        assert testing.svd_residual(a, u, s, u.T) < BOUND

    def test_matches_cpu(self):
        a = testing.complex_symmetric(150, seed=18)
        s_gpu, _ = takagi(a, device="gpu")
        s_cpu, _ = takagi(a, device="cpu")
        assert testing.sv_error(s_gpu, s_cpu) < BOUND * 150


@pytest.mark.gpu
class TestTakagiSweeps_GPU(TestTakagi_GPU):
    """Every GPU test with blocks of 8 indices (tunable ``takagi_block_size``), so that
    matrices of more than 16 take the sweeps, a launch and GEMMs each, not the one launch
    that they take by default (``takagi_solve_one_tile``, n ≤ 64)."""

    @pytest.fixture(autouse=True)
    def _small_blocks(self):
        with tunables.override(takagi_block_size=8):
            yield


@pytest.mark.gpu
class TestOneLaunch_GPU:
    """Matrices of up to 64 indices in one launch against the sweeps."""

    @pytest.mark.parametrize("dtype", COMPLEX)
    def test_agrees_with_the_sweeps(self, dtype):
        a = testing.complex_symmetric(50, dtype=dtype, seed=23)
        s1, u1 = (_host(x) for x in takagi(a, device="gpu"))
        with tunables.override(takagi_block_size=8):
            s2, u2 = (_host(x) for x in takagi(a, device="gpu"))
        eps = np.finfo(dtype).eps
        assert np.max(np.abs(s1 - s2)) <= BOUND * 50 * eps * s1[0]
        sign = np.sign(np.real(np.sum(u1.conj() * u2, axis=0)))
        gap = np.min(np.diff(-s1)) / s1[0]
        assert np.max(np.abs(u1 * sign - u2)) <= BOUND * 50 * eps / gap

    @pytest.mark.parametrize("dtype", COMPLEX)
    def test_a_stack_in_one_launch(self, dtype):
        """Forty matrices of order 20 (one of them zero, one diagonal, their scales 10^±30)
        in one launch: each factored as well as alone, and as the sweeps factor it; the
        diagonal one in its closed form."""
        rng = np.random.default_rng(24)
        stack = np.stack([testing.complex_symmetric(20, dtype=dtype, seed=k)
                          * 10.0 ** rng.integers(-30, 30) for k in range(40)])
        stack[7] = 0
        stack[9] = np.diag(np.arange(20) - 10.0)
        s, u = (_host(x) for x in takagi(stack, device="gpu"))
        with tunables.override(takagi_block_size=8):
            s2, _ = (_host(x) for x in takagi(stack, device="gpu"))
        eps = np.finfo(dtype).eps
        for k, a in enumerate(stack):
            peak = np.abs(a).max()
            assert testing.svd_residual(a, u[k], s[k], u[k].T) < BOUND
            assert testing.orthogonality(u[k]) < BOUND
            assert np.max(np.abs(s[k] - s2[k])) <= BOUND * 20 * eps * 20 * peak
        assert np.array_equal(u[7], np.eye(20)) and not s[7].any()
        assert np.array_equal(u[9] != 0, np.eye(20, dtype=bool)[:, np.argsort(
            -np.abs(np.arange(20) - 10.0), kind="stable")])
        for k in range(40):
            alone_s, alone_u = (_host(x) for x in takagi(stack[k], device="gpu"))
            assert np.array_equal(alone_s, s[k]) and np.array_equal(alone_u, u[k])

    @pytest.mark.parametrize("dtype", COMPLEX)
    def test_an_asymmetric_matrix_in_a_stack_is_named(self, dtype):
        stack = np.stack([testing.complex_symmetric(12, dtype=dtype, seed=k)
                          for k in range(3)])
        stack[1, 0, 1] += 0.05       # ‖A − Aᵀ‖_F/‖A‖_F ≈ 0.005: far above 100·n·ε
        with pytest.raises(ValueError, match="not symmetric"):
            takagi(stack, device="gpu")

    def test_not_converged_raises_and_auto_falls_back(self, monkeypatch):
        """max_sweeps given: the sweeps' error. "auto": a matrix of the stack whose sweeps
        did not converge (reported so here) takes the eigensolver; the others keep
        theirs."""
        stack = np.stack([testing.complex_symmetric(30, dtype=np.complex128, seed=k)
                          for k in range(3)])
        with pytest.raises(LinAlgError, match="did not converge in 1 sweeps"):
            takagi(stack, device="gpu", max_sweeps=1)
        launched = driver.factorize_one_launch

        def second_not_converged(*args, **kwargs):
            s, u, found = launched(*args, **kwargs)
            s[1], u[1] = 0, 0
            return s, u, found._replace(converged=np.array([True, False, True]))

        monkeypatch.setattr(driver, "factorize_one_launch", second_not_converged)
        s, u = (_host(x) for x in takagi(stack, device="gpu"))
        for k, a in enumerate(stack):
            assert testing.svd_residual(a, u[k], s[k], u[k].T) < BOUND
        with pytest.raises(LinAlgError, match="did not converge"):
            takagi(stack, device="gpu", method="jacobi")


class TestTakagiEigh_CPU(TestTakagi_CPU):
    """The CPU's default (``method="auto"``): the real symmetric eigenproblem of
    [[Re A, Im A], [Im A, −Re A]], held to 30 n·ε. ``tol`` and ``max_sweeps`` send
    ``"auto"`` to the Jacobi sweeps (``test_tol``, ``test_not_converged_raises``); the
    tests of the sweeps' blocking are not this method's."""
    method = "auto"
    bound = 30
    test_blocked = test_updates_agree = test_unknown_update_raises = None

    @pytest.mark.parametrize("dtype", COMPLEX)
    def test_tiny_values_keep_u_unitary(self, dtype):
        """Values near zero, distinct and repeated: there the eigenvectors of +σ_j and of
        −σ_k mix, and X + iY loses its unitarity entirely (10¹⁴ n·ε measured) unless the
        QR restores it."""
        values = np.r_[1.0, 1e-8, 1e-8, 1e-10, 3e-10, np.zeros(5)]
        self.check(naive.with_takagi_values(values, dtype=dtype, seed=3))

    @pytest.mark.parametrize("dtype", COMPLEX)
    def test_agrees_with_jacobi(self, dtype):
        """The same values as the Jacobi sweeps, and the same vectors up to the sign of
        each column (distinct values: a Takagi vector is unique up to ±1)."""
        a = testing.complex_symmetric(40, dtype=dtype, seed=22)
        s1, u1 = (_host(x) for x in self.takagi(a))
        s2, u2 = (_host(x) for x in self.takagi(a, method="jacobi"))
        eps = np.finfo(dtype).eps
        assert np.max(np.abs(s1 - s2)) <= self.bound * 40 * eps * s1[0]
        sign = np.sign(np.real(np.sum(u1.conj() * u2, axis=0)))
        gap = np.min(np.diff(-s1)) / s1[0]
        assert np.max(np.abs(u1 * sign - u2)) <= self.bound * 40 * eps / gap


def test_auto_picks_eigh_on_the_cpu_unless_sweeps_are_controlled(monkeypatch):
    """``method="auto"`` on the CPU: the whole stack to the eigenproblem in one call; with
    ``tol`` or ``max_sweeps``, the Jacobi sweeps, matrix by matrix."""
    from gpusvd.takagi import driver, embedding

    calls = []
    for module, name in ((embedding, "eigh"), (driver, "jacobi")):
        real = module.factorize

        def counted(a, *args, _real=real, _name=name, **kw):
            calls.append((_name, a.shape))
            return _real(a, *args, **kw)
        monkeypatch.setattr(module, "factorize", counted)
    a = np.stack([testing.complex_symmetric(6, seed=k) for k in range(3)])
    takagi(a, device="cpu")
    assert calls == [("eigh", (3, 6, 6))]
    calls.clear()
    takagi(a, device="cpu", tol=1e-12)
    takagi(a[0], device="cpu", max_sweeps=30)
    assert calls == [("jacobi", (6, 6))] * 4
    calls.clear()
    takagi(a[0], method="jacobi", device="cpu")
    assert calls == [("jacobi", (6, 6))]


def test_eigh_takes_no_sweep_controls():
    a = testing.complex_symmetric(4, seed=23)
    for kw in ({"tol": 1e-10}, {"max_sweeps": 10}):
        with pytest.raises(ValueError, match="method='eigh' takes neither"):
            takagi(a, method="eigh", device="cpu", **kw)
    with pytest.raises(ValueError, match="unknown method 'svd'"):
        takagi(a, method="svd", device="cpu")


@pytest.mark.gpu
class TestTakagiEigh_GPU(TestTakagiEigh_CPU):
    """``method="eigh"`` on the GPU (cuSOLVER's eigensolver and QR through CuPy)."""
    device = "auto"
    method = "eigh"
    test_tol = test_not_converged_raises = None

    def put(self, a):
        import cupy
        return cupy.asarray(a)



@pytest.mark.parametrize("fallback", [True, False])
def test_sweeps_that_do_not_converge_fall_back_to_the_eigensolver(fallback):
    """The default method's sweeps (on the GPU) give way to "eigh" where they do not
    converge; asked for by name or controlled, they raise."""
    a = testing.complex_symmetric(12, seed=25)[None]
    tol = driver.default_tol(12, a.dtype)
    if not fallback:
        with pytest.raises(LinAlgError, match="did not converge in 1 sweeps"):
            factorization._sweeps(a, np, tol, 1, fallback=False)
        return
    s, u = factorization._sweeps(a, np, tol, 1, fallback=True)
    assert testing.svd_residual(a[0], u[0], s[0], u[0].T) < 30
    np.testing.assert_allclose(s[0], np.linalg.svd(a[0], compute_uv=False), rtol=0,
                               atol=30 * 12 * np.finfo(float).eps * s[0, 0])


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("method", ["auto", "jacobi", "eigh"])
def test_diagonal_input_with_subnormal_entries(dtype, method):
    """A diagonal with subnormal entries (closed form): U unitary, A = U·diag(S)·Uᵀ to
    n·ε·‖A‖ (the phase √(d/|d|) of a subnormal complex64 d was NaN: its modulus, hypotf,
    is rounded to the subnormal grid, and the complex division by it overflowed)."""
    info = np.finfo(dtype)
    tiny = np.ldexp(info.dtype.type(1), info.minexp - 6)
    a = np.diag(np.array([1.0, 0.5j, (3 + 4j) * tiny, -tiny * 1j, 0], dtype))
    s, u = takagi(a, method=method, device="cpu")
    assert np.isfinite(u).all()
    assert testing.orthogonality(u) < BOUND
    rebuilt = (u * s) @ u.T
    assert np.abs(rebuilt - a).max() <= BOUND * 5 * info.eps
