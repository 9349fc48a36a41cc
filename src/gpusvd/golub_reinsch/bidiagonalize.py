"""Blocked Householder bidiagonalization A = Q·B·Pᵀ, the first step of Golub–Reinsch.

For an m×n matrix A with m ≥ n, left reflectors H_i = I − τq_i·v_i·v_iᵀ zero
A(i+1:m, i) and right reflectors G_i = I − τp_i·u_i·u_iᵀ zero A(i, i+2:n), leaving
the upper bidiagonal B = Qᵀ·A·P with Q = H_0 H_1 … H_{n−1}, P = G_0 … G_{n−2}
(Lahabar & Narayanan 2009, paper 000, eqs. (2)–(5)).

Complex A is reduced as by LAPACK's zgebrd: H_i = I − τq_i·v_i·v_iᴴ and
G_i = I − τp_i·u_i·u_iᴴ with complex τ, each chosen (zlarfg) to leave a real β, so
that B = Qᴴ·A·P is real and the bidiagonal QR after it stays real.  The same code
serves both: conjugates and conjugate transposes are the identity and plain
transposes for real data (``_conj``, ``_ct``), so the real reduction is unchanged.

Why blocked: the unblocked reduction (LAPACK dgebd2) updates the whole trailing
matrix with two rank-1 updates per column, so it reads and writes the matrix 2n
times at matrix-vector speed.  Algorithm 2 of paper 000, which is LAPACK's
dgebrd/dlabrd, reduces a panel of L columns and rows with matrix-vector products
only, accumulating the vectors X and Y of the deferred updates, then updates the
trailing matrix once with two matrix products A ← A − V·Yᵀ − X·Uᵀ.  Half of the
flops become GEMM, which is what a GPU (and a multithreaded BLAS) runs fast.

Q and P are never formed here: :func:`apply_q` and :func:`apply_p` apply them
block by block in the compact WY form I − V·T·Vᵀ (Schreiber & Van Loan, SIAM J.
Sci. Stat. Comput. 10 (1989) 53–57; LAPACK dlarft/dlarfb), with a fixed number
of device operations per block: on a GPU each operation costs a launch, and a
per-column loop over the block made launches, not flops, the cost.

Everything is written once against the array namespace ``xp`` (NumPy or CuPy)
but two steps, which ``_TWINS`` picks by the namespace's name: the panel, on the GPU
one cooperative CUDA kernel (``bidiagonalize_cuda``), and the unblocked tail, on the
GPU reduced on the host (``_reduce_tail_on_host``).  The reduction reads no device
value on the host: the Householder vectors are made with ``xp.where`` instead of
branches (an ``if`` on a GPU scalar costs a synchronization, and there would be 2n of
them).  The back-transformation synchronizes once, to build all its small T factors on
the host.  The storage of the factors is LAPACK's gebrd (m ≥ n): v_i below the
diagonal of column i with v_i(i) = 1 implied, ū_i right of the superdiagonal of row i
with u_i(i+1) = 1 implied, d on the diagonal and e on the superdiagonal.
"""

from typing import Any, Callable, NamedTuple

import numpy as np

from gpusvd._core import tunables
from gpusvd._core.backend import array_namespace, to_host

from . import bidiagonalize_cuda

# Widest T built by the column recurrence rather than by halves in _wy_factors.
# NumPy, 32 blocks of 128: 7.5 ms by the recurrence alone, 3.9–4.2 ms with a
# leaf of 8 to 32 (16 best), 8.6 ms halving down to single columns.
_WY_RECURSION_LEAF = 16


def _complex(x):
    return x.dtype.kind == "c"


def _conj(x):
    """x̄; x itself when real, so that the real reduction makes the very same calls."""
    return x.conj() if _complex(x) else x


def _ct(x):
    """The conjugate transpose xᴴ, a view (xᵀ) when real."""
    return x.conj().T if _complex(x) else x.T


