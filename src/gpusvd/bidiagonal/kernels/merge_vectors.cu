// The k x k vectors of one bidiagonal divide-and-conquer merge (Gu & Eisenstat), the
// leaves' blocks placed on the diagonal, and a tree level's kept columns gathered into a
// stack and scattered back around its batched GEMM: the CUDA twins of
// dc_svd._merge_vectors (dlasd3), dc_svd._place_host and dc_svd._update_columns. The
// module's docstring gives the formulas and the papers.
//
// A merge is two launches instead of ~25 CuPy operations on k x k arrays:
//   svd_merge_weights: a group of `lanes` threads (a warp) per row i forms the factors of
//     z_hat_i (the ratios of the xp code, with its differences and operation order), each
//     lane a strided share of j, and multiplies the lanes' partial products by shuffles.
//   svd_merge_columns: one thread block per column j, threads over rows i: the column's
//     entries, its 2-norm by a block sum, the column divided by it. The matrices are
//     column-major (k x k, leading dimension k): consecutive threads write consecutive
//     entries of one column (coalesced).
// Each takes several merges at once, one per blockIdx.y (a tree level's), each merge's
// vectors into its slot of a zero-padded stack.
// The arithmetic of each entry is the xp code's, operation by operation; only the order
// of the product over j and of the sums of squares differs (a few ulps per factor and
// per term: within k eps of the xp code).
//
// A group is min(blockDim.x, 32) lanes, so the same source runs one thread per block on
// the host (tests/bidiagonal/test_merge_vectors_cuda.py).
//
// d (poles ascending), z (weights), tau (offsets of the roots from their poles) and
// origin (the pole of each root) hold k entries each.

template <typename T>
__device__ __forceinline__ T sign_of(T x)
{
    return T((x > T(0)) - (x < T(0)));
}

__device__ __forceinline__ unsigned group_lanes()
{
    return blockDim.x < 32 ? blockDim.x : 32;
}

// The row of this thread's group of lanes.
__device__ __forceinline__ long long group_row()
{
    return (long long)blockIdx.x * (blockDim.x / group_lanes()) + threadIdx.x / group_lanes();
}

// The product over j < k of factor(j), each lane of the group taking every lanes-th j,
// the lanes' partial products multiplied by shuffles (every lane gets the product).
template <typename T, typename Factor>
__device__ __forceinline__ T row_product(long long k, Factor factor)
{
    const unsigned lanes = group_lanes();
    T x = T(1);
    for (long long j = threadIdx.x % lanes; j < k; j += lanes)
        x *= factor(j);
    for (unsigned offset = lanes / 2; offset > 0; offset /= 2)
        x *= __shfl_xor_sync(0xffffffffu, x, offset, lanes);
    return x;
}

// The sum of x over the block, the same bits in every thread; `shared` holds 32 T.
template <typename T>
__device__ T block_sum(T x, T *shared)
{
    const unsigned lanes = group_lanes();
    for (unsigned offset = lanes / 2; offset > 0; offset /= 2)
        x += __shfl_xor_sync(0xffffffffu, x, offset, lanes);
    if (threadIdx.x % lanes == 0)
        shared[threadIdx.x / lanes] = x;
    __syncthreads();
    T total = T(0);
    for (unsigned w = 0; w < (blockDim.x + lanes - 1) / lanes; ++w)
        total += shared[w];
    return total;
}

// z_hat_i = sqrt(|prod_j ratio_ij|) sign(z_i), ratio_ij = (-(d_i - s_j)/(d_p - d_i)) *
// ((d_i + s_j)/(d_p + d_i)), p = j + (j >= i), the last j's denominators 1 (dlasd3).
template <typename T>
__device__ void merge_weights(const T *__restrict__ d, const T *__restrict__ z,
                              const T *__restrict__ tau, const long long *__restrict__ origin,
                              long long k, T *__restrict__ zhat)
{
    const long long i = group_row();
    if (i >= k)
        return;  // the whole group: its lanes share i
    const T di = d[i];
    const T product = row_product<T>(k, [&](long long j) {
        const T dj = d[origin[j]];
        const T minus = (di - dj) - tau[j];
        const T plus = (di + dj) + tau[j];
        T below = T(1), above = T(1);
        if (j < k - 1) {
            const T dp = d[j + (j >= i)];
            below = dp - di;
            above = dp + di;
        }
        return (-minus / below) * (plus / above);
    });
    if (threadIdx.x % group_lanes() == 0)
        zhat[i] = sqrt(fabs(product)) * sign_of(z[i]);
}

