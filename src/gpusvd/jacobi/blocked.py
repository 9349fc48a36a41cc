"""Blocked one-sided Jacobi orthogonalization of the columns of G (paper 003, §2, §4).

Written once against ``xp`` (NumPy or CuPy). The n columns are grouped into block-columns
of width b (6); a block sweep runs the p-steps of a block p-strategy, and in each p-step
*all* its block pairs at once, as batched array operations:

1. factorize: shorten each pair [G_p G_q] to a 2b×2b factor R_pq, by default by the
   Cholesky factor of the Gram matrix H_pq = [G_p G_q]ᴴ[G_p G_q] (7) (one batched GEMM,
   then on the GPU one kernel, ``gram_cholesky_cuda``), or by R of the QR factorization
   (8) (``shorten="qr"``, for badly scaled input);
2. orthogonalize: the inner pointwise Jacobi (:mod:`.inner` on NumPy, ``inner_cuda`` on
   CuPy) on all R_pq in one call: to convergence (full-block variant, at most
   ``jacobi_inner_sweeps``) or one sweep (block-oriented variant);
3. postmultiply: [G_p G_q] ← [G_p G_q]·V'_pq and [V_p V_q] ← [V_p V_q]·V'_pq (9),
   batched GEMMs.

The block sweeps stop when one applied no proper rotation (§4.5); the count is summed on
the device and read once per sweep, the only host synchronization of the iteration.
G and V are held transposed (column j of G is row j of ``gt``) so that the gathers and
scatters of block-columns move contiguous rows.

Cholesky shortening departs from the paper in three ways that keep it from breaking down:
H_pq is formed and factored in double precision for single precision data (products of
single numbers are exact there); it is scaled to unit diagonal before factoring
(R = R_s·diag(‖g_j‖), exact zero columns stay zero); and every pair is factored with a
shift of k·m·u/2 on the diagonal, of the size of the rounding errors of H_pq: its
eigenvectors, which the inner Jacobi finds, barely move, numerically singular pairs stay
factorable, and no test of the factorization (a host synchronization on the GPU) is
needed.
"""

from typing import Callable, NamedTuple

import numpy as np

from .._core import progress, tunables
from .._core.backend import to_host
from .._core.errors import LinAlgError
from . import block_copy_cuda, gram_cholesky_cuda, inner_cuda
from . import inner as inner_numba
from .inner import column_floor
from .padding import drop_columns, kept_columns, pad_columns, pad_signs
from .rotations import orthogonality_tol
from .strategies import PARALLEL, block_count, padded_order, pivot_strategy

# Inner strategy for a sequential block strategy: the kernels take parallel p-steps.
_INNER_OF_SEQUENTIAL = {"row-cyclic": "row", "column-cyclic": "column"}


def inner_for(xp):
    """The inner Jacobi twin for arrays of ``xp``: Numba on NumPy, CUDA on CuPy."""
    return _TWINS[xp.__name__].inner_jacobi


def inner_name(strategy):
    """The parallel strategy the inner Jacobi runs for the user's ``strategy``."""
    return strategy if strategy in PARALLEL else _INNER_OF_SEQUENTIAL[strategy]


def inner_strategy(strategy, k, xp):
    """The parallel table of order ``k`` the inner Jacobi runs, as an ``xp`` array."""
    return xp.asarray(pivot_strategy(inner_name(strategy), k))


# The type the Gram matrix of a block pair is formed and factored in: single precision
# data in double, where products of single numbers are exact and the Cholesky factor of an
# ill-conditioned or strongly graded pair is as good as R of its QR factorization once
# rounded back (the GPU's float32 failures on graded and rank-deficient input; on the
# H100 a double GEMM costs as much as a single one without tensor cores).
_GRAM_TYPE = {np.dtype(np.float32): np.float64, np.dtype(np.complex64): np.complex128}


def _cholesky_factor(xp, x, shift):
    """R (batch, k, k) with Rᴴ·R = x̄·xᵀ for the rows x (batch, k, m) of a block pair.

    H is scaled to unit diagonal and factored with ``shift`` added to it, always: the
    shift (k·m·u/2 of the Gram's precision) is of the size of the rounding errors of H,
    keeps numerically singular pairs factorable, and needs no test of the factorization
    (which on the GPU would cost a second factorization or a host synchronization).
    """
    return factor_gram(xp, gram(xp, x), shift, x.dtype)


