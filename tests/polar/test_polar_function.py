"""``gpusvd.polar`` against ``scipy.linalg.polar``: on LAPACK's test
types, random, graded, rank-deficient, tall, wide, complex and stacked input, both sides,
``u`` orthonormal to ORTHOGONALITY and ``a = u·p`` (or ``p·u``) to BOUND in units of n·ε,
``p`` Hermitian positive semidefinite; ``u`` equal to SciPy's where it is unique (full
rank). The GPU class reruns every test with CuPy input.

One matrix takes the single-matrix QDWH, a stack the batched engine: the tests that take
the ``remedies`` fixture make the batched QDWH refuse a single matrix and count the
matrices whose U came from the SVD (rank deficient), so the route itself is tested.
"""

import numpy as np
import pytest
import scipy.linalg

import gpusvd
from gpusvd import testing
from gpusvd.polar import decomposition as polar_decomposition
from gpusvd._core import tunables
from gpusvd.polar import qdwh as batched_qdwh

BOUND = 30  # units of n·ε
ORTHOGONALITY = 10  # ‖UᴴU − I‖_F in units of k·ε, k = min(M, N)
DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
SHAPES = [(1, 1), (2, 2), (9, 9), (40, 40), (67, 30), (30, 67)]
KINDS = ("zero", "identity", "evenly_spaced", "near_underflow", "near_overflow")


def _host(x):
    return x.get() if hasattr(x, "get") else np.asarray(x)


def _wide(dtype):
    return np.complex128 if np.dtype(dtype).kind == "c" else np.float64


@pytest.fixture
def remedies(monkeypatch):
    """The batched QDWH refuses, except inside the SVD remedy (the batched SVD runs on it);
    returns the list of the matrices (stacks) the remedy served."""
    served, inside = [], []
    polar_factor, svd_factor = batched_qdwh.polar_factor, polar_decomposition._svd_factor

    def refused(xp, y, *args):
        if not inside:
            raise AssertionError("one matrix reached the batched QDWH")
        return polar_factor(xp, y, *args)

    def counted(a, xp):
        served.append(a.shape)
        inside.append(a.shape)
        try:
            return svd_factor(a, xp)
        finally:
            inside.pop()

    monkeypatch.setattr(batched_qdwh, "polar_factor", refused)
    monkeypatch.setattr(polar_decomposition, "_svd_factor", counted)
    return served


