"""QDWH: the polar decomposition A = U_p·H by the QR-based dynamically weighted Halley
iteration.

Nakatsukasa, Bai & Gygi, *Optimizing Halley's iteration for computing the matrix polar
decomposition*, SIAM J. Matrix Anal. Appl. 31(5), 2010 (NBG), and Nakatsukasa & Higham,
*Stable and efficient spectral divide and conquer algorithms for the symmetric eigenvalue
decomposition and the SVD*, SIAM J. Sci. Comput. 35(3), 2013 (NH). With X₀ = A/α,
α ≥ ‖A‖₂, and l₀ a lower bound on σ_min(X₀), each step applies the best rational
function of type (3, 2) on [l_k, 1] to the singular values (NBG eq. (3.3)–(3.5)):

    a_k = h(l_k),  b_k = (a_k − 1)²/4,  c_k = a_k + b_k − 1,
    X_{k+1} = (b_k/c_k)·X_k + (a_k − b_k/c_k)·X_k·(I + c_k·X_kᴴX_k)⁻¹,
    l_{k+1} = l_k·(a_k + b_k·l_k²)/(1 + c_k·l_k²).

The inverse is applied through a QR factorization of [√c·X; I] while c_k is large (NH
eq. (3.5), backward stable), and through the Cholesky factor of I + c·XᴴX once c_k is
moderate (NH §4.1: with κ(I + c·XᴴX) ≤ 1 + c the Cholesky step is as stable, at a third
of the cost on the H100 and all in GEMM-like kernels). The singular values reach 1 to working precision in at
most six steps for κ(A) ≤ 10¹⁶ (NBG §3), two of them QR steps when l₀ ≈ ε.

Departures, each measured or argued beside its constant below or in NOTES.md ("QDWH's
schedule"; "One matrix of 128–1024 and tall matrices: QDWH"):

- The Cholesky step from c_k ≤ 1000, not NH's 100 (CHOLESKY_MAX_C): one QR step fewer
  for κ(A) between 10⁵ and 10¹⁴, at no measured loss of accuracy.

- Single-precision input takes its steps with c_k above that bound (the first from
  l₀ = ε) as Cholesky steps computed in float64 (CHOLESKY_IN_DOUBLE_MAX_C), not QR steps.
- The QR step's factorization is shifted CholeskyQR3 on the GPU at 1000–2048 columns
  (the tunable ``qdwh_cholesky_qr_columns``, cholesky_qr.py).
- In double precision from 768 columns (the tunable ``polar_estimates_min_n``) α is an
  estimate of ‖A‖₂ (times 1.1), not √(‖A‖₁‖A‖_∞), which overstates ‖A‖₂ by up to √n, and
  l₀ is estimated, not set to ε: one QR step fewer where l₀ ≥ 10⁻⁵ (κ ≲ 10⁵, e.g. Gaussian
  matrices). In single precision, and below 768 columns, the driver takes
  √(‖A‖₁‖A‖_∞) and ε (JAX's choice): there the estimate saves no step, or costs more
  than the step it saves. An estimate that is too large costs only extra (cheap,
  Cholesky) steps, never accuracy: the iteration stops on NH's criterion on the
  iterates themselves, not on l_k alone. On the GPU a real matrix of up to 1024
  columns takes none either: the fixed sequence replayed as a CUDA graph
  (fixed_schedule.py) is faster there than the estimates' saved step.
- l₀ too large is caught: the iterate still moves SETTLE_STEPS steps after l_k reached 1.
  The weights then restart from l = ε at the current iterate (valid: its singular values
  lie in [0, 1], where every step's rational function is increasing), which bounds the
  steps where NH's criterion alone would let Halley's iteration crawl (×3 a step).
- Singular values of A below ε·α (A numerically rank deficient) need not reach 1 at all:
  U_p is then only a partial isometry, reported as not converged, and the SVD driver
  re-orthonormalizes U (NH §5.5, driver.py).
"""

import warnings

import numpy as np
import scipy.linalg

