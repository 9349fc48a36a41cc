"""Blocked Gram–Schmidt for the QUIC-SVD basis V̂ (paper 001 §2.2; Jalby & Philippe 1991).

The basis is stored as the first ``k`` columns of an n × capacity array in Fortran
order, so that ``V̂`` and each of its blocks are contiguous GEMM operands. A set X of new
candidate vectors (the node means of one step of the cosine tree) is orthogonalized
against the basis one block of about 20 vectors at a time: classical Gram–Schmidt within
a block (one pair of GEMMs, ``X -= V_j (V_jᵀ X)``), modified Gram–Schmidt across blocks
(each block sees X already cleaned of the blocks before it), as the paper proposes.

Departures from the paper, each for a reason:

- The paper adds one vector at a time. The driver splits several nodes per step, so X is
  a block of candidates and its own orthonormalization is a Householder QR (stable, one
  library call) instead of a loop over its columns.
- A candidate that loses most of its norm (its remainder is below ``1/√2`` of its
  length: the criterion of Daniel, Gragg, Kaufman & Stewart, Math. Comp. 30 (1976)) is
  orthogonalized a second time — "twice is enough" — and one whose remainder is at the
  rounding level of the projection is dropped as already represented by the basis.
"""

import math

import numpy as np

from .._core import tunables
from .._core.backend import to_host

# A candidate loses "most of its norm" when its remainder falls below this fraction of
# its length: then one projection may leave components along V̂ of order u·‖x‖/‖x'‖, and
# a second one is done (Daniel, Gragg, Kaufman & Stewart 1976, Parlett 1980 §6-9).
REORTHOGONALIZE_BELOW = 1.0 / math.sqrt(2.0)
# A remainder below DROP_FACTOR·u·sqrt(k + c)·‖x‖ is what one projection against k + c
# orthonormal vectors leaves of a vector already in their span (rounding grows like the
# square root of the number of terms); such a candidate adds nothing and is dropped.
DROP_FACTOR = 16.0


class Basis:
    """An orthonormal basis V̂ (n × k) grown block by block, on NumPy or CuPy.

    Parameters
    ----------
    n : int
        Length of the basis vectors.
    dtype : numpy.dtype
        Working precision.
    xp : module
        ``numpy`` or ``cupy``.
    limit : int
        The most vectors the basis may hold (at most ``n``).
    """

    def __init__(self, n, dtype, xp, limit):
        self.xp = xp
        self.n = n
        self.dtype = np.dtype(dtype)
        self.limit = min(limit, n)
        self.k = 0
        self._v = xp.zeros((n, min(self.limit, 64)), dtype=self.dtype, order="F")

    @property
    def v(self):
        """The basis V̂, n × k with orthonormal columns (a view)."""
        return self._v[:, :self.k]

    @property
    def full(self):
        return self.k >= self.limit

    def _reserve(self, extra):
        need = min(self.k + extra, self.limit)
        if need <= self._v.shape[1]:
            return
        cap = min(self.limit, max(need, 2 * self._v.shape[1]))
        grown = self.xp.zeros((self.n, cap), dtype=self.dtype, order="F")
        grown[:, :self.k] = self._v[:, :self.k]
        self._v = grown

    def project_out(self, x):
        """X − V̂V̂ᵀX by blocks: classical within a block, modified across blocks."""
        block = max(1, tunables.get().quic_gs_block)
        for j0 in range(0, self.k, block):
            vb = self._v[:, j0:min(j0 + block, self.k)]
            x = x - vb @ (vb.T @ x)
        return x

    def extend(self, x):
        """Orthonormalize the columns of ``x`` (n × c) against V̂ and append them.

        Candidates already in the span of V̂ (to rounding) are dropped. Returns the number
        of vectors added.
        """
        xp = self.xp
        x = x[:, :self.n]  # a QR of more than n columns has at most n of them
        c = x.shape[1]
        if c == 0 or self.full:
            return 0
        x = x.astype(self.dtype, copy=False)
        norms0 = xp.sqrt((x * x).sum(axis=0))
        x = self.project_out(x)
        q, r = xp.linalg.qr(x)
        kept = xp.abs(xp.diagonal(r))
        host = to_host(xp.stack([norms0, kept]).astype(xp.float64))
        norms0, kept = host[0], host[1]
        u = float(np.finfo(self.dtype).eps)
        drop_level = DROP_FACTOR * u * math.sqrt(self.k + c)
        keep = (norms0 > 0) & (kept > drop_level * norms0)
        keep &= np.cumsum(keep) <= self.limit - self.k
        if not keep.any():
            return 0
        if keep.all():
            q_keep = q
        else:
            # Not q[:, keep]: a column after a dropped one may lean on the arbitrary
            # direction QR gave the dropped one. The kept columns' diagonal only grows.
            q_keep, _ = xp.linalg.qr(x[:, xp.asarray(np.flatnonzero(keep))])
        if (kept[keep] < REORTHOGONALIZE_BELOW * norms0[keep]).any():
            q_keep, _ = xp.linalg.qr(self.project_out(q_keep))
        added = q_keep.shape[1]
        self._reserve(added)
        self._v[:, self.k:self.k + added] = q_keep
        self.k += added
        return added

