"""band_cuda.py's in-place cuBLAS GEMM and cuSOLVER geqrf, and kernels/wy.cu (on the GPU and
in a host build), against their NumPy twins in band.py, on the views stage 1 hands them
(column slices, transposes, row-major operands).

Bounds are in units of k·ε·‖a‖·‖b‖ (GEMM, k its inner size) and m·ε·‖panel‖ (geqrf).
"""

import numpy as np
import pytest

from gpusvd import testing
from gpusvd.condensed import band as stage1
from gpusvd.condensed import compact_wy

from . import host_wy
from ..jacobi import host_kernel


BOUND = 30
DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
OPS = ("N", "T", "C")


def _op(x, op):
    return {"N": x, "T": x.T, "C": x.conj().T}[op]


def _operand(rng, shape, op, dtype, row_major):
    """An operand whose op(·) has ``shape``, stored row- or column-major."""
    stored = shape if op == "N" else shape[::-1]
    x = testing.random_matrix(*stored, dtype=dtype, seed=int(rng.integers(1 << 30)))
    return np.ascontiguousarray(x) if row_major else np.asfortranarray(x)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op_a", OPS)
@pytest.mark.parametrize("op_b", OPS)
@pytest.mark.parametrize("subtract", [False, True])
def test_gemm_into_matches_numpy_on_a_view(dtype, op_a, op_b, subtract):
    import cupy
    from gpusvd.condensed import band_cuda

    rng = np.random.default_rng(7)
    m, n, k = 37, 23, 11
    a = _operand(rng, (m, k), op_a, dtype, row_major=op_a == "N")
    b = _operand(rng, (k, n), op_b, dtype, row_major=op_b != "N")
    big = np.asfortranarray(testing.random_matrix(m + 5, n + 4, dtype=dtype, seed=3))
    host = big.copy(order="F")
    stage1._gemm_host(host[5:, 4:], a, b, op_a=op_a, op_b=op_b, subtract=subtract)
    dev = cupy.asarray(big, order="F")
    band_cuda.gemm_into(dev[5:, 4:], cupy.asarray(a, order="K"), cupy.asarray(b, order="K"),
                        op_a=op_a, op_b=op_b, subtract=subtract)
    eps = np.finfo(dtype).eps
    scale = np.linalg.norm(a) * np.linalg.norm(b) + np.linalg.norm(big)
    assert np.abs(dev.get() - host).max() / (scale * k * eps) < BOUND
    assert np.array_equal(dev.get()[:5], big[:5]) and np.array_equal(dev.get()[:, :4], big[:, :4])


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(50, 8), (8, 8), (1, 1), (9, 1)])
def test_geqrf_into_matches_lapack_in_place(dtype, shape):
    import cupy
    from gpusvd.condensed import band_cuda

    m, n = shape
    big = np.asfortranarray(testing.random_matrix(m + 3, n + 2, dtype=dtype, seed=5))
    host = big.copy(order="F")
    tau_host = stage1._geqrf_host(host[3:, 2:])
    dev = cupy.asarray(big, order="F")
    tau = band_cuda.geqrf_into(dev[3:, 2:])
    eps = np.finfo(dtype).eps
    scale = np.linalg.norm(big[3:, 2:])
    # geqrf is the same algorithm on both (LAPACK's reflector convention): R, V and τ agree
    # to rounding, and nothing outside the view is touched.
    assert np.abs(dev.get() - host).max() / (scale * m * eps) < BOUND
    assert np.abs(tau.get() - tau_host).max() / (m * eps) < BOUND
    assert np.array_equal(dev.get()[:3], big[:3]) and np.array_equal(dev.get()[:, :2], big[:, :2])


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("order", ["C", "F"])
def test_gpu_band_of_either_order_matches_cpu(dtype, order):
    import cupy

    a = testing.random_matrix(130, 97, dtype=dtype, seed=19)
    band_cpu = stage1.band_of(stage1.reduce_to_band(np.array(a, order="F"), bandwidth=8))
    dev = cupy.asarray(a, order=order)
    red = stage1.reduce_to_band(dev, bandwidth=8)
    scale = float(np.abs(a).max()) * 130 * np.finfo(dtype).eps
    assert float(np.abs(stage1.band_of(red).get() - band_cpu).max()) / scale < BOUND
    assert red.factors is dev


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    return host_kernel.built_or_skip(host_wy.build, tmp_path_factory, "host_wy")


def _reflectors(rows, cols, dtype, seed, zero_taus=()):
    """V (unit lower) and τ of geqrf on a random panel, with the τ of ``zero_taus`` set to
    0 (H = I; its v left as junk, as a zero column's would be)."""
    h = np.asfortranarray(testing.random_matrix(rows, cols, dtype=dtype, seed=seed))
    tau = stage1._geqrf_host(h)
    tau[list(zero_taus)] = 0
    return stage1._unit_lower(h), tau, h


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (7, 3), (40, 16), (33, 33)])
def test_host_unit_lower_is_the_numpy_twin(host, shape, dtype):
    h = testing.random_matrix(*shape, dtype=dtype, seed=2)
    assert np.array_equal(host.unit_lower(h), stage1._unit_lower(h))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, zero", [((1, 1), ()), ((9, 4), ()), ((50, 16), (3, 15)),
                                         ((40, 32), (0,)), ((12, 5), (0, 1, 2, 3, 4))])
def test_host_larft_gram_is_the_numpy_twin(host, shape, zero, dtype):
    """The dlarft recurrence against compact_wy.wy_factor's triangular inverse: the same T to
    rounding (in units of k·ε·‖T‖), zero rows and columns where τ = 0, and H_0·…·H_{k−1} =
    I − V·T·Vᴴ."""
    v, tau, _ = _reflectors(*shape, dtype, seed=3, zero_taus=zero)
    t = host.wy_factor(v, tau)
    ref = compact_wy.wy_factor(v, tau)
    k = shape[1]
    eps = np.finfo(dtype).eps
    assert np.abs(t - ref).max() <= BOUND * k * eps * max(np.abs(ref).max(), 1)
    for j in zero:
        assert not t[j].any() and not t[:, j].any()
    product = np.eye(shape[0], dtype=dtype)
    for j in range(k):
        product = product @ (np.eye(shape[0], dtype=dtype)
                             - tau[j] * np.outer(v[:, j], v[:, j].conj()))
    assert np.abs(product - (np.eye(shape[0]) - v @ t @ v.conj().T)).max() < BOUND * k * eps


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, zero", [((9, 4), ()), ((50, 16), (3, 15)), ((300, 64), (7,))])
def test_gpu_wy_kernels_match_the_numpy_twins(shape, zero, dtype):
    import cupy
    from gpusvd.condensed import band_cuda

    v, tau, h = _reflectors(*shape, dtype, seed=4, zero_taus=zero)
    big = cupy.asarray(np.pad(h, ((2, 0), (1, 0))), order="F")
    assert np.array_equal(band_cuda.unit_lower(big[2:, 1:]).get(), v)
    assert np.array_equal(band_cuda.unit_lower(cupy.ascontiguousarray(big[2:, 1:])).get(), v)
    k = shape[1]
    out = cupy.full((k + 2, k + 2), np.nan, dtype)
    band_cuda.wy_factor_into(cupy.asarray(v), cupy.asarray(tau), out[:k, :k])
    ref = compact_wy.wy_factor(v, tau)
    eps = np.finfo(dtype).eps
    assert np.abs(out[:k, :k].get() - ref).max() <= BOUND * k * eps * max(np.abs(ref).max(), 1)
    assert np.isnan(out[k:].get()).all() and np.isnan(out[:, k:].get()).all()
