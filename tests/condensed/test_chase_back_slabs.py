"""Stage 2's back-transformation by column slabs (tunable ``chase_back_slabs``:
kernels/chase_back_slabs.cu, chase_back_cuda.apply_slabs, and its NumPy twin
chase_back._slabs_host) against the wavefront of batched GEMMs (chase_back._wavefront,
tested against the one-at-a-time oracles in test_chase_back.py).

Without a GPU the kernel's source runs on the CPU (host_chase_back_slabs.py: one thread
per block, the slabs one after the other): its ring of rows in shared memory, the window
sliding by b rows per group, slabs narrower than 32 columns, g ≠ b, and groups that reach
past row n. On the GPU (marked gpu) the kernel itself, and the two-stage SVD with it.
Bounds are in units of n·ε of max|C| (ε of the working dtype).
"""

import numpy as np
import pytest

from gpusvd import testing
from gpusvd._core import tunables
from gpusvd.condensed import bulge, chase_back, driver, sym_bulge

import host_chase_back_slabs
import host_kernel  # tests/jacobi, on sys.path once host_chase_back_slabs is imported

BOUND = 30  # in units of n·ε of max|C|, as gr's property tests
REAL = (np.float32, np.float64)
# (n, b, g, m): g = b, g < b, g > b, a window of 63 rows (b = g = 32), slabs of 32 columns
# and a short last one, one column, a short matrix.
CASES = [(300, 8, 8, 5), (300, 8, 4, 70), (200, 32, 32, 40), (50, 3, 5, 33), (120, 16, 8, 1),
         (9, 4, 4, 64)]


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return host_kernel.built_or_skip(host_chase_back_slabs.build, tmp_path_factory, "slabs")


def _reflectors(n, b, dtype, seed):
    band = testing.random_matrix(n, b + 1, dtype=dtype, seed=seed)
    return bulge.band_to_bidiagonal(band, record=True).reflectors


def _units(x, c):
    n = max(c.shape[0], 1)
    scale = max(float(np.abs(c).max()), float(np.finfo(c.dtype).tiny))
    return float(np.abs(x).max(initial=0.0)) / (scale * n * np.finfo(c.dtype).eps)


def _work(c, b, g):
    n = c.shape[0]
    work = np.zeros((n + g + b, c.shape[1]), c.dtype)
    work[:n] = c
    return work


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("n, b, g, m", CASES)
def test_host_build_matches_the_wavefront(lib, n, b, g, m, dtype):
    refl = _reflectors(n, b, dtype, seed=n + b + g)
    c = testing.random_matrix(n, m, dtype=dtype, seed=m)
    factors = chase_back._factors(refl.v_left, refl.tau_left, b, g, n)
    want = _work(c, b, g)
    chase_back._wavefront(want, *factors, b, g, n)
    got = _work(c, b, g)
    host_chase_back_slabs.apply_slabs(lib)(got, *factors, b, g, n)
    assert _units(got[:n] - want[:n], c) < BOUND
    assert not got[n:].any()  # the padding rows below n stay zero


@pytest.mark.parametrize("n, b, g, m", CASES[:3])
def test_numpy_twin_matches_the_wavefront(n, b, g, m):
    refl = _reflectors(n, b, np.float64, seed=n * b)
    c = testing.random_matrix(n, m, seed=m + 1)
    factors = chase_back._factors(refl.v_right, refl.tau_right, b, g, n)
    want, got = _work(c, b, g), _work(c, b, g)
    chase_back._wavefront(want, *factors, b, g, n)
    chase_back._slabs_host(got, *factors, b, g, n)
    assert _units(got - want, c) < BOUND


