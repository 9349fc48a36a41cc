// The whole SVD of each small matrix of a stack in ONE launch: method="auto"'s path on the
// GPU for min(M, N) <= 2b. One thread block per matrix; everything between the
// caller's array and the results stays in shared memory:
//
//   1. load A (or Aᴴ for a wide matrix: X has m >= n rows) into the columns of g, padded
//      with zero columns to the order k of the pivot strategy (jacobi/padding.py); find
//      max |x| (the larger of |Re| and |Im| for complex) and whether any entry is not
//      finite; a matrix that is not finite gets NaN results and bit 0 of *status;
//   2. scale g by the power of two 2^-e that puts max |x| in [1/2, 1) (ldexp: exact);
//   3. the one-sided Jacobi sweeps of inner_jacobi.cu (pair_step, the same arithmetic,
//      the rotation and the updates of float data in float: its Narrow), accumulating V
//      when vectors are wanted; more than max_sweeps - 1 sweeps sets bit 1
//      of *status (the caller runs one sweep more than it allows, as blocked.small_jacobi);
//   4. σ_j = ‖g_j‖ summed in double (the input is scaled, so no sum overflows and the
//      squares that underflow lie below ε²·σ₁²: gesvd's accuracy), rounded to R;
//   5. the padding columns found from V (the one column nonzero in rows n..k-1), the
//      others ranked by descending σ, ties by position (a stable sort);
//   6. S = σ·2^e; U = G·Σ⁻¹ where σ > u_floor, completed to ku orthonormal columns where
//      σ <= u_floor and, for full_matrices, past n: each new column is the unit vector
//      e_t of the row t with the least weight Σ_j |U_tj|² so far (its projection onto the
//      complement has norm² >= (m - c)/m >= 1/m), orthogonalized against the columns
//      before it by two passes of classical Gram-Schmidt in double, and normalized;
//   7. U, S and Vh written in the caller's layout (for a wide matrix U = V_x, Vh = U_xᴴ).
//
// The CPU twin is gpusvd/jacobi/small_svd.py; with one thread per block and no fma (the
// host build of tests/jacobi/test_small_svd_host.py) the kernel gives its bits. On the
// GPU the sums of steps 3-4 run in parallel and products may be contracted into fma, so
// the two agree to rounding.

#include "inner_jacobi.cu"

// The least σ (of the scaled g) whose column of G·Σ⁻¹ is orthogonal to working accuracy:
// a pair is not rotated once re² underflows in double (2^-1075: |h_pq| < 2^-537), which
// leaves cos(g_p, g_q) <= 2^-53 only where ‖g_p‖·‖g_q‖ >= 2^-484; a float column below
// 2^-102 has subnormal entries whose rounding (2^-150) is not below ε_float·σ, and its
// pairs could fail the test at every sweep. Columns at or below it are not rotated
// (pair_step's floor2 = u_floor²) and are completed as for σ = 0, their σ kept: A's
// residual moves by less than 2^-101·‖A‖, and the vectors of such a σ_j are not
// determined to ε·‖A‖/gap anyway.
template <typename R> __device__ __forceinline__ R u_floor()
{
    return sizeof(R) == 8 ? R(0x1p-242) : R(0x1p-102);
}

template <typename T> struct Widened { typedef double type; };
template <typename R> struct Widened<Complex<R>> { typedef Complex<double> type; };

