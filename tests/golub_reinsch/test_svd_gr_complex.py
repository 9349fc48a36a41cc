"""gpusvd.svd(method="gr") with complex input, on the CPU and on the GPU.

The complex Householder bidiagonalization (LAPACK zgebrd; on the GPU the panel kernel's
complex instantiation) leaves a real bidiagonal, so the QR, dqds and rotations are the
real ones and only the back-transformation is complex. Invariants in units of n·ε: ‖A − U·S·Vh‖/(‖A‖·max(m, n)·ε), orthogonality of
U and Vh, and the singular values against LAPACK's within 20·n·s_max·ε. The tests run
again through ``reduction="two-stage"``, values only and with vectors (the
``check`` parameter).
"""

import functools

import numpy as np
import pytest

import gpusvd
from gpusvd import testing

BOUND = 20
DTYPES = (np.complex64, np.complex128)
# (1, n) and (n, 1), square, tall below and above the QR-first ratio 1.6, wide (through
# the conjugate transpose), and a block size's worth of panels.
SHAPES = [(1, 1), (1, 7), (7, 1), (2, 2), (5, 5), (40, 40), (40, 30), (100, 20),
          (30, 40), (20, 100), (130, 97)]


def _svd(a, **kw):
    return gpusvd.svd(a, method="gr", device="cpu", **kw)


def _check_values(a, s):
    k = min(a.shape)
    assert s.dtype == np.finfo(a.dtype).dtype and s.shape == (k,)
    assert np.all(s[:-1] >= s[1:]) and np.all(s >= 0)
    s_ref = np.linalg.svd(a.astype(np.complex128), compute_uv=False)
    assert testing.sv_error(s, s_ref) < BOUND * max(k, 1)


def _check(a, full_matrices=False, svd=_svd):
    m, n = a.shape
    k = min(m, n)
    u, s, vh = svd(a, full_matrices=full_matrices)
    assert u.dtype == a.dtype and vh.dtype == a.dtype
    assert u.shape == ((m, m) if full_matrices else (m, k))
    assert vh.shape == ((n, n) if full_matrices else (k, n))
    assert testing.svd_residual(a, u, s, vh) < BOUND
    assert testing.orthogonality(u) < BOUND
    assert testing.orthogonality(vh, rows=True) < BOUND
    _check_values(a, s)
    return u, s, vh


def _values_two_stage(a):
    return gpusvd.svdvals(a, method="gr", reduction="two-stage", device="cpu")


def _check_two_stage(a, values=_values_two_stage):
    """Values only through the two-stage reduction, held to _check's value properties."""
    s = values(a)
    _check_values(a, s)
    return None, s, None


# The checks each value test runs: the full SVD, and values only through the two-stage
# reduction (GPU_CHECKS: the same on the GPU).
CHECKS = {"svd": _check, "values-two-stage": _check_two_stage,
          "svd-two-stage": functools.partial(_check, svd=functools.partial(
              _svd, reduction="two-stage"))}
# test_random's checks: full_matrices applies to the full SVDs only.
RANDOM_CHECKS = pytest.mark.parametrize("check, kw", [
    ("svd", {}), ("svd", {"full_matrices": True}), ("values-two-stage", {}),
    ("svd-two-stage", {}), ("svd-two-stage", {"full_matrices": True})],
    ids=["svd", "svd-full", "values-two-stage", "svd-two-stage", "svd-two-stage-full"])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@RANDOM_CHECKS
def test_random(shape, dtype, check, kw):
    CHECKS[check](testing.random_matrix(*shape, dtype=dtype, seed=1), **kw)


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(50, 40), (40, 50), (90, 30)])
def test_rank_deficient(shape, dtype, check):
    _, s, _ = CHECKS[check](testing.low_rank(*shape, 7, dtype=dtype, seed=5))
    assert s[7] <= 100 * np.finfo(dtype).eps * s[0]


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("side", ["left", "right", "both"])
@pytest.mark.parametrize("shape", [(45, 33), (33, 45)])
def test_graded(side, shape, dtype, check):
    CHECKS[check](testing.graded(*shape, side=side, dtype=dtype, seed=3))


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["zero", "identity", "near_underflow", "near_overflow"])
def test_lapack_types(kind, dtype, check):
    _, s, _ = CHECKS[check](testing.lapack_type(kind, 25, 21, dtype=dtype, seed=4))
    if kind == "zero":
        assert not s.any()
    if kind == "identity":
        assert np.all(s == 1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_real_valued_complex_matches_real(dtype):
    """With zero imaginary parts zlarfg is dlarfg: the values are the real input's."""
    a = testing.random_matrix(60, 45, dtype=np.finfo(dtype).dtype, seed=6)
    s_real = _svd(a, compute_uv=False)
    s = _check(a.astype(dtype))[1]
    assert testing.sv_error(s, s_real) < BOUND


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(0, 0), (0, 4), (4, 0)])
def test_empty(shape, dtype):
    a = np.zeros(shape, dtype)
    u, s, vh = _svd(a, full_matrices=False)
    assert s.shape == (0,) and s.dtype == np.finfo(dtype).dtype
    assert u.shape == (shape[0], 0) and vh.shape == (0, shape[1])
    u, s, vh = _svd(a, full_matrices=True)
    assert u.dtype == vh.dtype == dtype
    assert np.array_equal(u, np.eye(shape[0])) and np.array_equal(vh, np.eye(shape[1]))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(60, 45), (45, 60), (120, 30)])