from .._core import profile, tunables
from .._core.backend import scipy_linalg
from .._core.errors import LinAlgError
from . import cholesky_qr

# The Cholesky-based step is used once c_k ≤ 1000 (κ(I + c·XᴴX) ≤ 1001); NH §4.1 take
# 100. Whenever l₀ lies in [10⁻¹⁴, 7·10⁻⁶] (κ(A) ≈ 10⁵…10¹⁴, Gaussian matrices from
# n ≈ 10⁴) the second step's c is 100–400, so NH's bound makes it a second QR step, the
# dearest kind. Measured on the H100, NH's 100 against 1000: 16384 Gaussian 8.30 → 7.54 s,
# 8192 with κ = 10⁶ 1.53 → 1.35 s; residual, orthogonality, singular values and the
# asymmetry of H = U_pᴴ·A (where an unstable step would show) unchanged to within 0.02 n·ε.
CHOLESKY_MAX_C = 1000.0
# Single-precision input (ε above SINGLE_EPS_FROM: float32, complex64) takes a step whose
# c_k exceeds CHOLESKY_MAX_C as a Cholesky step in float64 up to this c_k, instead of a QR
# step: the Cholesky step's error, about κ(Z)·u₆₄ ≤ (1 + c)·u₆₄ ≈ 1.1e-6 (NH §4.1), is of
# the order of a QR step's own rounding in float32 (p(n)·ε₃₂ with ε₃₂ = 1.2e-7), and it
# covers the first step from l₀ = ε₃₂ (c₀ = 2.7e9). A float64 Gram product, Cholesky
# factorization and two triangular solves cost a fraction of a Householder QR of the
# 2n×n stacked matrix.
CHOLESKY_IN_DOUBLE_MAX_C = 1e10
SINGLE_EPS_FROM = 1e-10
# Steps after l_k reached 1 that the iterate may still move before the driver's remedy:
# two Halley steps take a value ≥ l₀/9 to 1 (×3 each while small, then cubically).
SETTLE_STEPS = 2
# NH Algorithm 4.1's stopping criterion: ‖X_k − X_{k−1}‖_F ≤ (5ε)^(1/3) and
# |1 − l_k| ≤ 10ε. After it the next step would change X by O(ε) (cubic convergence).
STOP_CHANGE_FACTOR = 5.0
STOP_L_FACTOR = 10.0
# Power iteration for ‖A‖₂: steps, and the factor that makes the estimate (a lower bound
# that converges from below) an upper bound in practice.
NORM_STEPS = 12
NORM_SAFETY = 1.1
# Inverse power iteration for ‖A⁻¹‖₂ (with the LU or R factor): steps, and the factor by
# which l₀ is taken below the estimate's σ_min (the estimate is an upper bound on σ_min).
INVERSE_STEPS = 4
SIGMA_MIN_SAFETY = 2.0


def _ct(x):
    return x.conj().T


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


def next_lower_bound(l, a, b, c):
    """l_{k+1} = l_k·(a + b·l_k²)/(1 + c·l_k²), capped at 1 (NBG eq. (3.4)); elementwise
    for arrays."""
    return np.minimum(1.0, l * (a + b * l * l) / (1.0 + c * l * l))


def norm2_estimate(a, xp):
    """An estimate of ‖A‖₂ from below, by power iteration on AᴴA from a fixed start.

    The start is a seeded Gaussian vector (deterministic, and almost surely not orthogonal
    to the top singular vector). Each step is two matrix–vector products.
    """
    n = a.shape[1]
    start = np.random.default_rng(0).standard_normal(n).astype(a.dtype)
    x = xp.asarray(start / np.linalg.norm(start))
    est = xp.zeros((), dtype=np.finfo(a.dtype).dtype)
    for _ in range(NORM_STEPS):
        y = a @ x
        z = _ct(a) @ y
        est = xp.linalg.norm(y)
        norm_z = xp.linalg.norm(z)
        x = z / xp.where(norm_z > 0, norm_z, 1)
    return float(est)


