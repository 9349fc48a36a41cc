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


def z_score(delta):
    """Φ⁻¹(1 − δ): the one-sided normal quantile of the bound at confidence 1 − δ."""
    return -NormalDist().inv_cdf(delta)


def sample_count(rows, rule):
    """max(minimum, ⌈factor·ln rows⌉) for ``rule = (minimum, factor)``: O(log m)."""
    minimum, factor = rule
    return max(int(minimum), math.ceil(factor * math.log(max(rows, 1))))


class Draw:
    """Length-squared samples from several row sets at once.

    ``rows`` (sample → row index), ``seg`` (sample → set), ``scale`` (W/‖r_i‖², or 1 for
    a set measured exactly), ``exact`` and ``mass`` per set.
    """

    def __init__(self, sets, norms2, counts, rng):
        rows, seg, scale = [], [], []
        self.exact = np.zeros(len(sets), dtype=bool)
        self.mass = np.zeros(len(sets))
        for j, (members, s) in enumerate(zip(sets, counts)):
            w = norms2[members]
            mass = float(w.sum())
            self.mass[j] = mass
            if len(members) <= s or mass == 0.0:
                pick = members[w > 0]
                weight = np.ones(len(pick))
                self.exact[j] = True
            else:
                cum = np.cumsum(w)
                k = np.searchsorted(cum, rng.random(s) * cum[-1], side="right")
                k = np.minimum(k, len(members) - 1)
                pick = members[k]
                weight = mass / w[k]
            rows.append(pick)
            seg.append(np.full(len(pick), j))
            scale.append(weight)
        self.rows = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        self.seg = np.concatenate(seg) if seg else np.zeros(0, np.int64)
        self.scale = np.concatenate(scale) if scale else np.zeros(0)


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
    return r2.get() if hasattr(r2, "get") else np.asarray(r2)


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
    dev2 = np.bincount(draw.seg, weights=(y - mean[draw.seg]) ** 2, minlength=nsets)
    sd = np.sqrt(dev2 / np.maximum(n - 1.0, 1.0))
    bound = mean + z * sd / np.sqrt(np.maximum(n, 1.0))
    bound = np.where(draw.exact, total, bound)
    return np.minimum(bound, draw.mass)
