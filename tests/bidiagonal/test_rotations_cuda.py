"""The CUDA rotation kernel against its Numba twin, and the window grouping it relies on."""

import numpy as np
import pytest

from gpusvd._core import tunables
from gpusvd.bidiagonal.rotations import apply_rotations
from gpusvd.bidiagonal.rotations_cuda import group_windows
from .naive import random_rotation_log


@pytest.mark.parametrize("window", [1, 3, 8, 32])
def test_group_windows_cover_sweeps_in_order(window):
    rng = np.random.default_rng(window)
    sweeps, _ = random_rotation_log(rng, 30, 100)
    sweeps[40:70, 2] = 1  # a long run of one direction, split by the window size
    windows = group_windows(sweeps, window)
    assert windows[0, 0] == 0
    assert np.array_equal(windows[1:, 0], np.cumsum(windows[:-1, 1]))
    assert windows[:, 1].sum() == len(sweeps)
    assert np.all((windows[:, 1] >= 1) & (windows[:, 1] <= window))
    for first, size in windows:
        assert len(set(sweeps[first:first + size, 2])) == 1
    assert len(group_windows(sweeps[:0], window)) == 0


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("window", [8, 16])
@pytest.mark.parametrize("n, k, chunks", [(2, 1, 1), (37, 40, 1), (130, 300, 3), (300, 64, 2)])
def test_cuda_matches_numba(dtype, window, n, k, chunks):
    import cupy

    from gpusvd.bidiagonal.rotations_cuda import RotationPipeline

    rng = np.random.default_rng(n * 7 + k)
    x = rng.standard_normal((n, n)).astype(dtype)
    y = rng.standard_normal((n, n)).astype(dtype)
    dx, dy = cupy.asfortranarray(cupy.asarray(x)), cupy.asfortranarray(cupy.asarray(y))
    with tunables.override(rotation_window=window):
        pipeline = RotationPipeline(dx, dy, k, k * n)
    for _ in range(chunks):
        sweeps, left = random_rotation_log(rng, n, k)
        angle = rng.uniform(-np.pi, np.pi, len(left))
        right = np.stack([np.cos(angle), np.sin(angle)], axis=1)
        apply_rotations(x, sweeps, left.astype(dtype))
        apply_rotations(y, sweeps, right.astype(dtype))
        buf_sweeps, buf_left, buf_right = pipeline.buffers()
        buf_sweeps[:k] = sweeps
        buf_left[:len(left)] = left
        buf_right[:len(left)] = right
        pipeline.submit(k, len(left))
    pipeline.finish()
    # FMA contraction on the GPU: a few ulps per rotation an entry went through.
    tol = 8 * np.sqrt(chunks * k) * np.finfo(dtype).eps
    np.testing.assert_allclose(dx.get(), x, rtol=0, atol=tol * np.abs(x).max())
    np.testing.assert_allclose(dy.get(), y, rtol=0, atol=tol * np.abs(y).max())
