"""The CUDA bisection kernel (kernels/bisection.cu through bisection_cuda.py) on the GPU.

Tolerance against the Numba twin: equal bits. Both do the same IEEE operations in the
same order (the kernel's products are __dmul_rn/__fmul_rn, so nvcc fuses nothing into an
fma; division and square root round correctly under nvcc's and NVRTC's defaults), and a
value's bisection is a sequence of decisions on those numbers, so a single differing
rounding would show as a different value, not as an ulp: there is no meaningful "few
ulps" in between. The host build (test_bisection_host.py) checks the same source in CI.
Against LAPACK (dstebz on T_GK) and the 60-digit oracle: bisection.py's bound, 4·n·ε.
"""

import numpy as np
import pytest
import scipy.linalg

from gpusvd import testing
from gpusvd._core import kernels
from gpusvd._core.scaling import scale_values
from gpusvd.bidiagonal import bisection, bisection_cuda
from gpusvd.bidiagonal.bisection import bidiagonal_singular_values_bisection

from . import bisection_cases
from .bisection_cases import BOUND, CASES, CASES32

pytestmark = pytest.mark.gpu


def _both(d, e):
    import cupy

    on_gpu = bidiagonal_singular_values_bisection(cupy.asarray(d), cupy.asarray(e))
    assert isinstance(on_gpu, cupy.ndarray)
    return on_gpu.get(), bidiagonal_singular_values_bisection(d, e)


@pytest.mark.parametrize("name", CASES)
def test_float64_cases(name):
    d, e = bisection_cases.case(name)
    gpu, cpu = _both(d, e)
    np.testing.assert_array_equal(gpu, cpu)
    assert testing.relative_sv_error(gpu, bisection_cases.reference(name)) <= (
        BOUND * len(d) * np.finfo(np.float64).eps)


@pytest.mark.parametrize("name", CASES32)
def test_float32_cases(name):
    gpu, cpu = _both(*bisection_cases.case(name, np.float32))
    assert gpu.dtype == np.float32
    np.testing.assert_array_equal(gpu, cpu)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["random", "graded", "clustered"])
def test_large_against_twin_and_lapack(kind, dtype):
    n = 3000
    d, e = testing.bidiagonal(n, kind=kind, dtype=dtype, seed=60)
    gpu, cpu = _both(d, e)
    np.testing.assert_array_equal(gpu, cpu)
    off = np.empty(2 * n - 1)
    off[0::2], off[1::2] = d, e
    lapack = scipy.linalg.eigvalsh_tridiagonal(
        np.zeros(2 * n), off, select="i", select_range=(n, 2 * n - 1),
        lapack_driver="stebz", tol=np.finfo(np.float64).tiny)[::-1]
    assert testing.relative_sv_error(gpu.astype(np.float64), lapack) <= (
        BOUND * n * np.finfo(dtype).eps + 2 * BOUND * n * np.finfo(np.float64).eps)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_largest_against_twin(dtype):
    """n = 16384, the largest size tested (two levels a round by :func:`levels`)."""
    d, e = testing.bidiagonal(16384, kind="random", dtype=dtype, seed=1)
    gpu, cpu = _both(d, e)
    np.testing.assert_array_equal(gpu, cpu)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("steps_a_round", bisection_cuda.LEVELS)
@pytest.mark.parametrize("kind", ["random", "graded"])
def test_every_instantiation_against_twin(kind, steps_a_round, dtype):
    """Each shipped LEVELS on one n, whatever :func:`levels` would pick there."""
    import cupy

    n = 1500
    d, e = testing.bidiagonal(n, kind=kind, dtype=dtype, seed=61)
    t, exponent = bisection.golub_kahan_offdiagonal(cupy, cupy.asarray(d), cupy.asarray(e))
    gpu = scale_values(
        bisection_cuda.bisect(t, n, bisection.bounds(np.dtype(dtype)), steps_a_round),
        exponent, cupy).get()
    np.testing.assert_array_equal(gpu, bidiagonal_singular_values_bisection(d, e))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("steps_a_round", bisection_cuda.LEVELS)
@pytest.mark.parametrize("kind", ["table", "random", "graded", "clustered"])
def test_near_against_twin(kind, steps_a_round, dtype):
    """With ``near``, right or wrong (bisection_cases.nears), each shipped LEVELS gives
    the bits of the twin without ``near``."""
    import cupy

    if kind == "table":
        pairs = [bisection_cases.case(name, dtype)
                 for name in (CASES if dtype == np.float64 else CASES32)]
    else:
        pairs = [testing.bidiagonal(1500, kind=kind, dtype=dtype, seed=62)]
    b = bisection.bounds(np.dtype(dtype))
    for d, e in pairs:
        s = bidiagonal_singular_values_bisection(d, e)
        t, exponent = bisection.golub_kahan_offdiagonal(cupy, cupy.asarray(d),
                                                        cupy.asarray(e))
        for label, near, slack in bisection_cases.nears(s):
            scaled = cupy.asarray(np.ldexp(near, -exponent), dtype)
            gpu = scale_values(bisection_cuda.bisect(t, len(d), b, steps_a_round, near=scaled,
                                                     slack=np.ldexp(slack, -exponent)),
                               exponent, cupy).get()
            np.testing.assert_array_equal(gpu, s, err_msg=label)


def test_near_a_divide_and_conquer_s_values_on_the_gpu():
    """The solver's use: the GPU divide and conquer's values as ``near`` (condensed/
    driver.py), n = 8192 where a group of LEVELS 3 takes each value."""
    import cupy

    from gpusvd.bidiagonal.dc_svd import bidiagonal_svd_dc

    n = 8192
    d, e = testing.bidiagonal(n, kind="random", seed=63)
    _, near, _ = bidiagonal_svd_dc(d, e, xp=cupy)
    slack = 2 * n * np.finfo(np.float64).eps * max(np.abs(d).max(), np.abs(e).max())
    gpu = bidiagonal_singular_values_bisection(cupy.asarray(d), cupy.asarray(e), near=near,
                                               slack=slack).get()
    np.testing.assert_array_equal(gpu, bidiagonal_singular_values_bisection(d, e))


def test_subnormal_float32_input():
    # CuPy's float32 arithmetic flushes subnormals: the scaling must not go through it.
    d, e = bisection_cases.SUBNORMAL32
    gpu, cpu = _both(d, e)
    assert cpu[-1] > 0
    np.testing.assert_array_equal(gpu, cpu)


def test_shipped_binary_loads():
    import cupy

    bidiagonal_singular_values_bisection(cupy.ones(3), cupy.ones(2))
    relpath = "bidiagonal/kernels/bisection.cu"
    assert kernels.LOADED[relpath, cupy.cuda.Device().id] == "shipped"
