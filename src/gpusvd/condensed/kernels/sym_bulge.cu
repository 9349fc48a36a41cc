// Stage 2 of the two-stage Hermitian reduction on the GPU: symmetric band -> tridiagonal
// by bulge chasing, many sweeps in flight (the twin of gpusvd/condensed/sym_bulge.py's
// Numba loop _chase; the SVD's twin is bulge.cu, whose scheme this kernel follows).
//
// Storage and sweeps are sym_bulge.py's: the lower triangle in its 2b stored diagonals,
// column j of A at ab + j*ld with A(i, j) (i >= j) at offset i - j (ld = 2b), and sweep
// s = 0 .. n-3 made of the tasks h = 0, 1, ..., on the blocks
// X_k = [s+1+k*b, min(s+(k+1)*b, n-1)]:
//   task 0   a reflector zeroes A(s+2 : s+b, s) (column s below X_0's first row), is
//            applied two-sided to X_0 x X_0 (zlarfy), then from the right to the bulge
//            rows X_1 x X_0 (types 1 and 2 of dsb2st_kernels);
//   task h   a reflector zeroes the bulge's first column, A(X_h, c) below its first
//            entry, c = the first column of X_{h-1}, and is applied from the left to
//            A(X_h, c+1 .. end of X_{h-1}), then two-sided to X_h x X_h, then from the
//            right to X_{h+1} x X_h (types 2 and 3);
// the sweep ends after a task whose X_{h+1} is empty or one row (its bulge is still
// inside the band). These are the Numba loop's steps in its order (its reflector for
// block h is formed at the end of its iteration h-1, here at the start of task h: the
// same operations, since nothing in between touches them), each with the same
// floating-point operations in the same order.
//
// Dependency, derived for these tasks: task h of sweep s may start once sweep s-1 has
// finished its task h+2 (CHASE_LAG), or all of its tasks. Task h of sweep s reads and
// writes only rows X_h u X_{h+1} = [s+1+h*b, s+(h+2)*b] and columns X_{h-1} u X_h =
// [s+1+(h-1)*b, s+(h+1)*b] (column s alone for h = 0). Sweep s-1's blocks are one index
// earlier, so its task g covers columns from s+(g-1)*b on:
//   g = h+1   its two-sided update of X_{h+1}(s-1) = [s+(h+1)*b, s+(h+2)*b-1] covers
//             column s+(h+1)*b below the diagonal, which task h's right application
//             writes (rows X_{h+1}(s), last column of X_h(s));
//   g = h+2   its reflector reads A(s+(h+2)*b, s+(h+1)*b), the first column of
//             X_{h+1}(s-1) at the first row of X_{h+2}(s-1), the entry task h's right
//             application writes last (the band's b-th subdiagonal);
//   g >= h+3  its columns start at s+(h+2)*b, past task h's last one.
// So lag 2 orders every pair of tasks that share an entry and lag 1 does not (g = h+2
// would race); sweeps s-d are ordered transitively, their tasks past h+2d start at
// column s-d+1+(h+2d)*b > s+(h+1)*b. tests/condensed/test_sym_bulge_cuda.py checks this
// on the tasks' index sets, and on the host build: interleavings at lag 2 give the Numba
// loop's bits, at lag 1 some do not. Every entry is therefore reduced by the same
// operations in the same order as in the sequential loop, whatever the schedule: the
// kernel is deterministic (no atomics on data).
//
// Concurrency: bulge.cu's persistent kernel (chase_common.cuh's run_sweeps). Each thread
// block takes the next sweep from a ticket counter, runs its tasks in order and publishes
// its progress after each; before task h its thread 0 spins until sweep s-1 has published
// task h + CHASE_LAG.
//
// Within a task: warp 0 forms the reflector (chase_common.cuh's, with dlarfg's rescaling
// of subnormal columns, as bulge._reflector), then every thread takes one row of the
// update: the row's entry of w = A*v in the Numba loop's order of additions (the row left
// of the diagonal as the column loop adds it, then the column below), thread 0 sums
// v^T*w sequentially, and each thread updates its row of the lower triangle, its row of
// the bulge (right) or one column (left), rounded as chase_common.cuh says. float data is
// computed as the Numba loop computes it: the dot products and the rank-2 update in
// float, the reflector's scalars, v^T*w and the one-sided updates in double, rounded when
// stored. On the GPU the twins agree to rounding (CUDA's hypot), the host build
// (tests/condensed/host_sym_bulge.py) bit for bit. Real bands only; complex ones stay on
// the Numba loop.
//
// With one thread per block (the host build) every loop runs sequentially.

