"""gpusvd.svd(method="polar") and svdvals(method="polar") .

The polar method meets the contract of ``gr``: every property test of
``TestSVD_GR_CPU`` reruns with ``method="polar"`` (shapes, dtypes, the LAPACK ddrvbd
types, graded, rank-deficient, stacks, input unchanged, same bits twice), on the CPU and
with CuPy input on the GPU; the complex cases of ``test_svd_gr_complex`` rerun through it
too. Below them, what is particular to the polar method: the QDWH iteration itself,
numerical rank deficiency (U_p only a partial isometry), the shape paths (QR first,
transposition) and the error paths.
"""


import numpy as np
import pytest
import scipy.linalg

import gpusvd
from gpusvd import testing
from gpusvd._core import tunables
from gpusvd.polar import cholesky_qr, estimates, qdwh

from ..golub_reinsch import test_svd_gr as gr_cases
from ..golub_reinsch import test_svd_gr_complex as complex_cases

BOUND = 30  # units of n·ε, as for gr


class TestSVD_Polar_CPU(gr_cases.TestSVD_GR_CPU):
    method = "polar"
    # QDWH's iterate reaches I to an ulp, not always exactly: with l₀ from the Gram
    # matrix (polar_svd/driver.py, _estimates) the identity's values come out 1 − ε.
    identity_error = 1


class TestSVD_Polar_CholeskyQR_CPU(TestSVD_Polar_CPU):
    """The same suite with the CPU's tall matrices reduced as the GPU's are, by shifted
    CholeskyQR3 first (cholesky_qr.cholesky_qr; Householder where it refuses)."""

    @pytest.fixture(autouse=True)
    def _cholesky_qr(self):
        with tunables.override(cholesky_qr_namespaces=("numpy", "cupy"),
                               qdwh_cholesky_qr_columns=(1, 1 << 30)):
            yield


class TestSVD_Polar_Estimates_CPU(TestSVD_Polar_CPU):
    """The same suite with QDWH's estimates of α and l₀ at every size (the library takes
    them from the tunable polar_estimates_min_n columns in double precision)."""

    @pytest.fixture(autouse=True)
    def _estimates(self):
        with tunables.override(polar_estimates_min_n=0):
            yield


class TestSVD_Polar_FixedSchedule_CPU(TestSVD_Polar_CPU):
    """The same suite with real matrices below polar_estimates_min_n columns taking
    the fixed sequence (fixed_schedule.py) through its NumPy twins, as the GPU's do
    through a CUDA graph."""

    @pytest.fixture(autouse=True)
    def _fixed(self):
        with tunables.override(fixed_schedule_namespaces=("numpy", "cupy")):
            yield


@pytest.mark.gpu
class TestSVD_Polar_GPU(gr_cases.TestSVD_GR_GPU):
    method = "polar"
    identity_error = 1


@pytest.mark.gpu
class TestSVD_Polar_Eager_GPU(TestSVD_Polar_GPU):
    """The GPU suite with one real matrix's QDWH run eagerly (qdwh.StackEngine, its
    Cholesky steps as syrk, potrf and two trsm) in place of the fixed sequence, as a
    matrix of more than fixed_schedule_max_n columns takes it."""

    @pytest.fixture(autouse=True)
    def _eager(self):
        with tunables.override(fixed_schedule_namespaces=()):
            yield


def _svd_polar(a, **kw):
    return gpusvd.svd(a, method="polar", device="cpu", **kw)


def _svd_polar_gpu(a, **kw):
    import cupy

    out = gpusvd.svd(cupy.asarray(a), method="polar", **kw)
    return tuple(x.get() for x in out)


@pytest.mark.parametrize("dtype", complex_cases.DTYPES)
@pytest.mark.parametrize("shape", complex_cases.SHAPES)
@pytest.mark.parametrize("full_matrices", [False, True])
def test_complex(shape, dtype, full_matrices):
    complex_cases._check(testing.random_matrix(*shape, dtype=dtype, seed=1), full_matrices,
                         _svd_polar)


@pytest.mark.parametrize("dtype", complex_cases.DTYPES)
@pytest.mark.parametrize("kind", ["rank", "graded", "near_underflow", "near_overflow"])
def test_complex_hard(kind, dtype):
    if kind == "rank":
        a = testing.low_rank(50, 40, 5, dtype=dtype, seed=5)
    elif kind == "graded":
        a = testing.graded(45, 33, side="both", dtype=dtype, seed=3)
    else:
        a = testing.lapack_type(kind, 40, 21, dtype=dtype, seed=4)
    complex_cases._check(a, False, _svd_polar)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", complex_cases.DTYPES)
