"""The polar SVD over MPI ranks (``method="polar"``; ``method="auto"``'s for A spread over
the ranks, ``rows=True``, and below the Golub–Reinsch crossovers), one block of rows of A
per rank.

SPMD, as :mod:`.jacobi`: every rank calls :func:`gpusvd.distributed.svd`; A is needed on
``root`` only and the result comes back there (None on the other ranks). Root takes A
through the front end and prepares it as the one-device stack engine does
(:func:`gpusvd.polar.svd.decompose`): a wide A through Aᴴ, then A scaled by a power of two
to max|A| in [1/2, 1) and taken to float64 (complex128)
(:func:`gpusvd.polar.estimates.unit_scaled`). Its rows go out in consecutive blocks, one
per rank (a rank may hold none).

QDWH (:mod:`gpusvd.polar.qdwh`) runs on Y = Aᴴ, whose columns are the ranks' rows, with
the stack engine's steps: the one product in them that spans the rows is the Gram
product Y·Yᴴ = Σ_r Y_r·Y_rᴴ (n×n), in the estimates of α and l₀, in each Cholesky step,
in the three passes of each QR step's shifted CholeskyQR3 of [√c·X; I] and in the final
orthonormality test. :class:`_RowsEngine` sums it over the ranks
(:meth:`.comm.Comm.summed`: NCCL's all-reduce, or MPI's reduce and broadcast), so that
every rank holds the same bits and takes the same Cholesky factors and the same steps.
Everything else in a step is a product or a triangular solve of the rank's own columns:
the QR step shares out the rows of its I as those of X (each rank solves for its own),
and sums the ranks' shares of Q₂ (the rows of Q for I, n×n) into place for the product
Q₂·Q₁ᴴ. A real iterate takes the Gram products as syrk, as on one device.

Then H = U_pᴴ·A = Σ_r U_p,rᴴ·A_r, summed the same way; root takes its eigendecomposition
(:func:`gpusvd.polar.svd.descending_eigh`, on its one device) and sends V; each rank forms its rows
of U = U_p·V; root gathers them, checks U's column norms and completes U as the stack
engine does (:func:`gpusvd.polar.svd.orthonormal_columns`).

Communication per QDWH step: one n×n sum (Cholesky step) or four (QR step), against
O((m + n)·n²/ranks) of products on each rank.

A tall A (m > QR_FIRST_RATIO·n) takes its QR first, as on one device: shifted
CholeskyQR3 over the ranks (three n×n sums; each rank's rows of Q stay its own), then
R's SVD on root by the one-device polar method, and U = Q·U_R on each rank: fewer flops
than QDWH on the tall A, and about three copies of a rank's rows in memory at the peak
where QDWH on them took six. Where CholeskyQR fails (A numerically rank deficient in
float64), QDWH over the ranks takes A as above.
"""

import numpy as np

from .._core import profile
from .._core.backend import to_host
from .._core.scaling import times_power_of_two
from .._core.validation import not_finite
from ..polar import estimates, qdwh
from ..polar.cholesky_qr import cholesky_qr, shifted_cholesky_qr
from ..polar.svd import (QR_FIRST_RATIO, descending_eigh, orthonormal_columns,
                         orthonormal_tolerance, svd as one_device)
from .comm import WHAT, consecutive_blocks, delivered, received


class _RowsEngine(qdwh.StackEngine):
    """The stack engine's QDWH steps on one matrix whose Y = Aᴴ has its columns (A's
    rows) spread over the ranks, each rank's work on its own columns only (module
    docstring): every Gram product summed over the ranks (:meth:`summed`, the stack
    engine's hook), and the rows of the QR step's I in [√c·X; I] shared out as X's are."""

    def __init__(self, comm, rows, root):
        super().__init__(comm.xp)
        self.comm, self.root, self._rows = comm, root, rows

    def summed(self, part):
        return self.comm.summed(part, self.root)

    def _identity_rows(self, n):
        """This rank's share of the n rows of I (:func:`.comm.consecutive_blocks`)."""
        return consecutive_blocks(n, self.comm.size)[self.comm.rank]

    def stacked_q(self, y, c):
        """This rank's columns of Qᴴ for [√c·X; I] = Q·R: its rows of X, then its share
        of I's rows (:meth:`_identity_rows`), by shifted CholeskyQR3 with summed Gram
        products; no rank repeats another's work on I."""
        xp = self.xp
        _, n, _ = y.shape
        i0, i1 = self._identity_rows(n)
        eye = xp.eye(n, i1 - i0, -i0, dtype=y.dtype)
        wh = xp.concatenate([y * c ** 0.5, eye[None]], axis=2)
        norm2 = 1.0 + xp.asarray(c).reshape(-1) * qdwh.X_NORM2_BOUND
        return shifted_cholesky_qr(xp, wh, norm2, summed=self.summed, rows=self._rows + n)

    def q_product_plus(self, qh, alpha, y, beta):
        """alpha·Q₂·Q₁,rᴴ + beta·Y_r: Q₂ (the rows of Q for I) whole on every rank, its
        ranks' shares summed into place."""
        xp = self.xp
        _, n, m = y.shape
        i0, i1 = self._identity_rows(n)
        q2h = xp.zeros((n, n), y.dtype)
        q2h[:, i0:i1] = qh[0, :, m:]
        q2 = self.summed(q2h).conj().T
        return y * beta + (q2 @ qh[0, :, :m])[None] * alpha


