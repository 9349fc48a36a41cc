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

// Bisection of one value from [lo, hi] after `steps` steps, until hi - lo <= two_eps hi or
// after max_steps steps. A step whose midpoint lies outside [below, above] (the interval
// known to hold the value) is taken without a count, as the count would take it, and
// marks the end it moves as not counted; the other steps go LEVELS a round: a group of
// lanes takes one value, lane j < 2^LEVELS - 1 counting at node j + 1 of the tree of the
// next LEVELS steps (node_point), all at once; then each lane of the group walks down the
// tree with the counts (shuffled from the lanes that made them), step by step as one
// thread would bisect, stopping where it would. So the values are those of one thread's
// bisection, bit for bit, for LEVELS times fewer rounds of the Sturm count (a chain of
// 2n - 1 dependent divisions, the latency that bounds this kernel). A group is
// 2^LEVELS lanes (one idle), or one lane for LEVELS = 1.
template <typename R, int LEVELS, int GROUP>
__device__ void bisect_rounds(const R *__restrict__ t, long long m, long long rank,
                              R pivmin, R two_eps, int max_steps, R below, R above,
                              int lane, unsigned group_mask, R &lo, R &hi, int &steps,
                              bool &lo_counted, bool &hi_counted)
{
    constexpr int NODES = (1 << LEVELS) - 1;
    for (;;) {
        for (;;) {
            if (steps >= max_steps || hi - lo <= mul_rn(two_eps, hi))
                return;
            const R mid = midpoint(lo, hi);
            if (mid <= below) {
                lo = mid;
                lo_counted = false;
            } else if (mid > above) {
                hi = mid;
                hi_counted = false;
            } else {
                break;
            }
            ++steps;
        }
        const bool counting = lane < NODES;
        const R x = counting ? node_point(lo, hi, lane + 1, LEVELS) : R(0);
        const long long c = counting ? count_below(t, m, x, pivmin) : 0;
        int at = 1 << (LEVELS - 1), step = at >> 1;
        for (int level = 0; level < LEVELS; ++level) {
            if (steps >= max_steps || hi - lo <= mul_rn(two_eps, hi))
                return;
            const long long c_at = __shfl_sync(group_mask, c, at - 1, GROUP);
            const R x_at = __shfl_sync(group_mask, x, at - 1, GROUP);
            ++steps;
            if (c_at > rank) {
                hi = x_at;
                hi_counted = true;
                at -= step;
            } else {
                lo = x_at;
                lo_counted = true;
                at += step;
            }
            step >>= 1;
        }
    }
}

// out[i], i < n: the i-th largest singular value (of the scaled B), by bisection from
// [floor, top]: 0 if it lies below floor; geometric midpoints while hi > 2 lo, then
// arithmetic ones, until hi - lo <= two_eps hi or after max_steps counts (bisect_rounds).
//
// With `bracketed`, near[i] is within `slack` of the value (the Numba twin's docstring):
// the steps whose midpoint lies outside [near[i] - slack, near[i] + slack] are taken
// without counting; the floor is counted first only where that interval reaches it. An
// end of the final interval that no count set is checked by one count (lanes 0 and 1);
// where a check fails the value is bisected again from [floor, top] with every step
// counted. Where the count is monotone in x the result is the bits of the bisection
// without `near`.
template <typename R, int LEVELS>
__global__ void bisection_singular_values(const R *__restrict__ t, long long n, R floor,
                                          R pivmin, R top, R two_eps, int max_steps,
                                          const R *__restrict__ near, R slack,
                                          int bracketed, R *__restrict__ out)
{
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
    // every midpoint lies in (0, top]: [0, top] skips none
    R below = R(0), above = top;
    if (bracketed) {
        below = near[i] - slack;
        above = near[i] + slack;
    }
    for (;;) {
        const bool floor_first = !(below > floor);  // (and for a NaN near: no skips)
        if (floor_first) {
            long long below_floor = lane == 0 ? count_below(t, m, floor, pivmin) : 0;
            below_floor = __shfl_sync(group_mask, below_floor, 0, GROUP);
            if (below_floor > rank) {
                if (lane == 0)
                    out[i] = R(0);
                return;
            }
        }
        R lo = floor, hi = top;  // every value lies below top
        int steps = 0;
        bool lo_counted = floor_first, hi_counted = true;
        bisect_rounds<R, LEVELS, GROUP>(t, m, rank, pivmin, two_eps, max_steps, below,
                                        above, lane, group_mask, lo, hi, steps,
                                        lo_counted, hi_counted);
        bool fits = true;
        if (!lo_counted || !hi_counted) {  // the same for every lane of the group
            long long c_lo = 0, c_hi = rank + 1;
            if (GROUP == 1) {
                if (!lo_counted)
                    c_lo = count_below(t, m, lo, pivmin);
                if (!hi_counted)
                    c_hi = count_below(t, m, hi, pivmin);
            } else {
                const long long c = lane == 0 && !lo_counted   ? count_below(t, m, lo, pivmin)
                                    : lane == 1 && !hi_counted ? count_below(t, m, hi, pivmin)
                                                               : 0;
                if (!lo_counted)
                    c_lo = __shfl_sync(group_mask, c, 0, GROUP);
                if (!hi_counted)
                    c_hi = __shfl_sync(group_mask, c, 1, GROUP);
            }
            fits = c_lo <= rank && c_hi > rank;
        }
        if (fits) {
            if (lane == 0)
                out[i] = mul_rn(lo + hi, R(0.5));
            return;
        }
        below = R(0);  // again, every step counted
        above = top;
    }
}
