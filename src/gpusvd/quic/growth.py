"""Growing the shared basis from one partition's cosine tree (paper 001 §2.1, §2.3).

The loop of the paper, one step at a time:

1. take the leaves of largest estimated error (the priority queue, on the host);
2. split them (``cosine_tree.split_nodes``);
3. orthonormalize the children's means into the basis (``gram_schmidt.Basis.extend``);
4. estimate each child's error by Monte Carlo and add it to the leaves;
5. estimate the whole partition's error; stop once it is under the target.

Steps 4 and 5 share one draw of samples, one gather and two GEMMs. The paper splits the
one leaf of largest error per step, so a rank-k basis takes about k steps of a few host
synchronizations and small launches each. Here a step splits, in order of decreasing
error, every leaf until those left unsplit hold at most ``UNSPLIT_SHARE`` of the target
error (at most ``tunables.quic_split_batch`` leaves, and no more than the basis has
room for). Far from the target that is the whole frontier, so the number of leaves
doubles per step and a rank-k basis takes about log₂ k + k/(2·batch) steps; near the
target only the leaves that matter are split, as in the paper. A step costs three host
synchronizations (the inner products for the split, the kept candidates, the residuals
of the samples) whatever its size, and its device work is GEMMs. The samples of step 4
are drawn on the host before step 3, while the device still forms the candidates.

Siblings. The candidates of a node's two children, weighted by their row counts, add up
to Σ sign(r_i·p)·(r_i − c) over the node's rows, p the new pivot; that is the node's own
candidate (already offered to the basis) times its row count wherever each row's sign
against p is the one it had against the pivot of the node's parent (at the root: the
sum is zero where all signs are +) — always for rows with a dominant common part, such
as entries all positive. Then the second child adds nothing the first and the basis do
not have, and Gram–Schmidt drops it. Candidates go to Gram–Schmidt one child of every pair
first and the siblings after, so that such drops are the last columns of its QR
(``gram_schmidt``, step 4).

Two levels a step (the tunable ``quic_two_levels_above``). A step costs the host about
as much as the device (NOTES.md, "QUIC-SVD at 16384² on the H200": its Householder QR's
column loop, the draws, the bounds, three reads), and while the bound is far above the
target every step splits every leaf. So such a step splits the children as well and
offers both levels' candidates to one Gram–Schmidt call (children first of each pair,
grandchildren first of each pair, then the siblings of both), and estimates only the
grandchildren: the candidates are those two steps would have offered, in one call, and
the leaves double twice a step.

With several partitions (§2.3) the basis is shared: a partition whose error under the
current basis is already below its target is skipped after one Monte Carlo estimate.
A tree is kept after its partition is done, so growth can resume if the final check of
the driver finds the estimate was too optimistic.
"""

import numpy as np

from .._core import tunables
from . import monte_carlo
from .cosine_tree import Node, root_mean, split_nodes

# Candidates in a row that add no basis vector before a partition gives up (8 steps of
# one split, or a single step of a whole frontier): every one was in the span already,
# so the remaining error is at the rounding level of the working precision (an eps
# below what it can resolve, or a Monte Carlo bound inflated above a floor the true
# error is under) and further splits only walk the tree down to single rows. The
# driver's exact residual then decides whether growth resumes.
STALL_CANDIDATES = 16
# A step splits leaves, largest error first, until the leaves left hold at most this
# share of the target: the other half of the target is left to the split leaves'
# children. The leaves' bounds are upper bounds made at their creation (stale once the
# basis grew), so the rule errs towards splitting more, never fewer.
UNSPLIT_SHARE = 0.5