def _conjugate_row(row):
    """row ← row̄ in place (complex only): the right reflectors act on conjugated rows."""
    if _complex(row):
        row[...] = row.conj()


def _householder(x):
    """Make x into a Householder vector in place; return (beta, tau).

    H = I − tau·v·vᴴ with v = [1, x(1:)] has Hᴴ·x = [beta, 0, …, 0] for the
    original x: paper 000 eqs. (6)–(8) (alpha there is beta here, sigma is tau),
    LAPACK dlarfg; for complex x, zlarfg: beta is real and tau complex, so that
    the bidiagonal comes out real.  beta = −sign(Re x0)·‖x‖ avoids cancellation
    in x0 − beta.  When x(1:) is already zero (and x0 real), H = I (tau = 0,
    beta = x0); ``xp.where`` selects that case on the device, and the guarded
    denominators keep the discarded branch free of 0/0.  A complex x0 alone
    still takes a reflector: it turns x0 into the real |x0|·(±1).  Returns 0-d
    arrays: beta of x's real dtype, tau of x's dtype.

    The scalars are formed from x / s, s = max|x_i| (dlarfg's rescaling by another
    route), in double for float32 and complex64 data: a graded matrix's columns reach
    entries whose squares underflow (below 1e-19 in float32), whose complex64 modulus
    (hypotf) is rounded to the subnormal grid, and by whose complex difference a
    division overflows; reflectors made of them come out up to 1e11 ε from unitary.
    """
    xp = array_namespace(x)
    alpha = x[0]
    if x.shape[0] == 1 and not _complex(x):  # nothing to annihilate (a static shape)
        return alpha.copy(), xp.zeros((), dtype=x.dtype)
    wide = np.result_type(x.dtype, np.float64)
    a = alpha.astype(wide)
    tail = x[1:].astype(wide)
    big = xp.abs(a)
    if tail.shape[0]:
        big = xp.maximum(big, xp.abs(tail).max())
    s = xp.where(big == 0, 1, big)
    a, tail = a / s, tail / s  # |a|, |tail_i| <= 1, one of them 1 unless x = 0
    xnorm = xp.linalg.norm(tail)
    zero = xnorm == 0
    if _complex(x):
        zero = zero & (a.imag == 0)
    a_re = a.real
    beta = xp.where(zero, a_re, -xp.copysign(xp.hypot(xp.abs(a), xnorm), a_re))  # (6)
    safe = xp.where(zero, 1, beta)  # |beta| >= 1 past the zero case
    tau = (beta - a_re) / safe                                                  # (7)
    if _complex(x):
        tau = tau - 1j * (a.imag / safe)
    x[1:] = xp.where(zero, x[1:], tail * (1 / xp.where(zero, 1, a - beta)))   # (8)
    beta = beta * s
    x[0] = beta
    return beta.astype(np.finfo(x.dtype).dtype), tau.astype(x.dtype)


