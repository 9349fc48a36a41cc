import numpy as np
import pytest
import scipy.linalg

from gpusvd.testing import (
    bidiagonal,
    complex_symmetric,
    graded,
    haar_orthogonal,
    lapack_type,
    low_rank,
    random_matrix,
    with_condition,
    with_singular_values,
)

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
SHAPES = [(0, 0), (0, 3), (3, 0), (1, 1), (1, 5), (5, 1), (7, 4), (4, 7)]


def eps(dtype):
    return np.finfo(dtype).eps


# Every generator as a function of (m, n, dtype, seed), for the common checks.
MATRIX_GENERATORS = {
    "random_matrix": lambda m, n, **kw: random_matrix(m, n, **kw),
    "with_singular_values": lambda m, n, **kw: with_singular_values(
        np.arange(min(m, n), 0, -1.0), m, n, **kw),
    "with_condition": lambda m, n, **kw: with_condition(m, n, 1e3, **kw),
    "graded": lambda m, n, **kw: graded(m, n, side="both", **kw),
    "evenly_spaced": lambda m, n, **kw: lapack_type("evenly_spaced", m, n, **kw),
    "near_underflow": lambda m, n, **kw: lapack_type("near_underflow", m, n, **kw),
    "near_overflow": lambda m, n, **kw: lapack_type("near_overflow", m, n, **kw),
    "low_rank": lambda m, n, **kw: low_rank(m, n, min(m, n) // 2, noise=1e-3, **kw),
}


@pytest.mark.parametrize("name", MATRIX_GENERATORS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_shape_dtype_finite(name, dtype, shape):
    a = MATRIX_GENERATORS[name](*shape, dtype=dtype, seed=1)
    assert type(a) is np.ndarray
    assert a.shape == shape
    assert a.dtype == dtype
    assert np.isfinite(a).all()


@pytest.mark.parametrize("name", MATRIX_GENERATORS)
def test_deterministic(name):
    gen = MATRIX_GENERATORS[name]
    a = gen(6, 5, dtype=np.complex128, seed=42)
    assert a.tobytes() == gen(6, 5, dtype=np.complex128, seed=42).tobytes()
    assert a.tobytes() != gen(6, 5, dtype=np.complex128, seed=43).tobytes()


def test_deterministic_other_generators():
    assert haar_orthogonal(5, seed=3).tobytes() == haar_orthogonal(5, seed=3).tobytes()
    assert complex_symmetric(5, seed=3).tobytes() == complex_symmetric(5, seed=3).tobytes()
    for kind in ("random", "graded", "clustered"):
        (d1, e1), (d2, e2) = bidiagonal(6, kind=kind, seed=3), bidiagonal(6, kind=kind, seed=3)
        assert d1.tobytes() == d2.tobytes() and e1.tobytes() == e2.tobytes()


def test_random_matrix_complex_parts_are_standard_normal():
    a = random_matrix(400, 400, dtype=np.complex128, seed=0)
    for part in (a.real, a.imag):
        assert abs(part.mean()) < 0.01
        assert abs(part.std() - 1) < 0.01


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 5, 30])
def test_haar_orthogonal_is_orthonormal(dtype, n):
    q = haar_orthogonal(n, dtype=dtype, seed=0)
    assert q.shape == (n, n) and q.dtype == dtype
    if n:
        loss = np.linalg.norm(q.conj().T @ q - np.eye(n)) / (n * eps(dtype))
        assert loss < 10


def test_haar_orthogonal_has_no_sign_bias():
    # Haar 2×2 rotations/reflections have Q[0, 0] = cos θ, θ uniform: mean 0, and
    # determinants ±1 equally often. Plain QR without the sign fix fails both.
    qs = np.array([haar_orthogonal(2, seed=i) for i in range(2000)])
    assert abs(qs[:, 0, 0].mean()) < 0.07
    assert abs(np.sign(np.linalg.det(qs)).mean()) < 0.1


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(8, 5), (5, 8), (6, 6)])
def test_with_singular_values_reproduces_them(dtype, shape):
    s = np.geomspace(1, 0.1, min(shape))
    computed = scipy.linalg.svdvals(with_singular_values(s, *shape, dtype=dtype, seed=0))
    assert np.max(np.abs(computed - s) / s) < 100 * eps(dtype)


def test_with_singular_values_pads_with_zeros_and_accepts_any_order():
    computed = scipy.linalg.svdvals(with_singular_values([1.0, 4.0], 6, 4, seed=0))
    np.testing.assert_allclose(computed, [4, 1, 0, 0], rtol=0, atol=100 * eps(np.float64))


