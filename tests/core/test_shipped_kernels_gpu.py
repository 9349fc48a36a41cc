"""On the GPU: every shipped kernel loads from its binary, and computes what NVRTC's does.

The loader falls back to NVRTC silently (a stale or unloadable binary is slow, not
wrong), so these tests check the fast path is the one taken on the device, and that the
two builds of one kernel agree (to rounding: the NVRTC of CuPy's CUDA may be another
release than the nvcc that built the binary).
"""

import numpy as np
import pytest

from gpusvd._core import kernels


@pytest.mark.gpu
@pytest.mark.parametrize("relpath", sorted(kernels.REGISTRY))
def test_every_instantiation_loads_from_the_shipped_binary(relpath, monkeypatch):
    import cupy

    monkeypatch.delenv("GPUSVD_KERNELS", raising=False)
    for name in kernels.REGISTRY[relpath].names:
        kernels.get_kernel(relpath, name)
    assert kernels.LOADED[relpath, cupy.cuda.Device().id] == "shipped"


@pytest.mark.gpu
def test_shipped_and_nvrtc_builds_agree(monkeypatch):
    import cupy

    from gpusvd.jacobi.inner_cuda import inner_jacobi
    from gpusvd.jacobi.strategies import pivot_strategy

    rng = np.random.default_rng(0)
    g0 = cupy.asarray(rng.standard_normal((8, 40, 32)))
    pairs = cupy.asarray(pivot_strategy("row-reverse", 32))
    results = []
    for mode in ("shipped", "nvrtc"):
        if mode == "nvrtc":
            monkeypatch.setenv("GPUSVD_KERNELS", "nvrtc")
        kernels._module.cache_clear()
        kernels._function.cache_clear()
        g, v = g0.copy(), cupy.broadcast_to(cupy.eye(32), (8, 32, 32)).copy()
        inner_jacobi(g, v, cupy.ones(32), pairs, 20, 1e-15)
        results.append((g.get(), v.get()))
        assert kernels.LOADED["jacobi/kernels/inner_jacobi.cu", g.device.id] == mode
    kernels._module.cache_clear()
    kernels._function.cache_clear()
    for shipped, compiled in zip(*results):
        np.testing.assert_allclose(shipped, compiled, rtol=0, atol=1e-13)
