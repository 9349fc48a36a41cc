"""quic/kernels/weighted_means.cu compiled for the host with g++ (tests/jacobi's
host_kernel): the grid run block by block, thread by thread (row_dots with one thread a
block), so its sums are those of the twins means_cuda.weighted_means_host and
row_dots_host, bit for bit (no fma contracted)."""

import ctypes
import pathlib

import numpy as np

from ..jacobi import host_kernel

KERNEL = (pathlib.Path(__file__).resolve().parents[2]
          / "src/gpusvd/quic/kernels/weighted_means.cu")
THREADS = 256

SHIM = """
#define __device__
#define __global__
#define __restrict__
#define __shared__
struct Dim { unsigned x, y; };
static Dim threadIdx, blockIdx, blockDim;
inline void __syncthreads() {}
#include "KERNEL"
template <typename T>
static void dots(const T *a, long long n, long long ld, const long long *rows,
                 const long long *partners, long long count, double *out)
{
    blockDim.x = 1;
    threadIdx.x = 0;
    for (long long t = 0; t < count; ++t) {
        blockIdx.x = (unsigned)t;
        row_dots<T>(a, n, ld, rows, partners, out);
    }
}
extern "C" void dots_float(const float *a, long long n, long long ld, const long long *r,
                           const long long *p, long long count, double *out)
{ dots(a, n, ld, r, p, count, out); }
extern "C" void dots_double(const double *a, long long n, long long ld, const long long *r,
                            const long long *p, long long count, double *out)
{ dots(a, n, ld, r, p, count, out); }
template <typename T>
static void run(const T *a, long long n, long long ld, const long long *rows,
                const long long *piece_start, long long pieces, const double *w,
                const T *center, double *partial, const long long *first_piece,
                long long children, T *out)
{
    blockDim.x = THREADS;
    const unsigned tiles = (unsigned)((n + THREADS - 1) / THREADS);
    for (unsigned y = 0; y < pieces; ++y)
        for (unsigned x = 0; x < tiles; ++x)
            for (unsigned t = 0; t < THREADS; ++t) {
                blockIdx.x = x; blockIdx.y = y; threadIdx.x = t;
                piece_sums<T>(a, n, ld, rows, piece_start, w, center, partial);
            }
    for (unsigned y = 0; y < children; ++y)
        for (unsigned x = 0; x < tiles; ++x)
            for (unsigned t = 0; t < THREADS; ++t) {
                blockIdx.x = x; blockIdx.y = y; threadIdx.x = t;
                child_sums<T>(partial, n, first_piece, out);
            }
}
extern "C" void means_float(const float *a, long long n, long long ld, const long long *r,
                            const long long *ps, long long p, const double *w,
                            const float *c, double *partial, const long long *fp,
                            long long k, float *out)
{ run(a, n, ld, r, ps, p, w, c, partial, fp, k, out); }
extern "C" void means_double(const double *a, long long n, long long ld,
                             const long long *r, const long long *ps, long long p,
                             const double *w, const double *c, double *partial,
                             const long long *fp, long long k, double *out)
{ run(a, n, ld, r, ps, p, w, c, partial, fp, k, out); }
"""


def build(folder):
    """The host build's library, or None when g++ is not on PATH."""
    text = SHIM.replace("KERNEL", str(KERNEL)).replace("THREADS", str(THREADS))
    return host_kernel.compile_host(folder, text, "weighted_means")


def weighted_means(lib, a, rows, starts, weights, center, piece_rows):
    """The host build with means_cuda.weighted_means's contract (NumPy arrays)."""
    from gpusvd.quic import means_cuda

    a = np.ascontiguousarray(a)
    n = a.shape[1]
    piece_start, first_piece = means_cuda.pieces(starts, piece_rows)
    count, children = len(piece_start) - 1, len(starts) - 1
    center = np.zeros(n, a.dtype) if center is None else np.ascontiguousarray(center, a.dtype)
    partial = np.zeros((max(count, 1), n))
    out = np.empty((children, n), a.dtype)
    keep = [np.ascontiguousarray(x, np.int64) for x in (rows, piece_start, first_piece)]
    w = np.ascontiguousarray(weights, np.float64)
    fn = lib.means_float if a.dtype == np.float32 else lib.means_double
    p = host_kernel._pointer
    fn(p(a), ctypes.c_longlong(n), ctypes.c_longlong(n), p(keep[0]), p(keep[1]),
       ctypes.c_longlong(count), p(w), p(center), p(partial), p(keep[2]),
       ctypes.c_longlong(children), p(out))
    return out


def row_dots(lib, a, rows, partners):
    """The host build's row_dots (one thread a block), as means_cuda.row_dots."""
    a = np.ascontiguousarray(a)
    keep = [np.ascontiguousarray(x, np.int64) for x in (rows, partners)]
    out = np.empty(len(keep[0]))
    fn = lib.dots_float if a.dtype == np.float32 else lib.dots_double
    p = host_kernel._pointer
    fn(p(a), ctypes.c_longlong(a.shape[1]), ctypes.c_longlong(a.shape[1]), p(keep[0]),
       p(keep[1]), ctypes.c_longlong(len(out)), p(out))
    return out
