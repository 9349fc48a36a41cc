"""The gather-free block-step update (takagi/block_update.py): the emulated cuBLAS calls
against cuBLAS's definition, the offsets against the dense congruence P Gᴴ A Ḡ Pᵀ, and the
cuBLAS executor against its NumPy twin on identical input (marker ``gpu``)."""

import numpy as np
import pytest
import scipy.linalg

from gpusvd import testing
from gpusvd.takagi import block_update
from gpusvd.takagi.ordering import chess_tournament

DTYPES = (np.complex64, np.complex128)
SHAPES = [(4, 1), (8, 2), (24, 4), (64, 8)]  # (size, b): one tile, a few, many block pairs


def _rng_complex(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _unitaries(count, width, dtype, seed):
    return np.stack([testing.haar_orthogonal(width, dtype=dtype, seed=seed + p)
                     for p in range(count)])


def _tol(dtype, size):
    return 8 * size * np.finfo(dtype).eps


def test_destinations_follow_the_tournament():
    pairs = chess_tournament(10)
    dest = block_update.block_destinations(pairs)
    held = pairs.reshape(len(pairs), -1)
    for s in range(len(pairs)):
        moved = np.empty_like(held[s])
        moved[dest[s]] = held[s]                 # block of slot m lands in slot dest[s, m]
        assert np.array_equal(moved, held[(s + 1) % len(pairs)])


@pytest.mark.parametrize("transa, transb", [(0, 0), (0, 1), (0, 2), (1, 0), (2, 2)])
def test_gemm_batched_is_column_major_cublas(transa, transb):
    """C_i = op(A_i) op(B_i) with element (i, j) of a matrix at offset + i + j·ld."""
    m, n, k, ld = 3, 4, 5, 7
    a = _rng_complex(100, np.complex128, 1)
    b = _rng_complex(100, np.complex128, 2)
    c = np.zeros(60, np.complex128)
    a_dims = (m, k) if transa == 0 else (k, m)
    b_dims = (k, n) if transb == 0 else (n, k)
    gemm = block_update.Gemm(transa, transb, m, n, k, "a", np.array([0, 50]), ld,
                             "b", np.array([3, 40]), ld, "c", np.array([1, 30]), ld)
    block_update.gemm_batched(gemm, {"a": a, "b": b, "c": c})
    op = {0: lambda x: x, 1: lambda x: x.T, 2: lambda x: x.conj().T}

    def matrix(buf, off, rows, cols):
        return np.array([[buf[off + i + j * ld] for j in range(cols)] for i in range(rows)])

    for a_off, b_off, c_off in zip(gemm.a_off, gemm.b_off, gemm.c_off):
        want = op[transa](matrix(a, a_off, *a_dims)) @ op[transb](matrix(b, b_off, *b_dims))
        np.testing.assert_allclose(matrix(c, c_off, m, n), want, rtol=1e-14)
    assert np.count_nonzero(c) == 2 * m * n    # nothing written outside the two outputs


def test_gemm_outside_its_buffer_raises():
    gemm = block_update.Gemm(0, 0, 2, 2, 2, "a", np.array([0]), 2, "a", np.array([0]), 2,
                             "c", np.array([1]), 2)
    with pytest.raises(IndexError, match="outside"):
        block_update.gemm_batched(gemm, {"a": np.ones(4), "c": np.zeros(4)})


def _dense_step(a, ut, g, dest, block):
    """The oracle: A ← P Gᴴ A Ḡ Pᵀ, Uᵀ ← P Gᵀ Uᵀ with G = diag(G_p) in slot order and P
    moving block slot m to slot dest[m]."""
    big = scipy.linalg.block_diag(*g)
    index = np.empty(len(a), np.int64)
    for m, d in enumerate(dest):                 # new row d·b + i is old row m·b + i
        index[d * block:(d + 1) * block] = np.arange(m * block, (m + 1) * block)
    a_new = (big.conj().T @ a @ big.conj())[index][:, index]
    return a_new, (big.T @ ut)[index]


def _steps_input(size, block, dtype, seed):
    pairs = chess_tournament(size // block)
    plan = block_update.Plan(size, block, pairs)
    a = _rng_complex((size, size), dtype, seed)
    a = np.ascontiguousarray(a + a.T)
    ut = np.ascontiguousarray(testing.haar_orthogonal(size, dtype=dtype, seed=seed + 1))
    gs = [_unitaries(size // (2 * block), 2 * block, dtype, seed + 10 * s)
          for s in range(len(plan.steps))]
    return plan, a, ut, gs


def _given(gs, s):
    def solve(a, out):
        out[...] = gs[s]
    return solve


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size, block", SHAPES)
def test_host_update_is_the_dense_congruence(size, block, dtype):
    plan, a, ut, gs = _steps_input(size, block, dtype, seed=size + block)
    ref_a, ref_ut = a.astype(np.complex128), ut.astype(np.complex128)
    update = block_update.HostUpdate(plan, a.copy(), ut)
    # Two sweeps (each back in step 0's order), the second with other G's: HostUpdate
    # keeps its operands from the first sweep, and they must see the new G's.
    steps = len(plan.steps)
    for k in range(2 * steps):
        s = k % steps
        given = gs[s] if k < steps else gs[steps - 1 - s]
        update.step(s, lambda a, out, given=given: out.__setitem__(Ellipsis, given))
        ref_a, ref_ut = _dense_step(ref_a, ref_ut, given, plan.dest[s], block)
        scale = np.abs(ref_a).max()
        np.testing.assert_allclose(update.a, ref_a, rtol=0, atol=_tol(dtype, size) * scale)
        np.testing.assert_allclose(update.vectors(), ref_ut, rtol=0, atol=_tol(dtype, size))


@pytest.mark.gpu
@pytest.mark.parametrize("overlap", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size, block", SHAPES + [(512, 32)])
def test_device_update_matches_host(size, block, dtype, overlap):
    """cuBLAS gemmBatched on the plan's pointers (U on a second stream or not) against
    the NumPy emulation, every step of a sweep, identical input."""
    import cupy

    from gpusvd.takagi import block_update_cuda

    plan, a, ut, gs = _steps_input(size, block, dtype, seed=size + block)
    host = block_update.HostUpdate(plan, a.copy(), ut)
    device = block_update_cuda.DeviceUpdate(plan, cupy.asarray(a), cupy.asarray(ut), overlap)
    for s in range(len(plan.steps)):
        host.step(s, _given(gs, s))
        device.step(s, lambda a_dev, out, s=s: out.set(gs[s]))
        scale = np.abs(host.a).max()
        np.testing.assert_allclose(device.a.get(), host.a, rtol=0,
                                   atol=_tol(dtype, size) * scale)
        np.testing.assert_allclose(device.vectors().get(), host.vectors(), rtol=0,
                                   atol=_tol(dtype, size))
