"""The CUDA rotations of deflation (bidiagonal/rotate_pairs_cuda.py) against their Numba
twin, dc_svd._rotate_host, on column-major views with chained pairs."""

import numpy as np
import pytest

from gpusvd.bidiagonal.dc_svd import _rotate_host

pytestmark = pytest.mark.gpu


def _case(rows, cols, count, dtype, seed):
    rng = np.random.default_rng(seed)
    q = np.asfortranarray(rng.standard_normal((rows + 7, cols + 3)).astype(dtype))
    pairs = np.empty((count, 2), np.int64)
    previous = 0
    for t in range(count):  # chains (the second column of one is the first of the next)
        p = previous if t % 2 else int(rng.integers(cols))
        r = int(rng.integers(cols - 1))
        pairs[t] = p, r + (r >= p)
        previous = pairs[t, 1]
    angle = rng.uniform(0, 2 * np.pi, count)
    cs = np.stack([np.cos(angle), np.sin(angle)], axis=1).astype(dtype)
    return q, pairs, cs


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows, cols, count", [(1, 2, 1), (300, 40, 97), (5000, 9, 30),
                                               (2000, 600, 0)])
def test_matches_numba_twin(rows, cols, count, dtype):
    import cupy

    from gpusvd.bidiagonal.rotate_pairs_cuda import rotate_pairs

    q, pairs, cs = _case(rows, cols, count, dtype, seed=rows + count)
    on_device = cupy.asarray(q)
    view = on_device[7:, 3:]  # a view with offset and leading dimension rows + 7
    rotate_pairs(view, pairs, cs)
    _rotate_host(q[7:, 3:], pairs, cs)
    # the same operations per entry; nvcc may fuse c·x + s·y into one fma: a few ulps
    eps = np.finfo(dtype).eps
    got = cupy.asnumpy(on_device)
    assert np.abs(got - q).max() <= 4 * max(count, 1) * eps * np.abs(q).max()
    assert np.array_equal(got[:7], q[:7]) and np.array_equal(got[:, :3], q[:, :3])


def test_row_major_refused():
    import cupy

    from gpusvd.bidiagonal.rotate_pairs_cuda import rotate_pairs

    with pytest.raises(ValueError, match="column-major"):
        rotate_pairs(cupy.zeros((4, 4)), np.array([[0, 1]]), np.array([[1.0, 0.0]]))
