"""The array backends of the Jacobi test classes: NumPy on the CPU, CuPy on the GPU.

A CPU test class derives from :class:`OnCPU`; its GPU twin derives from :class:`OnGPU`
and the CPU class (in that order), so every test reruns with CuPy input and checks that
the results come back as CuPy arrays.
"""

import numpy as np

from gpusvd import jacobi_svd


class OnCPU:
    device = "cpu"

    def put(self, a):
        return a

    def get(self, x):
        assert isinstance(x, np.ndarray)
        return x

    def svd(self, a, **kw):
        """``jacobi_svd`` on this backend, results as NumPy."""
        out = jacobi_svd(self.put(a), device=self.device, **kw)
        return tuple(map(self.get, out)) if isinstance(out, tuple) else self.get(out)


class OnGPU:
    device = "gpu"

    def put(self, a):
        import cupy
        return cupy.asarray(a)

    def get(self, x):
        import cupy
        assert isinstance(x, cupy.ndarray)
        return x.get()
