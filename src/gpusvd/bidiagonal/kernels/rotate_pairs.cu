// Deflation's rotations of column pairs in the bidiagonal divide and conquer
// (bidiagonal/dc_svd.py; LAPACK's DROT in dlasd2): for each rotation t in
// order, columns p_t and r_t of the column-major q become
// (c_t q_p + s_t q_r, c_t q_r - s_t q_p). The rotations may chain (a column rotated twice),
// so their order is kept; the rows are independent, so each thread takes one row through
// all of them. Consecutive threads touch consecutive rows of one column (coalesced), and
// every thread reads the same (p, r, c, s) at the same time (one broadcast load per warp).
// The Numba twin is dc_svd._rotate_host, which does the same arithmetic per row.

template <typename T>
__global__ void rotate_pairs(T *__restrict__ q, long long rows, long long ld,
                             const long long *__restrict__ pairs, const T *__restrict__ cs,
                             long long count)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < rows;
         i += stride) {
        for (long long t = 0; t < count; ++t) {
            T *qp = q + pairs[2 * t] * ld + i;
            T *qr = q + pairs[2 * t + 1] * ld + i;
            const T c = cs[2 * t], s = cs[2 * t + 1];
            const T x = *qp, y = *qr;
            *qp = c * x + s * y;
            *qr = c * y - s * x;
        }
    }
}
