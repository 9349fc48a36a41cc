// Inner (pointwise) one-sided Jacobi on a batch of small matrices: the orthogonalize
// phase of paper 003's pStep kernel (§4.3, subphases 1-7), after the shortening.
//
// One thread block per batch element. The block loads its g (m x k) and v (k x k) into
// shared memory, column-major with an odd leading dimension (the row-major global
// arrays are transposed on the way in and out without bank conflicts), and runs the
// parallel pivot strategy `pairs`: in each p-step the k/2 disjoint pairs are handled
// concurrently, one group of L lanes (L = 4, 8, 16 or 32: a sub-warp or a warp) per pair.
// The lanes of a group own rows lane, lane + L, ... and
//   1. form their partial sums of h_pp, h_qq and h_pq and reduce them by a butterfly of
//      xor shuffles, so every lane holds the same bits (IEEE addition commutes);
//   2-4. take the same decisions and the same rotation: the relative orthogonality test
//      |h_pq| > tol * (sqrt(h_pp) * sqrt(h_qq)), the rotation of jacobi_rotation (the
//      Rutishauser formulas (15)-(18) of §4.3.1), trigonometric or hyperbolic by the
//      signs of p and q;
//   5. the sorting swap of trigonometric pairs (§4.3, step 5);
//   6. update their rows of columns p, q of g and of v.
// A __syncthreads separates the p-steps (their pairs are disjoint, consecutive steps are
// not). A sweep is all p-steps; the block stops after a sweep in which no pair failed the
// orthogonality test (__syncthreads_or, the paper's __syncthreads_count), or after
// max_sweeps. Proper rotations (cs != 1) are counted per group and summed at the end.
//
// Steps 1-6 are computed in double for every element type (the type Work), the entries
// of g and v rounded to their own type once, when stored. For single precision data this
// is not a luxury: the columns of graded or rank-deficient matrices reach norms of 1e-17
// and entries of 1e-21, whose float32 squares and products are subnormal or zero, so float32
// dot products cannot see the relative orthogonality u*sqrt(m) the test asks for, and
// float32 updates of such columns err by more than it (the float32 contract failures on the
// H100: orthogonality of V up to 5e5 n*eps on side="both" graded input, reproduced by an
// emulation of the float32 kernel on the CPU). Products of two floats are exact in double
// and cannot underflow there, so the float Gram sums do not depend on contraction.
// The small SVD (small_svd.cu), whose columns are scaled and never rotated below 2^-102,
// asks pair_step for its Narrow variant: float data then computes (16)-(18) and the
// updates of step 6 in float, the rest in double.
//
// The CPU twin is gpusvd/jacobi/inner.py and the rotation's reference is
// gpusvd/jacobi/rotations.py. jacobi_rotation, the orthogonality test, the phase and the
// sorting test are evaluated with the same operations in the same order, with explicitly
// rounded products and sums (no contraction into fma), so they give the twin's bits for
// the same h_pp, h_qq, h_pq. The dot products are summed in a different order (a parallel
// reduction) and the column updates may be contracted into fma, so whole runs agree to
// rounding, not to the bit (with one lane per pair and no contraction, as in the host build
// of tests/jacobi/test_inner_host.py, to the bit).

// ------------------------------------------------------------------ scalar types

#include "../../_core/cuda/complex.cuh"

template <typename T> struct Scalar;
template <> struct Scalar<float> { typedef float Real; static const bool complex = false; };
template <> struct Scalar<double> { typedef double Real; static const bool complex = false; };
template <> struct Scalar<Complex<float>> { typedef float Real; static const bool complex = true; };
template <> struct Scalar<Complex<double>> {
    typedef double Real;
    static const bool complex = true;
};

// The type of steps 1-6 (pivot Gram matrix, test, rotation, column updates) for all data
// but the small SVD's float data (pair_step's Narrow).
typedef double Work;

// A if the condition holds, else B (NVRTC has no <type_traits>).
template <bool C, typename A, typename B> struct Pick { typedef A type; };
template <typename A, typename B> struct Pick<false, A, B> { typedef B type; };

