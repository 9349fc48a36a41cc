"""QDWH: the unitary polar factor U_p of each matrix of a stack, A = U_p·H, by the
QR-based dynamically weighted Halley iteration. One matrix is a stack of one.

Nakatsukasa, Bai & Gygi, *Optimizing Halley's iteration for computing the matrix polar
decomposition*, SIAM J. Matrix Anal. Appl. 31(5), 2010 (NBG), and Nakatsukasa & Higham,
*Stable and efficient spectral divide and conquer algorithms for the symmetric eigenvalue
decomposition and the SVD*, SIAM J. Sci. Comput. 35(3), 2013 (NH). With X₀ = A/α,
α ≥ ‖A‖₂, and l₀ a lower bound on σ_min(X₀) (estimates.py), each step applies the best
rational function of type (3, 2) on [l_k, 1] to the singular values (NBG eq. (3.3)–(3.5)):

    a_k = h(l_k),  b_k = (a_k − 1)²/4,  c_k = a_k + b_k − 1,
    X_{k+1} = (b_k/c_k)·X_k + (a_k − b_k/c_k)·X_k·(I + c_k·X_kᴴX_k)⁻¹,
    l_{k+1} = l_k·(a_k + b_k·l_k²)/(1 + c_k·l_k²).

The singular values reach 1 to working precision in at most six steps for κ(A) ≤ 10¹⁶.

**The iterate** is held conjugate-transposed, Y = Xᴴ (batch, n, m), the form in which the
triangular solves of both steps take it without a copy. There the steps read

    QR step (NH eq. (3.5)):  Y ← (b/c)·Y + (a − b/c)/√c·Q₂·Q₁ᴴ,  [√c·X; I] = [Q₁; Q₂]·R,
    Cholesky step (NH eq. (4.2)):  Y ← (b/c)·Y + (a − b/c)·Z⁻¹·Y,  Z = I + c·Y·Yᴴ = L·Lᴴ.

The QR step is backward stable for any c; the Cholesky step once c is moderate (NH
§4.1: κ(Z) ≤ 1 + c), at a third of the cost and all in GEMM-like kernels.

**Engines.** The weights, their schedule and the two steps are written here once; what a
step is made of is an engine's: :class:`StackEngine` (this module) runs it eagerly with
the array namespace's batched calls, or unbatched ones for a stack of one; the fixed
sequence's engine (fixed_schedule.py) runs it as direct library calls that a CUDA graph
captures.

**The schedule** is planned before the first step (:func:`schedule`): each matrix's
weights follow from l₀ alone (NBG eq. (3.4)), so step k runs on the matrices whose
schedule has a step k, each with its own (a, b, c), and no host synchronization is
needed until the schedule ends. A well-conditioned matrix stops after its 3–4 steps while
an ill-conditioned one in the same stack takes its 6, and one hard matrix does not turn
the easy ones' Cholesky steps into QR steps.

**Stopping**, as each caller needs:

- a stack (:func:`polar_factor`): a test on the result, ‖XᴴX − I‖_F ≤ ORTHONORMAL_TOL·n·ε
  per matrix after its schedule, in one synchronization for the stack;
- one matrix (:func:`polar_factor_one`): NH Algorithm 4.1's criterion on the last
  step's change, ‖X_k − X_{k−1}‖_F ≤ (5ε)^(1/3), with up to SETTLE_STEPS Halley steps
  after the schedule where it fails;
- the fixed sequence (fixed_schedule.py): the same criterion, the Halley step computed
  always and selected on the device.

Either way an estimated l₀ that proves too large (the iterate has not settled) restarts
the weights from l = ε at the current iterate, valid because its singular values lie in
[0, 1], where every step's rational function is increasing. Singular values of A below
ε·α (A numerically rank deficient) need not reach 1 at all: U_p is then only a partial
isometry, reported as not converged, and the SVD completes U (NH §5.5, svd.py).

Departures, each argued beside its constant below or in NOTES.md ("QDWH's schedule"):

- the Cholesky step from c_k ≤ 1000, not NH's 100 (CHOLESKY_MAX_C);
- single-precision input takes its steps with c_k above that bound (the first from
  l₀ = ε) as Cholesky steps computed in float64 (CHOLESKY_IN_DOUBLE_MAX_C), not QR steps;
- a stack's QR step factors [√c·X; I] by shifted CholeskyQR3 (cholesky_qr.py), as one
  matrix's does on the GPU at the tunable ``qdwh_cholesky_qr_columns``; elsewhere one
  matrix's is Householder QR.
"""