def test_the_order_matters():
    """The slabs' order is not arbitrary: J ascending instead of descending is wrong."""
    n, b, g = 120, 8, 8
    refl = _reflectors(n, b, np.float64, seed=3)
    c = testing.random_matrix(n, 4, seed=4)
    vs, wy, last, blocks = chase_back._factors(refl.v_left, refl.tau_left, b, g, n)
    want, wrong = _work(c, b, g), _work(c, b, g)
    chase_back._slabs_host(want, vs, wy, last, blocks, b, g, n)
    for j in range(last + 1):
        for k in range(blocks):
            r0 = j * g + k * b + 1
            if r0 > n - 1:
                break
            window = wrong[r0:r0 + b + g - 1]
            window -= vs[j * blocks + k] @ (wy[j * blocks + k] @ window)
    assert _units(wrong - want, c) > 1e6


@pytest.mark.parametrize("apply", ["apply_q", "apply_p", "apply_sym_q"])
def test_the_tunable_keeps_every_apply(apply):
    n, b = 90, 6
    if apply == "apply_sym_q":
        band = testing.random_matrix(n, b + 1, seed=5)
        refl = sym_bulge.band_to_tridiagonal(band, record=True).reflectors
    else:
        refl = _reflectors(n, b, np.float64, seed=6)
    c = testing.random_matrix(n, 7, seed=7)
    plain = getattr(chase_back, apply)(refl, c)
    with tunables.override(chase_back_slabs=True):
        slabs = getattr(chase_back, apply)(refl, c)
    assert _units(slabs - plain, c) < BOUND


def test_complex_and_wide_windows_keep_the_wavefront():
    assert not chase_back._slabs(np, np.dtype(np.float64), 8, 8)  # off by default
    with tunables.override(chase_back_slabs=True):
        assert chase_back._slabs(np, np.dtype(np.float32), 32, 32)
        assert not chase_back._slabs(np, np.dtype(np.complex128), 8, 8)
        assert not chase_back._slabs(np, np.dtype(np.float64), 40, 32)  # 71 rows
        assert not chase_back._slabs(np, np.dtype(np.float64), 8, 40)   # g > 32


@pytest.mark.parametrize("twin", ["numpy", "host_build"])
def test_two_stage_svd_with_slabs(lib, monkeypatch, twin):
    """The whole SVD through the slabs: the NumPy twin, or the kernel's host build."""
    if twin == "host_build":
        monkeypatch.setitem(chase_back._SLABS, "numpy", host_chase_back_slabs.apply_slabs(lib))
    a = testing.random_matrix(150, 120, seed=8)
    with tunables.override(chase_back_slabs=True):
        u, s, vh = driver.two_stage_svd(a, bandwidth=8)
    assert testing.svd_residual(a, u, s, vh) < BOUND
    assert testing.orthogonality(u) < BOUND and testing.orthogonality(vh, rows=True) < BOUND


# ---------------------------------------------------------------------------- GPU


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("n, b, g, m", [(2000, 32, 32, 2000), (300, 8, 4, 70), (9, 4, 4, 64)])
def test_gpu_kernel_matches_the_wavefront(n, b, g, m, dtype):
    import cupy

    refl = _reflectors(n, b, dtype, seed=n + m)
    c = testing.random_matrix(n, m, dtype=dtype, seed=m)
    want = chase_back.apply_q(refl, c, group=g)
    dev = bulge.ChaseReflectors(*(cupy.asarray(x) if isinstance(x, np.ndarray) else x
                                  for x in refl))
    with tunables.override(chase_back_slabs=True):
        got = chase_back.apply_q(dev, cupy.asarray(c), group=g)
    assert _units(got.get() - want, c) < BOUND


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", REAL)
def test_gpu_two_stage_svd_with_slabs(dtype):
    import cupy

    a = testing.random_matrix(1500, 1200, dtype=dtype, seed=9)
    with tunables.override(chase_back_slabs=True):
        u, s, vh = driver.two_stage_svd(cupy.asarray(a))
    u, s, vh = u.get(), s.get(), vh.get()
    assert testing.svd_residual(a, u, s, vh) < BOUND
    assert testing.orthogonality(u) < BOUND and testing.orthogonality(vh, rows=True) < BOUND
