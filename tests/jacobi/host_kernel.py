"""kernels/inner_jacobi.cu compiled for the host with g++: the CUDA source run on the CPU.

The CUDA keywords and intrinsics are stubbed (one thread per block: ``threadIdx.x = 0``,
``blockDim.x = 1``, the shuffles never called because a group has one lane) and nothing is
contracted into fma (``-ffp-contract=off``), so the device functions compute what they
compute on the GPU except for the order of the parallel sums and the GPU's fma: with one
lane per pivot pair the whole kernel must give the Numba twin's bits. Used by
test_jacobi_rotations_cuda.py (jacobi_rotation on a table) and test_inner_host.py (the
whole inner kernel, and the driver on top of it).
"""

import ctypes
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

from gpusvd.jacobi.inner import _check

KERNEL = (pathlib.Path(__file__).resolve().parents[2]
          / "src/gpusvd/jacobi/kernels/inner_jacobi.cu")
# Bytes of "shared memory" of the host block: g and v of order 128 in complex128.
_SHARED = 1 << 20

# The CUDA keywords and intrinsics for a host build with one thread per block.
STUBS = """
#include <cmath>
using std::sqrt; using std::fabs; using std::copysign;
#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n)
#define __restrict__
#define __shared__
struct Dim { unsigned x, y; };
static Dim threadIdx, blockIdx, blockDim;
alignas(16) unsigned char shared_raw[SHARED];
inline float __fmul_rn(float a, float b) { return a * b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline void __syncthreads() {}
inline int __syncthreads_or(int p) { return p; }
template <typename T> T __shfl_xor_sync(unsigned, T v, int, int) { return v; }
template <typename T> T __shfl_sync(unsigned, T v, int, int) { return v; }
template <typename T> T __ldg(const T *p) { return *p; }
inline unsigned long long atomicAdd(unsigned long long *a, unsigned long long v)
{ unsigned long long old = *a; *a += v; return old; }
"""

SHIM = STUBS + """
#include "KERNEL"
template <typename R>
static void table(int n, const R *a, const R *b, const R *c, const bool *h, R *cs, R *tn)
{ for (int i = 0; i < n; ++i) jacobi_rotation<R>(a[i], b[i], c[i], h[i], cs[i], tn[i]); }
extern "C" void table_float(int n, const float *a, const float *b, const float *c,
                            const bool *h, float *cs, float *tn)
{ table(n, a, b, c, h, cs, tn); }
extern "C" void table_double(int n, const double *a, const double *b, const double *c,
                             const bool *h, double *cs, double *tn)
{ table(n, a, b, c, h, cs, tn); }
extern "C" void table_narrow(int n, const double *ct2, const bool *h, float *cs, float *tn)
{ for (int i = 0; i < n; ++i) rotation_of<float, double>(ct2[i], h[i], cs[i], tn[i]); }
template <typename T>
static void inner(int batch, T *g, T *v, const typename Scalar<T>::Real *signs,
                  const int *pairs, int steps, int per_step, int m, int k, int max_sweeps,
                  typename Scalar<T>::Real tol, double floor2, long long *rotations,
                  int *sweeps)
{
    threadIdx.x = 0;
    blockDim.x = 1;
    for (int b = 0; b < batch; ++b) {
        blockIdx.x = b;
        inner_jacobi<T, 1>(g, v, signs, pairs, steps, per_step, m, k, max_sweeps, tol,
                           floor2, rotations, sweeps);
    }
}
#define INNER(NAME, T)                                                                    \\
    extern "C" void NAME(int batch, T *g, T *v, const Scalar<T>::Real *signs,             \\
                         const int *pairs, int steps, int per_step, int m, int k,          \\
                         int max_sweeps, Scalar<T>::Real tol, double floor2,               \\
                         long long *rotations, int *sweeps)                                \\
    { inner<T>(batch, g, v, signs, pairs, steps, per_step, m, k, max_sweeps, tol, floor2, \\
               rotations, sweeps); }
INNER(inner_float32, float)
INNER(inner_float64, double)
INNER(inner_complex64, Complex<float>)
INNER(inner_complex128, Complex<double>)
"""


def build(folder, kernel=KERNEL):
    """Compile ``kernel`` (the .cu file) for the host in ``folder``; the ctypes library,
    or None when g++ is not on PATH."""
    return compile_host(folder, SHIM.replace("KERNEL", str(kernel)), "inner")


def built_or_skip(build, tmp_path_factory, name):
    """``build(folder)`` of a host build module in a fresh temporary folder ``name``; the
    test is skipped where g++ is not on PATH (``build`` returns None)."""
    built = build(tmp_path_factory.mktemp(name))
    if built is None:
        pytest.skip("g++ is not on PATH")
    return built


def compile_host(folder, text, name):
    """Compile the C++ ``text`` (:data:`STUBS` and a kernel) into ``folder``/lib``name``.so;
    the ctypes library, or None when g++ is not on PATH."""
    if shutil.which("g++") is None:
        return None
    source = folder / f"{name}.cpp"
    source.write_text(text.replace("SHARED", str(_SHARED)))
    library = folder / f"lib{name}.so"
    subprocess.run(["g++", "-O2", "-std=c++17", "-ffp-contract=off", "-fPIC", "-shared",
                    str(source), "-o", str(library)], check=True, capture_output=True,
                   timeout=180)
    return ctypes.CDLL(str(library))


def _pointer(x):
    return x.ctypes.data_as(ctypes.c_void_p)


def inner_jacobi(lib):
    """The host build's inner kernel with the contract of gpusvd.jacobi.inner.inner_jacobi."""

    def run(g, v, signs, pairs, max_sweeps, tol, floor2=0.0):
        _check(g, v, signs, pairs, max_sweeps)
        batch, m, k = g.shape
        if ((m | 1) * k + (k | 1) * k) * g.itemsize > _SHARED:
            raise ValueError("matrices too large for the host build's shared memory")
        pairs = np.ascontiguousarray(pairs, dtype=np.int32)
        signs = np.ascontiguousarray(signs)
        rotations = np.zeros(batch, np.int64)
        sweeps = np.zeros(batch, np.int32)
        real = ctypes.c_float if signs.dtype == np.float32 else ctypes.c_double
        getattr(lib, f"inner_{g.dtype.name}")(
            ctypes.c_int(batch), _pointer(g), _pointer(v), _pointer(signs), _pointer(pairs),
            ctypes.c_int(pairs.shape[0]), ctypes.c_int(pairs.shape[1]), ctypes.c_int(m),
            ctypes.c_int(k), ctypes.c_int(max_sweeps), real(tol), ctypes.c_double(floor2),
            _pointer(rotations), _pointer(sweeps))
        return rotations, sweeps

    return run
