"""The fused GPU panel kernel against the NumPy twin of the bidiagonalization.

Real and complex (zlabrd: complex reflectors, real B); A = Q·B·Pᴴ in every case."""

import numpy as np
import pytest
import scipy.linalg

from gpusvd import testing
from gpusvd.golub_reinsch.bidiagonalize import apply_p, apply_q, bidiagonalize


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("shape, nb", [((70, 70), 8), ((300, 130), 32), ((513, 257), 32),
                                       ((1000, 1000), 64), ((400, 65), 64)])
def test_panel_kernel_matches_numpy(shape, nb, dtype):
    import cupy

    a = testing.random_matrix(*shape, dtype=dtype, seed=shape[0])
    cpu = bidiagonalize(np.asfortranarray(a.copy()), block_size=nb)
    gpu = bidiagonalize(cupy.asfortranarray(cupy.asarray(a)), block_size=nb)
    m, n = shape
    real = np.finfo(dtype).dtype
    eps = np.finfo(dtype).eps
    assert gpu.d.dtype == real and gpu.e.dtype == real and gpu.tauq.dtype == dtype
    # The leading entries of B agree to rounding; later ones inherit the rounding of the
    # whole reduction (B is not a well-conditioned function of A), so compare those
    # through the singular values, which are.
    head = min(n, 8)
    for name in ("d", "e", "tauq"):
        ref, got = getattr(cpu, name)[:head], getattr(gpu, name).get()[:head]
        assert np.abs(got - ref).max() <= 50 * n * eps * max(np.abs(ref).max(), 1), name

    def svals(bd):
        d, e = (v.get() if hasattr(v, "get") else v for v in (bd.d, bd.e))
        return scipy.linalg.svdvals(np.diag(d.astype(float)) + np.diag(e.astype(float), 1))

    # in units of the working precision's eps (sv_error takes it from the dtype)
    assert testing.sv_error(svals(gpu).astype(real), svals(cpu).astype(real)) < 30 * n
    # A = Q·B·Pᴴ on the GPU, whatever the rounding
    b = cupy.zeros((m, n), dtype=dtype, order="F")
    idx = cupy.arange(n)
    b[idx, idx] = gpu.d
    b[idx[:-1], idx[:-1] + 1] = gpu.e
    qb = apply_q(gpu, b)
    p = apply_p(gpu, cupy.asfortranarray(cupy.eye(n, dtype=dtype)))
    assert testing.svd_residual(a, qb, np.ones(n, real), p.conj().T) < 30


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_panel_kernel_deterministic(dtype):
    import cupy

    a = testing.random_matrix(600, 400, dtype=dtype, seed=3)
    a = cupy.asfortranarray(cupy.asarray(a))
    first = bidiagonalize(a.copy(order="F"), block_size=32)
    second = bidiagonalize(a.copy(order="F"), block_size=32)
    for p, q in zip(first, second):
        assert cupy.array_equal(p, q)
