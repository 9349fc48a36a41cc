"""The bidiagonal QR (Demmel & Kahan): scalar helpers, relative accuracy, the rotation log."""

import mpmath
import numpy as np
import pytest
import scipy.linalg

from gpusvd._core import tunables
from gpusvd._core.errors import LinAlgError
from gpusvd.bidiagonal.qr import BidiagonalQR, bidiagonal_svd
from gpusvd.bidiagonal.two_by_two import plane_rotation, singular_values_2x2, svd_2x2
from gpusvd.bidiagonal.rotations import apply_rotations
from .naive import apply_rotations_naive, bidiagonal_matrix

EPS = np.finfo(np.float64).eps
EPS32 = float(np.finfo(np.float32).eps)
TINY, HUGE = 1e-300, 1e300


# --- scalar helpers -----------------------------------------------------------------

@pytest.mark.parametrize("f, g, expected", [
    (0.0, 0.0, (1.0, 0.0, 0.0)),
    (2.0, 0.0, (1.0, 0.0, 2.0)),
    (-2.0, 0.0, (1.0, 0.0, -2.0)),
    (0.0, 3.0, (0.0, 1.0, 3.0)),
    (0.0, -3.0, (0.0, -1.0, 3.0)),
    (3.0, 4.0, (0.6, 0.8, 5.0)),
    (-3.0, 4.0, (0.6, -0.8, -5.0)),
    (3.0, -4.0, (0.6, -0.8, 5.0)),
    (-3.0, -4.0, (0.6, 0.8, -5.0)),
    (3e300, 4e300, (0.6, 0.8, 5e300)),
    (3e-300, -4e-300, (0.6, -0.8, 5e-300)),
    (1e300, 1e-300, (1.0, 0.0, 1e300)),  # s = 1e-600 underflows
    (1e-300, 1e300, (0.0, 1.0, 1e300)),
    (5e-324, 1.0, (5e-324, 1.0, 1.0)),
    (1e200, 1e200, (2 ** -0.5, 2 ** -0.5, 2 ** 0.5 * 1e200)),
])
def test_plane_rotation_table(f, g, expected):
    c, s, r = plane_rotation(f, g)
    np.testing.assert_allclose((c, s, r), expected, rtol=4 * EPS, atol=0)
    assert c >= 0.0
    scale = max(abs(f), abs(g))
    # The defining equations, scaled so that they cannot overflow.
    if scale:
        assert abs(c * (f / scale) + s * (g / scale) - r / scale) <= 4 * EPS
        assert abs(-s * (f / scale) + c * (g / scale)) <= 4 * EPS
    assert abs(c * c + s * s - 1.0) <= 4 * EPS


def _sv_2x2_reference(f, g, h):
    """(smin, smax) of [[f, g], [0, h]] in 50-digit arithmetic by the closed form."""
    with mpmath.workdps(50):
        f, g, h = mpmath.mpf(f), mpmath.mpf(g), mpmath.mpf(h)
        smax = (mpmath.sqrt((f + h) ** 2 + g ** 2) + mpmath.sqrt((f - h) ** 2 + g ** 2)) / 2
        smin = abs(f * h) / smax if smax else mpmath.mpf(0)
        return float(smin), float(smax)


TRIANGLES = [
    (1.0, 0.0, 1.0), (0.0, 0.0, 0.0), (0.0, 1.0, 0.0), (3.0, 0.0, -2.0), (1.0, 2.0, 3.0),
    (-1.0, 2.0, 3.0), (1.0, -2.0, -3.0), (0.0, 5.0, 2.0), (2.0, 5.0, 0.0), (0.0, 0.0, 7.0),
    (1.0, 1e20, 1.0), (1e20, 1.0, 1.0), (1.0, 1.0, 1e20), (1e-20, 1.0, 1e-20),
    (1.0, 1e-20, 1.0), (1.0, 1.0, 1.0 + 1e-15), (HUGE, HUGE, HUGE), (TINY, TINY, -TINY),
    (HUGE, 1.0, TINY), (TINY, HUGE, 1.0), (1e150, 1e-150, -1e150), (2.0, 3.0, -2.0),
]


@pytest.mark.parametrize("f, g, h", TRIANGLES)
def test_singular_values_2x2_table(f, g, h):
    smin, smax = singular_values_2x2(f, g, h)
    ref_min, ref_max = _sv_2x2_reference(f, g, h)
    np.testing.assert_allclose(smax, ref_max, rtol=4 * EPS, atol=0)
    np.testing.assert_allclose(smin, ref_min, rtol=8 * EPS, atol=0)
    if max(abs(f), abs(g), abs(h)) < 1e100:  # numpy's dense SVD agrees normwise
        np.testing.assert_allclose(np.linalg.svd([[f, g], [0.0, h]], compute_uv=False),
                                   (smax, smin), rtol=0, atol=4 * EPS * smax)


