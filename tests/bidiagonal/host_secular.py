"""bidiagonal/kernels/secular.cu compiled for the host with g++ (the stubs of
tests/jacobi/host_kernel.py): the CUDA source run on the CPU.

One "thread" per block (``blockDim.x = 1``), so a root's group has one lane: the sums over
the poles run in the Numba twin's order, the shuffles are never called, and g++ with
``-ffp-contract=off`` does the kernel's IEEE operations in the kernel's order (mul_rn a
plain product), so the roots and step counts must be secular_svd._root's bit for bit.
"""

import ctypes
import pathlib

import numpy as np

from ..jacobi import host_kernel as _HOST  # the CUDA stubs of every host build

_ROOT = pathlib.Path(__file__).resolve().parents[2]
KERNEL = _ROOT / "src/gpusvd/bidiagonal/kernels/secular.cu"

SHIM = _HOST.STUBS + f"""
#include "{KERNEL}"
static void one_lane(long long problem, long long root)
{{
    blockDim.x = 1;
    threadIdx.x = 0;
    blockIdx.x = (unsigned)root;
    blockIdx.y = (unsigned)problem;
}}
extern "C" void svd(const double *d, const double *z, const long long *starts,
                    const long long *ks, long long count, long long max_steps, double eps,
                    long long *origin, double *tau, long long *steps)
{{
    for (long long p = 0; p < count; ++p)
        for (long long i = 0; i < ks[p]; ++i)
            one_lane(p, i), svd_secular_roots<double>(d, z, starts, ks, max_steps, eps,
                                                      origin, tau, steps);
}}
"""


def _pointer(x):
    return x.ctypes.data_as(ctypes.c_void_p)


class HostSecular:
    """The host build's kernel with the contract of secular_svd_cuda's launcher, on NumPy
    arrays: (origin, tau, steps)."""

    def __init__(self, lib):
        self._lib = lib
        pointer, long, double = ctypes.c_void_p, ctypes.c_longlong, ctypes.c_double
        lib.svd.argtypes = [pointer] * 4 + [long, long, double] + [pointer] * 3

    @staticmethod
    def _outputs(k):
        return np.empty(k, np.int64), np.empty(k), np.empty(k, np.int64)

    def svd_roots(self, d, z, max_steps, eps, starts=None, sizes=None):
        """One problem, or several laid end to end (``starts``, ``sizes``) in one call."""
        d, z = np.ascontiguousarray(d, np.float64), np.ascontiguousarray(z, np.float64)
        if sizes is None:
            starts, sizes = [0], [d.shape[0]]
        starts, sizes = np.asarray(starts, np.int64), np.asarray(sizes, np.int64)
        out = self._outputs(d.shape[0])
        self._lib.svd(_pointer(d), _pointer(z), _pointer(starts), _pointer(sizes),
                      len(sizes), max_steps, eps, *map(_pointer, out))
        return out


def build(folder):
    """Compile the kernel file for the host in ``folder``: a :class:`HostSecular`, or None
    when g++ is not on PATH."""
    lib = _HOST.compile_host(folder, SHIM, "secular")
    return None if lib is None else HostSecular(lib)