def inverse_norm2_estimate(solve, solve_ct, n, dtype, xp):
    """An estimate of ‖A⁻¹‖₂ from below by inverse power iteration: ``solve(y)`` returns
    A⁻¹·y and ``solve_ct(y)`` A⁻ᴴ·y (with the LU or triangular factor of A)."""
    start = np.random.default_rng(1).standard_normal(n).astype(dtype)
    x = xp.asarray(start / np.linalg.norm(start))
    est = 0.0
    for _ in range(INVERSE_STEPS):
        y = solve(x)
        z = solve_ct(y)
        norm_z = float(xp.linalg.norm(z))
        est = float(xp.linalg.norm(y))
        if not np.isfinite(norm_z) or norm_z == 0.0:
            return np.inf if not np.isfinite(norm_z) else est
        x = z / norm_z
    return est


def lower_bound(a, alpha, xp, *, triangular=False):
    """l₀: an estimate of σ_min(A)/α, kept in [ε, 1].

    ``a`` square; ``triangular``: ``a`` is upper triangular (R of a QR), so its own
    triangular solves serve; otherwise its LU factors do.
    """
    n = a.shape[0]
    eps = float(np.finfo(a.dtype).eps)
    sla = scipy_linalg(xp)
    if triangular:
        def solve(y):
            return sla.solve_triangular(a, y, lower=False)

        def solve_ct(y):
            return sla.solve_triangular(a, y, lower=False, trans="C")
    else:
        # An exactly singular A is a case this estimate handles (l₀ = ε below), not news
        # for the user: SciPy's LinAlgWarning about a zero pivot, and CuPy's
        # RuntimeWarning ("Diagonal number ... is exactly zero"), stay inside.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
            warnings.filterwarnings("ignore", "Diagonal number", RuntimeWarning)
            lu = sla.lu_factor(a, check_finite=False)

        def solve(y):
            return sla.lu_solve(lu, y, check_finite=False)

        def solve_ct(y):
            return sla.lu_solve(lu, y, trans=2, check_finite=False)
    with np.errstate(all="ignore"):
        try:
            inv_norm = inverse_norm2_estimate(solve, solve_ct, n, a.dtype, xp)
        except np.linalg.LinAlgError:  # SciPy's solves refuse an exactly singular factor
            return eps
    if not np.isfinite(inv_norm) or inv_norm <= 0.0:
        return eps
    return float(min(1.0, max(eps, 1.0 / (inv_norm * alpha * SIGMA_MIN_SAFETY))))


def _qr_step(x, a, b, c, xp):
    """X·(b/c) + (a − b/c)/√c · Q₁·Q₂ᴴ with [√c·X; I] = [Q₁; Q₂]·R (NH eq. (3.5)); the
    QR by shifted CholeskyQR3 where the tunables ``cholesky_qr_namespaces`` and
    ``qdwh_cholesky_qr_columns`` say, else (or where it refuses) by Householder QR."""
    m, n = x.shape
    stacked = xp.concatenate([x * x.dtype.type(np.sqrt(c)), xp.eye(n, dtype=x.dtype)])
    q = None
    t = tunables.get()
    low, high = t.qdwh_cholesky_qr_columns
    if xp.__name__ in t.cholesky_qr_namespaces and low <= n <= high:
        q, _ = cholesky_qr.cholesky_qr(stacked, xp, with_r=False) or (None, None)
    if q is None:
        q, _ = xp.linalg.qr(stacked, mode="reduced")
    scale = (a - b / c) / np.sqrt(c)
    return x * x.dtype.type(b / c) + (q[:m] @ _ct(q[m:])) * x.dtype.type(scale)


