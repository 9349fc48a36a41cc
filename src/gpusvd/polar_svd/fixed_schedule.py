"""The polar SVD of one real matrix of up to 1024 columns as one fixed sequence of GPU work.

Without estimates QDWH's α = √(‖A‖₁‖A‖_∞) and l₀ = ε (qdwh.py, as JAX's QDWH takes them),
so the weights of every step, and so every step's kind, follow from the dtype alone.
With α computed on the device, the whole SVD (the QDWH steps, H = U_pᴴA, its
eigendecomposition by cuSOLVER's XsyevBatched, the ordering of the values and U = U_p·V)
needs no host synchronization and no branch on a computed value: up to the tunable
``fixed_schedule_graph_eigh_max_n`` columns it is replayed as one CUDA graph
(:mod:`gpusvd._core.graphs`) from the second call of a shape on, with the library calls
made directly (:mod:`gpusvd._core.libraries`); above, the QDWH steps and H are, and the
eigendecomposition and U follow eagerly (XsyevBatched cannot be captured there). One
host synchronization reads three numbers at the end: the largest deviation of U's
column norms from 1 (driver.py's test for a partial isometry), whether the result is
finite, and max|A|, the front end's scan done inside the graph (its result stands where
the scan would have left A as it is: finite, inside the safe range).

The eager driver takes estimates of α and l₀ in double precision from 768 columns (the
tunable ``polar_estimates_min_n``), one QR step fewer for a well-conditioned A;
replayed, the estimate-free schedule is faster than the eager driver up to 1024 columns
(H100, float64: 768² 18.5–19.1 ms against 25.6–29.2, 1024² 25.0–26.2 against 30.4–36.0;
float32 1024² 17.9–18.0 against 25.4–26.9; NOTES.md, "One matrix below 1025 columns: a
CUDA graph").

The arithmetic is the one of :func:`gpusvd.polar_svd.qdwh.qdwh` and
:func:`gpusvd.polar_svd.driver.svd` with the same schedule (QR steps, Cholesky steps,
single precision's first step in float64), except:

- a QR step factors [√c·X; I] by shifted CholeskyQR3 (as the batched engine does), not
  Householder QR: on the H100 (one step replayed as a graph, float64)
  0.34 / 0.68 / 1.24 / 1.40 ms at n = 128 / 256 / 384 / 512 against geqrf + orgqr's
  0.41 / 0.99 / 1.69 / 2.50, the whole SVD 2.8 → 2.7, 5.3 → 4.7, 8.9 → 7.6 and
  12.5 → 10.4 ms, residual and orthogonality unchanged to 0.03 n·ε;
- a Cholesky step solves with Z = L·Lᵀ by potrs (both triangular solves in one call);
- the values are ordered by a rank computed on the device (|λ_j| > |λ_i|, ties by
  index), a stable sort by −|λ| like the driver's ``argsort`` (CuPy's sort can
  synchronize);
- where the last step still moved more than NH's criterion allows (singular values near
  ε·α, still rising), qdwh.qdwh takes one more Halley step and stops; here that step is
  always computed and selected on the device (``where``): one Cholesky step more of
  GPU work, no branch.
"""

import functools
from typing import NamedTuple

import numpy as np

from .._core import graphs, libraries, tunables
from .._core.backend import to_host
from .._core.scaling import largest_entries_on_device
from ..batched import cholesky_qr as batched_cholesky_qr
from ..batched import eigh as batched_eigh
from ..batched import qdwh as batched_qdwh
from . import qdwh

_REAL = (np.dtype(np.float32), np.dtype(np.float64))
# Halley's step (l = 1: a = 3, b = 1, c = 3), the one qdwh.qdwh adds where the schedule's
# last step had not settled.
_HALLEY = (*qdwh.coefficients(1.0), "cholesky")


def applies(a, xp):
    """Whether the real matrix ``a`` (m×n, m ≥ n) takes the fixed sequence: at most the
    tunable ``fixed_schedule_max_n`` columns, real, on a namespace in
    ``fixed_schedule_namespaces``, and on the GPU only where cuSOLVER has XsyevBatched
    (syevd cannot be captured)."""
    t = tunables.get()
    if (xp.__name__ not in t.fixed_schedule_namespaces or a.dtype not in _REAL
            or not 0 < a.shape[1] <= t.fixed_schedule_max_n):
        return False
    return xp.__name__ != "cupy" or batched_eigh.syev_batched() is not None


@functools.cache
def schedule(eps):
    """The weights (a, b, c) and kind of each QDWH step from l₀ = ``eps`` until l_k = 1
    to within qdwh's 10ε."""
    steps, l = [], eps
    while 1.0 - l > qdwh.STOP_L_FACTOR * eps:
        a, b, c = qdwh.coefficients(l)
        steps.append((a, b, c, qdwh.step_kind(c, eps)))
        l = float(qdwh.next_lower_bound(l, a, b, c))
    return tuple(steps)