def _reduce_panel(a, nb, x, y, d, e, tauq, taup):
    """Reduce the first nb columns and rows of the M×N view ``a`` (LAPACK dlabrd).

    Steps 3–19 of paper 000 Algorithm 2.  The trailing matrix a(nb:, nb:) is not
    touched; on return it is owed A ← A − V·Yᴴ − X·W, with V = a(:, :nb) and
    W = a(:nb, :) holding the reflectors (their unit entries stored explicitly),
    X = x(:, :nb) and Y = y(:, :nb).  ``x`` is M×nb and ``y`` N×nb scratch.
    Needs N > nb, so every column of the panel has a right reflector.  For complex
    ``a`` this is zlabrd: row j of W holds ū_j, the conjugate of G_j's vector.
    """
    for j in range(nb):
        # Step 12: bring column j up to date with the j pending rank-2 updates,
        # a(j:, j) −= V·Y(j, :)ᴴ + X·W(:, j).
        if j > 0:
            a[j:, j] -= a[j:, :j] @ _conj(y[j, :j]) + x[j:, :j] @ a[:j, j]
        # Steps 13–14: H_j annihilates a(j+1:, j).
        d[j], tauq[j] = _householder(a[j:, j])
        a[j, j] = 1
        v = a[j:, j]
        # Step 18, first half: y_j = τq·A_jᴴ·v with A_j the up-to-date a(j:, j+1:),
        # the paper's x (after eq. (8)) whole.  dlabrd keeps x in Y and moves the
        # paper's correction ẑ = x − σ2·(xᵀv̂)·v̂ into X below: the same rank-2 update.
        y[j + 1:, j] = _ct(a[j:, j + 1:]) @ v
        if j > 0:
            y[j + 1:, j] -= (y[j + 1:, :j] @ (_ct(a[j:, :j]) @ v)
                             + _ct(a[:j, j + 1:]) @ (_ct(x[j:, :j]) @ v))
        y[j + 1:, j] *= tauq[j]
        # Step 15: bring row j up to date, now including H_j itself.
        a[j, j + 1:] -= _conj(y[j + 1:, :j + 1]) @ a[j, :j + 1]
        if j > 0:
            a[j, j + 1:] -= a[:j, j + 1:].T @ x[j, :j]
        # Steps 16–17: G_j = I − τp·u·uᴴ annihilates a(j, j+2:): its u is the
        # Householder vector of the conjugated row.
        _conjugate_row(a[j, j + 1:])
        e[j], taup[j] = _householder(a[j, j + 1:])
        a[j, j + 1] = 1
        u = a[j, j + 1:]
        # Step 18, second half: x_j = τp·(H_j·A_j)·u, the paper's ŵ taken after H_j.
        x[j + 1:, j] = (a[j + 1:, j + 1:] @ u
                        - a[j + 1:, :j + 1] @ (_ct(y[j + 1:, :j + 1]) @ u))
        if j > 0:
            x[j + 1:, j] -= x[j + 1:, :j] @ (a[:j, j + 1:] @ u)
        x[j + 1:, j] *= taup[j]
        _conjugate_row(a[j, j + 1:])


def _reduce_unblocked(a, d, e, tauq, taup):
    """Reduce the M×N view ``a`` column by column (LAPACK dgebd2).

    Each step applies H_j from the left and G_j from the right as rank-1 updates,
    the rank-2 update after paper 000 eq. (8) split in its two halves: A ← H_jᴴ·A,
    then A ← A·G_j.  For complex ``a`` this is zgebd2, storing ū_j in row j.
    """
    m, n = a.shape
    for j in range(n):
        d[j], tauq[j] = _householder(a[j:, j])
        if j == n - 1:
            taup[j] = 0
            break
        a[j, j] = 1
        v = a[j:, j]
        a[j:, j + 1:] -= (_conj(tauq[j]) * v)[:, None] * (_conj(v) @ a[j:, j + 1:])[None, :]
        a[j, j] = d[j]
        _conjugate_row(a[j, j + 1:])
        e[j], taup[j] = _householder(a[j, j + 1:])
        a[j, j + 1] = 1
        u = a[j, j + 1:]
        a[j + 1:, j + 1:] -= (a[j + 1:, j + 1:] @ u)[:, None] * (taup[j] * _conj(u))[None, :]
        _conjugate_row(u)
        a[j, j + 1] = e[j]


