"""The secular equation's roots (condensed/secular.py) against a 50-digit evaluation.

Each root, held as an offset τ from a pole d_o, must lie strictly inside its interval
in that representation, and f there must vanish to within the rounding of evaluating it:
|f(d_o + τ)| ≤ BOUND·ε·(1/ρ + Σ_j |z_j²/(d_j − λ)| + |τ|·f′(λ)) (dlaed4's test, its last
term the change of f from a relative change ε of τ), f in 50 digits at the exact
d_o + τ.
"""

import mpmath
import numpy as np
import pytest

from gpusvd._core.errors import LinAlgError
from gpusvd.condensed import secular

BOUND = 30
EPS = np.finfo(np.float64).eps


def _problem(kind, k, seed):
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(k)
    if kind == "random":
        d = np.sort(rng.standard_normal(k))
    elif kind == "clustered":  # poles in clusters a few ulps wide
        d = np.sort(np.repeat(rng.standard_normal((k + 3) // 4), 4)[:k]
                    + 1e-13 * rng.standard_normal(k))
    elif kind == "tiny weights":  # roots within roundoff of their poles
        d = np.sort(rng.standard_normal(k))
        z[::3] *= 1e-13
    else:  # "graded": poles spread over 30 decades
        d = np.sort(np.logspace(-30, 0, k) * rng.choice([-1.0, 1.0], k))
    d = np.unique(d)
    z = z[:d.shape[0]]
    return d, z / np.linalg.norm(z), float(rng.uniform(0.1, 2.0))


def _residuals(d, z, rho, origin, tau):
    """|f(λ_i)| over its rounding scale, in 50 digits, for each root."""
    with mpmath.workdps(50):
        out = []
        for o, t in zip(origin, tau):
            lam = mpmath.mpf(d[o]) + mpmath.mpf(t)
            terms = [mpmath.mpf(zj) ** 2 / (mpmath.mpf(dj) - lam) for dj, zj in zip(d, z)]
            derivative = sum(term / (mpmath.mpf(dj) - lam) for term, dj in zip(terms, d))
            f = 1 / mpmath.mpf(rho) + sum(terms)
            scale = (1 / mpmath.mpf(rho) + sum(abs(term) for term in terms)
                     + abs(t) * derivative)
            out.append(float(abs(f) / scale))
    return np.array(out)


@pytest.mark.parametrize("kind", ["random", "clustered", "tiny weights", "graded"])
@pytest.mark.parametrize("k", [1, 2, 3, 10, 200])
def test_roots_interlace_and_solve_f(kind, k):
    d, z, rho = _problem(kind, k, seed=k)
    origin, tau = secular.secular_roots(d, z, rho)
    k = d.shape[0]
    index = np.arange(k)
    assert np.all((origin == index) | (origin == np.minimum(index + 1, k - 1)))
    above = origin == index
    gaps = np.append(np.diff(d), np.inf)
    # Strictly inside (d_i, d_{i+1}) in the offset representation.
    assert np.all(np.where(above, tau > 0, tau < 0))
    assert np.all(np.abs(tau) < gaps)
    assert tau[-1] <= rho * np.dot(z, z) * (1 + 4 * EPS)
    lam = d[origin] + tau
    assert np.all(np.diff(lam) >= 0)
    assert _residuals(d, z, rho, origin, tau).max() <= BOUND * EPS


def test_roots_match_the_dense_eigenvalues():
    d, z, rho = _problem("random", 50, seed=3)
    origin, tau = secular.secular_roots(d, z, rho)
    ref = np.linalg.eigvalsh(np.diag(d) + rho * np.outer(z, z))
    assert np.abs(d[origin] + tau - ref).max() <= BOUND * 50 * EPS * np.abs(ref).max()


def test_one_pole_is_exact():
    origin, tau = secular.secular_roots(np.array([2.0]), np.array([1.0]), 0.5)
    assert origin[0] == 0 and tau[0] == 0.5


def test_iteration_limit_raises(monkeypatch):
    monkeypatch.setattr(secular, "MAX_STEPS", 0)
    d, z, rho = _problem("random", 10, seed=1)
    with pytest.raises(LinAlgError, match="did not converge in 0 steps"):
        secular.secular_roots(d, z, rho)
