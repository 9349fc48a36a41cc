// Stage 2's back-transformation in one launch (condensed/chase_back.py): C <- Q*C for the
// chase's reflectors, real C row-major (n rows of m, leading dimension ld), one thread a
// column.
//
// Reflector (s, k), H = I - tau*v*v^T, acts on rows s+1+k*B ... s+k*B+B. Pass J takes the
// sweeps J*G ... J*G+G-1 and slides a window of B+G-1 rows down C: at its step k it
// applies group (J, k), sweep J*G+G-1 first, sweep J*G+j to the window's rows j ... j+B-1;
// then the window's first B rows are final for the pass, are stored, and B new rows come
// in. Passes run from the last sweeps' down: every group acts after each group it must
// follow (chase_back.py, "Ordering": (J+1, k') before (J, k), (J, k-1) before (J, k)).
//
// The P warps of a block take P consecutive passes of one 32-column slab at a time (a
// trip), warp p two lockstep steps (__syncthreads) behind warp p-1. Pass J's rows of step
// k+1 are those pass J+1 stores at its steps k+1 and before, so they are final one
// lockstep before pass J's step k: during step k they are copied into shared memory with
// cp.async, beside the group of step k+1 (v, G x B, and tau), and the step's arithmetic
// hides both copies. Pass J's window lies wholly below pass J+1's at every step, and the
// rows it copies lie below what pass J+1 writes meanwhile. Each pass reads the rows the
// pass before it has just written (in cache), so a trip moves C through memory about
// once, not P times.
//
// Per lane the window lives in registers (every index known at compile time, the loops
// unrolled); the group in shared memory, read by all lanes at once. v and tau past row n
// (or past the last sweep) arrive as zeros (cp.async's zero fill), so the rows past the
// end stay zero and are never stored. The NumPy twin, the same reflectors in the same
// order, is chase_back._passes_host.

#include <cuda_pipeline.h>

template <typename T, int B, int G>
struct PassShared {
    T v[2][G * B];  // the groups of steps k and k+1
    T tau[2][G];
    T rows[B * 32];  // the next step's B new rows of the slab, row by row
};

// cp.async of `bytes` (4, 8 or 16) from src to shared dst, of which only the first `valid`
// are read; the rest are zeros.
__device__ __forceinline__ void copy_async(void *dst, const void *src, int bytes, int valid)
{
    if (valid >= bytes)
        __pipeline_memcpy_async(dst, src, bytes);
    else
        __pipeline_memcpy_async(dst, src, bytes, bytes - (valid > 0 ? valid : 0));
}

template <typename T, int B, int G>
__global__ void __launch_bounds__(128, 2)
chase_back_passes(T *__restrict__ c, long long n, long long m, long long ld,
                  const T *__restrict__ v, const T *__restrict__ tau, long long sweeps,
                  long long blocks)
{
    extern __shared__ __align__(16) unsigned char shared_bytes[];
    using Shared = PassShared<T, B, G>;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int warps = blockDim.x >> 5;
    Shared &sh = reinterpret_cast<Shared *>(shared_bytes)[warp];
    const long long col = blockIdx.x * 32LL + lane;
    const bool column = col < m;
    const long long passes = (sweeps + G - 1) / G;
    constexpr int PER_COPY = 16 / sizeof(T);  // elements of v per 16-byte copy
    T w[B + G - 1];

    for (long long first = 0; first < passes; first += warps) {
        const long long q = first + warp;
        const bool mine = q < passes;
        const long long top = (passes - 1 - q) * G + 1;  // the window's first row, step 0
        const long long steps = mine ? (n - top + B - 1) / B : 0;
        const long long last = (passes - first < warps ? passes - first : warps) - 1;
        const long long lockstep =
            2 * last + (n - ((passes - 1 - first - last) * G + 1) + B - 1) / B + 1;
        // The copies of step `next`'s group and new rows into buffer next & 1 and sh.rows.
        auto prefetch = [&](long long next) {
            const long long base = top + next * B;
            T *sv = sh.v[next & 1];
            for (int idx = lane * PER_COPY; idx < G * B; idx += 32 * PER_COPY) {
                const int j = idx / B, i = idx % B;
                const long long s = (top - 1) + j;
                const long long left = s < sweeps ? n - (base + j + i) : 0;  // rows inside
                const T *src = s < sweeps ? v + (s * blocks + next) * B + i : v;
                copy_async(sv + idx, src, 16,
                           left <= 0 ? 0 : left >= PER_COPY ? 16 : (int)(left * sizeof(T)));
            }
            for (int j = lane; j < G; j += 32) {
                const long long s = (top - 1) + j;
                const bool inside = s < sweeps && base + j < n;
                copy_async(sh.tau[next & 1] + j, inside ? tau + s * blocks + next : tau,
                           sizeof(T), inside ? sizeof(T) : 0);
            }
            const long long rows = column ? n - (base + G - 1) : 0;
            const T *from = c + (base + G - 1) * ld + col;
            for (int i = 0; i < B; ++i, from += ld)
                copy_async(sh.rows + i * 32 + lane, i < rows ? from : c, sizeof(T),
                           i < rows ? sizeof(T) : 0);
            __pipeline_commit();
        };
        if (mine) {
            const T *from = c + top * ld + col;
            const long long rows = column ? n - top : 0;  // rows of C from the window's top
#pragma unroll
            for (int i = 0; i < G - 1; ++i, from += ld)
                w[i] = i < rows ? *from : T(0);
        }
        for (long long t = 0; t < lockstep; ++t) {
            const long long k = t - 2 * warp - 1;
            if (mine && k == -1)
                prefetch(0);
            if (mine && k >= 0 && k < steps) {
                __pipeline_wait_prior(0);
                __syncwarp();
#pragma unroll
                for (int i = 0; i < B; ++i)
                    w[G - 1 + i] = sh.rows[i * 32 + lane];
                __syncwarp();
                if (k + 1 < steps)
                    prefetch(k + 1);
                const T *sv = sh.v[k & 1];
                const T *st = sh.tau[k & 1];
#pragma unroll
                for (int j = G - 1; j >= 0; --j) {
                    T dot[4] = {T(0), T(0), T(0), T(0)};
#pragma unroll
                    for (int i = 0; i < B; ++i)
                        dot[i & 3] += sv[j * B + i] * w[j + i];
                    const T scaled = st[j] * ((dot[0] + dot[1]) + (dot[2] + dot[3]));
#pragma unroll
                    for (int i = 0; i < B; ++i)
                        w[j + i] -= scaled * sv[j * B + i];
                }
                const long long base = top + k * B;  // the window's first row
                T *row = c + base * ld + col;
                const long long rows = column ? n - base : 0;  // rows of C from base on
#pragma unroll
                for (int i = 0; i < B; ++i, row += ld)
                    if (i < rows)
                        *row = w[i];
                if (k == steps - 1) {
#pragma unroll
                    for (int i = B; i < B + G - 1; ++i, row += ld)
                        if (i < rows)
                            *row = w[i];
                } else {
#pragma unroll
                    for (int i = 0; i < G - 1; ++i)
                        w[i] = w[B + i];
                }
            }
            __syncthreads();
        }
    }
}
