// The roots of a bidiagonal divide-and-conquer merge's secular equation, one group of
// lanes (a warp) per root: the CUDA twin of secular_svd._root (dlasd4), whose module
// docstring (and secular.py's) gives the equation, the models, the safeguards, the
// stopping test and the papers.
//
// A group is min(blockDim.x, 32) lanes (blockDim.x a multiple of 32 on the GPU, 1 on the
// host); root i is found by group i. Each step's sums over the poles j < k (psi,
// dpsi, phi, dphi and the error bound's size; fmid and z'z before the iteration) are split
// over the lanes, lane l taking j = l, l + lanes, ..., and added by __shfl_xor_sync, so
// every lane holds the same totals (a butterfly of commutative additions: the same bits in
// every lane). The rest of a step is scalar code that every lane runs identically, so the
// lanes never diverge and leave the loop together; lane 0 writes the root.
//
// The scalar operations and their order are the Numba twin's, so that only the order of
// the sums over j differs: every product that feeds a sum is written mul_rn (__dmul_rn)
// so that nvcc does not contract it into an fma where the Numba code rounds twice;
// division and square root round correctly (nvcc's and NVRTC's defaults). With one lane
// (blockDim.x = 1, the host build of tests/bidiagonal/host_secular.py) the sums are in the
// Numba order too, and the roots are the Numba twin's bit for bit.
//
// d (poles ascending) and z (weights, all nonzero) hold k entries; root i is
// sigma_i = d[origin[i]] + tau[i]; steps[i] > max_steps where it did not converge. The
// kernel takes a tree level's merges at once, one per blockIdx.y (svd_secular_roots).

__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }

// The Numba twin's constants (secular_svd.py: dlasd4's): the weight of sum |z_j^2/delta_j|
// in the rounding error bound of f, and the factor by which f must fall in a step of the
// same sign not to switch model.
constexpr double ERROR_WEIGHT = 8.0;
constexpr double SLOW = 10.0;

__device__ __forceinline__ unsigned group_lanes()
{
    return blockDim.x < 32 ? blockDim.x : 32;
}

// The root of this thread's group of lanes.
__device__ __forceinline__ long long group_root()
{
    return (long long)blockIdx.x * (blockDim.x / group_lanes()) + threadIdx.x / group_lanes();
}

// x's total over the group's lanes, the same bits in every lane.
template <typename T>
__device__ __forceinline__ T lanes_sum(T x)
{
    const unsigned lanes = group_lanes();
    for (unsigned offset = lanes / 2; offset > 0; offset /= 2)
        x += __shfl_xor_sync(0xffffffffu, x, offset, lanes);
    return x;
}

template <typename T>
__device__ __forceinline__ T sign_of(T x)
{
    return T((x > T(0)) - (x < T(0)));
}

// secular._root_in: the root of c x^2 - a x + b inside (lo, hi), or NaN.
template <typename T>
__device__ T root_in(T a, T b, T c, T lo, T hi)
{
    const T q = a != T(0)
        ? a + mul_rn(sign_of(a), sqrt(fabs(mul_rn(a, a) - mul_rn(mul_rn(T(4), b), c))))
        : sqrt(fabs(mul_rn(mul_rn(T(4), b), c)));
    const T first = c != T(0) ? q / mul_rn(T(2), c) : T(nan(""));
    const T second = q != T(0) ? mul_rn(T(2), b) / q : T(nan(""));
    return lo < first && first < hi ? first : second;
}

