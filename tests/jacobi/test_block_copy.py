"""Gathers and scatters of block-columns (blocked._gather/_scatter, block_copy_cuda.py).

On the CPU they are NumPy fancy indexing; on the GPU (marked gpu) the copy kernel must
give exactly what fancy indexing gives, for 16-byte and 4-byte copy units.
"""

import numpy as np
import pytest

from gpusvd.jacobi import blocked


def _case(dtype, blocks, width, length, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((blocks * width, length)).astype(dtype)
    order = rng.permutation(blocks)[: 2 * (blocks // 2)].reshape(-1, 2)
    cols = (order[..., None] * width + np.arange(width)).reshape(len(order), -1)
    return a, cols, order.reshape(-1).astype(np.int32)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_host_gather_scatter_round_trip(dtype):
    a, cols, blks = _case(dtype, 8, 3, 5)
    x = blocked._gather(np, a, cols, blks, 3)
    assert x.shape == (4, 6, 5)
    np.testing.assert_array_equal(x[1, 3:], a[blks[3] * 3:(blks[3] + 1) * 3])
    b = np.zeros_like(a)
    blocked._scatter(np, b, cols, blks, 3, 2 * x)
    np.testing.assert_array_equal(b, 2 * a)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("blocks,width,length", [(8, 32, 100), (6, 3, 5), (130, 32, 4097)])
def test_gpu_copy_kernel_equals_fancy_indexing(dtype, blocks, width, length):
    import cupy as cp

    a, cols, blks = _case(dtype, blocks, width, length, seed=blocks)
    ad, cols_d, blks_d = cp.asarray(a), cp.asarray(cols), cp.asarray(blks)
    x = blocked._gather(cp, ad, cols_d, blks_d, width)
    np.testing.assert_array_equal(x.get(), a[cols])
    b = cp.zeros_like(ad)
    blocked._scatter(cp, b, cols_d, blks_d, width, 3 * x)
    expect = np.zeros_like(a)
    expect[cols] = 3 * a[cols]
    np.testing.assert_array_equal(b.get(), expect)
