// Shortening of a batch of block pairs by the Cholesky factor of their Gram matrices
// (paper 003, eq. (7)): the factorize phase of the pStep, one thread block per pair.
//
// Input: the Gram matrices H (batch x k x k, row-major, Hermitian) in double (complex
// double for complex data), as the batched GEMM of gpusvd/jacobi/blocked.py forms them.
// Per block, as blocked._factor_gram (its twin) does on the host:
//   1. d_j = sqrt(Re H_jj); H is scaled to unit diagonal, Hs_ij = H_ij / (d_i d_j) (a zero
//      column, d_j = 0, is scaled by 1), and its diagonal set to 1 + shift;
//   2. Hs = L Lᴴ by a right-looking Cholesky factorization of its lower triangle, held in
//      shared memory column-major with an odd leading dimension. A pivot that is not
//      positive (a pair numerically singular beyond the shift) restarts the factorization
//      with extra = shift, 2 shift, 4 shift, ... (from k·ε when shift is 0) added to the
//      diagonal, as the host's _host_cholesky does, so the kernel needs no host check.
//      Hs has unit diagonal and off-diagonal entries of modulus at most about one, so by
//      Gershgorin's theorem extra > k + 1 always succeeds for finite H: past that the
//      block gives up (H was not finite) and writes NaN, which the sweep's convergence
//      test then reports, instead of looping forever;
//   3. R = Lᴴ diag(d) (upper triangular, R_ij = conj(L_ji) d_j), rounded to the data type.
// It can also set V (batch x kv x kv) to the identity, the start of the inner Jacobi's
// accumulated rotations, saving a launch.
//
// As CuPy operations the same work takes ten launches and cuSOLVER's potrfBatched, whose
// info check synchronizes the host once per p-step: 0.8 ms of a 1.5 ms p-step at
// n = 4096 on the H100 (bench/results/jacobi_profile_h100.txt).
//
// With one thread per block (the host build of tests/jacobi/host_gram_cholesky.py) every
// loop runs sequentially and the kernel computes the same operations in the same order.

#include "../../_core/cuda/complex.cuh"

// The type the kernel computes in, by element type.
template <typename T> struct Wide { typedef double Type; };
template <typename R> struct Wide<Complex<R>> { typedef Complex<double> Type; };

__device__ __forceinline__ double real_part(double x) { return x; }
__device__ __forceinline__ double real_part(Complex<double> x) { return x.re; }
__device__ __forceinline__ double scaled(double x, double s) { return x / s; }
__device__ __forceinline__ Complex<double> scaled(Complex<double> x, double s)
{
    return {x.re / s, x.im / s};
}
__device__ __forceinline__ double from_real(double x, double) { return x; }
__device__ __forceinline__ Complex<double> from_real(double x, Complex<double>)
{
    return {x, 0.0};
}
// x - a * conj(b)
__device__ __forceinline__ double minus_product(double x, double a, double b)
{
    return x - a * b;
}
__device__ __forceinline__ Complex<double> minus_product(Complex<double> x, Complex<double> a,
                                                        Complex<double> b)
{
    return {x.re - (a.re * b.re + a.im * b.im), x.im - (a.im * b.re - a.re * b.im)};
}
// conj(x) * s, rounded to the data type
__device__ __forceinline__ void store_conj_scaled(double x, double s, float &out)
{
    out = float(x * s);
}
__device__ __forceinline__ void store_conj_scaled(double x, double s, double &out)
{
    out = x * s;
}
template <typename R>
__device__ __forceinline__ void store_conj_scaled(Complex<double> x, double s, Complex<R> &out)
{
    out.re = R(x.re * s);
    out.im = R(-x.im * s);
}
__device__ __forceinline__ void set_real(float &out, double x) { out = float(x); }
__device__ __forceinline__ void set_real(double &out, double x) { out = x; }
template <typename R> __device__ __forceinline__ void set_real(Complex<R> &out, double x)
{
    out.re = R(x);
    out.im = R(0);
}

