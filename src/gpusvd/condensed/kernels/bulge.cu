// Stage 2 of the two-stage reduction on the GPU: upper band -> bidiagonal by bulge
// chasing, many sweeps in flight (the twin of gpusvd/condensed/bulge.py's Numba loop).
//
// Storage and sweeps are bulge.py's: the band in its 3b-1 stored diagonals, row i at
// ab + i*ld with A(i, j) at column j - i + b - 1 (ld = 3b - 1), and sweep s = 0 .. n-3
// made of the tasks
//   task 0       row s: a right reflector zeroes A(s, s+2 : s+b) and is applied to the
//                rows s+1 .. min(s+b, n-1) (PLASMA's type 1, first half);
//   task 2k+1    block k, st = s+1+k*b, ed = min(st+b-1, n-1): a left reflector zeroes
//                A(st+1 : ed, st) and is applied to the columns st+1 .. min(ed+b, n-1)
//                (type 1 or 3, and type 2's left application); the sweep ends here when
//                ed >= n-2 (no bulge left beyond the band);
//   task 2k+2    a right reflector zeroes A(st, ed+2 : ed+b) and is applied to the rows
//                st+1 .. min(ed+b, n-1) (type 2, and type 3's right application),
// each with the same floating-point operations in the same order as the Numba loop.
//
// Dependency (PLASMA's, derived for these tasks): task h of sweep s touches rows and
// columns of blocks (h-1)/2 and (h+1)/2 of its sweep; sweep s-1's blocks are one index
// earlier, so its tasks h+1 .. h+3 still share entries with task h and its tasks from h+4
// on share none with task h nor with anything after it. Of task h+3 only one entry is
// shared, task h's corner: the last entry of the last column a column task updates,
// A(ed, j2), or of the last row a row task updates, A(c1, c1). So task h may start once
// sweep s-1 has finished its task h+2 (CHASE_LAG), and the one thread that updates the
// corner's column or row waits for task h+3 (CHASE_CORNER_LAG) before it reads the
// corner; the other threads form and apply the reflector meanwhile, and the task is
// published only when all of them are done. Complex data waits for task h+3 at the
// start (chase_lag): its window is not held in registers, and the corner's wait
// slowed its chase.
// tests/condensed/test_bulge_cuda.py checks this on the tasks' index sets: lag 2 with
// the corner at lag 3 orders every pair of tasks that share an entry, lag 2 alone does
// not. Every entry is therefore reduced by the same operations in the same order as in
// the sequential loop, and the result is the loop's, whatever the schedule: the kernel is
// deterministic, bit for bit from run to run (no atomics on data; which block runs a
// sweep does not matter).
//
// Concurrency: a persistent kernel (chase_common.cuh's run_sweeps). Each thread block
// takes the next sweep from a ticket counter, runs its tasks in order and publishes its
// progress after each; before task h its thread 0 spins until sweep s-1 has published
// task h + CHASE_LAG, and the corner's thread until task h + CHASE_CORNER_LAG. The grid
// only bounds the number of sweeps in flight (at most n/b + 1 can run at once). The band
// stays in global memory, 6 MB at n = 8192, b = 32 in double: resident in L2.
//
// Within a task: every thread reads its row (right) or column (left) of the window into
// registers (chase_common.cuh's hold), warp 0 forms the reflector (chase_common.cuh's, as
// bulge._reflector), then every thread applies it to its row or column, a sequential dot
// product and update, rounded as chase_common.cuh says. float data is computed as the
// Numba loop computes it: dot products in float, the reflector's scalars
// and the update w*tau*v in double, rounded when stored; complex data alike, in
// Complex<float> and Complex<double> (Wide<T>), with the Numba loop's complex products
// and quotients. Complex windows are not held in registers (CHASE_HOLDS). On the GPU
// the two twins agree to rounding (CUDA's hypot), the host build
// (tests/condensed/host_bulge.py) bit for bit.
//
// With one thread per block (the host build) every loop runs sequentially.

#include "chase_common.cuh"

constexpr int CHASE_LAG = 2;
constexpr int CHASE_CORNER_LAG = 3;
// Whether a thread holds its row or column in registers (chase_common.cuh's hold): real
// data only; a complex window would take twice the registers the real one already fills.
template <typename T> constexpr bool CHASE_HOLDS = !ChaseScalar<T>::complex;
// The lag at a task's start: held windows wait for the corner alone at the corner's lag.
template <typename T> constexpr int chase_lag = CHASE_HOLDS<T> ? CHASE_LAG : CHASE_CORNER_LAG;

// x[k] = value for k = at alone (a run-time index into a held window, without taking the
// registers to local memory).
template <typename T>
__device__ __forceinline__ void set_held(T (&x)[CHASE_HELD], int at, T value)
{
#pragma unroll
    for (int k = 0; k < CHASE_HELD; ++k)
        if (k == at) x[k] = value;
}

