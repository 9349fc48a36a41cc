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
// Dependency (PLASMA's, derived for these tasks): task h of sweep s may start once sweep
// s-1 has finished its task h+3 (CHASE_LAG), or all of its tasks. Task h of sweep s
// touches rows and columns of blocks (h-1)/2 and (h+1)/2 of its sweep; sweep s-1's blocks
// are one index earlier, so its tasks h+1 .. h+3 still share an entry with task h (the
// diagonal entry task h+3 reflects, or the band's outermost entry task h+2 writes), and
// its tasks from h+4 on share none with task h nor with anything after it.
// tests/condensed/test_bulge_cuda.py checks this on the tasks' index sets: lag 3 orders
// every pair of tasks that share an entry, lag 2 does not. Every entry is therefore
// reduced by the same operations in the same order as in the sequential loop, and the
// result is the loop's, whatever the schedule: the kernel is deterministic, bit for bit
// from run to run (no atomics on data; which block runs a sweep does not matter).
//
// Concurrency: a persistent kernel. Each thread block takes the next sweep from a ticket
// counter (atomicAdd), runs its tasks in order, and publishes its progress after each
// task in progress[s] (SWEEP_DONE after its last); before task h its thread 0 spins until
// progress[s-1] > h + CHASE_LAG. Tickets are taken in order, so the sweep a block waits
// for belongs to a block already running, and no co-residency is needed: the grid only
// bounds the number of sweeps in flight (about 2n/(3b) can run at once). A task's writes
// are fenced by every thread and published by thread 0 after a block barrier with a
// release store; the next sweep's thread 0 reads the counter with acquire loads, then
// releases its block by a barrier. The band stays in global memory, 6 MB at
// n = 8192, b = 32 in double: resident in L2.
//
// Within a task: warp 0 forms the reflector (the largest entry by a warp reduction, the
// squares in parallel, their sum sequentially by lane 0 as the Numba loop adds them, and
// dlarfg's rescaling when every |x_i| < REFLECTOR_SAFMIN, as bulge._reflector does),
// then every thread applies it to one row (right) or one column (left) of the window, a
// sequential dot product and update. Products are rounded before they are added
// (__fmul_rn, __dmul_rn), so nothing is contracted into an fma the Numba loop does not
// do. float data is computed as the Numba loop computes it: dot products in float, the
// reflector's scalars and the update w*tau*v in double, rounded when stored. hypot is
// CUDA's (within 2 ulp), where the Numba loop calls the C library's: on the GPU the two
// agree to rounding, the host build (tests/condensed/host_bulge.py) bit for bit.
//
// With one thread per block (the host build) every loop runs sequentially.

constexpr int CHASE_LAG = 3;
constexpr int SWEEP_DONE = 0x7fffffff;
constexpr int CHASE_MAX_THREADS = 256;
// dlarfg's SAFMIN = DLAMCH('S')/DLAMCH('E') = 2^-1022 / 2^-53 and its inverse (bulge.py's
// _SAFMIN, _RSAFMN, whose _reflector says why and how it departs from dlarfg): a
// reflector whose entries are all below it is formed on x * 2^969, exactly. Down the
// trailing block of a long chase the entries shrink like products of earlier ones and
// reach subnormals (n = 3000, b = 16 on a random band): without the rescaling
// 1 / (alpha - beta) is inf there, and d, e come out NaN, in this kernel and in the
// Numba loop alike.
constexpr double REFLECTOR_SAFMIN = 0x1p-969;
constexpr double REFLECTOR_RSAFMN = 0x1p+969;
// Pause between two readings of a progress counter: spinning blocks leave the issue slots
// and L2 to the working ones, for a delay small against a task (about a microsecond).
constexpr unsigned SPIN_NS = 32;

__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ int smaller(int a, int b) { return a < b ? a : b; }

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
// tau, then the reflector (b entries of T): (b + 1) * 8 + b * sizeof(T) bytes.
template <typename T> struct Scratch {
    double *squares;
    T *v;
    double *tau;
};

template <typename T> __device__ Scratch<T> scratch(unsigned char *raw, int b)
{
    Scratch<T> s;
    s.squares = reinterpret_cast<double *>(raw);
    s.tau = s.squares + b;
    s.v = reinterpret_cast<T *>(s.tau + 1);
    return s;
}

__device__ __forceinline__ double warp_max(double v, int width)
{
    for (int o = width / 2; o > 0; o >>= 1)
        v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o, width));
    return v;
}

