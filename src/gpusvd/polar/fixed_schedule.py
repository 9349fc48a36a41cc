"""The polar SVD of one real matrix of up to 1024 columns as one fixed sequence of GPU work.

Without estimates QDWH's α = √(‖A‖₁‖A‖_∞) and l₀ = ε (estimates.py, as JAX's QDWH takes
them),
so the weights of every step, and so every step's kind, follow from the dtype alone.
With α computed on the device, the whole SVD (the QDWH steps, H = U_pᴴA, its
eigendecomposition by cuSOLVER's XsyevBatched, the ordering of the values and U = U_p·V)
needs no host synchronization and no branch on a computed value: up to the tunable
``fixed_schedule_graph_eigh_max_n`` columns it is replayed as one CUDA graph
(:mod:`gpusvd._core.graphs`) from the second call of a shape on, with the library calls
made directly (:mod:`gpusvd._core.libraries`); above, the QDWH steps and H are, and the
eigendecomposition and U follow eagerly (XsyevBatched cannot be captured there). One
host synchronization reads three numbers at the end: the largest deviation of U's
column norms from 1 (svd.py's test for a partial isometry), whether the result is
finite, and max|A|, the front end's scan done inside the graph (its result stands where
the scan would have left A as it is: finite, inside the safe range).

The eager path takes estimates of α and l₀ in double precision from 768 columns (the
tunable ``polar_estimates_min_n``), one QR step fewer for a well-conditioned A;
replayed, the estimate-free schedule is faster up to 1024 columns (NOTES.md, "One matrix
below 1025 columns: a CUDA graph").

The steps are QDWH's (qdwh.py: the same schedule, QR steps, Cholesky steps, single
precision's first step in float64), made by :class:`GraphEngine` of direct library calls,
on X (m×n, C-ordered), whose buffer read column-major is Xᵀ, the iterate Y of qdwh.py for
a real matrix. What differs from the eager one-matrix path:

- a QR step factors [√c·X; I] by shifted CholeskyQR3 (as a stack's does), not
  Householder QR: faster from 128 columns, residual and orthogonality unchanged to
  0.03 n·ε (NOTES.md, "One matrix below 1025 columns: a CUDA graph");
- a Cholesky step solves with Z = L·Lᵀ by potrs (both triangular solves in one call);
- the values are ordered by a rank computed on the device (|λ_j| > |λ_i|, ties by
  index), a stable sort by −|λ| like the driver's ``argsort`` (CuPy's sort can
  synchronize);
- where the last step still moved more than NH's criterion allows (singular values near
  ε·α, still rising), the eager path takes one more Halley step; here that step is
  always computed and selected on the device (``where``): one Cholesky step more of
  GPU work, no branch.
"""

import contextlib
import functools
from typing import NamedTuple

import numpy as np

from .._core import graphs, libraries, tunables
from .._core.backend import to_host, total
from .._core.scaling import largest_entries_on_device
from . import cholesky_qr, eigh, qdwh

_REAL = (np.dtype(np.float32), np.dtype(np.float64))


def applies(a, xp):
    """Whether the real matrix ``a`` (m×n, m ≥ n) takes the fixed sequence: at most the
    tunable ``fixed_schedule_max_n`` columns, real, on a namespace in
    ``fixed_schedule_namespaces``, and on the GPU only where cuSOLVER has XsyevBatched
    (syevd cannot be captured)."""
    t = tunables.get()
    if (xp.__name__ not in t.fixed_schedule_namespaces or a.dtype not in _REAL
            or not 0 < a.shape[1] <= t.fixed_schedule_max_n):
        return False
    return xp.__name__ != "cupy" or eigh.syev_batched() is not None


@functools.cache
def schedule(eps):
    """QDWH's steps from l₀ = ``eps`` (qdwh.schedule of a stack of one)."""
    return tuple(qdwh.schedule(np.array([eps]), eps))