// secular.model_step: the next iterate in x from f's value w and derivative dw at x,
// safeguarded into (lo, hi); model 0 fixed weight, 1 middle way, 2 linear rest.
template <typename T>
__device__ T model_step(int model, bool origin_is_lower, T x, T w, T dw, T dpsi, T dphi,
                        T z_o, T delta_o, T delta_t, T gap, T lo, T hi)
{
    const T t_o = z_o / delta_o;
    T next;
    if (model == 2) {
        const T slope = dw - mul_rn(t_o, t_o);
        next = root_in(mul_rn(slope, x) - (w - mul_rn(z_o, t_o)), mul_rn(-z_o, z_o), slope,
                       lo, hi);
    } else {
        T b_o, b_t;
        if (model == 1) {
            const T side_o = origin_is_lower ? dpsi : dphi;
            const T side_t = origin_is_lower ? dphi : dpsi;
            b_o = mul_rn(mul_rn(delta_o, delta_o), side_o);
            b_t = mul_rn(mul_rn(delta_t, delta_t), side_t);
        } else {
            b_o = mul_rn(z_o, z_o);
            b_t = mul_rn(mul_rn(delta_t, delta_t), dw - mul_rn(t_o, t_o));
        }
        const T c = (w - b_o / delta_o) - b_t / delta_t;
        next = root_in((mul_rn(c, gap) + b_o) + b_t, mul_rn(b_o, gap), c, lo, hi);
    }
    if (!(lo < next && next < hi))
        next = x - w / dw;
    if (!(lo < next && next < hi))
        next = (x + (w < T(0) ? hi : lo)) / T(2);
    return next;
}

// The origin and bracket of root i, the start of secular_svd._root: for an interior root
// by the sign of f at the midpoint of its interval (in the iteration's variable, squared),
// pole_gap(j, i) the distance from pole i to pole j in that variable, `half` half the
// interval, f0 f's constant; for the last, (0, top_scale z'z] above the last pole.
template <typename T>
struct Start {
    long long origin, lower;  // the root's pole and the last pole below its interval
    T lo, hi;                 // the bracket on the offset from the origin
};

template <typename T, typename Gap>
__device__ Start<T> start(long long i, long long k, const T *__restrict__ z, T half, T f0,
                       T top_scale, Gap pole_gap)
{
    const long long lane = threadIdx.x % group_lanes();
    const unsigned lanes = group_lanes();
    if (i < k - 1) {
        T fmid = lane == 0 ? f0 : T(0);
        for (long long j = lane; j < k; j += lanes)
            fmid += mul_rn(z[j], z[j]) / (pole_gap(j, i) - half);
        fmid = lanes_sum(fmid);
        if (fmid >= T(0))
            return {i, i, T(0), half};
        return {i + 1, i, -half, T(0)};
    }
    T zz = T(0);
    for (long long j = lane; j < k; j += lanes)
        zz += mul_rn(z[j], z[j]);
    return {k - 1, k - 2, T(0), mul_rn(top_scale, lanes_sum(zz))};
}

// The sums of one step over j < k, t_j = z_j / delta(j): psi and dpsi over j <= lower,
// phi and dphi over the rest, size over all (the error bound's).
template <typename T>
struct Sums {
    T psi, dpsi, phi, dphi, size;
};

template <typename T, typename Delta>
__device__ Sums<T> step_sums(long long k, long long lower, const T *__restrict__ z,
                             Delta delta)
{
    const unsigned lanes = group_lanes();
    Sums<T> s = {T(0), T(0), T(0), T(0), T(0)};
    for (long long j = threadIdx.x % lanes; j < k; j += lanes) {
        const T t = z[j] / delta(j);
        if (j <= lower) {
            s.psi += mul_rn(z[j], t);
            s.dpsi += mul_rn(t, t);
        } else {
            s.phi += mul_rn(z[j], t);
            s.dphi += mul_rn(t, t);
        }
        s.size += fabs(mul_rn(z[j], t));
    }
    return {lanes_sum(s.psi), lanes_sum(s.dpsi), lanes_sum(s.phi), lanes_sum(s.dphi),
            lanes_sum(s.size)};
}

// After f's value w at x in step `step` of secular_svd._root: the bracket shrunk (f rises),
// and the next model where f kept its sign and fell by less than SLOW (dlaed4's SWTCH,
// with secular.py's third model).
template <typename T>
__device__ __forceinline__ void narrow(long long step, T x, T w, T &lo, T &hi, T &previous,
                                       int &model)
{
    if (w < T(0))
        lo = x;
    else
        hi = x;
    if (step > 0 && mul_rn(w, previous) > T(0) && fabs(w) > fabs(previous) / T(SLOW))
        model = (model + 1) % 3;
    previous = w;
}

