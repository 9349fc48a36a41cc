"""The CUDA inner Jacobi kernel (inner_cuda.py, kernels/inner_jacobi.cu) against its Numba
twin (inner.py) on identical inputs, and its launch configuration (no GPU needed there).

The twins sum the dot products in different orders, so they agree to rounding: the same
column norms (singular values) within a few k·ε, V orthogonal (J-unitary) to a few k·ε,
G = G₀·V. Sweep and rotation counts are not properties of the result: near convergence
the CPU twin's sequential sums err by about √m·u, as much as the threshold c(ε) = u·√m,
and keep triggering small rotations that the GPU's pairwise sums do not (measured on the
H100: graded float32 batches, about 1450 proper rotations per matrix on the CPU, 480 on
the GPU; a few of 20000 random 32×32 matrices two sweeps apart). So the GPU may take a
few sweeps more or fewer than the CPU, and its rotation count must be consistent with its
own sweeps (none after a first sweep that converged, at most k(k−1)/2 per sweep).
"""

import numpy as np
import pytest

from gpusvd._core import tunables
from gpusvd.jacobi import inner
from gpusvd.jacobi.inner import column_floor
from gpusvd.jacobi.inner_cuda import _LANES, _MAX_THREADS, launch_config, shared_bytes
from gpusvd.jacobi.rotations import orthogonality_tol
from gpusvd.jacobi.strategies import pivot_strategy
from gpusvd.testing import graded, random_matrix

# Opt-in dynamic shared memory per block on an H100 (227 kB) less the kernel's static 16 B.
H100_SHARED = 227 * 1024 - 16
MAX_SWEEPS = 30
# Error budgets in units of k·ε (k the order of the pivot blocks).
NORMS_UNITS = 20        # column norms against each other and against LAPACK
ORTHO_UNITS = 20        # ‖VᴴV − I‖_F, ‖VᴴJV − J‖_F/‖V‖²
RESIDUAL_UNITS = 20     # ‖G₀V − G‖_F / (‖G₀‖_F‖V‖₂)
# Sweeps the GPU may take beyond the CPU twin (docstring: 2 measured on the H100).
SWEEPS_SLACK = 3


# ------------------------------------------------------------------ launch configuration

@pytest.mark.parametrize("m, lanes", [(2, 4), (16, 4), (17, 8), (32, 8), (64, 16),
                                      (100, 32), (128, 32), (4096, 32)])
def test_automatic_lanes_give_each_lane_about_four_rows(m, lanes):
    assert launch_config(m, 2, 8, H100_SHARED).lanes == lanes