class GraphEngine:
    """QDWH's steps (qdwh.py) on one real X, held as a stack of one (1, m, n) whose
    buffer read column-major is the iterate Y = Xᵀ, made of direct library calls
    (:mod:`gpusvd._core.libraries`): no host synchronization, no allocation of host
    workspace, so a CUDA graph captures them."""

    def __init__(self, xp):
        self.xp = xp

    def phase(self, kind):
        return contextlib.nullcontext()

    def weights(self, values, dtype):
        return float(values[0])

    def plus(self, w, alpha, y, beta):
        return w * y.dtype.type(alpha) + y * y.dtype.type(beta)

    def solve_gram(self, y, c):
        """X·Z⁻¹ (Z⁻¹·Y) with Z = I + c·XᵀX, by potrf and potrs."""
        xp, x = self.xp, y[0]
        n = x.shape[1]
        z = libraries.gemm(xp, x, x, out=xp.eye(n, dtype=x.dtype), trans_a=True, alpha=c,
                           beta=1.0)
        return libraries.cholesky_solve(xp, z, x.copy())[None]

    def stacked_q(self, y, c):
        """Q ((m + n)×n) of [√c·X; I] by shifted CholeskyQR3: κ([√c·X; I]) ≤ √(1 + 2c),
        ≤ 5e10 from l₀ = ε in float64, and ‖[√c·X; I]‖₂² ≤ 1 + c·X_NORM2_BOUND gives the
        shift on the host."""
        xp, x = self.xp, y[0]
        m, n = x.shape
        w = xp.empty((m + n, n), x.dtype)
        w[:m] = x * x.dtype.type(np.sqrt(c))
        w[m:] = xp.eye(n, dtype=x.dtype)
        shift = cholesky_qr.shift(m + n, n, 1.0 + c * qdwh.X_NORM2_BOUND)
        g = libraries.gemm(xp, w, w, out=xp.eye(n, dtype=x.dtype) * x.dtype.type(shift),
                           trans_a=True, beta=1.0)
        w = libraries.cholesky_qr_solve(xp, w, libraries.cholesky_factor(xp, g))
        for _ in range(cholesky_qr.PLAIN_PASSES):
            g = libraries.gemm(xp, w, w, out=xp.empty((n, n), x.dtype), trans_a=True)
            w = libraries.cholesky_qr_solve(xp, w, libraries.cholesky_factor(xp, g))
        return w

    def q_product_plus(self, w, alpha, y, beta):
        """alpha·Q₁·Q₂ᵀ + beta·X (alpha·Q₂·Q₁ᵀ + beta·Y) in one GEMM."""
        m = y.shape[1]
        return libraries.gemm(self.xp, w[:m], w[m:], out=y[0].copy(), trans_b=True,
                              alpha=alpha, beta=beta)[None]


def _descending(xp, lam):
    """The order of ``lam`` by −|λ|, ties by index: each value's rank counted on the
    device, then scattered."""
    n = lam.shape[0]
    mag = xp.abs(lam)
    index = xp.arange(n)
    before = (mag[None, :] > mag[:, None]) | ((mag[None, :] == mag[:, None])
                                               & (index[None, :] < index[:, None]))
    order = xp.empty(n, dtype=index.dtype)
    order[before.sum(axis=1)] = index
    return order


def _polar_part(xp, eps):
    """QDWH on A (m×n) by the fixed schedule from l₀ = ``eps``, then H = U_pᵀ·A: a
    function of A returning (U_p, H, max|A|)."""
    engine = GraphEngine(xp)
    steps = schedule(eps)
    settle = (qdwh.STOP_CHANGE_FACTOR * eps) ** (1.0 / 3.0)

    def run(a):
        n = a.shape[1]
        absolute = xp.abs(a)
        alpha = xp.sqrt(absolute.sum(axis=0).max() * absolute.sum(axis=1).max())
        # A zero A stays zero (U from its norms' test: svd.py completes it).
        y = (a / xp.where(alpha > 0, alpha, 1))[None]
        y = qdwh.run(engine, y, steps[:-1], eps)
        previous, y = y, qdwh.run(engine, y, steps[-1:], eps)
        # The eager path takes one more (Halley) step where the last one had not
        # settled, and stops after it either way (SETTLE_STEPS, l₀ = ε): here it is
        # always computed and kept only where needed, a branch a graph cannot take.
        unsettled = xp.sqrt(total((y - previous) ** 2)) > settle
        x = xp.where(unsettled, qdwh.run(engine, y, [qdwh.HALLEY], eps)[0], y[0])
        h = libraries.gemm(xp, x, a, out=xp.empty((n, n), a.dtype), trans_a=True)
        largest = largest_entries_on_device(a[None], xp)[0]   # the front end's scan
        return x, (h + h.T) * a.dtype.type(0.5), largest
    return run


