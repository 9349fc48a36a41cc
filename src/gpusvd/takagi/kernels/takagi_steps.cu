// Jacobi steps of the Takagi factorization A = U diag(S) U^T (paper 002, Alg. 1 and 2).
//
// The GPU twins of takagi/steps.py (Numba); both do the same operations in the same order
// (the GPU may contract a*b + c into FMAs, so they agree to rounding, not bit for bit).
//
// takagi_rotation        the 2x2 step (reference: takagi/rotation.py, whose docstring
//                        derives it): V with V^H [[a, b], [b, c]] conj(V) diagonal,
//                        kept as (w1, w2, mu, sn) and applied by rotate.
// takagi_rotations       one thread per pair of a parallel step: each pair's step -> g.
// takagi_rotate_rows     rows i, j <- V^H rows i, j; one thread per (column, pair).
// takagi_rotate_columns  columns i, j <- columns i, j conj(V) and U_i, U_j <- U_i, U_j V;
//                        one thread per (row, pair). The launches between the three are
//                        Alg. 2's global synchronizations.
// takagi_solve_block_pairs  the inner solve of the blocked form (takagi/driver.py): one
//                        thread block per pair of b-index blocks (I, J); the 2b x 2b
//                        submatrix and its accumulated unitary live in shared memory while
//                        `sweeps` sweeps of the steps above run on it (the chess-tournament
//                        pairs of a step computed by Alg. 1 on the fly), two barriers per
//                        step (see the kernel).
// takagi_solve_one_tile  the whole factorization of a matrix of at most 2b indices in one
//                        launch (takagi/driver.py): the matrix is one tile, sweeps of the
//                        inner solve's steps run on it until its off-diagonal norm passes
//                        the driver's test, which the thread block computes; then the
//                        values are ordered and the phases moved into U.
//
// Arrays are C-contiguous (row-major) n x n.

#include "../../_core/cuda/complex.cuh"

__device__ __forceinline__ float mabs(float x) { return fabsf(x); }
__device__ __forceinline__ double mabs(double x) { return fabs(x); }
__device__ __forceinline__ float mhypot(float x, float y) { return hypotf(x, y); }
__device__ __forceinline__ double mhypot(double x, double y) { return hypot(x, y); }
__device__ __forceinline__ float msqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double msqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float mcopysign(float x, float y) { return copysignf(x, y); }
__device__ __forceinline__ double mcopysign(double x, double y) { return copysign(x, y); }

template <typename T> __device__ __forceinline__ T cabs(Complex<T> z) { return mhypot(z.re, z.im); }

// e^{i arg(z)/2} - 1, 0 for z = 0, to full relative accuracy also when small
// (rotation.py, _half_phase_offset).
template <typename T> __device__ __forceinline__ Complex<T> half_phase_offset(Complex<T> z)
{
    const T m = mabs(z.re) > mabs(z.im) ? mabs(z.re) : mabs(z.im);
    if (m == T(0)) return cplx(T(0), T(0));
    const T zr = z.re / m, zi = z.im / m;
    const T r = mhypot(zr, zi);
    if (zr >= T(0)) {
        const T gap = zi * zi / ((r + zr) * r);
        const T re = msqrt(T(1) - T(0.5) * gap);
        return cplx(T(-0.5) * gap / (T(1) + re), zi / (r * (T(2) * re)));
    }
    const T im = mcopysign(msqrt(T(0.5) * (T(1) - zr / r)), zi);
    return cplx(zi / (r * (T(2) * im)) - T(1), im);
}

