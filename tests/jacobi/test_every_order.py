"""Every order n = 1…70: the zero-column padding to a supported strategy order.

R∥/C∥ exist only for orders 2^k·o with o <= 9 (and every parallel strategy only for
even orders), so most n reach the inner Jacobi filled with zero columns, on the
pointwise path (n <= 2b) and, for a block width b whose 2b is unsupported, inside every
block pair (:mod:`gpusvd.jacobi.padding`). ``TestEveryOrderGPU`` repeats them on CuPy
input (the CUDA inner kernel with the same padded tables).
"""

import numpy as np
import pytest

from gpusvd._core import tunables
from gpusvd.jacobi import hsvd
from gpusvd.jacobi.padding import kept_columns, pad_columns
from gpusvd.jacobi.strategies import NAMES, padded_order, pivot_strategy
from gpusvd.testing import random_matrix
from gpusvd.testing.metrics import orthogonality, relative_sv_error, svd_residual
from .jacobi_backends import OnCPU, OnGPU

ORDERS = range(1, 71)
# Complex wide matrices up to this order: the pointwise path of the default b = 16 and the
# first blocked orders (tiny complex GEMMs of the blocked path are slow with OpenBLAS
# threads on a busy 2-core machine; the real cases cover the larger orders).
COMPLEX_UP_TO = 36
# Strategies other than the default, over fewer orders (the full range costs seconds each).
OTHER_ORDERS = [1, 2, 3, 11, 13, 22, 26, 30, 31, 45, 67]


@pytest.mark.parametrize("name", NAMES)
def test_padded_order_is_the_smallest_supported(name):
    for n in range(1, 80):
        k = padded_order(name, n)
        assert k >= max(n, 2)
        pivot_strategy(name, k)                        # supported
        for smaller in range(max(n, 2), k):            # and nothing below it is
            with pytest.raises(ValueError):
                pivot_strategy(name, smaller)


def test_kept_columns_finds_the_padding_after_swaps():
    g, v = pad_columns(np.arange(1.0, 4.0)[None, None, :].repeat(3, axis=1), 6, np)
    assert g.shape == (1, 6, 6) and (g[:, 3:] == 0).all() and (g[:, :, 3:] == 0).all()
    v[0] = v[0][:, [3, 0, 4, 1, 5, 2]]                 # padding moved to 0, 2, 4
    assert kept_columns(v, 3, np).tolist() == [[1, 3, 5]]


class TestEveryOrder(OnCPU):
    def check(self, a, **kw):
        u, s, vh = self.svd(a, full_matrices=False, **kw)
        m, n = a.shape
        assert u.shape == (m, min(m, n)) and vh.shape == (min(m, n), n)
        assert (np.diff(s) <= 0).all()
        assert svd_residual(a, u, s, vh) < 4
        assert orthogonality(u) < 4 and orthogonality(vh, rows=True) < 4
        assert relative_sv_error(s, np.linalg.svd(a, compute_uv=False)) < 20 * max(m, n)

    @pytest.mark.parametrize("n", ORDERS)
    def test_square_tall_and_wide(self, n):
        self.check(random_matrix(n, n, seed=n))
        self.check(random_matrix(n + 3, n, seed=n + 100), precondition=False)
        wide = np.complex128 if n <= COMPLEX_UP_TO else np.float64
        self.check(random_matrix(n, n + 1, dtype=wide, seed=n + 200))

    @pytest.mark.parametrize("strategy", ["column-reverse", "brent-luk", "modulus",
                                          "row-cyclic"])
    @pytest.mark.parametrize("n", OTHER_ORDERS)
    def test_strategies(self, strategy, n):
        self.check(random_matrix(n + 2, n, seed=n), strategy=strategy, precondition=False)

    @pytest.mark.parametrize("width", [11, 13])        # inner orders 22 and 26: padded
    @pytest.mark.parametrize("n", [5, 22, 23, 40, 61])
    def test_block_widths_of_unsupported_inner_order(self, width, n):
        a = random_matrix(n, n, seed=width * n)
        with tunables.override(jacobi_block_width=width, jacobi_block_width_gpu=width):
            self.check(a)
            self.check(a, variant="block-oriented", shorten="qr")
            self.check(a, strategy="column")

    @pytest.mark.parametrize("n", [1, 3, 11, 22, 27, 45])
    def test_hsvd_odd_and_unsupported_orders(self, n):
        rng = np.random.default_rng(n)
        signs = rng.choice([-1.0, 1.0], n)
        g = random_matrix(n + 1, n, seed=n)
        with tunables.override(jacobi_block_width=11, jacobi_block_width_gpu=11):
            u, s, v, j = (self.get(x) for x in hsvd(self.put(g), signs, device=self.device))
        eps = float(np.finfo(np.float64).eps)
        vn = np.abs(v).max() ** 2
        assert sorted(j) == sorted(signs) and (np.diff(s) <= 0).all()
        assert np.abs(g @ v - u * s).max() < 10 * n * eps * s.max() * np.sqrt(vn)
        assert np.abs(v.T @ np.diag(signs) @ v - np.diag(j)).max() < 10 * n * eps * vn


@pytest.mark.gpu
class TestEveryOrderGPU(OnGPU, TestEveryOrder):
    """Every test of :class:`TestEveryOrder` with CuPy input."""
