// Householder QR of one tall panel in one cooperative kernel: LAPACK's geqrf contract (R on
// and above the diagonal, the Householder vectors v below it with v_j = 1 implied, tau)
// for stage 1 of the two-stage reduction (band.py), whose 2n panel columns cuSOLVER's
// geqrf takes at ~9 us each, a chain of launches per column (NOTES.md, session 9: 0.13 s
// of stage 1's 0.26 s at n = 8192). Here a column costs one grid-wide barrier. Measured
// on the H100 it is slower (about 12 us per column: stage 1 at 8192 float64 0.309 s
// against geqrf's 0.257), so it stays behind the tunable stage1_panel_kernel, off.
//
// The panel is m x nb (nb <= QR_MAX_COLS), entry (i, j) at a[i*rs + j*cs]: a column panel
// of a column-major matrix (rs = 1, cs = lda), or, in place, the conjugate transpose of a
// row panel (rs = lda, cs = 1), which band.py's LQ steps factor; real data only.
//
// Column j of the panel, x = a(j+1:m, j), alpha = a(j, j), as dlarfg and dlarf:
//   A  every block, over its own rows (a contiguous range): the partial sums of x_i^2 and
//      max |x_i|, and of x_i * a(i, c) for the columns c > j; the owner of row j also
//      publishes row j (alpha and a(j, c)). Then the grid barrier.
//   B  every block alike, from all the partials (summed in block order, so every block
//      gets the same bits): xnorm, beta = -sign(alpha) hypot(alpha, xnorm),
//      tau = (beta - alpha) / beta, v = x / (alpha - beta), and
//      w_c = v^T a(j:m, c) = a(j, c) + (x^T a(j+1:m, c)) / (alpha - beta):
//      the dot products need v, but x^T a(:, c) is v's up to the scalar, so they are
//      summed in A beside the norm and one barrier serves both.
//   C  every block, on its own rows i >= j: a(i, c) -= tau v_i w_c (c > j), then v_i into
//      a(i, j) (i > j) and beta into a(j, j).
// xnorm = 0 gives tau = 0 (H = I; dlarfg). The sums are plain: stage 1's input is scaled
// into the safe range by a power of two (driver._scaled_copy), so no square overflows,
// and a square that underflows belongs to an entry below 2^-480 ||A||, whose loss is
// below the rounding of the band. Only where alpha and x are all that small (float64)
// does the column take a second barrier, to sum its squares and products again on x and
// the columns scaled by 2^600 (exactly), as dlarfg rescales by 1/safmin; the panel's
// other columns may be as small, and their products with x would underflow too. float
// data is summed and scaled in double.
//
// The partials of A are double-buffered by the column's parity: a block may start column
// j+1's A while another still reads column j's partials in B, never further ahead (the
// barrier). Deterministic: every sum is taken in a fixed order.
//
// Threads: blockDim.x = lanes * groups, lane = the column (lanes = 32 = QR_MAX_COLS on a
// GPU), group = a slice of the block's rows. With one thread per block (the host build,
// tests/condensed/host_panel_qr.py, blocks as host threads and the grid barrier a
// std::barrier) every loop runs sequentially.

#if defined(__CUDACC__)
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
#endif

constexpr int QR_THREADS = 256;
constexpr int QR_MAX_COLS = 32;
constexpr int QR_GROUPS = QR_THREADS / QR_MAX_COLS;
// Partials per panel column and block: x^T a(:, c) for every c (x^T x at c = j), max |x|.
constexpr int QR_SLOTS = QR_MAX_COLS + 1;
// The blocks one thread adds up in B, all loads in flight: at most QR_PER_THREAD * groups
// blocks (256 on a GPU; the launcher, band_cuda.panel_qr_into, keeps to it).
constexpr int QR_PER_THREAD = 32;
constexpr double QR_TINY = 0x1p-480;
constexpr double QR_UP = 0x1p+600;

__device__ __forceinline__ int qr_min(int a, int b) { return a < b ? a : b; }
__device__ __forceinline__ int qr_max(int a, int b) { return a > b ? a : b; }

// Sum over the blocks b = first, first + step, ... < blocks of p[b * stride]: a constant
// trip count, unrolled and predicated, so the loads are all in flight at once.
__device__ __forceinline__ double over_blocks(const double *p, long long stride, int first,
                                              int step, int blocks, bool take_max)
{
    double s = 0.0;
#pragma unroll
    for (int k = 0; k < QR_PER_THREAD; ++k) {
        const int b = first + k * step;
        if (b < blocks) s = take_max ? fmax(s, p[b * stride]) : s + p[b * stride];
    }
    return s;
}