@pytest.mark.parametrize("s", [[[1.0]], [1.0, -1.0], [1.0, np.nan], [3.0, 2.0, 1.0]])
def test_with_singular_values_rejects_bad_s(s):
    with pytest.raises(ValueError):
        with_singular_values(s, 4, 2)


@pytest.mark.parametrize("mode", ["geometric", "arithmetic", "cluster_small", "cluster_large"])
@pytest.mark.parametrize("shape", [(10, 6), (6, 10)])
def test_with_condition_has_the_condition_number(mode, shape):
    a = with_condition(*shape, 1e6, mode=mode, seed=0)
    s = scipy.linalg.svdvals(a)
    assert s[0] == pytest.approx(1, rel=1e-12)
    assert np.linalg.cond(a) == pytest.approx(1e6, rel=1e-8)
    near_small = np.isclose(s, 1e-6, rtol=1e-8, atol=0).sum()
    expected_small = {"cluster_small": 5, "cluster_large": 1}.get(mode, 1)
    assert near_small == expected_small


def test_with_condition_spacing():
    s = scipy.linalg.svdvals(with_condition(5, 5, 1e4, mode="geometric", seed=0))
    np.testing.assert_allclose(s, [1, 1e-1, 1e-2, 1e-3, 1e-4], rtol=1e-10)
    s = scipy.linalg.svdvals(with_condition(5, 5, 4.0, mode="arithmetic", seed=0))
    np.testing.assert_allclose(s, [1, 0.8125, 0.625, 0.4375, 0.25], rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_with_condition_single_precision(dtype):
    a = with_condition(20, 12, 1e3, dtype=dtype, seed=0)
    assert np.linalg.cond(a.astype(np.complex128)) == pytest.approx(1e3, rel=1e-3)


def test_with_condition_one_singular_value_is_one():
    np.testing.assert_allclose(scipy.linalg.svdvals(with_condition(1, 5, 1e6, seed=0)), [1])


def test_with_condition_rejects_bad_arguments():
    with pytest.raises(ValueError, match="mode"):
        with_condition(3, 3, 10, mode="logarithmic")
    with pytest.raises(ValueError, match="cond"):
        with_condition(3, 3, 0.5)


def _log_span(norms):
    return np.log10(norms.max() / norms.min())


@pytest.mark.parametrize("dtype", DTYPES)
def test_graded_spans_the_grading(dtype):
    left = graded(40, 10, side="left", grading=1e-10, dtype=dtype, seed=0)
    right = graded(10, 40, side="right", grading=1e-10, dtype=dtype, seed=0)
    both = graded(40, 30, side="both", grading=1e-8, dtype=dtype, seed=0)
    assert abs(_log_span(np.linalg.norm(left, axis=1)) - 10) < 1
    assert abs(_log_span(np.linalg.norm(right, axis=0)) - 10) < 1
    assert abs(_log_span(np.linalg.norm(both, axis=1)) - 8) < 1
    assert abs(_log_span(np.linalg.norm(both, axis=0)) - 8) < 1
    # the scaling order is permuted, not monotone
    norms = np.linalg.norm(left, axis=1)
    assert not (np.all(np.diff(norms) < 0) or np.all(np.diff(norms) > 0))


def test_graded_rejects_bad_arguments():
    with pytest.raises(ValueError, match="side"):
        graded(3, 3, side="top")
    with pytest.raises(ValueError, match="grading"):
        graded(3, 3, grading=0.0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (4, 6), (6, 4)])
def test_lapack_zero_and_identity(dtype, shape):
    zero = lapack_type("zero", *shape, dtype=dtype)
    identity = lapack_type("identity", *shape, dtype=dtype)
    assert zero.dtype == identity.dtype == dtype
    assert zero.shape == identity.shape == shape
    assert not zero.any()
    np.testing.assert_array_equal(identity, np.eye(*shape))


