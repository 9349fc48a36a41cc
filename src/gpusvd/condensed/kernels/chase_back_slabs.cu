// Stage 2's back-transformation, Q*C, by column slabs of C: one thread block per SLAB_COLS
// columns, each applying every block reflector of chase_back.py (group (J, k): C(r0 :
// r0+span, :) -= V * (W * C(r0 : r0+span, :)), r0 = J*g + k*b + 1, span = b + g - 1) to its
// own columns, group by group: J = last .. 0, and k = 0, 1, ... within J. That order is
// the sequential one at the granularity of groups (later sweeps first; (J, k-1) before
// (J, k)), which chase_back's wavefront only interleaves for parallelism; the slabs are
// independent, so no block waits for another.
//
// Within J the window slides down by b rows per group, keeping span - b = g - 1 rows:
// the slab's rows live in a ring of SLAB_RING rows of shared memory (row r in slot
// r % SLAB_RING), so a group writes back only the b rows leaving the window and reads the
// b rows entering it. The wavefront order instead reads each window twice and writes it
// once from L2 or memory per group (chase_back_cuda.py; ~0.4 TB a side at n = 8192).
// V (span x g) and W = T V^H (g x span) of a group are read from global memory, every
// thread of a warp the same entry (a broadcast, cached in L1).
//
// Real data, span <= SLAB_RING. The NumPy twin is chase_back._slabs_host (the same order,
// each group's two products by BLAS: the same to rounding). With one thread per block
// (the host build, tests/condensed/host_chase_back_slabs.py) every loop runs sequentially.
// Not yet run on a GPU (2026-11-27): behind the tunable chase_back_slabs, off.

constexpr int SLAB_COLS = 32;
constexpr int SLAB_RING = 64;
constexpr int SLAB_THREADS = 256;
constexpr int SLAB_MAX_G = 32;  // X holds g <= SLAB_MAX_G rows

// work: C-ordered rows of C (row r at work + r * ld), n + g + b of them (zero past n);
// vs (groups, span, g) and wy (groups, g, span) C-ordered, group (J, k) at J * blocks + k.
template <typename T>
__global__ void __launch_bounds__(SLAB_THREADS)
    chase_back_slabs(T *work, long long ld, int m, int n, const T *vs, const T *wy, int last,
                     int blocks, int b, int g)
{
    __shared__ T ring[SLAB_RING][SLAB_COLS];
    __shared__ T x[SLAB_MAX_G][SLAB_COLS];
    const int lanes = blockDim.x < SLAB_COLS ? blockDim.x : SLAB_COLS;
    const int rows_step = blockDim.x / lanes;
    const int lane = threadIdx.x % lanes, row_lane = threadIdx.x / lanes;
    const int c0 = blockIdx.x * SLAB_COLS;
    const int cols = m - c0 < SLAB_COLS ? m - c0 : SLAB_COLS;
    const int span = b + g - 1;
    // Rows [lo, hi) of the slab, held in the ring, moved out or in by every thread.
    auto store = [&](int from, int to) {
        for (int r = from + row_lane; r < to; r += rows_step)
            for (int c = lane; c < cols; c += lanes)
                work[r * ld + c0 + c] = ring[r % SLAB_RING][c];
    };
    auto load = [&](int from, int to) {
        for (int r = from + row_lane; r < to; r += rows_step)
            for (int c = lane; c < cols; c += lanes)
                ring[r % SLAB_RING][c] = work[r * ld + c0 + c];
    };
    for (int J = last; J >= 0; --J) {
        int lo = J * g + 1, hi = lo;
        for (int k = 0; k < blocks; ++k) {
            const int r0 = J * g + k * b + 1;
            if (r0 > n - 1)
                break;
            store(lo, r0 < hi ? r0 : hi);  // the rows leaving the window
            __syncthreads();               // their slots are the entering rows'
            load(r0 > hi ? r0 : hi, r0 + span);
            lo = r0;
            hi = r0 + span;
            __syncthreads();
            const long long group = (long long)J * blocks + k;
            const T *v = vs + group * span * g;
            const T *w = wy + group * g * span;
            // X = W * window (g x cols)
            for (int i = row_lane; i < g; i += rows_step)
                for (int c = lane; c < cols; c += lanes) {
                    T s = T(0);
                    for (int r = 0; r < span; ++r)
                        s += w[i * span + r] * ring[(r0 + r) % SLAB_RING][c];
                    x[i][c] = s;
                }
            __syncthreads();
            // window -= V * X
            for (int r = row_lane; r < span; r += rows_step)
                for (int c = lane; c < cols; c += lanes) {
                    T s = T(0);
                    for (int i = 0; i < g; ++i)
                        s += v[r * g + i] * x[i][c];
                    ring[(r0 + r) % SLAB_RING][c] -= s;
                }
            __syncthreads();
        }
        store(lo, hi);
        __syncthreads();
    }
}
