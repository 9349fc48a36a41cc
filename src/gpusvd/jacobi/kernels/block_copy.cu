// Gathers and scatters of whole block-columns for the blocked Jacobi method on the GPU.
//
// G and V are held transposed (gpusvd/jacobi/blocked.py): block-column b is the
// contiguous run of `units` copy units starting at b * units. A p-step gathers the
// block-columns of its pairs into one (pairs, 2b, m) array and scatters the rotated ones
// back. CuPy's fancy indexing does this with 64-bit index arithmetic per element, about
// 170 us per p-step at n = 4096 (bench/results/jacobi_profile_h100.txt); here grid.y
// picks the block-column and the threads copy it with 16-byte (or 4-byte) units.
//
//   scatter == 0: dst[y] = src[index[y]]   (gather)
//   scatter != 0: dst[index[y]] = src[y]   (scatter)

template <typename U>
__global__ void copy_blocks(const U *__restrict__ src, U *__restrict__ dst,
                            const int *__restrict__ index, long long units, int scatter)
{
    const long long y = blockIdx.y;
    const long long from = scatter ? y : (long long)index[y];
    const long long to = scatter ? (long long)index[y] : y;
    const U *s = src + from * units;
    U *d = dst + to * units;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < units;
         i += (long long)gridDim.x * blockDim.x)
        d[i] = s[i];
}
