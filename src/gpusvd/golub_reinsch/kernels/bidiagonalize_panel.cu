// One panel of the blocked Householder bidiagonalization (paper 000, Alg. 2, steps 3-19;
// LAPACK dlabrd), fused into one cooperative kernel.
//
// The panel reduces nb columns and rows of the M x N view `a` with matrix-vector products
// and accumulates X (M x nb) and Y (N x nb) for the trailing update, which the host then
// does with two GEMMs. Written with CuPy operations the panel costs ~60 launches per column,
// which on a GPU is all launch overhead; here every column costs four grid-wide barriers.
// The arithmetic follows bidiagonalize._reduce_panel (the NumPy twin) step for step:
//
//   A(j)  column update  a(j:, j) -= a(j:, :j) y(j, :j)' + x(j:, :j) a(:j, j)   (step 12)
//   B(j)  H_j (steps 13-14); t = a(j:, :)' v, w1 = a(j:, :j)' v, w2 = x(j:, :j)' v
//   C(j)  y(j+1:, j) = tauq (t - y w1 - a(:j, :)' w2); row update (step 15); v scaled
//   D(j)  G_j (steps 16-17); a(:, j+1:) u by column chunks; z1 = y(j+1:, :j+1)' u
//   E(j)  x(j+1:, j) = taup (a u - a(:, :j+1) z1 - x z2) (step 18); u scaled
//
// E(j) is fused with A(j+1). The Householder vectors are scaled one phase late, so that
// no phase reads an entry another block of the same phase writes; the unit entries
// a(j, j) and a(j, j+1) are read as 1 implicitly. Reductions are done in a fixed order
// (per-block partial sums, then one ordered sum), so results are deterministic.
// Layout: column-major, element (r, c) of a at a[r + c * lda].
//
// Complex T (Complex<float>, Complex<double>) is reduced as by LAPACK's zlabrd, as the twin
// does: dot products take the conjugate of the column (conj), the Householder scalars of
// zlarfg leave beta real (d, e and the sums of squares are of the real type R), and the
// right reflectors act on the conjugated row, which is conjugated back when its vector is
// scaled. For real T conj is the identity and every operation is the real one.

#include <cooperative_groups.h>

#include "../../_core/cuda/complex.cuh"

// ------------------------------------------------------------------ scalar types
// The few operations the kernel needs beyond complex.cuh's, real and complex alike.

template <typename T> struct RealOf { typedef T Type; };
template <typename R> struct RealOf<Complex<R>> { typedef R Type; };

template <typename R> __device__ __forceinline__ Complex<R> &operator+=(Complex<R> &a, Complex<R> b)
{
    return a = a + b;
}
template <typename R> __device__ __forceinline__ Complex<R> &operator-=(Complex<R> &a, Complex<R> b)
{
    return a = a - b;
}
template <typename R> __device__ __forceinline__ Complex<R> &operator*=(Complex<R> &a, Complex<R> b)
{
    return a = a * b;
}