class TestPolar_CPU:
    """QDWH on the CPU, asked for by name (``method="auto"`` is LAPACK's SVD there:
    :class:`TestPolar_LAPACK_CPU`), so that its routes are tested without a GPU."""
    device = "cpu"
    method = "qdwh"

    def put(self, a):
        return a

    def polar(self, a, side="right", **kw):
        kw.setdefault("method", self.method)
        u, p = gpusvd.polar(self.put(a), side, device=self.device, **kw)
        return _host(u), _host(p)

    def check(self, a, side="right", **kw):
        before = a.copy()
        u, p = self.polar(a, side, **kw)
        np.testing.assert_array_equal(a, before)
        m, n = a.shape[-2:]
        k = n if side == "right" else m
        assert u.shape == a.shape and p.shape == (*a.shape[:-2], k, k)
        assert u.dtype == a.dtype and p.dtype == a.dtype
        eps = np.finfo(a.dtype).eps
        for ai, ui, pi in zip(a.reshape(-1, m, n), u.reshape(-1, m, n), p.reshape(-1, k, k)):
            ai, ui, pi = (x.astype(_wide(a.dtype)) for x in (ai, ui, pi))
            # Measured in units of max|a| (exactly, a power of two): the near-overflow and
            # near-underflow types would otherwise overflow the norms themselves.
            unit = np.ldexp(1.0, -np.frexp(np.abs(ai).max(initial=0.0))[1])
            ai, pi = ai * unit, pi * unit
            norm = max(np.linalg.norm(ai, 2), np.finfo(a.dtype).tiny)
            q = ui if m >= n else ui.conj().T
            assert np.linalg.norm(q.conj().T @ q - np.eye(min(m, n))) <= \
                ORTHOGONALITY * min(m, n) * eps
            back = ui @ pi if side == "right" else pi @ ui
            assert np.linalg.norm(back - ai) <= BOUND * max(m, n) * eps * norm
            assert np.linalg.norm(pi - pi.conj().T) <= BOUND * k * eps * norm
            assert np.linalg.eigvalsh(pi).min() >= -BOUND * k * eps * norm
        return u, p

    @pytest.mark.parametrize("side", ["right", "left"])
    @pytest.mark.parametrize("dtype", DTYPES)
    @pytest.mark.parametrize("shape", SHAPES)
    def test_random_against_scipy(self, shape, dtype, side):
        a = testing.random_matrix(*shape, dtype=dtype, seed=1)
        u, p = self.check(a, side)
        u_ref, p_ref = scipy.linalg.polar(a.astype(np.complex128 if a.dtype.kind == "c"
                                                   else np.float64), side)
        s = np.linalg.svd(a.astype(u_ref.dtype), compute_uv=False)
        eps = np.finfo(dtype).eps
        # u is unique for full-rank a; its error grows as ε·κ (Higham's perturbation bound).
        assert np.abs(u - u_ref).max() <= BOUND * max(shape) * eps * s[0] / s[-1]
        assert np.abs(p - p_ref).max() <= BOUND * max(shape) * eps * s[0]

    @pytest.mark.parametrize("dtype", DTYPES)
    @pytest.mark.parametrize("shape", [(40, 40), (67, 30), (30, 67)])
    @pytest.mark.parametrize("kind", KINDS)
    def test_lapack_types(self, kind, shape, dtype, remedies):
        self.check(testing.lapack_type(kind, *shape, dtype=dtype, seed=2))
        self.check(testing.lapack_type(kind, *shape, dtype=dtype, seed=2), "left")

    @pytest.mark.parametrize("dtype", (np.float32, np.float64))
    def test_rank_deficient_keeps_u_orthonormal(self, dtype):
        """QDWH's iterate is a partial isometry there; u is still orthonormal."""
        for a in (testing.low_rank(50, 40, 5, dtype=dtype, seed=3), np.ones((6, 6), dtype),
                  testing.graded(40, 40, grading=1e-30 if dtype == np.float64 else 1e-12,
                                 dtype=dtype, seed=4)):
            self.check(a)

    @pytest.mark.parametrize("side", ["right", "left"])
    @pytest.mark.parametrize("dtype", DTYPES)
    @pytest.mark.parametrize("shape", [(50, 50), (90, 40), (44, 40), (40, 90), (1, 1)])
    def test_one_matrix_against_scipy(self, shape, dtype, side, remedies):
        """Square; tall with a QR first (M > 1.15·N); tall without (l₀ = ε); wide; 1×1:
        κ = 100, so no remedy, and u within BOUND·n·ε·κ of SciPy's (Higham, *Functions
        of Matrices*, Thm. 8.9: u's perturbation grows as κ·ε)."""
        a = testing.with_condition(*shape, 100.0, dtype=dtype, seed=1)
        u, p = self.check(a, side)
        assert not remedies
        u_ref, p_ref = scipy.linalg.polar(a.astype(_wide(dtype)), side)
        eps = np.finfo(dtype).eps
        norm = np.linalg.norm(a.astype(_wide(dtype)), 2)
        assert np.abs(u - u_ref).max() <= BOUND * max(shape) * eps * 100.0
        assert np.abs(p - p_ref).max() <= BOUND * max(shape) * eps * norm

    @pytest.mark.parametrize("dtype", DTYPES)
    def test_one_rank_deficient_matrix_takes_the_svd(self, dtype, remedies):
        """U_p is a partial isometry there, also where QDWH itself reports convergence
        (exact zeros among the singular values): each matrix's U comes from the SVD."""
        cases = [testing.low_rank(50, 40, 5, dtype=dtype, seed=3),
                 testing.low_rank(40, 70, 3, dtype=dtype, seed=4),
                 np.ones((6, 6), dtype), np.diag(np.array([1, 2, 0, 3], dtype)),
                 np.zeros((5, 3), dtype)]
        for a in cases:
            self.check(a)
        assert len(remedies) == len(cases)

    @pytest.mark.parametrize("grading", ["rows", "spectrum"])
    def test_one_ill_conditioned_matrix(self, grading, remedies):
        """κ = 10¹² in float64: inside QDWH's reach (κ ≤ 10¹⁶), so no remedy."""
        if grading == "rows":
            a = testing.graded(60, 60, grading=1e-12, seed=5)
        else:
            a = testing.with_condition(60, 60, 1e12, seed=5)
        s = np.linalg.svd(a, compute_uv=False)
        assert 1e10 < s[0] / s[-1] < 1e14
        self.check(a)
        self.check(a, "left")
        assert not remedies

    def test_stacks_keep_the_batched_engine(self, monkeypatch):
        calls = []
        polar_factor = batched_qdwh.polar_factor

        def counted(xp, y, *args):
            calls.append(y.shape)
            return polar_factor(xp, y, *args)

        monkeypatch.setattr(batched_qdwh, "polar_factor", counted)
        a = np.random.default_rng(6).standard_normal((2, 12, 8))
        self.polar(a)
        self.polar(a[:1])
        assert calls == [(2, 8, 12)]

    def test_stack_in_one_call(self):
        rng = np.random.default_rng(5)
        a = rng.standard_normal((2, 3, 12, 8))
        a[0, 1] = np.ones((12, 8))   # a rank-one matrix among full-rank ones
        u, p = self.check(a)
        u_one, p_one = self.polar(a[1, 2])
        np.testing.assert_allclose(u[1, 2], u_one, atol=1e-13)

    def test_methods_agree(self):
        a = testing.with_condition(30, 20, 1e6, seed=6)
        u_q, p_q = self.check(a, method="qdwh")
        u_s, p_s = self.check(a, method="svd")
        assert np.abs(u_q - u_s).max() < 1e-8 and np.abs(p_q - p_s).max() < 1e-12

    def test_bad_arguments(self):
        with pytest.raises(ValueError, match="side"):
            self.polar(np.eye(2), "up")
        with pytest.raises(ValueError, match="method"):
            self.polar(np.eye(2), method="newton")
        with pytest.raises(ValueError, match="NaN or infinity"):
            self.polar(np.array([[1.0, np.nan], [0.0, 1.0]]))

    def test_nan_without_check(self):
        a = np.stack([np.eye(3), np.full((3, 3), np.nan)])
        u, p = self.polar(a, check_finite=False)
        assert np.isnan(u[1]).all() and np.isnan(p[1]).all()
        np.testing.assert_allclose(u[0], np.eye(3), atol=1e-15)

    @pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0)])
    def test_empty(self, shape):
        u, p = self.polar(np.zeros(shape))
        assert u.shape == shape and p.shape == (shape[1], shape[1])