// Products and sums rounded one by one: nvcc contracts a * b + c into fma unless the
// product is written with an intrinsic, and the twin (Numba) never contracts.
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double sub_rn(double a, double b) { return __dsub_rn(a, b); }

// u, the unit roundoff of R (the paper's epsilon): 2^-24 and 2^-53.
template <typename R> __device__ __forceinline__ double unit_roundoff();
template <> __device__ __forceinline__ double unit_roundoff<float>() { return 0x1p-24; }
template <> __device__ __forceinline__ double unit_roundoff<double>() { return 0x1p-53; }

// Value that replaces a hyperbolic |coth 2phi| <= 1 (§4.3.1, after the paper's ref. [41]).
#define COTH_SUBSTITUTE 1.25

// ------------------------------------------------------------------ the rotation

// Cosine and tangent (cosh and tanh when hyperbolic) of the Jacobi rotation from
// ct2 = (15), by (16)-(18) with the special cases of §4.3.1, in R. ct2 is of type C: R, or
// double for float R (the small SVD's float rotations of float64 Gram sums: |ct2| at or
// past sqrt(2/u) is handled in double, where tn = 1/(2|ct2|) may lie below float's normal
// range, and only a smaller |ct2| is rounded to R). Mirrors
// gpusvd.jacobi.rotations.rotation_of operation for operation; the thresholds sqrt(u) and
// sqrt(2/u) are computed in double and rounded to R, as there.
template <typename R, typename C>
__device__ void rotation_of(C ct2, bool hyperbolic, R &cs, R &tn)
{
    const R one = R(1);
    const R small = R(sqrt(unit_roundoff<R>()));
    const R big = R(sqrt(2.0 / unit_roundoff<R>()));
    C wide = fabs(ct2);
    const R sg = ct2 >= C(0) ? one : -one;
    if (hyperbolic && wide <= C(1)) wide = C(COTH_SUBSTITUTE);
    if (wide >= C(big)) {
        cs = one;
        tn = R(mul_rn(C(sg), C(0.5) / wide));
        return;
    }
    const R a = R(wide);
    R root;
    if (hyperbolic)
        root = sqrt(mul_rn(sub_rn(a, one), add_rn(a, one)));                     // (16)
    else if (a < small)
        root = one;
    else
        root = sqrt(add_rn(mul_rn(a, a), one));
    const R ct = add_rn(a, root);
    tn = sg / ct;                                                                // (17)
    if (ct >= big)
        cs = one;
    else if (hyperbolic)
        cs = ct / sqrt(mul_rn(sub_rn(ct, one), add_rn(ct, one)));                // (18), cs2
    else
        cs = ct / sqrt(add_rn(mul_rn(ct, ct), one));
}

// (15): ct2 = t (h_qq - t h_pp) / (2 |h_pq|), t = -1 hyperbolic, else 1.
template <typename R>
__device__ __forceinline__ R cot_2phi(R app, R aqq, R apq_abs, bool hyperbolic)
{
    const R t = hyperbolic ? R(-1) : R(1);
    return mul_rn(t, sub_rn(aqq, mul_rn(t, app))) / mul_rn(R(2), apq_abs);
}

// The rotation of one pivot pair from h_pp, h_qq and |h_pq| > 0, all in R
// (gpusvd.jacobi.rotations.rotation).
template <typename R>
__device__ void jacobi_rotation(R app, R aqq, R apq_abs, bool hyperbolic, R &cs, R &tn)
{
    rotation_of<R, R>(cot_2phi(app, aqq, apq_abs, hyperbolic), hyperbolic, cs, tn);
}

// The rotation over a table of cases, for checking it against the reference
// (tests/jacobi/rotation_cases.py). One thread per case.
template <typename R>
__global__ void rotation_table(const R *__restrict__ app, const R *__restrict__ aqq,
                               const R *__restrict__ apq_abs,
                               const bool *__restrict__ hyperbolic, R *cs, R *tn, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) jacobi_rotation(app[i], aqq[i], apq_abs[i], hyperbolic[i], cs[i], tn[i]);
}