// LAPACK's dlarfg as bulge._reflector: the ln entries x_i = *entry(i) become
// (I - tau v v^T)^T x = beta e_0; writes v (v_0 = 1) and tau to the scratch, beta to
// *entry(0) and zeros to the other entries. Warp 0 only.
template <typename T, typename Entry>
__device__ void reflector(Entry entry, int ln, Scratch<T> w, int lane, int width)
{
    double m = 0.0;
    for (int i = lane; i < ln; i += width) {
        const T x = *entry(i);
        w.v[i] = x;
        if (i > 0) m = fmax(m, double(fabs(x)));
    }
    const double amax = warp_max(m, width);
    __syncwarp();
    const T alpha = w.v[0];
    if (amax == 0.0) {  // H = I
        if (lane == 0) {
            *entry(0) = alpha;
            *w.tau = 0.0;
            w.v[0] = T(1);
        }
        for (int i = 1 + lane; i < ln; i += width) *entry(i) = T(0);
        return;
    }
    for (int i = 1 + lane; i < ln; i += width) {
        const double t = double(fabs(w.v[i])) / amax;
        w.squares[i] = mul_rn(t, t);
    }
    __syncwarp();
    __shared__ double scale_shared;
    if (lane == 0) {
        double ssq = 0.0;
        for (int i = 1; i < ln; ++i) ssq = add_rn(ssq, w.squares[i]);
        double a0 = double(alpha), xmax = amax, shrink = 1.0;
        if (fabs(a0) < REFLECTOR_SAFMIN && xmax < REFLECTOR_SAFMIN) {
            // Rare, so lane 0 scales the other lanes' entries itself.
            shrink = REFLECTOR_SAFMIN;
            for (int i = 1; i < ln; ++i) w.v[i] = T(double(w.v[i]) * REFLECTOR_RSAFMN);
            a0 = a0 * REFLECTOR_RSAFMN;
            xmax = xmax * REFLECTOR_RSAFMN;
        }
        const double beta = -copysign(hypot(fabs(a0), xmax * sqrt(ssq)), a0);
        *w.tau = (beta - a0) / beta;
        scale_shared = 1.0 / (a0 - beta);
        *entry(0) = T(beta * shrink);
        w.v[0] = T(1);
    }
    __syncwarp();
    const double scale = scale_shared;
    for (int i = 1 + lane; i < ln; i += width) {
        w.v[i] = T(double(w.v[i]) * scale);
        *entry(i) = T(0);
    }
}

// A(r0:r1, c0:c0+ln) <- A (I - tau v v^T), one row per thread (bulge._apply_right).
template <typename T>
__device__ void apply_right(const Chase<T> &a, int r0, int r1, int c0, int ln, Scratch<T> w)
{
    const double tau = *w.tau;
    for (int i = r0 + threadIdx.x; i < r1; i += blockDim.x) {
        T *row = a.at(i, c0);
        T dot = mul_rn(row[0], w.v[0]);
        for (int k = 1; k < ln; ++k) dot = add_rn(dot, mul_rn(row[k], w.v[k]));
        const double wt = double(dot) * tau;
        for (int k = 0; k < ln; ++k) row[k] = T(double(row[k]) - mul_rn(wt, double(w.v[k])));
    }
}

// A(r0:r0+ln, c0:c1) <- (I - tau v v^T)^T A, one column per thread (bulge._apply_left).
template <typename T>
__device__ void apply_left(const Chase<T> &a, int r0, int c0, int c1, int ln, Scratch<T> w)
{
    const double tau = *w.tau;
    const long long step = a.ld - 1;  // from A(i, j) to A(i+1, j)
    for (int j = c0 + threadIdx.x; j < c1; j += blockDim.x) {
        T *col = a.at(r0, j);
        T dot = mul_rn(w.v[0], col[0]);
        for (int k = 1; k < ln; ++k) dot = add_rn(dot, mul_rn(w.v[k], col[k * step]));
        const double wt = double(dot) * tau;
        for (int k = 0; k < ln; ++k)
            col[k * step] = T(double(col[k * step]) - mul_rn(wt, double(w.v[k])));
    }
}

template <typename T>
__device__ void record(T *v, T *tau, const Chase<T> &a, int s, int k, int ln, Scratch<T> w)
{
    if (a.steps == 0) return;
    const long long at = (long long)s * a.steps + k;
    for (int i = threadIdx.x; i < ln; i += blockDim.x) v[at * a.b + i] = w.v[i];
    if (threadIdx.x == 0) tau[at] = T(*w.tau);
}

