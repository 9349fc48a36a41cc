import math

import numpy as np
import pytest
import scipy.linalg

from gpusvd.testing import (
    lapack_type,
    orthogonality,
    random_matrix,
    relative_sv_error,
    sv_error,
    svd_residual,
    with_condition,
)

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
EPS64 = np.finfo(np.float64).eps
EPS32 = float(np.finfo(np.float32).eps)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (9, 5), (5, 9), (7, 7)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_scipy_svd_scores_small(dtype, shape, full_matrices):
    a = random_matrix(*shape, dtype=dtype, seed=0)
    u, s, vh = scipy.linalg.svd(a, full_matrices=full_matrices)
    assert s.dtype == np.finfo(dtype).dtype  # the metrics then use this ε
    assert svd_residual(a, u, s, vh) < 10
    assert orthogonality(u) < 10
    assert orthogonality(vh, rows=True) < 10
    assert orthogonality(vh.conj().T) == orthogonality(vh, rows=True)


@pytest.mark.parametrize("shape", [(8, 5), (5, 8)])
def test_full_and_economy_residuals_agree(shape):
    # only the first k = len(s) columns of U and rows of Vh take part
    a = with_condition(*shape, 1e3, seed=0)
    u, s, vh = scipy.linalg.svd(a)
    k = s.size
    full = svd_residual(a, u, s, vh)
    assert full == pytest.approx(svd_residual(a, u[:, :k].copy(), s, vh[:k].copy()), rel=1e-10)
    u[:, k:], vh[k:] = 7.0, 7.0
    assert svd_residual(a, u, s, vh) == full


def test_residual_of_a_perturbed_singular_value():
    # A = diag(3, 2, 1) with σ₁ reported as 3 + δ: the residual is δ exactly, so the
    # metric is δ / (‖A‖_F · 3 · ε) = 2⁻³⁰ / (√14 · 3 · 2⁻⁵²).
    a = np.diag([3.0, 2.0, 1.0])
    delta = 2.0 ** -30
    value = svd_residual(a, np.eye(3), np.array([3 + delta, 2, 1]), np.eye(3))
    assert value == pytest.approx(2.0 ** 22 / (3 * math.sqrt(14)), rel=1e-12)
    assert svd_residual(a, np.eye(3), np.array([3.0, 2, 1]), np.eye(3)) == 0.0


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_residual_uses_single_precision_eps(dtype):
    # the same perturbation as above, measured in float32's ε = 2⁻²³
    a = np.diag([3.0, 2.0, 1.0]).astype(dtype)
    u = np.eye(3, dtype=dtype)
    s = np.array([3 + 2.0 ** -20, 2, 1], dtype=np.float32)
    expected = 2.0 ** -20 / (math.sqrt(14) * 3 * EPS32)
    assert svd_residual(a, u, s, u) == pytest.approx(expected, rel=1e-6)
    # a float64 A with a float32 decomposition is still judged by float32's ε
    assert svd_residual(a.astype(np.complex128), u, s, u) == pytest.approx(expected, rel=1e-6)


def test_residual_of_a_wrong_vector_is_large():
    a = random_matrix(6, 4, seed=0)
    u, s, vh = scipy.linalg.svd(a, full_matrices=False)
    u[:, 0] = -u[:, 0]
    assert svd_residual(a, u, s, vh) > 1e14


def test_residual_of_zero_matrix():
    a = np.zeros((3, 2))
    u, s, vh = np.eye(3), np.zeros(2), np.eye(2)
    assert svd_residual(a, u, s, vh) == 0.0
    assert svd_residual(a, u, np.array([1e-300, 0.0]), vh) > 1e10


def test_residual_of_empty_matrices():
    for m, n in [(0, 0), (0, 3), (3, 0)]:
        a = np.zeros((m, n))
        u, s, vh = scipy.linalg.svd(a)
        assert svd_residual(a, u, s, vh) == 0.0