class _Job:
    """Root's side: the received input, its tall float64 (complex128) form and scale."""

    def __init__(self, a, comm, full_matrices, compute_uv, check_finite):
        self.received = received(a, comm, check_finite, WHAT)
        self.xp, self.full, self.compute_uv = comm.xp, full_matrices, compute_uv
        stack = self.received.stack
        _, m, n = stack.shape
        self.wide = m < n
        self.a = stack.conj().swapaxes(-1, -2) if self.wide else stack
        self.dtype = self.a.dtype
        self.trivial = min(m, n) == 0 or not bool(self.xp.any(self.a))
        self.a64, self.exponent = None, 0
        if not self.trivial:
            self.a64, exponent = estimates.unit_scaled(self.a, self.xp)
            self.exponent = int(to_host(exponent)[0])

    def plan(self):
        """What every rank needs to know before the rows arrive."""
        _, m, n = self.a.shape
        wide = np.complex128 if self.dtype.kind == "c" else np.float64
        return m, n, self.dtype.str, np.dtype(wide).str, self.trivial

    def finish(self, u, s, vh):
        """The result in the input's array type: S scaled back, U and Vh as the caller's
        matrix (not Aᴴ's)."""
        if self.compute_uv and self.wide:
            u, vh = vh.conj().T, u.conj().T
        return delivered(self.received, self.exponent, self.compute_uv, u, s, vh)

    def trivial_result(self):
        """An empty or zero A: the one-device path's result (identities and zeros)."""
        u, s, vh = one_device(self.a, self.xp, full_matrices=self.full,
                              compute_uv=self.compute_uv)
        s = s[0]
        if not self.compute_uv:
            return self.received.values(s[None])
        return self.finish(u[0], s, vh[0])


def _factor(comm, root, mine, m, n, dtype, compute_uv, everywhere):
    """QDWH over the ranks' rows ``mine`` (this rank's block of the scaled float64 A), H,
    its eigendecomposition on root and each rank's rows of U = U_p·V (module docstring).
    Returns (U rows, |λ|, V, converged); |λ| and V on root only, or on every rank with
    ``everywhere``; U rows and V None without ``compute_uv``."""
    xp = comm.xp
    eps = float(np.finfo(dtype).eps)
    y = mine.conj().T.copy()[None]   # a new array: QDWH overwrites it
    uh, converged = qdwh.polar_factor(xp, y, eps, engine=_RowsEngine(comm, m, root))
    with profile.phase("polar_h", xp):
        h = comm.summed(uh[0] @ mine, root)
    signed = lam = v = None
    with comm.phase(), profile.phase("eigh", xp):
        if comm.rank == root:
            h = ((h + h.conj().T) * 0.5).astype(dtype)
            lam, v = descending_eigh(h, xp, vectors=compute_uv)
            if compute_uv:   # σ = |λ| with u = −U_p·v for λ < 0 (rounding), as svd.py
                signed = xp.ascontiguousarray(v * xp.where(lam < 0, -1, 1).astype(dtype))
    real = np.finfo(dtype).dtype
    if everywhere:
        lam = comm.broadcast(lam, root, (n,), real)
    if not compute_uv:
        return None, None if lam is None else xp.abs(lam), None, converged[0]
    signed = comm.broadcast(signed, root, (n, n), dtype)
    if everywhere and comm.rank != root:
        v = signed * xp.where(lam < 0, -1, 1).astype(dtype)
    with profile.phase("polar_u", xp):
        u_mine = xp.ascontiguousarray(uh[0].conj().T).astype(dtype) @ signed
    return u_mine, None if lam is None else xp.abs(lam), v, converged[0]