template <typename T> __device__ __forceinline__ T conj(T x) { return x; }
template <typename T> __device__ __forceinline__ T real(T x) { return x; }
template <typename R> __device__ __forceinline__ R real(Complex<R> x) { return x.re; }
template <typename T> __device__ __forceinline__ T imag(T) { return T(0); }
template <typename R> __device__ __forceinline__ R imag(Complex<R> x) { return x.im; }
// |x|² and |x| in double, the Householder norm's terms: float data's squares and moduli
// would underflow or be rounded to the subnormal grid in float (a graded matrix's columns
// reach entries below 1e-19, whose squares are 0 in float; hypotf of a subnormal
// complex64 entry is up to 11% off), and reflectors made from such terms are not
// unitary. The real magnitude keeps x's sign (hypot ignores it).
__device__ __forceinline__ double wide_abs2(float x) { return double(x) * double(x); }
__device__ __forceinline__ double wide_abs2(double x) { return x * x; }
template <typename R> __device__ __forceinline__ double wide_abs2(Complex<R> x)
{
    return double(x.re) * double(x.re) + double(x.im) * double(x.im);
}
template <typename T> __device__ __forceinline__ bool nonzero(T x) { return x != T(0); }
template <typename R> __device__ __forceinline__ bool nonzero(Complex<R> x)
{
    return x.re != R(0) || x.im != R(0);
}
// wide_abs2, or the smallest subnormal where a nonzero x's square underflows to zero: a
// column of such entries then sums to a positive total below SSQ_LO, which grid_norm
// sums again, while a column of zeros keeps its total of zero.
template <typename T> __device__ __forceinline__ double flagged_abs2(T x)
{
    const double q = wide_abs2(x);
    return q == 0.0 && nonzero(x) ? 0x1p-1074 : q;
}
template <typename T> __device__ __forceinline__ double magnitude(T x) { return double(x); }
template <typename R> __device__ __forceinline__ double magnitude(Complex<R> x)
{
    return hypot(double(x.re), double(x.im));
}
// A column's or row's sum of squares is first the plain one in double (flagged_abs2).
// Where it is not zero and lands outside (2^-900, 2^1000), squares may have underflowed
// (double data's entries below 1e-154) or overflowed, and the reflectors made from it
// would not be unitary: the grid then sums again by Blue's three accumulators (as
// LAPACK's dnrm2), entries below 2^-511 scaled up by 2^537 and those above 2^486 down by
// 2^-538. Inside that range the lost squares (each below 2^-1022) are below 2^-100 of
// the sum; a total of zero is a column of zeros.
#define SSQ_LO 0x1p-900
#define SSQ_HI 0x1p1000
#define SSQ_TSML 0x1p-511
#define SSQ_TBIG 0x1p486
#define SSQ_SSML 0x1p537
#define SSQ_SBIG 0x1p-538
struct SumSq {
    double sml, med, big;
};
__device__ __forceinline__ void add_square(SumSq &s, double x)
{
    const double ax = fabs(x);
    if (ax > SSQ_TBIG) s.big += (ax * SSQ_SBIG) * (ax * SSQ_SBIG);
    else if (ax < SSQ_TSML) s.sml += (ax * SSQ_SSML) * (ax * SSQ_SSML);
    else s.med += ax * ax;
}
__device__ __forceinline__ void add_square(SumSq &s, float x) { add_square(s, double(x)); }
template <typename R> __device__ __forceinline__ void add_square(SumSq &s, Complex<R> x)
{
    add_square(s, double(x.re));
    add_square(s, double(x.im));
}
// sqrt of the sum the three accumulators hold, without overflow or underflow.
__device__ __forceinline__ double root_of(SumSq s)
{
    if (s.big > 0.0) return sqrt(s.big + (s.med * SSQ_SBIG) * SSQ_SBIG) / SSQ_SBIG;
    if (s.sml > 0.0) {
        if (!(s.med > 0.0)) return sqrt(s.sml) / SSQ_SSML;
        const double a = sqrt(s.med), b = sqrt(s.sml) / SSQ_SSML;
        const double hi = fmax(a, b), lo = fmin(a, b);
        return hi * sqrt(1.0 + (lo / hi) * (lo / hi));
    }
    return sqrt(s.med);
}
// The element of value r (real r).
template <typename T> struct Make {
    static __device__ __forceinline__ T of(T r) { return r; }
};
template <typename R> struct Make<Complex<R>> {
    static __device__ __forceinline__ Complex<R> of(R r) { return cplx(r, R(0)); }
};
// (beta - alpha) / beta and 1 / (alpha - beta), real beta: the zlarfg scalars, formed in
// double and rounded once to the data's type. |Re(alpha) - beta| = |Re alpha| + |beta| >=
// |alpha| >= |Im alpha| (beta = -sign(Re alpha)·‖x‖), so the complex inverse takes the
// ratio Im/Re, at most 1 (Smith's quotient), and squares nothing that could underflow.
template <typename T> __device__ __forceinline__ T tau_of(T alpha, double beta)
{
    return T((beta - double(alpha)) / beta);
}
template <typename R> __device__ __forceinline__ Complex<R> tau_of(Complex<R> alpha, double beta)
{
    return cplx(R((beta - double(alpha.re)) / beta), R(-double(alpha.im) / beta));
}
template <typename T> __device__ __forceinline__ T inverse_of_difference(T alpha, double beta)
{
    return T(1.0 / (double(alpha) - beta));
}
template <typename R>
__device__ __forceinline__ Complex<R> inverse_of_difference(Complex<R> alpha, double beta)
{
    const double re = double(alpha.re) - beta, ratio = double(alpha.im) / re;
    const double den = re + double(alpha.im) * ratio;
    return cplx(R(1.0 / den), R(-ratio / den));
}
__device__ __forceinline__ float shfl_xor(float v, int o)
{
    return __shfl_xor_sync(0xffffffffu, v, o);
}
__device__ __forceinline__ double shfl_xor(double v, int o)
{
    return __shfl_xor_sync(0xffffffffu, v, o);
}
template <typename R> __device__ __forceinline__ Complex<R> shfl_xor(Complex<R> v, int o)
{
    return cplx(shfl_xor(v.re, o), shfl_xor(v.im, o));
}


