"""Blocked Gram–Schmidt for the QUIC-SVD basis V̂ (paper 001 §2.2; Jalby & Philippe 1991).

The basis is stored as the first ``k`` columns of an n × capacity array in Fortran
order, so that ``V̂`` and each of its blocks are contiguous GEMM operands. A set X of new
candidate vectors (the node means of one step of the cosine tree) is orthogonalized
against the basis one block of ``quic_gs_block`` vectors at a time: classical
Gram–Schmidt within a block (one pair of GEMMs, ``X -= V_j (V_jᵀ X)``), modified
Gram–Schmidt across blocks (each block sees X already cleaned of the blocks before it),
as the paper proposes. On the GPU the block is ``quic_gs_block_gpu`` (the whole basis by
default): with the second pass below the block size does not matter for stability,
and one block is two large GEMMs instead of k/20 launches of memory-bound ones.

``Basis.extend`` then does, per call:

1. X is projected out twice up front — "twice is enough" (Kahan, Parlett 1980 §6-9;
   Giraud, Langou & Rozložník 2005 for classical Gram–Schmidt): after the first pass
   X' keeps components along V̂ of order u·‖X‖, which are large relative to X' when the
   candidate was mostly in span(V̂) (the common case: a child's mean differs from the
   basis by a small fraction of its length); the second pass leaves components of order
   u·‖X'‖.
2. One Householder QR, X'' = Q·R (stable, one library call: the paper adds one vector
   at a time, the driver a block of them).
3. Drops, from R's diagonal against the candidates' original norms (one host
   synchronization): a candidate whose |r_jj| is at the rounding level of the
   projection is already represented by the basis.
4. The kept columns of Q. When the kept candidates are the first ones (the common case:
   ``growth`` puts the sibling likely to be dependent last), these are Q's first columns.
   Otherwise not ``Q[:, keep]``: a kept column after a dropped one leans on the
   arbitrary direction Householder gave the dropped one, which has components along V̂.
   X''_keep = Q·R[:, keep] exactly, so a QR of the small c × kept factor,
   R[:, keep] = Q_s·R_s, gives X''_keep = (Q·Q_s)·R_s and Q·Q_s is what is wanted.
5. A kept q_j has components along V̂ of order u·‖X'_j‖/|r_jj|. Where |r_jj| fell below
   1/√2 of ‖X'_j‖ (the tunable ``quic_reorthogonalize_below``; Daniel, Gragg, Kaufman &
   Stewart, Math. Comp. 30 (1976)) — the
   candidate was nearly dependent on the others of its block — the kept Q is projected
   out once more and made orthonormal again by Newton–Schulz steps, which cost two
   GEMMs each and no factorization.
"""

import math

import numpy as np

from .._core import tunables
from .._core.backend import array_namespace, to_host

# A remainder below DROP_FACTOR·u·sqrt(k + c)·‖x‖ is what one projection against k + c
# orthonormal vectors leaves of a vector already in their span (rounding grows like the
# square root of the number of terms); such a candidate adds nothing and is dropped.
DROP_FACTOR = 16.0
# Newton–Schulz steps Y ← Y·(3I − YᵀY)/2 after the extra projection of step 5. A kept
# column has |r_jj| > DROP_FACTOR·u·‖x‖, so its components along V̂ are at most
# u/(DROP_FACTOR·u) = 1/16 and the projected Y has singular values 1 − e with e ≤ 1/512;
# each step maps e to about 1.5·e² (1/512 → 6e-6 → 5e-11): two reach any working
# precision down to float64's 1.1e-16 within a factor of a few.
NEWTON_SCHULZ_STEPS = 2


def _column_norms(x, xp):
    # A matrix–vector product (BLAS's, nothing to compile): a CuPy column sum is a kernel
    # compiled per size class on its first use (2.5 s of the H100's first svd_lowrank).
    return xp.sqrt(xp.ones(x.shape[0], x.dtype) @ (x * x))


def _newton_schulz(y, steps):
    """Y·(YᵀY)^(−1/2) by ``steps`` Newton–Schulz iterations, for Y close to orthonormal."""
    for _ in range(steps):
        y = 1.5 * y - 0.5 * (y @ (y.T @ y))
    return y


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

    @classmethod
    def of(cls, v, limit):
        """A basis holding the orthonormal columns of ``v`` (n × k), as they are."""
        basis = cls(v.shape[0], v.dtype, array_namespace(v), limit)
        basis._reserve(v.shape[1])
        basis._v[:, :v.shape[1]] = v
        basis.k = v.shape[1]
        return basis

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

    def _block(self):
        t = tunables.get()
        if self.xp.__name__ == "cupy":
            return t.quic_gs_block_gpu if t.quic_gs_block_gpu > 0 else max(self.k, 1)
        return max(1, t.quic_gs_block)

    def project_out(self, x):
        """X − V̂V̂ᵀX by blocks: classical within a block, modified across blocks."""
        block = self._block()
        for j0 in range(0, self.k, block):
            vb = self._v[:, j0:min(j0 + block, self.k)]
            x = x - vb @ (vb.T @ x)
        return x

    def extend(self, x):
        """Orthonormalize the columns of ``x`` (n × c) against V̂ and append them.

        Candidates already in the span of V̂ and of the candidates before them (to
        rounding) are dropped. Returns the number of vectors added.
        """
        xp = self.xp
        x = x[:, :self.n]  # a QR of more than n columns has at most n of them
        c = x.shape[1]
        if c == 0 or self.full:
            return 0
        x = x.astype(self.dtype, copy=False)
        norms0 = _column_norms(x, xp)
        x = self.project_out(x)
        norms1 = _column_norms(x, xp)
        x = self.project_out(x)
        q, r = xp.linalg.qr(x)
        kept = xp.abs(xp.diagonal(r))
        norms0, norms1, kept = to_host(xp.stack([norms0, norms1, kept]).astype(xp.float64))
        u = float(np.finfo(self.dtype).eps)
        drop_level = DROP_FACTOR * u * math.sqrt(self.k + c)
        keep = (norms0 > 0) & (kept > drop_level * norms0)
        keep &= np.cumsum(keep) <= self.limit - self.k
        added = int(np.count_nonzero(keep))
        if added == 0:
            return 0
        if keep[:added].all():
            q_keep = q[:, :added]
        else:
            q_small, _ = xp.linalg.qr(r[:, xp.asarray(np.flatnonzero(keep))])
            q_keep = q @ q_small
        if (kept[keep] < tunables.get().quic_reorthogonalize_below * norms1[keep]).any():
            q_keep = _newton_schulz(self.project_out(q_keep), NEWTON_SCHULZ_STEPS)
        self._reserve(added)
        self._v[:, self.k:self.k + added] = q_keep
        self.k += added
        return added
