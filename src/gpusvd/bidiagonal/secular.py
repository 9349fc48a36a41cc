"""The iteration step of a secular equation's root finder, and its convergence check.

The eigenvalues λ of D + ρ·z·zᵀ, D = diag(d) with d₁ < d₂ < … < d_k, every z_j ≠ 0 and
ρ > 0, are the roots of

    f(λ) = 1/ρ + Σ_j z_j² / (d_j − λ)                                        (1)

(Golub, SIAM Rev. 15 (1973) 318–334, Sec. 5; Cuppen, Numer. Math. 36 (1981) 177–195),
one root in each interval (d_i, d_{i+1}) and the last in (d_k, d_k + ρ·zᵀz]: f rises
monotonically from −∞ to +∞ between two poles. The bidiagonal SVD's merges solve (1) in
λ = σ² with poles d_j² and ρ = 1 (:mod:`.secular_svd`, dlasd4, and its CUDA twin in
:mod:`.secular_svd_cuda`), by the iteration of LAPACK's dlaed4 (Ren-Cang Li, "Solving
secular equations stably and efficiently", LAPACK Working Note 89), whose step is
:func:`model_step` here:

- Representation. Root i is held as an offset from its nearer pole, λ_i = d_o + τ_i:
  f at the midpoint of (d_i, d_{i+1}) decides, f ≥ 0 there putting the root in the lower
  half (o = i), else in the upper half (o = i + 1); the last root takes o = k. Then
  δ_j = d_j − λ_i is computed as (d_j − d_o) − τ_i, which keeps its relative accuracy when
  λ_i lies within roundoff of d_o, as it does for small z_o. Gu & Eisenstat's vectors
  need exactly these δ_j.
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
  rounding error of evaluating (1) (its ERRETM), or no change in τ; a root that does not
  stop in the tunable ``secular_max_steps`` steps (dlaed4's MAXIT) fails
  (:func:`check_converged`).

Departures from dlaed4: a third model, the remainder as a straight line, joins the
cycle: where two close poles of tiny weight sit beside a root of the rest of f (glued
Wilkinson matrices), both pole models converge only linearly (by halves: 30 steps did
not reach the root) and the line converges at once. dlaed4's three-pole variant for the
interior roots is left out. Its initial guess solves the model at the midpoint; here
the iteration starts at the half interval's far end, about one step more per root.
"""

import numba
import numpy as np

from .._core import tunables
from .._core.errors import LinAlgError

# dlamch('E'): LAPACK's unit roundoff, half of NumPy's machine epsilon.
_UNIT_ROUNDOFF = np.finfo(np.float64).eps / 2


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
    safeguarded into the bracket (lo, hi); x is λ − d_o in (1), σ² − d_o² in
    secular_svd.py.

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


def check_converged(steps, max_steps=None):
    """Raise :class:`LinAlgError` where a root took more than ``max_steps`` steps (by
    default the tunable ``secular_max_steps``), from the step counts (a host array) of a
    secular solver: secular_svd.py's on the host, secular_svd_cuda.py's on the device
    (dlasd4's INFO > 0).

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
    if max_steps is None:
        max_steps = tunables.get().secular_max_steps
    failed = np.flatnonzero(np.asarray(steps) > max_steps)
    if failed.size:
        raise LinAlgError(f"secular equation: {failed.size} of {len(steps)} roots (the first "
                          f"is root {failed[0]}) did not converge in {max_steps} steps")