// The Takagi step g = (w1, w2, mu, sn) of [[a, b], [b, c]] (rotation.py, takagi_rotation):
// with pk = 1 + wk, V = [[p1 (1 - mu), p1 sn], [-p2 conj(sn), p2 (1 - mu)]] and
// V^H [[a, b], [b, c]] conj(V) diagonal; mu is real, stored with zero imaginary part. The
// identity where |b| <= floor.
template <typename T>
__device__ void takagi_rotation(Complex<T> a, Complex<T> b, Complex<T> c, Complex<T> *g,
                                T floor)
{
    const T abs_b = cabs(b);
    if (abs_b <= floor) {
        g[0] = cplx(T(0), T(0));
        g[1] = cplx(T(0), T(0));
        g[2] = cplx(T(0), T(0));
        g[3] = cplx(T(0), T(0));
        return;
    }
    const T abs_a = cabs(a), abs_c = cabs(c);
    T scale = abs_a;
    scale = abs_b > scale ? abs_b : scale;
    scale = abs_c > scale ? abs_c : scale;
    const Complex<T> w1 = half_phase_offset(a);
    const Complex<T> w2 = half_phase_offset(c);
    b = cplx(b.re / scale, b.im / scale);
    const Complex<T> bp = b * conj(cplx(T(1) + w1.re, w1.im) * cplx(T(1) + w2.re, w2.im));
    const T ar = abs_a / scale, cr = abs_c / scale, bm = abs_b / scale;
    const T sigma = ar >= cr ? T(1) : T(-1);
    const T x = -sigma * (ar + cr) * bp.re;
    const T y = mabs(ar - cr) * bp.im;
    const T h = mhypot(x, y);
    T cos_psi = T(1), sin_psi = T(0);
    if (h > T(0)) {
        cos_psi = x / h;
        sin_psi = y / h;
    }
    const T rho = mhypot((ar - cr) * cos_psi, (ar + cr) * sin_psi);
    const T tau = T(2) * bm / (rho + mhypot(rho, T(2) * bm));
    const T r = msqrt(T(1) + tau * tau);
    const T t = tau / r;
    g[0] = w1;
    g[1] = w2;
    g[2] = cplx(tau * tau / (r * (T(1) + r)), T(0));
    g[3] = cplx(t * cos_psi, t * sin_psi);
}

// (x, y) <- (x1 - (mu x1 + s y1), y1 + (conj(s) x1 - mu y1)) with x1 = x + w1 x,
// y1 = y + w2 y: one entry pair updated by a step, as identity plus small corrections
// (rotation.py, rotate). Rows and columns of A: (conj(w1), conj(w2), mu, sn); U:
// (w1, w2, mu, conj(sn)). mu is real (g[2] holds it with a zero imaginary part): a real
// product is what the complex one computes when mu.im = 0, at half the operations.
template <typename T>
__device__ __forceinline__ void rotate(Complex<T> &x, Complex<T> &y, Complex<T> w1, Complex<T> w2,
                                       T mu, Complex<T> s)
{
    const Complex<T> x1 = x + w1 * x, y1 = y + w2 * y;
    const Complex<T> sy = s * y1;
    const Complex<T> dy = conj(s) * x1;
    x = cplx(x1.re - (mu * x1.re + sy.re), x1.im - (mu * x1.im + sy.im));
    y = y1 + cplx(dy.re - mu * y1.re, dy.im - mu * y1.im);
}

template <typename T>
__global__ void takagi_rotations(const Complex<T> *__restrict__ a, int n,
                                 const int *__restrict__ pairs, int count, Complex<T> *g,
                                 T floor)
{
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= count) return;
    const int i = pairs[2 * p], j = pairs[2 * p + 1];
    if (i < n && j < n) {
        const size_t ii = (size_t)i * n + i, ij = (size_t)i * n + j, jj = (size_t)j * n + j;
        takagi_rotation(a[ii], a[ij], a[jj], g + 4 * p, floor);
    }
}

template <typename T>
__global__ void takagi_rotate_rows(Complex<T> *a, int n, const int *__restrict__ pairs,
                                   const Complex<T> *__restrict__ g)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int p = blockIdx.y;
    const int i = pairs[2 * p], j = pairs[2 * p + 1];
    if (col >= n || i >= n || j >= n) return;
    const Complex<T> *v = g + 4 * p;
    rotate(a[(size_t)i * n + col], a[(size_t)j * n + col], conj(v[0]), conj(v[1]), v[2].re, v[3]);
}

