"""condensed/kernels/wy.cu compiled for the host with g++ (the stubs of
tests/jacobi/host_kernel.py): the CUDA source run on the CPU, one "thread" after another.

unit_lower's threads are independent, and so are larft_gram's (thread i computes row i
of T from row i and G alone), so running them in sequence computes what the GPU does; g++
with ``-ffp-contract=off`` leaves the products and sums as the source orders them.
"""

import ctypes
import pathlib

import numpy as np

from ..jacobi import host_kernel as _HOST  # the CUDA stubs of every host build

_ROOT = pathlib.Path(__file__).resolve().parents[2]
KERNEL = _ROOT / "src/gpusvd/condensed/kernels/wy.cu"

SHIM = _HOST.STUBS + f"""
static Dim gridDim;
#include "{KERNEL}"
#define TWIN(SUFFIX, T)                                                                   \\
    extern "C" void unit_lower_##SUFFIX(const T *panel, long long ld, int rows, int cols,\\
                                        T *out)                                           \\
    {{                                                                                    \\
        blockDim.x = 1; gridDim.x = 1; blockIdx.x = 0; threadIdx.x = 0;                   \\
        unit_lower<T>(panel, ld, rows, cols, out);                                        \\
    }}                                                                                    \\
    extern "C" void larft_gram_##SUFFIX(const T *g, int ldg, const T *tau, int k, T *t,   \\
                                        int ldt)                                          \\
    {{                                                                                    \\
        blockDim.x = k; blockIdx.x = 0;                                                   \\
        for (int i = 0; i < k; ++i) {{ threadIdx.x = i; larft_gram<T>(g, ldg, tau, k, t, ldt); }} \\
    }}
TWIN(float32, float)
TWIN(float64, double)
TWIN(complex64, Complex<float>)
TWIN(complex128, Complex<double>)
"""


def _pointer(x):
    return x.ctypes.data_as(ctypes.c_void_p)


class HostWY:
    """The host build's two kernels, with the contracts of band_cuda's launchers."""

    def __init__(self, lib):
        self._lib = lib
        for name in ("float32", "float64", "complex64", "complex128"):
            getattr(lib, f"unit_lower_{name}").argtypes = [
                ctypes.c_void_p, ctypes.c_longlong, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
            getattr(lib, f"larft_gram_{name}").argtypes = [
                ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                ctypes.c_int]

    def unit_lower(self, h):
        h = np.asfortranarray(h)
        out = np.empty(h.shape, h.dtype, order="F")
        getattr(self._lib, f"unit_lower_{h.dtype.name}")(
            _pointer(h), max(h.shape[0], 1), h.shape[0], h.shape[1], _pointer(out))
        return out

    def wy_factor(self, v, tau):
        gram = np.asfortranarray(v.conj().T @ v)
        tau = np.ascontiguousarray(tau)
        k = tau.shape[0]
        t = np.full((k, k), np.nan, v.dtype)  # every entry must be written
        getattr(self._lib, f"larft_gram_{v.dtype.name}")(
            _pointer(gram), max(k, 1), _pointer(tau), k, _pointer(t), max(k, 1))
        return t


def build(folder):
    """Compile the kernels for the host in ``folder``: a :class:`HostWY`, or None when g++
    is not on PATH."""
    lib = _HOST.compile_host(folder, SHIM, "wy")
    return None if lib is None else HostWY(lib)
