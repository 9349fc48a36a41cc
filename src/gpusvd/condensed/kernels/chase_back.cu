// One wavefront step of stage 2's back-transformation (condensed/chase_back.py) in one
// launch, float64 on the tensor cores: the twin of chase_back_cuda's two cuBLAS GEMMs and
// of chase_back.py's _step_host.
//
// A step updates `count` disjoint row windows of C (C-ordered, m columns), window i
// starting at row r0 + i*period and `span` = b + g - 1 rows long, each by its group's
// block reflector: C_i <- C_i - V_i*(W_i*C_i), V_i span x g and W_i g x span, C-ordered
// in chase_back's vs and wy (group first + i*stride). The two GEMMs have an inner
// dimension of g or span (32 and 63 at b = g = 32) over all m columns of C: apart, each
// reads and writes C's window through memory, about four passes over the rows a step
// touches (a step touches up to all of C), and 0.18 s of the 0.2 s at n = 8192 were that
// traffic (H200). Here a thread block takes a tile of STEP_TILE columns of one window,
// holds it in shared memory with W_i and V_i, forms X = W_i*C and C - V_i*X there, and
// writes the tile back: one read and one write of the window.
//
// A block takes STEP_TILES tiles of STEP_TILE columns of one window in turn, W_i and V_i
// loaded once. Each warp owns 8 columns of a tile. Both products are made of mma.sync
// m8n8k4 float64 steps (D = A*B + C, each product and sum rounded as an fma: PTX ISA,
// "Warp-level matrix multiply-accumulate"), the second with -V as A and the tile as C,
// so a column is updated by fused multiply-adds in the order of k. X = W*C stays in the
// warp's registers: its accumulators are passed to the second product's B fragments by
// shuffles. Rows past the window (span rounded up to 8) are zero in W, V and the tile,
// and never stored; columns past m likewise.
//
// Fragments (PTX ISA, m8n8k4 with .f64): A (8 x 4, row) element (lane/4, lane%4), B
// (4 x 8, col) element (lane%4, lane/4), C and D (8 x 8) elements (lane/4, 2*(lane%4))
// and (lane/4, 2*(lane%4) + 1). The shared rows are padded (STEP_PAD, FRAG_PAD) so that
// a fragment's 32 loads take the two shared-memory wavefronts 256 bytes need.

constexpr int STEP_TILE = 64;      // columns of C a tile
constexpr int STEP_TILES = 4;      // tiles a block
constexpr int STEP_THREADS = 256;  // 8 warps, each 8 columns of the tile
constexpr int STEP_PAD = 8;        // doubles after each row of the tile
constexpr int FRAG_PAD = 4;        // doubles after each row of W and of V
constexpr int STEP_MAX_G = 32;     // g <= this, a multiple of 8
constexpr int STEP_MAX_ROWS = 64;  // span <= this

// d <- a*b + d for one m8n8k4 float64 fragment (sm_80 and later).
__device__ __forceinline__ void mma_f64(double (&d)[2], double a, double b)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, "
                 "{%0, %1};"
                 : "+d"(d[0]), "+d"(d[1])
                 : "d"(a), "d"(b));
#endif
}