#define GRAM_CHOLESKY_MAX_THREADS 256

template <typename T>
__global__ void __launch_bounds__(GRAM_CHOLESKY_MAX_THREADS)
gram_cholesky(const typename Wide<T>::Type *__restrict__ h, T *__restrict__ r,
              T *__restrict__ v, int k, int kv, double shift)
{
    typedef typename Wide<T>::Type W;
    extern __shared__ __align__(16) unsigned char shared_raw[];
    const int ld = k | 1;
    W *a = reinterpret_cast<W *>(shared_raw);            // ld x k, column-major
    double *d = reinterpret_cast<double *>(a + (size_t)ld * k);     // k column norms
    __shared__ int failed;
    const int tid = threadIdx.x, nt = blockDim.x;
    const size_t kk = (size_t)k * k;
    const W *hb = h + blockIdx.x * kk;
    T *rb = r + blockIdx.x * kk;

    for (int j = tid; j < k; j += nt)
        d[j] = sqrt(real_part(hb[(size_t)j * k + j]));
    if (v != nullptr) {
        T *vb = v + blockIdx.x * (size_t)kv * kv;
        for (int idx = tid; idx < kv * kv; idx += nt)
            set_real(vb[idx], idx / kv == idx % kv ? 1.0 : 0.0);
    }
    __syncthreads();

    const double limit = k + 1.0;                        // Gershgorin (step 2 above)
    const double first = shift > 0 ? shift : k * 2.220446049250313e-16;
    double extra = 0.0;
    bool finite = true;
    for (;;) {
        // 1. the scaled lower triangle, diagonal 1 + shift + extra
        for (int idx = tid; idx < k * k; idx += nt) {
            const int i = idx / k, j = idx % k;
            if (i > j) {
                const double di = d[i] > 0 ? d[i] : 1.0, dj = d[j] > 0 ? d[j] : 1.0;
                a[i + (size_t)j * ld] = scaled(hb[(size_t)i * k + j], di * dj);
            } else if (i == j) {
                a[i + (size_t)j * ld] = from_real((1.0 + shift) + extra, W());
            }
        }
        if (tid == 0)
            failed = 0;
        __syncthreads();
        // 2. right-looking Cholesky: column j, then the trailing lower triangle
        for (int j = 0; j < k; ++j) {
            const double pivot = real_part(a[j + (size_t)j * ld]);
            if (!(pivot > 0)) {            // the same value on every thread: all leave
                if (tid == 0)
                    failed = 1;
                break;
            }
            const double ljj = sqrt(pivot);
            __syncthreads();               // every thread has read the pivot
            if (tid == 0)
                a[j + (size_t)j * ld] = from_real(ljj, W());
            for (int i = j + 1 + tid; i < k; i += nt)
                a[i + (size_t)j * ld] = scaled(a[i + (size_t)j * ld], ljj);
            __syncthreads();
            const int t = k - j - 1;
            for (int idx = tid; idx < t * t; idx += nt) {
                const int i = j + 1 + idx % t, l = j + 1 + idx / t;
                if (i >= l)
                    a[i + (size_t)l * ld] = minus_product(a[i + (size_t)l * ld],
                                                          a[i + (size_t)j * ld],
                                                          a[l + (size_t)j * ld]);
            }
            __syncthreads();
        }
        __syncthreads();
        if (!failed)
            break;
        if (extra > limit) {
            finite = false;
            break;
        }
        extra = extra == 0.0 ? first : 2.0 * extra;
        __syncthreads();                   // every thread has read `failed`
    }

    // 3. R = Lᴴ diag(d), upper triangular
    for (int idx = tid; idx < k * k; idx += nt) {
        const int i = idx / k, j = idx % k;
        if (!finite)
            set_real(rb[idx], nan(""));
        else if (i <= j)
            store_conj_scaled(a[j + (size_t)i * ld], d[j], rb[idx]);
        else
            set_real(rb[idx], 0.0);
    }
}