// The band (module comment) and the recorded reflectors of bulge.ChaseReflectors:
// v (sweeps, steps, b) and tau (sweeps, steps), steps = 0 when nothing is recorded.
template <typename T> struct Chase {
    T *ab;
    long long ld;
    int n, b;
    T *v_left, *tau_left, *v_right, *tau_right;
    int steps;

    __device__ T *at(int i, int j) const { return ab + i * ld + (j - i + b - 1); }
};

// Shared scratch of a task: the squares of the reflector's scaled entries (b doubles), its
// tau (a Wide<T>), then the reflector (b entries of T), each part starting on 16 bytes:
// bulge_cuda.launch_config's shared_bytes.
template <typename T> struct Scratch {
    double *squares;
    T *v;
    Wide<T> *tau;
};

__device__ __forceinline__ long long aligned16(long long bytes) { return (bytes + 15) / 16 * 16; }

template <typename T> __device__ Scratch<T> scratch(unsigned char *raw, int b)
{
    Scratch<T> s;
    const long long tau_at = aligned16(8LL * b);
    s.squares = reinterpret_cast<double *>(raw);
    s.tau = reinterpret_cast<Wide<T> *>(raw + tau_at);
    s.v = reinterpret_cast<T *>(raw + aligned16(tau_at + sizeof(Wide<T>)));
    return s;
}

// y_k = x_k - wt * v_k (conj(v_k) on the right, where ``left`` is false) for every k of
// a held row or column, in Wide<T> and rounded as the loops below round it; past ln, x
// and v are read as zero (hold zeroes x there) and y is not stored. All of them first,
// then the stores, each predicated: with a branch around each entry's shared load,
// product and store, the entries' chains ran one after another.
template <typename T>
__device__ __forceinline__ void updated(T (&y)[CHASE_HELD], const T (&x)[CHASE_HELD],
                                        Wide<T> wt, const T *v, int ln, bool left)
{
#pragma unroll
    for (int k = 0; k < CHASE_HELD; ++k) {
        const T vk = k < ln ? v[k] : T{};
        y[k] = narrow<T>(sub_rn(widen(x[k]), mul_rn(wt, widen(left ? vk : conj_of(vk)))));
    }
}

// A(r0:r1, c0:c0+ln) <- A (I - tau v v^H), one row per thread (bulge._apply_right). A
// thread that holds its first row (chase_common.cuh's hold; held) takes it from the
// registers, its later rows (b > CHASE_HELD, or fewer threads than rows) from memory,
// the last row (the corner's) after corner() has waited for it.
// As the Numba loop: the dot product in T, w = dot * tau in Wide<T>, each entry updated
// in Wide<T> and rounded when stored.
template <typename T, typename Corner>
__device__ void apply_right(const Chase<T> &a, int r0, int r1, int c0, int ln, Scratch<T> w,
                            const T (&x)[CHASE_HELD], bool held, Corner corner)
{
    const Wide<T> tau = *w.tau;
    int i = r0 + threadIdx.x;
    if (held) {
        T *row = a.at(i, c0);
        T dot = mul_rn(x[0], w.v[0]);
#pragma unroll
        for (int k = 1; k < CHASE_HELD; ++k)
            if (k < ln) dot = add_rn(dot, mul_rn(x[k], w.v[k]));
        const Wide<T> wt = mul_rn(widen(dot), tau);
        T y[CHASE_HELD];
        updated(y, x, wt, w.v, ln, false);
#pragma unroll
        for (int k = 0; k < CHASE_HELD; ++k)
            if (k < ln) row[k] = y[k];
        i += blockDim.x;
    }
    for (; i < r1; i += blockDim.x) {
        if (i == r1 - 1) corner();
        T *row = a.at(i, c0);
        T dot = mul_rn(row[0], w.v[0]);
        for (int k = 1; k < ln; ++k) dot = add_rn(dot, mul_rn(row[k], w.v[k]));
        const Wide<T> wt = mul_rn(widen(dot), tau);
        for (int k = 0; k < ln; ++k)
            row[k] = narrow<T>(sub_rn(widen(row[k]), mul_rn(wt, widen(conj_of(w.v[k])))));
    }
}

// A(r0:r0+ln, c0:c1) <- (I - tau v v^H)^H A, one column per thread (bulge._apply_left),
// the thread's first column from its registers when held, as apply_right.
template <typename T, typename Corner>
__device__ void apply_left(const Chase<T> &a, int r0, int c0, int c1, int ln, Scratch<T> w,
                           const T (&x)[CHASE_HELD], bool held, Corner corner)
{
    const Wide<T> tau = conj_of(*w.tau);
    const long long step = a.ld - 1;  // from A(i, j) to A(i+1, j)
    int j = c0 + threadIdx.x;
    if (held) {
        T *col = a.at(r0, j);
        T dot = mul_rn(conj_of(w.v[0]), x[0]);
#pragma unroll
        for (int k = 1; k < CHASE_HELD; ++k)
            if (k < ln) dot = add_rn(dot, mul_rn(conj_of(w.v[k]), x[k]));
        const Wide<T> wt = mul_rn(widen(dot), tau);
        T y[CHASE_HELD];
        updated(y, x, wt, w.v, ln, true);
#pragma unroll
        for (int k = 0; k < CHASE_HELD; ++k)
            if (k < ln) col[k * step] = y[k];
        j += blockDim.x;
    }
    for (; j < c1; j += blockDim.x) {
        if (j == c1 - 1) corner();
        T *col = a.at(r0, j);
        T dot = mul_rn(conj_of(w.v[0]), col[0]);
        for (int k = 1; k < ln; ++k) dot = add_rn(dot, mul_rn(conj_of(w.v[k]), col[k * step]));
        const Wide<T> wt = mul_rn(widen(dot), tau);
        for (int k = 0; k < ln; ++k)
            col[k * step] = narrow<T>(sub_rn(widen(col[k * step]), mul_rn(wt, widen(w.v[k]))));
    }
}

