// The scheduling and reflector pieces of the bulge chasing kernel bulge.cu (upper band ->
// bidiagonal, the SVD's stage 2): a persistent kernel that runs one sweep per thread
// block with task h of sweep s waiting for task h + lag of sweep s-1, and the thread that
// touches its corner entry for a later task (the kernel file derives both lags), forming
// its reflectors as the Numba loop does (bulge._reflector, LAPACK's dlarfg, zlarfg for
// complex data). The kernel file includes this header by its relative path, as this
// header includes complex.cuh, so NVRTC (kernels.expanded_source inlines them), nvcc and
// the host build of the tests (tests/condensed/host_bulge.py) all find them.
//
// Rounding: products are rounded before they are added (__fmul_rn, __dmul_rn), so nothing
// is contracted into an fma the Numba loop does not do; the reflector's scalars are
// computed in double for float data too, as the Numba loop computes them. hypot is
// CUDA's (within 2 ulp), where the Numba loop calls the C library's: on the GPU the twins
// agree to rounding, in the host build bit for bit. Complex arithmetic is the Numba
// loop's too: a product as re = ac - bd, im = ad + bc, each product rounded; a quotient by
// CPython's algorithm (_Py_c_quot, which Numba follows); |z| = hypot(re, im) in double
// (a complex64 entry widened first: hypotf rounds a subnormal modulus to float's grid).

#pragma once

#include "../../_core/cuda/complex.cuh"

constexpr int SWEEP_DONE = 0x7fffffff;
constexpr int CHASE_MAX_THREADS = 256;
// dlarfg's SAFMIN = DLAMCH('S')/DLAMCH('E') = 2^-1022 / 2^-53 and its inverse (bulge.py's
// _SAFMIN, _RSAFMN, whose _reflector says why and how it departs from dlarfg): a
// reflector whose entries are all below it is formed on x * 2^969, exactly. Down the
// trailing block of a long chase the entries shrink like products of earlier ones and
// reach subnormals (n = 3000, b = 16 on a random band): without the rescaling
// 1 / (alpha - beta) is inf there, and d, e come out NaN, in the kernel and in the
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

// The chase's data types: float, double, Complex<float>, Complex<double>. Wide is what the
// reflector's scalars and an update's w*tau are computed in (double, Complex<double>).
template <typename T> struct ChaseScalar {
    using Wide = double;
    static constexpr bool complex = false;
};
template <typename R> struct ChaseScalar<Complex<R>> {
    using Wide = Complex<double>;
    static constexpr bool complex = true;
};
template <typename T> using Wide = typename ChaseScalar<T>::Wide;