import numpy as np

from .._core import libraries, profile, tunables
from .._core.backend import to_host
from .._core.errors import LinAlgError
from . import cholesky_qr
from .cholesky_qr import cholesky, gram, shifted_cholesky_qr, solve_lower
from .estimates import SINGLE_EPS_FROM, frobenius, from_gram

# The Cholesky-based step is used once c_k ≤ 1000 (κ(I + c·XᴴX) ≤ 1001); NH §4.1 take
# 100. Whenever l₀ lies in [10⁻¹⁴, 7·10⁻⁶] (κ(A) ≈ 10⁵…10¹⁴, Gaussian matrices from
# n ≈ 10⁴) the second step's c is 100–400, so NH's bound makes it a second QR step, the
# dearest kind: one QR step fewer, at no measured loss of accuracy (residual,
# orthogonality, singular values and the asymmetry of H = U_pᴴ·A unchanged to within
# 0.02 n·ε; NOTES.md, "QDWH's schedule").
CHOLESKY_MAX_C = 1000.0
# Single-precision input takes a step whose c_k exceeds CHOLESKY_MAX_C as a Cholesky
# step in float64 up to this c_k, instead of a QR step: the Cholesky step's error, about
# κ(Z)·u₆₄ ≤ (1 + c)·u₆₄ ≈ 1.1e-6 (NH §4.1), is of the order of a QR step's own rounding
# in float32 (p(n)·ε₃₂ with ε₃₂ = 1.2e-7), and it covers the first step from l₀ = ε₃₂
# (c₀ = 2.7e9). A float64 Gram product, Cholesky factorization and two triangular solves
# cost a fraction of a Householder QR of the 2n×n stacked matrix.
CHOLESKY_IN_DOUBLE_MAX_C = 1e10
# Steps after l_k reached 1 that one matrix's iterate may still move before the remedy:
# two Halley steps take a value ≥ l₀/9 to 1 (×3 each while small, then cubically).
SETTLE_STEPS = 2
# NH Algorithm 4.1's stopping criterion: ‖X_k − X_{k−1}‖_F ≤ (5ε)^(1/3) and
# |1 − l_k| ≤ 10ε. After it the next step would change X by O(ε) (cubic convergence).
STOP_CHANGE_FACTOR = 5.0
STOP_L_FACTOR = 10.0
# A matrix of a stack whose iterate after its schedule has ‖XᴴX − I‖_F above this many
# n·ε of the input's dtype has not converged (converged QDWH: 0.4–0.6 n·ε).
ORTHONORMAL_TOL = 10.0
# Upper bound on ‖X₀‖₂² for the QR step's shift: X₀ = A/α with α ≥ ‖A‖₂ up to the power
# iteration's error, which the estimates' safety factor covers; twice that is safe.
X_NORM2_BOUND = 2.0
# The kinds of step (:func:`step_kind`).
QR, CHOLESKY, CHOLESKY_IN_DOUBLE = "qr", "cholesky", "cholesky in float64"


def coefficients(l):
    """The weights (a, b, c) of the step for the lower bound ``l`` (NBG eq. (3.5)): floats
    for a float, arrays for an array of bounds (one per matrix of a stack).

    Examples
    --------
    >>> a, b, c = coefficients(1.0)            # l = 1: Halley's iteration
    >>> round(a, 12), round(b, 12), round(c, 12)
    (3.0, 1.0, 3.0)
    """
    l2 = np.asarray(l, np.float64) ** 2
    gamma = np.cbrt(4.0 * (1.0 - l2) / (l2 * l2))
    root = np.sqrt(1.0 + gamma)
    a = root + 0.5 * np.sqrt(8.0 - 4.0 * gamma + 8.0 * (2.0 - l2) / (l2 * root))
    b = (a - 1.0) ** 2 / 4.0
    if a.ndim:
        return a, b, a + b - 1.0
    return float(a), float(b), float(a + b - 1.0)


# Halley's step (l = 1), the step after a schedule whose last step had not settled.
HALLEY = tuple(np.array([w]) for w in coefficients(1.0))


def next_lower_bound(l, a, b, c):
    """l_{k+1} = l_k·(a + b·l_k²)/(1 + c·l_k²), capped at 1 (NBG eq. (3.4)); elementwise
    for arrays."""
    return np.minimum(1.0, l * (a + b * l * l) / (1.0 + c * l * l))


