"""The roots of the secular equation of a symmetric rank-one update, one by one.

The eigenvalues λ of D + ρ·z·zᵀ, D = diag(d) with d₁ < d₂ < … < d_k, every z_j ≠ 0 and
ρ > 0 (what deflation leaves, :mod:`gpusvd.condensed.tridiagonal_dc`), are the roots of

    f(λ) = 1/ρ + Σ_j z_j² / (d_j − λ)                                        (1)

(Golub, SIAM Rev. 15 (1973) 318–334, Sec. 5; Cuppen, Numer. Math. 36 (1981) 177–195),
one root in each interval (d_i, d_{i+1}) and the last in (d_k, d_k + ρ·zᵀz]: f rises
monotonically from −∞ to +∞ between two poles. This module finds them as LAPACK's
dlaed4 does (Ren-Cang Li, "Solving secular equations stably and efficiently", LAPACK
Working Note 89):

- Representation. Root i is stored as an offset from its nearer pole, λ_i = d_o + τ_i:
  f at the midpoint of (d_i, d_{i+1}) decides, f ≥ 0 there putting the root in the lower
  half (o = i), else in the upper half (o = i + 1); the last root takes o = k. Then
  δ_j = d_j − λ_i is computed as (d_j − d_o) − τ_i, which keeps its relative accuracy when
  λ_i lies within roundoff of d_o, as it does for small z_o. Gu & Eisenstat's vectors
  (SIAM J. Matrix Anal. Appl. 16 (1995) 172–191, Sec. 3) need exactly these δ_j.
- Iteration. Each step models f near the root by the term of the origin pole, a
  simple remainder and a constant, with f's value and derivative at the current point,
  and solves the model (a quadratic) for the new offset itself, which keeps it accurate
  where τ + η would cancel. The remainder is (dlaed4) fixed weight, the interval's
  other pole taking the rest of f′, or the middle way, each of the two poles taking the
  derivative of its side of the sum (dlaed4's A, B, C); where f keeps its sign and
  falls by less than 10× in a step, the next model is taken, as dlaed4's SWTCH does.
- Safeguards. f is increasing, so every evaluation shrinks a bracket (lo, hi) on τ;
  a model root outside it is replaced by a Newton step, and a Newton step outside it
  by bisection.
- Stopping. |f(λ)| ≤ ε·(8·Σ_j |z_j²/δ_j| + 2/ρ + |τ|·f′(λ)), dlaed4's bound on the
  rounding error of evaluating (1) (its ERRETM), or no change in τ.

Departures from dlaed4: a third model, the remainder as a straight line, joins the
cycle: where two close poles of tiny weight sit beside a root of the rest of f (glued
Wilkinson matrices), both pole models converge only linearly (by halves: 30 steps did
not reach the root) and the line converges at once. dlaed4's three-pole variant for the
interior roots is left out. Its initial guess solves the model at the midpoint; here
the iteration starts at the half interval's far end (the midpoint, or d_k + ρ·zᵀz for
the last root), about one step more per root (3.4–3.8 steps on average, at most 15, on
random, clustered and tiny-weight problems of k ≤ 1000). The roots are independent:
the loop over them is parallel (one GPU thread each in a later CUDA twin), O(k) work per
step, O(k²) per merge.
"""

import numba
import numpy as np

from .._core.errors import LinAlgError

# dlaed4's MAXIT: steps per root before it reports failure.
MAX_STEPS = 30
# dlamch('E'): LAPACK's unit roundoff, half of NumPy's machine epsilon.
_UNIT_ROUNDOFF = np.finfo(np.float64).eps / 2
# dlaed4's weight of Σ |z_j²/δ_j| in the rounding error bound of f (its EIGHT·(PHI − PSI)).
_ERROR_WEIGHT = 8.0
# dlaed4 switches model when f kept its sign and fell by less than this factor in a step.
_SLOW = 10.0


