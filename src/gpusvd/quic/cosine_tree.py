"""Cosine trees (Holmes, Gray & Isbell 2008; paper 001 §2.1–2.2).

A node owns a set of rows of the matrix, kept as an index array on the host (§2.2: rows
are never moved into contiguous chunks). A node is split by drawing a pivot row by
length-squared sampling (probability ∝ ‖r_i‖²), computing |cos| of every row of the node
with the pivot, and sending each row to the child whose extreme — the minimum or the
maximum |cos| in the node — it is nearer to. The basis candidate of a node is its mean row.

The maximum is taken over the rows other than the pivot, as mlpack's ``CosineTree`` does
(``max(cosines % (cosines < 1))``): the pivot's own |cos| is 1, and in many dimensions
every other row is far from it (random rows have |cos| ≈ 1/√rank), so with the pivot
counted every row but the pivot is "nearer the minimum" and each split only peels off
one row — the tree degenerates into a list and grows one basis vector per step.

The device work is batched over all the nodes split in one step. On the GPU each row's
inner product with its node's pivot is one thread block (the paper's per-row CUDA
blocks), and the children's means are sums over each child's rows by pieces
(:mod:`.means_cuda`): every row is read once. Elsewhere the inner products are one GEMM
``A·[p_1 … p_b]`` over the row range the nodes cover and the means one GEMM ``S·A`` with
a sparse-in-spirit selection matrix S, both in row chunks so their temporaries stay small.

Departure: a row enters its child's mean reflected into the pivot's half-space,
sign(r_i·p)·r_i. The split already treats r and −r alike (it uses |cos|); the plain
mean of a node holding both vanishes and adds nothing to the basis, while the error
‖A − A V̂V̂ᵀ‖_F, which is all QUIC-SVD controls, does not depend on the sign of a row.

Centered candidates. The root's mean c is the first basis vector (the paper inserts it
before any split), and a child's candidate is its mean of r_i − c, not of r_i: the two
differ by a multiple of c, so they add the same direction to the basis. When the rows
share a dominant common part (entries all positive, as in the paper's generator with
uniform [0, 1] factors), a child's mean differs from the basis already built by a small
fraction δ of its length; formed from the raw rows, its rounding (u·‖mean‖) is then a
fraction u/δ of the new direction, and the basis drifts out of the row space: in float32
at 16384² rank 500 the residual stalled at 1.8e-8·‖A‖²_F, above eps = 1e-8. The
subtraction r_i − c is exact to u relative to its result, so the rounding of the
centered mean is relative to the part that is new.
"""

import dataclasses
import math

import numpy as np

from .._core.backend import to_host
from . import means_cuda
from .monte_carlo import length_squared_positions

# Entries of the temporary selection matrix S (children × rows) or inner-product block
# (rows × pivots) per chunk of rows: 2^23 entries, 32 MiB in float32.
CHUNK_ENTRIES = 1 << 23
# Entries of the centered copy A_chunk − c of a row chunk the means are taken over:
# 2^25, 128 MiB in float32 (16384-wide rows: 2048 rows, 8 chunks for a 16384² matrix).
CENTERED_ENTRIES = 1 << 25


@dataclasses.dataclass(eq=False)
class Node:
    """A cosine-tree node: the rows it owns, their mass ‖A_node‖²_F, its error bound."""

    rows: np.ndarray
    mass: float
    error: float = math.inf


