// The cosine tree's children's means (quic/cosine_tree.py): for each child c,
//     M[c, j] = sum over the entries t of c of w_t * (a[rows_t, j] - center_j),
// the entries sorted by child, without the dense selection matrix of the GEMM form (whose
// flops grow with the number of children while each row belongs to one) and without a
// centered copy of A. Each row is read once. Deterministic: no atomics. The entries are
// cut into pieces of at most a fixed number of rows, each piece summed by one block
// (piece_sums, one thread a column, coalesced across the row); then each child's pieces
// are added in order (child_sums). Accumulation in double; the difference a - center is
// formed in double too, exact for float input (a zero center where there is none). The
// host twin is quic/means_cuda.weighted_means_host, which does the same sums piece by
// piece.

template <typename T>
__global__ void piece_sums(const T *__restrict__ a, long long n, long long ld,
                           const long long *__restrict__ rows,
                           const long long *__restrict__ piece_start,
                           const double *__restrict__ w, const T *__restrict__ center,
                           double *__restrict__ partial)
{
    const long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long p = blockIdx.y;
    if (j >= n) {
        return;
    }
    const double cj = (double)center[j];
    double acc = 0.0;
#pragma unroll 4
    for (long long t = piece_start[p]; t < piece_start[p + 1]; ++t) {
        acc += w[t] * ((double)a[rows[t] * ld + j] - cj);
    }
    partial[p * n + j] = acc;
}

template <typename T>
__global__ void child_sums(const double *__restrict__ partial, long long n,
                           const long long *__restrict__ first_piece, T *__restrict__ out)
{
    const long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long c = blockIdx.y;
    if (j >= n) {
        return;
    }
    double acc = 0.0;
    for (long long p = first_piece[c]; p < first_piece[c + 1]; ++p) {
        acc += partial[p * n + j];
    }
    out[c * n + j] = (T)acc;
}

// The inner product of each entry's row with its node's pivot row (cosine_tree's split):
//     dots[t] = sum over j of a[rows_t, j] * a[partners_t, j],
// one block an entry, its threads striding over the columns, the products and their sum
// in double, then a tree over the block's threads in shared memory. Each row is read once
// (a pivot row by every entry of its node, from cache), where the GEMM form multiplied
// every row by every pivot. The host twin is quic/means_cuda.row_dots_host (the sum in
// column order: the host build's, one thread a block).
constexpr int ROW_DOTS_THREADS = 256;

template <typename T>
__global__ void row_dots(const T *__restrict__ a, long long n, long long ld,
                         const long long *__restrict__ rows,
                         const long long *__restrict__ partners, double *__restrict__ dots)
{
    __shared__ double part[ROW_DOTS_THREADS];
    const long long t = blockIdx.x;
    const T *x = a + rows[t] * ld;
    const T *y = a + partners[t] * ld;
    double acc = 0.0;
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
        acc += (double)x[j] * (double)y[j];
    }
    part[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) {
            part[threadIdx.x] += part[threadIdx.x + half];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        dots[t] = part[0];
    }
}
