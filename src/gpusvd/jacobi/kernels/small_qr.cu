// Householder QR of a batch of small matrices, one thread block per matrix: the
// preconditioning QR of paper 003 (eq. (1), as in LAPACK's DGEJSV) for stacks of small
// matrices, in one launch instead of one cuSOLVER geqrf/orgqr pair per matrix.
//
// The block loads its A (m x n, m >= n, row-major in global memory) into shared memory,
// column-major with an odd leading dimension, and factors it as LAPACK's xGEQR2 does:
// for j = 0..n-1 the reflector H_j = I - tau_j v_j v_jᴴ (v_j(j) = 1) of xLARFG maps
// A(j:m, j) to beta_j e_1 (beta_j real, of the sign opposite to Re A(j, j)), and H_jᴴ is
// applied to the columns j+1..n-1. R (n x n, upper triangular) is written out; then, if
// asked for, Q = H_0 H_1 ... H_{n-1} I(:, 0:qcols) is formed in place as by xUNG2R
// (qcols = n: economic Q; qcols = m: complete Q; any n <= qcols <= m) and written out.
// There is no column pivoting: the caller presorts the columns by descending norm
// (precondition.py says why that suffices for the Jacobi method).
//
// Warp w of the block owns the columns j+1+w, j+1+w+W, ... of each update; the lanes of a
// warp own rows lane, lane + 32, ... and reduce by xor shuffles. Column j's reflector is
// formed by warp 0. All arithmetic is in double (Complex<double> for complex data), the
// entries rounded to their type when stored, as in inner_jacobi.cu; the norm of A(j:m, j)
// is scaled by its largest part (real and imaginary parts counted separately), and v_j is
// formed from the scaled column, so neither underflows for graded columns with tiny
// entries (the input of jacobi_svd is scaled so that its largest entry lies in [1/2, 1)).
//
// With one thread per block (the host build of tests/jacobi/host_small_qr.py) the warp
// width is 1 and no shuffle is called.

// ------------------------------------------------------------------ scalar types

#include "../../_core/cuda/complex.cuh"

// The type the kernel computes in, by element type.
template <typename T> struct Wide { typedef double Type; };
template <typename R> struct Wide<Complex<R>> { typedef Complex<double> Type; };

__device__ __forceinline__ double widen(float x) { return x; }
__device__ __forceinline__ double widen(double x) { return x; }
template <typename R>
__device__ __forceinline__ Complex<double> widen(Complex<R> x) { return {x.re, x.im}; }

__device__ __forceinline__ void narrow(double x, float &out) { out = float(x); }
__device__ __forceinline__ void narrow(double x, double &out) { out = x; }
template <typename R>
__device__ __forceinline__ void narrow(Complex<double> x, Complex<R> &out)
{
    out.re = R(x.re);
    out.im = R(x.im);
}

__device__ __forceinline__ double conj(double x) { return x; }
__device__ __forceinline__ double real(double x) { return x; }
__device__ __forceinline__ double real(Complex<double> x) { return x.re; }
__device__ __forceinline__ double imag(double) { return 0; }
__device__ __forceinline__ double imag(Complex<double> x) { return x.im; }
__device__ __forceinline__ double max_part(double x) { return fabs(x); }
__device__ __forceinline__ double max_part(Complex<double> x)
{
    return fmax(fabs(x.re), fabs(x.im));
}
__device__ __forceinline__ double abs2(double x) { return x * x; }
__device__ __forceinline__ double abs2(Complex<double> x) { return x.re * x.re + x.im * x.im; }

template <typename W> __device__ __forceinline__ W make(double re, double im);
template <> __device__ __forceinline__ double make<double>(double re, double) { return re; }
template <>
__device__ __forceinline__ Complex<double> make<Complex<double>>(double re, double im)
{
    return {re, im};
}

// 1 / z for z = (re, im) of moderate size (the caller scales it to about 1).
__device__ __forceinline__ double inverse(double z) { return 1.0 / z; }
__device__ __forceinline__ Complex<double> inverse(Complex<double> z)
{
    const double d = abs2(z);
    return {z.re / d, -z.im / d};
}

// ------------------------------------------------------------------ warp reductions

__device__ __forceinline__ double warp_sum(double v, int width)
{
    for (int o = width / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o, width);
    return v;
}
__device__ __forceinline__ Complex<double> warp_sum(Complex<double> v, int width)
{
    return {warp_sum(v.re, width), warp_sum(v.im, width)};
}
__device__ __forceinline__ double warp_max(double v, int width)
{
    for (int o = width / 2; o > 0; o >>= 1)
        v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o, width));
    return v;
}

// ------------------------------------------------------------------ the steps

// xLARFG on column a (rows j..m-1 of one column in shared memory), by one warp: writes
// beta to a[j], v(j+1:m) to a[j+1..m-1] and returns tau (on every lane).
template <typename T>
__device__ typename Wide<T>::Type reflector(T *a, int j, int m, int lane, int width)
{
    typedef typename Wide<T>::Type W;
    const W alpha = widen(a[j]);
    double scale = 0, below = 0;
    for (int i = j + lane; i < m; i += width) {
        const double p = max_part(widen(a[i]));
        scale = fmax(scale, p);
        if (i > j) below = fmax(below, p);
    }
    scale = warp_max(scale, width);
    below = warp_max(below, width);
    if (below == 0 && imag(alpha) == 0) return make<W>(0, 0);  // H = I, beta = alpha
    double ssq = 0;
    for (int i = j + lane; i < m; i += width) ssq += abs2((1.0 / scale) * widen(a[i]));
    ssq = warp_sum(ssq, width);
    const double norm = sqrt(ssq);                 // ||A(j:m, j)|| / scale
    const double beta = real(alpha) >= 0 ? -norm : norm;
    const W alpha_s = (1.0 / scale) * alpha;
    const W tau = make<W>((beta - real(alpha_s)) / beta, -imag(alpha_s) / beta);
    const W factor = inverse(alpha_s - make<W>(beta, 0));  // v = x / (alpha - beta)
    for (int i = j + 1 + lane; i < m; i += width)
        narrow(((1.0 / scale) * widen(a[i])) * factor, a[i]);
    if (lane == 0) narrow(make<W>(beta * scale, 0), a[j]);
    return tau;
}

