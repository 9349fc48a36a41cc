"""The SVD secular equation's roots (bidiagonal/secular_svd.py) against a 50-digit evaluation.

Each root σ_i = d_o + τ_i must lie strictly inside its interval in that representation,
and f(σ) = 1 + Σ_j z_j²/(d_j² − σ²) must vanish there to within the rounding of
evaluating it: |f| ≤ BOUND·ε·(1 + Σ_j |z_j²/(d_j² − σ²)| + |σ² − d_o²|·f′(σ²))
(dlasd4's test), f in 50 digits at the exact d_o + τ.
"""

import mpmath
import numpy as np
import pytest

from gpusvd._core import tunables
from gpusvd._core.errors import LinAlgError
from gpusvd.bidiagonal import secular_svd

BOUND = 30
EPS = np.finfo(np.float64).eps


def _problem(kind, k, seed):
    """Poles 0 = d₁ < d₂ < …, weights of norm 1, as a merge leaves them."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(k)
    if kind == "random":
        d = np.abs(rng.standard_normal(k))
    elif kind == "clustered":  # poles in clusters a few ulps wide
        d = np.repeat(np.abs(rng.standard_normal((k + 3) // 4)), 4)[:k] \
            * (1 + 1e-14 * rng.standard_normal(k))
    elif kind == "tiny weights":  # roots within roundoff of their poles
        d = np.abs(rng.standard_normal(k))
        z[1::3] *= 1e-13
    else:  # "graded": poles spread over 30 decades
        d = np.logspace(-30, 0, k)
    d[0] = 0.0
    d = np.unique(d)
    z = z[:d.shape[0]]
    return d, z / np.linalg.norm(z)


def _residuals(d, z, origin, tau):
    """|f(σ_i)| over its rounding scale, in 50 digits, for each root."""
    with mpmath.workdps(50):
        out = []
        for o, t in zip(origin, tau):
            sigma = mpmath.mpf(d[o]) + mpmath.mpf(t)
            terms = [mpmath.mpf(zj) ** 2 / (mpmath.mpf(dj) ** 2 - sigma ** 2)
                     for dj, zj in zip(d, z)]
            derivative = sum(term / (mpmath.mpf(dj) ** 2 - sigma ** 2)
                             for term, dj in zip(terms, d))
            f = 1 + sum(terms)
            x = abs(sigma ** 2 - mpmath.mpf(d[o]) ** 2)
            scale = 1 + sum(abs(term) for term in terms) + x * derivative
            out.append(float(abs(f) / scale))
    return np.array(out)


@pytest.mark.parametrize("kind", ["random", "clustered", "tiny weights", "graded"])
@pytest.mark.parametrize("k", [1, 2, 3, 10, 200])
def test_roots_interlace_and_solve_f(kind, k):
    d, z = _problem(kind, k, seed=k)
    origin, tau = secular_svd.secular_singular_values(d, z)
    k = d.shape[0]
    index = np.arange(k)
    assert np.all((origin == index) | (origin == np.minimum(index + 1, k - 1)))
    above = origin == index
    gaps = np.append(np.diff(d), np.inf)
    # Strictly inside (d_i, d_{i+1}) in the offset representation.
    assert np.all(np.where(above, tau > 0, tau < 0))
    assert np.all(np.abs(tau) < gaps)
    sigma = d[origin] + tau
    assert sigma[-1] <= np.sqrt(d[-1] ** 2 + np.dot(z, z)) * (1 + 4 * EPS)
    assert np.all(np.diff(sigma) >= 0)
    assert _residuals(d, z, origin, tau).max() <= BOUND * EPS


@pytest.mark.parametrize("kind", ["random", "graded"])
def test_roots_match_the_dense_singular_values(kind):
    d, z = _problem(kind, 50, seed=3)
    origin, tau = secular_svd.secular_singular_values(d, z)
    m = np.diag(d)
    m[0] = z
    ref = np.linalg.svd(m, compute_uv=False)[::-1]
    assert np.abs(d[origin] + tau - ref).max() <= BOUND * 50 * EPS * ref[-1]


def test_close_poles_keep_their_gap():
    """Poles 4ε apart: the root between them is found as an offset, which a solver on
    rounded squares (gap 8ε·d² against d²'s rounding of ε·d²) could not place."""
    d = np.array([0.0, 1.0, 1.0 + 4 * EPS, 2.0])
    z = np.array([0.5, 0.5, 0.5, 0.5])
    origin, tau = secular_svd.secular_singular_values(d, z)
    assert origin[1] in (1, 2) and 0 < d[origin[1]] + tau[1] - 1.0 < 4 * EPS
    assert _residuals(d, z, origin, tau).max() <= BOUND * EPS


def test_one_pole_is_exact():
    origin, tau = secular_svd.secular_singular_values(np.array([0.0]), np.array([-0.75]))
    assert origin[0] == 0 and tau[0] == 0.75


def test_iteration_limit_raises():
    d, z = _problem("random", 10, seed=1)
    with tunables.override(secular_max_steps=0), \
            pytest.raises(LinAlgError, match="did not converge in 0 steps"):
        secular_svd.secular_singular_values(d, z)
