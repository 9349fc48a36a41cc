"""The outer block sweeps of the multi-GPU Jacobi level (paper 003, §5).

With g ranks the n columns of G (and of V) form 2g block-columns of nearly equal width
(n/2g, the first n mod 2g one wider; the paper assumes 2g | n). Root sends each rank
the pair of the first step of the outer p-strategy of order 2g; then every outer block
step is, on every rank at once:

(0)–(3) the local step of :mod:`.local` (shorten, single-GPU Jacobi, postmultiply);
(4)–(6) the exchange of one block-column (with its rows of V, in one message) by the
        block-column mapping of :mod:`.mapping`, between device synchronizations.

At the end of an outer sweep the ranks add up their proper-rotation flags (§4.5,
"+-reduce their local counters"); the iteration stops at zero, or raises
:class:`gpusvd.LinAlgError` on every rank after ``max_sweeps``. Root gathers the
block-columns, takes σᵢ = ‖gᵢ‖ (DRDSSQ) and sorts them descending, as the
single-process :func:`gpusvd.jacobi.orthogonalize.orthogonalize` does.

A column's sign (HSVD) moves with its position, not with the column: the inner Jacobi
swaps only columns of equal sign, so the signs by position never change and every
rank knows them from the start.
"""

import numpy as np

from .._core.errors import LinAlgError
from ..jacobi.blocked import inner_name
from ..jacobi.norms import column_norms
from ..jacobi.orthogonalize import Orthogonalized
from ..jacobi.strategies import pivot_strategy
from .local import outer_block_step
from .mapping import next_move


class _Blocks:
    """The 2g block-columns: their widths and the column indices of each."""

    def __init__(self, n, ranks):
        count = 2 * ranks
        widths = [n // count + (b < n % count) for b in range(count)]
        starts = np.concatenate([[0], np.cumsum(widths)]).astype(int)
        self.columns = [np.arange(starts[b], starts[b + 1]) for b in range(count)]

    def of_pair(self, pair):
        return np.concatenate([self.columns[b] for b in pair])

    def width(self, b):
        return len(self.columns[b])


def _split(x, pair, blocks):
    """The rows of ``x`` (a pair's block-columns stacked) as a dict block -> rows."""
    w = blocks.width(pair[0])
    return {pair[0]: x[:w], pair[1]: x[w:]}


def _exchange(comm, move, held, data, blocks, dtype):
    """Phases (4)–(6): send one block-column, receive its replacement, per ``move``."""
    rank = comm.rank
    send, recv = move.send[rank], move.recv[rank]
    if send is None and recv is None:
        return data
    rows_of = _split(data, held[rank], blocks)
    shape = None if recv is None else (blocks.width(recv[0]), data.shape[1])
    got = comm.exchange(None if send is None else rows_of[send[0]],
                        None if send is None else send[1], shape, dtype,
                        None if recv is None else recv[1])
    rows_of[recv[0]] = got
    return comm.xp.concatenate([rows_of[b] for b in move.pairs[rank]])


def _identity_rows(xp, columns, n, dtype):
    """The rows ``columns`` of the identity of order n: V_A of the start, transposed."""
    vt = xp.zeros((len(columns), n), dtype)
    vt[xp.arange(len(columns)), xp.asarray(columns)] = 1
    return vt


def _sweep(comm, data, held, table, blocks, signs, m, options):
    """One outer block sweep; returns (data, held, proper-rotation flags of all ranks)."""
    xp = comm.xp
    rotated = 0
    for s in range(len(table)):
        with comm.phase():
            gt = data[:, :m]
            vt = data[:, m:] if data.shape[1] > m else None
            mine = blocks.of_pair(held[comm.rank])
            gt, vt, step_rotated = outer_block_step(gt, vt, signs[mine], xp, options)
            data = gt if vt is None else xp.concatenate([gt, vt], axis=1)
        rotated += step_rotated
        if s + 1 < len(table):
            move = next_move(held, table[s + 1])
            data = _exchange(comm, move, held, data, blocks, data.dtype)
            held = move.pairs
    return data, held, comm.sum(rotated)


def _sorted(xp, gt, vt, signs):
    """σ = the column norms, descending (stable), with their columns, V and signs."""
    g = gt.T[None]
    s = column_norms(g, xp)
    order = xp.argsort(-s, axis=1, kind="stable")
    host_order = order.get() if hasattr(order, "get") else order
    v = None if vt is None else xp.take_along_axis(vt.T[None], order[:, None, :], axis=2)
    return Orthogonalized(xp.take_along_axis(g, order[:, None, :], axis=2),
                          xp.take_along_axis(s, order, axis=1), v,
                          signs[None][:, host_order[0]])


def orthogonalize(comm, g, signs, *, want_v, options, root):
    """Jacobi-orthogonalize the columns of ``g`` (m×n, on ``root``) over all ranks.

    Parameters
    ----------
    comm : :class:`.comm.Comm`
    g : (m, n) array of ``comm.xp`` on root, m >= n >= 1; ignored elsewhere
    signs : (n,) NumPy ±1 of the real dtype on root (all +1 for the SVD)
    want_v : bool
        Accumulate V (the transformations applied to the columns); root's value counts.
    options : :class:`gpusvd.jacobi.orthogonalize.Options`

    Returns
    -------
    On root, :class:`gpusvd.jacobi.orthogonalize.Orthogonalized` with a batch of one;
    None on the other ranks. Every rank raises ``LinAlgError`` after ``max_sweeps``.
    """
    xp = comm.xp
    (m, n), dtype, signs, want_v = comm.bcast(
        (g.shape, g.dtype, signs, want_v) if comm.rank == root else None, root)
    blocks = _Blocks(n, comm.size)
    table = [[tuple(int(i) for i in pair) for pair in step]
             for step in pivot_strategy(inner_name(options.strategy), 2 * comm.size)]
    held = table[0]
    width = m + (n if want_v else 0)   # a message: rows of G, then of V

    parts = None
    if comm.rank == root:
        gt = xp.ascontiguousarray(g.T)
        parts = [gt[xp.asarray(blocks.of_pair(pair))] for pair in held]
    shapes = [(len(blocks.of_pair(pair)), m) for pair in held]
    data = comm.scatter(parts, root, shapes, dtype)
    if want_v:
        data = xp.concatenate([data, _identity_rows(xp, blocks.of_pair(held[comm.rank]), n,
                                                    dtype)], axis=1)
    for _ in range(options.max_sweeps):
        data, held, rotated = _sweep(comm, data, held, table, blocks, signs, m, options)
        if rotated == 0:
            break
        move = next_move(held, table[0])          # into the next outer sweep
        data = _exchange(comm, move, held, data, blocks, dtype)
        held = move.pairs
    else:
        raise LinAlgError(f"distributed jacobi: no convergence in {options.max_sweeps} "
                          "outer block sweeps; raise max_sweeps")

    widths = [(len(blocks.of_pair(pair)), width) for pair in held]
    parts = comm.gather(data, root, widths, dtype)
    if comm.rank != root:
        return None
    order = np.concatenate([blocks.of_pair(pair) for pair in held])
    whole = xp.concatenate(parts)[xp.asarray(np.argsort(order))]
    return _sorted(xp, whole[:, :m], whole[:, m:] if want_v else None, signs)