#include "chase_common.cuh"

constexpr int CHASE_LAG = 2;

// The band (module comment) and the recorded reflectors of sym_bulge.ChaseReflectors:
// v (sweeps, steps, b) and tau (sweeps, steps), steps = 0 when nothing is recorded.
template <typename T> struct Band {
    T *ab;
    long long ld;
    int n, b;
    T *v_rec, *tau_rec;
    int steps;

    __device__ T *at(int i, int j) const { return ab + j * ld + (i - j); }
};

// Shared scratch of a task: the squares of the reflector's scaled entries (b doubles), its
// tau, v^T*w's scalar alpha, then the reflector v and w = A*v (b entries of T each):
// (b + 2) * 8 + 2 * b * sizeof(T) bytes.
template <typename T> struct Scratch {
    double *squares;
    double *tau;
    double *alpha;
    T *v;
    T *w;
};

template <typename T> __device__ Scratch<T> scratch(unsigned char *raw, int b)
{
    Scratch<T> s;
    s.squares = reinterpret_cast<double *>(raw);
    s.tau = s.squares + b;
    s.alpha = s.tau + 1;
    s.v = reinterpret_cast<T *>(s.alpha + 1);
    s.w = s.v + b;
    return s;
}

// A(st:st+ln, st:st+ln) <- H^T A H on its lower triangle (sym_bulge._hermitian_update,
// zlarfy): w = tau*A*v - 1/2*tau^2*(v^T*A*v)*v, A <- A - v*w^T - w*v^T. Every thread
// calls it.
template <typename T>
__device__ void hermitian_update(const Band<T> &a, int st, int ln, Scratch<T> w)
{
    const double tau = *w.tau;
    for (int i = threadIdx.x; i < ln; i += blockDim.x) {
        // The Numba loop adds A(i, j)*v_j to w_i for the columns j < i in order, then
        // column i's own sum A(i, i)*v_i + sum_{k > i} A(k, i)*v_k.
        T left = T(0);
        for (int j = 0; j < i; ++j) left = add_rn(left, mul_rn(*a.at(st + i, st + j), w.v[j]));
        const T *col = a.at(st + i, st + i);
        T acc = mul_rn(col[0], w.v[i]);
        for (int k = i + 1; k < ln; ++k) acc = add_rn(acc, mul_rn(col[k - i], w.v[k]));
        w.w[i] = add_rn(left, acc);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        double vav = 0.0;
        for (int i = 0; i < ln; ++i) vav = add_rn(vav, double(mul_rn(w.v[i], w.w[i])));
        const double t = fabs(tau);
        *w.alpha = mul_rn(mul_rn(-0.5, mul_rn(t, t)), vav);
    }
    __syncthreads();
    const double alpha = *w.alpha;
    for (int i = threadIdx.x; i < ln; i += blockDim.x)
        w.w[i] = T(add_rn(mul_rn(tau, double(w.w[i])), mul_rn(alpha, double(w.v[i]))));
    __syncthreads();
    for (int i = threadIdx.x; i < ln; i += blockDim.x) {
        const T vi = w.v[i], wi = w.w[i];
        for (int j = 0; j <= i; ++j) {
            T *p = a.at(st + i, st + j);
            *p = *p - add_rn(mul_rn(vi, w.w[j]), mul_rn(wi, w.v[j]));
        }
    }
}