__device__ __forceinline__ double widen(float x) { return x; }
__device__ __forceinline__ double widen(double x) { return x; }
template <typename R> __device__ __forceinline__ Complex<double> widen(Complex<R> x)
{
    return cplx<double>(x.re, x.im);
}
template <typename T> __device__ __forceinline__ T narrow(double x) { return T(x); }
template <typename T> __device__ __forceinline__ T narrow(Complex<double> x)
{
    typedef typename Scalar<T>::Real R;
    T z;
    z.re = R(x.re);
    z.im = R(x.im);
    return z;
}
__device__ __forceinline__ float conj_of(float x) { return x; }
__device__ __forceinline__ double conj_of(double x) { return x; }
template <typename R> __device__ __forceinline__ Complex<R> conj_of(Complex<R> x)
{
    return conj(x);
}
__device__ __forceinline__ double abs2(double x) { return x * x; }
__device__ __forceinline__ double abs2(Complex<double> x) { return x.re * x.re + x.im * x.im; }
// The larger magnitude of the parts, in double (inf for inf, NaN for NaN).
__device__ __forceinline__ double magnitude(float x) { return fabs(double(x)); }
__device__ __forceinline__ double magnitude(double x) { return fabs(x); }
template <typename R> __device__ __forceinline__ double magnitude(Complex<R> x)
{
    const double re = fabs(double(x.re)), im = fabs(double(x.im));
    return re != re || im != im ? re + im : (re > im ? re : im);
}
// x·2^e, exact wherever the result is normal (a single factor 2^-e overflows for the
// exponents of subnormal input).
__device__ __forceinline__ float scaled(float x, int e) { return ldexpf(x, e); }
__device__ __forceinline__ double scaled(double x, int e) { return ldexp(x, e); }
template <typename R> __device__ __forceinline__ Complex<R> scaled(Complex<R> x, int e)
{
    return cplx(scaled(x.re, e), scaled(x.im, e));
}
template <typename T> __device__ __forceinline__ T divided(T x, typename Scalar<T>::Real f)
{
    return x / f;
}
template <typename R> __device__ __forceinline__ Complex<R> divided(Complex<R> x, R f)
{
    return cplx(x.re / f, x.im / f);
}
template <typename T> __device__ __forceinline__ T filled(typename Scalar<T>::Real f)
{
    return T(f);
}
template <> __device__ __forceinline__ Complex<float> filled<Complex<float>>(float f)
{
    return cplx(f, f);
}
template <> __device__ __forceinline__ Complex<double> filled<Complex<double>>(double f)
{
    return cplx(f, f);
}
// The real number x as a T (Complex has no constructors), and whether x is not zero.
template <typename T> struct Number {
    static __device__ __forceinline__ T of(double x) { return T(x); }
    static __device__ __forceinline__ bool nonzero(T x) { return x != T(0); }
};
template <typename R> struct Number<Complex<R>> {
    static __device__ __forceinline__ Complex<R> of(double x) { return cplx(R(x), R(0)); }
    static __device__ __forceinline__ bool nonzero(Complex<R> x)
    {
        return x.re != R(0) || x.im != R(0);
    }
};

// The boundary the double-precision work arrays start on, after g and V in the dynamic
// shared memory; small_svd_cuda.shared_bytes mirrors the whole layout.
#define SMALL_ALIGN 16