def _tall(comm, root, mine, m, n, dtype, compute_uv, everywhere):
    """A tall A (m > QR_FIRST_RATIO·n) as one device takes it: A = Q·R by shifted
    CholeskyQR3 over the ranks (:func:`gpusvd.polar.cholesky_qr.cholesky_qr`, its Gram
    products summed, each rank's rows of Q its own), the SVD of R on root (the one-device
    polar method on n×n), U = Q·U_R on each rank. Returns what :func:`_factor` returns,
    or None where CholeskyQR fails (A numerically rank deficient in float64), for QDWH
    over the ranks to take A."""
    xp = comm.xp
    found = cholesky_qr(mine, xp, gram_of=lambda w: comm.summed(w.conj().T @ w, root),
                        rows=m)
    if found is None:
        return None
    q_mine, r = found
    u_r = s = v = None
    with comm.phase():
        if comm.rank == root:
            u_r, s, vh = one_device(r.astype(dtype)[None], xp, full_matrices=False,
                                    compute_uv=compute_uv)
            s = s[0]
            if compute_uv:
                u_r, v = xp.ascontiguousarray(u_r[0]), xp.ascontiguousarray(vh[0].conj().T)
    if everywhere:
        s = comm.broadcast(s, root, (n,), np.finfo(dtype).dtype)
    if not compute_uv:
        return None, s, None, True
    u_r = comm.broadcast(u_r, root, (n, n), dtype)
    if everywhere:
        v = comm.broadcast(v, root, (n, n), dtype)
    return q_mine.astype(dtype, copy=False) @ u_r, s, v, True


def _decomposed(comm, root, mine, m, n, dtype, compute_uv, everywhere):
    """:func:`_tall` where A is tall and CholeskyQR takes it, else :func:`_factor`."""
    found = None
    if m > QR_FIRST_RATIO * n:
        found = _tall(comm, root, mine, m, n, dtype, compute_uv, everywhere)
    if found is None:
        found = _factor(comm, root, mine, m, n, dtype, compute_uv, everywhere)
    return found


def _decompose(comm, root, job, m, n, dtype, wide_dtype, compute_uv, full_matrices):
    """A on root: its rows sent out, :func:`_decomposed`, U's rows gathered and completed
    on root; root's (U, S, Vh), None elsewhere (U and Vh None without ``compute_uv``)."""
    xp = comm.xp
    bounds = consecutive_blocks(m, comm.size)
    parts = None
    if comm.rank == root:
        parts = [job.a64[0, r0:r1] for r0, r1 in bounds]
    shapes = [(r1 - r0, n) for r0, r1 in bounds]
    mine = comm.scatter(parts, root, shapes, wide_dtype)
    u_mine, s, v, converged = _decomposed(comm, root, mine, m, n, dtype, compute_uv, False)
    if not compute_uv:
        return (None, s, None) if comm.rank == root else None
    rows = comm.gather(u_mine, root, [(r1 - r0, n) for r0, r1 in bounds], dtype)
    if comm.rank != root:
        return None
    u = xp.concatenate(rows)
    deviation = float(xp.abs(xp.linalg.norm(u, axis=0) - 1).max())
    if full_matrices and m > n:
        u = orthonormal_columns(u[None], xp, complete=True)[0]
    elif deviation > orthonormal_tolerance(n, dtype) or not converged:
        u = orthonormal_columns(u[None], xp, complete=False)[0]
    return u, s, v.conj().T


def _largest_magnitude(a, xp):
    """max|a|, without a temporary the size of a real ``a``."""
    if a.dtype.kind == "c":
        return float(xp.abs(a).max())
    return max(float(a.max()), -float(a.min()))