def _cholesky_step(x, a, b, c, xp):
    """X·(b/c) + (a − b/c)·X·Z⁻¹ with Z = I + c·XᴴX = L·Lᴴ (NH eq. (4.2))."""
    n = x.shape[1]
    z = (_ct(x) @ x) * x.dtype.type(c)
    # The diagonal as a strided view of the (new, C-contiguous) z: np.diag_indices would
    # send two index arrays to the device, each copy a wait for the queued work.
    z.reshape(-1)[::n + 1] += 1
    try:
        low = xp.linalg.cholesky(z)
    except np.linalg.LinAlgError as err:  # only a non-finite iterate breaks κ(Z) ≤ 101
        raise LinAlgError("polar: the QDWH iterate is not finite (is the input finite?)") \
            from err
    sla = scipy_linalg(xp)
    w = sla.solve_triangular(low, _ct(x), lower=True, check_finite=False)
    w = sla.solve_triangular(low, w, lower=True, trans="C", check_finite=False)  # Z⁻¹·Xᴴ
    return x * x.dtype.type(b / c) + _ct(w) * x.dtype.type(a - b / c)


def step_kind(c, eps):
    """How the step of weight ``c`` is taken for input of machine epsilon ``eps``:
    "cholesky", "cholesky in float64" (single-precision input, CHOLESKY_IN_DOUBLE_MAX_C)
    or "qr"."""
    if c <= CHOLESKY_MAX_C:
        return "cholesky"
    if eps > SINGLE_EPS_FROM and c <= CHOLESKY_IN_DOUBLE_MAX_C:
        return "cholesky in float64"
    return "qr"


def qdwh(a, xp, *, alpha, l0):
    """The unitary polar factor U_p of ``a`` (m×n, m ≥ n), with ``alpha`` ≥ ‖A‖₂ (about)
    and ``l0`` ≤ σ_min(A)/alpha (about). Returns ``(U_p, steps, converged)``.

    ``converged`` is false when singular values below ε·α never reached 1 (A numerically
    rank deficient): U_p is then a partial isometry on them, which the SVD driver
    completes (NH §5.5). An estimated ``l0`` that proves too large (the iterate still
    moves :data:`SETTLE_STEPS` steps after l_k reached 1) restarts the weights from the
    worst-case bound ε at the current iterate, whose singular values all lie in [0, 1].

    Raises :class:`gpusvd.LinAlgError` when the iterate is not finite (non-finite input)
    or does not settle within the tunable ``qdwh_max_iterations`` steps.
    """
    max_iterations = tunables.get().qdwh_max_iterations
    eps = float(np.finfo(a.dtype).eps)
    tol_change = (STOP_CHANGE_FACTOR * eps) ** (1.0 / 3.0)
    tol_l = STOP_L_FACTOR * eps
    x = a / a.dtype.type(alpha)
    l, l_start, settling = l0, l0, 0
    change = np.nan
    for step in range(1, max_iterations + 1):
        a_k, b_k, c_k = coefficients(l)
        kind = step_kind(c_k, eps)
        with profile.phase("qdwh_qr" if kind == "qr" else "qdwh_cholesky", xp):
            if kind == "cholesky":
                x_next = _cholesky_step(x, a_k, b_k, c_k, xp)
            elif kind == "cholesky in float64":
                wide = np.complex128 if x.dtype.kind == "c" else np.float64
                x_next = _cholesky_step(x.astype(wide), a_k, b_k, c_k, xp).astype(x.dtype)
            else:
                x_next = _qr_step(x, a_k, b_k, c_k, xp)
        l = next_lower_bound(l, a_k, b_k, c_k)
        if 1.0 - l > tol_l:
            # The weights follow from l alone: no read-back (a host synchronization) until
            # the schedule ends. A non-finite iterate stays non-finite until then.
            x = x_next
            continue
        change = float(xp.linalg.norm(x_next - x))
        x = x_next
        if not np.isfinite(change):
            raise LinAlgError("polar: the QDWH iterate is not finite (is the input finite?)")
        if change <= tol_change:
            return x, step, True
        settling += 1
        if settling < SETTLE_STEPS:
            continue
        if l_start <= eps:
            return x, step, False
        l, l_start, settling = eps, eps, 0
    raise LinAlgError(f"polar: QDWH did not converge in {max_iterations} steps "
                      f"(last change {change:.2e}, criterion {tol_change:.2e})")