def test_values_only_equals_full(shape, dtype):
    a = testing.random_matrix(*shape, dtype=dtype, seed=7)
    s_only = gpusvd.svdvals(a, method="gr", device="cpu")
    _, s, _ = _svd(a)
    # Values only take dqds: equal to rounding.
    assert testing.relative_sv_error(s_only, s) < 10 * min(shape) * np.finfo(dtype).eps
    assert np.array_equal(_svd(a, compute_uv=False), s_only)


@pytest.mark.parametrize("overwrite_a", [False, True])
@pytest.mark.parametrize("shape", [(30, 20), (20, 30)])
def test_input_and_overwrite_a(shape, overwrite_a):
    a = testing.random_matrix(*shape, dtype=np.complex128, seed=8)
    x = a.copy()
    u, s, vh = _svd(x, full_matrices=False, overwrite_a=overwrite_a)
    assert testing.svd_residual(a, u, s, vh) < BOUND
    if not overwrite_a:
        assert np.array_equal(x, a)


def test_stacked():
    a = testing.random_matrix(3 * 2 * 14, 9, dtype=np.complex64, seed=9).reshape(3, 2, 14, 9)
    u, s, vh = _svd(a, full_matrices=False)
    assert u.shape == (3, 2, 14, 9) and s.shape == (3, 2, 9) and vh.shape == (3, 2, 9, 9)
    for idx in np.ndindex(3, 2):
        assert testing.svd_residual(a[idx], u[idx], s[idx], vh[idx]) < BOUND


def _svd_gpu(a, **kw):
    """The GPU path, CuPy in and out; NumPy results for the checks."""
    import cupy

    out = gpusvd.svd(cupy.asarray(a), method="gr", **kw)
    assert all(isinstance(x, cupy.ndarray) for x in out)
    return tuple(x.get() for x in out)


def _values_two_stage_gpu(a):
    """Two-stage values on the GPU (bisection there), CuPy in and out."""
    import cupy

    s = gpusvd.svdvals(cupy.asarray(a), method="gr", reduction="two-stage")
    assert isinstance(s, cupy.ndarray)
    return s.get()


GPU_CHECKS = {"svd": functools.partial(_check, svd=_svd_gpu),
              "values-two-stage": functools.partial(_check_two_stage,
                                                    values=_values_two_stage_gpu),
              "svd-two-stage": functools.partial(_check, svd=functools.partial(
                  _svd_gpu, reduction="two-stage"))}


# The shapes above, and sizes past one panel (bidiag_block_size on the GPU) so that the
# panel kernel and the trailing GEMMs run, below and above the QR-first ratio.
GPU_SHAPES = SHAPES + [(300, 300), (600, 257), (257, 600), (700, 300)]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", GPU_SHAPES)
@RANDOM_CHECKS
def test_gpu_random(shape, dtype, check, kw):
    GPU_CHECKS[check](testing.random_matrix(*shape, dtype=dtype, seed=1), **kw)


@pytest.mark.gpu
@pytest.mark.parametrize("check", GPU_CHECKS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["graded", "low_rank", "near_underflow", "near_overflow"])
def test_gpu_hard_matrices(kind, dtype, check):
    if kind == "graded":
        a = testing.graded(300, 240, side="both", dtype=dtype, seed=3)
    elif kind == "low_rank":
        a = testing.low_rank(300, 240, 9, dtype=dtype, seed=5)
    else:
        a = testing.lapack_type(kind, 300, 240, dtype=dtype, seed=4)
    GPU_CHECKS[check](a)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_values_and_cpu_agree(dtype):
    """Values only (dqds) on the GPU equal the full run's to rounding, and the CPU's."""
    import cupy

    a = testing.random_matrix(400, 300, dtype=dtype, seed=7)
    s_gpu = gpusvd.svdvals(cupy.asarray(a), method="gr", reduction="one-stage").get()
    _, s_full, _ = _svd_gpu(a)
    s_cpu = gpusvd.svdvals(a, method="gr", device="cpu")
    tol = 10 * 300 * np.finfo(dtype).eps
    assert testing.relative_sv_error(s_gpu, s_full) < tol
    assert testing.sv_error(s_gpu, s_cpu) < 20 * 300