// ------------------------------------------------------------------ per-entry arithmetic

// Partial pivot Gram matrix in Work: h_pp += |x|^2, h_qq += |y|^2, h_pq += conj(x) y.
template <typename R>
__device__ __forceinline__ void gram_add(R x, R y, Work &app, Work &aqq, Work &re, Work &)
{
    const Work a = x, b = y;
    app += a * a;
    aqq += b * b;
    re += a * b;
}
template <typename R>
__device__ __forceinline__ void gram_add(Complex<R> x, Complex<R> y, Work &app, Work &aqq,
                                         Work &re, Work &im)
{
    const Work xr = x.re, xi = x.im, yr = y.re, yi = y.im;
    app += xr * xr + xi * xi;
    aqq += yr * yr + yi * yi;
    re += xr * yr + xi * yi;
    im += xr * yi - xi * yr;
}

// x' = x - c_p y, y' = y + c_q x, both times cs when scale, in the coefficients' type P
// (Work, or float for the small SVD's float data) and rounded to R once (the twin's
// _rotate).
template <typename R, typename P>
__device__ __forceinline__ void rotate_entry(R &x, R &y, P cs, bool scale, P cpr, P, P cqr, P)
{
    const P xw = x, yw = y;
    P a = xw - cpr * yw;
    P b = yw + cqr * xw;
    if (scale) {
        a = cs * a;
        b = cs * b;
    }
    x = R(a);
    y = R(b);
}
template <typename R, typename P>
__device__ __forceinline__ void rotate_entry(Complex<R> &x, Complex<R> &y, P cs, bool scale,
                                             P cpr, P cpi, P cqr, P cqi)
{
    const P xr = x.re, xi = x.im, yr = y.re, yi = y.im;
    P ar = xr - (cpr * yr - cpi * yi);
    P ai = xi - (cpr * yi + cpi * yr);
    P br = yr + (cqr * xr - cqi * xi);
    P bi = yi + (cqr * xi + cqi * xr);
    if (scale) {
        ar = cs * ar;
        ai = cs * ai;
        br = cs * br;
        bi = cs * bi;
    }
    x.re = R(ar);
    x.im = R(ai);
    y.re = R(br);
    y.im = R(bi);
}

// Sum over the L lanes of a group; every lane gets the same bits.
template <int L, typename R>
__device__ __forceinline__ R group_sum(R v, unsigned mask)
{
#pragma unroll
    for (int o = L / 2; o > 0; o >>= 1) v += __shfl_xor_sync(mask, v, o, L);
    return v;
}

// ------------------------------------------------------------------ one pivot pair