def _wy_factors(s, tau):
    """The T of every block, from S = VᴴV and τ, on the host (LAPACK dlarft, 'F', 'C').

    ``s`` is (blocks, k, k) and ``tau`` (blocks, k), NumPy; all blocks go at once
    in batched products.  Wide blocks split in halves, T = [T1, −T1·S12·T2; 0, T2]
    (the product of two compact WY blocks, Schreiber & Van Loan 1989; recursive as
    in Elmroth & Gustavson, IBM J. Res. Dev. 44 (2000) 605–624), which turns most
    of the work into matrix products; narrow ones run the column recurrence
    T(:j, j) = −τ_j·T(:j, :j)·S(:j, j), T(j, j) = τ_j.  τ = 0 (H = I, also the
    padding of a short last block) gives a zero row and column of T.
    """
    k = s.shape[-1]
    t = np.zeros_like(s)
    if k > _WY_RECURSION_LEAF:
        h = k // 2
        t[:, :h, :h] = t1 = _wy_factors(s[:, :h, :h], tau[:, :h])
        t[:, h:, h:] = t2 = _wy_factors(s[:, h:, h:], tau[:, h:])
        t[:, :h, h:] = -(t1 @ (s[:, :h, h:] @ t2))
        return t
    for j in range(k):
        t[:, :j, j] = -tau[:, j, None] * (t[:, :j, :j] @ s[:, :j, j, None])[..., 0]
        t[:, j, j] = tau[:, j]
    return t


def _narrowed(nb, count):
    """The block width for ``count`` reflectors: nb, narrowed while they fit in half of it.

    A block wider than ``count`` is padded with τ = 0, whose T rows and columns are zero,
    and :func:`_wy_factors` builds its T for the whole padded width: 128×128 for a 2×2
    matrix, 2.5 ms of a 2.8 ms ``svd(method="gr")`` (cProfile, n = 8). Halving keeps
    the bits: the first half of a T wider than the leaf is the T of the half alone, and
    the column recurrence of the leaf computes column j from columns < j only.
    """
    while nb > _WY_RECURSION_LEAF and nb // 2 >= count:
        nb //= 2
    return min(nb, count) if nb <= _WY_RECURSION_LEAF else nb


def _apply_blocked(c, tau, count, block_size, panel, shift):
    """c ← R_0 R_1 … R_{count−1}·c in place, block_size reflectors at a time.

    ``panel(k, kb)`` is a view of the factors whose columns hold the vectors of
    R_k … R_{k+kb−1} below its diagonal, the unit entries implied on it; R_k
    acts on rows k+shift: of c.  Each block becomes I − V·T·Vᴴ (LAPACK
    dlarft/dlarfb) in a fixed number of device operations, whatever block_size
    is: V is ``tril`` plus an identity, S = VᴴV one GEMM, and c ← c − V·(T·(Vᴴ·c))
    three GEMMs, the last block first since R_0(R_1(…(R_last·c))).  Between the
    two loops S and τ go to the host once, the only synchronization, and
    :func:`_wy_factors` makes every T there.
    """
    xp = array_namespace(c)
    if count == 0:
        return c
    nb = _narrowed(tunables.get().back_transform_block_size if block_size is None
                   else block_size, count)
    starts = range(0, count, nb)
    vs = []
    s = xp.zeros((len(starts), nb, nb), dtype=c.dtype)
    for b, k in enumerate(starts):
        stored = panel(k, min(nb, count - k))
        v = xp.tril(stored, -1) + xp.eye(*stored.shape, dtype=c.dtype)
        s[b, :v.shape[1], :v.shape[1]] = _ct(v) @ v
        vs.append(v)
    taus = np.zeros(len(starts) * nb, dtype=c.dtype)
    taus[:count] = to_host(tau[:count])
    t = xp.asarray(_wy_factors(to_host(s), taus.reshape(len(starts), nb)))
    for b in reversed(range(len(vs))):
        v, r, kb = vs[b], starts[b] + shift, vs[b].shape[1]
        c[r:] -= v @ (t[b, :kb, :kb] @ (_ct(v) @ c[r:]))
    return c


class Bidiagonal(NamedTuple):
    """A = Q·B·Pᵀ as :func:`bidiagonalize` returns it (LAPACK gebrd's output, m ≥ n)."""

    factors: Any  # (m, n): d, e and the Householder vectors, stored as gebrd does
    tauq: Any     # (n,)  τ of H_0 … H_{n−1}
    taup: Any     # (n,)  τ of G_0 … G_{n−2}; the last entry is 0
    d: Any        # (n,)  diagonal of B, of the real dtype
    e: Any        # (n−1,) superdiagonal of B, of the real dtype