namespace cg = cooperative_groups;

#define PANEL_THREADS 256

// work[] layout (offsets in elements), sized by the host (bidiagonalize_cuda.py)
enum { S_ALPHA = 0, S_ALPHA2 = 1, S_TAU = 2, S_SCALE = 3, S_TAU2 = 4, S_SCALE2 = 5, S_END = 8 };

template <typename T>
__device__ T block_sum(T v, T *shm)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) shm[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < PANEL_THREADS / 32 ? shm[lane] : T(0);
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
        if (lane == 0) shm[0] = v;
    }
    __syncthreads();
    v = shm[0];
    __syncthreads();
    return v;
}

// Independent partial sums per lane: enough loads in flight to approach the memory
// bandwidth (one dependent FMA chain per warp reached only 14-23% of it, NOTES.md).
// Complex elements are twice as wide, so half as many sums keep as many bytes in flight,
// and Complex<double> stays within the 128 registers of two blocks per SM without spills.
template <typename T> struct Unroll { enum { value = 4 }; };
template <typename R> struct Unroll<Complex<R>> { enum { value = 2 }; };
#define UNROLL (Unroll<T>::value)

// A lane's share of the dot product of conj(col(r)) and v(r) for r = r0, r0 + 32, ... < M.
template <typename T>
__device__ T dot_strided(const T *__restrict__ col, const T *__restrict__ v, long long r0,
                         long long M)
{
    T acc[UNROLL] = {};
    long long r = r0;
    for (; r + 32 * (UNROLL - 1) < M; r += 32 * UNROLL) {
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) acc[k] += conj(col[r + 32 * k]) * v[r + 32 * k];
    }
    for (; r < M; r += 32) acc[0] += conj(col[r]) * v[r];
#pragma unroll
    for (int k = 1; k < UNROLL; ++k) acc[0] += acc[k];
    return acc[0];
}

template <typename T>
__device__ T warp_sum(T v)
{
    for (int o = 16; o > 0; o >>= 1) v += shfl_xor(v, o);
    return v;
}

// Householder scalars from alpha and the per-block partial sums of squares (dlarfg,
// zlarfg; the NumPy twin is bidiagonalize._householder), in double (grid_norm). Every
// block computes them the same way. beta is real; a complex alpha alone still takes a
// reflector, to make it real.
template <typename T, typename R>
__device__ void householder(T alpha, double xnorm, R &beta, T &tau, T &scale)
{
    if (xnorm == 0.0 && imag(alpha) == R(0)) {
        beta = real(alpha); tau = Make<T>::of(R(0)); scale = Make<T>::of(R(1));
    } else {
        const double wide = -copysign(hypot(magnitude(alpha), xnorm), double(real(alpha)));
        beta = R(wide);
        tau = tau_of(alpha, wide);
        scale = inverse_of_difference(alpha, wide);
    }
}

// The norm of the entries x(i) = at[i·stride], i0 <= i < n, i != skip, each thread
// reading the i of its own stride (those it wrote), from the blocks' plain sums of
// squares in partials[0 .. gridDim.x): their total's root where it is safely inside
// (SSQ_LO, SSQ_HI) or zero, else Blue's sums, through partials[gridDim.x ..) and one
// more grid synchronization. The branch is the same in every block. Not inlined: its
// sums kept the kernel's complex<double> build from fitting 128 registers.
template <typename T>
__device__ __noinline__ double grid_norm(const T *at, long long stride, long long i0,
                                        long long n, long long skip,
                                        const double *partials, double *shm,
                                        cg::grid_group &grid)
{
    double s = 0;
    for (int i = threadIdx.x; i < gridDim.x; i += blockDim.x) s += partials[i];
    s = block_sum(s, shm);
    if (s == 0.0 || (s > SSQ_LO && s < SSQ_HI)) return sqrt(s);
    SumSq mine = {0.0, 0.0, 0.0};
    const long long gtid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long nthreads = (long long)gridDim.x * blockDim.x;
    for (long long i = i0 + gtid; i < n; i += nthreads)
        if (i != skip) add_square(mine, at[i * stride]);
    mine.sml = block_sum(mine.sml, shm);
    mine.med = block_sum(mine.med, shm);
    mine.big = block_sum(mine.big, shm);
    double *blue = const_cast<double *>(partials) + gridDim.x;
    if (threadIdx.x == 0) {
        blue[3 * blockIdx.x] = mine.sml;
        blue[3 * blockIdx.x + 1] = mine.med;
        blue[3 * blockIdx.x + 2] = mine.big;
    }
    grid.sync();
    SumSq all = {0.0, 0.0, 0.0};
    for (int i = threadIdx.x; i < gridDim.x; i += blockDim.x) {
        all.sml += blue[3 * i];
        all.med += blue[3 * i + 1];
        all.big += blue[3 * i + 2];
    }
    all.sml = block_sum(all.sml, shm);
    all.med = block_sum(all.med, shm);
    all.big = block_sum(all.big, shm);
    return root_of(all);
}

