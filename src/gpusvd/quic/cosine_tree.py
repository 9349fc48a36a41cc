"""Cosine trees (Holmes, Gray & Isbell 2008; paper 001 §2.1–2.2).

A node owns a set of rows of the matrix, kept as an index array on the host (§2.2: rows
are never moved into contiguous chunks). A node is split by drawing a pivot row by
length-squared sampling (probability ∝ ‖r_i‖²), computing |cos| of every row of the node
with the pivot, and sending each row to the child whose extreme — the minimum or the
maximum |cos| in the node — it is nearer to. The basis candidate of a node is its mean row.

The device work is batched over all the nodes split in one step: the inner products with
the pivots are one GEMM ``A·[p_1 … p_b]`` over the row range the nodes cover (the paper's
per-row CUDA blocks become a library GEMM), and the children's means are one GEMM
``S·A`` with a sparse-in-spirit selection matrix S, both done in row chunks so their
temporaries stay small.

Departure: a row enters its child's mean reflected into the pivot's half-space,
sign(r_i·p)·r_i. The split already treats r and −r alike (it uses |cos|); the plain
mean of a node holding both vanishes and adds nothing to the basis, while the error
‖A − A V̂V̂ᵀ‖_F, which is all QUIC-SVD controls, does not depend on the sign of a row.
"""

import dataclasses
import math

import numpy as np

# Entries of the temporary selection matrix S (children × rows) or inner-product block
# (rows × pivots) per chunk of rows: 2^23 entries, 32 MiB in float32.
CHUNK_ENTRIES = 1 << 23


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
    return out.get() if hasattr(out, "get") else out


def length_squared_pick(rows, norms2, rng):
    """One row of ``rows`` drawn with probability ∝ ‖r_i‖² (length-squared sampling)."""
    cum = np.cumsum(norms2[rows])
    k = int(np.searchsorted(cum, rng.random() * cum[-1], side="right"))
    return int(rows[min(k, len(rows) - 1)])


def _row_chunks(rows_sorted, m, step):
    """(r0, r1, lo, hi): row ranges of ``step`` rows holding entries lo:hi of the sorted rows."""
    for r0 in range(0, m, step):
        r1 = min(r0 + step, m)
        lo, hi = np.searchsorted(rows_sorted, [r0, r1])
        if hi > lo:
            yield r0, r1, int(lo), int(hi)


def _pivot_dots(a, rows, seg, pivots, xp):
    """r_i·p_{seg_i} for every (row, node) pair, as a host float64 array."""
    order = np.argsort(rows, kind="stable")
    rows_d = xp.asarray(rows[order])
    seg_d = xp.asarray(seg[order])
    piv_t = a[xp.asarray(pivots)].T
    dots = xp.empty(len(rows), dtype=a.dtype)
    step = max(1, CHUNK_ENTRIES // len(pivots))
    for r0, r1, lo, hi in _row_chunks(rows[order], a.shape[0], step):
        g = a[r0:r1] @ piv_t
        dots[lo:hi] = g[rows_d[lo:hi] - r0, seg_d[lo:hi]]
    host = dots.get() if hasattr(dots, "get") else dots
    out = np.empty(len(rows))
    out[order] = host
    return out


def _weighted_means(a, rows, child, weights, nchild, xp):
    """M (nchild × n) with M[c] = Σ weights_i·a[rows_i] over the entries with child_i = c."""
    order = np.argsort(rows, kind="stable")
    rows_d = xp.asarray(rows[order])
    child_d = xp.asarray(child[order])
    w_d = xp.asarray(weights[order].astype(a.dtype))
    means = xp.zeros((nchild, a.shape[1]), dtype=a.dtype)
    step = max(1, CHUNK_ENTRIES // nchild)
    for r0, r1, lo, hi in _row_chunks(rows[order], a.shape[0], step):
        sel = xp.zeros((nchild, r1 - r0), dtype=a.dtype)
        sel[child_d[lo:hi], rows_d[lo:hi] - r0] = w_d[lo:hi]
        means += sel @ a[r0:r1]
    return means


def split_nodes(a, nodes, norms2, rng, xp):
    """Split each node (≥ 2 rows) in two; return the children and their basis candidates.

    Returns ``(children, candidates)``: ``children[2j]`` holds the rows of ``nodes[j]``
    nearer the minimum |cos| with the pivot, ``children[2j + 1]`` those nearer the
    maximum; ``candidates`` (2b × n, on the device of ``a``) are the children's
    sign-aligned means.
    """
    b = len(nodes)
    sizes = np.array([len(node.rows) for node in nodes])
    rows = np.concatenate([node.rows for node in nodes])
    seg = np.repeat(np.arange(b), sizes)
    starts = np.cumsum(sizes) - sizes
    pivots = np.array([length_squared_pick(node.rows, norms2, rng) for node in nodes])

    dots = _pivot_dots(a, rows, seg, pivots, xp)
    cos = np.abs(dots) / np.sqrt(norms2[rows] * norms2[pivots][seg])
    cmin = np.minimum.reduceat(cos, starts)
    cmax = np.maximum.reduceat(cos, starts)
    near_max = (cmax[seg] - cos) <= (cos - cmin[seg])
    # All |cos| equal (e.g. parallel rows): the pivot alone against the rest.
    side = np.bincount(2 * seg + near_max, minlength=2 * b).reshape(b, 2)
    for j in np.flatnonzero(side.min(axis=1) == 0):
        mine = seg == j
        near_max[mine] = rows[mine] == pivots[j]

    child = 2 * seg + near_max
    counts = np.bincount(child, minlength=2 * b)
    signs = np.where(dots >= 0, 1.0, -1.0)
    candidates = _weighted_means(a, rows, child, signs / counts[child], 2 * b, xp)

    order = np.argsort(child, kind="stable")
    pieces = np.split(rows[order], np.cumsum(counts)[:-1])
    children = [Node(piece, float(norms2[piece].sum())) for piece in pieces]
    return children, candidates
