"""The CUDA rotation formula (kernels/inner_jacobi.cu, jacobi_rotation) on the shared
table of cases, and against the Numba reference bit for bit on random pivot pairs.

Without a GPU the same source is compiled for the host with g++ (host_kernel.py: the CUDA
keywords and the rounding intrinsics stubbed, no contraction) and must already give
Numba's bits.
"""

import ctypes

import numpy as np
import pytest

from gpusvd.jacobi.rotations import rotations as numba_rotations
import host_kernel
from rotation_cases import cases, check

DTYPES = [np.float32, np.float64]


def _columns(table, dtype):
    app, aqq, apq = (np.array([getattr(c, f) for c in table], dtype)
                     for f in ("app", "aqq", "apq_abs"))
    return app, aqq, apq, np.array([c.hyperbolic for c in table])


def _random_pairs(dtype, n, seed):
    """Pivot pairs (h_pp, h_qq, |h_pq|) over the exponent range of ``dtype``, |h_pq| at
    most √(h_pp·h_qq) as for a Gram matrix, half of them hyperbolic."""
    rng = np.random.default_rng(seed)
    span = 30 if dtype == np.float64 else 15
    app = 10.0 ** rng.uniform(-span, span, n)
    near = app * np.where(rng.random(n) < 0.5, 1 + rng.uniform(-1e-6, 1e-6, n),
                          10.0 ** rng.uniform(-3, 3, n))
    aqq = np.where(rng.random(n) < 0.6, near, 10.0 ** rng.uniform(-span, span, n))
    cosine = np.where(rng.random(n) < 0.1, 1 - 10.0 ** rng.uniform(-12, -1, n),
                      10.0 ** rng.uniform(-8, 0, n))
    apq = cosine * np.sqrt(app) * np.sqrt(aqq)
    return (app.astype(dtype), aqq.astype(dtype), apq.astype(dtype),
            rng.random(n) < 0.5)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_cuda_rotation_passes_the_table(dtype):
    from gpusvd.jacobi.inner_cuda import rotations

    table = cases(dtype)
    cs, tn = rotations(*_columns(table, dtype))
    cs, tn = cs.get(), tn.get()
    for i, case in enumerate(table):
        check(case, dtype, cs[i], tn[i])


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_cuda_rotation_equals_numba_bit_for_bit(dtype):
    from gpusvd.jacobi.inner_cuda import rotations

    inputs = _random_pairs(dtype, 100_000, seed=3)
    table = _columns(cases(dtype), dtype)
    inputs = tuple(np.concatenate([a, b]) for a, b in zip(inputs, table))
    cs, tn = rotations(*inputs)
    ref_cs, ref_tn = numba_rotations(*inputs)
    # Same operations in the same order, each correctly rounded, no fma on either side.
    np.testing.assert_array_equal(cs.get(), ref_cs)
    np.testing.assert_array_equal(tn.get(), ref_tn)


@pytest.mark.gpu
def test_cuda_rotation_rejects_mixed_dtypes():
    from gpusvd.jacobi.inner_cuda import rotations

    with pytest.raises(ValueError, match="one dtype"):
        rotations(np.ones(2), np.ones(2, np.float32), np.ones(2), np.zeros(2, bool))


@pytest.fixture(scope="module")
def host_rotation(tmp_path_factory):
    """jacobi_rotation of the .cu file compiled for the host: (app, aqq, apq, hyp) -> (cs, tn)."""
    lib = host_kernel.built_or_skip(host_kernel.build, tmp_path_factory, "host_rotation")

    def rotate(app, aqq, apq_abs, hyperbolic):
        args = [np.ascontiguousarray(x) for x in (app, aqq, apq_abs)]
        args.append(np.ascontiguousarray(hyperbolic, dtype=np.bool_))
        cs, tn = np.empty_like(args[0]), np.empty_like(args[0])
        function = getattr(lib, f"table_{'float' if args[0].dtype == np.float32 else 'double'}")
        function(ctypes.c_int(len(cs)), *(x.ctypes.data_as(ctypes.c_void_p)
                                          for x in (*args, cs, tn)))
        return cs, tn

    return rotate


@pytest.mark.parametrize("dtype", DTYPES)
def test_cuda_source_on_the_host_equals_numba_and_passes_the_table(host_rotation, dtype):
    table = cases(dtype)
    inputs = _random_pairs(dtype, 20_000, seed=5)
    inputs = tuple(np.concatenate([a, b]) for a, b in zip(inputs, _columns(table, dtype)))
    cs, tn = host_rotation(*inputs)
    ref_cs, ref_tn = numba_rotations(*inputs)
    np.testing.assert_array_equal(cs, ref_cs)
    np.testing.assert_array_equal(tn, ref_tn)
    for i, case in enumerate(table, start=len(cs) - len(table)):
        check(case, dtype, cs[i], tn[i])