template <typename T>
__global__ void __launch_bounds__(PANEL_THREADS, 2)
bidiagonalize_panel(T *a, long long lda, int M, int N, int nb, T *x, long long ldx, T *y,
                    long long ldy, typename RealOf<T>::Type *d, typename RealOf<T>::Type *e,
                    T *tauq, T *taup, T *work, int nchunks)
{
    typedef typename RealOf<T>::Type R;
    const T zero = Make<T>::of(R(0)), one = Make<T>::of(R(1));
    cg::grid_group grid = cg::this_grid();
    __shared__ double shm[32];
    extern __shared__ unsigned char smem_raw[];
    T *sh = reinterpret_cast<T *>(smem_raw);  // 4 * nb values
    T *scal = work;
    // 4 gridDim.x doubles (grid_norm), in the room of (8 / sizeof(T) rounded up) T's each
    double *partials = reinterpret_cast<double *>(work + S_END);
    T *t = work + S_END + 4 * gridDim.x * ((sizeof(double) + sizeof(T) - 1) / sizeof(T));
    T *w1 = t + N, *w2 = w1 + nb, *z1 = w2 + nb;
    T *t2 = z1 + nb;                         // nchunks x M: partial a(:, j+1:) u
#define A(r, c) a[(r) + (long long)(c) * lda]
#define X(r, k) x[(r) + (long long)(k) * ldx]
#define Y(c, k) y[(c) + (long long)(k) * ldy]
    const long long gtid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long nthreads = (long long)gridDim.x * blockDim.x;
    const int lane = threadIdx.x & 31;
    const long long gwarp = gtid >> 5, nwarps = nthreads >> 5;

    for (int j = 0; j <= nb; ++j) {
        // ---- E(j-1) fused with A(j) -------------------------------------------------
        T *sz1 = sh, *sz2 = sh + nb, *syr = sh + 2 * nb, *sac = sh + 3 * nb;
        const int p = j - 1;
        T tau2 = zero;
        if (j > 0) {
            tau2 = scal[S_TAU2];
            for (int k = threadIdx.x; k <= p; k += blockDim.x) sz1[k] = z1[k];
            for (int k = threadIdx.x; k < p; k += blockDim.x) {
                T s = zero;
                for (int c = 0; c < nchunks; ++c) s += t2[(long long)c * M + k];
                sz2[k] = s;
            }
        }
        if (j < nb) {
            for (int k = threadIdx.x; k < j; k += blockDim.x) {
                syr[k] = conj(Y(j, k));
                sac[k] = A(k, j);
            }
        }
        __syncthreads();
        double part = 0;
        for (long long r = (j > 0 ? j : 0) + gtid; r < M; r += nthreads) {
            if (j > 0) {
                T s = zero;
                for (int c = 0; c < nchunks; ++c) s += t2[(long long)c * M + r];
                for (int k = 0; k <= p; ++k) s -= A(r, k) * sz1[k];
                for (int k = 0; k < p; ++k) s -= X(r, k) * sz2[k];
                X(r, p) = tau2 * s;
            }
            if (j < nb) {
                T v = A(r, j);
                for (int k = 0; k < j; ++k) v -= A(r, k) * syr[k] + X(r, k) * sac[k];
                A(r, j) = v;
                if (r == j) scal[S_ALPHA] = v;
                else part += flagged_abs2(v);
            }
        }
        if (j > 0) {  // u(p) scaled, and conjugated back: row p of W holds conj(u)
            const T scale2 = scal[S_SCALE2];
            for (long long c = p + 2 + gtid; c < N; c += nthreads)
                A(p, c) = conj(A(p, c) * scale2);
        }
        if (j == nb) break;
        part = block_sum(part, shm);
        if (threadIdx.x == 0) partials[blockIdx.x] = part;
        grid.sync();

        // ---- B(j): H_j, then t = a(j:, j+1:)' v, w1 = a(j:, :j)' v, w2 = x(j:, :j)' v --
        R beta;
        T tau, scale;
        householder(scal[S_ALPHA], grid_norm(&A(0, j), 1, j, M, j, partials, shm, grid),
                    beta, tau, scale);
        if (gtid == 0) {
            d[j] = beta; tauq[j] = tau; A(j, j) = one;
            scal[S_TAU] = tau; scal[S_SCALE] = scale;
        }
        const long long ncols = 2LL * j + (N - j - 1);
        for (long long q = gwarp; q < ncols; q += nwarps) {
            const T *col;
            T *out;
            if (q < j) { col = &A(0, q); out = w1 + q; }
            else if (q < 2 * j) { col = &X(0, q - j); out = w2 + (q - j); }
            else { const long long c = j + 1 + (q - 2 * j); col = &A(0, c); out = t + c; }
            const T s = warp_sum(dot_strided(col, &A(0, j), j + 1 + lane, M));
            if (lane == 0) *out = conj(col[j]) + scale * s;
        }
        grid.sync();

        // ---- C(j): y(j+1:, j), the row update, v scaled ---------------------------------
        tau = scal[S_TAU];
        scale = scal[S_SCALE];
        T *sw1 = sh, *sw2 = sh + nb, *srow = sh + 2 * nb, *sxr = sh + 3 * nb;
        for (int k = threadIdx.x; k <= j; k += blockDim.x) {
            if (k < j) { sw1[k] = w1[k]; sw2[k] = w2[k]; sxr[k] = X(j, k); }
            srow[k] = k == j ? one : A(j, k);
        }
        __syncthreads();
        part = 0;
        for (long long c = j + 1 + gtid; c < N; c += nthreads) {
            T yv = t[c];
            for (int k = 0; k < j; ++k) yv -= Y(c, k) * sw1[k] + conj(A(k, c)) * sw2[k];
            yv *= tau;
            Y(c, j) = yv;
            T rv = A(j, c);
            for (int k = 0; k <= j; ++k) rv -= conj(Y(c, k)) * srow[k];
            for (int k = 0; k < j; ++k) rv -= A(k, c) * sxr[k];
            rv = conj(rv);  // G_j's Householder vector is made from the conjugated row
            A(j, c) = rv;
            if (c == j + 1) scal[S_ALPHA2] = rv;
            else part += flagged_abs2(rv);
        }
        for (long long r = j + 1 + gtid; r < M; r += nthreads) A(r, j) *= scale;
        part = block_sum(part, shm);
        if (threadIdx.x == 0) partials[blockIdx.x] = part;
        grid.sync();

        // ---- D(j): G_j, z1 = y(j+1:, :j+1)' u, partial a(r, j+1:) u by column chunks ----
        householder(scal[S_ALPHA2], grid_norm(&A(j, 0), lda, j + 1, N, j + 1, partials, shm,
                                              grid), beta, tau, scale);
        if (gtid == 0) {
            e[j] = beta; taup[j] = tau; A(j, j + 1) = one;
            scal[S_TAU2] = tau; scal[S_SCALE2] = scale;
        }
        for (long long k = gwarp; k <= j; k += nwarps) {
            T s = zero;
            for (long long c = j + 2 + lane; c < N; c += 32) s += conj(Y(c, k)) * A(j, c);
            s = warp_sum(s);
            if (lane == 0) z1[k] = conj(Y(j + 1, k)) + scale * s;
        }
        {
            const long long width = N - j - 1;
            const long long chunk = (width + nchunks - 1) / nchunks;
            const long long tiles = (M + blockDim.x - 1) / blockDim.x;
            for (long long item = blockIdx.x; item < tiles * nchunks; item += gridDim.x) {
                const long long ch = item / tiles;
                const long long r = (item % tiles) * blockDim.x + threadIdx.x;
                if (r >= M || r == j) continue;
                const long long c0 = j + 1 + ch * chunk, c1 = min(c0 + chunk, (long long)N);
                if (c0 >= c1) {
                    t2[ch * M + r] = zero;
                    continue;
                }
                // The unit entry u(j+1) = 1 first, then UNROLL independent sums: loads in
                // flight, not the FMA latency chain, must set the pace of this product.
                T s = c0 == j + 1 ? A(r, c0) : scale * (A(r, c0) * A(j, c0));
                T acc[UNROLL] = {};
                long long c = c0 + 1;
                for (; c + UNROLL <= c1; c += UNROLL) {
#pragma unroll
                    for (int k = 0; k < UNROLL; ++k) acc[k] += A(r, c + k) * A(j, c + k);
                }
                for (; c < c1; ++c) acc[0] += A(r, c) * A(j, c);
#pragma unroll
                for (int k = 1; k < UNROLL; ++k) acc[0] += acc[k];
                t2[ch * M + r] = s + scale * acc[0];
            }
        }
        grid.sync();
    }
#undef A
#undef X
#undef Y
}
