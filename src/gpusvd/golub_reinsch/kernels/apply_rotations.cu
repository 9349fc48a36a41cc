// Application of the bidiagonal QR's rotation log to X and Y (paper 000, Alg. 4 and 5),
// several QR sweeps per pass over the matrix.
//
// Right-multiplying X by a plane rotation mixes two columns and leaves the rows
// independent, so one thread owns one row and applies every rotation of the chunk to it.
// The paper's kernel streams the whole matrix once per sweep, which makes the step
// memory-bound. Here a thread applies a *window* of up to W consecutive sweeps (all of the
// same chasing direction) in one pass: sweep j lags sweep j-1 by one column, so at step p
// the thread applies rotation (p - j, p - j + 1) of sweep j for j = 0 .. W-1 (in that
// order), holding the W+1 columns p-W+1 .. p+1 in registers. Two operations that share a
// column keep their original order under this schedule (a rotation of sweep j at pair i is
// after sweep j-1's pairs i-1, i, i+1), so the result equals the sequential application up
// to nothing: the same multiplications happen in the same order for every element.
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
        const T ssign = dir > 0 ? T(1) : T(-1);

        T r[W + 1];  // r[k] holds column p - W + 1 + k at step p
#pragma unroll
        for (int k = 0; k <= W; ++k) r[k] = T(0);
        for (int p = cmin - 1; p <= cmax + W - 1; ++p) {
            const int cnew = p + 1;
            if (live && cnew <= cmax) {
                const int cm = dir > 0 ? cnew : ncols - 1 - cnew;
                r[W] = arow[(long long)cm * ld];
            }
#pragma unroll
            for (int j = 0; j < W; ++j) {
                const int q = p - j;
                if (q >= qlo[j] && q < qhi[j]) {
                    const T2 g = cs[base[j] + (dir > 0 ? q : -q)];
                    const T c = g.x, s = ssign * g.y;
                    const T u = r[W - 1 - j], v = r[W - j];
                    r[W - 1 - j] = c * u + s * v;
                    r[W - j] = c * v - s * u;
                }
            }
            const int cold = p - W + 1;
            if (live && cold >= cmin && cold <= cmax) {
                const int cm = dir > 0 ? cold : ncols - 1 - cold;
                arow[(long long)cm * ld] = r[0];
            }
#pragma unroll
            for (int k = 0; k < W; ++k) r[k] = r[k + 1];
        }
    }
}