template <typename T>
__global__ void takagi_rotate_columns(Complex<T> *a, Complex<T> *u, int n,
                                      const int *__restrict__ pairs, const Complex<T> *__restrict__ g)
{
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    const int p = blockIdx.y;
    const int i = pairs[2 * p], j = pairs[2 * p + 1];
    if (row >= n || i >= n || j >= n) return;
    const Complex<T> *v = g + 4 * p;
    const size_t r = (size_t)row * n;
    rotate(a[r + i], a[r + j], conj(v[0]), conj(v[1]), v[2].re, v[3]);
    rotate(u[r + i], u[r + j], v[0], v[1], v[2].re, conj(v[3]));
}

// Pair t of step s of the chess tournament of `players` (even) indices (Alg. 1 as the
// paper's Fig. 1 draws it; takagi/ordering.py).
__device__ __forceinline__ void chess_pair(int t, int s, int players, int &i, int &j)
{
    i = (t + s) % (players - 1);
    j = t == 0 ? players - 1 : (players - 1 - t + s) % (players - 1);
}

// The inner solve, one thread block per block pair. Per step of the 2b-index tournament:
//
//   phase 1 (all threads)  the 2x2 sub-blocks A[{i_p, j_p}, {i_q, j_q}] for every two
//                          pairs p, q of the step: V_p^H X conj(V_q), the row update by p
//                          then the column update by q, the same operations per entry as
//                          rows-then-columns over the whole tile (which is the CPU twin's
//                          order), so one pass and one barrier instead of two;
//   phase 2                warp 0 forms the next step's pairs and rotations from the
//                          updated tile while the other warps update G with this step's
//                          rotations (G is not read by the rotations), so the rotations'
//                          long dependent chains of divisions and square roots hide
//                          behind G's update.
//
// The pairs are computed once per step into shared tables (no integer division by the
// tournament's order per entry); rotations and tables are double-buffered between steps.
// Needs blockDim.x >= 64 (warp 0 and at least one warp for G).
template <typename T>
__device__ __forceinline__ void step_rotations(const Complex<T> *tile, int ld, int width, int block,
                                               int s, int *pi, int *pj, Complex<T> *rot, T floor)
{
    for (int t = threadIdx.x; t < block; t += 32) {
        int i, j;
        chess_pair(t, s, width, i, j);
        pi[t] = i;
        pj[t] = j;
        takagi_rotation(tile[i * ld + i], tile[i * ld + j], tile[j * ld + j], rot + 4 * t,
                        floor);
    }
}