class _RowsJob:
    """A rank's side when every rank brings its own rows of A (``rows=True``): its block
    through the front end, the blocks' shapes and dtypes checked against each other, and
    its block in float64 (complex128) scaled by the power of two that brings the largest
    entry of the whole A to [1/2, 1), as root scales A whole
    (:func:`gpusvd.polar.estimates.unit_scaled`)."""

    def __init__(self, a, comm, full_matrices, compute_uv, check_finite):
        xp = comm.xp
        with comm.phase():
            self.received = received(a, comm, check_finite, WHAT, scan=False)
            block = self.received.stack[0]
            # No copy of float64 (complex128) rows: they are only read, and a tall A
            # larger than one GPU is what this form is for.
            wide = block.astype(np.complex128 if block.dtype.kind == "c" else np.float64,
                                copy=False)
            finite = bool(xp.isfinite(wide).all()) if block.size else True
            if check_finite and not finite:
                raise not_finite(WHAT)
            peak = _largest_magnitude(wide, xp) if block.size and finite else 0.0
        seen = comm.world.allgather((block.shape, block.dtype.str, finite, peak))
        self.counts = [shape[0] for shape, _, _, _ in seen]
        self.m, self.n = sum(self.counts), block.shape[1]
        self.dtype = block.dtype
        for r, (shape, dtype, _, _) in enumerate(seen):
            if shape[1] != self.n or dtype != self.dtype.str:
                raise ValueError(
                    f"{WHAT}(rows=True): rank {r}'s block is {shape[0]}×{shape[1]} "
                    f"{np.dtype(dtype).name}, rank {comm.rank}'s {block.shape[0]}×{self.n} "
                    f"{self.dtype.name}: every rank's rows need the same columns and dtype")
        if self.m < self.n:
            raise ValueError(f"{WHAT}(rows=True) takes a tall or square A (M >= N), its "
                             f"rows spread over the ranks; got {self.m}×{self.n}: pass "
                             "the rows of Aᴴ instead, or A on root")
        if compute_uv and full_matrices and self.m > self.n:
            raise ValueError(f"{WHAT}(rows=True) gives each rank its rows of the economy U "
                             f"(M×N); pass full_matrices=False for this {self.m}×{self.n} "
                             "A, or A on root for the complete U")
        self.xp, self.compute_uv = xp, compute_uv
        self.finite = all(f for _, _, f, _ in seen)
        top = max(p for _, _, _, p in seen)
        self.trivial = not self.finite or self.n == 0 or top == 0
        self.exponent = int(np.frexp(top)[1]) if top else 0
        self.a64 = None if self.trivial else times_power_of_two(wide, -self.exponent, xp)
        rank = comm.rank
        self.r0 = sum(self.counts[:rank])
        self.r1 = self.r0 + self.counts[rank]

    def finish(self, u, s, vh):
        """This rank's result in the input's array type."""
        return delivered(self.received, self.exponent, self.compute_uv, u, s, vh)

    def trivial_result(self):
        """No column, a zero A (U's rows of the identity, S = 0, Vh = I, as the one-device
        path gives them) or, with ``check_finite=False``, NaN in some rank's block (NaN
        results on every rank)."""
        xp, n, dtype = self.xp, self.n, self.dtype
        real = np.finfo(dtype).dtype
        fill = 0 if self.finite else np.nan
        s = xp.full(n, fill, real)
        u = xp.eye(self.r1 - self.r0, n, self.r0, dtype)
        vh = xp.eye(n, dtype=dtype)
        if not self.finite:
            u, vh = xp.full_like(u, np.nan), xp.full_like(vh, np.nan)
        return self.finish(u, s, vh)


def _decompose_rows(comm, root, job):
    """Every rank's rows: :func:`_factor` with the values and V on every rank, U's rows
    kept where they are. Only where they are not orthonormal (A numerically rank
    deficient, or QDWH short of convergence) are they gathered on root, made orthonormal
    and sent back. Every rank's (U rows, S, Vh)."""
    xp, n, dtype = comm.xp, job.n, job.dtype
    u_mine, s, v, converged = _decomposed(comm, root, job.a64, job.m, n, dtype,
                                          job.compute_uv, True)
    if not job.compute_uv:
        return None, s, None
    norms = xp.sqrt(comm.summed((xp.abs(u_mine) ** 2).sum(axis=0), root))
    deviation = float(xp.abs(norms - 1).max())
    if deviation > orthonormal_tolerance(n, dtype) or not converged:
        shapes = [(c, n) for c in job.counts]
        rows = comm.gather(u_mine, root, shapes, dtype)
        parts = None
        if comm.rank == root:
            u = orthonormal_columns(xp.concatenate(rows)[None], xp, complete=False)[0]
            bounds = np.cumsum([0] + job.counts)
            parts = [u[r0:r1] for r0, r1 in zip(bounds[:-1], bounds[1:])]
        u_mine = comm.scatter(parts, root, shapes, dtype)
    return u_mine, s, v.conj().T


def svd(a, comm, root, full_matrices, compute_uv, check_finite, rows):
    """:func:`gpusvd.distributed.svd` with ``method="polar"``, on this rank (the module
    docstring says how)."""
    if rows:
        return _svd_rows(a, comm, root, full_matrices, compute_uv, check_finite)
    job = None
    with comm.phase():
        if comm.rank == root:
            job = _Job(a, comm, full_matrices, compute_uv, check_finite)
    m, n, dtype, wide_dtype, trivial = comm.bcast(
        job.plan() if comm.rank == root else None, root)
    if trivial:
        result = None
        with comm.phase():
            if comm.rank == root:
                result = job.trivial_result()
        return result
    found = _decompose(comm, root, job, m, n, np.dtype(dtype), np.dtype(wide_dtype),
                       compute_uv, full_matrices)
    result = None
    with comm.phase():
        if comm.rank == root:
            result = job.finish(*found)
    return result


def _svd_rows(a, comm, root, full_matrices, compute_uv, check_finite):
    """:func:`svd` with ``rows=True``, on one rank."""
    job = _RowsJob(a, comm, full_matrices, compute_uv, check_finite)
    if job.trivial:
        return job.trivial_result()
    found = _decompose_rows(comm, root, job)
    with comm.phase():
        result = job.finish(*found)
    return result
