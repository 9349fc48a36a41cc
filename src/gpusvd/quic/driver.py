"""QUIC-SVD over row partitions: a shared basis, then extraction (paper 001 §2.1–2.3).

1. Growth pass (§2.3). The partitions A_1 … A_s are visited in order; each gets its own
   cosine tree (``growth.PartitionTree``) that extends the one basis V̂ shared by all,
   until the Monte Carlo bound on ‖A_i − A_iV̂V̂ᵀ‖²_F is at most
   margin·eps·‖A_i‖²_F. A partition the basis already represents is skipped after one
   estimate. Since ‖A − AV̂V̂ᵀ‖²_F = Σ_i ‖A_i − A_iV̂V̂ᵀ‖²_F, per-partition targets give
   the global one; the confidence δ is split evenly over the partitions (union bound).
2. Projection pass. P_i = A_iV̂ for every partition and, in the same pass, the exact
   residual ‖A_i − P_iV̂ᵀ‖²_F (``extraction.project``).
3. If the exact residual misses eps·‖A‖²_F — the normal approximation behind the Monte
   Carlo bound failed, which δ makes rare — growth resumes on the partitions that miss
   their share, with four times the samples, and the projection pass is repeated; after
   ``MAX_ROUNDS`` rounds the error reached is reported as it is. The returned error is
   therefore computed, not only bounded with probability 1 − δ.
4. Extraction and truncation to the smallest rank meeting eps (``extraction.extract``).

A single partition is the in-core algorithm: its block stays where it is and the passes
re-read nothing. Several partitions stream through ``pipeline.make_feeder``.

Input whose largest entry is outside [smlnum, bignum] is scaled by a power of two, as
LAPACK's drivers do (``_core.scaling.safe_exponent``): growth scales each partition
by its own factor (everything it computes is relative to the partition), projection all
of them by the global one; S is scaled back.
"""

import math

import numpy as np

from .._core import profile, tunables
from .._core.scaling import largest_entries, safe_exponent, scale_values, times_power_of_two
from . import monte_carlo
from .cosine_tree import row_norms2
from .extraction import extract, project
from .gram_schmidt import Basis
from .growth import PartitionTree
from .pipeline import make_feeder
from .progress import NoProgress, ProgressBar

# Growth rounds (each a growth pass and a projection pass) before the error reached is
# returned even if it misses eps; every round after the first multiplies the partition's
# Monte Carlo sample count by MORE_SAMPLES.
MAX_ROUNDS = 4
MORE_SAMPLES = 4


def partition_bounds(m, partitions):
    """Row ranges of ``partitions`` consecutive blocks of ⌈m/partitions⌉ rows (§2.3)."""
    rows = math.ceil(m / partitions)
    return [(r0, min(r0 + rows, m)) for r0 in range(0, m, rows)]


def largest_entry(block, xp, what):
    """max |a_ij| of ``block`` (host float); ``ValueError`` if an entry is not finite."""
    largest = float(largest_entries(block[None], xp)[0])
    if not math.isfinite(largest):
        raise ValueError(f"{what}: the input contains NaN or infinity; pass finite values")
    return largest


def _bar(progress, label, total):
    return ProgressBar(label, total) if progress else NoProgress()


def quic_svd(source, *, eps, delta, max_rank, bounds, seed, dtype, xp, progress=False):
    """QUIC-SVD of the rows of ``source`` (split at ``bounds``) on ``xp``.

    Returns a dict with ``U``, ``S``, ``Vh`` (arrays of ``xp``), ``error_bound``,
    ``rank``, ``basis_size``, ``mc_bound``, ``passes`` and ``steps`` (growth steps).
    """
    m, n = source.shape
    t = tunables.get()
    limit = min(m, n) if max_rank is None else min(m, n, 2 * max_rank)
    basis = Basis(n, dtype, xp, limit)
    z = monte_carlo.z_score(delta / len(bounds))
    rng = np.random.default_rng(seed)
    trees, largest = {}, [0.0] * len(bounds)
    feeder = make_feeder(source, bounds, dtype, xp)
    todo, passes = list(range(len(bounds))), 0
    try:
        for round_ in range(MAX_ROUNDS):
            more = MORE_SAMPLES ** round_
            rule = (t.quic_global_samples[0] * more, t.quic_global_samples[1] * more)
            bar = _bar(progress, f"QUIC-SVD grow    (round {round_ + 1})", len(todo))
            with profile.phase("quic_grow", xp):
                for done, (i, block) in enumerate(feeder.blocks(todo)):
                    largest[i] = largest_entry(block, xp, "svd_lowrank")
                    block = times_power_of_two(block, safe_exponent(largest[i], dtype), xp)
                    if i not in trees:
                        trees[i] = PartitionTree(row_norms2(block, xp))
                    tree = trees[i]
                    tree.grow(block, basis, t.quic_growth_margin * eps * tree.mass, z=z,
                              rng=rng, xp=xp, global_rule=rule,
                              on_step=lambda k, e: bar.update(note=f"basis {k} est {e:.1e}"))
                    bar.update(done + 1, f"basis {basis.k}")
            bar.close()
            passes += 1

            k = safe_exponent(max(largest), dtype)
            p = xp.empty((m, basis.k), dtype=dtype)
            residuals, masses = np.zeros(len(bounds)), np.zeros(len(bounds))
            bar = _bar(progress, f"QUIC-SVD project (round {round_ + 1})", len(bounds))
            with profile.phase("quic_project", xp):
                for done, (i, block) in enumerate(feeder.blocks(range(len(bounds)))):
                    r0, r1 = bounds[i]
                    p[r0:r1], residuals[i], masses[i] = project(times_power_of_two(block, k, xp),
                                                                basis.v, xp)
                    bar.update(done + 1, f"rank <= {basis.k}")
            bar.close()
            passes += 1
            residual, mass = float(residuals.sum()), float(masses.sum())
            if residual <= eps * mass or basis.full:
                break
            todo = [i for i in range(len(bounds))
                    if residuals[i] > t.quic_growth_margin * eps * masses[i]]
    finally:
        feeder.close()

    with profile.phase("quic_extract", xp):
        u, s, vh, error = extract(p, basis.v, residual, mass, eps, max_rank, xp)
    mc = sum(trees[i].mc_bound / trees[i].mass * masses[i] for i in trees if trees[i].mass)
    return {"U": u, "S": scale_values(s, -k, xp), "Vh": vh, "error_bound": error,
            "rank": int(s.shape[0]), "basis_size": basis.k,
            "mc_bound": mc / mass if mass > 0 else 0.0, "passes": passes,
            "steps": sum(tree.steps for tree in trees.values())}