// secular_svd._sigma_offset: tau = sigma - d_o for sigma^2 = d_o^2 + x.
template <typename T>
__device__ __forceinline__ T sigma_offset(T d_o, T x)
{
    return x / (d_o + sqrt(mul_rn(d_o, d_o) + x));
}

// secular_svd._root: singular value i of e_1 z' + diag(d), sigma_i = d[origin] + tau.
template <typename T>
__device__ void secular_root(const T *__restrict__ d, const T *__restrict__ z, long long k,
                             long long max_steps, T eps, long long *__restrict__ origin_out,
                             T *__restrict__ tau_out, long long *__restrict__ steps_out)
{
    const long long i = group_root();
    if (i >= k)
        return;
    const bool writer = threadIdx.x % group_lanes() == 0;
    if (k == 1) {
        if (writer) {
            origin_out[i] = 0;
            tau_out[i] = sigma_offset(d[0], mul_rn(z[0], z[0]));
            steps_out[i] = 0;
        }
        return;
    }
    const T half = i < k - 1 ? mul_rn(d[i + 1] - d[i], d[i + 1] + d[i]) / T(2) : T(0);
    const Start<T> s = start<T>(i, k, z, half, T(1), T(1), [&](long long j, long long p) {
        return mul_rn(d[j] - d[p], d[j] + d[p]);
    });
    const long long origin = s.origin, lower = s.lower;
    T lo = s.lo, hi = s.hi;
    const T d_o = d[origin];
    T x = origin == i ? hi : lo;
    T tau = sigma_offset(d_o, x);
    const long long other = origin == lower + 1 ? lower : lower + 1;
    const T gap = mul_rn(d[other] - d_o, d[other] + d_o);
    int model = 0;
    T previous = T(0);
    long long steps = max_steps + 1;
    for (long long step = 0; step < max_steps; ++step) {
        const Sums<T> f = step_sums<T>(k, lower, z, [&](long long j) {
            return mul_rn((d[j] - d_o) - tau, (d[j] + d_o) + tau);
        });
        const T w = (T(1) + f.psi) + f.phi;
        const T dw = f.dpsi + f.dphi;
        const T terms = mul_rn(T(ERROR_WEIGHT), f.size) + T(2);
        if (fabs(w) <= mul_rn(eps, terms + mul_rn(fabs(x), dw))) {
            steps = step;
            break;
        }
        narrow(step, x, w, lo, hi, previous, model);
        const T delta_o = mul_rn(-tau, (d_o + d_o) + tau);
        const T delta_t = mul_rn((d[other] - d_o) - tau, (d[other] + d_o) + tau);
        const T next = model_step(model, origin == lower, x, w, dw, f.dpsi, f.dphi, z[origin],
                                  delta_o, delta_t, gap, lo, hi);
        if (next == x) {
            steps = step;
            break;
        }
        x = next;
        tau = sigma_offset(d_o, x);
    }
    if (writer) {
        origin_out[i] = origin;
        tau_out[i] = tau;
        steps_out[i] = steps;
    }
}

// Several merges' equations in one launch: problem p = blockIdx.y has ks[p] poles and
// weights from d + starts[p] and z + starts[p], and its roots go to the outputs from
// starts[p] (origin relative to the problem); blockIdx.x and the groups of lanes as in
// secular_root, blocks past a problem's roots idle.
template <typename T>
__global__ void svd_secular_roots(const T *__restrict__ d, const T *__restrict__ z,
                                  const long long *__restrict__ starts,
                                  const long long *__restrict__ ks, long long max_steps, T eps,
                                  long long *__restrict__ origin_out, T *__restrict__ tau_out,
                                  long long *__restrict__ steps_out)
{
    const long long first = starts[blockIdx.y];
    secular_root<T>(d + first, z + first, ks[blockIdx.y], max_steps, eps, origin_out + first,
                    tau_out + first, steps_out + first);
}