// c <- (I - t v vᴴ) c over rows j..m-1 of column c, v = (1, a[j+1..m-1]), by one warp.
template <typename T, typename W>
__device__ void apply_reflector(const T *v, T *c, W t, int j, int m, int lane, int width)
{
    W w = make<W>(0, 0);
    for (int i = j + lane; i < m; i += width) {
        const W vi = i == j ? make<W>(1, 0) : widen(v[i]);
        w = w + conj(vi) * widen(c[i]);
    }
    w = t * warp_sum(w, width);
    for (int i = j + lane; i < m; i += width) {
        const W vi = i == j ? make<W>(1, 0) : widen(v[i]);
        narrow(widen(c[i]) - w * vi, c[i]);
    }
}

// ------------------------------------------------------------------ the kernel

#define SMALL_QR_MAX_THREADS 256  // small_qr_cuda._MAX_THREADS

// a: (batch, m, n) row-major, m >= n >= 1; r: (batch, n, n) row-major, upper triangular;
// q: (batch, m, qcols) row-major or unused when qcols = 0, else n <= qcols <= m.
// blockDim.x = 32 * warps (any count on the host, with one thread); dynamic shared memory
// ld * max(n, qcols) elements of T with ld = m | 1, then n of Wide<T> at a 16-byte boundary
// (small_qr_cuda.shared_bytes).
template <typename T>
__global__ void __launch_bounds__(SMALL_QR_MAX_THREADS)
small_qr(const T *__restrict__ a, T *__restrict__ r, T *__restrict__ q, int m, int n,
         int qcols)
{
    typedef typename Wide<T>::Type W;
    extern __shared__ __align__(16) unsigned char shared_raw[];
    const int ld = m | 1;  // odd: the transposing loads are conflict-free
    const int cols = qcols > n ? qcols : n;
    T *s = reinterpret_cast<T *>(shared_raw);
    W *taus = reinterpret_cast<W *>(shared_raw + ((sizeof(T) * ld * cols + 15) & ~size_t(15)));
    const long long b = blockIdx.x;
    const T *ab = a + b * m * n;

    for (int e = threadIdx.x; e < m * n; e += blockDim.x) {
        const int i = e / n, c = e - i * n;
        s[c * ld + i] = ab[e];
    }
    __syncthreads();

    const int width = blockDim.x < 32 ? blockDim.x : 32;
    const int lane = threadIdx.x % width, warp = threadIdx.x / width;
    const int warps = blockDim.x / width;
    for (int j = 0; j < n; ++j) {
        if (warp == 0) {
            const W tau = reflector(s + j * ld, j, m, lane, width);
            if (lane == 0) taus[j] = tau;
        }
        __syncthreads();
        const W t = conj(taus[j]);  // H_jᴴ = I - conj(tau_j) v vᴴ
        for (int c = j + 1 + warp; c < n; c += warps)
            apply_reflector(s + j * ld, s + c * ld, t, j, m, lane, width);
        __syncthreads();
    }

    T *rb = r + b * n * n;
    for (int e = threadIdx.x; e < n * n; e += blockDim.x) {
        const int i = e / n, c = e - i * n;
        if (i <= c) {
            rb[e] = s[c * ld + i];
        } else {
            narrow(make<W>(0, 0), rb[e]);
        }
    }
    if (qcols == 0) return;
    __syncthreads();

    // xUNG2R: the columns beyond the reflectors start as unit vectors; then, from the
    // last reflector to the first, H_i is applied to the columns right of i and column i
    // becomes H_i e_i.
    for (int e = threadIdx.x; e < m * (qcols - n); e += blockDim.x) {
        const int c = n + e / m, i = e - (c - n) * m;
        narrow(make<W>(i == c ? 1 : 0, 0), s[c * ld + i]);
    }
    __syncthreads();
    for (int i = n - 1; i >= 0; --i) {
        const W tau = taus[i];
        for (int c = i + 1 + warp; c < qcols; c += warps)
            apply_reflector(s + i * ld, s + c * ld, tau, i, m, lane, width);
        __syncthreads();
        T *col = s + i * ld;
        for (int l = threadIdx.x; l < m; l += blockDim.x) {
            W x = make<W>(0, 0);
            if (l == i) x = make<W>(1 - real(tau), -imag(tau));
            else if (l > i) x = make<W>(-real(tau), -imag(tau)) * widen(col[l]);
            narrow(x, col[l]);
        }
        __syncthreads();
    }

    T *qb = q + b * m * qcols;
    for (int e = threadIdx.x; e < m * qcols; e += blockDim.x) {
        const int i = e / qcols, c = e - i * qcols;
        qb[e] = s[c * ld + i];
    }
}
