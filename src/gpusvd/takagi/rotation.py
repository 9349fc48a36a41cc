"""The 2×2 complex symmetric Takagi step: the one reference for both kernels.

Paper 002, Section III: each Jacobi iteration diagonalizes the 2×2 complex symmetric
submatrix M = [[a, b], [b, c]] of the pair (i, j),

    M = V diag(d_i, d_j) Vᵀ,  i.e.  Vᴴ M V̄ = diag(d_i, d_j),  V unitary,

and applies Vᴴ to rows i, j and V̄ to columns i, j. The paper gives no formula for V;
Hahn's (physics/0607103) takes the rotation angle from MᴴM, which squares the entries and
leaves the angle undetermined when |d_i| = |d_j|. This one solves Vᴴ M V̄ = diag directly:

1. P = diag(e^{iφ₁}, e^{iφ₂}) with φ₁ = arg(a)/2, φ₂ = arg(c)/2 makes the diagonal of
   Pᴴ M P̄ real and non-negative: [[|a|, b'], [b', |c|]], b' = b e^{−i(φ₁+φ₂)}. The half
   phases come from square roots of a/|a| and c/|c| (no trigonometry: it would be the
   latency of the GPU's inner solve).
2. R = [[cs, sn], [−s̄n, cs]] with cs = 1/√(1 + τ²), sn = τ·cs·e^{iψ} zeroes the
   off-diagonal of Rᴴ (Pᴴ M P̄) R̄ iff |a|·t̄ − |c|·t + b'(1 − |t|²) = 0, t = τ e^{iψ}.
   With K(ψ) = |a| e^{−iψ} − |c| e^{iψ} this is τ K = −b'(1 − τ²): choose ψ so that K
   points opposite to b' (e^{iψ} ∝ (−σ(|a| + |c|) Re b', ||a| − |c|| Im b'), σ = sign(|a| − |c|),
   or ψ = 0 if both vanish), then ρ = |K| and τ = 2|b'| / (ρ + √(ρ² + 4|b'|²)) ∈ (0, 1].
   Equal moduli |a| = |c| give ρ = 0 and τ = 1: a 45° rotation, well defined.

V = P R. The moduli are divided by the largest one, so neither tiny nor huge entries
underflow or overflow (the angle is scale-invariant). For b = 0 V = I exactly,
so rotations never mix in the zero rows of a padded matrix.

The step is kept as (ϖ₁, ϖ₂, μ, sn) with pₖ = 1 + ϖₖ and μ = 1 − cs = τ²/(r(1 + r)),
r = √(1 + τ²), and applied as identity plus small corrections (:func:`rotate`). Near
convergence the phases are close to 1 and τ is small; a unit complex number or a cosine
near 1 cannot be rounded without bias (cs rounds to 1 once τ² < ε, leaving
|cs|² + |sn|² = 1 + τ²), and the biases of thousands of rotations add up in U: with cs
formed, the column norms of U all drifted upwards (‖UᴴU − I‖_F ≈ 20·n·ε at n = 512, 35·n·ε
blocked); with cs but the phases formed, downwards by about as much; with both carried
as offsets, 1.3·n·ε (1.9·n·ε blocked) and without drift.

:func:`takagi_rotation` and :func:`rotate` are plain scalar Python compiled by Numba
(``steps.py``); their CUDA twins in ``kernels/takagi_steps.cu`` perform the same
operations in the same order, and both pass ``tests/takagi/step_cases.py``.
"""

import math

import numba
import numpy as np


@numba.njit(cache=True)
def _half_phase_offset(z):
    """e^{i arg(z)/2} − 1 (0 for z = 0), to full relative accuracy also when it is small.

    The stable square root of z/|z| (the larger part by a square root, the other by
    division; re ≥ 0 and the sign of −0.0 kept, as atan2 keeps it), with z first divided
    by its larger component. For Re z ≥ 0 the real part of the offset is formed from
    1 − Re(z)/|z| = Im(z)² / ((|z| + Re(z))·|z|), without cancellation.
    """
    m = max(abs(z.real), abs(z.imag))
    if m == 0:
        return 0j
    zr, zi = z.real / m, z.imag / m
    r = math.hypot(zr, zi)
    if zr >= 0:
        gap = zi * zi / ((r + zr) * r)
        re = math.sqrt(1.0 - 0.5 * gap)
        return complex(-0.5 * gap / (1.0 + re), zi / (r * (2.0 * re)))
    im = math.copysign(math.sqrt(0.5 * (1.0 - zr / r)), zi)
    return complex(zi / (r * (2.0 * im)) - 1.0, im)


