"""Same bits, stack or not: a matrix's results do not depend on the stack it came in,
where the guide says so ("Stacks and small matrices on a GPU", the paragraph on bits),
and stay within a few n·ε of each other where it says they differ (the polar method: a
stack takes the batched engine, one matrix the one-matrix driver)."""

import numpy as np
import pytest

import gpusvd
from gpusvd import testing

# On the CPU every method but the polar one decomposes a stack matrix by matrix with the
# same operations as one matrix.
SAME_BITS = ["auto", "lapack", "gr", "jacobi"]


def _stack(dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((5, 12, 9))
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(a.shape)
    return a.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("method", SAME_BITS)
def test_a_matrix_gets_the_same_bits_alone_and_in_a_stack(method, dtype):
    stack = _stack(dtype)
    together = gpusvd.svd(stack, full_matrices=False, method=method, device="cpu")
    values = gpusvd.svdvals(stack, method=method, device="cpu")
    for k, a in enumerate(stack):
        alone = gpusvd.svd(a, full_matrices=False, method=method, device="cpu")
        for x, y in zip(together, alone):
            assert np.array_equal(x[k], y), method
        assert np.array_equal(values[k], gpusvd.svdvals(a, method=method, device="cpu"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_polar_method_alone_and_in_a_stack_agree_to_working_accuracy(dtype):
    stack = _stack(dtype)
    eps = np.finfo(dtype).eps
    s_stack = gpusvd.svdvals(stack, method="polar", device="cpu")
    for k, a in enumerate(stack):
        s = gpusvd.svdvals(a, method="polar", device="cpu")
        assert np.max(np.abs(s - s_stack[k])) <= 10 * max(a.shape) * eps * s[0]
        u, s, vh = gpusvd.svd(a, full_matrices=False, method="polar", device="cpu")
        assert testing.svd_residual(a, u, s, vh) < 30


@pytest.mark.parametrize("method", ["auto", "jacobi", "eigh"])
def test_takagi_gives_a_matrix_the_same_bits_alone_and_in_a_stack(method):
    """On the CPU each method takes a stack matrix by matrix (the eigensolver's batched
    LAPACK call, the sweeps' loop)."""
    stack = np.stack([testing.complex_symmetric(9, seed=k) for k in range(4)])
    s, u = gpusvd.takagi(stack, method=method, device="cpu")
    for k, a in enumerate(stack):
        alone = gpusvd.takagi(a, method=method, device="cpu")
        assert np.array_equal(s[k], alone.S) and np.array_equal(u[k], alone.U), method


@pytest.mark.parametrize("side", ["right", "left"])
def test_polar_and_jacobi_svd_give_a_matrix_the_same_bits_alone_and_in_a_stack(side):
    stack = _stack(np.float64)
    u, p = gpusvd.polar(stack, side=side, device="cpu")
    out = gpusvd.jacobi_svd(stack, device="cpu")
    for k, a in enumerate(stack):
        alone_u, alone_p = gpusvd.polar(a, side=side, device="cpu")
        assert np.array_equal(u[k], alone_u) and np.array_equal(p[k], alone_p)
        alone = gpusvd.jacobi_svd(a, device="cpu")
        assert all(np.array_equal(x[k], y) for x, y in zip(out, alone))