// A(r0:r0+rows, c0:c0+ln) <- A (I - tau v v^T), one row per thread
// (sym_bulge._apply_right).
template <typename T>
__device__ void apply_right(const Band<T> &a, int r0, int rows, int c0, int ln, Scratch<T> w)
{
    const double tau = *w.tau;
    for (int i = r0 + threadIdx.x; i < r0 + rows; i += blockDim.x) {
        T dot = T(0);
        for (int t = 0; t < ln; ++t) dot = add_rn(dot, mul_rn(*a.at(i, c0 + t), w.v[t]));
        for (int t = 0; t < ln; ++t) {
            T *p = a.at(i, c0 + t);
            *p = T(double(*p) - mul_rn(double(dot), mul_rn(tau, double(w.v[t]))));
        }
    }
}

// A(r0:r0+ln, c0:c1) <- (I - tau v v^T)^T A, one column per thread
// (sym_bulge._apply_left).
template <typename T>
__device__ void apply_left(const Band<T> &a, int r0, int ln, int c0, int c1, Scratch<T> w)
{
    const double tau = *w.tau;
    for (int c = c0 + threadIdx.x; c < c1; c += blockDim.x) {
        T *col = a.at(r0, c);
        T dot = mul_rn(w.v[0], col[0]);
        for (int i = 1; i < ln; ++i) dot = add_rn(dot, mul_rn(w.v[i], col[i]));
        const double wt = mul_rn(double(dot), tau);
        for (int i = 0; i < ln; ++i) col[i] = T(double(col[i]) - mul_rn(wt, double(w.v[i])));
    }
}

template <typename T>
__device__ void record(const Band<T> &a, int s, int h, int ln, Scratch<T> w)
{
    if (a.steps == 0) return;
    const long long at = (long long)s * a.steps + h;
    for (int i = threadIdx.x; i < ln; i += blockDim.x) a.v_rec[at * a.b + i] = w.v[i];
    if (threadIdx.x == 0) a.tau_rec[at] = T(*w.tau);
}

// Task h of sweep s (module comment); false when it was the sweep's last. Every thread of
// the block calls it; shared scratch w.
template <typename T>
__device__ bool chase_task(const Band<T> &a, int s, int h, Scratch<T> w)
{
    const int n = a.n, b = a.b;
    const int st = s + 1 + h * b, ed = smaller(st + b - 1, n - 1), ln = ed - st + 1;
    const int c = h == 0 ? s : st - b;  // the column the reflector zeroes
    if (threadIdx.x < smaller(32, blockDim.x))
        reflector<T>([&](int i) { return a.at(st + i, c); }, ln, w, threadIdx.x,
                     smaller(32, blockDim.x));
    __syncthreads();
    if (h > 0) apply_left(a, st, ln, c + 1, st, w);  // the bulge's other columns
    record(a, s, h, ln, w);
    hermitian_update(a, st, ln, w);
    const int j1 = ed + 1, j2 = smaller(ed + b, n - 1);
    if (j1 > j2) return false;  // the block reached the end
    apply_right(a, j1, j2 - j1 + 1, st, ln, w);  // the bulge
    return j2 > j1;  // a bulge of one row is still inside the band
}

// All sweeps of the band ab (n x 2b, row j = column j of A's lower triangle) in place.
// sync (n - 1 ints, zero): the ticket counter, then the progress of every sweep. v_rec,
// tau_rec: sym_bulge.ChaseReflectors' arrays when steps > 0. Dynamic shared memory: the
// Scratch.
template <typename T>
__global__ void __launch_bounds__(CHASE_MAX_THREADS)
    sym_chase_band(T *ab, int n, int b, int *sync, T *v_rec, T *tau_rec, int steps)
{
    extern __shared__ __align__(16) unsigned char shared_raw[];
    const Band<T> a = {ab, 2LL * b, n, b, v_rec, tau_rec, steps};
    const Scratch<T> w = scratch<T>(shared_raw, b);
    run_sweeps<CHASE_LAG>(n, sync, [&](int s, int h) { return chase_task(a, s, h, w); });
}
