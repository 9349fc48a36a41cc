"""One-sided Jacobi (H)SVD of the columns of a stack of matrices, and σ extraction.

The level between the public drivers and the kernels. Matrices with at most 2b columns
(b = :func:`.blocked.block_width`) go straight to the pointwise inner Jacobi, the whole stack
in ONE batched call (many small matrices, one launch on the GPU); larger ones go one by
one through the blocked method (:mod:`.blocked`). Afterwards σᵢ = ‖gᵢ‖ (the paper's
Sigma kernel, with DRDSSQ norms, Appendix A), sorted descending with their columns.
"""

from typing import Any, NamedTuple

import numpy as np

from .._core.backend import to_host
from .blocked import block_width, blocked_jacobi, small_jacobi
from .norms import column_norms


class Options(NamedTuple):
    """The user's choices, validated by the public drivers (see ``jacobi_svd``)."""

    strategy: str
    variant: str
    shorten: str
    vectors: str
    tol: Any
    max_sweeps: int
    precondition: bool


class Orthogonalized(NamedTuple):
    g: Any        # (batch, m, n): G·V, columns sorted by descending norm
    s: Any        # (batch, n): the column norms σ
    v: Any        # (batch, n, n) or None: the accumulated transformations
    signs: Any    # (batch, n) NumPy: the signs paired with the columns


def _small(g, want_v, signs, xp, options):
    g, v, signs = small_jacobi(g, signs, xp=xp, strategy=options.strategy, tol=options.tol,
                               max_sweeps=options.max_sweeps)
    return g, (v if want_v else None), signs


def _blocked(g, want_v, signs, xp, options):
    gs, vs, ss = [], [], []
    n = g.shape[2]
    for one in g:
        gt = xp.array(one.T, order="C", copy=True)
        vt = xp.eye(n, dtype=g.dtype) if want_v else None
        gt, vt, sg, _ = blocked_jacobi(
            gt, vt, signs, xp=xp, strategy=options.strategy, variant=options.variant,
            shorten=options.shorten, tol=options.tol, max_sweeps=options.max_sweeps)
        gs.append(gt.T)
        vs.append(None if vt is None else vt.T)
        ss.append(sg)
    return (xp.stack(gs), xp.stack(vs) if want_v else None, np.stack(ss))


def orthogonalize(g, signs, xp, *, want_v, options):
    """Jacobi-orthogonalize the columns of each matrix of ``g`` (batch, m, n), m >= n >= 1.

    ``signs`` (n,) NumPy ±1 of the real dtype (all +1 for the SVD). ``g`` is not changed.
    Returns :class:`Orthogonalized` with columns sorted by descending σ (stable, so the
    signs stay paired with their columns).
    """
    if g.shape[2] <= 2 * block_width(xp):
        g, v, signs = _small(g, want_v, signs, xp, options)
    else:
        g, v, signs = _blocked(g, want_v, signs, xp, options)
    s = column_norms(g, xp)
    order = xp.argsort(-s, axis=1, kind="stable")
    s = xp.take_along_axis(s, order, axis=1)
    g = xp.take_along_axis(g, order[:, None, :], axis=2)
    if v is not None:
        v = xp.take_along_axis(v, order[:, None, :], axis=2)
    signs = np.asarray(signs)
    if signs.size and not (signs == signs.flat[0]).all():  # HSVD: signs follow columns
        signs = np.take_along_axis(signs, to_host(order), axis=1)
    return Orthogonalized(g, s, v, signs)

