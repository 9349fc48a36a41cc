"""The CUDA inner Jacobi kernel's source compiled for the host (host_kernel.py), no GPU.

1. With one lane per pivot pair and no fma it must give the Numba twin's bits, for every
   dtype, on random, hyperbolic, graded and rank-deficient batches and on columns far
   below U_FLOOR, with the blocked driver's floor2: the kernel and its twin compute the
   same steps in the same (float64) arithmetic.
2. The float32 contract cases that failed on the H100 while their CPU twins passed
   (2026-11-22: graded side="right"/"both" 45×33 and rank-7 50×40, pointwise and blocked
   with b = 16) run through the whole CPU driver with the host-built kernel in place of the
   twin and must meet the contract's bounds. A float32 kernel (steps 1–6 in the data's
   type, the state before the fix) gives ‖VᴴV − I‖ = 5·10⁵ n·ε on side="both" here: the
   Gram sums of columns with entries near 1e-21 underflow in float32. A D·G·D far below
   U_FLOOR runs there too: without the floor its subnormal columns rotate at every sweep.
"""

import numpy as np
import pytest

from gpusvd import testing
from gpusvd._core import tunables
from gpusvd.jacobi import blocked, inner
from gpusvd.jacobi.driver import jacobi_svd
from gpusvd.jacobi.inner import column_floor
from gpusvd.jacobi.rotations import orthogonality_tol
from gpusvd.jacobi.strategies import pivot_strategy
from . import host_kernel
from .test_jacobi_svd import graded_below_floor

BOUND = 30          # the contract's bound in units of n·ε (tests/golub_reinsch/test_svd_gr.py)
MAX_SWEEPS = 30


@pytest.fixture(scope="module")
def host_inner(tmp_path_factory):
    lib = host_kernel.built_or_skip(host_kernel.build, tmp_path_factory, "host_inner")
    return host_kernel.inner_jacobi(lib)


def _problem(kind, batch, m, k, dtype, seed):
    """A batch of g and the signs: random, hyperbolic (half the signs −1), graded columns
    (B·D, D from 1 to 1e-10), graded far below U_FLOOR (B·D, D from 1 to 1e-40 in single
    and 1e-150 in double precision) or rank-deficient (rank k/4)."""
    real = np.finfo(dtype).dtype
    if kind == "below-floor":
        grading = 1e-150 if real == np.float64 else 1e-40
        g = np.stack([testing.graded(m, k, side="right", grading=grading, dtype=dtype,
                                     seed=seed + i) for i in range(batch)])
    elif kind == "graded":
        g = np.stack([testing.graded(m, k, side="right", dtype=dtype, seed=seed + i)
                      for i in range(batch)])
    elif kind == "rank":
        g = np.stack([testing.low_rank(m, k, k // 4, dtype=dtype, seed=seed + i)
                      for i in range(batch)])
    else:
        g = np.stack([testing.random_matrix(m, k, dtype=dtype, seed=seed + i)
                      for i in range(batch)])
    signs = np.ones(k, real)
    if kind == "hyperbolic":
        signs[k // 2:] = -1
    return np.ascontiguousarray(g), signs


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("kind", ["random", "hyperbolic", "graded", "below-floor", "rank"])
def test_host_build_equals_numba_bit_for_bit(host_inner, dtype, kind):
    m, k = 24, 16
    g0, signs = _problem(kind, 4, m, k, dtype, seed=11)
    pairs = pivot_strategy("row-reverse", k)
    tol = orthogonality_tol(dtype, m)
    floor2 = float(column_floor(dtype)) ** 2
    results = []
    for run in (inner.inner_jacobi, host_inner):
        g, v = g0.copy(), np.broadcast_to(np.eye(k, dtype=dtype), (4, k, k)).copy()
        rotations, sweeps = run(g, v, signs, pairs, MAX_SWEEPS, tol, floor2)
        assert (sweeps < MAX_SWEEPS).all()
        results.append((g, v, rotations, sweeps))
    for numba_out, host_out in zip(*results):
        np.testing.assert_array_equal(host_out, numba_out)


CONTRACT_CASES = {
    "graded-right": lambda: testing.graded(45, 33, side="right", dtype=np.float32, seed=3),
    "graded-both": lambda: testing.graded(45, 33, side="both", dtype=np.float32, seed=3),
    "rank": lambda: testing.low_rank(50, 40, 7, dtype=np.float32, seed=5),
    "below-floor": lambda: graded_below_floor(40, np.float32, "both", seed=40)[0],
}


@pytest.mark.parametrize("width", [32, 16], ids=["pointwise", "blocked-b16"])
@pytest.mark.parametrize("case", list(CONTRACT_CASES))
def test_float32_contract_cases_through_the_host_kernel(host_inner, monkeypatch, case, width):
    a = CONTRACT_CASES[case]()
    monkeypatch.setattr(blocked, "inner_for", lambda xp: host_inner)
    with tunables.override(jacobi_block_width=width):
        u, s, vh = jacobi_svd(a, full_matrices=False, device="cpu")
    assert testing.svd_residual(a, u, s, vh) < BOUND
    assert testing.orthogonality(u) < BOUND
    assert testing.orthogonality(vh, rows=True) < BOUND
    ref = np.linalg.svd(a.astype(np.float64), compute_uv=False)
    assert testing.sv_error(s, ref) < BOUND * max(a.shape)
