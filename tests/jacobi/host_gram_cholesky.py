"""kernels/gram_cholesky.cu compiled for the host with g++ (the stubs of host_kernel.py).

One thread per block: every loop of the kernel runs sequentially, the same double
arithmetic as on the GPU except for the GPU's fma.
"""

import ctypes
import pathlib

import numpy as np

from .host_kernel import STUBS, _SHARED, compile_host

KERNEL = (pathlib.Path(__file__).resolve().parents[2]
          / "src/gpusvd/jacobi/kernels/gram_cholesky.cu")

SHIM = STUBS + f"""
#include "{KERNEL}"
template <typename T>
static void run(int batch, const typename Wide<T>::Type *h, T *r, T *v, int k, int kv,
                double shift)
{{
    threadIdx.x = 0;
    blockDim.x = 1;
    for (int b = 0; b < batch; ++b) {{
        blockIdx.x = b;
        gram_cholesky<T>(h, r, v, k, kv, shift);
    }}
}}
#define GC(NAME, T)                                                                      \\
    extern "C" void NAME(int batch, const Wide<T>::Type *h, T *r, T *v, int k, int kv,  \\
                         double shift)                                                  \\
    {{ run<T>(batch, h, r, v, k, kv, shift); }}
GC(gc_float32, float)
GC(gc_float64, double)
GC(gc_complex64, Complex<float>)
GC(gc_complex128, Complex<double>)
"""


def build(folder):
    """The host build's ``gram_cholesky(h, shift, dtype, kv)`` on NumPy stacks (the
    contract of gpusvd.jacobi.gram_cholesky_cuda.gram_cholesky), or None without g++."""
    lib = compile_host(folder, SHIM, "gram_cholesky")
    if lib is None:
        return None

    def gram_cholesky(h, shift, dtype, kv=0):
        dtype = np.dtype(dtype)
        batch, k, _ = h.shape
        h = np.ascontiguousarray(h, np.complex128 if dtype.kind == "c" else np.float64)
        if ((k | 1) * k * h.itemsize + 8 * k) > _SHARED:
            raise ValueError("Gram matrix too large for the host build's shared memory")
        r = np.empty((batch, k, k), dtype)
        v = np.empty((batch, kv, kv), dtype) if kv else None
        getattr(lib, f"gc_{dtype.name}")(
            ctypes.c_int(batch), h.ctypes.data_as(ctypes.c_void_p),
            r.ctypes.data_as(ctypes.c_void_p),
            None if v is None else v.ctypes.data_as(ctypes.c_void_p),
            ctypes.c_int(k), ctypes.c_int(kv), ctypes.c_double(shift))
        return r if v is None else (r, v)

    return gram_cholesky
