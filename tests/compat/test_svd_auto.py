"""``svd(method="auto")`` picks what the Notes of ``gpusvd.svd`` say it picks.

The rule, for real and complex input alike: a stack of two or more matrices with
min(M, N) <= 2b (b the Jacobi block width of the device) to the Jacobi SVD, whose
pointwise kernel takes the whole stack in one call; everything else to Golub–Reinsch.
"""

import numpy as np
import pytest

import gpusvd
from gpusvd import _dispatch
from gpusvd._core import tunables
from gpusvd.jacobi import orthogonalize

TWO_B_CPU = 2 * tunables.get().jacobi_block_width


@pytest.mark.parametrize(("shape", "dtype", "expected"), [
    ((500, 400), np.float64, "gr"),
    ((8, 8), np.float32, "gr"),                      # one small matrix: Golub–Reinsch
    ((1, 8, 8), np.float64, "gr"),                   # a stack of one is one matrix
    ((6, 5), np.complex128, "gr"),                   # complex: the same rule
    ((3, 2, 400, 300), np.complex64, "gr"),
    ((4, 8, 8), np.complex128, "jacobi"),
    ((2, 8, 8), np.float64, "jacobi"),               # a stack of small matrices
    ((1000, 200, TWO_B_CPU), np.float32, "jacobi"),  # tall, narrow: min(M, N) counts
    ((7, TWO_B_CPU, 900), np.float64, "jacobi"),
    ((2, TWO_B_CPU + 1, TWO_B_CPU + 1), np.float64, "gr"),
    ((0, 5, 5), np.float64, "gr"),                   # no matrix at all
])
def test_rule(shape, dtype, expected):
    assert _dispatch._choose_method(shape, np.dtype(dtype), np) == expected


def test_boundary_follows_the_block_width():
    with tunables.override(jacobi_block_width=4):
        assert _dispatch._choose_method((5, 8, 8), np.dtype(np.float64), np) == "jacobi"
        assert _dispatch._choose_method((5, 9, 9), np.dtype(np.float64), np) == "gr"


@pytest.fixture
def spy(monkeypatch):
    """Record which method's stack entry ``svd`` calls, and the stack it is given."""
    calls = []
    for name, method in list(_dispatch._METHODS.items()):
        def recorded(stack, xp, *, _name=name, _method=method, **kw):
            calls.append((_name, stack.shape))
            return _method(stack, xp, **kw)
        monkeypatch.setitem(_dispatch._METHODS, name, recorded)
    return calls


@pytest.mark.parametrize(("shape", "complex_", "expected"), [
    ((30, 20), False, "gr"),
    ((30, 20), True, "gr"),
    ((4, 3, 10, 6), False, "jacobi"),
    ((5, 10, 6), True, "jacobi"),
    ((3, 40, 40), False, "gr"),
])
def test_svd_and_svdvals_dispatch(spy, shape, complex_, expected):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if complex_ else 0)
    batch = int(np.prod(shape[:-2]))
    u, s, vh = gpusvd.svd(a, full_matrices=False, device="cpu")
    gpusvd.svdvals(a, device="cpu")
    assert spy == [(expected, (batch, *shape[-2:]))] * 2  # the whole stack in one call
    assert np.allclose(np.matmul(u * s[..., None, :], vh), a)


@pytest.fixture
def pointwise_calls(monkeypatch):
    """The shapes of the stacks given to the batched pointwise Jacobi, call by call."""
    calls = []
    small = orthogonalize.small_jacobi

    def counted(g, *args, **kwargs):
        calls.append(g.shape)
        return small(g, *args, **kwargs)
    monkeypatch.setattr(orthogonalize, "small_jacobi", counted)
    return calls


def test_stack_is_one_batched_jacobi_call(pointwise_calls):
    a = np.random.default_rng(1).standard_normal((500, 12, 9))
    s = gpusvd.svdvals(a, device="cpu")
    assert pointwise_calls == [(500, 9, 9)]  # after preconditioning: X = Rᴴ, 9 × 9
    assert np.allclose(s, np.linalg.svd(a, compute_uv=False))


def test_gr_takes_complex_on_the_cpu():
    z = np.array([[1.0, 2.0j], [0.0, 1.0]], np.complex64)
    u, s, vh = gpusvd.svd(z, method="gr", device="cpu")
    assert u.dtype == vh.dtype == np.complex64 and s.dtype == np.float32
    assert np.allclose(s, [1 + np.sqrt(2), np.sqrt(2) - 1])
    assert np.allclose(u * s @ vh, z, atol=1e-6)
    assert np.allclose(gpusvd.svdvals(z, method="gr", device="cpu"), s)


@pytest.mark.gpu
def test_auto_takes_gr_for_complex_on_the_gpu(spy):
    import cupy

    z = cupy.asarray(np.array([[1.0, 2.0j], [0.0, 1.0]], np.complex64))
    u, s, vh = gpusvd.svd(z)
    assert spy == [("gr", (1, 2, 2))]
    assert isinstance(u, cupy.ndarray) and u.dtype == vh.dtype == cupy.complex64
    assert np.allclose(s.get(), [1 + np.sqrt(2), np.sqrt(2) - 1])
    assert np.allclose((u * s @ vh).get(), z.get(), atol=1e-6)
    assert np.allclose(gpusvd.svdvals(z, method="gr").get(), s.get())


@pytest.mark.gpu
def test_gpu_boundary_and_one_batched_call(pointwise_calls):
    import cupy

    two_b = 2 * tunables.get().jacobi_block_width_gpu
    assert _dispatch._choose_method((2, 300, two_b), np.dtype(np.float64), cupy) == "jacobi"
    assert _dispatch._choose_method((2, 300, two_b + 1), np.dtype(np.float64), cupy) == "gr"
    a = np.random.default_rng(2).standard_normal((2000, 40, 32))
    u, s, vh = gpusvd.svd(cupy.asarray(a), full_matrices=False)
    assert pointwise_calls == [(2000, 32, 32)]  # after preconditioning: X = Rᴴ, 32 × 32
    assert np.allclose(np.matmul(u.get() * s.get()[..., None, :], vh.get()), a)