// The groups' partial sums of column c, and their largest |x|, added in group order.
__device__ __forceinline__ double over_groups(const double (&red)[QR_GROUPS][QR_MAX_COLS],
                                              int c, int groups)
{
    double s = 0.0;
    for (int g = 0; g < groups; ++g)
        s += red[g][c];
    return s;
}
__device__ __forceinline__ double largest_of_groups(const double (&red_max)[QR_GROUPS],
                                                    int groups)
{
    double big = 0.0;
    for (int g = 0; g < groups; ++g)
        big = fmax(big, red_max[g]);
    return big;
}

// A: this block's partials of column j over its rows below..r1-1 into out[0 .. nb-1]
// (x^T x at j, x^T a(:, c) at c > j) and out[QR_MAX_COLS] (max |x|), on x and the columns
// scaled by up: each thread its column c = lane, lane + lanes, ... and every groups-th
// row, then group 0 adds the groups in order.
template <typename At>
__device__ void block_partials(At at, int j, int nb, int below, int r1, double up, int lane,
                               int lanes, int group, int groups,
                               double (&red)[QR_GROUPS][QR_MAX_COLS],
                               double (&red_max)[QR_GROUPS], double *out)
{
    for (int c = lane; c < nb; c += lanes) {
        if (c < j)
            continue;
        double s = 0.0, big = 0.0;
        for (int i = below + group; i < r1; i += groups) {
            const double x = double(at(i, j)) * up;
            if (c == j) {
                s += x * x;
                big = fmax(big, fabs(x));
            } else {
                s += x * (double(at(i, c)) * up);
            }
        }
        red[group][c] = s;
        if (c == j)
            red_max[group] = big;
    }
    __syncthreads();
    if (group == 0) {
        for (int c = lane; c < nb; c += lanes) {
            if (c < j)
                continue;
            out[c] = over_groups(red, c, groups);
            if (c == j)
                out[QR_MAX_COLS] = largest_of_groups(red_max, groups);
        }
    }
}

// B: the sums over the blocks of part (blocks x QR_SLOTS) into w[j .. nb-1], the same
// bits in every block (group g adds blocks g, g + groups, ..., then the groups in
// order); returns the largest |x|. Ends with a block barrier.
__device__ double sum_partials(const double *part, int j, int nb, int blocks, int lane,
                               int lanes, int group, int groups,
                               double (&red)[QR_GROUPS][QR_MAX_COLS],
                               double (&red_max)[QR_GROUPS], double (&w)[QR_MAX_COLS])
{
    __syncthreads();  // red is free again
    for (int c = lane; c < nb; c += lanes) {
        if (c < j)
            continue;
        red[group][c] = over_blocks(part + c, QR_SLOTS, group, groups, blocks, false);
        if (c == j)
            red_max[group] = over_blocks(part + QR_MAX_COLS, QR_SLOTS, group, groups,
                                         blocks, true);
    }
    __syncthreads();
    if (group == 0)
        for (int c = lane; c < nb; c += lanes)
            if (c >= j)
                w[c] = over_groups(red, c, groups);
    const double big = largest_of_groups(red_max, groups);
    __syncthreads();
    return big;
}

