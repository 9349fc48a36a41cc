"""bidiagonal_svd by divide and conquer (bidiagonal/dbdsdc.py, LAPACK's dbdsdc).

Invariants in units of n·ε (gpusvd.testing): ‖B − U·S·Vt‖/(‖B‖·n·ε), ‖UᵀU − I‖/(n·ε),
‖Vt·Vtᵀ − I‖/(n·ε), and the values within n·ε·σ₁ of LAPACK's SVD of the dense B. Each
value relative to itself (60-digit oracle of bisection_cases) only where dbdsdc promises
it: n ≤ SMLSIZ = 25 (its leaves' QR of Demmel & Kahan) and the values-only path (dqds);
above 25 rows it perturbs B by ε·‖B‖ (module docstring), which the graded cases show.
"""

import numpy as np
import pytest

from gpusvd import testing
from gpusvd._core.errors import LinAlgError
from gpusvd.bidiagonal.dbdsdc import bidiagonal_svd, leaf_svd
from gpusvd.bidiagonal import qr as bidiagonal_qr
from gpusvd.bidiagonal.dqds import bidiagonal_singular_values

from . import bisection_cases

BOUND = 30  # in units of n·ε, as gr's property tests
SMLSIZ = 25  # dbdsdc's leaf size (ILAENV ispec 9): up to it, one QR solves B
SIZES = (0, 1, 2, 3, SMLSIZ, SMLSIZ + 1, 200, 1000)
DTYPES = (np.float32, np.float64)


def _dense(d, e):
    n = len(d)
    return np.diag(np.asarray(d, np.float64)) + np.diag(np.asarray(e, np.float64), 1) \
        if n else np.zeros((0, 0))


def _check(d, e, solve=bidiagonal_svd):
    """The invariants of the module docstring for the bidiagonal SVD ``solve`` (also
    test_dc_svd.py's); returns (u, s, vt)."""
    d, e = np.asarray(d), np.asarray(e)
    saved = d.copy(), e.copy()
    u, s, vt = solve(d, e)
    n = len(d)
    assert np.array_equal(d, saved[0]) and np.array_equal(e, saved[1])
    dtype = np.float32 if np.result_type(d, e) == np.float32 else np.float64
    assert u.dtype == s.dtype == vt.dtype == dtype
    assert u.shape == vt.shape == (n, n) and s.shape == (n,)
    assert np.all(s[:-1] >= s[1:]) and np.all(s >= 0)
    b = _dense(d, e)
    assert testing.svd_residual(b, u, s, vt) <= BOUND
    assert testing.orthogonality(u) <= BOUND
    assert testing.orthogonality(vt, rows=True) <= BOUND
    assert testing.sv_error(s, np.linalg.svd(b, compute_uv=False)) <= BOUND * max(n, 1)
    return u, s, vt


def _relative_error_n_eps(s, s_ref):
    return testing.relative_sv_error(s, s_ref) / (max(len(s), 1) * np.finfo(s.dtype).eps)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["random", "graded", "clustered"])
@pytest.mark.parametrize("n", SIZES)
def test_invariants(n, kind, dtype):
    d, e = testing.bidiagonal(n, kind=kind, dtype=dtype, seed=n)
    _check(d, e)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(bisection_cases.CASES))
def test_case_table(name, dtype):
    """The bisection solver's table: leaves (n ≤ 25) relatively accurate, with or
    without vectors; the values-only path (dqds) relatively accurate at every n."""
    if dtype == np.float32 and name not in bisection_cases.CASES32:
        pytest.skip("outside float32's range")
    d, e = bisection_cases.case(name, dtype)
    _, s, _ = _check(d, e)
    ref = bisection_cases.reference(name, dtype).astype(dtype)
    if len(d) <= SMLSIZ:
        assert _relative_error_n_eps(s, ref) <= BOUND
    assert _relative_error_n_eps(bidiagonal_svd(d, e, compute_uv=False), ref) <= BOUND


