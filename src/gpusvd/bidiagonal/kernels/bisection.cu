// Singular values of a bidiagonal by bisection on its Golub-Kahan tridiagonal, one thread
// per value: the CUDA twin of bidiagonal/bisection.py, whose docstring gives the method,
// the papers (Demmel & Kahan 1990, Fernando 1998; LAPACK dstebz, dbdsvdx) and the error
// bound. Thread i finds the i-th largest value, out[i], so the output is descending.
//
// t is T_GK's off-diagonal |d1|, |e1|, |d2|, ..., |dn| scaled so that max t lies in
// [1/2, 1); every thread reads the same t[k] at the same time (one broadcast load per
// warp). The operations and their order are those of the Numba twin, so the two give the
// same bits: the product in the recurrence is written mul_rn (__dmul_rn, __fmul_rn) so
// that nvcc does not contract it and the subtraction into an fma, and division and
// square root round correctly (nvcc's defaults, -prec-div=true -prec-sqrt=true).

__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }

// #{sigma_i < x} for x > 0: the negative pivots of the LDL^T factorization of
// T_GK - x I (q_1 = -x, q_{k+1} = -x - t_k (t_k / q_k)) minus the n values -sigma_i. An
// exact zero pivot becomes -pivmin; a tiny one keeps its sign (IEEE infinity carries an
// overflowing quotient to the next pivot, which is then -x).
template <typename R>
__device__ long long count_below(const R *__restrict__ t, long long m, R x, R pivmin)
{
    R q = -x;
    long long negative = 1;
    for (long long k = 0; k < m; ++k) {
        const R tk = t[k];
        q = -x - mul_rn(tk, tk / q);
        if (q == R(0))
            q = -pivmin;
        negative += q < R(0);
    }
    return negative - (m + 1) / 2;
}

// out[i], i < n: the i-th largest singular value (of the scaled B), by bisection from
// [floor, top]: 0 if it lies below floor; geometric midpoints while hi > 2 lo, then
// arithmetic ones, until hi - lo <= two_eps hi or after max_steps counts.
template <typename R>
__global__ void bisection_singular_values(const R *__restrict__ t, long long n, R floor,
                                          R pivmin, R top, R two_eps, int max_steps,
                                          R *__restrict__ out)
{
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const long long m = 2 * n - 1;
    const long long rank = n - 1 - i;  // out[i] is the (rank + 1)-th smallest
    if (count_below(t, m, floor, pivmin) > rank) {
        out[i] = R(0);
        return;
    }
    R lo = floor, hi = top;
    for (int step = 0; step < max_steps; ++step) {
        if (hi - lo <= mul_rn(two_eps, hi))
            break;
        const R x = hi > lo + lo ? mul_rn(sqrt(lo), sqrt(hi)) : mul_rn(lo + hi, R(0.5));
        if (count_below(t, m, x, pivmin) > rank)
            hi = x;
        else
            lo = x;
    }
    out[i] = mul_rn(lo + hi, R(0.5));
}