class TestPolar_LAPACK_CPU(TestPolar_CPU):
    """``method="auto"`` on the CPU: U = W·Vᴴ from LAPACK's gesdd, as SciPy's, for every
    matrix of a stack in one call; the same contract. QDWH's routes are not taken."""
    method = "auto"

    @pytest.fixture
    def remedies(self, monkeypatch):
        """Here no matrix may reach QDWH, single or batched."""
        def refused(*args, **kwargs):
            raise AssertionError("QDWH ran where LAPACK's SVD should")
        monkeypatch.setattr(batched_qdwh, "polar_factor", refused)
        monkeypatch.setattr(polar_decomposition, "_qdwh_one", refused)
        return []

    @pytest.mark.parametrize("dtype", DTYPES)
    def test_one_rank_deficient_matrix_takes_the_svd(self, dtype, remedies):
        for a in [testing.low_rank(50, 40, 5, dtype=dtype, seed=3),
                  testing.low_rank(40, 70, 3, dtype=dtype, seed=4), np.ones((6, 6), dtype),
                  np.diag(np.array([1, 2, 0, 3], dtype)), np.zeros((5, 3), dtype)]:
            self.check(a)

    def test_stacks_keep_the_batched_engine(self, monkeypatch, remedies):
        """The whole stack in one gesdd call, as the SVD's rule on the CPU."""
        calls, real = [], np.linalg.svd

        def counted(a, *args, **kwargs):
            calls.append(a.shape)
            return real(a, *args, **kwargs)
        monkeypatch.setattr(np.linalg, "svd", counted)
        a = np.random.default_rng(6).standard_normal((2, 12, 8))
        u, p = self.polar(a)
        assert calls == [(2, 12, 8)]
        u_ref, p_ref = scipy.linalg.polar(a[1])
        np.testing.assert_allclose(u[1], u_ref, atol=1e-14)
        np.testing.assert_allclose(p[1], p_ref, atol=1e-14)


@pytest.mark.parametrize(("shape", "dtype"), [((3, 3), np.float64), ((2, 7, 4), np.float32),
                                            ((4, 6), np.complex128), ((5, 2, 2), np.complex64)])
@pytest.mark.parametrize("side", ["right", "left"])
def test_cpu_input_in_range_skips_the_front_end(monkeypatch, shape, dtype, side):
    """Finite input inside the scan's range goes to LAPACK's SVD as it is (no receive),
    with the front end's results bit for bit; out-of-range input takes the front end."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal(shape).astype(dtype)
    if np.dtype(dtype).kind == "c":
        a += 1j * rng.standard_normal(shape).astype(dtype)
    received = []
    real_receive = polar_decomposition.receive

    def counted(*args, **kwargs):
        received.append(args[0].shape)
        return real_receive(*args, **kwargs)
    monkeypatch.setattr(polar_decomposition, "receive", counted)
    u, p = gpusvd.polar(a, side)
    assert received == []
    gpusvd.polar(a * np.finfo(dtype).tiny, side)  # below the safe range: scaled
    assert received == [shape]
    monkeypatch.setattr(polar_decomposition, "directly", lambda *args: None)
    u_front, p_front = gpusvd.polar(a, side)
    for ours, theirs in ((u, u_front), (p, p_front)):
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        np.testing.assert_array_equal(ours, theirs)


class TestPolar_CholeskyQR_CPU(TestPolar_CPU):
    """The same with the CPU's QDWH QR steps and tall QRs by shifted CholeskyQR3, as the
    GPU's (gpusvd.polar.cholesky_qr)."""

    @pytest.fixture(autouse=True)
    def _cholesky_qr(self):
        with tunables.override(cholesky_qr_namespaces=("numpy", "cupy"),
                               qdwh_cholesky_qr_columns=(1, 1 << 30)):
            yield


@pytest.mark.gpu
class TestPolar_GPU(TestPolar_CPU):
    device = "gpu"
    method = "auto"  # QDWH on a GPU

    def put(self, a):
        import cupy

        return cupy.asarray(a)