@pytest.mark.parametrize("dtype", DTYPES)
def test_lapack_evenly_spaced(dtype):
    s = scipy.linalg.svdvals(lapack_type("evenly_spaced", 9, 6, dtype=dtype, seed=0))
    np.testing.assert_allclose(s, np.linspace(1, eps(dtype), 6), rtol=0, atol=100 * eps(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_lapack_near_underflow_and_overflow(dtype):
    info = np.finfo(dtype)
    small = lapack_type("near_underflow", 9, 6, dtype=dtype, seed=0)
    large = lapack_type("near_overflow", 9, 6, dtype=dtype, seed=0)
    base = lapack_type("evenly_spaced", 9, 6, dtype=dtype, seed=0)
    for a, scale in ((small, info.tiny / info.eps), (large, info.eps / info.tiny)):
        assert np.isfinite(a).all() and np.count_nonzero(a) == a.size
        # the same U, V and σ as "evenly_spaced", times the scale
        np.testing.assert_allclose(a / scale, base, rtol=0, atol=10 * eps(dtype))
    if info.dtype == np.float64:
        assert np.abs(small).max() < 1e-280
        assert np.abs(large).max() > 1e290
    # ‖A‖_F underflows or overflows when summed naively, so solvers must scale
    with np.errstate(over="ignore", under="ignore"):
        assert np.sum(np.abs(small) ** 2) == 0
        assert np.sum(np.abs(large) ** 2) == np.inf


def test_lapack_type_rejects_unknown_kind():
    with pytest.raises(ValueError, match="kind"):
        lapack_type("jordan", 3, 3)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rank", [0, 1, 3])
def test_low_rank_has_the_rank(dtype, rank):
    a = low_rank(30, 20, rank, dtype=dtype, seed=0)
    assert np.linalg.matrix_rank(a) == rank


def test_low_rank_noise_has_the_relative_size():
    clean = low_rank(30, 20, 4, seed=5)
    noisy = low_rank(30, 20, 4, noise=1e-3, seed=5)
    assert np.linalg.norm(noisy - clean) / np.linalg.norm(clean) == pytest.approx(1e-3, rel=1e-10)
    s = scipy.linalg.svdvals(noisy)
    assert s[4] / s[3] < 1e-2  # the gap after the rank survives the noise


def test_low_rank_rejects_bad_arguments():
    with pytest.raises(ValueError, match="rank"):
        low_rank(5, 3, 4)
    with pytest.raises(ValueError, match="noise"):
        low_rank(5, 3, 2, noise=-1.0)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128, np.float64])
@pytest.mark.parametrize("n", [0, 1, 6])
def test_complex_symmetric(dtype, n):
    a = complex_symmetric(n, dtype=dtype, seed=0)
    assert a.shape == (n, n) and a.dtype == dtype
    np.testing.assert_array_equal(a, a.T)
    if n > 1 and a.dtype.kind == "c":
        assert not np.allclose(a, a.conj().T)


def test_complex_symmetric_default_dtype():
    assert complex_symmetric(3, seed=0).dtype == np.complex128


@pytest.mark.parametrize("kind", ["random", "graded", "clustered"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [0, 1, 2, 10])
def test_bidiagonal_shapes(kind, dtype, n):
    d, e = bidiagonal(n, kind=kind, dtype=dtype, seed=0)
    assert d.shape == (n,) and e.shape == (max(n - 1, 0),)
    assert d.dtype == e.dtype == dtype
    assert np.isfinite(d).all() and np.isfinite(e).all()


@pytest.mark.parametrize("dtype, orders", [(np.float64, 20), (np.float32, 10)])
def test_bidiagonal_graded_decays_geometrically(dtype, orders):
    d, e = bidiagonal(12, kind="graded", dtype=dtype, seed=0)
    entries = np.empty(23)
    entries[0::2], entries[1::2] = np.abs(d), np.abs(e)
    expected = np.linspace(0, -orders, 23)
    log = np.log10(entries)
    assert np.all((log >= expected - 1e-6) & (log < expected + np.log10(2) + 1e-6))


def test_bidiagonal_clustered_singular_values_near_one():
    d, e = bidiagonal(50, kind="clustered", seed=0)
    s = scipy.linalg.svdvals(np.diag(d) + np.diag(e, 1))
    width = np.sqrt(eps(np.float64))
    assert np.all(np.abs(s - 1) <= 2 * width)
    assert np.ptp(s) > width / 10  # clustered, not all equal


def test_bidiagonal_rejects_complex_and_unknown_kind():
    with pytest.raises(ValueError, match="dtype"):
        bidiagonal(3, dtype=np.complex128)
    with pytest.raises(ValueError, match="kind"):
        bidiagonal(3, kind="wilkinson")


@pytest.mark.parametrize("dtype", [np.int64, np.float16, np.bool_])
def test_rejects_unsupported_dtypes(dtype):
    with pytest.raises(ValueError, match="dtype"):
        random_matrix(2, 2, dtype=dtype)