// Column j of V_M: v_ij = (z_hat_i / (d_i - s_j)) / (d_i + s_j); of U_M: u_0j = -1,
// u_ij = d_i v_ij; each divided by its 2-norm (v's taken before v is).
template <typename T>
__device__ void merge_columns(const T *__restrict__ d, const T *__restrict__ tau,
                              const long long *__restrict__ origin, const T *__restrict__ zhat,
                              long long k, T *__restrict__ u, T *__restrict__ v, long long ld)
{
    __shared__ T partial[2][32];
    const long long j = blockIdx.x;
    if (j >= k)
        return;  // the whole block: its threads share j
    const T dj = d[origin[j]], tj = tau[j];
    T *uj = u + j * ld, *vj = v + j * ld;
    T su = T(0), sv = T(0);
    for (long long i = threadIdx.x; i < k; i += blockDim.x) {
        const T di = d[i];
        const T minus = (di - dj) - tj, plus = (di + dj) + tj;
        T vi = zhat[i] / minus;
        vi /= plus;
        const T ui = i == 0 ? T(-1) : di * vi;
        vj[i] = vi;
        uj[i] = ui;
        sv += vi * vi;
        su += ui * ui;
    }
    const T nv = sqrt(block_sum(sv, partial[0])), nu = sqrt(block_sum(su, partial[1]));
    for (long long i = threadIdx.x; i < k; i += blockDim.x) {
        vj[i] /= nv;
        uj[i] /= nu;
    }
}

// Several merges in one launch each, problem p = blockIdx.y: its ks[p] poles, weights,
// offsets and origins from starts[p] of d, z, tau and origin (origin relative to the
// problem), its z_hat to zhat + starts[p]; its U_M and V_M column-major with leading
// dimension ld in the slots u + p ld^2 and v + p ld^2 (entries past k untouched). Blocks
// past a problem's rows or columns idle.
template <typename T>
__global__ void svd_merge_weights(const T *__restrict__ d, const T *__restrict__ z,
                                  const T *__restrict__ tau,
                                  const long long *__restrict__ origin,
                                  const long long *__restrict__ starts,
                                  const long long *__restrict__ ks, T *__restrict__ zhat)
{
    const long long first = starts[blockIdx.y];
    merge_weights<T>(d + first, z + first, tau + first, origin + first, ks[blockIdx.y],
                     zhat + first);
}

template <typename T>
__global__ void svd_merge_columns(const T *__restrict__ d, const T *__restrict__ tau,
                                  const long long *__restrict__ origin,
                                  const T *__restrict__ zhat,
                                  const long long *__restrict__ starts,
                                  const long long *__restrict__ ks, long long ld,
                                  T *__restrict__ u, T *__restrict__ v)
{
    const long long first = starts[blockIdx.y], slot = (long long)blockIdx.y * ld * ld;
    merge_columns<T>(d + first, tau + first, origin + first, zhat + first, ks[blockIdx.y],
                     u + slot, v + slot, ld);
}

// The leaves' blocks onto the diagonal of the column-major out (leading dimension ld),
// one thread block per leaf b: out[s + r, s + c] = packed[b][c][r] for r, c < m, with
// s = starts[b], m = sizes[b], each leaf's block stored by columns in a size x size slot.
template <typename T>
__global__ void place_blocks(T *__restrict__ out, long long ld, const T *__restrict__ packed,
                             long long size, const long long *__restrict__ starts,
                             const long long *__restrict__ sizes)
{
    const long long b = blockIdx.x, s = starts[b], m = sizes[b];
    const T *block = packed + b * size * size;
    for (long long t = threadIdx.x; t < m * m; t += blockDim.x) {
        const long long r = t % m, c = t / m;
        out[(s + r) + (s + c) * ld] = block[r + c * size];
    }
}

// A tree level's merges, i < count: merge i's block has rows starts[i] ... starts[i] +
// rows[i] - 1 of the column-major q (leading dimension ld) and its kept columns are
// cols[offsets[i] ... offsets[i + 1] - 1]. Thread block b takes column c = b % width of
// merge i = b / width; stack[b * height + r] is entry r of that column, zero past the
// merge's rows or columns (so that a product with zero-padded factors stays finite), and
// 1 in row ones[i] of the first kept column where ones[i] >= 0 (U's coupling entry).
template <typename T>
__global__ void gather_columns(const T *__restrict__ q, long long ld,
                               const long long *__restrict__ starts,
                               const long long *__restrict__ rows,
                               const long long *__restrict__ offsets,
                               const long long *__restrict__ cols, long long width,
                               long long height, const long long *__restrict__ ones,
                               T *__restrict__ stack)
{
    const long long b = blockIdx.x, i = b / width, c = b % width;
    const long long first = offsets[i], kept = c < offsets[i + 1] - first;
    const long long m = kept ? rows[i] : 0, one = c == 0 ? ones[i] : -1;
    const T *column = q + (kept ? cols[first + c] * ld + starts[i] : 0);
    T *out = stack + b * height;
    for (long long r = threadIdx.x; r < height; r += blockDim.x)
        out[r] = r == one ? T(1) : r < m ? column[r] : T(0);
}

// The inverse of gather_columns on the merges' rows and kept columns: q's entries from
// the stack, the padding left out.
template <typename T>
__global__ void scatter_columns(T *__restrict__ q, long long ld,
                                const long long *__restrict__ starts,
                                const long long *__restrict__ rows,
                                const long long *__restrict__ offsets,
                                const long long *__restrict__ cols, long long width,
                                long long height, const T *__restrict__ stack)
{
    const long long b = blockIdx.x, i = b / width, c = b % width;
    const long long first = offsets[i];
    if (c >= offsets[i + 1] - first)
        return;
    T *column = q + cols[first + c] * ld + starts[i];
    const T *in = stack + b * height;
    for (long long r = threadIdx.x; r < rows[i]; r += blockDim.x)
        column[r] = in[r];
}