@pytest.mark.parametrize("kind", ["near_underflow", "near_overflow"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_residual_near_underflow_and_overflow(kind, dtype):
    # the naive ‖A‖_F is 0 or inf here; the scaled norms give the true ratio,
    # the same as for the unscaled matrix
    a = lapack_type(kind, 9, 6, dtype=dtype, seed=0)
    u, s, vh = scipy.linalg.svd(a, full_matrices=False)
    value = svd_residual(a, u, s, vh)
    assert 0 < value < 10
    b = lapack_type("evenly_spaced", 9, 6, dtype=dtype, seed=0)
    assert svd_residual(b, *scipy.linalg.svd(b, full_matrices=False)) < 10


def test_orthogonality_of_a_perturbed_identity():
    # Q = I with Q₀₀ = 1 + 2⁻⁴⁰: QᵀQ − I has the one entry (1 + 2⁻⁴⁰)² − 1, which is
    # 2⁻³⁹ after rounding, so the metric is 2⁻³⁹ / (3 · 2⁻⁵²) = 2¹³/3.
    q = np.eye(3)
    q[0, 0] += 2.0 ** -40
    assert orthogonality(q) == pytest.approx(2.0 ** 13 / 3, rel=1e-12)
    assert orthogonality(q, rows=True) == pytest.approx(2.0 ** 13 / 3, rel=1e-12)


def test_orthogonality_complex_single_precision():
    q = np.eye(4, 2, dtype=np.complex64)
    q[0, 1] = 1j * 2.0 ** -12
    # QᴴQ − I has ±i·2⁻¹² off the diagonal; 1 + 2⁻²⁴ on it rounds to 1 in float32
    expected = math.sqrt(2) * 2.0 ** -12 / (2 * EPS32)
    assert orthogonality(q) == pytest.approx(expected, rel=1e-6)


def test_orthogonality_of_tall_wide_and_empty():
    q = scipy.linalg.qr(random_matrix(10, 4, seed=0), mode="economic")[0]
    assert orthogonality(q) < 10
    assert orthogonality(q.T, rows=True) < 10
    # the rows of a tall Q are not orthonormal
    assert orthogonality(q, rows=True) > 1e14
    assert orthogonality(np.zeros((3, 0))) == 0.0
    assert orthogonality(np.zeros((0, 3)), rows=True) == 0.0


def test_relative_sv_error():
    assert relative_sv_error([3.0, 2.0], [3.0, 2.0]) == 0.0
    assert relative_sv_error([4.0, 2.0], [2.0, 1.0]) == 1.0
    assert relative_sv_error([1.0, 1e-20 * (1 + 1e-6)], [1.0, 1e-20]) == pytest.approx(1e-6)
    assert relative_sv_error(np.array([], np.float32), np.array([])) == 0.0


def test_relative_sv_error_zero_conventions():
    assert relative_sv_error([2.0, 0.0], [2.0, 0.0]) == 0.0   # 0/0 → 0
    assert relative_sv_error([2.0, 1e-300], [2.0, 0.0]) == math.inf   # x/0 → inf


def test_sv_errors_reject_length_mismatch():
    with pytest.raises(ValueError, match="shape"):
        relative_sv_error([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="shape"):
        sv_error([1.0], [1.0, 2.0])


def test_sv_error():
    # an absolute error of 1e-20 on the small σ is nothing against ‖A‖₂ = 1 ...
    assert sv_error([1.0, 2e-20], [1.0, 1e-20]) == pytest.approx(1e-20 / EPS64)
    # ... while it is a relative error of 1
    assert relative_sv_error([1.0, 2e-20], [1.0, 1e-20]) == pytest.approx(1.0)
    assert sv_error([4.0 + 2.0 ** -40, 1.0], [4.0, 1.0]) == pytest.approx(2.0 ** 10, rel=1e-12)
    s32 = np.array([1 + 2.0 ** -20, 0.5], np.float32)
    assert sv_error(s32, [1.0, 0.5]) == pytest.approx(2.0 ** 3, rel=1e-6)
    assert sv_error([0.0, 0.0], [0.0, 0.0]) == 0.0
    assert sv_error([1e-300], [0.0]) > 1e10
    assert sv_error([], []) == 0.0


def test_scipy_singular_values_score_small():
    a = with_condition(30, 20, 1e10, seed=0)
    s_ref = np.geomspace(1, 1e-10, 20)
    assert sv_error(scipy.linalg.svdvals(a), s_ref) < 10


def test_metrics_return_python_floats():
    a = random_matrix(4, 3, seed=0)
    u, s, vh = scipy.linalg.svd(a)
    for value in (svd_residual(a, u, s, vh), orthogonality(u), relative_sv_error(s, s),
                  sv_error(s, s)):
        assert type(value) is float


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_cupy_arrays(dtype):
    cupy = pytest.importorskip("cupy")
    eps = float(np.finfo(dtype).eps)
    # the hand-built cases above, exact in every precision
    a = cupy.asarray(np.diag([3.0, 2.0, 1.0]).astype(dtype))
    eye = cupy.eye(3, dtype=dtype)
    s = cupy.asarray([3 + 2.0 ** -20, 2, 1], dtype=a.real.dtype)
    expected = 2.0 ** -20 / (math.sqrt(14) * 3 * eps)
    assert svd_residual(a, eye, s, eye) == pytest.approx(expected, rel=1e-6)
    assert svd_residual(cupy.asnumpy(a), eye, s, eye) == pytest.approx(expected, rel=1e-6)
    q = eye.copy()
    q[0, 0] += 2.0 ** -20
    expected = 2.0 ** -19 / (3 * eps)
    assert orthogonality(q) == pytest.approx(expected, rel=1e-6)
    assert orthogonality(q, rows=True) == pytest.approx(expected, rel=1e-6)
    assert relative_sv_error(s, [3.0, 2.0, 0.5]) == 1.0
    assert sv_error(s, cupy.asarray([3.0, 2.0, 1.0])) == pytest.approx(2.0 ** -20 / (3 * eps),
                                                                       rel=1e-6)
    # near overflow, the scaled norms work on the GPU too
    a = lapack_type("near_overflow", 9, 6, dtype=dtype, seed=0)
    a, u, s, vh = map(cupy.asarray, (a, *scipy.linalg.svd(a, full_matrices=False)))
    assert 0 < svd_residual(a, u, s, vh) < 10
    assert orthogonality(u) < 10 and orthogonality(vh, rows=True) < 10


def test_norm_of_complex_subnormal_entries():
    """‖x‖_F of complex entries near the subnormal range: NumPy's complex division by the
    scale formed 1/scale and overflowed (an SVD residual of near_underflow complex128
    input on the H100, 2026-11-27)."""
    from gpusvd.testing.metrics import _norm

    tiny = 2.78134232e-309
    x = np.array([[1j * tiny, 1j * tiny], [2j * tiny, 0.0]])
    assert abs(_norm(np, x) - tiny * np.sqrt(6.0)) <= 1e-12 * tiny * np.sqrt(6.0)