def factor_gram(xp, h, shift, dtype):
    """R (batch, k, k) of ``dtype`` from the Gram matrices h (see :func:`_cholesky_factor`).

    The twin of ``kernels/gram_cholesky.cu``, which takes the same h on the GPU.
    """
    k = h.shape[-1]
    d = xp.sqrt(xp.diagonal(h, axis1=1, axis2=2).real)
    ds = xp.where(d > 0, d, 1)
    hs = _divided(h, ds[:, :, None] * ds[:, None, :])
    diag = xp.arange(k)
    hs[:, diag, diag] = 1 + shift
    low = _TWINS[xp.__name__].cholesky(xp, hs, shift)
    r = low.conj().transpose(0, 2, 1) * d[:, None, :].astype(h.dtype)
    return xp.ascontiguousarray(r.astype(dtype, copy=False))


def _divided(h, s):
    """h / s for real s, part by part where h is complex (the kernel's ``scaled``): NumPy's
    complex quotient forms 1/s, which overflows where s is subnormal (the scale d_i·d_j
    of two columns whose squared norms are)."""
    if h.dtype.kind != "c":
        return h / s
    return h.real / s + 1j * (h.imag / s)


def gram(xp, x):
    """H = x̄·xᵀ (batch, k, k) of the rows x (batch, k, m), in the Gram type."""
    wide = x.astype(_GRAM_TYPE.get(x.dtype, x.dtype), copy=False)
    return xp.matmul(wide.conj(), wide.transpose(0, 2, 1))


def _shorten(xp, x, shorten, shift, eye):
    """R_pq of each pair (the rows ``x`` of its block-columns) and the identity the inner
    Jacobi starts its V from (a copy of ``eye``). On the GPU the Cholesky path is one
    kernel after the Gram GEMM (``gram_cholesky_cuda``), with no host synchronization."""
    if shorten == "qr":
        return qr_factor(xp, x), eye.copy()
    return _TWINS[xp.__name__].shorten(xp, x, shift, eye)


def _host_shorten(xp, x, shift, eye):
    return _cholesky_factor(xp, x, shift), eye.copy()


def _cuda_shorten(xp, x, shift, eye):
    return gram_cholesky_cuda.gram_cholesky(gram(xp, x), shift, x.dtype, kv=eye.shape[-1])


def _host_cholesky(hs, shift):
    """NumPy's Cholesky of each matrix; one not positive definite after rounding gets a
    larger shift (the GPU has no such test: there it would cost a synchronization).

    The shift doubles from ``shift`` (from k·ε when ``shift`` is 0, which would never
    grow) until the factorization succeeds. Hs has unit
    diagonal and, as a scaled Gram matrix, off-diagonal entries of modulus at most about
    one, so by Gershgorin's theorem an extra shift of k makes it positive definite: at
    most log2(k/shift) + 1 doublings. A matrix that fails beyond that cannot be a Gram
    matrix of finite columns: :class:`~gpusvd.LinAlgError`, not an endless loop.
    """
    try:
        return np.linalg.cholesky(hs)
    except np.linalg.LinAlgError:
        low = np.empty_like(hs)
        eye = np.eye(hs.shape[-1], dtype=hs.dtype)
        limit = hs.shape[-1] + 1.0
        first = shift if shift > 0 else hs.shape[-1] * float(np.finfo(np.float64).eps)
        for i, one in enumerate(hs):
            extra = 0.0
            while True:
                try:
                    low[i] = np.linalg.cholesky(one + extra * eye)
                    break
                except np.linalg.LinAlgError:
                    if extra > limit:
                        raise LinAlgError(
                            f"jacobi: the Gram matrix of a block pair is not positive "
                            f"definite even with a shift of {extra:.3g}: it is not finite "
                            "(was the input? check_finite=True rejects such input up "
                            "front)") from None
                    extra = 2 * extra if extra else first
        return low


def qr_factor(xp, x):
    return xp.ascontiguousarray(xp.linalg.qr(x.transpose(0, 2, 1), mode="r"))


class _SignGroups:
    """Block pairs grouped by the signs of their 2b columns: one inner call per group.

    The inner kernel takes one sign vector for its whole batch; an SVD has one group, an
    HSVD with its signs partitioned at most four (the block at n₊ mixes them).
    """

    def __init__(self, signs, cols, order, xp):
        self.groups = []
        patterns = signs[cols]
        for pattern in np.unique(patterns, axis=0):
            members = np.flatnonzero((patterns == pattern).all(axis=1))
            whole = len(members) == len(cols)
            self.groups.append((None if whole else xp.asarray(members),
                                xp.asarray(pad_signs(pattern, order))))


