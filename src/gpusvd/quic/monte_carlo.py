"""Monte Carlo bound on the projection error of a set of rows (Holmes, Gray & Isbell 2008).

For a set N of rows of A (a cosine-tree node, or a whole partition) of mass
W = ‖A_N‖²_F, draw s rows with replacement by length-squared sampling, p_i = ‖r_i‖²/W.
Holmes et al.'s MCSqError (used by paper 001 §2.1) forms the weighted squared magnitudes
w_i = ‖r_i V̂‖²/p_i, whose mean estimates ‖A_N V̂‖²_F without bias, and bounds that mass
from below at confidence 1 − δ by the normal approximation to the sample mean,

    magLB = mean(w) − Φ⁻¹(1 − δ)·sd(w)/√s,        error bound = W − magLB.

With y_i = ‖r_i − r_i V̂V̂ᵀ‖²/p_i = W − w_i the same bound reads
mean(y) + Φ⁻¹(1 − δ)·sd(y)/√s: it is computed in that form, from the residual vector
itself, because W − w_i cancels to rounding noise in float32 once the error is below
about 1e-6·W and the bounds QUIC-SVD needs (eps = 1e-8 and smaller) would be noise.

Sample counts are O(log |N|) (``tunables.quic_node_samples``, ``quic_global_samples``).
A set with no more rows than samples is measured exactly, every row once.

The normal approximation with so few samples is a heuristic, as it is in the paper; the
driver therefore checks the final error exactly (``extraction``) and does not rely on
this bound for what it returns.
"""

import math
from statistics import NormalDist

import numpy as np

from .._core.backend import to_host


def z_score(delta):
    """Φ⁻¹(1 − δ): the one-sided normal quantile of the bound at confidence 1 − δ."""
    return -NormalDist().inv_cdf(delta)


def sample_count(rows, rule):
    """max(minimum, ⌈factor·ln rows⌉) for ``rule = (minimum, factor)``: O(log m)."""
    minimum, factor = rule
    return max(int(minimum), math.ceil(factor * math.log(max(rows, 1))))


def length_squared_positions(weights, starts, draws, rng):
    """Length-squared draws from several segments of ``weights`` at once.

    Segment j is ``weights[starts[j]:starts[j + 1]]`` (the last runs to the end) and must
    have a positive total; ``draws[j]`` positions are drawn from it with probability ∝
    weight. Returns ``(positions, segment of each draw)``. Each segment's weights are
    normalized to sum 1 before the one cumulative sum, so a light segment next to heavy
    ones loses no resolution to cancellation.
    """
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.append(starts[1:], len(weights))[:len(starts)]
    seg_of = np.repeat(np.arange(len(starts)), ends - starts)
    mass = np.bincount(seg_of, weights=weights, minlength=len(starts))
    cum = np.cumsum(weights / np.where(mass > 0, mass, 1.0)[seg_of])
    before = np.concatenate([[0.0], cum])[starts]
    seg = np.repeat(np.arange(len(starts)), draws)
    span = cum[np.maximum(ends - 1, 0)] - before
    target = before[seg] + rng.random(len(seg)) * span[seg]
    k = np.searchsorted(cum, target, side="right")
    return np.clip(k, starts[seg], ends[seg] - 1), seg


class Draw:
    """Length-squared samples from several row sets at once.

    ``rows`` (sample → row index), ``seg`` (sample → set), ``scale`` (W/‖r_i‖², or 1 for
    a set measured exactly), ``exact`` and ``mass`` per set.
    """

    def __init__(self, sets, norms2, counts, rng):
        nsets = len(sets)
        sizes = np.array([len(s) for s in sets], dtype=np.int64)
        members = np.concatenate(sets).astype(np.int64) if nsets else np.zeros(0, np.int64)
        set_of = np.repeat(np.arange(nsets), sizes)
        w = norms2[members]
        self.mass = np.bincount(set_of, weights=w, minlength=nsets)
        self.exact = (sizes <= np.asarray(counts, dtype=np.int64)) | (self.mass == 0.0)
        whole = np.flatnonzero(self.exact[set_of] & (w > 0))
        sampled = np.flatnonzero(~self.exact)
        pick = np.flatnonzero(~self.exact[set_of])  # members of the sampled sets, in order
        starts = np.cumsum(sizes[sampled]) - sizes[sampled]
        k, seg = length_squared_positions(w[pick], starts,
                                          np.asarray(counts, dtype=np.int64)[sampled], rng)
        k = pick[k]
        self.rows = np.concatenate([members[whole], members[k]])
        self.seg = np.concatenate([set_of[whole], sampled[seg]])
        self.scale = np.concatenate([np.ones(len(whole)), self.mass[sampled[seg]] / w[k]])


def residual_norms2(a, rows, v, xp):
    """‖r_i − r_i V̂V̂ᵀ‖² for the rows ``rows`` of ``a`` (host float64 array).

    One gather and two GEMMs on the device of ``a``; ``v`` is V̂ (n × k, k may be 0).
    """
    if len(rows) == 0:
        return np.zeros(0)
    x = a[xp.asarray(rows)]
    if v.shape[1]:
        x = x - (x @ v) @ v.T
    r2 = (x * x).sum(axis=1, dtype=xp.float64)
    return to_host(r2)


def upper_bounds(draw, res2, z):
    """Per-set bound on ‖A_N − A_N V̂V̂ᵀ‖²_F at confidence 1 − δ (z = Φ⁻¹(1 − δ)).

    Exactly measured sets get their exact error; the others mean(y) + z·sd(y)/√s
    (Holmes et al. 2008, MCSqError, in residual form). Never above the set's mass.
    """
    nsets = len(draw.mass)
    y = res2 * draw.scale
    n = np.bincount(draw.seg, minlength=nsets).astype(float)
    total = np.bincount(draw.seg, weights=y, minlength=nsets)
    mean = total / np.maximum(n, 1.0)
    # The deviations are squared in units of a power of two c ≥ max|y| (exact), so that
    # samples near the float range (1e300-scaled input) do not overflow; sd = c·√(…).
    _, top = np.frexp(np.max(np.abs(y), initial=0.0))
    c = np.ldexp(1.0, int(top))
    dev2 = np.bincount(draw.seg, weights=((y - mean[draw.seg]) / c) ** 2, minlength=nsets)
    sd = np.sqrt(dev2 / np.maximum(n - 1.0, 1.0)) * c
    bound = mean + z * sd / np.sqrt(np.maximum(n, 1.0))
    bound = np.where(draw.exact, total, bound)
    return np.minimum(bound, draw.mass)