// Subphases 1-6 of §4.3 on columns gp, gq of g (m rows) and vp, vq of v (k rows), by the
// L lanes of one group. Returns bit 0: the pair was rotated (it failed the orthogonality
// test), bit 1: the rotation was proper (cs != 1). A pair with h_pp or h_qq at or below
// floor2 is never rotated (columns of scaled data at or below small_svd.cu's u_floor,
// jacobi/inner.py's U_FLOOR, whose pairs could fail the test at every sweep).
// Narrow (the small SVD): the rotation after (15) and the column updates in the data's
// real type rather than in Work. For float data that removes four conversions to and
// from double per updated entry, and is safe there because the small SVD's columns are
// scaled and never rotated below u_floor = 2^-102, where float's absolute rounding 2^-150
// is below ε_float times the column's norm; the Gram sums, the test and (15) stay in Work.
template <typename T, int L, bool Narrow = false>
__device__ int pair_step(T *gp, T *gq, T *vp, T *vq, int m, int k, bool hyperbolic,
                         typename Scalar<T>::Real sign_p, typename Scalar<T>::Real tol,
                         int lane, unsigned mask, double floor2 = 0)
{
    typedef Work R;  // steps 1-5 in Work; tol and sign_p widened exactly
    typedef typename Scalar<T>::Real D;
    typedef typename Pick<Narrow, D, Work>::type P;  // the rotation's and updates' type
    // Real columns of at most C rows per lane stay in registers from the Gram sums to the
    // update, which then reads g from shared memory once instead of twice (complex ones
    // would need more registers than the 128 of a 512-thread block: 116-120 already).
    constexpr int C = Scalar<T>::complex ? 1 : 4;
    const bool cached = !Scalar<T>::complex && m <= C * L;
    T xs[C], ys[C];
    R app = 0, aqq = 0, re = 0, im = 0;
    if (cached) {
#pragma unroll
        for (int c = 0; c < C; ++c) {
            const int i = lane + c * L;
            if (i < m) {
                xs[c] = gp[i];
                ys[c] = gq[i];
                gram_add(xs[c], ys[c], app, aqq, re, im);
            }
        }
    } else {
        for (int i = lane; i < m; i += L) gram_add(gp[i], gq[i], app, aqq, re, im);
    }
    app = group_sum<L>(app, mask);
    aqq = group_sum<L>(aqq, mask);
    re = group_sum<L>(re, mask);
    if constexpr (Scalar<T>::complex) im = group_sum<L>(im, mask);  // else 0 on every lane

    // |h_pq| and its phase: for a real h_pq (every pair of real data) |re| and sign(re),
    // no square root or division (a 16² float64 step is ~300 instructions, ~60% of them in
    // the divisions' and square roots' sequences: Nsight Compute, H100).
    // A real pair whose re² underflows is not rotated, as if |h_pq| were sqrt(re²): a
    // column whose squared norm underflows (aqq = 0) would otherwise rotate at every sweep
    // and never pass the test (3×3 matrices of equal rows do that).
    const bool real = im == R(0);
    const R apq_abs = real ? fabs(re) : sqrt(add_rn(mul_rn(re, re), mul_rn(im, im)));
    const bool rotate = apq_abs > mul_rn(R(tol), mul_rn(sqrt(app), sqrt(aqq)))
                        && (!real || mul_rn(re, re) != R(0))
                        && (app < aqq ? app : aqq) > R(floor2);
    int result = 0;
    P cs = 1, cpr = 0, cpi = 0, cqr = 0, cqi = 0;
    if (rotate) {
        P tn;
        rotation_of<P, R>(cot_2phi(app, aqq, apq_abs, hyperbolic), hyperbolic, cs, tn);
        result = cs != P(1) ? 3 : 1;
        const P er = P(real ? copysign(R(1), re) : re / apq_abs);  // the phase e^{i alpha}
        const P ei = P(real ? R(0) : im / apq_abs);
        const P t = hyperbolic ? -tn : tn;
        cpr = mul_rn(t, er);
        cpi = sub_rn(P(0), mul_rn(t, ei));
        cqr = mul_rn(tn, er);
        cqi = mul_rn(tn, ei);
        app = sub_rn(app, mul_rn(R(tn), apq_abs));
        aqq = add_rn(aqq, mul_rn(R(tn), apq_abs));
    }
    // Step 5: keep the eigenvalues +-||g||^2 non-increasing; never across the partition.
    const bool swap = !hyperbolic && mul_rn(R(sign_p), sub_rn(app, aqq)) < R(0);
    if (!rotate && !swap) return 0;
    const bool scale = cs != P(1);
    T *dp = swap ? gq : gp, *dq = swap ? gp : gq;
    if (cached) {
#pragma unroll
        for (int c = 0; c < C; ++c) {
            const int i = lane + c * L;
            if (i < m) {
                T x = xs[c], y = ys[c];
                if (rotate) rotate_entry(x, y, cs, scale, cpr, cpi, cqr, cqi);
                dp[i] = x;
                dq[i] = y;
            }
        }
    } else {
        for (int i = lane; i < m; i += L) {
            T x = gp[i], y = gq[i];
            if (rotate) rotate_entry(x, y, cs, scale, cpr, cpi, cqr, cqi);
            dp[i] = x;
            dq[i] = y;
        }
    }
    dp = swap ? vq : vp;
    dq = swap ? vp : vq;
    for (int i = lane; i < k; i += L) {
        T x = vp[i], y = vq[i];
        if (rotate) rotate_entry(x, y, cs, scale, cpr, cpi, cqr, cqi);
        dp[i] = x;
        dq[i] = y;
    }
    return result;
}

