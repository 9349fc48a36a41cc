"""condensed/kernels/bulge.cu compiled for the host with g++ (the stubs of
tests/jacobi/host_kernel.py): the CUDA source run on the CPU.

One thread per block: the warp is one lane, so every loop of a task runs sequentially,
with the same operations in the same order as the Numba loop and the same C library
hypot, so the result must be the Numba loop's bit for bit. Two schedules:

* ``kernel``: the persistent kernel itself, one block, which takes the sweeps from the
  ticket one after the other (its waits are always satisfied);
* ``interleaved``: a wavefront of at most ``window`` sweeps in flight, each step running
  the next task of a random in-flight sweep whose dependency (``ready``, the kernel's
  rule) is met, as concurrent blocks may; a task whose corner is not yet ready runs the
  tasks it waits for at its corner, as the other blocks run while one waits there.
"""

import ctypes
import pathlib

from ..jacobi import host_kernel as _HOST  # the CUDA stubs of every host build

_ROOT = pathlib.Path(__file__).resolve().parents[2]
KERNEL = _ROOT / "src/gpusvd/condensed/kernels/bulge.cu"


# What the host build of the chase kernel adds to host_kernel.STUBS before the kernel,
# and its schedules after it: ``one_block``, the persistent kernel's one block;
# ``interleaved``, a wavefront of at most ``window`` sweeps in flight, each step running
# the next task of a random in-flight sweep whose dependency on the sweep before it is
# met at ``lag`` (chase_common.cuh's ready), as concurrent blocks may. A task's corner()
# (run_sweeps) runs, there and then, the tasks of the sweeps before it that it waits for
# at ``corner_lag``: the task's other entries are then already updated and the corner's
# row or column not yet, which is one of the orders the GPU's blocks may take. It returns
# the most sweeps started and unfinished at once.
CHASE_STUBS = _HOST.STUBS + """
#include <algorithm>
#include <functional>
#include <random>
#include <vector>
inline void __threadfence() {}
inline void __syncwarp() {}
inline void __nanosleep(unsigned) {}
inline int atomicAdd(int *a, int v) { int old = *a; *a += v; return old; }
"""
SCHEDULES = """
static std::vector<int> one_block(int n)
{
    threadIdx.x = 0;
    blockDim.x = 1;
    blockIdx.x = 0;
    return std::vector<int>(n - 1, 0);  // the ticket, then each sweep's progress
}
template <typename Task>
static int interleaved(int n, Task task, unsigned seed, int window, int lag, int corner_lag)
{
    threadIdx.x = 0;
    blockDim.x = 1;
    const int sweeps = n - 2;
    std::vector<int> progress(sweeps, 0);
    std::vector<int> flight;   // the sweeps in flight, by ticket order
    std::mt19937 random(seed);
    int ticket = 0, widest = 0;
    // The next task of sweep s, after the tasks of the sweeps before it that it waits for
    // (none when s was drawn ready); those sweeps hold tickets, in flight or done.
    std::function<void(int)> step = [&](int s) {
        const int h = progress[s];
        while (s > 0 && !ready(progress[s - 1], h, lag)) step(s - 1);
        int started = 0;   // the sweeps begun and not finished, this one included
        for (int f : flight)
            started += (progress[f] > 0 && progress[f] != SWEEP_DONE) || f == s;
        widest = started > widest ? started : widest;
        auto corner = [&]() {
            while (s > 0 && !ready(progress[s - 1], h, corner_lag)) step(s - 1);
        };
        const bool more = task(s, h, corner);
        progress[s] = more ? h + 1 : SWEEP_DONE;
    };
    while (ticket < sweeps || !flight.empty()) {
        while ((int)flight.size() < window && ticket < sweeps) flight.push_back(ticket++);
        std::vector<int> ready_now;
        for (int i = 0; i < (int)flight.size(); ++i) {
            const int s = flight[i];
            if (s == 0 || ready(progress[s - 1], progress[s], lag)) ready_now.push_back(i);
        }
        step(flight[ready_now[random() % ready_now.size()]]);
        flight.erase(std::remove_if(flight.begin(), flight.end(),
                                    [&](int f) { return progress[f] == SWEEP_DONE; }),
                     flight.end());
    }
    return widest;
}
"""


