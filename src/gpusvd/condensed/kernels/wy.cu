// Stage 1's per-panel helpers (condensed/band.py): V with its implied unit diagonal made
// explicit, and the T of the compact WY form I - V*T*V^H from V^H*V and tau. Each replaces
// several small CuPy operations per panel (tril, fill_diagonal; triu, diag, where, a
// triangular solve against an identity): at b = 32 and n = 8192 stage 1 has 512 panels,
// and the launch overhead of those small operations, not their flops, dominates stage 1.
// The NumPy twins are band.py's _unit_lower and _wy_factor.

#include "../../_core/cuda/complex.cuh"

template <typename T> __device__ __forceinline__ T from_real(double x);
template <> __device__ __forceinline__ float from_real<float>(double x) { return float(x); }
template <> __device__ __forceinline__ double from_real<double>(double x) { return x; }
template <> __device__ __forceinline__ Complex<float> from_real<Complex<float>>(double x)
{
    return cplx(float(x), 0.0f);
}
template <> __device__ __forceinline__ Complex<double> from_real<Complex<double>>(double x)
{
    return cplx(x, 0.0);
}

// out (rows x cols, column-major, leading dimension rows) = the strictly lower part of
// the column-major panel (leading dimension ld) with ones on the diagonal, zeros above.
template <typename T>
__global__ void unit_lower(const T *__restrict__ panel, long long ld, int rows, int cols,
                           T *__restrict__ out)
{
    const long long size = (long long)rows * cols;
    for (long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x; k < size;
         k += (long long)gridDim.x * blockDim.x) {
        const int i = int(k % rows), j = int(k / rows);
        out[k] = i > j ? panel[i + j * ld] : from_real<T>(i == j ? 1.0 : 0.0);
    }
}

// T (k x k, upper triangular, row-major with row stride ldt) of H_0*H_1*...*H_{k-1} =
// I - V*T*V^H, H_j = I - tau_j*v_j*v_j^H, from the Gram matrix G = V^H*V (column-major,
// leading dimension ldg) by LAPACK's dlarft recurrence (forward, columnwise):
// T(j, j) = tau_j, T(0:j, j) = -tau_j * T(0:j, 0:j) * G(0:j, j). Row i of it reads only
// row i (T(i, m), i <= m < j) and G, so thread i of one block computes row i alone, with
// no barrier. A reflector with tau = 0 (H = I) gets a zero row and column, whatever its v.
template <typename T>
__global__ void larft_gram(const T *__restrict__ g, int ldg, const T *__restrict__ tau,
                           int k, T *__restrict__ t, int ldt)
{
    const int i = threadIdx.x;
    for (int j = 0; j < k; ++j) {
        if (i < j) {
            T w = from_real<T>(0.0);
            for (int m = i; m < j; ++m)
                w = w + t[i * ldt + m] * g[m + j * ldg];
            t[i * ldt + j] = from_real<T>(0.0) - tau[j] * w;
        } else if (i == j) {
            t[i * ldt + j] = tau[j];
        } else if (i < k) {
            t[i * ldt + j] = from_real<T>(0.0);
        }
    }
}