def row_norms2(a, xp):
    """‖r_i‖² of every row of ``a``, accumulated in float64, as a host array."""
    m = a.shape[0]
    out = xp.empty(m, dtype=xp.float64)
    step = max(1, CHUNK_ENTRIES // max(a.shape[1], 1))
    for r0 in range(0, m, step):
        block = a[r0:r0 + step].astype(xp.float64, copy=False)
        out[r0:r0 + step] = (block * block).sum(axis=1)
    return to_host(out)


def _row_chunks(rows_sorted, m, step):
    """(r0, r1, lo, hi): row ranges of ``step`` rows holding entries lo:hi of the sorted rows."""
    for r0 in range(0, m, step):
        r1 = min(r0 + step, m)
        lo, hi = np.searchsorted(rows_sorted, [r0, r1])
        if hi > lo:
            yield r0, r1, int(lo), int(hi)


def _pivot_dots(a, rows, seg, pivots, order, xp):
    """r_i·p_{seg_i} for every (row, node) pair, as a host float64 array.

    ``order`` sorts ``rows`` (the device work walks the rows in memory order). On the GPU
    one inner product an entry (means_cuda.py), elsewhere GEMMs of the rows by the
    pivots."""
    if means_cuda.applies(a):
        return to_host(means_cuda.row_dots(a, rows, pivots[seg]))
    rows_d = xp.asarray(rows[order])
    seg_d = xp.asarray(seg[order])
    piv_t = a[xp.asarray(pivots)].T
    dots = xp.empty(len(rows), dtype=a.dtype)
    step = max(1, CHUNK_ENTRIES // len(pivots))
    for r0, r1, lo, hi in _row_chunks(rows[order], a.shape[0], step):
        g = a[r0:r1] @ piv_t
        dots[lo:hi] = g[rows_d[lo:hi] - r0, seg_d[lo:hi]]
    host = to_host(dots)
    out = np.empty(len(rows))
    out[order] = host
    return out


def _weighted_means(a, rows, child, weights, nchild, order, center, xp):
    """M (nchild × n) with M[c] = Σ weights_i·(a[rows_i] − center) over the entries with
    child_i = c; ``order`` sorts ``rows``. On the GPU by segments of the entries sorted
    by child (means_cuda.py), elsewhere as GEMMs of a selection matrix."""
    if means_cuda.applies(a):
        by_child = np.argsort(child, kind="stable")
        starts = np.concatenate([[0], np.cumsum(np.bincount(child, minlength=nchild))])
        return means_cuda.weighted_means(a, rows[by_child], starts, weights[by_child], center)
    rows_d = xp.asarray(rows[order])
    child_d = xp.asarray(child[order])
    w_d = xp.asarray(weights[order].astype(a.dtype))
    means = xp.zeros((nchild, a.shape[1]), dtype=a.dtype)
    step = max(1, min(CHUNK_ENTRIES // nchild, CENTERED_ENTRIES // max(a.shape[1], 1)))
    for r0, r1, lo, hi in _row_chunks(rows[order], a.shape[0], step):
        sel = xp.zeros((nchild, r1 - r0), dtype=a.dtype)
        sel[child_d[lo:hi], rows_d[lo:hi] - r0] = w_d[lo:hi]
        means += sel @ (a[r0:r1] - center)
    return means


def root_mean(a, rows, xp):
    """The mean of the rows ``rows`` (the root's), accumulated in float64, in a.dtype."""
    if means_cuda.applies(a):
        weights = np.full(len(rows), 1.0 / max(len(rows), 1))
        return means_cuda.weighted_means(a, rows, np.array([0, len(rows)]), weights)[0]
    total = xp.zeros(a.shape[1], dtype=xp.float64)
    mask = np.zeros(a.shape[0], dtype=bool)
    mask[rows] = True
    step = max(1, CHUNK_ENTRIES // max(a.shape[1], 1))
    for r0 in range(0, a.shape[0], step):
        chosen = xp.asarray(np.flatnonzero(mask[r0:r0 + step]) + r0)
        total += a[chosen].sum(axis=0, dtype=xp.float64)
    return (total / max(len(rows), 1)).astype(a.dtype)


def split_nodes(a, nodes, norms2, rng, xp, center):
    """Split each node (≥ 2 rows) in two; return the children and their basis candidates.

    Returns ``(children, candidates)``: ``children[2j]`` holds the rows of ``nodes[j]``
    nearer the minimum |cos| with the pivot, ``children[2j + 1]`` those nearer the
    maximum; ``candidates`` (2b × n, on the device of ``a``) are the children's
    sign-aligned means of the rows less ``center`` (see the module docstring). The pivots (one per node, in order) are drawn by
    ``monte_carlo.length_squared_positions`` with one ``rng.random`` call.
    """
    b = len(nodes)
    sizes = np.array([len(node.rows) for node in nodes])
    rows = np.concatenate([node.rows for node in nodes])
    seg = np.repeat(np.arange(b), sizes)
    starts = np.cumsum(sizes) - sizes
    at, _ = length_squared_positions(norms2[rows], starts, np.ones(b, np.int64), rng)
    pivots = rows[at]

    by_row = np.argsort(rows, kind="stable")
    dots = _pivot_dots(a, rows, seg, pivots, by_row, xp)
    # Two roots, not the root of the product: the product of two squared norms overflows
    # for rows near the float range (1e300-scaled input), each root does not.
    cos = np.abs(dots) / (np.sqrt(norms2[rows]) * np.sqrt(norms2[pivots][seg]))
    is_pivot = np.zeros(len(rows), dtype=bool)
    is_pivot[at] = True
    cmin = np.minimum.reduceat(cos, starts)
    cmax = np.maximum.reduceat(np.where(is_pivot, -np.inf, cos), starts)
    near_max = (cmax[seg] - cos) <= (cos - cmin[seg])
    # All other |cos| equal (e.g. parallel rows, or two rows): the pivot against the rest.
    side = np.bincount(2 * seg + near_max, minlength=2 * b).reshape(b, 2)
    near_max = np.where(side.min(axis=1)[seg] == 0, is_pivot, near_max)

    child = 2 * seg + near_max
    counts = np.bincount(child, minlength=2 * b)
    signs = np.where(dots >= 0, 1.0, -1.0)
    candidates = _weighted_means(a, rows, child, signs / counts[child], 2 * b, by_row,
                                 center, xp)

    order = np.argsort(child, kind="stable")
    pieces = np.split(rows[order], np.cumsum(counts)[:-1])
    mass = np.bincount(child, weights=norms2[rows], minlength=2 * b)
    children = [Node(piece, float(w)) for piece, w in zip(pieces, mass)]
    return children, candidates