def unordered_conflicts(sweeps, lag, corners=None, corner_lag=None):
    """The rule ``interleaved`` follows, checked on index sets: the pairs of tasks of
    different sweeps that share an entry but that the waits do not order. ``sweeps[s][h]``:
    the entries task h of sweep s reads or writes. Task h waits for task h + lag of the
    previous sweep (or its end) before it starts; with ``corners``, its entry
    ``corners[s][h]`` is touched only after it has waited for task h + corner_lag as well,
    and the task ends after that wait. Waits order transitively: a task's end follows
    everything its start and its corner's wait followed."""
    # start[q] (corner[q]): the last task of sweep q < s that ends before task h of sweep
    # s starts (touches its corner); ended[s][h][q]: before it ends, [s] being h itself.
    ended = []
    bad = 0
    for s, tasks in enumerate(sweeps):
        ended.append([])
        for h, entries in enumerate(tasks):
            def after(previous_task):   # what waiting for task h' of sweep s-1 orders
                h1 = min(previous_task, len(sweeps[s - 1]) - 1)
                return [*ended[s - 1][h1][:s - 1], h1]
            start = list(ended[s][h - 1][:s]) if h else [-1] * s
            if s:
                start = [max(x, y) for x, y in zip(start, after(h + lag))]
            corner = start
            if s and corners is not None:
                corner = [max(x, y) for x, y in zip(start, after(h + corner_lag))]
            ended[s].append([max(x, y) for x, y in zip(start, corner)] + [h])
            for q in range(s):
                for h2 in range(len(sweeps[q])):
                    shared = entries & sweeps[q][h2]
                    if not shared or h2 <= start[q]:
                        continue
                    if (corners is not None and shared == {corners[s][h]}
                            and h2 <= corner[q]):
                        continue
                    bad += 1
    return bad


SHIM = CHASE_STUBS + f'#include "{KERNEL}"\n' + SCHEDULES + r"""
template <typename T>
static void kernel(T *ab, int n, int b, T *vl, T *tl, T *vr, T *tr, int steps)
{
    std::vector<int> sync = one_block(n);
    chase_band<T>(ab, n, b, sync.data(), vl, tl, vr, tr, steps);
}
template <typename T>
static int wavefront(T *ab, int n, int b, T *vl, T *tl, T *vr, T *tr, int steps,
                     unsigned seed, int window, int lag)
{
    const Chase<T> a = {ab, 3LL * b - 1, n, b, vl, tl, vr, tr, steps};
    // Each sweep's scratch of its own, as each block has its shared memory: a task waiting
    // at its corner keeps its reflector while the tasks it waits for form theirs. 32b + 64
    // bytes hold the Scratch of every dtype (launch_config's shared_bytes, at most 24b + 48).
    std::vector<std::vector<unsigned char>> raw(n,
                                                std::vector<unsigned char>(32LL * b + 64));
    return interleaved(
        n,
        [&](int s, int h, auto corner) {
            const Scratch<T> w = scratch<T>(raw[s].data(), b);
            return chase_task(a, s, h, w, corner);
        },
        seed, window, lag < 0 ? chase_lag<T> : lag, lag < 0 ? CHASE_CORNER_LAG : lag);
}
#define CHASE(SUFFIX, T)                                                                   \
    extern "C" void kernel_##SUFFIX(T *ab, int n, int b, T *vl, T *tl, T *vr, T *tr,       \
                                    int steps)                                             \
    { kernel<T>(ab, n, b, vl, tl, vr, tr, steps); }                                        \
    extern "C" int interleaved_##SUFFIX(T *ab, int n, int b, T *vl, T *tl, T *vr, T *tr,   \
                                        int steps, unsigned seed, int window, int lag)     \
    { return wavefront<T>(ab, n, b, vl, tl, vr, tr, steps, seed, window, lag); }
CHASE(float32, float)
CHASE(float64, double)
CHASE(complex64, Complex<float>)
CHASE(complex128, Complex<double>)
"""


def chase_function(lib, width):
    """The chase of a host build ``lib`` (its ``kernel_<dtype>`` and
    ``interleaved_<dtype>``) as ``chase(ab, b, *reflectors, record, schedule=None)``, the
    contract of the Numba loop it stands for on NumPy arrays, ``ab`` of shape
    (n, width(b)). ``schedule``: None for the persistent kernel, (seed, window) for an
    interleaving at the kernel's lags or (seed, window, lag) at one lag for the task and its
    corner alike, which returns the most sweeps that were started and unfinished at
    once."""

    def chase(ab, b, *arrays, schedule=None):
        *reflectors, record = arrays
        n = ab.shape[0]
        assert ab.flags.c_contiguous and ab.shape[1] == width(b)
        if n <= 2 or b <= 1:
            return 0
        steps = reflectors[0].shape[1] if record else 0
        pointers = [x.ctypes.data_as(ctypes.c_void_p) for x in (ab, *reflectors)]
        args = [pointers[0], ctypes.c_int(n), ctypes.c_int(b), *pointers[1:],
                ctypes.c_int(steps)]
        if schedule is None:
            getattr(lib, f"kernel_{ab.dtype.name}")(*args)
            return 1
        seed, window, lag = (*schedule, -1)[:3]
        return getattr(lib, f"interleaved_{ab.dtype.name}")(
            *args, ctypes.c_uint(seed), ctypes.c_int(window), ctypes.c_int(lag))

    return chase


def build(folder):
    """The host build as ``chase(ab, b, v_left, tau_left, v_right, tau_right, record,
    schedule=None)`` (:func:`chase_function`), the contract of
    :func:`gpusvd.condensed.bulge._chase` on NumPy arrays, or None when g++ is not on
    PATH."""
    lib = _HOST.compile_host(folder, SHIM, "bulge")
    return None if lib is None else chase_function(lib, lambda b: 3 * b - 1)