template <typename T>
__device__ void record(T *v, T *tau, const Chase<T> &a, int s, int k, int ln, Scratch<T> w)
{
    if (a.steps == 0) return;
    const long long at = (long long)s * a.steps + k;
    for (int i = threadIdx.x; i < ln; i += blockDim.x) v[at * a.b + i] = w.v[i];
    if (threadIdx.x == 0) tau[at] = narrow<T>(*w.tau);
}

// Task h of sweep s (module comment); false when it was the sweep's last. Every thread of
// the block calls it; shared scratch w; corner() returns once the corner may be read
// (run_sweeps). Each thread first reads its first row or column of the update into
// registers (hold): the update's window is disjoint from the entries the reflector reads
// and writes (row r or column st), so the reads may go first; the thread that holds the
// corner's row or column reads the corner after the reflector, once corner() returned.
template <typename T, typename Corner>
__device__ bool chase_task(const Chase<T> &a, int s, int h, Scratch<T> w, Corner corner)
{
    const int n = a.n, b = a.b;
    const int lane = threadIdx.x, width = smaller(32, blockDim.x);
    const int k = (h - 1) / 2;
    const int st = h == 0 ? s + 1 : s + 1 + k * b;
    const int ed = smaller(st + b - 1, n - 1);
    T x[CHASE_HELD];
    if (h == 0 || h % 2 == 0) {  // a row reflector: row s on block 0, or row st on block k+1
        const int r = h == 0 ? s : st;
        const int c0 = h == 0 ? st : ed + 1;
        const int c1 = h == 0 ? ed : smaller(ed + b, n - 1);
        const int ln = c1 - c0 + 1;
        const bool held = CHASE_HOLDS<T> && ln <= CHASE_HELD && r + 1 + int(threadIdx.x) <= c1;
        const bool last = held && r + 1 + int(threadIdx.x) == c1;  // holds A(c1, c1)
        if (held) hold(x, a.at(r + 1 + threadIdx.x, c0), 1, last ? ln - 1 : ln);
        if (threadIdx.x < width)
            reflector<T>([&](int i) { return a.at(r, c0 + i); }, ln, w, lane, width, true);
        __syncthreads();
        record(a.v_right, a.tau_right, a, s, h == 0 ? 0 : k + 1, ln, w);
        if (last) {
            corner();
            set_held(x, ln - 1, *a.at(c1, c1));
        }
        apply_right(a, r + 1, c1 + 1, c0, ln, w, x, held, corner);
        return true;
    }
    const int ln = ed - st + 1;  // a column reflector on column st, block k
    const int j2 = smaller(ed + b, n - 1);
    const bool held = CHASE_HOLDS<T> && ln <= CHASE_HELD && st + 1 + int(threadIdx.x) <= j2;
    const bool last = held && st + 1 + int(threadIdx.x) == j2;  // holds A(ed, j2)
    if (held) hold(x, a.at(st, st + 1 + threadIdx.x), a.ld - 1, last ? ln - 1 : ln);
    if (threadIdx.x < width)
        reflector<T>([&](int i) { return a.at(st + i, st); }, ln, w, lane, width, false);
    __syncthreads();
    record(a.v_left, a.tau_left, a, s, k, ln, w);
    if (last) {
        corner();
        set_held(x, ln - 1, *a.at(ed, j2));
    }
    apply_left(a, st, st + 1, j2 + 1, ln, w, x, held, corner);
    return j2 > ed + 1;
}

// All sweeps of the band a (n x ld, ld = 3b-1, row-major) in place. sync (n - 1 ints,
// zero): the ticket counter, then the progress of every sweep. v_left, tau_left, v_right,
// tau_right: bulge.ChaseReflectors' arrays when steps > 0. Dynamic shared memory: the
// Scratch.
template <typename T>
__global__ void __launch_bounds__(CHASE_MAX_THREADS, 1)
    chase_band(T *ab, int n, int b, int *sync, T *v_left, T *tau_left, T *v_right,
               T *tau_right, int steps)
{
    extern __shared__ __align__(16) unsigned char shared_raw[];
    const Chase<T> a = {ab, 3LL * b - 1, n, b, v_left, tau_left, v_right, tau_right, steps};
    const Scratch<T> w = scratch<T>(shared_raw, b);
    run_sweeps<chase_lag<T>, CHASE_CORNER_LAG>(
        n, sync, [&](int s, int h, auto corner) { return chase_task(a, s, h, w, corner); });
}