def blocked_jacobi(gt, vt, signs, *, xp, strategy, variant, shorten, tol, max_sweeps):
    """Orthogonalize the columns of G = gtᵀ in place; apply the same to V = vtᵀ.

    Parameters
    ----------
    gt : (n, m) array of ``xp``, C-contiguous, m >= n
    vt : (n, n) array or None
    signs : (n,) NumPy array of the real dtype, ±1 (all +1 for the SVD)
    strategy, variant, shorten : str
        See :func:`gpusvd.jacobi.jacobi_svd`.
    tol : float or None
        Relative orthogonality threshold of the inner Jacobi; None: u·√(2b) (§4.3).
    max_sweeps : int
        Block sweeps allowed; :class:`gpusvd.LinAlgError` when they do not suffice.

    Returns
    -------
    gt, vt, signs with the n columns rotated (``gt`` and ``vt`` are the arrays passed in,
    updated in place), and the block sweeps run.
    """
    gt_in, vt_in = gt, vt
    n, m = gt.shape
    width = block_width(xp)
    blocks = block_count(-(-n // width))
    n_pad = blocks * width
    k = 2 * width
    dtype = gt.dtype
    real = np.finfo(dtype).dtype
    if n_pad > n:
        gt = xp.concatenate([gt, xp.zeros((n_pad - n, m), dtype)])
        if vt is not None:
            vt = xp.pad(vt, ((0, n_pad - n), (0, n_pad - n)))
            vt[xp.arange(n, n_pad), xp.arange(n, n_pad)] = 1
    signs_pad = np.concatenate([signs, np.ones(n_pad - n, real)])
    tol = orthogonality_tol(dtype, k) if tol is None else tol
    floor2 = float(column_floor(dtype)) ** 2
    gram_real = np.finfo(_GRAM_TYPE.get(np.dtype(dtype), dtype)).dtype
    shift = k * max(m, k) * float(np.finfo(gram_real).eps) / 2
    inner = inner_for(xp)
    k_inner = padded_order(inner_name(strategy), k)  # > k: R_pq filled with zero columns
    inner_pairs = inner_strategy(strategy, k_inner, xp)
    inner_sweeps = tunables.get().jacobi_inner_sweeps if variant == "full-block" else 1
    table = pivot_strategy(strategy, blocks)
    cols_host = (table[..., None] * width + np.arange(width)).reshape(len(table), -1, k)
    steps = [(xp.asarray(c), xp.asarray(t.reshape(-1).astype(np.int32)),
              _SignGroups(signs_pad, c, k_inner, xp)) for c, t in zip(cols_host, table)]
    eye = xp.repeat(xp.eye(k_inner, dtype=dtype)[None], cols_host.shape[1], axis=0)

    for sweep in range(1, max_sweeps + 1):
        proper = xp.zeros((), np.int64)
        for cols, blks, groups in steps:
            x = _gather(xp, gt, cols, blks, width)
            r, vloc = _shorten(xp, x, shorten, shift, eye)
            if k_inner > k:
                r, _ = pad_columns(r, k_inner, xp)
            for members, pattern in groups.groups:
                if members is None:
                    rotations, _ = inner(r, vloc, pattern, inner_pairs, inner_sweeps, tol,
                                         floor2)
                else:
                    rs, vs = r[members], vloc[members]
                    rotations, _ = inner(rs, vs, pattern, inner_pairs, inner_sweeps, tol,
                                         floor2)
                    vloc[members] = vs
                proper += rotations.sum()
            if k_inner > k:
                vloc = drop_columns(vloc[:, :k], kept_columns(vloc, k, xp), xp)
            vloc_t = vloc.transpose(0, 2, 1)
            _scatter(xp, gt, cols, blks, width, xp.matmul(vloc_t, x))
            if vt is not None:
                _scatter(xp, vt, cols, blks, width,
                         xp.matmul(vloc_t, _gather(xp, vt, cols, blks, width)))
        last = int(proper)  # the one host synchronization per block sweep (§4.5)
        progress.report("jacobi", sweep, max_sweeps, rotations=last)
        if last == 0:
            break
    else:
        raise LinAlgError(f"jacobi: no convergence in {max_sweeps} block sweeps "
                          f"({last} proper rotations in the last one); raise max_sweeps")
    gt, vt, signs = _drop_padding(gt, vt, signs_pad, n, xp)
    if gt is not gt_in:  # padded: the caller's arrays are updated in place all the same
        gt_in[...] = gt
        if vt is not None:
            vt_in[...] = vt
    return gt_in, vt_in, signs, sweep


def _gather(xp, a, cols, blks, width):
    """The rows ``cols`` (pairs, k) of ``a``, i.e. its block-columns ``blks``, as
    (pairs, k, row): NumPy fancy indexing, or one copy kernel on the GPU."""
    return _TWINS[xp.__name__].gather(a, cols, blks, width)


def _host_gather(a, cols, blks, width):
    return a[cols]


def _cuda_gather(a, cols, blks, width):
    return block_copy_cuda.gather_blocks(a, blks, width).reshape(cols.shape + a.shape[1:])


def _scatter(xp, a, cols, blks, width, values):
    """``a[cols] = values`` (the inverse of :func:`_gather`)."""
    _TWINS[xp.__name__].scatter(a, cols, blks, width, values)


def _host_scatter(a, cols, blks, width, values):
    a[cols] = values


def _cuda_scatter(a, cols, blks, width, values):
    block_copy_cuda.scatter_blocks(a, blks, width, values.reshape(-1, a.shape[1]))


class _Twins(NamedTuple):
    """The steps of the blocked Jacobi that differ between the devices."""

    inner_jacobi: Callable  # the inner pointwise Jacobi on all pairs (inner / inner_cuda)
    cholesky: Callable      # (xp, hs, shift): the lower Cholesky factors of the scaled Grams
    shorten: Callable       # (xp, x, shift, eye): R_pq by Cholesky and the start of V
    gather: Callable        # (a, cols, blks, width): the block-columns' rows
    scatter: Callable       # (a, cols, blks, width, values): their inverse


# The Numba (NumPy) or CUDA (CuPy) twin of each step, by the name of the array namespace.
_TWINS = {
    "numpy": _Twins(inner_numba.inner_jacobi, lambda xp, hs, shift: _host_cholesky(hs, shift),
                    _host_shorten, _host_gather, _host_scatter),
    "cupy": _Twins(inner_cuda.inner_jacobi, lambda xp, hs, shift: xp.linalg.cholesky(hs),
                   _cuda_shorten, _cuda_gather, _cuda_scatter),
}


def block_width(xp):
    """Columns per block-column b for arrays of ``xp`` (tunables ``jacobi_block_width``
    on the CPU, ``jacobi_block_width_gpu`` on the GPU)."""
    t = tunables.get()
    return t.jacobi_block_width if xp is np else t.jacobi_block_width_gpu


def _drop_padding(gt, vt, signs, n, xp):
    """Remove the zero columns added to fill the blocks (never rotated, only swapped)."""
    n_pad = gt.shape[0]
    if n_pad == n:
        return gt, vt, signs
    if vt is not None:
        keep = xp.flatnonzero(xp.abs(vt[:, n:]).sum(axis=1) == 0)
    else:
        # Without V the padding is told apart only as zero columns of sign +1; any such
        # column serves (all are zero and none carries a V).
        zero = xp.abs(gt).sum(axis=1) == 0
        plus = xp.asarray(signs > 0)
        drop_rank = xp.cumsum(zero & plus)
        keep = xp.flatnonzero(~(zero & plus & (drop_rank <= n_pad - n)))
    keep_host = to_host(keep)
    gt = gt[keep]
    vt = vt[keep][:, :n] if vt is not None else None
    return gt, vt, signs[keep_host]


def small_jacobi(g, signs, *, xp, strategy, tol, max_sweeps):
    """One-sided Jacobi of each matrix of a stack (batch, m, n), m >= n, in ONE inner call.

    The columns are filled with zeros to the order of :func:`.strategies.padded_order`
    and the padding dropped afterwards (:mod:`.padding`); the inner iteration runs to
    convergence (at most ``max_sweeps`` sweeps, then :class:`gpusvd.LinAlgError`).
    ``g`` is not changed. Returns new arrays g (batch, m, n), v (batch, n, n) and the
    signs (batch, n) NumPy of the columns, in their order after the Jacobi swaps.
    """
    batch, m, n = g.shape
    k = padded_order(inner_name(strategy), n)
    gp, vp = pad_columns(g, k, xp)
    signs_pad = pad_signs(signs, k)
    tol = orthogonality_tol(g.dtype, m) if tol is None else tol
    pairs = inner_strategy(strategy, k, xp)
    _, sweeps = inner_for(xp)(gp, vp, xp.asarray(signs_pad), pairs, max_sweeps + 1, tol,
                              float(column_floor(g.dtype)) ** 2)
    worst = int(sweeps.max()) if batch else 0
    if worst > max_sweeps:
        raise LinAlgError(f"jacobi: no convergence in {max_sweeps} sweeps of the pointwise "
                          "Jacobi method; raise max_sweeps")
    progress.report("jacobi", worst, max_sweeps)  # all sweeps ran in the one inner call
    if k == n:
        return gp, vp, np.tile(signs, (batch, 1))
    keep = kept_columns(vp, n, xp)
    if (signs == signs[0]).all():  # no host copy of keep: the signs stay as they were
        kept_signs = np.tile(signs, (batch, 1))
    else:
        kept_signs = signs_pad[to_host(keep)]
    return drop_columns(gp[:, :m], keep, xp), drop_columns(vp[:, :n], keep, xp), kept_signs