@numba.njit(cache=True)
def _root_in(a, b, c, lo, hi):
    """The root of c·x² − a·x + b inside (lo, hi), or NaN: both roots without cancellation."""
    q = a + np.sign(a) * np.sqrt(abs(a * a - 4.0 * b * c)) if a != 0.0 else \
        np.sqrt(abs(4.0 * b * c))
    first = q / (2.0 * c) if c != 0.0 else np.nan
    second = 2.0 * b / q if q != 0.0 else np.nan
    return first if lo < first < hi else second


@numba.njit(cache=True)
def model_step(model, origin_is_lower, x, w, dw, dpsi, dphi, z_o, delta_o, delta_t, gap,
               lo, hi):
    """The next iterate of a secular solver in its variable x, from f's value w and
    derivative dw = dpsi + dphi at x (the sums over poles up to and past the interval),
    safeguarded into the bracket (lo, hi); shared with secular_svd.py, whose x is σ² − d_o².

    A model of f near the root is solved for the new x itself (C·x² − A·x + B = 0): its
    roots keep their relative accuracy where x + η would cancel (a root within roundoff of
    its pole). delta_o and delta_t are the distances of the origin pole o and the
    interval's other pole t from the root at x, gap the distance from o to t, all in x.
    The origin keeps its term b_o/(0 − x); the rest of f is modelled by
    - fixed weight (model 0, dlaed4's default): b_o = z_o², the other pole taking the
      rest of f′ as b_t/(gap − x), plus a constant;
    - middle way (model 1, dlaed4's other choice of C): o and t each take the derivative
      of their side of the sum;
    - linear rest (model 2): b_o = z_o², the rest of f as a straight line, for when the
      rest has its own root near d_o (two close poles of tiny weight beside a root of the
      others: glued Wilkinson matrices), where both pole models creep.
    A model root outside the bracket falls back to Newton's step, then to bisection."""
    t_o = z_o / delta_o
    if model == 2:
        slope = dw - t_o * t_o
        new = _root_in(slope * x - (w - z_o * t_o), -z_o * z_o, slope, lo, hi)
    else:
        if model == 1:
            side_o, side_t = (dpsi, dphi) if origin_is_lower else (dphi, dpsi)
            b_o, b_t = delta_o * delta_o * side_o, delta_t * delta_t * side_t
        else:
            b_o, b_t = z_o * z_o, delta_t * delta_t * (dw - t_o * t_o)
        c = w - b_o / delta_o - b_t / delta_t
        new = _root_in(c * gap + b_o + b_t, b_o * gap, c, lo, hi)
    if not lo < new < hi:
        new = x - w / dw
    if not lo < new < hi:
        new = (x + (hi if w < 0.0 else lo)) / 2.0
    return new


@numba.njit(cache=True)
def _root(i, d, z, rho, max_steps, eps):
    """Root i of (1): (o, τ, steps); steps > max_steps where it did not converge."""
    k = d.shape[0]
    rhoinv = 1.0 / rho
    if k == 1:
        return 0, rho * z[0] * z[0], 0
    if i < k - 1:
        lower = i
        half = (d[i + 1] - d[i]) / 2.0
        fmid = rhoinv
        for j in range(k):
            fmid += z[j] * z[j] / ((d[j] - d[i]) - half)
        origin = i if fmid >= 0.0 else i + 1
        lo = 0.0 if fmid >= 0.0 else -half
        hi = half if fmid >= 0.0 else 0.0
    else:
        lower = k - 2
        zz = 0.0
        for j in range(k):
            zz += z[j] * z[j]
        origin = k - 1
        lo = 0.0
        hi = rho * zz
    tau = hi if origin == i else lo
    other = lower if origin == lower + 1 else lower + 1
    model = 0
    previous = 0.0
    for step in range(max_steps):
        psi = dpsi = phi = dphi = size = 0.0
        for j in range(k):
            t = z[j] / ((d[j] - d[origin]) - tau)
            if j <= lower:
                psi += z[j] * t
                dpsi += t * t
            else:
                phi += z[j] * t
                dphi += t * t
            size += abs(z[j] * t)
        w = rhoinv + psi + phi
        dw = dpsi + dphi
        if abs(w) <= eps * (_ERROR_WEIGHT * size + 2.0 * rhoinv + abs(tau) * dw):
            return origin, tau, step
        if w < 0.0:
            lo = tau
        else:
            hi = tau
        if step > 0 and w * previous > 0.0 and abs(w) > abs(previous) / _SLOW:
            model = (model + 1) % 3  # dlaed4's SWTCH, with a third model
        previous = w
        new = model_step(model, origin == lower, tau, w, dw, dpsi, dphi, z[origin], -tau,
                         (d[other] - d[origin]) - tau, d[other] - d[origin], lo, hi)
        if new == tau:
            return origin, tau, step
        tau = new
    return origin, tau, max_steps + 1