@pytest.mark.parametrize("f, g, h", TRIANGLES)
def test_svd_2x2_table(f, g, h):
    smin, smax, sin_r, cos_r, sin_l, cos_l = svd_2x2(f, g, h)
    ref_min, ref_max = _sv_2x2_reference(f, g, h)
    np.testing.assert_allclose(abs(smax), ref_max, rtol=4 * EPS, atol=0)
    np.testing.assert_allclose(abs(smin), ref_min, rtol=8 * EPS, atol=0)
    assert abs(cos_l ** 2 + sin_l ** 2 - 1.0) <= 4 * EPS
    assert abs(cos_r ** 2 + sin_r ** 2 - 1.0) <= 4 * EPS
    # [[cl, sl], [-sl, cl]] · B · [[cr, -sr], [sr, cr]] = diag(smax, smin), entrywise to
    # a few ulps of |smax|; scaled first so that nothing overflows.
    scale = max(abs(f), abs(g), abs(h)) or 1.0
    b = np.array([[f, g], [0.0, h]]) / scale
    left = np.array([[cos_l, sin_l], [-sin_l, cos_l]])
    right = np.array([[cos_r, -sin_r], [sin_r, cos_r]])
    np.testing.assert_allclose(left @ b @ right, np.diag([smax, smin]) / scale, rtol=0,
                               atol=8 * EPS * abs(smax) / scale)


# --- helpers ------------------------------------------------------------------------

def _log(d, e, eps=EPS, sweep_capacity=10_000, compute_rotations=True):
    """Run to the end with buffers of the given size; the whole log and the QR object."""
    n = len(d)
    qr = BidiagonalQR(d, e, eps=eps, compute_rotations=compute_rotations)
    sweeps = np.empty((sweep_capacity, 3), np.int64)
    cs_left = np.empty((sweep_capacity * max(n - 1, 1), 2))
    cs_right = np.empty_like(cs_left)
    chunks = []
    while not qr.done:
        k, r = qr.run(sweeps, cs_left, cs_right)
        chunks.append((sweeps[:k].copy(), cs_left[:r].copy(), cs_right[:r].copy()))
    return qr, chunks


def _vectors(qr, chunks, apply):
    """X, Y of the log (one chunk at a time), then sign-flipped and ordered."""
    n = len(qr.singular_values()[0])
    x, y = np.eye(n), np.eye(n)
    for sweeps, cs_left, cs_right in chunks:
        apply(x, sweeps, cs_left)
        apply(y, sweeps, cs_right)
    s, perm, flip = qr.singular_values()
    y[:, flip] *= -1.0
    return s, x[:, perm], y[:, perm]


def _check_decomposition(d, e, s, x, y, tol_factor=30):
    b = bidiagonal_matrix(d, e)
    n = len(d)
    bound = tol_factor * max(n, 1) * EPS
    assert np.all(np.diff(s) <= 0) and np.all(s >= 0)
    assert np.abs(x.T @ b @ y - np.diag(s)).max() <= bound * max(np.abs(b).max(), np.finfo(float).tiny)
    assert np.abs(x.T @ x - np.eye(n)).max() <= bound
    assert np.abs(y.T @ y - np.eye(n)).max() <= bound


def _mp_singular_values(d, e, dps=60):
    with mpmath.workdps(dps):
        values = mpmath.svd_r(mpmath.matrix(bidiagonal_matrix(d, e)), compute_uv=False)
        return np.array(sorted((float(v) for v in values), reverse=True))


def _graded(rng, n, orders, increasing=False):
    scale = 10.0 ** (-orders * np.arange(n) / (n - 1))
    d = rng.uniform(0.5, 2.0, n) * scale * rng.choice([-1, 1], n)
    e = rng.uniform(0.5, 2.0, n - 1) * scale[1:] * 3.0
    return (d[::-1].copy(), e[::-1].copy()) if increasing else (d, e)


# --- singular values ----------------------------------------------------------------

@pytest.mark.parametrize("n", [2, 3, 10, 50, 200])
def test_random_against_scipy(n):
    rng = np.random.default_rng(n)
    d, e = rng.standard_normal(n), rng.standard_normal(n - 1)
    s, _, _ = bidiagonal_svd(d, e, compute_rotations=False)
    ref = scipy.linalg.svdvals(bidiagonal_matrix(d, e))  # dqds on a bidiagonal: relative
    assert np.all(np.abs(s - ref) <= 10 * n * EPS * ref)