@pytest.mark.parametrize("shape", complex_cases.GPU_SHAPES)
@pytest.mark.parametrize("full_matrices", [False, True])
def test_gpu_complex(shape, dtype, full_matrices):
    complex_cases._check(testing.random_matrix(*shape, dtype=dtype, seed=1), full_matrices,
                         _svd_polar_gpu)


# Rank-deficient and nearly so: σ_min at or below n·ε·σ_max, where U_p is not unique and
# QDWH leaves its columns on the null space unnormalized (module docstring of driver.py).
RANKS = [(60, 60, 1), (60, 60, 5), (60, 60, 59), (90, 40, 5), (40, 90, 5), (70, 70, 0)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
@pytest.mark.parametrize("m, n, rank", RANKS)
@pytest.mark.parametrize("full_matrices", [False, True])
def test_rank_deficient_u_orthonormal(m, n, rank, dtype, full_matrices):
    a = (testing.low_rank(m, n, rank, dtype=dtype, seed=rank) if rank
         else np.zeros((m, n), dtype))
    u, s, vh = _svd_polar(a, full_matrices=full_matrices)
    assert testing.orthogonality(u) < BOUND
    assert testing.orthogonality(vh, rows=True) < BOUND
    assert testing.svd_residual(a, u, s, vh) < BOUND
    s_ref = scipy.linalg.svdvals(a.astype(np.complex128))
    assert testing.sv_error(s, s_ref) < BOUND * max(m, n)


@pytest.mark.parametrize("cond", [1e2, 1e8, 1e15])
def test_ill_conditioned(cond):
    """Known spectrum, geometric from 1 to 1/cond: the values to gr's accuracy at every
    condition number, whichever lower bound l₀ the estimate gives."""
    n = 80
    s_true = np.geomspace(1.0, 1.0 / cond, n)
    a = testing.with_singular_values(s_true, 100, n, seed=7)
    u, s, vh = _svd_polar(a)
    assert testing.svd_residual(a, u, s, vh) < BOUND
    assert testing.orthogonality(u) < BOUND
    assert testing.sv_error(s, scipy.linalg.svdvals(a)) < BOUND * n


def test_qr_first_path_equals_square_path():
    """Tall input past the QR-first ratio and input just under it both meet the contract;
    their values agree with each other's reference to n·ε."""
    n = 30
    for m in (int(qdwh_ratio() * n), int(qdwh_ratio() * n) + 5):
        a = testing.random_matrix(m, n, seed=m)
        u, s, vh = _svd_polar(a)
        assert testing.svd_residual(a, u, s, vh) < BOUND
        assert testing.orthogonality(u) < BOUND


def qdwh_ratio():
    from gpusvd.polar import svd
    return svd.QR_FIRST_RATIO


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.float64, np.complex128])
def test_first_step_kind(dtype):
    """From l₀ = ε the first step is a QR step in double precision; in single precision
    a Cholesky step in float64 (qdwh.CHOLESKY_IN_DOUBLE_MAX_C), every later one a plain
    Cholesky step."""
    from gpusvd.polar.qdwh import schedule

    eps = float(np.finfo(dtype).eps)
    kinds = [qdwh.step_kind(float(c[0]), eps) for _, _, c in schedule(np.array([eps]), eps)]
    first = "qr" if eps < estimates.SINGLE_EPS_FROM else "cholesky in float64"
    assert kinds[0] == first
    assert set(kinds[2:]) == {"cholesky"}


def test_coefficients_halley_limit_and_bound_growth():
    """NBG eq. (3.5) at l = 1 is Halley's (3, 1, 3); the bound l_k rises to 1 within six
    steps from l₀ = ε (NBG §3), and never passes 1."""
    assert np.allclose(qdwh.coefficients(1.0 - 1e-15), (3.0, 1.0, 3.0), rtol=1e-6)
    l, steps = float(np.finfo(np.float64).eps), 0
    while 1.0 - l > 10 * np.finfo(np.float64).eps:
        l = qdwh.next_lower_bound(l, *qdwh.coefficients(l))
        steps += 1
        assert l <= 1.0
    assert steps <= 6


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_qdwh_polar_factor(dtype):
    """U_p is unitary and H = U_pᴴ·A is Hermitian positive definite, to n·ε."""
    n = 50
    a = testing.random_matrix(n, n, dtype=dtype, seed=11)
    alpha = estimates.NORM_SAFETY * estimates.norm2_estimate(a, np)
    l0 = estimates.lower_bound(a, alpha, np)
    uh, steps, converged = qdwh.polar_factor_one(np, (a.conj().T / alpha)[None].copy(), l0=l0)
    up = uh[0].conj().T
    eps = np.finfo(dtype).eps
    assert testing.orthogonality(up) < BOUND
    h = up.conj().T @ a
    assert np.linalg.norm(h - h.conj().T) < BOUND * n * eps * np.linalg.norm(a)
    assert np.linalg.eigvalsh((h + h.conj().T) / 2).min() > 0
    assert converged and steps <= 6