@pytest.mark.parametrize("n", [SMLSIZ + 1, 200, 1000])
def test_graded_above_leaf_size(n):
    """d_i = 10^(−20·i/(2n−1)): each value relative to itself in the values-only path;
    with vectors, dbdsdc's ε·‖B‖ perturbation (module docstring) bounds the error by
    n·ε·σ₁, so a value σ keeps n·ε·σ₁/σ of relative accuracy."""
    d, e = testing.bidiagonal(n, kind="graded", seed=n)
    _, s, _ = _check(d, e)
    ref = bidiagonal_singular_values(d, e)
    assert _relative_error_n_eps(bidiagonal_svd(d, e, compute_uv=False), ref) <= BOUND
    eps = np.finfo(np.float64).eps
    assert np.all(np.abs(s - ref) <= BOUND * n * eps * ref[0])


@pytest.mark.parametrize("n", [SMLSIZ, 200])
def test_against_bidiagonal_qr(n):
    """Values and invariants beside golub_reinsch's bidiagonal QR on the same B."""
    d, e = testing.bidiagonal(n, seed=7)
    _, s, _ = _check(d, e)
    s_qr, _, _ = bidiagonal_qr.bidiagonal_svd(d, e)
    assert testing.sv_error(s, s_qr) <= BOUND * n


def _diagonally_dominant(n, seed):
    """σ_min ≥ 1/2: d in [1, 2), |e| < 1/2."""
    rng = np.random.default_rng(seed)
    return rng.uniform(1, 2, n), rng.uniform(-0.5, 0.5, n - 1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [12, 200])