def schedule(l0, eps):
    """The weights of every step of every matrix from its bound ``l0`` (batch,): a list
    over steps of (a, b, c) host arrays (batch,), NaN where a matrix's schedule has ended
    (its 1 − l_k ≤ 10ε)."""
    l = np.asarray(l0, np.float64).copy()
    steps = []
    while True:
        active = 1.0 - l > STOP_L_FACTOR * eps
        if not active.any():
            return steps
        a, b, c = coefficients(np.where(active, l, 1.0))
        l = np.where(active, next_lower_bound(l, a, b, c), l)
        nan = np.full_like(a, np.nan)
        steps.append(tuple(np.where(active, w, nan) for w in (a, b, c)))


def step_kind(c, eps):
    """How the step of weight ``c`` is taken for input of machine epsilon ``eps``:
    CHOLESKY, CHOLESKY_IN_DOUBLE (single-precision input, CHOLESKY_IN_DOUBLE_MAX_C) or
    QR."""
    if c <= CHOLESKY_MAX_C:
        return CHOLESKY
    if eps > SINGLE_EPS_FROM and c <= CHOLESKY_IN_DOUBLE_MAX_C:
        return CHOLESKY_IN_DOUBLE
    return QR


def _kinds(c, eps, wide):
    """The kind of each matrix's step of weights ``c`` (batch,): a dict kind → indices;
    NaN (schedule ended) in none. ``wide``: the iterate is in float64 already, where a
    step in float64 is a plain Cholesky step."""
    done = np.isnan(c)
    cholesky_step = ~done & (c <= CHOLESKY_MAX_C)
    in_double = ~done & ~cholesky_step & (eps > SINGLE_EPS_FROM) & (
        c <= CHOLESKY_IN_DOUBLE_MAX_C)
    if wide:
        cholesky_step, in_double = cholesky_step | in_double, np.zeros_like(in_double)
    qr = ~done & ~cholesky_step & ~in_double
    return {QR: np.flatnonzero(qr), CHOLESKY: np.flatnonzero(cholesky_step),
            CHOLESKY_IN_DOUBLE: np.flatnonzero(in_double)}


def qr_step(engine, y, a, b, c):
    """(b/c)·Y + (a − b/c)/√c·Q₂·Q₁ᴴ with [√c·X; I] = [Q₁; Q₂]·R (NH eq. (3.5) for
    Y = Xᴴ); ``a``, ``b``, ``c`` in the engine's form (:meth:`StackEngine.weights`)."""
    root = c ** 0.5
    return engine.q_product_plus(engine.stacked_q(y, c), (a - b / c) / root, y, b / c)


def cholesky_step(engine, y, a, b, c):
    """(b/c)·Y + (a − b/c)·Z⁻¹·Y with Z = I + c·Y·Yᴴ = L·Lᴴ (NH eq. (4.2) for Y = Xᴴ)."""
    return engine.plus(engine.solve_gram(y, c), a - b / c, y, b / c)


def _cholesky_in_double(engine, y, a, b, c):
    """A Cholesky step of single-precision ``y`` computed in float64 (complex128)."""
    wide = np.complex128 if y.dtype.kind == "c" else np.float64
    return cholesky_step(engine, y.astype(wide), a, b, c).astype(y.dtype)


_STEPS = {QR: qr_step, CHOLESKY: cholesky_step, CHOLESKY_IN_DOUBLE: _cholesky_in_double}


def run(engine, y, steps, eps):
    """Y after the ``steps`` of :func:`schedule`, each to the matrices it has weights for,
    each kind of step on its own subset; ``eps`` the input's ε. A step that covers the
    whole stack returns a new array; one that covers part writes into ``y``."""
    xp = engine.xp
    wide = np.finfo(y.dtype).dtype == np.float64
    for a, b, c in steps:
        for kind, index in _kinds(c, eps, wide).items():
            if index.size == 0:
                continue
            whole = index.size == len(y)
            part = y if whole else y[xp.asarray(index)]
            weights = [engine.weights(w[index], y.dtype) for w in (a, b, c)]
            with engine.phase(kind):
                part = _STEPS[kind](engine, part, *weights)
            if whole:
                y = part
            else:
                y[xp.asarray(index)] = part
    return y


