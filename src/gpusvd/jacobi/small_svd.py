"""The SVD of each small matrix of a stack in one pass: the CPU twin of
``kernels/small_svd.cu`` (``method="auto"``'s path on the GPU for min(M, N) <= 2b).

Each matrix A (rows × cols) is decomposed through X = A, or X = Aᴴ when it is wide, so
that X is m × n with m >= n:

1. max |x| (the larger of |Re| and |Im| for complex) and whether every entry is finite;
   a matrix that is not finite is not decomposed: its results are NaN and bit 0 of the
   status is set;
2. X times 2^-e with max |x| in [1/2, 1) (``ldexp``, exact where the result is normal),
   its columns filled with zero columns to the order k of the row-reverse strategy
   (:mod:`.padding`);
3. the one-sided Jacobi sweeps of :func:`.inner.inner_jacobi` (the kernel runs the same
   ``pair_step``) with its ``narrow`` rotations (float32 data rotated in float32), at most
   ``max_sweeps`` (bit 1 of the status otherwise);
4. σ_j = ‖g_j‖, summed in float64 row by row and rounded to the real dtype (the input is
   scaled, so gesvd's accuracy ε·σ₁);
5. the padding columns found from V, the others ranked by descending σ, ties by position;
6. S = σ·2^e; U = G·Σ⁻¹ where σ > :data:`.inner.U_FLOOR` (of the scaled g; the columns
   below it were not rotated), completed to ``ku`` orthonormal columns where
   σ <= U_FLOOR (and past n for ``full_matrices``): each new column starts from the unit
   vector e_t of the row t of least weight Σ_j |U_tj|² so far, whose component
   orthogonal to the columns before it has norm² >= (m − c)/m, is orthogonalized against
   them by two passes of classical Gram–Schmidt in float64, and normalized;
7. for a wide matrix U = V_x and Vh = U_xᴴ.

Steps 4–6 are written as the kernel computes them with one thread (sums in index order,
complex products written out as in ``_core/cuda/complex.cuh``), so the host build of the
kernel gives this module's bits (tests/jacobi/test_small_svd_host.py).
"""

import numba
import numpy as np
from numba import types
from numba.extending import overload

from .inner import column_floor, inner_jacobi
from .rotations import orthogonality_tol
from .strategies import padded_order, pivot_strategy

STRATEGY = "row-reverse"
# Sweeps allowed: the Jacobi driver's MAX_SWEEPS (the kernel runs one more, to tell).
MAX_SWEEPS = 50
NOT_FINITE, NOT_CONVERGED = 1, 2   # bits of the status


class Shape:
    """The sizes of one call: X (m × n, m >= n) of the caller's (rows × cols), the
    pivot order k, the columns ku of U_x, and the shapes of the results."""

    def __init__(self, rows, cols, full_matrices):
        self.rows, self.cols = rows, cols
        self.wide = rows < cols
        self.m, self.n = (cols, rows) if self.wide else (rows, cols)
        self.k = padded_order(STRATEGY, self.n)
        self.ku = self.m if full_matrices else self.n
        self.u = (rows, rows if self.wide else self.ku)
        self.vh = (self.ku if self.wide else cols, cols)


def _wide(x):
    """x in float64 or complex128."""
    return np.complex128(x) if isinstance(x, complex) else np.float64(x)


@overload(_wide)
def _wide_impl(x):
    if isinstance(x, types.Complex):
        return lambda x: complex(np.float64(x.real), np.float64(x.imag))
    return lambda x: np.float64(x)


def _abs2(x):
    """|x|² of a float64 or complex128 as the kernel's abs2: re·re + im·im."""
    return abs(x) ** 2


@overload(_abs2)
def _abs2_impl(x):
    if isinstance(x, types.Complex):
        return lambda x: x.real * x.real + x.imag * x.imag
    return lambda x: x * x


def _times(a, b):
    """a·b, complex products written out as _core/cuda/complex.cuh's operator*."""
    return a * b