def test_zeros_split_and_rank(n, dtype):
    """Zero e_i split B into three blocks, each with one zero d_i: rank n − 3 (a block
    with nonzero e_i has rank ≥ its order − 1, whatever its d)."""
    d, e = _diagonally_dominant(n, n)
    d[[0, n // 2, n - 1]] = 0.0
    e[[n // 4, 3 * n // 4]] = 0.0
    _, s, _ = _check(d.astype(dtype), e.astype(dtype))
    tiny = BOUND * n * np.finfo(dtype).eps * s[0]
    assert np.count_nonzero(s <= tiny) == 3
    assert s[-4] >= 0.1


@pytest.mark.parametrize("n", [SMLSIZ, SMLSIZ + 1, 200])
@pytest.mark.parametrize("d, e", [(1.0, 0.0), (-3.0, 0.0), (1.0, 1e-9), (0.0, 0.0)],
                         ids=["identity", "minus-3I", "near-identity", "zero"])
def test_clusters_and_zero(n, d, e):
    """All values equal (or within 2e-9): any orthogonal basis is right; B = 0 gives
    s = 0 and the identities."""
    u, s, vt = _check(np.full(n, d), np.full(n - 1, e))
    np.testing.assert_allclose(s, abs(d), rtol=BOUND * n * np.finfo(float).eps, atol=2e-9)
    if d == 0.0:
        assert np.array_equal(u, np.eye(n)) and np.array_equal(vt, np.eye(n))


@pytest.mark.parametrize("n", [12, 200])
@pytest.mark.parametrize("scale", [1e-300, 1e300, 1e-310])
def test_extreme_scales(n, scale):
    """Entries near underflow (subnormal too) and overflow, against the same B at 1."""
    d, e = _diagonally_dominant(n, 5)
    u, s, vt = _check(d * scale, e * scale)
    s_one = bidiagonal_svd(d, e)[1]
    np.testing.assert_allclose(s / scale, s_one, rtol=1e-10 if scale > 1e-308 else 1e-6)


@pytest.mark.parametrize("d, u", [([3.0], 1.0), ([-2.5], -1.0), ([0.0], 1.0), ([-0.0], 1.0)])
def test_one_by_one(d, u):
    u_, s, vt = bidiagonal_svd(np.array(d), np.empty(0))
    assert u_.tolist() == [[u]] and s.tolist() == [abs(d[0])] and vt.tolist() == [[1.0]]


@pytest.mark.parametrize("dtype", DTYPES)
def test_empty(dtype):
    u, s, vt = bidiagonal_svd(np.empty(0, dtype), np.empty(0, dtype))
    assert u.shape == vt.shape == (0, 0) and s.shape == (0,)
    assert u.dtype == s.dtype == vt.dtype == dtype
    assert bidiagonal_svd(np.empty(0, dtype), np.empty(0, dtype), compute_uv=False).shape == (0,)


def test_layout_and_promotion():
    """U and Vt come as LAPACK wrote them (Fortran order, no copy); integers → float64."""
    u, s, vt = bidiagonal_svd(np.arange(1, 41), np.ones(39, dtype=np.int32))
    assert u.flags.f_contiguous and vt.flags.f_contiguous
    assert u.dtype == s.dtype == np.float64


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [3, 200])
def test_values_only_match(n, dtype):
    d, e = testing.bidiagonal(n, dtype=dtype, seed=3)
    s = bidiagonal_svd(d, e, compute_uv=False)
    assert s.dtype == dtype
    assert testing.sv_error(s, bidiagonal_svd(d, e)[1]) <= BOUND * n


@pytest.mark.parametrize("compute_uv", [True, False])
@pytest.mark.parametrize("d, e", [([1.0, np.nan], [1.0]), ([1.0, 2.0], [np.inf]),
                                  (np.full(30, 1.0), np.r_[np.full(28, 1.0), -np.inf])])
def test_non_finite(d, e, compute_uv):
    """As the bidiagonal QR: gpusvd.LinAlgError, never a hang or a NaN result."""
    with pytest.raises(LinAlgError, match="NaN or infinity"):
        bidiagonal_svd(np.asarray(d), np.asarray(e), compute_uv=compute_uv)


@pytest.mark.parametrize("d, e, match", [
    (np.ones(3), np.ones(3), "length n-1"),
    (np.ones((2, 2)), np.ones(1), "1-D"),
    (np.ones(3, complex), np.ones(2), "real"),
    (np.ones(26755), np.ones(26754), "32-bit"),
])
def test_bad_input(d, e, match):
    with pytest.raises(ValueError, match=match):
        bidiagonal_svd(d, e)


LEAF_CASES = sorted(name for name in bisection_cases.CASES
                    if len(bisection_cases.CASES[name][0]) >= 2)


@pytest.mark.parametrize("sqre", [0, 1])
@pytest.mark.parametrize("name", LEAF_CASES + ["random-128", "graded-128", "clustered-128"])
def test_leaf_svd(name, sqre):
    """dlasd0 on an n×(n + sqre) upper bidiagonal scaled as the divide and conquer's
    leaves are (max |entry| in [1/2, 1), by a power of two): an SVD to 30 n·ε, its values
    within 30 n·ε·σ₁ of LAPACK's on the dense block, nonnegative; d and e untouched."""
    if name.endswith("-128"):
        d, e = testing.bidiagonal(128, kind=name[:-4], seed=21)
    else:
        d, e = bisection_cases.case(name)
    n = len(d)
    rng = np.random.default_rng(n)
    e = np.concatenate((e, rng.standard_normal(sqre)))  # column n's entry
    scale = max(np.abs(d).max(), np.abs(e).max())
    if scale > 0:
        exponent = -np.frexp(scale)[1]
        d, e = np.ldexp(d, exponent), np.ldexp(e, exponent)
    block = np.zeros((n, n + sqre))
    block[np.arange(n), np.arange(n)] = d
    block[np.arange(n - 1 + sqre), np.arange(1, n + sqre)] = e
    saved = d.copy(), e.copy()
    u, s, vt = leaf_svd(d, e, sqre)
    assert np.array_equal(d, saved[0]) and np.array_equal(e, saved[1])
    assert u.shape == (n, n) and s.shape == (n,) and vt.shape == (n + sqre, n + sqre)
    assert (s >= 0).all()
    eps = np.finfo(np.float64).eps
    sigma = np.zeros(block.shape)
    sigma[np.arange(n), np.arange(n)] = s
    norm = max(np.abs(block).max(), np.finfo(np.float64).tiny)
    assert np.abs(u @ sigma @ vt - block).max() <= BOUND * n * eps * norm
    assert np.abs(u.T @ u - np.eye(n)).max() <= BOUND * n * eps
    assert np.abs(vt @ vt.T - np.eye(n + sqre)).max() <= BOUND * n * eps
    reference = np.linalg.svd(block, compute_uv=False)
    assert np.abs(np.sort(s)[::-1] - reference).max() <= BOUND * n * eps * norm