@pytest.mark.parametrize("increasing", [False, True])
@pytest.mark.parametrize("n, orders", [(12, 24), (20, 25), (25, 40)])
def test_graded_relative_accuracy_against_mpmath(n, orders, increasing):
    """Demmel & Kahan's point: tiny singular values to full relative accuracy."""
    d, e = _graded(np.random.default_rng(n + orders), n, orders, increasing)
    ref = _mp_singular_values(d, e, dps=40 + orders)
    assert ref[-1] / ref[0] < 1e-20
    s, x, y = bidiagonal_svd(d, e)
    assert np.all(np.abs(s - ref) <= 30 * n * EPS * ref)
    _check_decomposition(d, e, s, x, y)


def test_zeros_in_d():
    rng = np.random.default_rng(7)
    for zeros in ([0], [9], [0, 4, 5, 9], [2, 3, 6]):
        d, e = rng.standard_normal(10), rng.standard_normal(9)
        d[zeros] = 0.0
        ref = _mp_singular_values(d, e)
        s, x, y = bidiagonal_svd(d, e)
        is_zero = ref <= 1e-30
        assert np.all(np.abs(s - ref)[~is_zero] <= 30 * 10 * EPS * ref[~is_zero])
        assert np.all(s[is_zero] <= 10 * EPS * np.abs(bidiagonal_matrix(d, e)).max())
        _check_decomposition(d, e, s, x, y)


def test_zeros_in_e_split():
    rng = np.random.default_rng(8)
    d, e = rng.standard_normal(12), rng.standard_normal(11)
    e[[0, 5, 6, 10]] = 0.0
    s, x, y = bidiagonal_svd(d, e)
    ref = _mp_singular_values(d, e)
    assert np.all(np.abs(s - ref) <= 30 * 12 * EPS * ref)
    _check_decomposition(d, e, s, x, y)


def test_diagonal_input_needs_no_sweeps():
    d = np.array([3.0, -1.0, 0.0, 7.0, -7.0])
    qr, chunks = _log(d, np.zeros(4))
    assert sum(len(c[0]) for c in chunks) == 0
    s, perm, flip = qr.singular_values()
    np.testing.assert_array_equal(s, [7.0, 7.0, 3.0, 1.0, 0.0])
    np.testing.assert_array_equal(perm, [3, 4, 0, 1, 2])
    np.testing.assert_array_equal(flip, [False, True, False, False, True])
    _check_decomposition(d, np.zeros(4), *_vectors(qr, chunks, apply_rotations))


def test_repeated_singular_values():
    block_d, block_e = np.array([1.0, 2.0, 0.5]), np.array([0.7, -0.3])
    d = np.tile(block_d, 4)
    e = np.concatenate([np.append(block_e, 0.0)] * 4)[:-1]
    s, x, y = bidiagonal_svd(d, e)
    ref = _mp_singular_values(block_d, block_e)
    np.testing.assert_allclose(s, np.repeat(ref, 4), rtol=30 * 12 * EPS, atol=0)
    _check_decomposition(d, e, s, x, y)
    s1, _, _ = bidiagonal_svd(np.ones(30), np.ones(29))  # 2·cos(kπ/61), k = 1..30
    np.testing.assert_allclose(s1, 2 * np.cos(np.arange(1, 31) * np.pi / 61),
                               rtol=30 * 30 * EPS, atol=0)


@pytest.mark.parametrize("scale", [HUGE, TINY])
def test_near_overflow_and_underflow(scale):
    rng = np.random.default_rng(9)
    d, e = rng.uniform(1.0, 2.0, 15), rng.uniform(-1.0, 1.0, 14)
    s, x, y = bidiagonal_svd(d, e)
    s_scaled, x_scaled, y_scaled = bidiagonal_svd(d * scale, e * scale)
    assert np.all(np.isfinite(s_scaled)) and np.all(np.isfinite(x_scaled))
    np.testing.assert_allclose(s_scaled / scale, s, rtol=30 * 15 * EPS, atol=0)
    _check_decomposition(d * scale, e * scale, s_scaled, x_scaled, y_scaled)


def test_float32_mode():
    """eps of float32: float32-accurate values, no more sweeps than float64 needs."""
    for seed, n in [(10, 40), (11, 100)]:
        rng = np.random.default_rng(seed)
        d, e = rng.standard_normal(n), rng.standard_normal(n - 1)
        qr32, log32 = _log(d, e, eps=EPS32)
        qr64, log64 = _log(d, e)
        s32, s64 = qr32.singular_values()[0], qr64.singular_values()[0]
        assert np.all(np.abs(s32 - s64) <= 30 * n * EPS32 * s64)
        assert sum(len(c[0]) for c in log32) <= sum(len(c[0]) for c in log64)
        s, x, y = _vectors(qr32, log32, apply_rotations)
        b = bidiagonal_matrix(d, e)
        assert np.abs(x.T @ b @ y - np.diag(s)).max() <= 30 * n * EPS32 * np.abs(b).max()


# --- small n and bad input ----------------------------------------------------------

