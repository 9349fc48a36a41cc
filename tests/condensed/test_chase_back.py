"""The blocked back-transformation of stage 2 (condensed/chase_back.py) against the oracle
that multiplies in every recorded reflector as a dense matrix (naive_chase_back.py), and
end to end: the band rebuilt from Q₂, P₂ (Q) and the phases.

Units: n·ε (ε of the working dtype).  Blocked against oracle, ‖·‖_F relative to ‖C‖_F,
BOUND_ORACLE = 4: each row of C meets at most one reflector per sweep (a sweep's windows
are disjoint), n − 1 in all, each applied backward stably (Higham, Lemma 19.3), so the two
results differ by O(n·ε) in the worst case and by less in practice; the largest seen over
these cases is 0.42, so 4 leaves a factor ten without hiding an error of a misplaced
reflector, which is O(1) (a wrong order gives ≈ 1/(n·ε)).  End to end as test_bulge.py:
max-norm relative to ‖A‖, and ‖QᴴQ − I‖_F/(n·ε), BOUND = 30.
"""

import numpy as np
import pytest

from gpusvd import testing
from gpusvd._core import tunables
from gpusvd.condensed import band as stage1
from gpusvd.condensed import bulge, chase_back, chase_back_cuda

from . import naive_chase_back as naive

BOUND_ORACLE = 4
BOUND = 30
DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
BANDWIDTHS = (2, 3, 8, 16)


def _sizes(b):
    """Tiny, n < b, n = b + 1, n not a multiple of b, several blocks per sweep."""
    return sorted({1, 2, 3, 5, b + 1, 2 * b + 3, 40})


CASES = [(n, b) for b in BANDWIDTHS for n in _sizes(b)]


def _oracle_units(x, ref, c):
    n = max(c.shape[0], 1)
    scale = max(float(np.linalg.norm(c)), float(np.finfo(c.dtype).tiny))
    return float(np.linalg.norm(x - ref)) / (scale * n * np.finfo(c.dtype).eps)


def _units(x, a):
    n = max(a.shape[0], 1)
    scale = max(float(np.abs(a).max(initial=0.0)), float(np.finfo(a.dtype).tiny))
    return float(np.abs(x).max(initial=0.0)) / (scale * n * np.finfo(a.dtype).eps)


