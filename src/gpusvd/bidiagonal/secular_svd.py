"""The roots of the secular equation of a merge in the bidiagonal SVD, one by one.

The singular values σ of M = e₁·zᵀ + diag(d), 0 = d₁ < d₂ < … < d_k, every z_j ≠ 0
(what deflation leaves, :mod:`gpusvd.bidiagonal.dc_svd`), are the roots of

    f(σ) = 1 + Σ_j z_j² / ((d_j − σ)(d_j + σ))                                 (1)

(Gu & Eisenstat, SIAM J. Matrix Anal. Appl. 16 (1995) 79–92, eq. (2.4)), one root in each
interval (d_i, d_{i+1}) and the last in (d_k, (d_k² + zᵀz)^½]. In λ = σ² this is the
symmetric secular equation of :mod:`.secular` with poles d_j² and ρ = 1, and the
iteration is that module's (dlaed4's models, their safeguards, the third model), run on
the offset x = σ² − d_o² from the root's origin pole d_o. What differs is LAPACK's
dlasd4: the root is held as τ = σ − d_o, and every difference of squares is formed from
it as a product,

    d_j² − σ² = ((d_j − d_o) − τ)·((d_j + d_o) + τ),   D_j = d_j² − d_o² = (d_j − d_o)(d_j + d_o),

(dlasd4's DELTA and WORK), never as d_j² − σ² from rounded squares, which would lose all
relative accuracy where two poles are a few ε·d apart, as deflation lets them be. A new
offset x from a model becomes τ = x / (d_o + (d_o² + x)^½) without cancellation. The
origin is chosen by f at the midpoint of the squares' interval, (d_i² + d_{i+1}²)/2, as
dlasd4 does.

Stopping: |f| ≤ ε·(8·Σ_j |z_j²/δ_j| + 2 + |x|·f′) with δ_j = d_j² − σ² and f′ the
derivative in λ (dlasd4's ERRETM, as :mod:`.secular`), or no change in x.

Departures from dlasd4: those of :mod:`.secular` (the third model; no three-pole variant;
the start at the half interval's far end).
"""

import numba
import numpy as np

from .._core import tunables
from .secular import check_converged, model_step

# dlamch('E'): LAPACK's unit roundoff, half of NumPy's machine epsilon.
_UNIT_ROUNDOFF = np.finfo(np.float64).eps / 2
# dlasd4's weight of Σ |z_j²/δ_j| in the rounding error bound of f (its EIGHT·(PHI − PSI)).
_ERROR_WEIGHT = 8.0
# dlasd4 switches model when f kept its sign and fell by less than this factor in a step.
_SLOW = 10.0


@numba.njit(cache=True)
def _sigma_offset(d_o, x):
    """τ = σ − d_o for σ² = d_o² + x, without cancellation."""
    return x / (d_o + np.sqrt(d_o * d_o + x))


@numba.njit(cache=True)
def _root(i, d, z, max_steps, eps):
    """Root i of (1): (o, τ, steps); steps > max_steps where it did not converge."""
    k = d.shape[0]
    if k == 1:
        return 0, _sigma_offset(d[0], z[0] * z[0]), 0
    if i < k - 1:
        lower = i
        half = (d[i + 1] - d[i]) * (d[i + 1] + d[i]) / 2.0
        fmid = 1.0
        for j in range(k):
            fmid += z[j] * z[j] / ((d[j] - d[i]) * (d[j] + d[i]) - half)
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
        hi = zz
    d_o = d[origin]
    x = hi if origin == i else lo
    tau = _sigma_offset(d_o, x)
    other = lower if origin == lower + 1 else lower + 1
    gap = (d[other] - d_o) * (d[other] + d_o)
    model = 0
    previous = 0.0
    for step in range(max_steps):
        psi = dpsi = phi = dphi = size = 0.0
        for j in range(k):
            t = z[j] / (((d[j] - d_o) - tau) * ((d[j] + d_o) + tau))
            if j <= lower:
                psi += z[j] * t
                dpsi += t * t
            else:
                phi += z[j] * t
                dphi += t * t
            size += abs(z[j] * t)
        w = 1.0 + psi + phi
        dw = dpsi + dphi
        if abs(w) <= eps * (_ERROR_WEIGHT * size + 2.0 + abs(x) * dw):
            return origin, tau, step
        if w < 0.0:
            lo = x
        else:
            hi = x
        if step > 0 and w * previous > 0.0 and abs(w) > abs(previous) / _SLOW:
            model = (model + 1) % 3  # dlasd4's SWTCH, with .secular's third model
        previous = w
        # .secular's three models of f near the root, in x, with the pole distances
        # formed as products (module docstring).
        delta_o = -tau * ((d_o + d_o) + tau)
        delta_t = ((d[other] - d_o) - tau) * ((d[other] + d_o) + tau)
        new = model_step(model, origin == lower, x, w, dw, dpsi, dphi, z[origin], delta_o,
                         delta_t, gap, lo, hi)
        if new == x:
            return origin, tau, step
        x = new
        tau = _sigma_offset(d_o, x)
    return origin, tau, max_steps + 1


@numba.njit(parallel=True, cache=True)
def _roots(d, z, origin, tau, steps, max_steps, eps):
    for i in numba.prange(d.shape[0]):
        origin[i], tau[i], steps[i] = _root(np.int64(i), d, z, max_steps, eps)


def secular_singular_values(d, z):
    """The roots of f(σ) = 1 + Σ z_j²/((d_j − σ)(d_j + σ)), each as an offset from a pole.

    Parameters
    ----------
    d : (k,) ndarray of float64
        The poles, nonnegative and strictly increasing (d[0] = 0 in a merge).
    z : (k,) ndarray of float64
        The weights, all nonzero (deflation removes the others).

    Returns
    -------
    origin : (k,) ndarray of int64
        Root i is ``d[origin[i]] + tau[i]``; origin[i] is i or i + 1.
    tau : (k,) ndarray of float64
        Its offset from that pole, of the sign that puts it inside (d_i, d_{i+1}).

    Raises
    ------
    LinAlgError
        Where a root did not converge in the tunable ``secular_max_steps`` steps
        (dlasd4's INFO > 0).

    Examples
    --------
    The singular values of M = e₁·zᵀ + diag(d):

    >>> import numpy as np
    >>> d, z = np.array([0.0, 1.0, 2.0]), np.array([0.6, 0.64, 0.48])
    >>> origin, tau = secular_singular_values(d, z)
    >>> m = np.diag(d)
    >>> m[0] = z
    >>> bool(np.allclose(d[origin] + tau, np.linalg.svd(m, compute_uv=False)[::-1]))
    True
    """
    k = d.shape[0]
    max_steps = tunables.get().secular_max_steps
    origin = np.empty(k, np.int64)
    tau = np.empty(k, np.float64)
    steps = np.empty(k, np.int64)
    _roots(np.ascontiguousarray(d, np.float64), np.ascontiguousarray(z, np.float64),
           origin, tau, steps, max_steps, _UNIT_ROUNDOFF)
    check_converged(steps, max_steps)
    return origin, tau
