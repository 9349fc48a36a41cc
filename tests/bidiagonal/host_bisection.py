"""bidiagonal/kernels/bisection.cu compiled for the host with g++ (the stubs of
tests/jacobi/host_kernel.py): the CUDA source run on the CPU.

Each "thread" runs the kernel's body for one value index, one after the other; g++ with
``-ffp-contract=off`` does the kernel's IEEE operations in the kernel's order (mul_rn is a
plain product there), so the values must be the Numba twin's bit for bit. The device
functions ``count_below`` and ``node_point`` are exported too, for the case table of the
Sturm count and the tree of a round of counts.
"""

import ctypes
import pathlib

import numpy as np

from ..jacobi import host_kernel as _HOST  # the CUDA stubs of every host build

_ROOT = pathlib.Path(__file__).resolve().parents[2]
KERNEL = _ROOT / "src/gpusvd/bidiagonal/kernels/bisection.cu"


SHIM = _HOST.STUBS + f"""
#include "{KERNEL}"
template <typename R>
static void values(const R *t, long long n, R floor, R pivmin, R top, R two_eps,
                   int max_steps, const R *near, R slack, int bracketed, R *out)
{{
    blockDim.x = 1;
    threadIdx.x = 0;
    for (long long i = 0; i < n; ++i) {{
        blockIdx.x = (unsigned)i;
        bisection_singular_values<R, 1>(t, n, floor, pivmin, top, two_eps, max_steps, near,
                                        slack, bracketed, out);
    }}
}}
#define TWIN(SUFFIX, R)                                                                   \\
    extern "C" void values_##SUFFIX(const R *t, long long n, R floor, R pivmin, R top,    \\
                                    R two_eps, int max_steps, const R *near, R slack,     \\
                                    int bracketed, R *out)                                \\
    {{ values<R>(t, n, floor, pivmin, top, two_eps, max_steps, near, slack, bracketed,      \\
                 out); }}                                                                 \\
    extern "C" long long count_##SUFFIX(const R *t, long long m, R x, R pivmin)           \\
    {{ return count_below<R>(t, m, x, pivmin); }}                                          \\
    extern "C" R point_##SUFFIX(R lo, R hi, int node, int levels)                         \\
    {{ return node_point<R>(lo, hi, node, levels); }}
TWIN(float32, float)
TWIN(float64, double)
"""


def _pointer(x):
    return x.ctypes.data_as(ctypes.c_void_p)


class HostBisection:
    """The host build's kernel and count, with the contracts of the twins."""

    def __init__(self, lib):
        self._lib = lib
        for name, ctype in (("float32", ctypes.c_float), ("float64", ctypes.c_double)):
            getattr(lib, f"values_{name}").argtypes = [
                ctypes.c_void_p, ctypes.c_longlong, ctype, ctype, ctype, ctype, ctypes.c_int,
                ctypes.c_void_p, ctype, ctypes.c_int, ctypes.c_void_p]
            count = getattr(lib, f"count_{name}")
            count.argtypes = [ctypes.c_void_p, ctypes.c_longlong, ctype, ctype]
            count.restype = ctypes.c_longlong
            point = getattr(lib, f"point_{name}")
            point.argtypes = [ctype, ctype, ctypes.c_int, ctypes.c_int]
            point.restype = ctype

    def bisect(self, t, n, b, near=None, slack=0.0):
        """The CUDA twin's contract (``bisection_cuda.bisect``) on a NumPy ``t``."""
        t = np.ascontiguousarray(t)
        out = np.empty(n, t.dtype)
        bracket = out if near is None else np.ascontiguousarray(near, t.dtype)
        getattr(self._lib, f"values_{t.dtype.name}")(
            _pointer(t), n, b.floor, b.pivmin, b.top, b.two_eps, b.max_steps,
            _pointer(bracket), slack, int(near is not None), _pointer(out))
        return out

    def node_point(self, lo, hi, node, levels, dtype):
        """The kernel's point of tree node ``node`` below [lo, hi] (``node_point``)."""
        return getattr(self._lib, f"point_{np.dtype(dtype).name}")(lo, hi, node, levels)

    def count_below(self, t, x, pivmin):
        """The kernel's count at each shift of ``x`` (an array), as the Numba count."""
        t = np.ascontiguousarray(t)
        run = getattr(self._lib, f"count_{t.dtype.name}")
        return np.array([run(_pointer(t), t.shape[0], xl, pivmin) for xl in x], np.int64)


def build(folder):
    """Compile the kernel for the host in ``folder``: a :class:`HostBisection`, or None
    when g++ is not on PATH."""
    lib = _HOST.compile_host(folder, SHIM, "bisection")
    return None if lib is None else HostBisection(lib)
