"""condensed/kernels/sym_bulge.cu compiled for the host with g++ (the stubs of
tests/jacobi/host_kernel.py): the CUDA source run on the CPU, as host_bulge.py runs
bulge.cu.

One thread per block: the warp is one lane, so every loop of a task runs sequentially,
with the same operations in the same order as the Numba loop and the same C library
hypot, so the result must be the Numba loop's bit for bit. Two schedules:

* ``kernel``: the persistent kernel itself, one block, which takes the sweeps from the
  ticket one after the other (its waits are always satisfied);
* ``interleaved``: a wavefront of at most ``window`` sweeps in flight, each step running
  the next task of a random in-flight sweep whose dependency is met, as concurrent
  blocks may: the kernel's rule (``ready``), or a given lag, to show that a smaller one
  races.
"""

import ctypes
import pathlib
import sys

_ROOT = pathlib.Path(__file__).resolve().parents[2]
KERNEL = _ROOT / "src/gpusvd/condensed/kernels/sym_bulge.cu"


sys.path.insert(0, str(_ROOT / "tests/jacobi"))
import host_kernel as _HOST  # noqa: E402  (the CUDA stubs of every host build)

SHIM = _HOST.STUBS + f"""
#include <random>
#include <vector>
inline void __threadfence() {{}}
inline void __syncwarp() {{}}
inline void __nanosleep(unsigned) {{}}
inline int atomicAdd(int *a, int v) {{ int old = *a; *a += v; return old; }}
#include "{KERNEL}"
template <typename T>
static void kernel(T *ab, int n, int b, T *v, T *tau, int steps)
{{
    threadIdx.x = 0;
    blockDim.x = 1;
    blockIdx.x = 0;
    std::vector<int> sync(n - 1, 0);
    sym_chase_band<T>(ab, n, b, sync.data(), v, tau, steps);
}}
// lag < 0: the kernel's rule (ready); otherwise task h waits for task h + lag.
template <typename T>
static int interleaved(T *ab, int n, int b, T *v, T *tau, int steps, unsigned seed,
                       int window, int lag)
{{
    threadIdx.x = 0;
    blockDim.x = 1;
    const Band<T> a = {{ab, 2LL * b, n, b, v, tau, steps}};
    const Scratch<T> w = scratch<T>(shared_raw, b);
    const int sweeps = n - 2;
    std::vector<int> progress(sweeps, 0);
    std::vector<int> flight;   // the sweeps in flight, by ticket order
    std::mt19937 random(seed);
    int ticket = 0, widest = 0;
    while (ticket < sweeps || !flight.empty()) {{
        while ((int)flight.size() < window && ticket < sweeps) flight.push_back(ticket++);
        std::vector<int> ready_now;
        for (int i = 0; i < (int)flight.size(); ++i) {{
            const int s = flight[i];
            const int previous = s == 0 ? SWEEP_DONE : progress[s - 1];
            if (lag < 0 ? ready(previous, progress[s]) : previous > progress[s] + lag)
                ready_now.push_back(i);
        }}
        const int i = ready_now[random() % ready_now.size()];
        const int s = flight[i], h = progress[s];
        int started = 0;   // the sweeps begun and not finished, this one included
        for (int f : flight) started += progress[f] > 0 || f == s;
        widest = started > widest ? started : widest;
        const bool more = chase_task(a, s, h, w);
        progress[s] = more ? h + 1 : SWEEP_DONE;
        if (!more) flight.erase(flight.begin() + i);
    }}
    return widest;
}}
#define CHASE(SUFFIX, T)                                                                   \\
    extern "C" void kernel_##SUFFIX(T *ab, int n, int b, T *v, T *tau, int steps)          \\
    {{ kernel<T>(ab, n, b, v, tau, steps); }}                                               \\
    extern "C" int interleaved_##SUFFIX(T *ab, int n, int b, T *v, T *tau, int steps,      \\
                                        unsigned seed, int window, int lag)                \\
    {{ return interleaved<T>(ab, n, b, v, tau, steps, seed, window, lag); }}
CHASE(float32, float)
CHASE(float64, double)
"""


def build(folder):
    """The host build as ``chase(ab, b, v, tau, record, schedule=None)``, the contract of
    :func:`gpusvd.condensed.sym_bulge._chase` on NumPy arrays (``schedule``: None for
    the kernel, (seed, window) or (seed, window, lag) for an interleaving, which returns
    the most sweeps that were started and unfinished at once), or None when g++ is not
    on PATH."""
    lib = _HOST.compile_host(folder, SHIM, "sym_bulge")
    if lib is None:
        return None

    def chase(ab, b, v, tau, record, schedule=None):
        n = ab.shape[0]
        assert ab.flags.c_contiguous and ab.shape[1] == 2 * b
        if n <= 2 or b <= 1:
            return 0
        steps = v.shape[1] if record else 0
        pointers = [x.ctypes.data_as(ctypes.c_void_p) for x in (ab, v, tau)]
        args = [pointers[0], ctypes.c_int(n), ctypes.c_int(b), *pointers[1:],
                ctypes.c_int(steps)]
        if schedule is None:
            getattr(lib, f"kernel_{ab.dtype.name}")(*args)
            return 1
        seed, window, lag = (*schedule, -1)[:3]
        return getattr(lib, f"interleaved_{ab.dtype.name}")(
            *args, ctypes.c_uint(seed), ctypes.c_int(window), ctypes.c_int(lag))

    return chase