// The panel (module comment) in place; tau: min(m, nb) entries. work (doubles): the
// partials [2][blocks][QR_SLOTS], row j [2][QR_SLOTS], the rescaled partials
// [blocks][QR_SLOTS]: (3 * blocks + 2) * QR_SLOTS. A cooperative launch of at most
// QR_PER_THREAD * QR_GROUPS blocks of QR_THREADS threads.
template <typename T>
__global__ void __launch_bounds__(QR_THREADS, 1)
    panel_qr(T *a, long long rs, long long cs, int m, int nb, T *tau, double *work)
{
#if defined(__CUDACC__)
    cg::grid_group grid = cg::this_grid();
#else
    host_grid grid;
#endif
    __shared__ double red[QR_GROUPS][QR_MAX_COLS];
    __shared__ double red_max[QR_GROUPS];
    __shared__ double w[QR_MAX_COLS];
    // tau, 1 / (alpha - beta) (on the scaled values), beta, the dot products' factor
    __shared__ double scalars[4];
    const int lanes = blockDim.x < QR_MAX_COLS ? blockDim.x : QR_MAX_COLS;
    const int groups = blockDim.x / lanes;
    const int lane = threadIdx.x % lanes, group = threadIdx.x / lanes;
    const int blocks = gridDim.x, block = blockIdx.x;
    const int chunk = (m + blocks - 1) / blocks;
    const int r0 = qr_min(block * chunk, m), r1 = qr_min(r0 + chunk, m);
    double *partials = work;                                        // [2][blocks][SLOTS]
    double *rows = work + 2LL * blocks * QR_SLOTS;                  // [2][SLOTS]
    double *rescaled = rows + 2 * QR_SLOTS;                         // [blocks][SLOTS]
    auto at = [&](int i, int c) -> T & { return a[i * rs + c * cs]; };

    const int steps = qr_min(m, nb);  // a short panel (m < nb): reflectors 0 .. m-1
    for (int j = 0; j < steps; ++j) {
        const int below = qr_max(r0, j + 1);  // this block's rows of x
        double *part = partials + (long long)(j & 1) * blocks * QR_SLOTS;
        double *row = rows + (j & 1) * QR_SLOTS;
        // A: this block's partials, then the grid barrier; B: their sums, in every block.
        block_partials(at, j, nb, below, r1, 1.0, lane, lanes, group, groups, red, red_max,
                       part + (long long)block * QR_SLOTS);
        if (group == 0 && j >= r0 && j < r1)
            for (int c = lane; c < nb; c += lanes)
                if (c >= j)
                    row[c] = double(at(j, c));
        grid.sync();
        double big = sum_partials(part, j, nb, blocks, lane, lanes, group, groups, red,
                                  red_max, w);
        const double alpha = row[j];
        double up = 1.0;
        if (sizeof(T) == sizeof(double) && big > 0.0 && fmax(fabs(alpha), big) < QR_TINY) {
            // Every block takes this branch alike (alpha and big are the same bits in
            // all): the squares and the products again, on x and the columns scaled by
            // 2^600 (exact), into the single rescaled buffer (a block reaches the next
            // one only past column j+1's barrier, after every block read this one).
            up = QR_UP;
            block_partials(at, j, nb, below, r1, up, lane, lanes, group, groups, red,
                           red_max, rescaled + (long long)block * QR_SLOTS);
            grid.sync();
            sum_partials(rescaled, j, nb, blocks, lane, lanes, group, groups, red, red_max,
                         w);
        }
        if (threadIdx.x == 0) {
            if (big == 0.0) {  // x = 0: H = I, as dlarfg
                scalars[0] = 0.0;
                scalars[1] = 0.0;
                scalars[2] = alpha;
                scalars[3] = 0.0;
            } else {
                // On x*up and alpha*up: tau and v are the same, beta is scaled back, and
                // v^T a = inverse * (x*up)^T a = inverse * (x*up)^T (a*up) / up.
                const double a0 = alpha * up;
                const double beta = -copysign(hypot(a0, sqrt(w[j])), a0);
                const double inverse = 1.0 / (a0 - beta);  // v_i = (x_i * up) * inverse
                scalars[0] = (beta - a0) / beta;
                scalars[1] = inverse;
                scalars[2] = beta / up;
                scalars[3] = inverse / up;
            }
        }
        __syncthreads();
        const double t = scalars[0], inverse = scalars[1], dots = scalars[3];
        // w_c = v^T a(j:m, c) = a(j, c) + x^T a(j+1:m, c) / (alpha - beta).
        if (group == 0)
            for (int c = lane; c < nb; c += lanes)
                if (c > j)
                    w[c] = row[c] + dots * w[c];
        __syncthreads();

        // C: this block's rows i >= j of the columns c > j, then column j itself.
        if (t != 0.0) {
            for (int c = lane; c < nb; c += lanes) {
                if (c <= j)
                    continue;
                const double tw = t * w[c];
                for (int i = qr_max(r0, j) + group; i < r1; i += groups) {
                    const double v = i == j ? 1.0 : double(at(i, j)) * up * inverse;
                    at(i, c) = T(double(at(i, c)) - tw * v);
                }
            }
        }
        __syncthreads();
        if (t != 0.0)
            for (int i = qr_max(r0, j) + (int)threadIdx.x; i < r1; i += blockDim.x)
                at(i, j) = i == j ? T(scalars[2]) : T(double(at(i, j)) * up * inverse);
        if (block == 0 && threadIdx.x == 0)
            tau[j] = T(t);
        __syncthreads();
    }
}
