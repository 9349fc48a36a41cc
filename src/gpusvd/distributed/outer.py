"""The outer block sweeps of the multi-GPU Jacobi level (paper 003, §5).

With g ranks and c pivot block-pairs per rank (``pairs_per_rank``; the paper's c = 1)
the n columns of G (and of V) form 2gc block-columns of nearly equal width (n/2gc, the
first n mod 2gc one wider; the paper assumes 2g | n). Root sends each rank its c pairs
of the first step of the outer p-strategy of order 2gc; then every outer block step
is, on every rank at once:

(0)–(3) the local step of :mod:`.local` on each of the rank's pairs (test, shorten,
        single-GPU Jacobi, postmultiply);
(4)–(6) the exchange of block-columns (with their rows of V, in one message each) by
        the block-column mapping of :mod:`.mapping`, between device synchronizations.

The mapping works on gc *slots*, c per rank (slot s on rank s // c): every slot keeps
one of its block-columns and receives the other from another slot, across the network
only when that slot is on another rank. With c = 1 the slots are the ranks.

c > 1 departs from the paper: a sweep has 2gc − 1 steps of c pairs of width n/gc per
rank instead of 2g − 1 steps of one pair of width n/g. The Gram matrices and the
postmultiplications (large GEMMs) of a sweep cost (2gc − 1)/2gc of the single-process
driver's GEMMs of a sweep, split over the ranks, for any c; the block sweeps on the
shortened pairs (each ∝ (n/gc)³, visiting the pairs inside a block-column again) cost
c times less. More steps move more: per rank and step at most c block-columns of
n/2gc (measured 1.14 of them for g = c = 2; the others go between slots of the rank).

At the end of an outer sweep the ranks add up their proper-rotation flags (§4.5,
"+-reduce their local counters"); the iteration stops at zero, or raises
:class:`gpusvd.LinAlgError` on every rank after ``max_sweeps``. Root gathers the
block-columns, takes σᵢ = ‖gᵢ‖ (DRDSSQ) and sorts them descending, as the
single-process :func:`gpusvd.jacobi.orthogonalize.orthogonalize` does.

A column's sign (HSVD) moves with its position, not with the column: the inner Jacobi
swaps only columns of equal sign, so the signs by position never change and every
rank knows them from the start.
"""

from typing import NamedTuple

import numpy as np

from .._core import tunables
from .._core.backend import to_host
from .._core.errors import LinAlgError
from ..jacobi.blocked import block_width, inner_name
from ..jacobi.norms import column_norms
from ..jacobi.orthogonalize import Orthogonalized
from ..jacobi.strategies import pivot_strategy
from .local import outer_block_step
from .mapping import next_move


class OuterOptions(NamedTuple):
    """The multi-GPU level's own choices (see :func:`gpusvd.distributed.jacobi_svd`)."""

    pair_sweeps: int = 1          # block sweeps per shortened pair (block-oriented)
    skip_orthogonal: bool = True  # end a step whose pair passes the orthogonality test
    pairs_per_rank: int = None    # c: pivot block-pairs per rank and outer step (None:
                                  # the rule of :func:`_pairs_per_rank`)


class OuterInfo(NamedTuple):
    """What an outer iteration did, the same on every rank except ``steps``/``skipped``."""

    sweeps: int          # outer block sweeps run (the last one without proper rotations)
    pairs_per_rank: int  # c used (at most the one asked for; see :func:`_pairs_per_rank`)
    steps: int           # pairs this rank processed
    skipped: int         # of them, ended by the orthogonality test (phase (0))