// `steps` steps of the tournament of the `width` = 2 `block` indices of the tile, from
// its step 0, on the tile and its accumulated unitary g, both in shared memory (rot and
// index: the double-buffered rotations and pair tables). Called by every thread of the
// block; the tile and g are complete on return.
template <typename T>
__device__ void tile_steps(Complex<T> *tile, Complex<T> *g, Complex<T> *rot, int *index,
                           int ld, int width, int block, int steps, T floor)
{
    if (steps > 0 && threadIdx.x < 32)
        step_rotations(tile, ld, width, block, 0, index, index + block, rot, floor);
    __syncthreads();
    for (int k = 0; k < steps; ++k) {
        const int cur = k & 1;
        const int *pi = index + 2 * block * cur, *pj = pi + block;
        const Complex<T> *r = rot + 4 * block * cur;
        // Sub-block (bp, bq) at e = bp * block + bq: a warp shares bp (u is a broadcast
        // read) and each thread keeps its bq's coefficients v while bq stays the same
        // (always, when blockDim.x is a multiple of b), so the coefficient reads per
        // sub-block drop from 8 entries to 4 broadcast ones.
        int last_q = -1;
        Complex<T> v0, v1, v3;
        T v2 = T(0);
        for (int e = threadIdx.x; e < block * block; e += blockDim.x) {
            const int bp = e / block, bq = e - bp * block;
            if (bq != last_q) {
                const Complex<T> *v = r + 4 * bq;
                v0 = conj(v[0]);
                v1 = conj(v[1]);
                v2 = v[2].re;
                v3 = v[3];
                last_q = bq;
            }
            const int ip = pi[bp], jp = pj[bp], iq = pi[bq], jq = pj[bq];
            const Complex<T> *u = r + 4 * bp;
            Complex<T> x00 = tile[ip * ld + iq], x01 = tile[ip * ld + jq];
            Complex<T> x10 = tile[jp * ld + iq], x11 = tile[jp * ld + jq];
            const Complex<T> u0 = conj(u[0]), u1 = conj(u[1]);
            rotate(x00, x10, u0, u1, u[2].re, u[3]);
            rotate(x01, x11, u0, u1, u[2].re, u[3]);
            rotate(x00, x01, v0, v1, v2, v3);
            rotate(x10, x11, v0, v1, v2, v3);
            tile[ip * ld + iq] = x00;
            tile[ip * ld + jq] = x01;
            tile[jp * ld + iq] = x10;
            tile[jp * ld + jq] = x11;
        }
        __syncthreads();
        if (threadIdx.x < 32) {
            if (k + 1 < steps)
                step_rotations(tile, ld, width, block, (k + 1) % (width - 1),
                               index + 2 * block * (1 - cur), index + 2 * block * (1 - cur) + block,
                               rot + 4 * block * (1 - cur), floor);
        } else {
            for (int e = threadIdx.x - 32; e < block * width; e += blockDim.x - 32) {
                const int bq = e / width, row = e - bq * width;
                const Complex<T> *v = r + 4 * bq;
                rotate(g[row * ld + pi[bq]], g[row * ld + pj[bq]], v[0], v[1], v[2].re, conj(v[3]));
            }
        }
        __syncthreads();
    }
}

template <typename T>
__global__ void takagi_solve_block_pairs(const Complex<T> *__restrict__ a, int n,
                                         const int *__restrict__ block_pairs, int block,
                                         int sweeps, Complex<T> *out, T floor)
{
    extern __shared__ __align__(16) unsigned char shared_raw[];
    const int width = 2 * block;
    const int ld = width + 1;  // padded rows: a column walk does not hit one bank
    Complex<T> *tile = reinterpret_cast<Complex<T> *>(shared_raw);
    Complex<T> *g = tile + width * ld;
    Complex<T> *rot = g + width * ld;                        // 2 x block x 4
    int *index = reinterpret_cast<int *>(rot + 8 * block);   // 2 x (pi, pj) x block
    const int p = blockIdx.x;
    const int bi = block_pairs[2 * p], bj = block_pairs[2 * p + 1];

    for (int e = threadIdx.x; e < width * width; e += blockDim.x) {
        const int r = e / width, c = e - r * width;
        const int gr = r < block ? bi * block + r : bj * block + r - block;
        const int gc = c < block ? bi * block + c : bj * block + c - block;
        tile[r * ld + c] = a[(size_t)gr * n + gc];
        g[r * ld + c] = cplx(T(r == c ? 1 : 0), T(0));
    }
    __syncthreads();
    tile_steps(tile, g, rot, index, ld, width, block, sweeps * (width - 1), floor);
    Complex<T> *dst = out + (size_t)p * width * width;
    for (int e = threadIdx.x; e < width * width; e += blockDim.x)
        dst[e] = g[(e / width) * ld + e % width];
}

struct Sum {
    template <typename T> __device__ T operator()(T x, T y) const { return x + y; }
};
struct Max {  // NaN-free input (the front end checks it)
    template <typename T> __device__ T operator()(T x, T y) const { return x < y ? y : x; }
};