// Shared memory (doubles), chase_back_cuda.fused_shared_bytes: the tile (rows x ld_c),
// -V (rows x (g + FRAG_PAD)), W (g x (rows + FRAG_PAD)); rows = span rounded up to 8,
// ld_c = STEP_TILE + STEP_PAD.
template <typename T>
__global__ void __launch_bounds__(STEP_THREADS, 3)
    wavefront_step(T *work, int m, long long r0, long long period, int span, int g,
                   const T *__restrict__ vs, const T *__restrict__ wy, long long first,
                   long long stride)
{
    extern __shared__ __align__(16) unsigned char shared_raw[];
    const int rows = (span + 7) / 8 * 8;
    const int ld_c = STEP_TILE + STEP_PAD, ld_v = g + FRAG_PAD, ld_w = rows + FRAG_PAD;
    T *tile = reinterpret_cast<T *>(shared_raw);
    T *v = tile + rows * ld_c;
    T *w = v + rows * ld_v;

    const long long group = first + blockIdx.y * stride;
    const T *w_i = wy + group * g * span;
    const T *v_i = vs + group * span * g;
    T *c_i = work + (r0 + blockIdx.y * period) * (long long)m;
    for (int e = threadIdx.x; e < rows * g; e += blockDim.x) {
        const int r = e / g, k = e % g;
        v[r * ld_v + k] = r < span ? -v_i[r * g + k] : T(0);
    }
    for (int e = threadIdx.x; e < g * rows; e += blockDim.x) {
        const int k = e / rows, r = e % rows;
        w[k * ld_w + r] = r < span ? w_i[k * span + r] : T(0);
    }

    const int lane = threadIdx.x % 32, n0 = threadIdx.x / 32 * 8;
    const int fr = lane / 4, fc = lane % 4;  // a fragment's row and column in A (m8n8k4)
    const int j_end = min(m, (blockIdx.x + 1) * STEP_TILE * STEP_TILES);
    for (int j0 = blockIdx.x * STEP_TILE * STEP_TILES; j0 < j_end; j0 += STEP_TILE) {
        const int cols = min(STEP_TILE, m - j0);
        __syncthreads();  // W and V stored; every warp done with the last tile
        for (int e = threadIdx.x; e < rows * STEP_TILE; e += blockDim.x) {
            const int r = e / STEP_TILE, j = e % STEP_TILE;
            tile[r * ld_c + j] = r < span && j < cols ? c_i[r * (long long)m + j0 + j] : T(0);
        }
        __syncthreads();
        // X (g x 8 of this warp) = W * tile, g/8 accumulators of 8 x 8.
        double x[STEP_MAX_G / 8][2] = {};
        for (int k = 0; k < rows; k += 4) {
            const double b = tile[(k + fc) * ld_c + n0 + fr];
#pragma unroll
            for (int t = 0; t < STEP_MAX_G / 8; ++t)
                if (t < g / 8) mma_f64(x[t], w[(t * 8 + fr) * ld_w + k + fc], b);
        }
        // tile - V * X: 8 rows a fragment, all rows at once; B = X(k + fc, fr), held by
        // lane (k % 8 + fc) * 4 + fr / 2 as its element fr % 2 of accumulator k / 8.
        double out[STEP_MAX_ROWS / 8][2];
#pragma unroll
        for (int t = 0; t < STEP_MAX_ROWS / 8; ++t)
            if (t < rows / 8) {
                out[t][0] = tile[(t * 8 + fr) * ld_c + n0 + 2 * fc];
                out[t][1] = tile[(t * 8 + fr) * ld_c + n0 + 2 * fc + 1];
            }
#pragma unroll
        for (int k = 0; k < STEP_MAX_G; k += 4)
            if (k < g) {
                const int from = (k % 8 + fc) * 4 + fr / 2;
                const double x0 = __shfl_sync(0xffffffffu, x[k / 8][0], from);
                const double x1 = __shfl_sync(0xffffffffu, x[k / 8][1], from);
                const double b = fr % 2 ? x1 : x0;
#pragma unroll
                for (int t = 0; t < STEP_MAX_ROWS / 8; ++t)
                    if (t < rows / 8) mma_f64(out[t], v[(t * 8 + fr) * ld_v + k + fc], b);
            }
        const int j = j0 + n0 + 2 * fc;
#pragma unroll
        for (int t = 0; t < STEP_MAX_ROWS / 8; ++t) {
            const int r = t * 8 + fr;
            if (t < rows / 8 && r < span) {
                T *d = c_i + r * (long long)m + j;
                if (j < m) d[0] = out[t][0];
                if (j + 1 < m) d[1] = out[t][1];
            }
        }
    }
}