@overload(_times)
def _times_impl(a, b):
    if isinstance(a, types.Complex):
        return lambda a, b: complex(a.real * b.real - a.imag * b.imag,
                                    a.real * b.imag + a.imag * b.real)
    return lambda a, b: a * b


def _conj(x):
    return np.conj(x)


@overload(_conj)
def _conj_impl(x):
    if isinstance(x, types.Complex):
        return lambda x: complex(x.real, -x.imag)
    return lambda x: x


def _divided(x, s):
    """x/s part by part (the kernel's divided), in x's precision."""
    return x / s


@overload(_divided)
def _divided_impl(x, s):
    if isinstance(x, types.Complex):
        return lambda x, s: complex(x.real / s, x.imag / s)
    return lambda x, s: x / s


@numba.njit(cache=True)
def _finish_one(g, v, n, m, ku, want_uv, s_out, u_x, v_x, w, h, weight, u_floor):
    """Steps 4–6 for one matrix: g (mp, k) after the sweeps, scaled; v (k, k). Writes σ
    sorted (before the factor 2^e) into s_out, U_x (m, ku) and the sorted V_x (n, n);
    w (m,) and h (ku,) are float64 or complex128 work arrays, weight (m,) float64."""
    mp, k = g.shape
    sv = np.empty(k, s_out.dtype)
    for j in range(k):
        total = 0.0
        for i in range(mp):
            total += _abs2(_wide(g[i, j]))
        sv[j] = np.sqrt(total)
    kept = np.ones(k, np.bool_)
    if want_uv:
        for j in range(k):
            for r in range(n, k):
                if v[r, j] != 0:
                    kept[j] = False
    order = np.empty(n, np.int64)
    for j in range(k):
        if not kept[j]:
            continue
        rank = 0
        for i in range(k):
            if kept[i] and (sv[i] > sv[j] or (sv[i] == sv[j] and i < j)):
                rank += 1
        if rank < n:
            order[rank] = j
    for c in range(n):
        s_out[c] = sv[order[c]]
    if not want_uv:
        return
    r = 0
    while r < n and sv[order[r]] > u_floor:
        r += 1
    for c in range(n):
        j = order[c]
        for i in range(m):
            u_x[i, c] = _divided(g[i, j], sv[j]) if c < r else g[i, j]
        for i in range(n):
            v_x[i, c] = v[i, j]
    for c in range(r, ku):
        for i in range(m):
            d = 0.0
            for j in range(c):
                d += _abs2(_wide(u_x[i, j]))
            weight[i] = d
        t = 0
        for i in range(1, m):
            if weight[i] < weight[t]:
                t = i
        for i in range(m):
            w[i] = 1.0 if i == t else 0.0
        for _ in range(2):
            for j in range(c):
                acc = w[0] * 0.0
                for i in range(m):
                    acc = acc + _times(_conj(_wide(u_x[i, j])), w[i])
                h[j] = acc
            for i in range(m):
                acc = w[i]
                for j in range(c):
                    acc = acc - _times(_wide(u_x[i, j]), h[j])
                w[i] = acc
        total = 0.0
        for i in range(m):
            total += _abs2(w[i])
        norm = np.sqrt(total)
        for i in range(m):
            u_x[i, c] = _divided(w[i], norm)


@numba.njit(parallel=True, cache=True)
def _finish(g, v, n, m, ku, want_uv, s_out, u_x, v_x, w, h, weight, u_floor):
    for b in numba.prange(g.shape[0]):
        _finish_one(g[b], v[b], n, m, ku, want_uv, s_out[b], u_x[b], v_x[b], w[b], h[b],
                    weight[b], u_floor)


