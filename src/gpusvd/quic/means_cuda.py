"""The cosine tree's children's means and its rows' inner products with their pivots on
the GPU (:func:`.cosine_tree._weighted_means`, :func:`.cosine_tree.root_mean` and
:func:`.cosine_tree._pivot_dots`): the launchers of ``kernels/weighted_means.cu`` and
their host twins.

The GEMM form S·(A − c) multiplies a dense selection matrix S (children × rows) into a
centered copy of A: its flops grow with the number of children although each row
belongs to one, and the centered copy is a pass of A's size each step. Here each child's
weighted sum Σ_t w_t·(a[rows_t] − c) is a segment of the entries sorted by child: the
segments are cut into pieces of at most ``PIECE_ROWS`` rows, each piece summed by one
thread block (one thread a column), then each child's pieces added in order. Every row
is read once, in float64, with no atomics: the same bits on every call.
"""

import numpy as np

from .._core import kernels
from .._core.backend import is_cupy_array

_KERNEL_FILE = "quic/kernels/weighted_means.cu"
_THREADS = 256
# Rows a block of piece_sums adds: 128 rows of a 16384-wide float32 A are 8 MiB, and the
# 16384 rows of a 16384² partition make 128 pieces a column tile, ~8000 blocks.
PIECE_ROWS = 128
# gridDim.y's limit: a longer segment takes longer pieces.
_MAX_GRID_Y = 65535
REAL = (np.dtype(np.float32), np.dtype(np.float64))


def applies(a):
    """Whether :func:`weighted_means` takes ``a``: a real CuPy matrix with unit column
    stride."""
    return (is_cupy_array(a) and a.dtype in REAL and a.ndim == 2
            and a.strides[1] == a.itemsize)


def pieces(starts, piece_rows):
    """The segments [starts[c], starts[c + 1]) cut into pieces of at most ``piece_rows``
    entries: ``(piece_start, first_piece)``, piece p spanning piece_start[p] to
    piece_start[p + 1], child c's pieces first_piece[c] to first_piece[c + 1].

    Examples
    --------
    >>> pieces(np.array([0, 5, 5, 7]), 2)
    (array([0, 2, 4, 5, 7]), array([0, 3, 3, 4]))
    """
    starts = np.asarray(starts, np.int64)
    counts = np.diff(starts)
    per_child = -(-counts // piece_rows)
    first_piece = np.concatenate([[0], np.cumsum(per_child)]).astype(np.int64)
    owner = np.repeat(np.arange(len(counts)), per_child)
    offset = np.arange(first_piece[-1]) - first_piece[owner]
    piece_start = np.append(starts[owner] + offset * piece_rows, starts[-1])
    return piece_start.astype(np.int64), first_piece


def _piece_rows(starts):
    """PIECE_ROWS, doubled until the pieces fit one grid dimension."""
    counts = np.diff(starts)
    rows = PIECE_ROWS
    while int((-(-counts // rows)).sum()) > _MAX_GRID_Y:
        rows *= 2
    return rows


def weighted_means(a, rows, starts, weights, center=None):
    """M (children × n, a's dtype) with M[c] = Σ_t weights_t·(a[rows_t] − center) over
    the entries t of child c, for a CuPy ``a`` that :func:`applies` takes: ``rows``
    (int, host) the entries' rows sorted by child, ``starts`` (host, children + 1) where
    each child's entries begin, ``weights`` (host) one per entry, ``center`` a CuPy row
    of ``a``'s length or None (zero)."""
    import cupy

    n = a.shape[1]
    children = len(starts) - 1
    out = cupy.empty((children, n), a.dtype)
    if children == 0 or n == 0:
        return out
    piece_start, first_piece = pieces(starts, _piece_rows(starts))
    count = len(piece_start) - 1
    ctype = kernels.CTYPE[a.dtype]
    center = cupy.zeros(n, a.dtype) if center is None else center.astype(a.dtype, copy=False)
    partial = cupy.empty((max(count, 1), n), np.float64)
    tiles = (n + _THREADS - 1) // _THREADS
    if count:
        kernels.get_kernel(_KERNEL_FILE, f"piece_sums<{ctype}>")(
            (tiles, count), (_THREADS,),
            (a, np.int64(n), np.int64(a.strides[0] // a.itemsize),
             cupy.asarray(np.asarray(rows, np.int64)), cupy.asarray(piece_start),
             cupy.asarray(np.asarray(weights, np.float64)),
             cupy.ascontiguousarray(center), partial))
    kernels.get_kernel(_KERNEL_FILE, f"child_sums<{ctype}>")(
        (tiles, children), (_THREADS,),
        (partial, np.int64(n), cupy.asarray(first_piece), out))
    return out


def weighted_means_host(a, rows, starts, weights, center=None):
    """:func:`weighted_means`'s arithmetic in NumPy, in the kernel's order (each column's
    sum over a piece's rows one after another, in float64; then each child's pieces in
    order): the twin its tests compare with, bit for bit where no fma is contracted."""
    n = a.shape[1]
    rows, weights = np.asarray(rows, np.int64), np.asarray(weights, np.float64)
    piece_start, first_piece = pieces(starts, _piece_rows(np.asarray(starts)))
    c = np.zeros(n) if center is None else np.asarray(center).astype(np.float64)
    partial = np.zeros((len(piece_start) - 1, n))
    for p in range(len(piece_start) - 1):
        for t in range(piece_start[p], piece_start[p + 1]):
            partial[p] += weights[t] * (a[rows[t]].astype(np.float64) - c)
    out = np.zeros((len(starts) - 1, n))
    for child in range(len(starts) - 1):
        for p in range(first_piece[child], first_piece[child + 1]):
            out[child] += partial[p]
    return out.astype(a.dtype)


# Threads of a row_dots block (ROW_DOTS_THREADS of the kernel file: its shared array).
_DOT_THREADS = 256


def row_dots(a, rows, partners):
    """a[rows_t]·a[partners_t] for every entry t, in float64, as a CuPy array: one block
    an entry (``kernels/weighted_means.cu``), each row read once, where the GEMM form
    multiplied every row by every pivot."""
    import cupy

    count = len(rows)
    out = cupy.empty(count, np.float64)
    if count == 0:
        return out
    kernels.get_kernel(_KERNEL_FILE, f"row_dots<{kernels.CTYPE[a.dtype]}>")(
        (count,), (_DOT_THREADS,),
        (a, np.int64(a.shape[1]), np.int64(a.strides[0] // a.itemsize),
         cupy.asarray(np.asarray(rows, np.int64)),
         cupy.asarray(np.asarray(partners, np.int64)), out))
    return out


def row_dots_host(a, rows, partners):
    """:func:`row_dots`'s arithmetic in NumPy: each product in float64, summed in column
    order (a sequential scan), as the kernel's host build sums them."""
    x = a[np.asarray(rows, np.int64)].astype(np.float64)
    y = a[np.asarray(partners, np.int64)].astype(np.float64)
    if x.shape[1] == 0:
        return np.zeros(len(x))
    return np.cumsum(x * y, axis=1)[:, -1]