def _synthetic(n, b, sweeps, dtype, seed):
    """Unitary reflectors on the chase's windows, a fifth of them with τ = 0 (and v left
    as junk), v junk past row n and τ junk (NaN) on windows wholly past it."""
    rng = np.random.default_rng(seed)
    blocks = -(-sweeps // b)
    complex_ = np.dtype(dtype).kind == "c"
    v = rng.standard_normal((sweeps, blocks, b)) + (
        1j * rng.standard_normal((sweeps, blocks, b)) if complex_ else 0)
    v[..., 0] = 1
    first = np.arange(sweeps)[:, None] + 1 + b * np.arange(blocks)[None, :]
    inside = first[..., None] + np.arange(b) < n
    norm2 = np.maximum((np.abs(v) ** 2 * inside).sum(-1), 1)
    # 2·Re τ = |τ|²·‖v‖² makes H unitary: τ = (1 + e^{iθ})/‖v‖², θ = 0 when real.
    theta = rng.uniform(0, np.pi, first.shape) if complex_ else np.zeros(first.shape)
    tau = (1 + np.exp(1j * theta)) / norm2
    tau = tau if complex_ else tau.real
    tau[rng.random(first.shape) < 0.2] = 0
    tau[first >= n] = np.nan
    return v.astype(dtype), tau.astype(dtype)


@pytest.mark.parametrize("group", [None, 1, 3, "2b"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, b", CASES)
def test_matches_the_oracle(n, b, dtype, group):
    """Both sides of the chase (sweeps 0 … n−2), g = b, g = 1, g not dividing b, g > b."""
    g = 2 * b if group == "2b" else group
    c = testing.random_matrix(n, 4, dtype=dtype, seed=n + b)
    saved = c.copy()
    v, tau = _synthetic(n, b, max(n - 1, 0), dtype, seed=n * b)
    u, sigma = _synthetic(n, b, max(n - 1, 0), dtype, seed=n * b + 1)
    refl = bulge.ChaseReflectors(v, tau, u, sigma, b)
    ref = naive.apply_reflectors(v, np.nan_to_num(tau), b, c)
    assert _oracle_units(chase_back.apply_q(refl, c, group=g), ref, c) < BOUND_ORACLE
    ref = naive.apply_reflectors(u, np.nan_to_num(sigma), b, c)
    assert _oracle_units(chase_back.apply_p(refl, c, group=g), ref, c) < BOUND_ORACLE
    assert np.array_equal(c, saved)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, b", [(40, 3), (17, 8), (5, 16)])
def test_column_panels(n, b, dtype, monkeypatch):
    """C taken 3 columns a slab (the CPU passes' slab width set small), a short last slab."""
    c = testing.random_matrix(n, 8, dtype=dtype, seed=n)
    v, tau = _synthetic(n, b, max(n - 1, 0), dtype, seed=b)
    ref = naive.apply_reflectors(v, np.nan_to_num(tau), b, c)
    with tunables.override(chase_back_panel_columns_cpu=3):
        got = chase_back.apply_q(bulge.ChaseReflectors(v, tau, v, tau, b), c)
    assert _oracle_units(got, ref, c) < BOUND_ORACLE


@pytest.mark.parametrize("group", [None, 3])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, b", CASES)
def test_bidiagonal_reflectors_reconstruct_the_band(n, b, dtype, group):
    """A_band = (Q₂·D_L)·B·(P₂·D_R)ᴴ with Q₂, P₂ unitary, and Q₂, P₂ as the oracle's."""
    band = testing.random_matrix(n, b + 1, dtype=dtype, seed=n * b)
    a = stage1.band_matrix(band)
    bd = bulge.band_to_bidiagonal(band, record=True)
    refl, eye = bd.reflectors, np.eye(n, dtype=dtype)
    q2 = chase_back.apply_q(refl, eye, group=group)
    p2 = chase_back.apply_p(refl, eye, group=group)
    assert _oracle_units(q2, naive.apply_reflectors(refl.v_left, refl.tau_left,
                                                    refl.bandwidth, eye), eye) < BOUND_ORACLE
    assert _oracle_units(p2, naive.apply_reflectors(refl.v_right, refl.tau_right,
                                                    refl.bandwidth, eye), eye) < BOUND_ORACLE
    q, p = q2 * bd.phase_left, p2 * bd.phase_right
    assert testing.orthogonality(q) < BOUND and testing.orthogonality(p) < BOUND
    b_real = (np.diag(bd.d) + np.diag(bd.e, 1)).astype(dtype)
    assert _units(q @ b_real @ p.conj().T - a, a) < BOUND


@pytest.mark.parametrize("dtype", DTYPES)
def test_structured_bands_with_identity_reflectors(dtype):
    """Zero rows and an already bidiagonal band: the chase records τ = 0."""
    n, b = 14, 4
    zero_rows = testing.random_matrix(n, b + 1, dtype=dtype, seed=4)
    zero_rows[3:8] = 0
    bidiagonal = np.zeros((n, b + 1), dtype)
    bidiagonal[:, :2] = testing.random_matrix(n, 2, dtype=dtype, seed=5)
    for band in (zero_rows, bidiagonal, np.zeros((n, b + 1), dtype)):
        bd = bulge.band_to_bidiagonal(band, record=True)
        assert (bd.reflectors.tau_left == 0).any()
        q = chase_back.apply_q(bd.reflectors, np.eye(n, dtype=dtype)) * bd.phase_left
        p = chase_back.apply_p(bd.reflectors, np.eye(n, dtype=dtype)) * bd.phase_right
        a = stage1.band_matrix(band)
        assert _units(q @ (np.diag(bd.d) + np.diag(bd.e, 1)) @ p.conj().T - a, a) < BOUND


def test_shapes_and_dtypes():
    """A vector, no columns, float32 reflectors on float64 data (float64 out)."""
    band = testing.random_matrix(10, 4, dtype=np.float32, seed=1)
    refl = bulge.band_to_bidiagonal(band, record=True).reflectors
    x = testing.random_matrix(10, 1, seed=2)
    qx = chase_back.apply_q(refl, x[:, 0])
    assert qx.shape == (10,) and qx.dtype == np.float64
    assert np.array_equal(qx, chase_back.apply_q(refl, x)[:, 0])
    assert chase_back.apply_p(refl, np.zeros((10, 0))).shape == (10, 0)
    assert chase_back.apply_q(refl, np.ones((10, 2), np.complex64)).dtype == np.complex64


@pytest.mark.parametrize("c, group, message", [
    (np.ones((9, 2)), None, "rows"), (np.ones((10, 2, 2)), None, "1-D or 2-D"),
    (np.ones((10, 2)), 0, "at least 1")])
def test_bad_input_raises(c, group, message):
    refl = bulge.band_to_bidiagonal(np.ones((10, 3)), record=True).reflectors
    with pytest.raises(ValueError, match=message):
        chase_back.apply_q(refl, c, group=group)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, b, group", [(40, 3, None), (17, 8, 3), (300, 16, None),
                                         (257, 32, 8)])
def test_cupy_matches_numpy(n, b, group, dtype):
    """The same code on CuPy arrays (all of C in one panel): NumPy's result to the bound."""
    import cupy
    band = testing.random_matrix(n, b + 1, dtype=dtype, seed=n)
    bd = bulge.band_to_bidiagonal(band, record=True)
    c = testing.random_matrix(n, 2 * n, dtype=dtype, seed=b)
    on_gpu = bulge.ChaseReflectors(*map(cupy.asarray, bd.reflectors[:4]), b)
    for apply in (chase_back.apply_q, chase_back.apply_p):
        got = apply(on_gpu, cupy.asarray(c), group=group)
        assert isinstance(got, cupy.ndarray)
        assert _oracle_units(got.get(), apply(bd.reflectors, c, group=group), c) < BOUND_ORACLE


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, b", CASES)
def test_pass_twin_matches_the_oracle(n, b, dtype):
    """The pass kernel's Numba twin, the CPU's product (kernels/chase_back.cu's order:
    passes of g sweeps, the last first, each sliding down the rows) at g = 1, 3, b and
    2b, slabs of 64, 3, 1 and 2 columns, on the raw reflectors (v junk past row n, τ NaN on
    windows wholly past it: neither may be read)."""
    c = testing.random_matrix(n, 4, dtype=dtype, seed=n + b)
    v, tau = _synthetic(n, b, max(n - 1, 0), dtype, seed=n * b)
    ref = naive.apply_reflectors(v, np.nan_to_num(tau), b, c)
    for g, columns in ((1, 64), (3, 3), (b, 1), (2 * b, 2)):
        got = chase_back._passes_host(v, tau, b, g, c.copy(), columns)
        assert _oracle_units(got, ref, c) < BOUND_ORACLE


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", (np.float32, np.float64))
@pytest.mark.parametrize("b", (16, 32))
@pytest.mark.parametrize("n, m", [(1, 3), (2, 1), (17, 33), (33, 31), (100, 64),
                                  (257, 40), (700, 97)])
def test_pass_kernel_matches_its_twin(n, m, b, dtype):
    """kernels/chase_back.cu against _passes_host on raw synthetic reflectors, at the
    instantiated g and 1, 2 and 4 warps (passes at once; a short last trip), C of m columns
    (a partial last slab); the same bits twice, the reflectors untouched. Then through
    apply_q and apply_p (the wired path) against NumPy's (the twin's passes)."""
    import cupy

    v, tau = _synthetic(n, b, max(n - 1, 0), dtype, seed=n + m)
    c = testing.random_matrix(n, m, dtype=dtype, seed=n * m)
    v_gpu, tau_gpu = cupy.asarray(v), cupy.asarray(tau)
    g = chase_back_cuda.PASS_GROUPS[b, np.dtype(dtype)]
    ref = chase_back._passes_host(v, tau, b, g, np.array(c), 32)
    for warps in (1, 2, 4):
        got = cupy.asarray(c)
        chase_back_cuda.passes(got, v_gpu, tau_gpu, b, g, warps)
        again = cupy.asarray(c)
        chase_back_cuda.passes(again, v_gpu, tau_gpu, b, g, warps)
        assert cupy.array_equal(got, again)
        assert _oracle_units(got.get(), ref, c) < BOUND_ORACLE
    np.testing.assert_array_equal(v_gpu.get(), v)
    np.testing.assert_array_equal(tau_gpu.get(), tau)
    u, sigma = _synthetic(n, b, max(n - 1, 0), dtype, seed=n + m + 1)
    refl_host = bulge.ChaseReflectors(v, tau, u, sigma, b)
    refl = bulge.ChaseReflectors(*map(cupy.asarray, refl_host[:4]), b)
    for apply in (chase_back.apply_q, chase_back.apply_p):
        c_gpu = cupy.asarray(np.asfortranarray(c))
        got = apply(refl, c_gpu)
        np.testing.assert_array_equal(c_gpu.get(), c)
        assert _oracle_units(got.get(), apply(refl_host, c), c) < BOUND_ORACLE


def test_pass_kernel_instantiations_are_registered():
    """Every (b, dtype) → g of chase_back_cuda.PASS_GROUPS is a registered instantiation of
    kernels/chase_back.cu, and nothing else is (a shipped binary for each launch)."""
    from gpusvd._core import kernels

    wanted = {f"chase_back_passes<{kernels.CTYPE[dtype]}, {b}, {g}>"
              for (b, dtype), g in chase_back_cuda.PASS_GROUPS.items()}
    assert wanted == set(kernels.REGISTRY["condensed/kernels/chase_back.cu"].names)


def _emulate(gemm, buffers, count):
    """cublas<t>gemmStridedBatched (no transposes) of a chase_back_cuda.StridedGemm on flat
    NumPy buffers: column-major matrices at offset + i·stride with leading dimension ld."""
    def matrix(op, rows, cols, i):
        flat = buffers[op.buffer]
        start = op.offset + i * op.stride
        return np.lib.stride_tricks.as_strided(
            flat[start:], shape=(rows, cols),
            strides=(flat.itemsize, op.ld * flat.itemsize), writeable=True)
    for i in range(count):
        product = matrix(gemm.a, gemm.m, gemm.k, i) @ matrix(gemm.b, gemm.k, gemm.n, i)
        c = matrix(gemm.c, gemm.m, gemm.n, i)
        if gemm.subtract:
            c -= product
        else:
            c[...] = product


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, b, g", [(40, 3, 3), (17, 8, 3), (60, 8, 16), (5, 16, 16)])
def test_cuda_step_plan_is_the_host_step(n, b, g, dtype):
    """The GEMM plan of the CUDA wavefront step (offsets, leading dimensions, batch strides)
    run by a NumPy emulation of gemmStridedBatched gives the host step's C, to rounding."""
    v, tau = _synthetic(n, b, max(n - 1, 0), dtype, seed=b)
    c = testing.random_matrix(n, 7, dtype=dtype, seed=n)
    vs, wy, last, blocks = chase_back._factors(np.asarray(v, dtype), np.asarray(tau, dtype),
                                               b, g, n)
    host = np.zeros((n + g + b, 7), dtype)
    host[:n] = c
    emulated = host.copy()
    chase_back._wavefront(host, vs, wy, last, blocks, b, g, n)

    def step(work, r0, count, span, period, vs_, wy_, first, stride):
        x = np.empty((count, wy_.shape[1], work.shape[1]), work.dtype)
        buffers = {"work": work.reshape(-1), "vs": vs_.reshape(-1), "wy": wy_.reshape(-1),
                   "x": x.reshape(-1)}
        for gemm in chase_back_cuda.plan(work.shape[1], r0, count, span, period,
                                         wy_.shape[1], first, stride):
            _emulate(gemm, buffers, count)
    original = chase_back._STEPS["numpy"]
    chase_back._STEPS["numpy"] = step
    try:
        chase_back._wavefront(emulated, vs, wy, last, blocks, b, g, n)
    finally:
        chase_back._STEPS["numpy"] = original
    scale = np.abs(host).max() * n * np.finfo(dtype).eps
    assert np.abs(emulated - host).max() <= BOUND_ORACLE * scale