@numba.njit(cache=True)
def takagi_rotation(a, b, c, floor=0.0):
    """The Takagi step (ϖ₁, ϖ₂, μ, sn) of the pair [[a, b], [b, c]]; the identity where
    |b| ≤ ``floor`` (b = 0 by default).

    With pₖ = 1 + ϖₖ, V = [[p₁(1 − μ), p₁ sn], [−p₂ s̄n, p₂(1 − μ)]] is unitary and
    Vᴴ [[a, b], [b, c]] V̄ is diagonal (:func:`rotation_matrix` forms it).

    Parameters
    ----------
    a, b, c : complex
        The entries M[i, i], M[i, j] = M[j, i], M[j, j] of the pair.
    floor : float, optional
        Off-diagonal entries up to this are left alone: the sweeps pass ε·‖A‖_F, the
        rounding level of the whole matrix, below which a rotation only stirs rounding
        errors (the driver's docstring says why that matters).

    Returns
    -------
    tuple of complex
        (ϖ₁, ϖ₂, μ, sn); μ is real (returned as complex, as the kernels store it). Rows
        i, j and columns i, j of A are updated with ``rotate(x, y, ϖ̄₁, ϖ̄₂, μ, sn)``, the
        Takagi vectors with ``rotate(x, y, ϖ₁, ϖ₂, μ, s̄n)``.

    Examples
    --------
    >>> import numpy as np
    >>> v = rotation_matrix(*takagi_rotation(1 + 0j, 2 + 1j, -1j))
    >>> m = np.array([[1, 2 + 1j], [2 + 1j, -1j]])
    >>> bool(abs((v.conj().T @ m @ v.conj())[0, 1]) < 1e-15)
    True
    """
    abs_b = abs(b)
    if abs_b <= floor:
        return 0j, 0j, 0j, 0j
    abs_a, abs_c = abs(a), abs(c)
    scale = max(abs_a, abs_b, abs_c)
    w1 = _half_phase_offset(a)
    w2 = _half_phase_offset(c)
    b = b / scale
    bp = b * ((1.0 + w1) * (1.0 + w2)).conjugate()
    ar, cr = abs_a / scale, abs_c / scale
    bm = abs_b / scale
    sigma = 1.0 if ar >= cr else -1.0
    x = -sigma * (ar + cr) * bp.real
    y = abs(ar - cr) * bp.imag
    h = math.hypot(x, y)
    cos_psi, sin_psi = (x / h, y / h) if h > 0 else (1.0, 0.0)
    rho = math.hypot((ar - cr) * cos_psi, (ar + cr) * sin_psi)
    tau = 2.0 * bm / (rho + math.hypot(rho, 2.0 * bm))
    r = math.sqrt(1.0 + tau * tau)
    mu = tau * tau / (r * (1.0 + r))
    t = tau / r
    return w1, w2, complex(mu, 0.0), complex(t * cos_psi, t * sin_psi)


@numba.njit(cache=True)
def rotate(x, y, w1, w2, mu, s):
    """(x', y') = (x₁ − (μx₁ + s·y₁), y₁ + (s̄·x₁ − μy₁)) with x₁ = x + ϖ₁x, y₁ = y + ϖ₂y.

    The update of one entry pair by a Takagi step, as identity plus small corrections
    (phases 1 + ϖ and cs = 1 − μ are never formed; see the module docstring).

    Examples
    --------
    >>> w1, w2, mu, sn = takagi_rotation(0j, 1 + 0j, 0j)  # [[0, 1], [1, 0]]: 45°
    >>> x, y = rotate(1 + 0j, 0j, w1, w2, mu, sn.conjugate())  # row [1, 0] of U·V
    >>> round(abs(x) ** 2 + abs(y) ** 2, 12)
    1.0
    """
    x1, y1 = x + w1 * x, y + w2 * y
    return x1 - (mu * x1 + s * y1), y1 + (s.conjugate() * x1 - mu * y1)


def rotation_matrix(w1, w2, mu, sn):
    """The 2×2 unitary V of a Takagi step (ϖ₁, ϖ₂, μ, sn) as a complex128 array.

    Examples
    --------
    >>> import numpy as np
    >>> bool((rotation_matrix(0j, 0j, 0j, 0j) == np.eye(2)).all())  # the step for b = 0
    True
    """
    p1, p2, cs = 1 + w1, 1 + w2, 1 - mu.real
    return np.array([[p1 * cs, p1 * sn], [-p2 * np.conj(sn), p2 * cs]], np.complex128)