@numba.njit(parallel=True, cache=True)
def _roots(d, z, rho, origin, tau, steps, max_steps, eps):
    for i in numba.prange(d.shape[0]):
        origin[i], tau[i], steps[i] = _root(np.int64(i), d, z, rho, max_steps, eps)


def secular_roots(d, z, rho):
    """The roots of f(λ) = 1/ρ + Σ z_j²/(d_j − λ), each as an offset from a pole.

    Parameters
    ----------
    d : (k,) ndarray of float64
        The poles, strictly increasing.
    z : (k,) ndarray of float64
        The weights, all nonzero (deflation removes the others).
    rho : float
        ρ > 0.

    Returns
    -------
    origin : (k,) ndarray of int64
        Root i lies at ``d[origin[i]] + tau[i]``; origin[i] is i or i + 1.
    tau : (k,) ndarray of float64
        Its offset from that pole, of the sign that puts it inside (d_i, d_{i+1}).

    Raises
    ------
    LinAlgError
        Where a root did not converge in MAX_STEPS steps (dlaed4's INFO > 0).

    Examples
    --------
    >>> import numpy as np
    >>> d, z = np.array([0.0, 1.0, 2.0]), np.array([0.6, 0.64, 0.48])
    >>> origin, tau = secular_roots(d, z, 1.0)
    >>> lam = d[origin] + tau
    >>> bool(np.allclose(lam, np.linalg.eigvalsh(np.diag(d) + np.outer(z, z))))
    True
    """
    k = d.shape[0]
    origin = np.empty(k, np.int64)
    tau = np.empty(k, np.float64)
    steps = np.empty(k, np.int64)
    _roots(np.ascontiguousarray(d, np.float64), np.ascontiguousarray(z, np.float64),
           float(rho), origin, tau, steps, MAX_STEPS, _UNIT_ROUNDOFF)
    check_converged(steps, MAX_STEPS)
    return origin, tau


def check_converged(steps, max_steps=MAX_STEPS):
    """Raise :class:`LinAlgError` where a root took more than ``max_steps`` steps, from
    the step counts (a host array) of a secular solver: this module's and secular_svd.py's
    on the host, secular_cuda.py's on the device (dlaed4's and dlasd4's INFO > 0).

    Examples
    --------
    >>> import numpy as np
    >>> check_converged(np.array([3, 4, 2]))
    >>> try:
    ...     check_converged(np.array([3, 31, 2, 31]))
    ... except np.linalg.LinAlgError as err:
    ...     print(err)
    secular equation: 2 of 4 roots (the first is root 1) did not converge in 30 steps
    """
    failed = np.flatnonzero(np.asarray(steps) > max_steps)
    if failed.size:
        raise LinAlgError(f"secular equation: {failed.size} of {len(steps)} roots (the first "
                          f"is root {failed[0]}) did not converge in {max_steps} steps")
