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
// Each warp owns STEP_TILE/8 = 8 columns of the tile. Both products are made of
// mma.sync m8n8k4 float64 steps (D = A*B + C, each product and sum rounded as an fma:
// PTX ISA, "Warp-level matrix multiply-accumulate"), the second with -V as A and the
// tile as C, so a column is updated by fused multiply-adds in the order of k. Rows
// past the window (span rounded up to 8) are zero in W, V and the tile, and never
// stored; columns past m are zero and never stored.
//
// Fragments (PTX ISA, m8n8k4 with .f64): A (8 x 4, row) element (lane/4, lane%4), B
// (4 x 8, col) element (lane%4, lane/4), C and D (8 x 8) elements (lane/4, 2*(lane%4))
// and (lane/4, 2*(lane%4) + 1). The shared rows are padded (STEP_PAD, FRAG_PAD) so that
// a fragment's 32 loads take the two shared-memory wavefronts 256 bytes need.

constexpr int STEP_TILE = 64;      // columns of C a block
constexpr int STEP_THREADS = 256;  // 8 warps, each 8 columns of the tile
constexpr int STEP_PAD = 8;        // doubles after each row of the tile and of X
constexpr int FRAG_PAD = 4;        // doubles after each row of W and of V
constexpr int STEP_MAX_G = 64;     // g <= this, a multiple of 8

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
// -V (rows x (g + FRAG_PAD)), then W (g x (rows + FRAG_PAD)), later X (g x ld_c) in its
// place; rows = span rounded up to 8, ld_c = STEP_TILE + STEP_PAD.
template <typename T>
__global__ void __launch_bounds__(STEP_THREADS)
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
    T *x = w;

    const long long group = first + blockIdx.y * stride;
    const T *w_i = wy + group * g * span;
    const T *v_i = vs + group * span * g;
    T *c_i = work + (r0 + blockIdx.y * period) * (long long)m;
    const int j0 = blockIdx.x * STEP_TILE;
    const int cols = min(STEP_TILE, m - j0);

    for (int e = threadIdx.x; e < rows * STEP_TILE; e += blockDim.x) {
        const int r = e / STEP_TILE, j = e % STEP_TILE;
        tile[r * ld_c + j] = r < span && j < cols ? c_i[r * (long long)m + j0 + j] : T(0);
    }
    for (int e = threadIdx.x; e < rows * g; e += blockDim.x) {
        const int r = e / g, k = e % g;
        v[r * ld_v + k] = r < span ? -v_i[r * g + k] : T(0);
    }
    for (int e = threadIdx.x; e < g * rows; e += blockDim.x) {
        const int k = e / rows, r = e % rows;
        w[k * ld_w + r] = r < span ? w_i[k * span + r] : T(0);
    }
    __syncthreads();

    const int lane = threadIdx.x % 32, n0 = threadIdx.x / 32 * 8;
    const int fr = lane / 4, fc = lane % 4;  // a fragment's row and column in A (m8n8k4)
    // X (g x 8 of this warp) = W * tile, g/8 accumulators of 8 x 8.
    double acc[STEP_MAX_G / 8][2] = {};
    for (int k = 0; k < rows; k += 4) {
        const double b = tile[(k + fc) * ld_c + n0 + fr];
#pragma unroll
        for (int t = 0; t < STEP_MAX_G / 8; ++t)
            if (t < g / 8) mma_f64(acc[t], w[(t * 8 + fr) * ld_w + k + fc], b);
    }
    __syncthreads();  // every warp has read W: X takes its place
#pragma unroll
    for (int t = 0; t < STEP_MAX_G / 8; ++t)
        if (t < g / 8) {
            x[(t * 8 + fr) * ld_c + n0 + 2 * fc] = acc[t][0];
            x[(t * 8 + fr) * ld_c + n0 + 2 * fc + 1] = acc[t][1];
        }
    __syncwarp();  // a warp reads only its own columns of X and of the tile
    // tile <- tile - V * X, 8 rows at a time.
    for (int t = 0; t < rows / 8; ++t) {
        T *d = tile + (t * 8 + fr) * ld_c + n0 + 2 * fc;
        double out[2] = {d[0], d[1]};
        for (int k = 0; k < g; k += 4)
            mma_f64(out, v[(t * 8 + fr) * ld_v + k + fc], x[(k + fc) * ld_c + n0 + fr]);
        d[0] = out[0];
        d[1] = out[1];
    }
    __syncthreads();
    for (int e = threadIdx.x; e < span * STEP_TILE; e += blockDim.x) {
        const int r = e / STEP_TILE, j = e % STEP_TILE;
        if (j < cols) c_i[r * (long long)m + j0 + j] = tile[r * ld_c + j];
    }
}
