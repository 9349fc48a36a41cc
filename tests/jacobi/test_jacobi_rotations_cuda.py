"""The CUDA rotation formula (kernels/inner_jacobi.cu, jacobi_rotation) on the shared
table of cases, and against the Numba reference bit for bit on random pivot pairs.

Without a GPU the same source is compiled for the host with g++ (host_kernel.py: the CUDA
keywords and the rounding intrinsics stubbed, no contraction) and must already give
Numba's bits.
"""

import ctypes

import numpy as np
import pytest

from gpusvd.jacobi.rotations import rotation_of
from gpusvd.jacobi.rotations import rotations as numba_rotations
from . import host_kernel
from .rotation_cases import cases, check

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


def _narrow_twin(ct2, hyperbolic, like):
    pairs = [rotation_of(c, h, like) for c, h in zip(ct2, hyperbolic)]
    return (np.array([p[0] for p in pairs], type(like)),
            np.array([p[1] for p in pairs], type(like)))


def test_float_rotation_of_a_double_ct2_on_the_host(host_rotation, tmp_path_factory):
    """The small SVD's rotation of float data (pair_step's Narrow): (16)–(18) in float from
    a float64 ct2φ. The .cu source on the host gives the twin's bits, and cs, tn are the
    float64 rotation's to a few float ulps, also where tn = 1/(2|ct2φ|) is below float's
    normal range or ct2φ lies past float's largest number."""
    lib = host_kernel.built_or_skip(host_kernel.build, tmp_path_factory, "host_narrow")
    rng = np.random.default_rng(11)
    n = 20_000
    ct2 = np.concatenate([
        rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-12, 45, n),
        [0.0, -0.0, 2.0 ** -13, 5792.0, 5793.0, 5794.0, 1e38, 4e38, 1e300, -1e300, 1.0]])
    hyperbolic = rng.random(len(ct2)) < 0.5
    cs, tn = np.empty(len(ct2), np.float32), np.empty(len(ct2), np.float32)
    lib.table_narrow(ctypes.c_int(len(ct2)), *(x.ctypes.data_as(ctypes.c_void_p)
                                               for x in (ct2, hyperbolic, cs, tn)))
    ref_cs, ref_tn = _narrow_twin(ct2, hyperbolic, np.float32(0))
    np.testing.assert_array_equal(cs, ref_cs)
    np.testing.assert_array_equal(tn, ref_tn)
    # Accuracy where the small SVD uses it: trigonometric pairs (a hyperbolic |ct2φ| near 1
    # is ill-conditioned, cosh ~ 1/√(|ct2φ| − 1), and rounding it to float moves cosh more)
    trig = ~hyperbolic
    wide_cs, wide_tn = _narrow_twin(ct2[trig], hyperbolic[trig], np.float64(0))
    cs, tn = cs[trig], tn[trig]
    eps = np.finfo(np.float32).eps
    # |tn| <= 1 everywhere; below float's normal range its rounding is absolute (2^-150)
    np.testing.assert_array_less(np.abs(tn - wide_tn), 4 * eps * np.abs(wide_tn) + 2.0 ** -149)
    np.testing.assert_array_less(np.abs(cs - wide_cs), 4 * eps * wide_cs)
    kept = tn != 0  # not where 1/(2|ct2φ|) underflows float
    assert np.all(np.sign(tn[kept]) == np.sign(wide_tn[kept]))