def bidiagonalize(a, *, block_size):
    """Reduce ``a`` to upper bidiagonal form, A = Q·B·Pᴴ (paper 000, Algorithm 2).

    Complex ``a`` (NumPy or CuPy) is reduced as by LAPACK's zgebrd: the reflectors H = I − τ·v·vᴴ have complex τ and real β, so B is real and
    Q, P are unitary.

    Parameters
    ----------
    a : (m, n) float32, float64, complex64 or complex128 NumPy or CuPy array, m ≥ n
        The matrix, in either memory order.  It is OVERWRITTEN with the factors
        and returned as ``factors``: pass a copy to keep it.  Entries should lie
        in a safe range (the driver scales them); up to about 1e150 in float64 is.
    block_size : int
        Panel width L.  Panels of L columns are reduced while more than L columns
        remain; the last (at most L) columns are reduced unblocked.

    Returns
    -------
    Bidiagonal
        ``d`` and ``e`` may be negative (LAPACK's sign convention).

    Examples
    --------
    >>> import numpy as np
    >>> a = np.arange(12.0).reshape(4, 3) ** 2
    >>> bd = bidiagonalize(a.copy(), block_size=2)
    >>> b = np.diag(bd.d) + np.diag(bd.e, 1)
    >>> bool(np.allclose(np.linalg.svd(b)[1], np.linalg.svd(a)[1]))
    True
    """
    xp = array_namespace(a)
    m, n = a.shape
    if m < n:
        raise ValueError(f"bidiagonalize needs m >= n, got a of shape {a.shape}; "
                         "pass the transpose of a wide matrix")
    if block_size < 1:
        raise ValueError(f"block_size must be a positive integer, got {block_size}")
    real = np.finfo(a.dtype).dtype
    d = xp.zeros(n, dtype=real)
    e = xp.zeros(max(n - 1, 0), dtype=real)
    tauq = xp.zeros(n, dtype=a.dtype)
    taup = xp.zeros(n, dtype=a.dtype)
    nb = block_size
    # Column-major scratch: the GPU panel kernel reads columns of X and Y.
    x = xp.zeros((m, nb), dtype=a.dtype, order="F")
    y = xp.zeros((n, nb), dtype=a.dtype, order="F")
    twins = _TWINS[xp.__name__]
    # The CUDA panel reads column-major arrays (the driver passes them): a C-ordered CuPy
    # matrix takes the array-namespace panel.
    reduce_panel = twins.reduce_panel if a.flags.f_contiguous else _reduce_panel
    k = 0
    while n - k > nb:  # steps 2–21: a panel, then the trailing update
        sub, xs, ys = a[k:, k:], x[:m - k], y[:n - k]
        reduce_panel(sub, nb, xs, ys, d[k:], e[k:], tauq[k:], taup[k:])
        # Step 20: A(k+L:, k+L:) ← A − V·Yᴴ − X·W, the deferred rank-2 updates after
        # paper 000 eq. (8), L at a time. On the CPU as one GEMM of inner size 2L,
        # [V X]·[Yᴴ; W], with one temporary instead of three: 0.24 → 0.16 s of the
        # update at n = 1500 (cProfile, 2 cores; the whole reduction ~0.70 → 0.62 s,
        # within this machine's noise). On the GPU two GEMMs: the fused form is not
        # measured there.
        if xp is np:
            sub[nb:, nb:] -= (xp.concatenate([sub[nb:, :nb], xs[nb:]], axis=1)
                              @ xp.concatenate([_ct(ys[nb:]), sub[:nb, nb:]], axis=0))
        else:
            sub[nb:, nb:] -= sub[nb:, :nb] @ _ct(ys[nb:]) + xs[nb:] @ sub[:nb, nb:]
        # The panel kept the unit entries of the reflectors on the diagonal and the
        # superdiagonal; put B back there.
        idx = xp.arange(nb)
        sub[idx, idx] = d[k:k + nb]
        sub[idx, idx + 1] = e[k:k + nb]
        k += nb
    twins.reduce_tail(a[k:, k:], d[k:], e[k:], tauq[k:], taup[k:])
    return Bidiagonal(a, tauq, taup, d, e)