def test_lower_bound_is_below_sigma_min():
    """The estimate l₀ ≤ σ_min/α: an estimate above it would cost steps (NOTES.md, "QDWH's
    schedule")."""
    a = testing.with_singular_values(np.geomspace(1.0, 1e-6, 40), 40, 40, seed=3)
    alpha = estimates.NORM_SAFETY * estimates.norm2_estimate(a, np)
    l0 = estimates.lower_bound(a, alpha, np)
    assert 1e-6 / alpha / 10 <= l0 <= 1e-6 / alpha


def test_values_only_no_vectors():
    a = testing.random_matrix(50, 40, seed=12)
    s = gpusvd.svdvals(a, method="polar", device="cpu")
    assert testing.sv_error(s, scipy.linalg.svdvals(a)) < BOUND * 50


def test_non_finite_with_check_finite_false_gives_nan():
    """NaN in, NaN out (docs/design.md, "The public API": errors): the iteration never
    sees the NaN."""
    a = testing.random_matrix(20, 20, seed=13)
    a[3, 4] = np.nan
    u, s, vh = gpusvd.svd(a, method="polar", device="cpu", check_finite=False)
    assert np.isnan(s).all() and np.isnan(u).all() and np.isnan(vh).all()


def test_no_convergence_raises():
    a = testing.random_matrix(20, 20, seed=14)
    with tunables.override(qdwh_max_iterations=1), \
            pytest.raises(gpusvd.LinAlgError, match="did not converge in 1 step"):
        _svd_polar(a)


# --- Tall matrices: shifted CholeskyQR3 before QDWH (polar_svd.cholesky_qr) ---

TALL_DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


@pytest.mark.parametrize("dtype", TALL_DTYPES)
@pytest.mark.parametrize("cond", [1.0, 1e6, 1e12])
def test_cholesky_qr_factors(dtype, cond):
    """Q orthonormal and A = Q·R to 30 units of the input's ε (m·ε for the residual), R
    upper triangular, up to κ(A) = 1e12, past float32's own reach: the passes run in
    float64."""
    m, n = 400, 30
    a = testing.with_condition(m, n, cond, dtype=dtype, seed=3)
    q, r = cholesky_qr.cholesky_qr(a, np)
    eps = np.finfo(dtype).eps
    assert q.dtype == a.dtype and r.dtype == a.dtype
    assert testing.orthogonality(q) < BOUND
    assert np.linalg.norm(a - q @ r) / (np.linalg.norm(a) * m * eps) < BOUND
    assert np.array_equal(r, np.triu(r))