def test_n_0_1_2():
    s, x, y = bidiagonal_svd(np.zeros(0), np.zeros(0))
    assert s.shape == (0,) and x.shape == (0, 0) and y.shape == (0, 0)
    s, x, y = bidiagonal_svd([-3.0], [])
    np.testing.assert_array_equal(s, [3.0])
    np.testing.assert_array_equal(x.T @ [[-3.0]] @ y, [[3.0]])
    for d, e in [([3.0, 1.0], [4.0]), ([0.0, 0.0], [2.0]), ([-1.0, 1e-300], [1e300]),
                 ([2.0, 0.0], [0.0])]:
        s, x, y = bidiagonal_svd(d, e)
        np.testing.assert_allclose(s, _sv_2x2_reference(d[0], e[0], d[1])[::-1],
                                   rtol=4 * EPS, atol=0)
        _check_decomposition(np.array(d), np.array(e), s, x, y)


def test_iteration_limit_raises():
    rng = np.random.default_rng(12)
    with tunables.override(bidiagonal_qr_max_iteration_factor=0), pytest.raises(
            LinAlgError, match=r"did not converge.* of 20 singular values converged"):
        bidiagonal_svd(rng.standard_normal(20), rng.standard_normal(19))


@pytest.mark.parametrize("d, e", [([1.0, 2.0], [1.0, 2.0]), ([1.0, np.nan], [1.0]),
                                  ([1.0, 2.0], [np.inf])])
def test_bad_input(d, e):
    with pytest.raises(ValueError):
        BidiagonalQR(d, e, eps=EPS)


def test_small_buffers_and_early_values_raise():
    qr = BidiagonalQR(np.ones(5), np.ones(4), eps=EPS)
    with pytest.raises(RuntimeError):
        qr.singular_values()
    with pytest.raises(ValueError, match="n-1 = 4"):
        qr.run(np.empty((5, 3), np.int64), np.empty((3, 2)), np.empty((3, 2)))
    with pytest.raises(ValueError):
        qr.run(np.empty((5, 3), np.int32), np.empty((9, 2)), np.empty((9, 2)))


# --- the rotation log ---------------------------------------------------------------

@pytest.mark.parametrize("n", [5, 40, 120])
@pytest.mark.parametrize("direction", [1, -1])
def test_numba_and_naive_vectors_agree(n, direction):
    rng = np.random.default_rng(100 + n)
    # Chasing goes from the larger end of a block: growing |d| makes it go up (-1).
    grading = np.linspace(1.0, 20.0, n)[::-direction]
    d, e = rng.standard_normal(n) * grading, rng.standard_normal(n - 1)
    qr, chunks = _log(d, e, sweep_capacity=3)
    assert len(chunks) > 1
    assert direction in np.concatenate([c[0][:, 2] for c in chunks])
    s, x, y = _vectors(qr, chunks, apply_rotations)
    s_naive, x_naive, y_naive = _vectors(qr, chunks, apply_rotations_naive)
    np.testing.assert_allclose(x, x_naive, rtol=0, atol=1e-14)
    np.testing.assert_allclose(y, y_naive, rtol=0, atol=1e-14)
    _check_decomposition(d, e, s, x, y)
    _check_decomposition(d, e, s_naive, x_naive, y_naive)


def test_chunking_does_not_change_bits():
    rng = np.random.default_rng(13)
    d, e = rng.standard_normal(60), rng.standard_normal(59)
    d[[10, 30]] = 0.0  # zero shifts too
    qr_big, big = _log(d, e)
    qr_small, small = _log(d, e, sweep_capacity=1)
    assert len(big) == 1 and len(small) > 50
    for part in range(3):
        np.testing.assert_array_equal(np.concatenate([c[part] for c in small]), big[0][part])
    for a, b in zip(qr_small.singular_values(), qr_big.singular_values()):
        np.testing.assert_array_equal(a, b)


def test_deterministic_and_values_only_same_bits():
    rng = np.random.default_rng(14)
    d, e = rng.standard_normal(80), rng.standard_normal(79)
    first, second = bidiagonal_svd(d, e), bidiagonal_svd(d, e)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    values_only, _, _ = bidiagonal_svd(d, e, compute_rotations=False)
    np.testing.assert_array_equal(values_only, first[0])


def test_input_not_modified_and_any_float_dtype():
    d32 = np.array([1.0, 2.0, 3.0], np.float32)
    e32 = np.array([0.5, 0.25], np.float32)
    s, _, _ = bidiagonal_svd(d32, e32, eps=EPS32)
    np.testing.assert_array_equal(d32, [1.0, 2.0, 3.0])
    assert s.dtype == np.float64
    ref = scipy.linalg.svdvals(bidiagonal_matrix(d32, e32))
    np.testing.assert_allclose(s, ref, rtol=30 * 3 * EPS32, atol=0)
