"""One outer block step on one rank of the multi-GPU Jacobi level (paper 003, §5).

The rank holds the two block-columns G_A = [G_p G_q] (k columns) and V_A, transposed
(column j of G_A is row j of ``gt``, as in :mod:`gpusvd.jacobi.blocked`). Phases:

(0)     the Gram matrix H = G_Aᴴ·G_A (of R from the QR factorization with
        ``shorten="qr"``), and the test of the pair: when every pair of its columns is
        already relatively orthogonal, |h_ij| <= tol·√h_ii·√h_jj, the step ends here;
(1)     shorten: H = Rᴴ·R by the Cholesky factorization, or R of the QR factorization
        of G_A, through the single-GPU level's own factorization (scaled Gram matrix,
        shifted where singular);
(2a)    the single-GPU blocked Jacobi method on R, accumulating V̂: the block-oriented
        variant runs ``pair_sweeps`` block sweeps (1, the paper's limit, by default),
        the full-block variant at most ``jacobi_inner_sweeps`` (the paper's 30);
(3)     postmultiply: G_A ← G_A·V̂, V_A ← V_A·V̂.

The test of phase (0) departs from the paper, which runs every step in full and stops
only after a whole outer sweep without a proper rotation (§4.5). That last sweep, and
the steps of the sweep before it whose pair is already orthogonal, would cost a
Cholesky factorization, a block sweep and two postmultiplications each and change the
columns only by non-proper rotations (cs = 1) of pairs orthogonal to working
precision. Its threshold is u·√m (m rows), LAPACK dgesvj's convergence test, which the
single-process driver also uses for small matrices: the m-long dot products of H alone
err by about that much, so the inner Jacobi's u·√(2b) on the shortened pair would fail
on converged pairs (§4.5: "even the numerically orthogonal columns ... fail the relative
orthogonality criterion"). A user's ``tol`` replaces u·√m. The test reads H, which the
Cholesky path forms anyway. Measured on 2 CPU ranks (float64 Gaussian): 5
of the 24 steps of 8 outer sweeps end after the test at n = 1024, 4 at 2048; 18 % and
14 % fewer flops per rank, with the same accuracy.

The rank's count of proper rotations (§4.5) is reduced to "any or none": the outer
sweeps stop when no rank applied one, and that is all the count decides.

R is filled with zero columns to an order the block level takes without filling
(:func:`gpusvd.jacobi.strategies.block_count` blocks of ``blocked.block_width(xp)``,
``jacobi_block_width`` on the CPU and ``jacobi_block_width_gpu`` on the GPU), so that
``blocked_jacobi`` updates it in place, and the filling is dropped from V̂ by
:mod:`gpusvd.jacobi.padding`. Phase (2b) (``solve``: V̂ from R·V̂ = Û·Σ̂) is not
offered: V̂ is always accumulated.
"""

import numpy as np

from .._core import tunables
from .._core.errors import LinAlgError
from ..jacobi import blocked
from ..jacobi.padding import drop_columns, kept_columns, pad_columns, pad_signs
from ..jacobi.rotations import orthogonality_tol
from ..jacobi.strategies import block_count


def _gram(gt, xp, how):
    """(H, R or None): the Gram matrix of the pair's columns, k×k in the Gram type of
    :mod:`gpusvd.jacobi.blocked`, and R of the QR factorization (``how="qr"``, where H
    is Rᴴ·R) or None (Cholesky: R comes from H, only when the step needs it).

    Thin wrappers over :func:`gpusvd.jacobi.blocked.gram` and
    :func:`gpusvd.jacobi.blocked.qr_factor`.
    """
    if how == "qr":
        r = blocked.qr_factor(xp, gt[None])
        return blocked.gram(xp, r.swapaxes(-1, -2))[0], r[0]
    return blocked.gram(xp, gt[None])[0], None


def _cholesky(h, m, dtype, xp):
    """R (k×k, ``dtype``) with Rᴴ·R = H, scaled and shifted as ``blocked_jacobi`` does
    (the shift k·max(m, k)·ε/2 for this pair's order k and length m)."""
    k = h.shape[0]
    shift = k * max(m, k) * float(np.finfo(dtype).eps) / 2
    return blocked.factor_gram(xp, h[None], shift, dtype)[0]


def _orthogonal(h, tol, xp):
    """Whether no two columns with Gram matrix ``h`` fail the relative orthogonality
    test |h_ij| > tol·√h_ii·√h_jj of the inner Jacobi (§4.3, step 2; zero columns pass).
    One host synchronization on the GPU."""
    d = xp.sqrt(xp.diagonal(h).real)
    off = xp.abs(h)
    diag = xp.arange(h.shape[0])
    off[diag, diag] = 0
    return not bool((off > (tol * d)[:, None] * d[None, :]).any())


def _local_sweeps(r, signs, xp, options, limit):
    """At most ``limit`` block sweeps of the single-GPU Jacobi on the columns of ``r``.

    Returns (V̂ transposed, k×k; whether a proper rotation was applied).
    ``blocked_jacobi`` returns after the first block sweep without a proper rotation
    and raises ``LinAlgError`` when its last allowed sweep still applied one; here the
    limit is the variant's, not a failure, and the work is in ``rt``/``vt`` either way
    (updated in place: the order needs no filling there).
    """
    k = r.shape[0]
    width = blocked.block_width(xp)  # the GPU driver blocks by jacobi_block_width_gpu
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


def outer_block_step(gt, vt, signs, xp, options, pair_sweeps=1, skip_orthogonal=True):
    """Phases (0)–(3) on the rank's pair; returns new (gt, vt, rotated, skipped).

    Parameters
    ----------
    gt : (k, m) array of ``xp``
        The rank's two block-columns of G, transposed.
    vt : (k, n) array or None
        The same columns of V, transposed.
    signs : (k,) NumPy ±1 of the real dtype
    options : :class:`gpusvd.jacobi.orthogonalize.Options`
    pair_sweeps : int
        Block sweeps of the block-oriented variant on the shortened pair.
    skip_orthogonal : bool
        End the step after phase (0) when the pair is already orthogonal.
    """
    k, m = gt.shape
    if k < 2:
        return gt, vt, False, True
    if options.variant == "block-oriented":
        limit = pair_sweeps
    else:
        limit = tunables.get().jacobi_inner_sweeps
    h, r = _gram(gt, xp, options.shorten)
    tol = orthogonality_tol(gt.dtype, m) if options.tol is None else options.tol
    if skip_orthogonal and _orthogonal(h, tol, xp):
        return gt, vt, False, True
    if r is None:
        r = _cholesky(h, m, gt.dtype, xp)
    # V̂ is applied even without a proper rotation: rotations with cs = 1 (tn ≠ 0) and
    # the sorting swaps still change the columns (§4.3, steps 4–6).
    v_hat_t, rotated = _local_sweeps(r, signs, xp, options, limit)
    gt = xp.matmul(v_hat_t, gt)
    if vt is not None:
        vt = xp.matmul(v_hat_t, vt)
    return gt, vt, rotated, False
