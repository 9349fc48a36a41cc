// Singular values of a bidiagonal by bisection on its Golub-Kahan tridiagonal, a group of
// lanes per value: the CUDA twin of bidiagonal/bisection.py, whose docstring gives the
// method, the papers (Demmel & Kahan 1990, Fernando 1998; LAPACK dstebz, dbdsvdx) and
// the error bound. Group i finds the i-th largest value, out[i], so the output is
// descending.
//
// t is T_GK's off-diagonal |d1|, |e1|, |d2|, ..., |dn| scaled so that max t lies in
// [1/2, 1); every lane reads the same t[k] at the same time (one broadcast load per
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

// The bisection's next point in [lo, hi]: geometric while hi > 2 lo, then arithmetic.
template <typename R>
__device__ __forceinline__ R midpoint(R lo, R hi)
{
    return hi > lo + lo ? mul_rn(sqrt(lo), sqrt(hi)) : mul_rn(lo + hi, R(0.5));
}

// The point of node `node` (in order, 1 ... 2^levels - 1; the root 2^(levels-1)) of the
// tree of the next `levels` bisection steps below [lo, hi]: the midpoint the bisection
// reaches there, by the same operations.
template <typename R>
__device__ R node_point(R lo, R hi, int node, int levels)
{
    int at = 1 << (levels - 1), step = at >> 1;
    for (;;) {
        const R mid = midpoint(lo, hi);
        if (node == at)
            return mid;
        if (node < at) {
            hi = mid;
            at -= step;
        } else {
            lo = mid;
            at += step;
        }
        step >>= 1;
    }
}

// out[i], i < n: the i-th largest singular value (of the scaled B), by bisection from
// [floor, top]: 0 if it lies below floor; geometric midpoints while hi > 2 lo, then
// arithmetic ones, until hi - lo <= two_eps hi or after max_steps counts.
//
// LEVELS steps a round: a group of lanes takes one value, lane j < 2^LEVELS - 1 counting
// at node j + 1 of the tree of the next LEVELS steps (node_point), all at once; then each
// lane of the group walks down the tree with the counts (shuffled from the lanes that
// made them), step by step as one thread would bisect, stopping where it would. So the
// values are those of one thread's bisection, bit for bit, for LEVELS times fewer rounds
// of the Sturm count (a chain of 2n - 1 dependent divisions, the latency that bounds
// this kernel). A group is 2^LEVELS lanes (one idle), or one lane for LEVELS = 1.
template <typename R, int LEVELS>
__global__ void bisection_singular_values(const R *__restrict__ t, long long n, R floor,
                                          R pivmin, R top, R two_eps, int max_steps,
                                          R *__restrict__ out)
{
    constexpr int NODES = (1 << LEVELS) - 1;
    constexpr int GROUP = LEVELS == 1 ? 1 : 1 << LEVELS;
    const long long thread = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    const long long i = thread / GROUP;
    const int lane = (int)(thread % GROUP);
    const unsigned group_mask =
        GROUP == 32 ? 0xffffffffu : ((1u << GROUP) - 1) << ((threadIdx.x & 31) & ~(GROUP - 1));
    if (i >= n)  // the whole group
        return;
    const long long m = 2 * n - 1;
    const long long rank = n - 1 - i;  // out[i] is the (rank + 1)-th smallest
    long long below_floor = lane == 0 ? count_below(t, m, floor, pivmin) : 0;
    below_floor = __shfl_sync(group_mask, below_floor, 0, GROUP);
    if (below_floor > rank) {
        if (lane == 0)
            out[i] = R(0);
        return;
    }
    R lo = floor, hi = top;
    int steps = 0;
    for (;;) {
        const bool counting = lane < NODES;
        const R x = counting ? node_point(lo, hi, lane + 1, LEVELS) : R(0);
        const long long c = counting ? count_below(t, m, x, pivmin) : 0;
        int at = 1 << (LEVELS - 1), step = at >> 1;
        bool done = false;
        for (int level = 0; level < LEVELS; ++level) {
            if (steps >= max_steps || hi - lo <= mul_rn(two_eps, hi)) {
                done = true;
                break;
            }
            const long long c_at = __shfl_sync(group_mask, c, at - 1, GROUP);
            const R x_at = __shfl_sync(group_mask, x, at - 1, GROUP);
            ++steps;
            if (c_at > rank) {
                hi = x_at;
                at -= step;
            } else {
                lo = x_at;
                at += step;
            }
            step >>= 1;
        }
        if (done)
            break;
    }
    if (lane == 0)
        out[i] = mul_rn(lo + hi, R(0.5));
}