// x reduced by op over the thread block, the same in every thread: lane t < 32 combines
// the partials t + 32, t + 64, ... with its own, then every thread combines the 32 lanes
// in order. scratch holds blockDim.x values; blockDim.x >= 32.
template <typename T, typename Op>
__device__ T block_reduce(T x, T *scratch, Op op)
{
    scratch[threadIdx.x] = x;
    __syncthreads();
    if (threadIdx.x < 32) {
        T s = scratch[threadIdx.x];
        for (int t = threadIdx.x + 32; t < (int)blockDim.x; t += 32) s = op(s, scratch[t]);
        scratch[threadIdx.x] = s;
    }
    __syncthreads();
    T total = scratch[0];
    for (int t = 1; t < 32; ++t) total = op(total, scratch[t]);
    __syncthreads();  // scratch is free again
    return total;
}

template <typename T> __device__ __forceinline__ T block_sum(T x, T *scratch)
{
    return block_reduce(x, scratch, Sum());
}

__device__ __forceinline__ float mldexp(float x, int k) { return ldexpf(x, k); }
__device__ __forceinline__ double mldexp(double x, int k) { return ldexp(x, k); }
__device__ __forceinline__ int unit_exponent(float x) { int e; frexpf(x, &e); return x ? e : 0; }
__device__ __forceinline__ int unit_exponent(double x) { int e; frexp(x, &e); return x ? e : 0; }
template <typename T> __device__ __forceinline__ Complex<T> times_power_of_two(Complex<T> z, int k)
{
    return cplx(mldexp(z.re, k), mldexp(z.im, k));
}

// The status of each matrix from takagi_solve_one_tile: sweeps done, ‖off(A)‖_F² and
// ‖A‖_F² of the scaled symmetric matrix at the end (not converged where the first is
// above tol² times the second), then ‖A − Aᵀ‖_F² and ‖A‖_F² of the scaled input (its
// asymmetry), 1 where an entry off the diagonal is not zero, and the exponent k of the
// scaling A·2^-k.
#define TAKAGI_STATUS 7

