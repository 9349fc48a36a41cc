"""Growing the shared basis from one partition's cosine tree (paper 001 §2.1, §2.3).

The loop of the paper, one step at a time:

1. take the leaves of largest estimated error from the priority queue (host, ``heapq``);
2. split them (``cosine_tree.split_nodes``);
3. orthonormalize the children's means into the basis (``gram_schmidt.Basis.extend``);
4. estimate each child's error by Monte Carlo and push it on the queue;
5. estimate the whole partition's error; stop once it is under the target.

Steps 4 and 5 share one draw of samples, one gather and two GEMMs. The paper splits one
node per step; here a step splits up to ``tunables.quic_split_batch`` of them, so the
device sees GEMMs and a step costs three host synchronizations (the inner products for
the split, the kept candidates, the residuals of the samples) whatever its size. The
first steps split 1, 2, 4, … nodes: the tree grows breadth first until the queue is
larger than a batch.

With several partitions (§2.3) the basis is shared: a partition whose error under the
current basis is already below its target is skipped after one Monte Carlo estimate.
A tree is kept after its partition is done, so growth can resume if the final check of
the driver finds the estimate was too optimistic.
"""

import heapq
import itertools

import numpy as np

from .._core import tunables
from . import monte_carlo
from .cosine_tree import Node, split_nodes

# Steps in a row that add no basis vector before a partition gives up: every candidate
# was in the span already, so the remaining error is at the rounding level of the
# working precision (an eps below what it can resolve) and further splits only walk
# the tree down to single rows.
STALL_STEPS = 8


class PartitionTree:
    """The cosine tree and priority queue of one partition (all host-side).

    Parameters
    ----------
    norms2 : ndarray
        ‖r_i‖² of every row of the partition (float64, host).
    """

    def __init__(self, norms2):
        self.norms2 = norms2
        self.mass = float(norms2.sum())
        self.root_rows = np.flatnonzero(norms2 > 0)
        self.mc_bound = self.mass
        self._heap = []
        self._tick = itertools.count()
        if len(self.root_rows):
            self._push(Node(self.root_rows, self.mass))

    def _push(self, node):
        heapq.heappush(self._heap, (-node.error, next(self._tick), node))

    def _pop(self, count):
        nodes = []
        while self._heap and len(nodes) < count:
            _, _, node = heapq.heappop(self._heap)
            nodes.append(node)
        return nodes

    def _estimate(self, a, sets, basis, z, rng, xp, global_rule):
        """Monte Carlo bounds of ``sets`` (node rows) and of the whole partition, last."""
        node_rule = tunables.get().quic_node_samples
        counts = [monte_carlo.sample_count(len(s), node_rule) for s in sets]
        sets = [*sets, self.root_rows]
        counts.append(monte_carlo.sample_count(len(self.root_rows), global_rule))
        draw = monte_carlo.Draw(sets, self.norms2, counts, rng)
        res2 = monte_carlo.residual_norms2(a, draw.rows, basis.v, xp)
        bounds = monte_carlo.upper_bounds(draw, res2, z)
        return bounds[:-1], float(bounds[-1])

    def grow(self, a, basis, target, *, z, rng, xp, global_rule, on_step=None):
        """Grow ``basis`` from this partition's rows ``a`` until the bound is ≤ ``target``.

        ``target`` is in units of ‖·‖²_F of this partition. Returns the Monte Carlo bound
        on ‖A_i − A_i V̂V̂ᵀ‖²_F reached (also kept as ``mc_bound``).
        """
        batch = max(1, tunables.get().quic_split_batch)
        _, bound = self._estimate(a, [], basis, z, rng, xp, global_rule)
        stalled = 0
        while bound > target and not basis.full and self._heap and stalled < STALL_STEPS:
            nodes = self._pop(batch)
            pairs = [nd for nd in nodes if len(nd.rows) >= 2]
            singles = [nd for nd in nodes if len(nd.rows) == 1]
            children, cands = [], []
            if pairs:
                children, means = split_nodes(a, pairs, self.norms2, rng, xp)
                cands.append(means)
            if singles:
                cands.append(a[xp.asarray(np.concatenate([nd.rows for nd in singles]))])
            added = basis.extend(xp.concatenate(cands).T if len(cands) > 1 else cands[0].T)
            stalled = 0 if added else stalled + 1
            errors, bound = self._estimate(a, [c.rows for c in children], basis, z, rng,
                                           xp, global_rule)
            for child, err in zip(children, errors):
                child.error = float(err)
                if err > 0:
                    self._push(child)
            if on_step is not None:
                on_step(basis.k, bound / self.mass if self.mass else 0.0)
        self.mc_bound = bound
        return bound
