"""One outer block step on one rank of the multi-GPU Jacobi level (paper 003, §5).

The rank holds the two block-columns G_A = [G_p G_q] (k columns) and V_A, transposed
(column j of G_A is row j of ``gt``, as in :mod:`gpusvd.jacobi.blocked`). Phases:

(0)–(1) shorten: G_Aᴴ·G_A = Rᴴ·R by the Cholesky factorization of the Gram matrix, or
        R of the QR factorization of G_A (``shorten="qr"``), through the single-GPU
        level's own factorization (scaled Gram matrix, shifted where singular);
(2a)    the single-GPU blocked Jacobi method on R, accumulating V̂: the block-oriented
        variant runs one block sweep (the paper's limits of 1 at both levels), the
        full-block variant at most ``jacobi_inner_sweeps`` (the paper's 30);
(3)     postmultiply: G_A ← G_A·V̂, V_A ← V_A·V̂.

The rank's count of proper rotations (§4.5) is reduced to "any or none": the outer
sweeps stop when no rank applied one, and that is all the count decides.

R is filled with zero columns to an order the block level takes without filling
(:func:`gpusvd.jacobi.strategies.block_count` blocks of ``jacobi_block_width``), so
that ``blocked_jacobi`` updates it in place, and the filling is dropped from V̂ by
:mod:`gpusvd.jacobi.padding`. Phase (2b) (``solve``: V̂ from R·V̂ = Û·Σ̂) is not
offered: V̂ is always accumulated.
"""

import numpy as np

from .._core import tunables
from .._core.errors import LinAlgError
from ..jacobi import blocked
from ..jacobi.padding import drop_columns, kept_columns, pad_columns, pad_signs
from ..jacobi.strategies import block_count


def _shorten(gt, xp, how):
    """R (k×k) with Rᴴ·R = G_Aᴴ·G_A; the blocked level's factorizations, batch of one.

    A thin wrapper over the private ``_cholesky_factor`` and ``_qr_factor`` of
    :mod:`gpusvd.jacobi.blocked` (to be made public there), with the singular-pair shift
    that ``blocked_jacobi`` uses, for this pair's order k and length m.
    """
    k, m = gt.shape
    if how == "qr":
        return blocked._qr_factor(xp, gt[None])[0]
    shift = k * max(m, k) * float(np.finfo(gt.dtype).eps) / 2
    return blocked._cholesky_factor(xp, gt[None], shift)[0]


def _local_sweeps(r, signs, xp, options, limit):
    """At most ``limit`` block sweeps of the single-GPU Jacobi on the columns of ``r``.

    Returns (V̂ transposed, k×k; whether a proper rotation was applied).
    ``blocked_jacobi`` returns after the first block sweep without a proper rotation
    and raises ``LinAlgError`` when its last allowed sweep still applied one; here the
    limit is the variant's, not a failure, and the work is in ``rt``/``vt`` either way
    (updated in place: the order needs no filling there).
    """
    k = r.shape[0]
    width = tunables.get().jacobi_block_width
    order = block_count(-(-k // width)) * width
    rp, vp = pad_columns(r[None], order, xp)
    rt = xp.ascontiguousarray(rp[0].T)
    vt = xp.ascontiguousarray(vp[0])
    try:
        *_, sweeps = blocked.blocked_jacobi(
            rt, vt, pad_signs(signs, order), xp=xp, strategy=options.strategy,
            variant=options.variant, shorten=options.shorten, tol=options.tol,
            max_sweeps=limit)
        rotated = sweeps > 1
    except LinAlgError:
        rotated = True
    v_hat = vt.T[None]
    keep = kept_columns(v_hat, k, xp)
    return drop_columns(v_hat[:, :k], keep, xp)[0].T, rotated


def outer_block_step(gt, vt, signs, xp, options):
    """Phases (0)–(3) on the rank's pair; returns new (gt, vt, rotated).

    Parameters
    ----------
    gt : (k, m) array of ``xp``
        The rank's two block-columns of G, transposed.
    vt : (k, n) array or None
        The same columns of V, transposed.
    signs : (k,) NumPy ±1 of the real dtype
    options : :class:`gpusvd.jacobi.orthogonalize.Options`
    """
    if gt.shape[0] < 2:
        return gt, vt, False
    limit = 1 if options.variant == "block-oriented" else tunables.get().jacobi_inner_sweeps
    r = _shorten(gt, xp, options.shorten)
    # V̂ is applied even without a proper rotation: rotations with cs = 1 (tn ≠ 0) and
    # the sorting swaps still change the columns (§4.3, steps 4–6).
    v_hat_t, rotated = _local_sweeps(r, signs, xp, options, limit)
    gt = xp.matmul(v_hat_t, gt)
    if vt is not None:
        vt = xp.matmul(v_hat_t, vt)
    return gt, vt, rotated