// Each n x n matrix of the stack a, one per thread block (n <= width = 2 block; the
// indices from n on are zero padding, which no rotation mixes in), the driver's
// factorization (takagi/driver.py) in one launch:
//   1. the largest entry (the larger of |Re| and |Im|) and its exponent k, 2^(k-1) <=
//      max < 2^k; X = A 2^-k (exact); the asymmetry ‖X − Xᵀ‖_F² and ‖X‖_F² for the
//      caller's check; the tile (X + Xᵀ)/2;
//   2. sweeps of width - 1 steps until the off-diagonal norm is at most tol times the
//      Frobenius norm (squares compared), checked before each sweep as the driver's loop
//      does, at most max_sweeps; rotations of entries at most eps times the norm are
//      skipped as the driver's sweeps skip them;
//   3. with d the diagonal, the Takagi values s = |d| 2^k in descending order (ties in
//      index order: each value's rank counted) and U = g diag(e^{i arg(d)/2}) in that
//      order, so that A = U diag(s) U^T: a diagonal matrix takes no sweep and gets its
//      closed form, the phases in U (U = I for the zero matrix).
// Out: s (n), U (n x n) and the TAKAGI_STATUS entries of status, stacks like a.
// blockDim.x >= 64 >= n.
template <typename T>
__global__ void takagi_solve_one_tile(const Complex<T> *__restrict__ a, int n, int block,
                                      T tol, T eps, int max_sweeps, T *s, Complex<T> *u,
                                      T *status)
{
    const size_t matrix = blockIdx.x;
    a += matrix * n * n;
    s += matrix * n;
    u += matrix * n * n;
    status += TAKAGI_STATUS * matrix;
    extern __shared__ __align__(16) unsigned char shared_raw[];
    const int width = 2 * block;
    const int ld = width + 1;
    Complex<T> *tile = reinterpret_cast<Complex<T> *>(shared_raw);
    Complex<T> *g = tile + width * ld;
    Complex<T> *rot = g + width * ld;
    int *index = reinterpret_cast<int *>(rot + 8 * block);
    T *scratch = reinterpret_cast<T *>(index + 4 * block);   // blockDim.x values

    T peak = T(0), off_diagonal = T(0);
    for (int e = threadIdx.x; e < width * width; e += blockDim.x) {
        const int r = e / width, c = e - r * width;
        const Complex<T> x = r < n && c < n ? a[(size_t)r * n + c] : cplx(T(0), T(0));
        g[r * ld + c] = x;                        // A, until the tile is formed
        peak = Max()(peak, Max()(mabs(x.re), mabs(x.im)));
        if (r != c && (x.re != T(0) || x.im != T(0))) off_diagonal = T(1);
    }
    peak = block_reduce(peak, scratch, Max());  // its barriers also publish A
    off_diagonal = block_reduce(off_diagonal, scratch, Max());
    const int scale = unit_exponent(peak);
    T asym = T(0), squares = T(0);
    for (int e = threadIdx.x; e < width * width; e += blockDim.x) {
        const int r = e / width, c = e - r * width;
        const Complex<T> x = times_power_of_two(g[r * ld + c], -scale);
        const Complex<T> y = times_power_of_two(g[c * ld + r], -scale);
        const T dr = x.re - y.re, di = x.im - y.im;
        asym += dr * dr + di * di;
        squares += x.re * x.re + x.im * x.im;
        tile[r * ld + c] = cplx((x.re + y.re) * T(0.5), (x.im + y.im) * T(0.5));
    }
    const T asym2 = block_sum(asym, scratch);     // g is read: it may become G
    const T input2 = block_sum(squares, scratch);
    squares = T(0);
    for (int e = threadIdx.x; e < width * width; e += blockDim.x) {
        const int r = e / width, c = e - r * width;
        const Complex<T> x = tile[r * ld + c];
        g[r * ld + c] = cplx(T(r == c ? 1 : 0), T(0));
        squares += x.re * x.re + x.im * x.im;
    }
    const T norm2 = block_sum(squares, scratch);  // its barriers also publish the tile
    const T bound = tol * tol * norm2;
    const T floor = eps * msqrt(norm2);           // the sweeps' floor (driver.py)
    int sweep = 0;
    T off2;
    for (;; ++sweep) {
        squares = T(0);
        for (int e = threadIdx.x; e < width * width; e += blockDim.x) {
            const int r = e / width, c = e - r * width;
            const Complex<T> x = tile[r * ld + c];
            if (r != c) squares += x.re * x.re + x.im * x.im;
        }
        off2 = block_sum(squares, scratch);
        if (off2 <= bound || sweep == max_sweeps) break;
        tile_steps(tile, g, rot, index, ld, width, block, width - 1, floor);
    }
    T *values = scratch;                        // free again after block_sum
    int *rank = index;                          // 4 block >= n entries
    Complex<T> *phase = rot;                    // 8 block >= n entries
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const Complex<T> di = tile[i * ld + i];
        values[i] = cabs(di);
        const Complex<T> w = half_phase_offset(di);   // e^{i arg(d_i)/2} - 1
        phase[i] = cplx(T(1) + w.re, w.im);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const T vi = values[i];
        int k = 0;
        for (int j = 0; j < n; ++j) k += values[j] > vi || (values[j] == vi && j < i);
        rank[i] = k;
        s[k] = mldexp(vi, scale);
    }
    __syncthreads();
    for (int e = threadIdx.x; e < n * n; e += blockDim.x) {
        const int r = e / n, c = e - r * n;
        u[r * n + rank[c]] = g[r * ld + c] * phase[c];
    }
    if (threadIdx.x == 0) {
        status[0] = T(sweep);
        status[1] = off2;
        status[2] = norm2;
        status[3] = asym2;
        status[4] = input2;
        status[5] = off_diagonal;
        status[6] = T(scale);
    }
}
