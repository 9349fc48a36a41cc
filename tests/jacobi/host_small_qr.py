"""kernels/small_qr.cu compiled for the host with g++ (the stubs of host_kernel.py).

One thread per block: the warp width is 1, so the kernel runs its column loops and
reductions sequentially, the same Householder steps in the same double arithmetic as on the
GPU except for the order of the parallel sums and the GPU's fma.
"""

import ctypes
import pathlib

import numpy as np

from .host_kernel import STUBS, _SHARED, compile_host

KERNEL = (pathlib.Path(__file__).resolve().parents[2]
          / "src/gpusvd/jacobi/kernels/small_qr.cu")

SHIM = STUBS + f"""
#include "{KERNEL}"
template <typename T>
static void run(int batch, const T *a, T *r, T *q, int m, int n, int qcols)
{{
    threadIdx.x = 0;
    blockDim.x = 1;
    for (int b = 0; b < batch; ++b) {{
        blockIdx.x = b;
        small_qr<T>(a, r, q, m, n, qcols);
    }}
}}
#define QR(NAME, T)                                                                     \\
    extern "C" void NAME(int batch, const T *a, T *r, T *q, int m, int n, int qcols)    \\
    {{ run<T>(batch, a, r, q, m, n, qcols); }}
QR(qr_float32, float)
QR(qr_float64, double)
QR(qr_complex64, Complex<float>)
QR(qr_complex128, Complex<double>)
"""


def build(folder):
    """The host build's ``small_qr(a, qcols) -> (q, r)`` on NumPy stacks (the contract of
    gpusvd.jacobi.small_qr_cuda.small_qr), or None when g++ is not on PATH."""
    lib = compile_host(folder, SHIM, "small_qr")
    if lib is None:
        return None

    def small_qr(a, qcols):
        batch, m, n = a.shape
        a = np.ascontiguousarray(a)
        if (m | 1) * max(n, qcols) * a.itemsize + 16 * (n + 1) > _SHARED:
            raise ValueError("matrix too large for the host build's shared memory")
        r = np.empty((batch, n, n), a.dtype)
        q = np.empty((batch, m, max(qcols, 1)), a.dtype)
        getattr(lib, f"qr_{a.dtype.name}")(
            ctypes.c_int(batch), a.ctypes.data_as(ctypes.c_void_p),
            r.ctypes.data_as(ctypes.c_void_p), q.ctypes.data_as(ctypes.c_void_p),
            ctypes.c_int(m), ctypes.c_int(n), ctypes.c_int(qcols))
        return (q if qcols else None), r

    return small_qr