@pytest.mark.parametrize(("cond", "passes"), [(1.0, 2), (100.0, 2), (1e6, 3), (1e12, 3)])
def test_cholesky_qr_passes(cond, passes, monkeypatch):
    """Two passes (CholeskyQR2 after the shift) where the shifted pass's Q₁ is within
    ACCEPT of orthonormal, three otherwise; either way Q orthonormal and A = Q·R to
    30 units (cholesky_qr.ACCEPT)."""
    calls = []
    factor = np.linalg.cholesky
    monkeypatch.setattr(np.linalg, "cholesky", lambda g: calls.append(1) or factor(g))
    m, n = 400, 30
    a = testing.with_condition(m, n, cond, dtype=np.float64, seed=3)
    q, r = cholesky_qr.cholesky_qr(a, np)
    assert len(calls) == passes
    assert testing.orthogonality(q) < BOUND
    assert np.linalg.norm(a - q @ r) / (np.linalg.norm(a) * m * np.finfo(float).eps) < BOUND


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", TALL_DTYPES)
@pytest.mark.parametrize("cond", [1.0, 1e9])
def test_gpu_cholesky_qr_factors(dtype, cond):
    """On the GPU (cuBLAS's right-side trsm for float64 and complex128, GEMMs with the
    explicit inverse otherwise): the same bounds as the host's, and R close to the
    host's."""
    import cupy

    m, n = 3000, 200
    a = testing.with_condition(m, n, cond, dtype=dtype, seed=4)
    q, r = (x.get() for x in cholesky_qr.cholesky_qr(cupy.asarray(a), cupy))
    eps = np.finfo(dtype).eps
    assert q.dtype == a.dtype and r.dtype == a.dtype
    assert testing.orthogonality(q) < BOUND
    assert np.linalg.norm(a - q @ r) / (np.linalg.norm(a) * m * eps) < BOUND
    _, r_host = cholesky_qr.cholesky_qr(a, np)
    assert np.linalg.norm(r - r_host) / np.linalg.norm(r_host) < BOUND * n * eps * cond


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("rank", [0, 1, 2, 7])
def test_cholesky_qr_rank_deficient_refused_or_right(rank, seed):
    """A numerically rank-deficient A makes Q₁ singular: CholeskyQR3 either refuses it
    (None, for Householder QR) or, where rounding kept its Cholesky factors regular,
    returns a Q that is orthonormal with A = Q·R, a valid QR all the same. The zero
    matrix is refused."""
    m, n = 200, 20
    a = testing.low_rank(m, n, rank, seed=seed) if rank else np.zeros((m, n))
    found = cholesky_qr.cholesky_qr(a, np)
    if rank == 0:
        assert found is None
    if found is not None:
        q, r = found
        assert testing.orthogonality(q) < BOUND
        eps = np.finfo(np.float64).eps
        assert np.linalg.norm(a - q @ r) / (np.linalg.norm(a) * m * eps) < BOUND


@pytest.fixture
def cholesky_qr_on_cpu():
    """Route the CPU's tall matrices through shifted CholeskyQR3, as the GPU's are."""
    with tunables.override(cholesky_qr_namespaces=("numpy", "cupy"),
                           qdwh_cholesky_qr_columns=(1, 1 << 30)):
        yield


@pytest.mark.parametrize("dtype", TALL_DTYPES)
@pytest.mark.parametrize("kind", ["random", "graded", "rank", "ill"])
@pytest.mark.parametrize("compute_uv", [True, False])
def test_tall_through_cholesky_qr(cholesky_qr_on_cpu, dtype, kind, compute_uv):
    """The SVD of tall matrices reduced by CholeskyQR3 (or, rank deficient, by the
    Householder fallback) meets the contract: residual and orthogonality below 30 n·ε,
    values against LAPACK's in float64 below 30 units of max(m, n)·ε·σ₁."""
    m, n = 300, 40
    a = {"random": lambda: testing.random_matrix(m, n, dtype=dtype, seed=5),
         "graded": lambda: testing.graded(m, n, dtype=dtype, seed=5),
         "rank": lambda: testing.low_rank(m, n, 9, dtype=dtype, seed=5),
         "ill": lambda: testing.with_condition(m, n, 1e10, dtype=dtype, seed=5)}[kind]()
    before = a.copy()
    s_ref = scipy.linalg.svdvals(a.astype(np.complex128))
    if not compute_uv:
        s = gpusvd.svdvals(a, method="polar", device="cpu")
        assert testing.sv_error(s, s_ref) < BOUND * m
        return
    u, s, vh = _svd_polar(a, full_matrices=False)
    assert np.array_equal(a, before)
    assert u.shape == (m, n) and vh.shape == (n, n)
    assert testing.svd_residual(a, u, s, vh) < BOUND
    assert testing.orthogonality(u) < BOUND
    assert testing.orthogonality(vh, rows=True) < BOUND
    assert testing.sv_error(s, s_ref) < BOUND * m


def test_tall_full_matrices_keeps_householder(cholesky_qr_on_cpu, monkeypatch):
    """full_matrices needs the complete Q: Householder QR, CholeskyQR3 never called on
    the tall matrix."""
    original = cholesky_qr.cholesky_qr

    def tall_refused(w, xp, **kw):   # QDWH's QR steps of R's [√c·R; I] (40 × 20) may take it
        if w.shape[0] == 200:
            pytest.fail("CholeskyQR3 of the tall matrix with full_matrices")
        return original(w, xp, **kw)

    monkeypatch.setattr(cholesky_qr, "cholesky_qr", tall_refused)
    a = testing.random_matrix(200, 20, seed=2)
    u, s, vh = _svd_polar(a, full_matrices=True)
    assert u.shape == (200, 200)
    assert testing.orthogonality(u) < BOUND
