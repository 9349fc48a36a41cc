"""condensed/kernels/panel_qr.cu compiled for the host with g++: the cooperative kernel run
on the CPU, each thread block a host thread of one CUDA thread and the grid barrier a
``std::barrier``, so that several blocks really run at once and meet at every barrier.

``__shared__`` is thread-local (one copy per block), ``__syncthreads`` nothing (one thread
per block), and nothing is contracted into fma (``-ffp-contract=off``). Needs g++ with
C++20 (``std::barrier``); :func:`build` returns None where g++ is missing.
"""

import ctypes
import pathlib
import shutil
import subprocess
import sys

import numpy as np

_ROOT = pathlib.Path(__file__).resolve().parents[2]
KERNEL = _ROOT / "src/gpusvd/condensed/kernels/panel_qr.cu"
# tests/jacobi's host_kernel (built_or_skip) for the tests that import this module.
sys.path.insert(0, str(_ROOT / "tests/jacobi"))

SOURCE = """
#include <barrier>
#include <cmath>
#include <thread>
#include <vector>
using std::copysign; using std::fabs; using std::fmax; using std::hypot; using std::sqrt;
#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static thread_local
struct Dim { unsigned x; };
static thread_local Dim threadIdx, blockIdx;
static Dim blockDim, gridDim;
inline void __syncthreads() {}
static std::barrier<> *grid_barrier;
struct host_grid { void sync() const { grid_barrier->arrive_and_wait(); } };
#include "KERNEL"
template <typename T>
static void run(T *a, long long rs, long long cs, int m, int nb, T *tau, double *work,
                int blocks)
{
    std::barrier<> barrier(blocks);
    grid_barrier = &barrier;
    blockDim.x = 1;
    gridDim.x = blocks;
    std::vector<std::thread> pool;
    for (int b = 0; b < blocks; ++b)
        pool.emplace_back([=] {
            threadIdx.x = 0;
            blockIdx.x = b;
            panel_qr<T>(a, rs, cs, m, nb, tau, work);
        });
    for (auto &t : pool) t.join();
}
extern "C" void panel_qr_float64(double *a, long long rs, long long cs, int m, int nb,
                                 double *tau, double *work, int blocks)
{ run(a, rs, cs, m, nb, tau, work, blocks); }
extern "C" void panel_qr_float32(float *a, long long rs, long long cs, int m, int nb,
                                 float *tau, double *work, int blocks)
{ run(a, rs, cs, m, nb, tau, work, blocks); }
"""

MAX_COLS = 32   # QR_MAX_COLS
SLOTS = MAX_COLS + 1
PER_THREAD = 32  # QR_PER_THREAD: one thread per host block, so at most this many blocks


def build(folder):
    """The ctypes library of the host build in ``folder``, or None without g++."""
    if shutil.which("g++") is None:
        return None
    source = folder / "panel_qr.cpp"
    source.write_text(SOURCE.replace("KERNEL", str(KERNEL)))
    library = folder / "libpanel_qr.so"
    subprocess.run(["g++", "-O2", "-std=c++20", "-pthread", "-ffp-contract=off", "-fPIC",
                    "-shared", str(source), "-o", str(library)], check=True,
                   capture_output=True, timeout=180)
    return ctypes.CDLL(str(library))


def panel_qr(lib, view, blocks):
    """geqrf on the NumPy view ``view`` (m × nb, nb ≤ 32, float32 or float64, any strides)
    in place by the host build with ``blocks`` blocks; returns τ (min(m, nb) entries)."""
    m, nb = view.shape
    if nb > MAX_COLS or not 1 <= blocks <= PER_THREAD:
        raise ValueError(f"the host build takes nb <= {MAX_COLS} and 1 .. {PER_THREAD} "
                         f"blocks, got nb = {nb}, {blocks} blocks")
    item = view.itemsize
    rs, cs = view.strides[0] // item, view.strides[1] // item
    tau = np.zeros(min(m, nb), view.dtype)
    work = np.zeros((3 * blocks + 2) * SLOTS)
    base = view.__array_interface__["data"][0]
    getattr(lib, f"panel_qr_{view.dtype.name}")(
        ctypes.c_void_p(base), ctypes.c_longlong(rs), ctypes.c_longlong(cs),
        ctypes.c_int(m), ctypes.c_int(nb), tau.ctypes.data_as(ctypes.c_void_p),
        work.ctypes.data_as(ctypes.c_void_p), ctypes.c_int(blocks))
    return tau
