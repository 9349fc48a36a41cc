"""band_cuda.py's in-place cuBLAS GEMM and cuSOLVER geqrf against their NumPy twins in
band.py, on the views stage 1 hands them (column slices, transposes, row-major operands).

Bounds are in units of k·ε·‖a‖·‖b‖ (GEMM, k its inner size) and m·ε·‖panel‖ (geqrf).
"""

import numpy as np
import pytest

from gpusvd import testing
from gpusvd.condensed import band as stage1


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
