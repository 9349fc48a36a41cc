// Application of the bidiagonal QR's rotation log to X and Y (paper 000, Alg. 4 and 5),
// several QR sweeps per pass over the matrix.
//
// Right-multiplying X by a plane rotation mixes two columns and leaves the rows
// independent, so one thread owns one row and applies every rotation of the chunk to it.
// The paper's kernel streams the whole matrix once per sweep, which makes the step
// memory-bound. Here a thread applies a *window* of up to W consecutive sweeps (all of the
// same chasing direction) in one pass, sweep j lagging sweep j-1 by TWO columns: at step p
// it applies rotation (q, q+1), q = p - 2j, of sweep j for j = 0 .. W-1, holding the 2W
// columns p-2W+2 .. p+1 in registers. The W pairs of a step are disjoint, so the W
// rotations are independent: instruction-level parallelism of W per thread, which hides
// the FMA latency although there are only as many threads as rows. Two operations that
// share a column keep their original order (rotation i of sweep j runs at step i + 2j,
// after sweep j-1's rotations i-1, i, i+1 at steps <= i + 2j - 1 and before sweep j+1's
// rotation i-1 at step i + 2j + 1), so every element sees the same multiplications in the
// same order as in the sequential application.
//
// The 2W live columns sit in a circular register buffer: column c in slot
// (c - origin) mod 2W. The step loop is unrolled by 2W so every slot index is a
// compile-time constant (registers cannot be indexed at run time). Each tile of 2W steps
// first stages its rotations and its new columns in shared memory (see the loop), so that
// the steps themselves are branch-free: an inactive sweep applies the identity (c, s) =
// (1, 0), which leaves finite entries unchanged exactly. Dynamic shared memory:
// 2W·W·2·sizeof(T) + 2W·blockDim.x·sizeof(T) bytes (rotations_cuda.py).
//
// Sweeps chased upwards (direction -1) are handled by mirroring the column index
// (c -> ncols-1-c), which turns rotation (c, s) on pair (i, i+1) into (c, -s) on the
// mirrored pair; the CPU twin (rotations.py) applies the same formula
//     a <- c*a + s*b,   b <- -s*a + c*b.
//
// Layout: X is column-major (element (r, c) at r + c*ld) so a warp's 32 rows read one
// contiguous segment of a column.

template <typename T> struct Pair;
template <> struct Pair<float> { typedef float2 type; };
template <> struct Pair<double> { typedef double2 type; };

template <typename T, int W>
__global__ void apply_rotations(T *x, long long ld, int nrows, int ncols,
                                const long long *__restrict__ sweeps,  // (k, 3): lo, count, dir
                                const long long *__restrict__ offsets, // (k,): first cs row
                                const int *__restrict__ windows,       // (nw, 2): first, size
                                int nwindows,
                                const T *__restrict__ cs_x, T *y, const T *__restrict__ cs_y)
{
    typedef typename Pair<T>::type T2;
    constexpr int L = 2 * W;  // live columns, and steps per tile
    extern __shared__ unsigned char smem_raw[];
    T2 *tile_cs = reinterpret_cast<T2 *>(smem_raw);  // L x W: (c, s) by step, sweep
    T *tile_in = reinterpret_cast<T *>(tile_cs + L * W);  // L x blockDim.x: loaded columns
    // blockIdx.y selects the matrix: 0 -> X with the left log, 1 -> Y with the right log.
    T *a = blockIdx.y == 0 ? x : y;
    const T2 *cs = reinterpret_cast<const T2 *>(blockIdx.y == 0 ? cs_x : cs_y);
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    const bool live = row < nrows;
    T *arow = a + row;

    // Per sweep of the window, in mirrored coordinates q: active pairs qlo <= q < qhi,
    // cs row = base + sgn * q.
    __shared__ int qlo[W], qhi[W];
    __shared__ long long base[W];

    for (int w = 0; w < nwindows; ++w) {
        const int first = windows[2 * w], size = windows[2 * w + 1];
        const int dir = (int)sweeps[3 * first + 2];
        __syncthreads();
        if (threadIdx.x < W) {
            const int j = threadIdx.x;
            if (j < size) {
                const long long lo = sweeps[3 * (first + j)];
                const long long cnt = sweeps[3 * (first + j) + 1];
                const long long off = offsets[first + j];
                if (dir > 0) {
                    qlo[j] = (int)lo;
                    qhi[j] = (int)(lo + cnt);
                    base[j] = off - lo;
                } else {
                    qlo[j] = (int)(ncols - 1 - lo - cnt);
                    qhi[j] = (int)(ncols - 1 - lo);
                    base[j] = off + ncols - 2 - lo;
                }
            } else {
                qlo[j] = 0;
                qhi[j] = 0;  // empty: never active
                base[j] = 0;
            }
        }
        __syncthreads();
        // Columns cmin .. cmax are touched; column c is loaded at step c-1 and final
        // (stored) at step c+W-1.
        int cmin = ncols, cmax = -1;
        for (int j = 0; j < size; ++j) {
            if (qhi[j] > qlo[j]) {
                cmin = min(cmin, qlo[j]);
                cmax = max(cmax, qhi[j]);
            }
        }
        if (cmax < 0) continue;
        const bool up = dir < 0;
        const int pfirst = cmin - 1, plast = cmax + L - 2;

        T r[L];
#pragma unroll
        for (int k = 0; k < L; ++k) r[k] = T(0);
        for (int p0 = pfirst; p0 <= plast; p0 += L) {
            // Stage the tile's L steps: every (c, s) of the window (the identity where a
            // sweep is inactive, and s negated for mirrored sweeps), and this thread's
            // entries of the L columns the steps load. All these loads are issued back to
            // back, so one memory latency is paid per tile instead of one per step.
            __syncthreads();  // the previous tile's reads of tile_cs are done
            for (int k = threadIdx.x; k < L * W; k += blockDim.x) {
                const int t = k / W, j = k % W, q = p0 + t - 2 * j;
                T2 g;
                g.x = T(1);
                g.y = T(0);
                if (q >= qlo[j] && q < qhi[j]) {
                    g = cs[base[j] + (up ? -q : q)];
                    if (up) g.y = -g.y;
                }
                tile_cs[k] = g;
            }
#pragma unroll
            for (int t = 0; t < L; ++t) {
                const int c = p0 + 1 + t;
                T val = T(0);
                if (live && c <= cmax) val = arow[(long long)(up ? ncols - 1 - c : c) * ld];
                tile_in[t * blockDim.x + threadIdx.x] = val;
            }
            __syncthreads();
            // Steps past plast see only identity rotations and store nothing.
#pragma unroll
            for (int t = 0; t < L; ++t) {
                const int p = p0 + t;
                r[(t + 1) % L] = tile_in[t * blockDim.x + threadIdx.x];  // column p + 1
#pragma unroll
                for (int j = 0; j < W; ++j) {
                    const T2 g = tile_cs[t * W + j];
                    const int iu = ((t - 2 * j) % L + L) % L;
                    const int iv = (iu + 1) % L;
                    const T u = r[iu], v = r[iv];
                    r[iu] = g.x * u + g.y * v;
                    r[iv] = g.x * v - g.y * u;
                }
                const int cold = p - L + 2;
                if (live && cold >= cmin && cold <= cmax) {
                    const int cm = up ? ncols - 1 - cold : cold;
                    arow[(long long)cm * ld] = r[(t + 2) % L];
                }
            }
        }
    }
}