// ------------------------------------------------------------------ the kernel

#define INNER_MAX_THREADS 512  // inner_cuda._MAX_THREADS
// With no minimum of resident blocks, ptxas caps registers for occupancy (64 at 512
// threads) and the double and complex kernels spill; they need 70-85.

// g: (batch, m, k) and v: (batch, k, k), C-contiguous, updated in place; signs: (k,) of
// +-1; pairs: (steps, per_step, 2), per_step = k/2 for a parallel strategy;
// floor2: a pair with a squared column norm at or below it is not rotated (pair_step);
// rotations: (batch,) proper rotations; sweeps: (batch,) sweeps run.
// blockDim.x = L * groups with 1 <= groups <= k/2; dynamic shared memory
// (ldg * k + ldv * k) * sizeof(T) with ldg = m | 1, ldv = k | 1 (inner_cuda.py).
template <typename T, int L>
__global__ void __launch_bounds__(INNER_MAX_THREADS, 1)
inner_jacobi(T *g, T *v, const typename Scalar<T>::Real *__restrict__ signs,
             const int *__restrict__ pairs, int steps, int per_step, int m, int k,
             int max_sweeps, typename Scalar<T>::Real tol, double floor2,
             long long *rotations, int *sweeps)
{
    typedef typename Scalar<T>::Real R;
    extern __shared__ __align__(16) unsigned char shared_raw[];
    __shared__ unsigned long long proper_total;
    T *gs = reinterpret_cast<T *>(shared_raw);
    const int ldg = m | 1, ldv = k | 1;  // odd: the transposing loads are conflict-free
    T *vs = gs + (size_t)ldg * k;
    const long long b = blockIdx.x;
    T *gb = g + b * m * k;
    T *vb = v + b * k * k;

    if (threadIdx.x == 0) proper_total = 0;
    for (int e = threadIdx.x; e < m * k; e += blockDim.x) {
        const int i = e / k, j = e - i * k;
        gs[j * ldg + i] = gb[e];
    }
    for (int e = threadIdx.x; e < k * k; e += blockDim.x) {
        const int i = e / k, j = e - i * k;
        vs[j * ldv + i] = vb[e];
    }
    __syncthreads();

    const int lane = threadIdx.x & (L - 1);
    const int group = threadIdx.x / L;
    const int groups = blockDim.x / L;
    const unsigned mask =
        L == 32 ? 0xffffffffu : ((1u << L) - 1u) << ((threadIdx.x & 31) & ~(L - 1));
    long long proper = 0;  // this group's proper rotations (the same in all its lanes)
    int done = 0;
    while (done < max_sweeps) {
        ++done;
        int rotated = 0;
        for (int s = 0; s < steps; ++s) {
            const int *step = pairs + (size_t)s * 2 * per_step;
            for (int j = group; j < per_step; j += groups) {
                const int p = __ldg(step + 2 * j), q = __ldg(step + 2 * j + 1);
                const R sp = __ldg(signs + p), sq = __ldg(signs + q);
                const int r = pair_step<T, L>(gs + p * ldg, gs + q * ldg, vs + p * ldv,
                                              vs + q * ldv, m, k, sp != sq, sp, tol, lane,
                                              mask, floor2);
                rotated |= r & 1;
                proper += r >> 1;
            }
            __syncthreads();
        }
        if (!__syncthreads_or(rotated)) break;
    }
    if (lane == 0 && proper) atomicAdd(&proper_total, (unsigned long long)proper);
    __syncthreads();

    for (int e = threadIdx.x; e < m * k; e += blockDim.x) {
        const int i = e / k, j = e - i * k;
        gb[e] = gs[j * ldg + i];
    }
    for (int e = threadIdx.x; e < k * k; e += blockDim.x) {
        const int i = e / k, j = e - i * k;
        vb[e] = vs[j * ldv + i];
    }
    if (threadIdx.x == 0) {
        rotations[b] = (long long)proper_total;
        sweeps[b] = done;
    }
}
