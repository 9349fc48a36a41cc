"""kernels/small_svd.cu compiled for the host with g++ (the stubs of host_kernel.py).

One thread per block and one lane per pivot pair: every loop of the kernel runs
sequentially, with the arithmetic of its CPU twin gpusvd.jacobi.small_svd, so the two
must agree to the bit.
"""

import ctypes
import pathlib

import numpy as np

from gpusvd.jacobi.rotations import orthogonality_tol
from gpusvd.jacobi.small_svd import MAX_SWEEPS, STRATEGY, Shape
from gpusvd.jacobi.strategies import pivot_strategy
from .host_kernel import STUBS, _SHARED, compile_host

KERNEL = (pathlib.Path(__file__).resolve().parents[2]
          / "src/gpusvd/jacobi/kernels/small_svd.cu")

# What small_svd.cu needs beyond the inner kernel's stubs.
EXTRA_STUBS = """
#include <cstring>
#include <math.h>
using std::frexp; using std::ldexp;
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline int atomicOr(int *a, int v) { int old = *a; *a |= v; return old; }
"""

SHIM = STUBS + EXTRA_STUBS + f"""
#include "{KERNEL}"
template <typename T>
static void run(int batch, const T *a, int rows, int cols, int wide, const int *pairs,
                int steps, int k, int max_sweeps, typename Scalar<T>::Real tol, int want_uv,
                int ku, typename Scalar<T>::Real *s, T *u, T *vh, int *status)
{{
    threadIdx.x = 0;
    blockDim.x = 1;
    for (int b = 0; b < batch; ++b) {{
        blockIdx.x = b;
        small_svd<T, 1>(a, rows, cols, wide, pairs, steps, k, max_sweeps, tol, want_uv, ku,
                        s, u, vh, status);
    }}
}}
#define SMALL(NAME, T)                                                                   \\
    extern "C" void NAME(int batch, const T *a, int rows, int cols, int wide,            \\
                         const int *pairs, int steps, int k, int max_sweeps,              \\
                         Scalar<T>::Real tol, int want_uv, int ku, Scalar<T>::Real *s,    \\
                         T *u, T *vh, int *status)                                        \\
    {{ run<T>(batch, a, rows, cols, wide, pairs, steps, k, max_sweeps, tol, want_uv, ku,  \\
              s, u, vh, status); }}
SMALL(small_float32, float)
SMALL(small_float64, double)
SMALL(small_complex64, Complex<float>)
SMALL(small_complex128, Complex<double>)
"""


def build(folder):
    """The host build's ``small_svd(a, compute_uv=, full_matrices=)`` on NumPy stacks,
    with the twin's contract (gpusvd.jacobi.small_svd.small_svd), or None without g++."""
    lib = compile_host(folder, SHIM, "small_svd")
    if lib is None:
        return None

    def small_svd(a, *, compute_uv, full_matrices, max_sweeps=MAX_SWEEPS):
        a = np.ascontiguousarray(a)
        batch, rows, cols = a.shape
        shape = Shape(rows, cols, full_matrices)
        if (max(shape.m, shape.k) + 1) * (shape.k + shape.m) * 4 * a.itemsize > _SHARED:
            raise ValueError("matrix too large for the host build's shared memory")
        real = np.finfo(a.dtype).dtype
        s = np.zeros((batch, shape.n), real)
        u = np.zeros((batch, *shape.u), a.dtype)
        vh = np.zeros((batch, *shape.vh), a.dtype)
        status = np.zeros(1, np.int32)
        pairs = np.ascontiguousarray(pivot_strategy(STRATEGY, shape.k), np.int32)
        c_real = ctypes.c_float if real == np.float32 else ctypes.c_double

        def ptr(x):
            return x.ctypes.data_as(ctypes.c_void_p)

        getattr(lib, f"small_{a.dtype.name}")(
            ctypes.c_int(batch), ptr(a), ctypes.c_int(rows), ctypes.c_int(cols),
            ctypes.c_int(shape.wide), ptr(pairs), ctypes.c_int(pairs.shape[0]),
            ctypes.c_int(shape.k), ctypes.c_int(max_sweeps + 1),
            c_real(orthogonality_tol(a.dtype, shape.m)), ctypes.c_int(compute_uv),
            ctypes.c_int(shape.ku), ptr(s), ptr(u), ptr(vh), ptr(status))
        if not compute_uv:
            return None, s, None, int(status[0])
        return u, s, vh, int(status[0])

    return small_svd