@pytest.mark.parametrize("k", [2, 6, 32, 64, 128])
@pytest.mark.parametrize("lanes", _LANES)
def test_groups_cover_the_pairs_within_the_launch_bound(k, lanes):
    config = launch_config(k, k, 4, H100_SHARED, lanes)
    groups, rest = divmod(config.threads, lanes)
    assert config.lanes == lanes and rest == 0
    assert groups == min(k // 2, _MAX_THREADS // lanes)
    assert config.threads <= _MAX_THREADS


def test_shared_memory_pads_leading_dimensions_to_odd():
    assert shared_bytes(32, 32, 8) == (33 * 32 + 33 * 32) * 8
    assert shared_bytes(33, 32, 16) == (33 * 32 + 33 * 32) * 16
    assert shared_bytes(64, 64, 4) == launch_config(64, 64, 4, H100_SHARED).shared_bytes


@pytest.mark.parametrize("k, itemsize", [(64, 8), (64, 16), (128, 4), (120, 8), (84, 16),
                                         (168, 4)])
def test_the_blocked_drivers_sizes_fit_an_h100(k, itemsize):
    assert launch_config(k, k, itemsize, H100_SHARED).shared_bytes <= H100_SHARED


def test_too_large_blocks_raise_with_what_fits():
    with pytest.raises(ValueError, match="up to k = 120"):
        launch_config(128, 128, 8, H100_SHARED)
    with pytest.raises(ValueError, match="shared memory"):
        launch_config(4096, 64, 16, H100_SHARED)


def test_unknown_lanes_raise():
    with pytest.raises(ValueError, match="lanes per pivot pair"):
        launch_config(32, 32, 8, H100_SHARED, lanes=12)


# ------------------------------------------------------------------ CUDA against Numba

def _stack(make, batch, seed):
    return np.stack([make(seed + i) for i in range(batch)])


def _problem(kind, batch, m, k, dtype, seed=0):
    """(g, signs): a batch of m×k matrices and the signs of their columns."""
    real = np.dtype(dtype).type(0).real.dtype
    signs = np.ones(k, real)
    if kind == "graded":  # columns scaled over 8 orders of magnitude: relative accuracy
        g = _stack(lambda s: graded(m, k, side="right", grading=1e-8, dtype=dtype, seed=s),
                   batch, seed)
    elif kind == "below-floor":  # columns far below U_FLOOR: subnormal ones in single
        grading = 1e-150 if real == np.float64 else 1e-40
        g = _stack(lambda s: graded(m, k, side="right", grading=grading, dtype=dtype,
                                    seed=s), batch, seed)
    else:
        g = random_matrix(batch * m, k, dtype=dtype, seed=seed).reshape(batch, m, k)
    if kind == "hyperbolic":
        signs[k // 2 + 1:] = -1  # J kept partitioned, n₊ = k/2 + 1
    return g, signs


def _run_twins(g0, signs, strategy="row-reverse", max_sweeps=MAX_SWEEPS, floor2=0.0):
    import cupy

    from gpusvd.jacobi import inner_cuda

    batch, m, k = g0.shape
    pairs = pivot_strategy(strategy, k)
    tol = orthogonality_tol(signs.dtype, m)
    v0 = np.broadcast_to(np.eye(k, dtype=g0.dtype), (batch, k, k)).copy()
    g, v = g0.copy(), v0.copy()
    rot, sw = inner.inner_jacobi(g, v, signs, pairs, max_sweeps, tol, floor2)
    dg, dv = cupy.asarray(g0), cupy.asarray(v0)
    drot, dsw = inner_cuda.inner_jacobi(dg, dv, cupy.asarray(signs), cupy.asarray(pairs),
                                        max_sweeps, tol, floor2)
    assert drot.dtype == np.int64 and dsw.dtype == np.int32
    return (g, v, rot, sw), (dg.get(), dv.get(), drot.get(), dsw.get())


def _eps(a):
    return float(np.finfo(a.real.dtype).eps)


def _sorted_norms(g, signs):
    """Column norms, the +1 columns descending then the −1 columns ascending."""
    norms = np.linalg.norm(g, axis=1)
    plus, minus = norms[:, signs > 0], norms[:, signs < 0]
    return np.concatenate([-np.sort(-plus, axis=1), np.sort(minus, axis=1)], axis=1)


def _check_result(g0, signs, g, v, sweeps):
    """G = G₀V, V (J-)unitary, converged columns orthogonal: in units of k·ε."""
    batch, m, k = g0.shape
    eps = _eps(g0)
    j = np.diag(signs).astype(g0.dtype)
    vh = np.conj(np.swapaxes(v, 1, 2))
    vnorm = np.linalg.norm(v, 2, axis=(1, 2))
    defect = np.linalg.norm(vh @ j @ v - j, axis=(1, 2)) / vnorm ** 2
    assert defect.max() <= ORTHO_UNITS * k * eps, defect.max() / (k * eps)
    residual = (np.linalg.norm(g0 @ v - g, axis=(1, 2))
                / (np.linalg.norm(g0, axis=(1, 2)) * vnorm))
    assert residual.max() <= RESIDUAL_UNITS * k * eps, residual.max() / (k * eps)
    converged = sweeps < MAX_SWEEPS
    assert converged.all()
    norms = np.linalg.norm(g, axis=1)
    cosines = np.abs(np.conj(np.swapaxes(g, 1, 2)) @ g) / (norms[:, :, None] * norms[:, None])
    cosines[:, np.arange(k), np.arange(k)] = 0
    assert cosines.max() <= orthogonality_tol(signs.dtype, m) + 4 * m * eps, cosines.max()


def _check_twins_agree(g0, signs, cpu, gpu):
    g, v, rot, sw = cpu
    dg, dv, drot, dsw = gpu
    k = g0.shape[2]
    eps = _eps(g0)
    _check_result(g0, signs, dg, dv, dsw)
    assert np.all(dsw <= sw + SWEEPS_SLACK), (sw, dsw)
    assert np.all(drot <= dsw * (k * (k - 1) // 2)), (drot, dsw)
    assert np.all((drot > 0) | (dsw == 1)), (drot, dsw)   # a second sweep needs a rotation
    n_cpu, n_gpu = _sorted_norms(g, signs), _sorted_norms(dg, signs)
    scale = n_cpu.max(axis=1, keepdims=True)
    assert np.all(np.abs(n_gpu - n_cpu) <= NORMS_UNITS * k * eps * scale)
    return n_gpu


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("kind", ["random", "hyperbolic"])
def test_cuda_matches_numba(dtype, kind):
    g0, signs = _problem(kind, 16, 40, 32, dtype, seed=1)
    cpu, gpu = _run_twins(g0, signs)
    norms = _check_twins_agree(g0, signs, cpu, gpu)
    if kind == "random":  # the column norms are the singular values
        s = np.linalg.svd(g0.astype(np.complex128 if np.iscomplexobj(g0) else np.float64),
                          compute_uv=False)
        assert np.all(np.abs(norms - s) <= NORMS_UNITS * 32 * _eps(g0) * s[:, :1])


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_graded_columns_keep_relative_accuracy(dtype):
    g0, signs = _problem("graded", 8, 64, 32, dtype, seed=2)
    cpu, gpu = _run_twins(g0, signs)
    norms = _check_twins_agree(g0, signs, cpu, gpu)
    # LAPACK is not relatively accurate on B·D; one-sided Jacobi is (B well conditioned,
    # m = 2k), so the reference is the CPU twin, in double precision.
    wide = np.complex128 if np.iscomplexobj(g0) else np.float64
    g, v = g0.astype(wide), np.broadcast_to(np.eye(32, dtype=wide), (8, 32, 32)).copy()
    inner.inner_jacobi(g, v, signs.astype(np.float64), pivot_strategy("row-reverse", 32),
                       MAX_SWEEPS, orthogonality_tol(np.float64, 64))
    s = _sorted_norms(g, signs)
    assert np.max(np.abs(norms - s) / s) <= NORMS_UNITS * 32 * _eps(g0)


def _check_floor(g0, g, sweeps, floor2):
    """Converged, and the columns of g0 at or below the floor found in g bit for bit (they
    are swapped, never rotated)."""
    assert (sweeps < MAX_SWEEPS).all(), sweeps
    wide = np.complex128 if np.iscomplexobj(g0) else np.float64

    def below(x):
        return (np.abs(x.astype(wide)) ** 2).sum(axis=1) <= floor2

    before, after = below(g0), below(g)
    for b in range(len(g0)):
        kept = {c.tobytes() for c in np.swapaxes(g0[b], 0, 1)[before[b]]}
        assert kept == {c.tobytes() for c in np.swapaxes(g[b], 0, 1)[after[b]]}


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_floor_leaves_the_columns_below_it_alone(dtype):
    """The blocked driver's floor2 (U_FLOOR²) on columns far below it: both twins converge
    (without it single precision rotates subnormal columns at every sweep), leave those
    columns as they were but for swaps, and agree on the column norms."""
    g0, signs = _problem("below-floor", 8, 40, 32, dtype, seed=7)
    floor2 = float(column_floor(dtype)) ** 2
    (g, v, rot, sw), (dg, dv, drot, dsw) = _run_twins(g0, signs, floor2=floor2)
    _check_floor(g0, g, sw, floor2)
    _check_floor(g0, dg, dsw, floor2)
    wide = np.complex128 if np.iscomplexobj(g0) else np.float64
    n_cpu, n_gpu = (_sorted_norms(x.astype(wide), signs) for x in (g, dg))
    scale = n_cpu.max(axis=1, keepdims=True)
    assert np.all(np.abs(n_gpu - n_cpu) <= NORMS_UNITS * 32 * _eps(g0) * scale)


@pytest.mark.gpu
@pytest.mark.parametrize("lanes", _LANES)
@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
@pytest.mark.parametrize("m, k, strategy", [(37, 32, "brent-luk"), (6, 6, "modulus")])
def test_every_lane_count(lanes, dtype, m, k, strategy):
    g0, signs = _problem("hyperbolic", 5, m, k, dtype, seed=lanes)
    with tunables.override(jacobi_inner_lanes=lanes):
        cpu, gpu = _run_twins(g0, signs, strategy)
    _check_twins_agree(g0, signs, cpu, gpu)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
def test_one_sweep_block_oriented_matches_entrywise(dtype):
    g0, signs = _problem("random", 8, 32, 32, dtype, seed=4)
    (g, v, rot, sw), (dg, dv, drot, dsw) = _run_twins(g0, signs, max_sweeps=1)
    eps = _eps(g0)
    assert np.all(sw == 1) and np.all(dsw == 1)
    assert np.abs(dg - g).max() <= 50 * 32 * eps * np.abs(g).max()
    assert np.abs(dv - v).max() <= 50 * 32 * eps
    assert np.all(np.abs(drot - rot) <= 2)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype, k", [(np.float64, 64), (np.complex64, 64),
                                      (np.complex128, 64), (np.float32, 128)])
def test_large_blocks_in_opt_in_shared_memory(dtype, k):
    g0, signs = _problem("hyperbolic", 3, k, k, dtype, seed=5)
    cpu, gpu = _run_twins(g0, signs)
    _check_twins_agree(g0, signs, cpu, gpu)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batch_of_20000_32x32(dtype):
    g0, signs = _problem("random", 20000, 32, 32, dtype, seed=6)
    cpu, gpu = _run_twins(g0, signs)
    norms = _check_twins_agree(g0, signs, cpu, gpu)
    s = np.linalg.svd(g0.astype(np.float64), compute_uv=False)
    assert np.all(np.abs(norms - s) <= NORMS_UNITS * 32 * _eps(g0) * s[:, :1])


@pytest.mark.gpu
def test_too_large_for_shared_memory_raises():
    import cupy

    from gpusvd.jacobi import inner_cuda

    k = 128
    g = cupy.zeros((1, k, k), np.complex128)
    v = cupy.zeros((1, k, k), np.complex128)
    with pytest.raises(ValueError, match="shared memory"):
        inner_cuda.inner_jacobi(g, v, cupy.ones(k), cupy.asarray(pivot_strategy("row", k)),
                                1, 1e-15)


@pytest.mark.gpu
def test_empty_batch():
    import cupy

    from gpusvd.jacobi import inner_cuda

    g = cupy.zeros((0, 4, 4))
    rot, sw = inner_cuda.inner_jacobi(g, cupy.zeros((0, 4, 4)), cupy.ones(4),
                                      cupy.asarray(pivot_strategy("row", 4)), 3, 1e-15)
    assert rot.shape == sw.shape == (0,)