// Task h of sweep s (module comment); false when it was the sweep's last. Every thread of
// the block calls it; shared scratch w.
template <typename T>
__device__ bool chase_task(const Chase<T> &a, int s, int h, Scratch<T> w)
{
    const int n = a.n, b = a.b;
    const int lane = threadIdx.x, width = smaller(32, blockDim.x);
    const int k = (h - 1) / 2;
    const int st = h == 0 ? s + 1 : s + 1 + k * b;
    const int ed = smaller(st + b - 1, n - 1);
    if (h == 0 || h % 2 == 0) {  // a row reflector: row s on block 0, or row st on block k+1
        const int r = h == 0 ? s : st;
        const int c0 = h == 0 ? st : ed + 1;
        const int c1 = h == 0 ? ed : smaller(ed + b, n - 1);
        const int ln = c1 - c0 + 1;
        if (threadIdx.x < width)
            reflector<T>([&](int i) { return a.at(r, c0 + i); }, ln, w, lane, width);
        __syncthreads();
        record(a.v_right, a.tau_right, a, s, h == 0 ? 0 : k + 1, ln, w);
        apply_right(a, r + 1, c1 + 1, c0, ln, w);
        return true;
    }
    const int ln = ed - st + 1;  // a column reflector on column st, block k
    if (threadIdx.x < width)
        reflector<T>([&](int i) { return a.at(st + i, st); }, ln, w, lane, width);
    __syncthreads();
    record(a.v_left, a.tau_left, a, s, k, ln, w);
    const int j2 = smaller(ed + b, n - 1);
    apply_left(a, st, st + 1, j2 + 1, ln, w);
    return j2 > ed + 1;
}

// Whether task h of a sweep may start, given the progress of the sweep before it.
__device__ __forceinline__ bool ready(int previous, int h) { return previous > h + CHASE_LAG; }

// A progress counter read with acquire and written with release semantics at GPU scope
// (PTX memory model): the band entries another block wrote before its release are what
// this block's plain, L1-cached loads see after the acquire and a block barrier.
__device__ __forceinline__ int load_acquire(const int *p)
{
#ifdef __CUDA_ARCH__
    int v;
    asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
#else
    return *p;
#endif
}
__device__ __forceinline__ void store_release(int *p, int v)
{
#ifdef __CUDA_ARCH__
    asm volatile("st.release.gpu.global.s32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
    *p = v;
#endif
}

// All sweeps of the band a (n x ld, ld = 3b-1, row-major) in place. sync (n - 1 ints,
// zero): the ticket counter, then the progress of every sweep. v_left, tau_left, v_right,
// tau_right: bulge.ChaseReflectors' arrays when steps > 0. Dynamic shared memory: the
// Scratch.
template <typename T>
__global__ void __launch_bounds__(CHASE_MAX_THREADS)
    chase_band(T *ab, int n, int b, int *sync, T *v_left, T *tau_left, T *v_right,
               T *tau_right, int steps)
{
    extern __shared__ __align__(16) unsigned char shared_raw[];
    __shared__ int sweep;
    const Chase<T> a = {ab, 3LL * b - 1, n, b, v_left, tau_left, v_right, tau_right, steps};
    const Scratch<T> w = scratch<T>(shared_raw, b);
    int *ticket = sync;
    int *progress = sync + 1;
    for (;;) {
        if (threadIdx.x == 0) sweep = atomicAdd(ticket, 1);
        __syncthreads();
        const int s = sweep;
        if (s >= n - 2) return;
        int seen = 0;  // thread 0's last acquired progress of sweep s-1
        for (int h = 0;; ++h) {
            // Acquire: thread 0 waits until sweep s-1 has published tasks 0 .. h+3, every
            // task of it that shares an entry with task h (reads and writes alike, so
            // read-after-write, write-after-read and write-after-write are all ordered);
            // its tasks from h+4 on share none and may run meanwhile. Sweeps s-2, ...
            // are ordered transitively (s-1 waited for s-2's task h+6 before its h+3).
            // The barrier passes thread 0's acquire on to every thread of the block
            // (PTX causality order is transitive through bar.sync), and the acquire
            // invalidates this SM's L1 (ld.acquire.gpu is LDG.STRONG.GPU + CCTL.IVALL on
            // sm_80 and sm_90), so the plain loads of chase_task see the other block's
            // stores. A seen acquired at an earlier task still covers task h.
            if (threadIdx.x == 0 && s > 0) {
                while (!ready(seen, h)) {
                    __nanosleep(SPIN_NS);
                    seen = load_acquire(progress + s - 1);
                }
            }
            __syncthreads();
            const bool more = chase_task(a, s, h, w);
            // Release: every thread's stores of task h (band and recorded reflectors) are
            // fenced and ordered before the barrier, then thread 0 publishes them all
            // with one release store of the progress, which sweep s+1's thread 0
            // acquires. The scratch is reused by task h+1 only after this barrier.
            __threadfence();
            __syncthreads();
            if (threadIdx.x == 0) store_release(progress + s, more ? h + 1 : SWEEP_DONE);
            if (!more) break;
        }
    }
}