template <typename R> __device__ __forceinline__ Complex<R> mul_rn(Complex<R> a, Complex<R> b)
{
    return cplx(add_rn(mul_rn(a.re, b.re), -mul_rn(a.im, b.im)),
                add_rn(mul_rn(a.re, b.im), mul_rn(a.im, b.re)));
}
template <typename R> __device__ __forceinline__ Complex<R> add_rn(Complex<R> a, Complex<R> b)
{
    return cplx(add_rn(a.re, b.re), add_rn(a.im, b.im));
}
__device__ __forceinline__ double sub_rn(double a, double b) { return __dadd_rn(a, -b); }
__device__ __forceinline__ Complex<double> sub_rn(Complex<double> a, Complex<double> b)
{
    return cplx(sub_rn(a.re, b.re), sub_rn(a.im, b.im));
}
__device__ __forceinline__ float conj_of(float x) { return x; }
__device__ __forceinline__ double conj_of(double x) { return x; }
template <typename R> __device__ __forceinline__ Complex<R> conj_of(Complex<R> x)
{
    return cplx(x.re, -x.im);
}
__device__ __forceinline__ double widen(float x) { return double(x); }
__device__ __forceinline__ double widen(double x) { return x; }
template <typename R> __device__ __forceinline__ Complex<double> widen(Complex<R> x)
{
    return cplx(double(x.re), double(x.im));
}
template <typename T> __device__ __forceinline__ T narrow(double x) { return T(x); }
template <typename T> __device__ __forceinline__ T narrow(Complex<double> x)
{
    using R = decltype(T().re);
    return cplx(R(x.re), R(x.im));
}
// |x| in double as the Numba loop takes it: fabs, or hypot(re, im) of the entry widened
// to double (hypotf of a subnormal complex64 entry is up to 11% off, and reflectors
// formed from it are not unitary: bulge._reflector).
__device__ __forceinline__ double magnitude(float x) { return double(fabs(x)); }
__device__ __forceinline__ double magnitude(double x) { return fabs(x); }
__device__ __forceinline__ double magnitude(Complex<float> x)
{
    return hypot(double(x.re), double(x.im));
}
__device__ __forceinline__ double magnitude(Complex<double> x) { return hypot(x.re, x.im); }
// a / b by CPython's algorithm (_Py_c_quot), as Numba divides complex numbers; b != 0.
__device__ __forceinline__ Complex<double> quotient(Complex<double> a, Complex<double> b)
{
    if (fabs(b.re) >= fabs(b.im)) {
        const double ratio = b.im / b.re;
        const double denom = __dadd_rn(b.re, __dmul_rn(b.im, ratio));
        return cplx(__dadd_rn(a.re, __dmul_rn(a.im, ratio)) / denom,
                    __dadd_rn(a.im, -__dmul_rn(a.re, ratio)) / denom);
    }
    const double ratio = b.re / b.im;
    const double denom = __dadd_rn(__dmul_rn(b.re, ratio), b.im);
    return cplx(__dadd_rn(__dmul_rn(a.re, ratio), a.im) / denom,
                __dadd_rn(__dmul_rn(a.im, ratio), -a.re) / denom);
}

// The entries of a task's window that one thread holds in registers in bulge.cu: its
// row (right) or column (left) of the update, read before the reflector is formed. The
// window's loads then overlap the reflector's formation and are issued all at once: a
// loop over a row with a run-time length is unrolled by four and waits for each group of
// four loads in turn, eight trips to L2 for a row of 32 (the acquire at each task's start
// leaves L1 cold). A row longer than CHASE_HELD (b > CHASE_HELD; 32 is the tuned
// bandwidth) is read by the loops instead. Only where the values are read from
// changes: the same operations in the same order either way. bulge.cu declares
// __launch_bounds__(CHASE_MAX_THREADS, 1), registers over occupancy (228 registers a
// thread in double: 4 blocks of 64 threads per SM, where the 257 sweeps that may be in
// flight at n = 8192 need 2); with no minimum, ptxas holds its float kernel to 128 and
// spills.
// Holding the window takes bulge.cu's chase at n = 8192 from 0.28 to 0.18 s on the H100.
constexpr int CHASE_HELD = 32;

// x[k] = p[k * step] for k < ln (ln <= CHASE_HELD), zero past it: a constant trip count,
// unrolled, the loads predicated, so none waits for another.
template <typename T>
__device__ __forceinline__ void hold(T (&x)[CHASE_HELD], const T *p, long long step, int ln)
{
#pragma unroll
    for (int k = 0; k < CHASE_HELD; ++k)
        x[k] = k < ln ? p[k * step] : T{};
}

__device__ __forceinline__ double warp_max(double v, int width)
{
    for (int o = width / 2; o > 0; o >>= 1)
        v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o, width));
    return v;
}

// LAPACK's dlarfg as bulge._reflector, real data: the ln entries x_i = *entry(i) become
// (I - tau v v^T)^T x = beta e_0; writes v (v_0 = 1) and tau to the scratch w (a kernel's
// Scratch: squares, b doubles; v, b entries of T; tau, one double), beta to *entry(0) and
// zeros to the other entries. Warp 0 only: the largest entry by a warp reduction, the
// squares in parallel, their sum sequentially by lane 0 as the Numba loop adds them, and
// dlarfg's rescaling when every |x_i| < REFLECTOR_SAFMIN.
template <typename T, typename Entry, typename Work>
__device__ void real_reflector(Entry entry, int ln, Work w, int lane, int width)
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

