"""kernels/takagi_steps.cu compiled for the host with g++, each CUDA thread a host thread.

The inner solve ``takagi_solve_block_pairs`` gives its warps different work (warp 0 forms
the next step's rotations while the others update G), so it cannot run as one thread per
block as the Jacobi kernels' host builds do. Here every CUDA thread of a block is a
``std::thread`` with its own ``threadIdx``, ``__syncthreads`` is a ``std::barrier`` of
the block, and blocks run one after another. Nothing is contracted into fma
(``-ffp-contract=off``), so the arithmetic is the Numba twin's operation for operation.
"""

import ctypes
import pathlib
import shutil
import subprocess
import types

import numpy as np

KERNEL = (pathlib.Path(__file__).resolve().parents[2]
          / "src/gpusvd/takagi/kernels/takagi_steps.cu")
_SHARED = 1 << 20  # bytes of the host block's shared memory

SHIM = f"""
#include <barrier>
#include <cmath>
#include <thread>
#include <vector>
#define __device__
#define __global__
#define __forceinline__ inline
#define __align__(n)
#define __restrict__
#define __shared__
struct Dim {{ unsigned x, y; }};
static thread_local Dim threadIdx;
static Dim blockIdx, blockDim;
static std::barrier<> *block_barrier;
alignas(16) unsigned char shared_raw[{_SHARED}];
inline void __syncthreads() {{ block_barrier->arrive_and_wait(); }}
#include "{KERNEL}"
// Every block of a grid of `count`, one after another, each as `threads` host threads.
template <typename Kernel>
static void run_blocks(int count, int threads, Kernel kernel)
{{
    blockDim.x = threads;
    for (int b = 0; b < count; ++b) {{
        blockIdx.x = b;
        std::barrier<> barrier(threads);
        block_barrier = &barrier;
        std::vector<std::thread> team;
        for (int t = 0; t < threads; ++t)
            team.emplace_back([=] {{
                threadIdx.x = t;
                kernel();
            }});
        for (auto &thread : team) thread.join();
    }}
}}
template <typename T>
static void solve(const Complex<T> *a, int n, const int *pairs, int count, int block,
                  int sweeps, int threads, Complex<T> *out, T floor)
{{
    run_blocks(count, threads, [=] {{
        takagi_solve_block_pairs<T>(a, n, pairs, block, sweeps, out, floor);
    }});
}}
template <typename T>
static void one_tile(const Complex<T> *a, int batch, int n, int block, T tol, T eps,
                     int max_sweeps, int threads, T *s, Complex<T> *u, T *status)
{{
    run_blocks(batch, threads, [=] {{
        takagi_solve_one_tile<T>(a, n, block, tol, eps, max_sweeps, s, u, status);
    }});
}}
#define SOLVE(NAME, ONE_TILE, T)                                                        \\
    extern "C" void NAME(const Complex<T> *a, int n, const int *pairs, int count,       \\
                         int block, int sweeps, int threads, Complex<T> *out, T floor)  \\
    {{ solve<T>(a, n, pairs, count, block, sweeps, threads, out, floor); }}             \\
    extern "C" void ONE_TILE(const Complex<T> *a, int batch, int n, int block, T tol,   \\
                             T eps, int max_sweeps, int threads, T *s, Complex<T> *u,   \\
                             T *status)                                                 \\
    {{ one_tile<T>(a, batch, n, block, tol, eps, max_sweeps, threads, s, u, status); }}
SOLVE(solve_complex64, one_tile_complex64, float)
SOLVE(solve_complex128, one_tile_complex128, double)
"""


def _real(dtype):
    """The ctypes scalar of the real type of the complex ``dtype``."""
    return ctypes.c_float if dtype == np.complex64 else ctypes.c_double


def build(folder):
    """The host build's kernels on NumPy arrays, or None when g++ is not on PATH:
    ``solve_block_pairs(a, block_pairs, block, sweeps, threads, floor=0)`` (the contract of
    gpusvd.takagi.steps_cuda.solve_block_pairs) and ``solve_one_tile(a, tol, max_sweeps,
    threads)`` on a stack (of gpusvd.takagi.steps_cuda.solve_one_tile: S, U and status)."""
    if shutil.which("g++") is None:
        return None
    source = folder / "takagi_steps.cpp"
    source.write_text(SHIM)
    library = folder / "libtakagi_steps.so"
    subprocess.run(["g++", "-O2", "-std=c++20", "-ffp-contract=off", "-fPIC", "-shared",
                    "-pthread", str(source), "-o", str(library)], check=True,
                   capture_output=True, timeout=180)
    lib = ctypes.CDLL(str(library))

    def solve_block_pairs(a, block_pairs, block, sweeps, threads, floor=0.0):
        from gpusvd.takagi.steps_cuda import shared_bytes

        if shared_bytes(block, a.dtype) > _SHARED:
            raise ValueError("tile too large for the host build's shared memory")
        a = np.ascontiguousarray(a)
        pairs = np.ascontiguousarray(block_pairs, np.int32)
        width = 2 * block
        out = np.empty((len(pairs), width, width), a.dtype)
        getattr(lib, f"solve_{a.dtype.name}")(
            a.ctypes.data_as(ctypes.c_void_p), ctypes.c_int(a.shape[0]),
            pairs.ctypes.data_as(ctypes.c_void_p), ctypes.c_int(len(pairs)),
            ctypes.c_int(block), ctypes.c_int(sweeps), ctypes.c_int(threads),
            out.ctypes.data_as(ctypes.c_void_p), _real(a.dtype)(floor))
        return out

    def solve_one_tile(a, tol, max_sweeps, threads):
        from gpusvd.takagi.steps_cuda import STATUS, shared_bytes

        batch, n = a.shape[:2]
        block = max(1, -(-n // 2))
        real = np.finfo(a.dtype).dtype
        if shared_bytes(block, a.dtype) + threads * real.itemsize > _SHARED:
            raise ValueError("tile too large for the host build's shared memory")
        a = np.ascontiguousarray(a)
        s, u = np.empty((batch, n), real), np.empty((batch, n, n), a.dtype)
        status = np.empty((batch, STATUS), real)
        scalar = _real(a.dtype)
        getattr(lib, f"one_tile_{a.dtype.name}")(
            a.ctypes.data_as(ctypes.c_void_p), ctypes.c_int(batch), ctypes.c_int(n),
            ctypes.c_int(block), scalar(tol), scalar(np.finfo(real).eps),
            ctypes.c_int(max_sweeps),
            ctypes.c_int(threads), s.ctypes.data_as(ctypes.c_void_p),
            u.ctypes.data_as(ctypes.c_void_p), status.ctypes.data_as(ctypes.c_void_p))
        return s, u, status

    return types.SimpleNamespace(solve_block_pairs=solve_block_pairs,
                                 solve_one_tile=solve_one_tile)