// a: (batch, rows, cols) C-contiguous; wide = rows < cols (then X = Aᴴ: m = cols,
// n = rows, else m = rows, n = cols); pairs: (steps, k/2, 2) of order k >= n, even;
// tol: the orthogonality threshold for m rows; ku: columns of U_x (n, or m for
// full_matrices). s: (batch, n); with want_uv, u: (batch, rows, rows if wide else ku) and
// vh: (batch, ku if wide else cols, cols). status: bit 0 some matrix not finite, bit 1 some
// matrix not converged in max_sweeps - 1 sweeps. blockDim.x = L * groups, groups <= k/2.
template <typename T, int L>
__global__ void __launch_bounds__(INNER_MAX_THREADS, 1)
small_svd(const T *__restrict__ a, int rows, int cols, int wide, const int *__restrict__ pairs,
          int steps, int k, int max_sweeps, typename Scalar<T>::Real tol, int want_uv, int ku,
          typename Scalar<T>::Real *s_out, T *u_out, T *vh_out, int *status)
{
    typedef typename Scalar<T>::Real R;
    typedef typename Widened<T>::type W;
    extern __shared__ __align__(16) unsigned char shared_raw[];
    __shared__ double largest[INNER_MAX_THREADS];
    __shared__ int pivot_row;
    __shared__ double pivot_norm;

    const int m = wide ? cols : rows, n = wide ? rows : cols;
    const int mp = m > k ? m : k;
    const int ldg = mp | 1, ldv = k | 1;
    const int kc = want_uv ? k + (ku - n) : k;  // g's columns: k, then U's past n
    T *gs = reinterpret_cast<T *>(shared_raw);
    T *vs = gs + (size_t)ldg * kc;
    size_t offset = ((size_t)ldg * kc + (want_uv ? (size_t)ldv * k : 0)) * sizeof(T);
    offset = (offset + SMALL_ALIGN - 1) / SMALL_ALIGN * SMALL_ALIGN;
    W *w = reinterpret_cast<W *>(shared_raw + offset);  // mp: a new column of U
    W *h = w + mp;                                      // kc: its coefficients
    R *sv = reinterpret_cast<R *>(h + kc);              // k: the norms σ_j
    int *order = reinterpret_cast<int *>(sv + k);       // k: column of each rank
    int *kept = order + k;                              // k: 1 for a column of A

    const int tid = threadIdx.x, nt = blockDim.x;
    const long long b = blockIdx.x;
    const T *ab = a + b * rows * cols;
    const int ku_a = wide ? n : ku;                   // columns of the output U
    const int kv_a = wide ? ku : n;                   // rows of the output Vh
    const T zero = Number<T>::of(0.0);

    // 1. Load, max |x|, finiteness.
    for (int e = tid; e < ldg * kc; e += nt) gs[e] = zero;
    if (want_uv)
        for (int e = tid; e < ldv * k; e += nt)
            vs[e] = e / ldv == e % ldv ? Number<T>::of(1.0) : zero;
    __syncthreads();
    double big = 0;
    int bad = 0;
    for (int e = tid; e < rows * cols; e += nt) {
        const int r = e / cols, c = e - r * cols;
        const T x = ab[e];
        if (wide)
            gs[r * ldg + c] = conj_of(x);
        else
            gs[c * ldg + r] = x;
        const double mag = magnitude(x);
        if (!(mag <= 1.7976931348623157e308))
            bad = 1;
        else if (mag > big)
            big = mag;
    }
    largest[tid] = big;
    bad = __syncthreads_or(bad);
    int span = 1;
    while (span < nt) span <<= 1;
    for (span >>= 1; span > 0; span >>= 1) {
        if (tid < span && tid + span < nt && largest[tid + span] > largest[tid])
            largest[tid] = largest[tid + span];
        __syncthreads();
    }
    if (bad) {
        const R nan = R(__int_as_float(0x7fffffff));
        for (int e = tid; e < n; e += nt) s_out[b * n + e] = nan;
        if (want_uv) {
            for (int e = tid; e < rows * ku_a; e += nt)
                u_out[b * rows * ku_a + e] = filled<T>(nan);
            for (int e = tid; e < kv_a * cols; e += nt)
                vh_out[b * kv_a * cols + e] = filled<T>(nan);
        }
        if (tid == 0) atomicOr(status, 1);
        return;
    }
    int exponent = 0;
    if (largest[0] > 0) frexp(largest[0], &exponent);

    // 2. Scale by 2^-exponent.
    for (int e = tid; e < ldg * n; e += nt) gs[e] = scaled(gs[e], -exponent);
    __syncthreads();

    // 3. The Jacobi sweeps (inner_jacobi's loop; all signs +1).
    const int lane = tid & (L - 1);
    const int group = tid / L;
    const int groups = nt / L;
    const unsigned mask = L == 32 ? 0xffffffffu : ((1u << L) - 1u) << ((tid & 31) & ~(L - 1));
    const int per_step = k / 2;
    const int vrows = want_uv ? k : 0;
    const double floor2 = (double)u_floor<R>() * (double)u_floor<R>();
    int done = 0;
    while (done < max_sweeps) {
        ++done;
        int rotated = 0;
        for (int st = 0; st < steps; ++st) {
            const int *step = pairs + (size_t)st * 2 * per_step;
            for (int j = group; j < per_step; j += groups) {
                const int p = __ldg(step + 2 * j), q = __ldg(step + 2 * j + 1);
                T *vp = want_uv ? vs + p * ldv : gs, *vq = want_uv ? vs + q * ldv : gs;
                rotated |= pair_step<T, L, true>(gs + p * ldg, gs + q * ldg, vp, vq, mp,
                                                 vrows, false, R(1), tol, lane, mask,
                                                 floor2) & 1;
            }
            __syncthreads();
        }
        if (!__syncthreads_or(rotated)) break;
    }
    if (tid == 0 && done >= max_sweeps) atomicOr(status, 2);

    // 4. The column norms.
    for (int j = group; j < k; j += groups) {
        double sum = 0;
        for (int i = lane; i < mp; i += L) sum += abs2(widen(gs[j * ldg + i]));
        sum = group_sum<L>(sum, mask);
        if (lane == 0) sv[j] = R(sqrt(sum));
    }
    // 5. Padding and ranks.
    for (int j = tid; j < k; j += nt) {
        int keep = 1;
        if (want_uv)
            for (int r = n; r < k; ++r)
                if (Number<T>::nonzero(vs[j * ldv + r])) keep = 0;
        kept[j] = keep;
    }
    __syncthreads();
    for (int j = tid; j < k; j += nt) {
        if (!kept[j]) continue;
        int rank = 0;
        for (int i = 0; i < k; ++i)
            if (kept[i] && (sv[i] > sv[j] || (sv[i] == sv[j] && i < j))) ++rank;
        if (rank < n) order[rank] = j;
    }
    __syncthreads();

    // 6. S, then U = G·Σ⁻¹ and its completion.
    for (int c = tid; c < n; c += nt) s_out[b * n + c] = scaled(sv[order[c]], exponent);
    if (!want_uv) return;
    int r = 0;
    while (r < n && sv[order[r]] > u_floor<R>()) ++r;
    for (int e = tid; e < r * m; e += nt) {
        const int c = e / m, i = e - c * m;
        const int j = order[c];
        gs[j * ldg + i] = divided(gs[j * ldg + i], sv[j]);
    }
    __syncthreads();
#define COLUMN(c) ((c) < n ? order[c] : k + (c) - n)
    double *weight = reinterpret_cast<double *>(w);
    for (int c = r; c < ku; ++c) {
        for (int i = tid; i < m; i += nt) {
            double d = 0;
            for (int j = 0; j < c; ++j) d += abs2(widen(gs[COLUMN(j) * ldg + i]));
            weight[i] = d;
        }
        __syncthreads();
        if (tid == 0) {
            int t = 0;
            for (int i = 1; i < m; ++i)
                if (weight[i] < weight[t]) t = i;
            pivot_row = t;
        }
        __syncthreads();
        for (int i = tid; i < m; i += nt) w[i] = Number<W>::of(i == pivot_row ? 1.0 : 0.0);
        __syncthreads();
        for (int pass = 0; pass < 2; ++pass) {
            for (int j = tid; j < c; j += nt) {
                W acc = Number<W>::of(0.0);
                for (int i = 0; i < m; ++i)
                    acc = acc + conj_of(widen(gs[COLUMN(j) * ldg + i])) * w[i];
                h[j] = acc;
            }
            __syncthreads();
            for (int i = tid; i < m; i += nt) {
                W acc = w[i];
                for (int j = 0; j < c; ++j) acc = acc - widen(gs[COLUMN(j) * ldg + i]) * h[j];
                w[i] = acc;
            }
            __syncthreads();
        }
        if (tid == 0) {
            double sum = 0;
            for (int i = 0; i < m; ++i) sum += abs2(w[i]);
            pivot_norm = sqrt(sum);
        }
        __syncthreads();
        const int col = COLUMN(c);
        for (int i = tid; i < m; i += nt) gs[col * ldg + i] = narrow<T>(divided(w[i], pivot_norm));
        __syncthreads();
    }

    // 7. The results in the caller's layout.
    T *ub = u_out + b * rows * ku_a;
    T *vb = vh_out + b * kv_a * cols;
    if (!wide) {
        for (int e = tid; e < m * ku; e += nt) {
            const int i = e / ku, c = e - i * ku;
            ub[e] = gs[COLUMN(c) * ldg + i];
        }
        for (int e = tid; e < n * n; e += nt) {
            const int c = e / n, j = e - c * n;
            vb[e] = conj_of(vs[order[c] * ldv + j]);
        }
    } else {
        for (int e = tid; e < n * n; e += nt) {
            const int i = e / n, c = e - i * n;
            ub[e] = vs[order[c] * ldv + i];
        }
        for (int e = tid; e < ku * m; e += nt) {
            const int c = e / m, j = e - c * m;
            vb[e] = conj_of(gs[COLUMN(c) * ldg + j]);
        }
    }
#undef COLUMN
}
