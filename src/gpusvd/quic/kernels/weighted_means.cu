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