def _reduce_tail_on_host(a, d, e, tauq, taup):
    """The last (at most block_size) columns of a device matrix, unblocked, on the host.

    On the GPU, :func:`_reduce_unblocked` costs ~60 small launches per column: ~25 ms
    for a 32-column tail, which was a fixed overhead of every GPU SVD (8192×32 took 30 ms
    against gesvd's 2.6 ms). The tail is at most (m − k)×block_size entries, so on the
    host it costs a copy each way and well under a millisecond of NumPy.
    """
    xp = array_namespace(a)
    host = [np.array(to_host(v)) for v in (a, d, e, tauq, taup)]
    _reduce_unblocked(*host)
    for device_view, values in zip((a, d, e, tauq, taup), host):
        device_view[...] = xp.asarray(values)


class _Twins(NamedTuple):
    """The steps of the reduction that differ between the devices."""

    reduce_panel: Callable  # (a, nb, x, y, d, e, tauq, taup): dlabrd on a column-major a
    reduce_tail: Callable   # (a, d, e, tauq, taup): the last columns, unblocked (dgebd2)


# The NumPy (array-namespace) or CUDA twin of each step, by the name of the array namespace.
_TWINS = {
    "numpy": _Twins(_reduce_panel, _reduce_unblocked),
    "cupy": _Twins(bidiagonalize_cuda.reduce_panel, _reduce_tail_on_host),
}


def apply_q(bd, c, *, block_size=None):
    """Q·c, with Q = H_0 … H_{n−1} from :func:`bidiagonalize`.

    Parameters
    ----------
    bd : Bidiagonal
    c : (m, k) array of the factors' dtype and namespace
        Overwritten with the result, which is returned.
    block_size : int, optional
        Reflectors per compact WY block, ``tunables.get().back_transform_block_size`` when
        omitted; any value gives Q·c to rounding, whatever block size
        :func:`bidiagonalize` used.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.random.default_rng(0).standard_normal((5, 3))
    >>> bd = bidiagonalize(a.copy(), block_size=2)
    >>> b = np.zeros((5, 3)); b[:3] = np.diag(bd.d) + np.diag(bd.e, 1)
    >>> qb = apply_q(bd, b)
    >>> bool(np.allclose(qb, a @ apply_p(bd, np.eye(3))))
    True
    """
    f = bd.factors
    # v_i is column i of the factors below the diagonal.
    return _apply_blocked(c, bd.tauq, f.shape[1], block_size,
                          lambda k, kb: f[k:, k:k + kb], shift=0)


def apply_p(bd, c, *, block_size=None):
    """P·c, with P = G_0 … G_{n−2} from :func:`bidiagonalize` (A = Q·B·Pᴴ).

    ``c`` is (n, k) and is overwritten, as in :func:`apply_q`.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.random.default_rng(0).standard_normal((4, 4))
    >>> bd = bidiagonalize(a.copy(), block_size=2)
    >>> p = apply_p(bd, np.eye(4))
    >>> bool(np.allclose(p.T @ p, np.eye(4)))
    True
    """
    f = bd.factors
    # G_i acts on rows i+1:; ū_i is row i of the factors right of the diagonal.
    return _apply_blocked(c, bd.taup, f.shape[1] - 1, block_size,
                          lambda k, kb: _ct(f[k:k + kb, k + 1:]), shift=1)
