"""condensed/kernels/sym_bulge.cu compiled for the host with g++: the CUDA source run on
the CPU, as host_bulge.py runs bulge.cu (its stubs and schedules).

One thread per block: the warp is one lane, so every loop of a task runs sequentially,
with the same operations in the same order as the Numba loop and the same C library
hypot, so the result must be the Numba loop's bit for bit. Two schedules:

* ``kernel``: the persistent kernel itself, one block, which takes the sweeps from the
  ticket one after the other (its waits are always satisfied);
* ``interleaved``: a wavefront of at most ``window`` sweeps in flight, each step running
  the next task of a random in-flight sweep whose dependency is met, as concurrent
  blocks may: the kernel's lag, or a given one, to show that a smaller one races.
"""

import pathlib

import host_bulge
import host_kernel  # tests/jacobi, on sys.path once host_bulge is imported

KERNEL = (pathlib.Path(__file__).resolve().parents[2]
          / "src/gpusvd/condensed/kernels/sym_bulge.cu")

SHIM = host_bulge.CHASE_STUBS + f'#include "{KERNEL}"\n' + host_bulge.SCHEDULES + r"""
template <typename T>
static void kernel(T *ab, int n, int b, T *v, T *tau, int steps)
{
    std::vector<int> sync = one_block(n);
    sym_chase_band<T>(ab, n, b, sync.data(), v, tau, steps);
}
template <typename T>
static int wavefront(T *ab, int n, int b, T *v, T *tau, int steps, unsigned seed, int window,
                     int lag)
{
    const Band<T> a = {ab, 2LL * b, n, b, v, tau, steps};
    const Scratch<T> w = scratch<T>(shared_raw, b);
    return interleaved(n, [&](int s, int h) { return chase_task(a, s, h, w); }, seed, window,
                       lag < 0 ? CHASE_LAG : lag);
}
#define CHASE(SUFFIX, T)                                                                   \
    extern "C" void kernel_##SUFFIX(T *ab, int n, int b, T *v, T *tau, int steps)          \
    { kernel<T>(ab, n, b, v, tau, steps); }                                                \
    extern "C" int interleaved_##SUFFIX(T *ab, int n, int b, T *v, T *tau, int steps,      \
                                        unsigned seed, int window, int lag)                \
    { return wavefront<T>(ab, n, b, v, tau, steps, seed, window, lag); }
CHASE(float32, float)
CHASE(float64, double)
"""


def build(folder):
    """The host build as ``chase(ab, b, v, tau, record, schedule=None)``
    (:func:`host_bulge.chase_function`), the contract of
    :func:`gpusvd.condensed.sym_bulge._chase` on NumPy arrays, or None when g++ is not on
    PATH."""
    lib = host_kernel.compile_host(folder, SHIM, "sym_bulge")
    return None if lib is None else host_bulge.chase_function(lib, lambda b: 2 * b)