class PartitionTree:
    """The cosine tree's leaves and their errors, for one partition (all host-side).

    Parameters
    ----------
    norms2 : ndarray
        ‖r_i‖² of every row of the partition (float64, host).

    Attributes
    ----------
    steps : int
        Growth steps taken so far (each one split, one orthonormalization, one estimate).
    """

    def __init__(self, norms2):
        self.norms2 = norms2
        self.mass = float(norms2.sum())
        self.root_rows = np.flatnonzero(norms2 > 0)
        self.mc_bound = self.mass
        self.steps = 0
        self.center = None
        self._leaves = [Node(self.root_rows, self.mass)] if len(self.root_rows) else []

    def _select(self, target, most):
        """Pop the leaves to split: by decreasing error until the rest hold at most
        ``UNSPLIT_SHARE·target``, at least one and at most ``most``."""
        errors = np.array([leaf.error for leaf in self._leaves])
        order = np.argsort(-errors, kind="stable")
        rest = np.cumsum(errors[order][::-1])[::-1]  # rest[c]: errors of order[c:]
        count = int(np.count_nonzero(rest > UNSPLIT_SHARE * target))
        count = min(max(count, 1), most)
        chosen = [self._leaves[j] for j in order[:count]]
        self._leaves = [self._leaves[j] for j in np.sort(order[count:])]
        return chosen

    def _draw(self, sets, rng, global_rule):
        """Monte Carlo samples of ``sets`` (node rows) and of the whole partition, last."""
        node_rule = tunables.get().quic_node_samples
        counts = [monte_carlo.sample_count(len(s), node_rule) for s in sets]
        sets = [*sets, self.root_rows]
        counts.append(monte_carlo.sample_count(len(self.root_rows), global_rule))
        return monte_carlo.Draw(sets, self.norms2, counts, rng)

    def _bounds(self, a, draw, basis, z, xp):
        """Bounds of the sets of ``draw`` under the current basis; the partition's last."""
        res2 = monte_carlo.residual_norms2(a, draw.rows, basis.v, xp)
        bounds = monte_carlo.upper_bounds(draw, res2, z)
        return bounds[:-1], float(bounds[-1])

    def grow(self, a, basis, target, *, z, rng, xp, global_rule, on_step=None):
        """Grow ``basis`` from this partition's rows ``a`` until the bound is ≤ ``target``.

        ``target`` is in units of ‖·‖²_F of this partition. Returns the Monte Carlo bound
        on ‖A_i − A_i V̂V̂ᵀ‖²_F reached (also kept as ``mc_bound``).
        """
        batch = max(1, tunables.get().quic_split_batch)
        deep = tunables.get().quic_two_levels_above
        _, bound = self._bounds(a, self._draw([], rng, global_rule), basis, z, xp)
        stalled = 0
        while bound > target and not basis.full and self._leaves \
                and stalled < STALL_CANDIDATES:
            if self.center is None:
                # The root's mean, the first basis vector (§2.1); candidates are centered
                # on it (cosine_tree, "Centered candidates").
                self.center = root_mean(a, self.root_rows, xp)
                basis.extend(self.center[:, None])
                if basis.full:
                    break
            room = min(batch, basis.limit - basis.k)
            nodes = self._select(target, room)
            pairs = [nd for nd in nodes if len(nd.rows) >= 2]
            singles = [nd for nd in nodes if len(nd.rows) == 1]
            children, cands = [], []
            if pairs:
                children, means = split_nodes(a, pairs, self.norms2, rng, xp, self.center)
                # One child of each pair first, the siblings after ("Siblings" above).
                firsts, seconds = [means[0::2]], [means[1::2]]
                if not self._leaves and not singles and bound > deep * target \
                        and 3 * len(pairs) <= room:
                    inner = [c for c in children if len(c.rows) >= 2]
                    if inner:
                        grand, more = split_nodes(a, inner, self.norms2, rng, xp,
                                                  self.center)
                        children = [c for c in children if len(c.rows) < 2] + grand
                        firsts.append(more[0::2])
                        seconds.append(more[1::2])
                cands += firsts + seconds
            if singles:
                rows = np.concatenate([nd.rows for nd in singles])
                cands.append(a[xp.asarray(rows)] - self.center)
            cands = xp.concatenate(cands) if len(cands) > 1 else cands[0]
            # Drawn here, on the host, while the device forms the candidates.
            draw = self._draw([c.rows for c in children], rng, global_rule)
            added = basis.extend(cands.T)
            stalled = 0 if added else stalled + cands.shape[0]
            errors, bound = self._bounds(a, draw, basis, z, xp)
            for child, err in zip(children, errors):
                child.error = float(err)
                if err > 0:
                    self._leaves.append(child)
            self.steps += 1
            if on_step is not None:
                on_step(basis.k, bound / self.mass if self.mass else 0.0)
        self.mc_bound = bound
        return bound