def _eigen_part(xp, x, h, largest, compute_uv):
    """H = V·Λ·Vᵀ and U = U_p·V: (U, S, Vᴴ, checks) or (S, checks), checks =
    [deviation, finite, max|A|]."""
    m, n = x.shape
    lam, v = eigh.eigh(h[None], xp, vectors=compute_uv)
    order = _descending(xp, lam[0])
    s = xp.abs(lam[0])[order]
    finite = xp.isfinite(s).all().astype(x.dtype)
    if not compute_uv:
        return s, xp.stack([xp.zeros((), x.dtype), finite, largest])
    vh = xp.ascontiguousarray(v[0].T[order])
    # H is positive semidefinite; an eigenvalue below 0 is rounding: σ = |λ| with
    # u = −U_p·v keeps A = U·Σ·Vᵀ exact (svd.py).
    signed = vh * xp.where(lam[0][order] < 0, -1, 1).astype(x.dtype)[:, None]
    u = libraries.gemm(xp, x, signed, out=xp.empty((m, n), x.dtype), trans_b=True)
    deviation = xp.abs(xp.sqrt((u * u).sum(axis=0)) - 1).max()
    return u, s, vh, xp.stack([deviation, finite, largest])


class Found(NamedTuple):
    """The fixed sequence's result: U, S, Vᴴ (U and Vᴴ None without vectors), the
    largest deviation of U's column norms from 1 (0 without vectors) and max|A|."""
    u: object
    s: object
    vh: object
    deviation: float
    largest: float


def svd(a, xp, *, compute_uv):
    """The economy SVD of the real, nonzero ``a`` (m×n, m ≥ n) by the fixed sequence:
    a :class:`Found`, or None where the result is not finite (the caller reruns the eager
    iteration, which raises where the input was not finite). ``a`` need not have been
    scanned by the front end: ``largest`` says whether the scan would have changed it.

    Examples
    --------
    >>> a = np.array([[3.0, 0.0], [4.0, 5.0]])
    >>> found = svd(a, np, compute_uv=True)
    >>> np.round(found.s ** 2, 10), bool(found.deviation < 1e-14), found.largest
    (array([45.,  5.]), True, 5.0)
    """
    polar = _polar_part(xp, float(np.finfo(a.dtype).eps))
    a = xp.ascontiguousarray(a)
    if xp.__name__ != "cupy":
        # Input the scan has not seen may hold NaN or overflow: where the GPU's calls
        # return NaN, LAPACK's refuse; either way the result is not finite.
        try:
            with np.errstate(all="ignore"):
                found = _eigen_part(xp, *polar(a), compute_uv)
        except np.linalg.LinAlgError:
            return None
    elif a.shape[1] <= tunables.get().fixed_schedule_graph_eigh_max_n:
        found = graphs.replayed(("polar", a.shape, a.dtype.str, compute_uv),
                                lambda b: _eigen_part(xp, *polar(b), compute_uv), a)
    else:
        found = _eigen_part(xp, *graphs.replayed(("qdwh", a.shape, a.dtype.str), polar, a),
                            compute_uv)
    deviation, finite, largest = (float(c) for c in to_host(found[-1]))
    if not finite:
        return None
    if not compute_uv:
        return Found(None, found[0], None, 0.0, largest)
    return Found(*found[:3], deviation, largest)