// zlarfg as bulge._reflector, complex data: the entries x_i = *entry(i), conjugated first
// when ``conjugate`` (a row reflector: bulge._row_reflector), become beta e_0 with beta
// real; v (v_0 = 1) and tau (complex, in Complex<double>) go to the scratch w. The work is
// shared as real_reflector's, and every scalar is formed as the Numba loop forms it (the
// header's comment): H = I only when x(1:) = 0 and x_0 is real.
template <typename T, typename Entry, typename Work>
__device__ void complex_reflector(Entry entry, int ln, Work w, int lane, int width,
                                  bool conjugate)
{
    double m = 0.0;
    for (int i = lane; i < ln; i += width) {
        const T x = conjugate ? conj_of(*entry(i)) : *entry(i);
        w.v[i] = x;
        if (i > 0) m = fmax(m, magnitude(x));
    }
    const double amax = warp_max(m, width);
    __syncwarp();
    const T alpha = w.v[0];
    if (amax == 0.0 && alpha.im == 0) {  // H = I
        if (lane == 0) {
            *entry(0) = narrow<T>(cplx(double(alpha.re), 0.0));
            *w.tau = cplx(0.0, 0.0);
            w.v[0] = narrow<T>(cplx(1.0, 0.0));
        }
        for (int i = 1 + lane; i < ln; i += width) *entry(i) = narrow<T>(cplx(0.0, 0.0));
        return;
    }
    for (int i = 1 + lane; i < ln; i += width) {  // x(1:) = 0 with x_0 not real: ssq = 0
        const double t = amax > 0.0 ? magnitude(w.v[i]) / amax : 0.0;
        w.squares[i] = mul_rn(t, t);
    }
    __syncwarp();
    __shared__ Complex<double> scale_shared_complex;
    if (lane == 0) {
        double ssq = 0.0;
        for (int i = 1; i < ln; ++i) ssq = add_rn(ssq, w.squares[i]);
        T a0 = alpha;
        double xmax = amax, shrink = 1.0;
        if (magnitude(a0) < REFLECTOR_SAFMIN && xmax < REFLECTOR_SAFMIN) {
            shrink = REFLECTOR_SAFMIN;
            const Complex<double> up = cplx(REFLECTOR_RSAFMN, 0.0);
            for (int i = 0; i < ln; ++i) w.v[i] = narrow<T>(mul_rn(widen(w.v[i]), up));
            a0 = w.v[0];
            xmax = xmax * REFLECTOR_RSAFMN;
        }
        const double beta = -copysign(hypot(magnitude(a0), xmax * sqrt(ssq)), double(a0.re));
        const Complex<double> b = cplx(beta, 0.0), a = widen(a0);
        *w.tau = quotient(sub_rn(b, a), b);
        scale_shared_complex = quotient(cplx(1.0, 0.0), sub_rn(a, b));
        *entry(0) = narrow<T>(cplx(beta * shrink, 0.0));
        w.v[0] = narrow<T>(cplx(1.0, 0.0));
    }
    __syncwarp();
    const Complex<double> scale = scale_shared_complex;
    for (int i = 1 + lane; i < ln; i += width) {
        w.v[i] = narrow<T>(mul_rn(widen(w.v[i]), scale));
        *entry(i) = narrow<T>(cplx(0.0, 0.0));
    }
}

// The reflector of ln entries, by the data type; ``conjugate``: a row reflector, whose
// entries are conjugated first (complex data; nothing to do for real).
template <typename T, typename Entry, typename Work>
__device__ void reflector(Entry entry, int ln, Work w, int lane, int width, bool conjugate)
{
    if constexpr (ChaseScalar<T>::complex)
        complex_reflector<T>(entry, ln, w, lane, width, conjugate);
    else
        real_reflector<T>(entry, ln, w, lane, width);
}