class StackEngine:
    """QDWH's steps on a stack Y (batch, n, m) with ``xp``'s calls, eagerly: batched GEMMs,
    Cholesky factorizations and triangular solves over the stack, unbatched ones for a
    stack of one (cholesky_qr.py says why); a real stack of one takes its Cholesky step
    as syrk, potrf and two trsm in place (:func:`gpusvd._core.libraries.shifted_gram_solve`:
    half the Gram product's flops and no copies; NOTES.md, "QDWH's steps at
    4096–16384"). ``householder``: the QR step
    factors by Householder QR (one matrix; shifted CholeskyQR3 where the tunables
    ``cholesky_qr_namespaces`` and ``qdwh_cholesky_qr_columns`` say), not by shifted
    CholeskyQR3 of the whole stack."""

    # Applied to every Gram product: None here; a distributed engine whose Y has its
    # columns spread over ranks (:mod:`gpusvd.distributed.polar`) sums them over the ranks.
    summed = None

    def __init__(self, xp, *, householder=False):
        self.xp = xp
        self.householder = householder

    def gram(self, xp, y):
        """Y·Yᴴ of each matrix (XᴴX), for the estimates, the orthonormality test and a
        complex or batched Cholesky step (:attr:`summed`)."""
        g = gram(xp, y)
        return g if self.summed is None else self.summed(g)

    def weights(self, values, dtype):
        """The weights ``values`` (host, one per matrix) as the steps take them: a float
        for a stack of one (a Python scalar keeps the iterate's precision), else an array
        (k, 1, 1) of the iterate's real dtype."""
        if values.size == 1:
            return float(values[0])
        real = np.finfo(dtype).dtype
        return self.xp.asarray(values.reshape(-1, 1, 1)).astype(real)

    def phase(self, kind):
        """The profile phase of a step of ``kind``."""
        return profile.phase("qdwh_qr" if kind == QR else "qdwh_cholesky", self.xp)

    def plus(self, w, alpha, y, beta):
        """alpha·W + beta·Y."""
        return y * beta + w * alpha

    def solve_gram(self, y, c):
        """Z⁻¹·Y with Z = I + c·Y·Yᴴ."""
        xp = self.xp
        batch, n, _ = y.shape
        if batch == 1 and y.dtype in libraries.REAL:
            out, info = libraries.shifted_gram_solve(xp, xp.ascontiguousarray(y[0]), c,
                                                     summed=self.summed)
            if int(to_host(info)[0]) != 0:
                raise LinAlgError("polar: the QDWH iterate is not finite (is the input "
                                  "finite?)")
            return out[None]
        z = self.gram(xp, y) * c
        # The diagonal as a strided view of the (new, C-contiguous) z: index arrays would
        # each be a copy to the device.
        z.reshape(batch, -1)[:, ::n + 1] += 1
        try:
            low = cholesky(xp, z)
        except np.linalg.LinAlgError as err:  # only a non-finite iterate breaks κ(Z) ≤ 1 + c
            raise LinAlgError("polar: the QDWH iterate is not finite (is the input "
                              "finite?)") from err
        return solve_lower(xp, low, solve_lower(xp, low, y), conjugate=True)

    def stacked_q(self, y, c):
        """Qᴴ (batch, n, m + n) of [√c·X; I] = Q·R."""
        xp = self.xp
        batch, n, m = y.shape
        if self.householder:
            return self._householder_q(y, c)
        wh = xp.concatenate(
            [y * c ** 0.5, xp.broadcast_to(xp.eye(n, dtype=y.dtype), (batch, n, n))], axis=2)
        norm2 = 1.0 + xp.asarray(c).reshape(-1) * X_NORM2_BOUND
        return shifted_cholesky_qr(xp, wh, norm2)

    def _householder_q(self, y, c):
        """Qᴴ of one matrix's [√c·X; I] by Householder QR, or by checked shifted
        CholeskyQR3 (cholesky_qr.cholesky_qr) where the tunables say and it succeeds."""
        xp = self.xp
        _, n, _ = y.shape
        x = y[0].conj().T
        stacked = xp.concatenate([x * c ** 0.5, xp.eye(n, dtype=y.dtype)])
        t = tunables.get()
        low, high = t.qdwh_cholesky_qr_columns
        q = None
        if xp.__name__ in t.cholesky_qr_namespaces and low <= n <= high:
            q = (cholesky_qr.cholesky_qr(stacked, xp, with_r=False) or (None,))[0]
        if q is None:
            q, _ = xp.linalg.qr(stacked, mode="reduced")
        return q.conj().T[None]

    def q_product_plus(self, qh, alpha, y, beta):
        """alpha·Q₂·Q₁ᴴ + beta·Y for Qᴴ = [Q₁ᴴ, Q₂ᴴ] from :meth:`stacked_q`."""
        m = y.shape[2]
        q2 = qh[:, :, m:].conj().swapaxes(-1, -2)
        if len(y) == 1:   # one matrix: an unbatched product (as cholesky_qr.gram)
            product = (q2[0] @ qh[0, :, :m])[None]
        else:
            product = self.xp.matmul(q2, qh[:, :, :m])
        return y * beta + product * alpha


