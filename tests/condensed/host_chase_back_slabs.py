"""condensed/kernels/chase_back_slabs.cu compiled for the host with g++: one thread per
block, the blocks (column slabs) one after the other (they share nothing), with the stubs
of tests/jacobi/host_kernel.py and nothing contracted into fma."""

import ctypes
import pathlib
import sys

import numpy as np

_ROOT = pathlib.Path(__file__).resolve().parents[2]
KERNEL = _ROOT / "src/gpusvd/condensed/kernels/chase_back_slabs.cu"

sys.path.insert(0, str(_ROOT / "tests/jacobi"))
import host_kernel as _HOST  # noqa: E402  (the CUDA stubs of every host build)

SHIM = _HOST.STUBS + """
#include "KERNEL"
template <typename T>
static void run(T *work, long long ld, int m, int n, const T *vs, const T *wy, int last,
                int blocks, int b, int g)
{
    threadIdx.x = 0;
    blockDim.x = 1;
    for (int slab = 0; slab * SLAB_COLS < m; ++slab) {
        blockIdx.x = slab;
        chase_back_slabs<T>(work, ld, m, n, vs, wy, last, blocks, b, g);
    }
}
#define RUN(NAME, T)                                                                      \\
    extern "C" void NAME(T *work, long long ld, int m, int n, const T *vs, const T *wy,    \\
                         int last, int blocks, int b, int g)                               \\
    { run<T>(work, ld, m, n, vs, wy, last, blocks, b, g); }
RUN(slabs_float32, float)
RUN(slabs_float64, double)
"""


def build(folder):
    """The ctypes library of the host build in ``folder``, or None without g++."""
    return _HOST.compile_host(folder, SHIM.replace("KERNEL", str(KERNEL)), "chase_back_slabs")


def apply_slabs(lib):
    """The host build with the contract of chase_back_cuda.apply_slabs, on NumPy arrays."""

    def run(work, vs, wy, last, blocks, b, g, n):
        vs, wy = np.ascontiguousarray(vs), np.ascontiguousarray(wy)
        if not work.flags.c_contiguous:
            raise ValueError("the host build reads a C-ordered work")
        m = work.shape[1]
        pointer = ctypes.c_void_p
        getattr(lib, f"slabs_{work.dtype.name}")(
            pointer(work.ctypes.data), ctypes.c_longlong(m), ctypes.c_int(m),
            ctypes.c_int(n), pointer(vs.ctypes.data), pointer(wy.ctypes.data),
            ctypes.c_int(last), ctypes.c_int(blocks), ctypes.c_int(b), ctypes.c_int(g))
    return run