class _Blocks:
    """The block-columns: their widths and the column indices of each."""

    def __init__(self, n, count):
        widths = [n // count + (b < n % count) for b in range(count)]
        starts = np.concatenate([[0], np.cumsum(widths)]).astype(int)
        self.columns = [np.arange(starts[b], starts[b + 1]) for b in range(count)]

    def of_pair(self, pair):
        return np.concatenate([self.columns[b] for b in pair])

    def width(self, b):
        return len(self.columns[b])


def _pairs_per_rank(n, ranks, wanted, xp):
    """c: ``wanted``, but no more than keeps a block-column one inner block wide.

    ``wanted`` None: 1 on the CPU; on the GPU the largest c whose pairs are still at
    least ``distributed_pair_width`` columns wide, n/(ranks·c) ≥ that width (the
    single-GPU block sweep of a narrower pair is latency-bound).
    """
    if wanted is None:
        wanted = 1 if xp is np else n // (ranks * tunables.get().distributed_pair_width)
    return max(1, min(wanted, n // (2 * ranks * block_width(xp))))


def _exchange(comm, move, held, data, blocks, per_rank):
    """Phases (4)–(6): the block-columns that leave this rank's slots for another rank's
    go in one exchange; those moving between two slots of this rank stay here.
    Returns this rank's data per slot for the pairs of ``move``."""
    rank, xp = comm.rank, comm.xp
    mine = range(rank * per_rank, (rank + 1) * per_rank)
    rows = {}
    for j, slot in enumerate(mine):
        width = blocks.width(held[slot][0])
        rows[held[slot][0]], rows[held[slot][1]] = data[j][:width], data[j][width:]
    sends, recvs = [], []
    for slot, sent in enumerate(move.send):   # the same order on both ends of a link
        if sent is None or sent[1] // per_rank == slot // per_rank:
            continue
        block, source, dest = sent[0], slot // per_rank, sent[1] // per_rank
        if source == rank:
            sends.append((rows[block], dest))
        if dest == rank:
            recvs.append((block, source))
    if sends or recvs:
        width = data[0].shape[1]
        got = comm.exchange_many(sends, [((blocks.width(b), width), source)
                                         for b, source in recvs], data[0].dtype)
        rows.update({b: array for (b, _), array in zip(recvs, got)})
    return [xp.concatenate([rows[b] for b in move.pairs[slot]]) for slot in mine]


def _identity_rows(xp, columns, n, dtype):
    """The rows ``columns`` of the identity of order n: V_A of the start, transposed."""
    vt = xp.zeros((len(columns), n), dtype)
    vt[xp.arange(len(columns)), xp.asarray(columns)] = 1
    return vt


def _local_steps(comm, data, pairs, signs, m, options, outer):
    """Phases (0)–(3) on each of this rank's pairs (``data[j]`` holds the rows of the
    pair of columns ``pairs[j]``); returns [(data, rotated, skipped)] per pair.

    The pairs run one after another on the current stream. Running each from its own
    host thread on its own CUDA stream (a block sweep on a shortened pair is a chain of
    small launches that leaves much of the GPU idle) did not converge on the H100 (50
    outer sweeps at n = 260 with 2 pairs per rank, even with each side
    stream waiting for the caller's), so the concurrent form waits until that is
    understood.
    """
    xp = comm.xp

    def step(j):
        gt = data[j][:, :m]
        vt = data[j][:, m:] if data[j].shape[1] > m else None
        gt, vt, rotated, skipped = outer_block_step(
            gt, vt, signs[pairs[j]], xp, options, outer.pair_sweeps, outer.skip_orthogonal)
        if skipped:
            return data[j], rotated, skipped
        return (gt if vt is None else xp.concatenate([gt, vt], axis=1)), rotated, skipped

    return [step(j) for j in range(len(data))]


def _sweep(comm, data, held, table, blocks, signs, m, options, outer, counts):
    """One outer block sweep; returns (data, held, proper-rotation flags of all ranks).
    Adds this rank's steps and skipped steps to ``counts``."""
    c = outer.pairs_per_rank
    rotated = 0
    for s in range(len(table)):
        with comm.phase():
            pairs = [blocks.of_pair(held[comm.rank * c + j]) for j in range(c)]
            done = _local_steps(comm, data, pairs, signs, m, options, outer)
        data = [d for d, _, _ in done]
        rotated += sum(r for _, r, _ in done)
        counts["steps"] += c
        counts["skipped"] += sum(k for _, _, k in done)
        if s + 1 < len(table):
            move = next_move(held, table[s + 1])
            data = _exchange(comm, move, held, data, blocks, c)
            held = move.pairs
    return data, held, comm.sum(rotated)


def _sorted(xp, gt, vt, signs):
    """σ = the column norms, descending (stable), with their columns, V and signs."""
    g = gt.T[None]
    s = column_norms(g, xp)
    order = xp.argsort(-s, axis=1, kind="stable")
    host_order = to_host(order)
    v = None if vt is None else xp.take_along_axis(vt.T[None], order[:, None, :], axis=2)
    return Orthogonalized(xp.take_along_axis(g, order[:, None, :], axis=2),
                          xp.take_along_axis(s, order, axis=1), v,
                          signs[None][:, host_order[0]])


def orthogonalize(comm, g, signs, *, want_v, options, outer, root):
    """Jacobi-orthogonalize the columns of ``g`` (m×n, on ``root``) over all ranks.

    Parameters
    ----------
    comm : :class:`.comm.Comm`
    g : (m, n) array of ``comm.xp`` on root, m >= n >= 1; ignored elsewhere
    signs : (n,) NumPy ±1 of the real dtype on root (all +1 for the SVD)
    want_v : bool
        Accumulate V (the transformations applied to the columns); root's value counts.
    options : :class:`gpusvd.jacobi.orthogonalize.Options`
    outer : :class:`OuterOptions`

    Returns
    -------
    (result, info): on root, :class:`gpusvd.jacobi.orthogonalize.Orthogonalized` with a
    batch of one, None on the other ranks; :class:`OuterInfo` on every rank. Every rank
    raises ``LinAlgError`` after ``max_sweeps``.
    """
    xp = comm.xp
    (m, n), dtype, signs, want_v = comm.bcast(
        (g.shape, g.dtype, signs, want_v) if comm.rank == root else None, root)
    c = _pairs_per_rank(n, comm.size, outer.pairs_per_rank, xp)
    outer = outer._replace(pairs_per_rank=c)
    blocks = _Blocks(n, 2 * comm.size * c)
    table = [[tuple(int(i) for i in pair) for pair in step]
             for step in pivot_strategy(inner_name(options.strategy), 2 * comm.size * c)]
    held = table[0]
    width = m + (n if want_v else 0)   # a message: rows of G, then of V

    def columns_of(held, rank):
        return np.concatenate([blocks.of_pair(held[rank * c + j]) for j in range(c)])

    parts = None
    if comm.rank == root:
        gt = xp.ascontiguousarray(g.T)
        parts = [gt[xp.asarray(columns_of(held, r))] for r in range(comm.size)]
    shapes = [(len(columns_of(held, r)), m) for r in range(comm.size)]
    mine = comm.scatter(parts, root, shapes, dtype)
    if want_v:
        mine = xp.concatenate(
            [mine, _identity_rows(xp, columns_of(held, comm.rank), n, dtype)], axis=1)
    ends = np.cumsum([len(blocks.of_pair(held[comm.rank * c + j])) for j in range(c)])
    data = [mine[start:end] for start, end in zip(np.concatenate([[0], ends[:-1]]), ends)]
    counts = {"steps": 0, "skipped": 0}
    for sweep in range(1, options.max_sweeps + 1):
        data, held, rotated = _sweep(comm, data, held, table, blocks, signs, m, options,
                                     outer, counts)
        if rotated == 0:
            break
        move = next_move(held, table[0])          # into the next outer sweep
        data = _exchange(comm, move, held, data, blocks, c)
        held = move.pairs
    else:
        raise LinAlgError(f"distributed jacobi: no convergence in {options.max_sweeps} "
                          "outer block sweeps; raise max_sweeps")
    info = OuterInfo(sweeps=sweep, pairs_per_rank=c, **counts)

    parts = comm.gather(xp.concatenate(data), root,
                        [(len(columns_of(held, r)), width) for r in range(comm.size)], dtype)
    if comm.rank != root:
        return None, info
    order = np.concatenate([columns_of(held, r) for r in range(comm.size)])
    whole = xp.concatenate(parts)[xp.asarray(np.argsort(order))]
    return _sorted(xp, whole[:, :m], whole[:, m:] if want_v else None, signs), info