def _deviation(engine, y):
    """‖YYᴴ − I‖_F of each matrix, on the host (one synchronization)."""
    xp = engine.xp
    d = engine.gram(xp, y)
    n = d.shape[-1]
    d.reshape(len(d), -1)[:, ::n + 1] -= 1
    dev = frobenius(xp, d).reshape(len(y))
    return dev.get() if hasattr(dev, "get") else dev


def polar_factor(xp, y, eps, *, engine=None):
    """U_pᴴ of each matrix from Y = Aᴴ (batch, n, m), m >= n, float64 or complex128,
    max|A| of order 1, starting from the Gram matrices' estimates (estimates.from_gram);
    ``eps`` the input dtype's ε. ``y`` is overwritten. ``engine``: a :class:`StackEngine`
    (default) or one whose Gram products span several ranks' columns.

    Returns (U_pᴴ, converged): ``converged`` (batch,) bool is false where the matrix is
    numerically rank deficient and U_p only a partial isometry (module docstring).

    Examples
    --------
    >>> a = np.array([[[3.0, 0.0], [4.0, 5.0]]])
    >>> uh, ok = polar_factor(np, a.swapaxes(-1, -2).copy(), np.finfo(float).eps)
    >>> bool(ok[0]), bool(np.allclose(uh[0] @ uh[0].T, np.eye(2)))
    (True, True)
    >>> h = uh[0] @ a[0]                      # U_pᴴ·A: symmetric positive definite
    >>> bool(np.allclose(h, h.T)), bool(np.all(np.linalg.eigvalsh(h) > 0))
    (True, True)
    """
    n = y.shape[1]
    engine = StackEngine(xp) if engine is None else engine
    alpha, l0 = from_gram(xp, y, eps, gram_of=engine.gram)
    y *= xp.asarray((1.0 / alpha).reshape(-1, 1, 1)).astype(y.dtype)
    y = run(engine, y, schedule(l0, eps), eps)
    failed = _deviation(engine, y) > ORTHONORMAL_TOL * n * eps
    again = failed & (l0 > eps)
    if again.any():
        index = np.flatnonzero(again)
        part = y[xp.asarray(index)]
        part = run(engine, part, schedule(np.full(index.size, eps), eps), eps)
        y[xp.asarray(index)] = part
        failed[index] = _deviation(engine, part) > ORTHONORMAL_TOL * n * eps
    return y, ~failed


def polar_factor_one(xp, y, *, l0):
    """U_pᴴ of one matrix from Y = (A/α)ᴴ (1, n, m), m >= n, in A's own precision, with
    ``l0`` ≤ σ_min(A)/α (about). Returns ``(U_pᴴ, steps, converged)``: ``converged`` is
    false where singular values below ε·α never reached 1 (module docstring).

    Raises :class:`gpusvd.LinAlgError` when the iterate is not finite (non-finite input)
    or does not settle within the tunable ``qdwh_max_iterations`` steps.
    """
    eps = float(np.finfo(y.dtype).eps)
    engine = StackEngine(xp, householder=True)
    max_iterations = tunables.get().qdwh_max_iterations
    tol_change = (STOP_CHANGE_FACTOR * eps) ** (1.0 / 3.0)
    l_start, taken, change = l0, 0, np.nan
    while True:
        planned = schedule(np.array([l_start]), eps)
        y = run(engine, y, planned[:-1], eps)
        taken += max(len(planned) - 1, 0)
        for settling in range(SETTLE_STEPS):
            step = planned[-1] if settling == 0 and planned else HALLEY
            taken += 1
            if taken > max_iterations:
                raise LinAlgError(f"polar: QDWH did not converge in {max_iterations} steps "
                                  f"(last change {change:.2e}, criterion {tol_change:.2e})")
            previous, y = y, run(engine, y, [step], eps)
            change = float(xp.linalg.norm(y - previous))
            if not np.isfinite(change):
                raise LinAlgError("polar: the QDWH iterate is not finite (is the input "
                                  "finite?)")
            if change <= tol_change:
                return y, taken, True
        if l_start <= eps:
            return y, taken, False
        l_start = eps