def small_svd(a, *, compute_uv, full_matrices, max_sweeps=MAX_SWEEPS):
    """The SVD of each matrix of ``a`` (batch, rows, cols) as the kernel computes it.

    Parameters
    ----------
    a : (batch, rows, cols) ndarray
        float32, float64, complex64 or complex128; not changed. Any entry may be NaN or
        infinite (that matrix's results are NaN).
    compute_uv, full_matrices : bool
        As in :func:`gpusvd.svd`.
    max_sweeps : int >= 1
        Sweeps allowed before bit 1 of the status is set.

    Returns
    -------
    u : (batch, rows, rows or K) ndarray, or None without ``compute_uv``
    s : (batch, K) ndarray of the real dtype, descending
    vh : (batch, K or cols, cols) ndarray, or None
    status : int
        Bit 0 (:data:`NOT_FINITE`): some matrix held NaN or infinity; bit 1
        (:data:`NOT_CONVERGED`): some matrix needed more than ``max_sweeps`` sweeps.

    Examples
    --------
    >>> import numpy as np
    >>> u, s, vh, status = small_svd(np.array([[[3.0, 0.0], [4.0, 5.0]]]),
    ...                              compute_uv=True, full_matrices=False)
    >>> np.round(s ** 2, 10), status
    (array([[45.,  5.]]), 0)
    """
    batch, rows, cols = a.shape
    shape = Shape(rows, cols, full_matrices)
    m, n, k, ku = shape.m, shape.n, shape.k, shape.ku
    real = np.finfo(a.dtype).dtype
    x = a.conj().swapaxes(1, 2) if shape.wide else a
    finite = np.isfinite(x).all(axis=(1, 2))
    parts = (np.abs(x.real), np.abs(x.imag)) if a.dtype.kind == "c" else (np.abs(x),)
    big = np.max([p.astype(np.float64).max(axis=(1, 2), initial=0.0) for p in parts], axis=0)
    big = np.where(finite, big, 0.0)
    exponent = np.where(big > 0, np.frexp(big)[1], 0).astype(np.int32)
    mp = max(m, k)
    g = np.zeros((batch, mp, k), a.dtype)
    g[:, :m, :n] = np.where(finite[:, None, None], x, 0)
    if a.dtype.kind == "c":
        g.real[:, :m, :n] = np.ldexp(g.real[:, :m, :n], -exponent[:, None, None])
        g.imag[:, :m, :n] = np.ldexp(g.imag[:, :m, :n], -exponent[:, None, None])
    else:
        g[:, :m, :n] = np.ldexp(g[:, :m, :n], -exponent[:, None, None])
    v = np.repeat(np.eye(k, dtype=a.dtype)[None], batch, axis=0)
    _, sweeps = inner_jacobi(g, v, np.ones(k, real), pivot_strategy(STRATEGY, k),
                             max_sweeps + 1, orthogonality_tol(a.dtype, m),
                             float(column_floor(real)) ** 2, narrow=True)
    status = (NOT_FINITE if not finite.all() else 0) | \
        (NOT_CONVERGED if (sweeps[finite] > max_sweeps).any() else 0)
    s = np.zeros((batch, n), real)
    u_x = np.zeros((batch, m, ku), a.dtype)
    v_x = np.zeros((batch, n, n), a.dtype)
    if batch:
        work = np.complex128 if a.dtype.kind == "c" else np.float64
        _finish(g, v, n, m, ku, compute_uv, s, u_x, v_x, np.zeros((batch, m), work),
                np.zeros((batch, max(ku, 1)), work), np.zeros((batch, m)),
                column_floor(real))
    s = np.ldexp(s, exponent[:, None])
    s[~finite] = np.nan
    if not compute_uv:
        return None, s, None, status
    u_x[~finite] = np.nan * (1 + 1j) if a.dtype.kind == "c" else np.nan
    v_x[~finite] = np.nan * (1 + 1j) if a.dtype.kind == "c" else np.nan
    if shape.wide:
        return v_x, s, u_x.conj().swapaxes(1, 2).copy(), status
    return u_x, s, v_x.conj().swapaxes(1, 2).copy(), status