def _cholesky_step(xp, x, a, b, c):
    """X·(b/c) + (a − b/c)·X·Z⁻¹, Z = I + c·XᵀX (NH eq. (4.2))."""
    n = x.shape[1]
    z = libraries.gemm(xp, x, x, out=xp.eye(n, dtype=x.dtype), trans_a=True, alpha=c,
                       beta=1.0)
    solved = libraries.cholesky_solve(xp, z, x.copy())
    return solved * x.dtype.type(a - b / c) + x * x.dtype.type(b / c)


def _qr_step(xp, x, a, b, c):
    """X·(b/c) + (a − b/c)/√c·Q₁·Q₂ᵀ with [√c·X; I] = [Q₁; Q₂]·R by shifted CholeskyQR3
    (the batched engine's QR step, batched/cholesky_qr.py): κ([√c·X; I]) ≤ √(1 + 2c),
    ≤ 5e10 from l₀ = ε in float64, and ‖[√c·X; I]‖₂² ≤ 1 + c·X_NORM2_BOUND gives the
    shift on the host."""
    m, n = x.shape
    w = xp.empty((m + n, n), x.dtype)
    w[:m] = x * x.dtype.type(np.sqrt(c))
    w[m:] = xp.eye(n, dtype=x.dtype)
    shift = batched_cholesky_qr.shift(m + n, n, 1.0 + c * batched_qdwh.X_NORM2_BOUND)
    g = libraries.gemm(xp, w, w, out=xp.eye(n, dtype=x.dtype) * x.dtype.type(shift),
                       trans_a=True, beta=1.0)
    w = libraries.cholesky_qr_solve(xp, w, libraries.cholesky_factor(xp, g))
    for _ in range(batched_cholesky_qr.PLAIN_PASSES):
        g = libraries.gemm(xp, w, w, out=xp.empty((n, n), x.dtype), trans_a=True)
        w = libraries.cholesky_qr_solve(xp, w, libraries.cholesky_factor(xp, g))
    return libraries.gemm(xp, w[:m], w[m:], out=x.copy(), trans_b=True,
                          alpha=(a - b / c) / np.sqrt(c), beta=b / c)


def _step(xp, x, weights):
    a, b, c, kind = weights
    if kind == "qr":
        return _qr_step(xp, x, a, b, c)
    if kind == "cholesky in float64":
        return _cholesky_step(xp, x.astype(np.float64), a, b, c).astype(x.dtype)
    return _cholesky_step(xp, x, a, b, c)


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


def _polar_part(xp, steps, settle):
    """QDWH on A (m×n) by the fixed schedule ``steps``, then H = U_pᵀ·A: a function of A
    returning (U_p, H, max|A|). ``settle``: the change ‖X_k − X_{k−1}‖_F up to which the
    last step counts as settled."""
    def run(a):
        n = a.shape[1]
        absolute = xp.abs(a)
        alpha = xp.sqrt(absolute.sum(axis=0).max() * absolute.sum(axis=1).max())
        # A zero A stays zero (U from its norms' test: driver.py completes it).
        x = a / xp.where(alpha > 0, alpha, 1)
        previous = x
        for weights in steps:
            previous, x = x, _step(xp, x, weights)
        # qdwh.qdwh takes one more (Halley) step where the last one had not settled, and
        # stops after it either way (SETTLE_STEPS, l₀ = ε): here it is always computed
        # and kept only where needed, a branch a graph cannot take.
        unsettled = xp.sqrt(((x - previous) ** 2).sum()) > settle
        x = xp.where(unsettled, _step(xp, x, _HALLEY), x)
        h = libraries.gemm(xp, x, a, out=xp.empty((n, n), a.dtype), trans_a=True)
        largest = largest_entries_on_device(a[None], xp)[0]   # the front end's scan
        return x, (h + h.T) * a.dtype.type(0.5), largest
    return run


def _eigen_part(xp, x, h, largest, compute_uv):
    """H = V·Λ·Vᵀ and U = U_p·V: (U, S, Vᴴ, checks) or (S, checks), checks =
    [deviation, finite, max|A|]."""
    m, n = x.shape
    lam, v = batched_eigh.eigh(h[None], xp, vectors=compute_uv)
    order = _descending(xp, lam[0])
    s = xp.abs(lam[0])[order]
    finite = xp.isfinite(s).all().astype(x.dtype)
    if not compute_uv:
        return s, xp.stack([xp.zeros((), x.dtype), finite, largest])
    vh = xp.ascontiguousarray(v[0].T[order])
    # H is positive semidefinite; an eigenvalue below 0 is rounding: σ = |λ| with
    # u = −U_p·v keeps A = U·Σ·Vᵀ exact (driver._svd_square).
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
    eps = float(np.finfo(a.dtype).eps)
    settle = (qdwh.STOP_CHANGE_FACTOR * eps) ** (1.0 / 3.0)
    polar = _polar_part(xp, schedule(eps), settle)
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
        found = graphs.replayed(("polar_svd", a.shape, a.dtype.str, compute_uv),
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