// Whether task h of a sweep may start, given the progress of the sweep before it (the
// number of its tasks done, SWEEP_DONE after its last) and the kernel's lag.
__device__ __forceinline__ bool ready(int previous, int h, int lag) { return previous > h + lag; }

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

// The persistent kernel's loop: every sweep 0 .. n-3 of the band, task by task, task h of
// sweep s once sweep s-1 has published tasks 0 .. h + Lag (or all of its tasks).
// task(s, h, corner) runs task h of sweep s with every thread of the block and returns
// false after the sweep's last; the thread that touches the task's corner entry calls
// corner() first, which returns once sweep s-1 has published tasks 0 .. h + CornerLag
// (at once where CornerLag is Lag). sync (n - 1 ints, zero): the ticket counter, then
// the progress of every sweep.
//
// Each thread block takes the next sweep from the ticket counter (atomicAdd), runs its
// tasks in order, and publishes its progress after each task in progress[s] (SWEEP_DONE
// after its last); before task h its thread 0 spins until progress[s-1] > h + Lag, and
// the corner's thread, in corner(), until progress[s-1] > h + CornerLag.
// Tickets are taken in order, so the sweep a block waits for belongs to a block already
// running, and no co-residency is needed: the grid only bounds the number of sweeps in
// flight. Every entry is reduced by the same operations in the same order as in the
// sequential loop whatever the schedule, when the lag orders every pair of tasks that
// share an entry (the kernel's comment derives its lags): the kernel is deterministic,
// bit for bit from run to run (no atomics on data; which block runs a sweep does not
// matter).
template <int Lag, int CornerLag, typename Task>
__device__ void run_sweeps(int n, int *sync, Task task)
{
    __shared__ int sweep;
    int *ticket = sync;
    int *progress = sync + 1;
    for (;;) {
        if (threadIdx.x == 0) sweep = atomicAdd(ticket, 1);
        __syncthreads();
        const int s = sweep;
        if (s >= n - 2) return;
        int seen = 0;  // thread 0's last acquired progress of sweep s-1
        for (int h = 0;; ++h) {
            // Acquire: thread 0 waits until sweep s-1 has published tasks 0 .. h+Lag, every
            // task of it that shares an entry with task h (reads and writes alike, so
            // read-after-write, write-after-read and write-after-write are all ordered);
            // its later tasks share none and may run meanwhile. Sweeps s-2, ... are
            // ordered transitively (s-1 waited for s-2's task h+2*Lag before its h+Lag).
            // The barrier passes thread 0's acquire on to every thread of the block
            // (PTX causality order is transitive through bar.sync), and the acquire
            // invalidates this SM's L1 (ld.acquire.gpu is LDG.STRONG.GPU + CCTL.IVALL on
            // sm_80 and sm_90), so the plain loads of the task see the other block's
            // stores. A seen acquired at an earlier task still covers task h.
            if (threadIdx.x == 0 && s > 0) {
                while (!ready(seen, h, Lag)) {
                    __nanosleep(SPIN_NS);
                    seen = load_acquire(progress + s - 1);
                }
            }
            __syncthreads();
            // The corner's thread acquires the progress itself: its loads of the corner
            // then see sweep s-1's stores of task h + CornerLag, and its stores of the
            // corner's row or column follow that task's reads.
            auto corner = [&]() {
                if constexpr (CornerLag > Lag) {
                    if (s > 0) {
                        int v = load_acquire(progress + s - 1);
                        while (!ready(v, h, CornerLag)) {
                            __nanosleep(SPIN_NS);
                            v = load_acquire(progress + s - 1);
                        }
                    }
                }
            };
            const bool more = task(s, h, corner);
            // Release: every thread's stores of task h (band and recorded reflectors) are
            // fenced and ordered before the barrier, then thread 0 publishes them all
            // with one release store of the progress, which sweep s+1's thread 0
            // acquires. The task's shared scratch is reused by task h+1 only after this
            // barrier.
            __threadfence();
            __syncthreads();
            if (threadIdx.x == 0) store_release(progress + s, more ? h + 1 : SWEEP_DONE);
            if (!more) break;
        }
    }
}
