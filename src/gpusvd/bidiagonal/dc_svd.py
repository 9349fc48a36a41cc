"""SVD of a real upper bidiagonal B by divide and conquer, its O(n³) work as GEMMs in xp.

The vectors solver of the two-stage SVD, in place of LAPACK's dbdsdc
(:mod:`.dbdsdc`) on the host: Gu & Eisenstat, "A divide-and-conquer algorithm for
the bidiagonal SVD", SIAM J. Matrix Anal. Appl. 16 (1995) 79–92, in the form of LAPACK's
dbdsdc → dlasd0 → dlasd1/2/3/4: U and V (n×n) and the merges' GEMMs in the array
namespace ``xp``, only O(n) data on the host.

1. Split. B falls apart where |e_i| ≤ ε·sqrt(|d_i|·|d_{i+1}|) (dstedc's test, a
   perturbation of at most ε·‖B‖; :func:`_blocks`); each block is scaled by a power of
   two to max |entry| ≈ 1 (exact).
2. Tree (dlasdt): a block of m rows, n×(n + sqre) with sqre ∈ {0, 1}, is cut at its
   middle row k into B₁ (rows above k: k × (k + 1), sqre = 1), the coupling row
   (α = d_k, β = e_k) and B₂ (rows below, of the parent's sqre), until at most
   ``divide_conquer_leaf_size`` rows (a tunable) are left (Gu & Eisenstat, Sec. 2).
3. Leaves: LAPACK's divide and conquer of the m × (m + sqre) bidiagonal (dlasd0, as
   dbdsdc calls it) on the host, the leaves split over host threads, each scaled by a
   power of two of its own; the extra column of V for sqre = 1 is B₁'s null vector. A
   caller that makes B row by row can have them solved as the rows come
   (:class:`LeafFeed`): a leaf solved early is taken only if its input is bit for bit
   the final one.
4. Merge (dlasd1), level by level: with B_i = U_i·[D_i 0]·V_iᵀ,
   B = diag(U₁, 1, U₂)·M·diag(V₁, V₂)ᵀ after a permutation, M being zero but for its
   first row z (α times the last row of V₁, β times the first row of V₂) and the
   diagonal (0, D₁, D₂). The two null columns' weights α·λ and β·φ are rotated into one,
   z₁ = (α²λ² + β²φ²)^½ on the pole d₁ = 0, leaving V's null vector for the parent
   (dlasd1 / dlasd2).
   - Deflation (dlasd2, TOL = 64·ε·max(|α|, |β|, max D)): |z_j| ≤ TOL makes d_j a
     singular value; two poles with |d_j − d_i|·|c·s| ≤ TOL are rotated (U's and V's
     columns alike) so that z_i vanishes; a pole with d_j·|s| ≤ TOL is rotated into the
     zero pole by V's columns only, the zero pole having no row of its own (dlasd2's
     special case of the first pole), and leaves the value c·d_j; |z₁| ≤ TOL is raised to
     TOL (dlasd2).
   - The k roots of 1 + Σ z_i²/((d_i − σ)(d_i + σ)) = 0 (:mod:`.secular_svd`), each as
     an offset τ from a pole, the differences d_i ∓ σ formed from it (dlasd4).
   - Gu & Eisenstat's ẑ (their eq. (3.3), dlasd3): the weights for which the roots are
     exact, ẑ_i² = (σ_k² − d_i²)·∏_{j<i} (σ_j² − d_i²)/(d_j² − d_i²)·
     ∏_{i≤j<k} (σ_j² − d_i²)/(d_{j+1}² − d_i²), each factor in (0, 1] by interlacing
     and each difference of squares a product of the differences above. M's vectors:
     v_j = (ẑ_i/((d_i − σ_j)(d_i + σ_j)))_i, u_j = (−1, d_i·v_{ij})_{i≥2}, normalized
     (dlasd3, dividing twice as it does to spare underflow).
   - U ← U·U_M and V ← V·V_M on the kept columns as GEMMs in xp, a tree level's merges
     together (:func:`_update_level`); the largest merges each half's rows against only
     the columns that can be nonzero there (:func:`_supports`; dlasd3's GEMMs on
     dlasd2's column types): U's coupling row is e_k's, so its new row is U_M's first;
     V's rows split at k.

Departures from LAPACK: leaves of up to ``divide_conquer_leaf_size`` rows (128; LAPACK's
SMLSIZ is 25), by LAPACK's own divide and conquer (dlasd0) rather than dlasdq. Columns
are never sorted between merges; a host array of values follows them and each merge
sorts its poles through an index. Each block and each merge is scaled by a power of two,
not by its norm.

On a GPU (``xp`` = CuPy): the n×n work stays on the device and the host keeps O(n) per
merge. A tree level's merges touch disjoint blocks, so their coupling rows are read in
one transfer (:func:`_coupling_rows`), the one wait per level; the level's merges are
deflated on the host (while the device still works on the level below), their poles,
weights and rotations cross in one copy, each merge's rotations are one launch
(rotate_pairs_cuda.py), and the level's secular equations (secular_svd_cuda.py) and
vectors (merge_vectors_cuda.py) one launch each, a merge per row of the grid; the level's
values come back in one read at its end. The leaves cross to the device in one copy from
page-locked memory (merge_vectors_cuda.py). The level's merges of up to
``divide_conquer_dense_merge_rows`` rows then update U and V together: their vectors
written straight into one zero-padded stack, their kept columns gathered into another,
one batched GEMM, one scatter (:func:`_update_columns`, merge_vectors_cuda.py); larger
merges by the GEMMs split by support. NOTES.md ("Where things stand") has the timings.

Accuracy: backward stable, ‖B − U·S·Vᵀ‖ and ‖UᵀU − I‖, ‖VᵀV − I‖ of order n·ε; the
values to about n·ε·σ₁ (the deflation's absolute tolerance), not each to itself: for a
graded B take the small values from dqds (:mod:`gpusvd.bidiagonal.dqds`).
"""

import functools
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import numba
import numpy as np

from .._core import profile, tunables
from .._core.backend import array_namespace, to_host
from .._core.errors import LinAlgError
from .._core.memory import free_device_bytes
from .._core.threads import single_threaded_blas, usable_cores
from .._core.validation import working_dtype
from . import merge_vectors_cuda, rotate_pairs_cuda, secular_svd_cuda
from .dbdsdc import leaf_svd
from .secular import check_converged
from .secular_svd import secular_singular_values

# dlamch('E'): LAPACK's unit roundoff, half of NumPy's machine epsilon.
_UNIT_ROUNDOFF = np.finfo(np.float64).eps / 2
# The leaves' host threads each take at least this many rows of leaves (Σ rows): a 32-row
# leaf's SVD takes tens of µs, a task's hand-over about as long.
LEAF_ROWS_PER_THREAD = 512
# dlasd2's deflation tolerance, TOL = 8·8·ε·max(|α|, |β|, max |D|).
_DEFLATION_FACTOR = 64.0
# Rows of U or V rotated together, contiguous in their Fortran-ordered columns: a block of
# one column stays in L1 (256 × 8 bytes) while every rotation passes over it.
_ROW_BLOCK = 256
# The share of the free device memory a group of a level's batched update may hold
# (:func:`_groups`): at n = 8192 a level holds about 1.1 GB, at 16384 2.1 GB.
LEVEL_MEMORY_SHARE = 0.25


def _check(d, e):
    """d and e as float64 host arrays, and the dtype of the results."""
    d, e = to_host(d), to_host(e)
    dtype = working_dtype(np.result_type(d, e), allow_complex=False,
                          what="bidiagonal_svd_dc")
    if d.ndim != 1 or e.ndim != 1 or e.shape[0] != max(d.shape[0] - 1, 0):
        raise ValueError(f"d must be 1-D of length n and e 1-D of length n-1, got shapes "
                         f"{d.shape} and {e.shape}")
    if not (np.isfinite(d).all() and np.isfinite(e).all()):
        raise LinAlgError("the bidiagonal holds NaN or infinity: the input was not finite "
                          "(check_finite=True rejects such input up front)")
    return d.astype(np.float64), e.astype(np.float64), dtype


def _blocks(d, e):
    """Start and end of the blocks B splits into (dstedc's test)."""
    tiny = _UNIT_ROUNDOFF * np.sqrt(np.abs(d[:-1])) * np.sqrt(np.abs(d[1:]))
    cuts = np.flatnonzero(np.abs(e) <= tiny) + 1
    edges = np.concatenate(([0], cuts, [d.shape[0]]))
    return [(start, end) for start, end in zip(edges[:-1], edges[1:]) if end > start]


@numba.njit(parallel=True, cache=True)
def _rotate_host(q, pairs, cs):
    """Columns p, r of q ← (c·q_p + s·q_r, c·q_r − s·q_p) for each (p, r), in order
    (dlasd2's DROT), a block of rows at a time through all of them."""
    m = q.shape[0]
    for block in numba.prange((m + _ROW_BLOCK - 1) // _ROW_BLOCK):
        for t in range(pairs.shape[0]):
            p, r, c, s = pairs[t, 0], pairs[t, 1], cs[t, 0], cs[t, 1]
            for i in range(block * _ROW_BLOCK, min(m, (block + 1) * _ROW_BLOCK)):
                x, y = q[i, p], q[i, r]
                q[i, p] = c * x + s * y
                q[i, r] = c * y - s * x


def _rotate_columns(q, pairs, cs):
    """The rotations of _rotate_host as whole-column operations, for any namespace."""
    for (p, r), (c, s) in zip(pairs, cs):
        x, y = q[:, p].copy(), q[:, r].copy()
        q[:, p] = c * x + s * y
        q[:, r] = c * y - s * x


# Deflation's rotations of U's and V's columns, by the name of their namespace (the CUDA
# twin: one launch per merge); others take _rotate_columns.
_ROTATE = {"numpy": _rotate_host, "cupy": rotate_pairs_cuda.rotate_pairs}


def _rotation(xp):
    """The rotation of column pairs for namespace ``xp``: its twin in :data:`_ROTATE`
    while the tunable ``divide_conquer_rotation_kernel`` is on, else (and for a namespace
    without one) :func:`_rotate_columns`."""
    if tunables.get().divide_conquer_rotation_kernel:
        return _ROTATE.get(xp.__name__, _rotate_columns)
    return _rotate_columns


def _place_host(q, packed, starts, sizes):
    """q[s:s + m, s:s + m] = block for each leaf's start s, size m and host slot
    (``packed[b, :m, :m]`` = blockᵀ, :func:`_solve_leaves`)."""
    for slot, start, m in zip(packed, starts, sizes):
        q[start:start + m, start:start + m] = slot[:m, :m].T


def _place_blocks(q, packed, starts, sizes, xp):
    """_place_host in any namespace, the slots crossing to it in one transfer."""
    _place_host(q, xp.asarray(packed), starts, sizes)


# The leaves' blocks onto U's and V's diagonals, by the name of their namespace (the CUDA
# twin: one copy and one launch for all leaves); others take _place_blocks. And the host
# stacks the leaves are solved into (page-locked for CUDA: the copy at the bus's rate).
_PLACE = {"numpy": _place_host, "cupy": merge_vectors_cuda.place_blocks}
_LEAF_STACK = {"cupy": merge_vectors_cuda.leaf_stack}


def _leaf_input(d, e, start, end, sqre):
    """The bidiagonal of the leaf of rows [start, end) (and its columns to end + sqre),
    scaled by a power of two to a largest entry in [1/2, 1), and that power: (d, e,
    exponent). Scaled by itself, a leaf's input is the same bits whatever power of two
    the whole bidiagonal was scaled by, so a leaf solved before the bidiagonal was known
    (:class:`LeafFeed`) can be compared bit for bit with the one the block would solve."""
    dl, el = d[start:end], e[start:end - 1 + sqre]
    exponent = -np.frexp(max(np.abs(dl).max(), np.abs(el).max(initial=0.0)))[1]
    return np.ldexp(dl, exponent), np.ldexp(el, exponent), int(exponent)


def _solve_leaf(d, e, sqre):
    """(U, s, Vᵀ) of the m×(m + sqre) bidiagonal (d, e), scaled (:func:`_leaf_input`):
    LAPACK's dlasd0 (:func:`.dbdsdc.leaf_svd`), gesdd on the dense block for one row."""
    if d.shape[0] >= 2:
        return leaf_svd(d, e, sqre)
    block = np.zeros((1, 1 + sqre))
    block[0, 0] = d[0]
    if sqre:
        block[0, 1] = e[0]
    return np.linalg.svd(block)


def _solve_into(d, e, sqre, left, right):
    """:func:`_solve_leaf` of the scaled leaf (d, e), its U into the host slot ``left``
    and its V into ``right`` by columns (``slot[:m, :m]`` = blockᵀ); its values."""
    u, s, vt = _solve_leaf(d, e, sqre)
    left[:u.shape[0], :u.shape[0]] = u.T
    right[:vt.shape[0], :vt.shape[0]] = vt
    return s


def _solve_leaves(d, e, leaves, lefts, rights):
    """:func:`_solve_leaf` of each leaf (start, end, sqre): its U into ``lefts[i]`` and
    its V into ``rights[i]`` (host stacks of slots at least as large as the leaves, each
    block by columns in its slot's top-left corner: ``slot[:m, :m]`` = blockᵀ), its
    values returned, in the leaves' order.

    The leaves are split over host threads, one per core this process may use (ctypes
    releases the GIL in LAPACK), with BLAS at one thread: a pool of BLAS threads only
    slows a leaf, whose calls are too small to share out. The same bits whatever the
    split."""
    parts = max(1, min(usable_cores(), len(leaves),
                       sum(end - start for start, end, _ in leaves) // LEAF_ROWS_PER_THREAD))
    chunks = np.array_split(np.arange(len(leaves)), parts)

    def solve(chunk):
        values = []
        for i in chunk:
            dl, el, exponent = _leaf_input(d, e, *leaves[i])
            s = _solve_into(dl, el, leaves[i][2], lefts[i], rights[i])
            values.append(np.ldexp(s, -exponent))
        return values

    with single_threaded_blas():
        if parts > 1:
            with ThreadPoolExecutor(parts) as pool:
                return [s for part in pool.map(solve, chunks) for s in part]
        return solve(chunks[0])


class LeafFeed:
    """The leaves of an n-row bidiagonal's divide and conquer, solved on host threads
    while its rows are still being made, for :func:`bidiagonal_svd_dc` to find done.

    The bulge chase finishes B's rows in order (condensed/bulge_cuda.py's
    :func:`~gpusvd.condensed.bulge_cuda.follow`); :meth:`add` takes the rows as they
    come, and each leaf of the tree of one block [0, n) is solved once all of its rows
    are in, scaled by itself (:func:`_leaf_input`). The divide and conquer takes a leaf
    only where its block is [0, n) and the leaf's scaled input is bit for bit the one it
    would solve, and solves the others itself: what arrives early, right or wrong,
    changes when the result is ready, never the result.

    A context manager: from its start to :meth:`collect` (or its end) BLAS runs one
    thread (:func:`single_threaded_blas`, as for the leaves solved in the call) and the
    leaves' threads work; then they are joined and BLAS's threads restored, so the
    merges run as they do without a feed."""

    def __init__(self, n, xp):
        self.leaves = []
        _tree(0, n, 0, 0, self.leaves, [])
        size = max(end - start + sqre for start, end, sqre in self.leaves)
        self.stacks = _LEAF_STACK.get(xp.__name__, np.empty)((2, len(self.leaves), size,
                                                             size))
        self.n = n
        self.taken = 0  # leaves taken by the divide and conquer as they were solved here
        self._d, self._e = np.empty(n), np.empty(max(n - 1, 0))
        self._rows = 0
        self._next = 0  # the first leaf not yet handed to a thread
        self._solved = {}  # leaf → (its scaled d, e and the future of its values)
        self._pool = None
        self._blas = None

    def __enter__(self):
        self._blas = single_threaded_blas()
        self._blas.__enter__()
        self._pool = ThreadPoolExecutor(usable_cores())
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        """Join the leaves' threads and restore BLAS's (once; :meth:`collect` and the
        end of the context call it)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._blas.__exit__(None, None, None)
            self._pool = self._blas = None

    def add(self, start, d, e):
        """B's rows start … start + len(d) − 1 are final: their |diagonal| ``d`` and
        |superdiagonal| ``e`` (float64; e one shorter than d for the last rows of B).
        Rows come in order, start being the number of rows already added."""
        if start != self._rows:
            raise ValueError(f"rows must come in order: expected row {self._rows}, got "
                             f"{start}")
        self._d[start:start + d.shape[0]] = d
        self._e[start:start + e.shape[0]] = e
        self._rows = start + d.shape[0]
        while self._next < len(self.leaves) and self.leaves[self._next][1] <= self._rows:
            i = self._next
            start_i, end, sqre = self.leaves[i]
            dl, el, _ = _leaf_input(self._d, self._e, start_i, end, sqre)
            self._solved[i] = dl, el, self._pool.submit(_solve_into, dl, el, sqre,
                                                        self.stacks[0, i], self.stacks[1, i])
            self._next += 1

    def collect(self, d, e):
        """(stacks, values) of the leaves of the block (d, e) of n rows (scaled, the
        divide and conquer's), values in its scale: each leaf solved here if its input
        is the block's, bit for bit, else solved again now (on the same threads)."""
        inputs = [_leaf_input(d, e, *leaf) for leaf in self.leaves]
        results = []
        for i, (dl, el, _) in enumerate(inputs):
            early = self._solved.get(i)
            if early is not None and _same_bits(early[0], dl) and _same_bits(early[1], el):
                self.taken += 1
                results.append(early[2])
                continue
            if early is not None:
                early[2].result()  # its thread is done with the slots
            results.append(self._pool.submit(_solve_into, dl, el, self.leaves[i][2],
                                             self.stacks[0, i], self.stacks[1, i]))
        values = [np.ldexp(result.result(), -exponent)
                  for result, (_, _, exponent) in zip(results, inputs)]
        self.close()
        return self.stacks, values


def _same_bits(a, b):
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


def _tree(start, end, sqre, depth, leaves, merges):
    """dlasdt's tree of rows [start, end) of an n×(n + sqre) block: leaves (start, end,
    sqre) and merges (depth, start, cut, end, sqre), cut the coupling row."""
    if end - start <= tunables.get().divide_conquer_leaf_size:
        leaves.append((start, end, sqre))
        return
    cut = start + (end - start) // 2
    _tree(start, cut, 1, depth + 1, leaves, merges)
    _tree(cut + 1, end, sqre, depth + 1, leaves, merges)
    merges.append((depth, start, cut, end, sqre))


@numba.njit(cache=True)
def _deflate(d, z, tol):
    """dlasd2's deflation of M = e₁·zᵀ + diag(d), d ascending with d[0] the zero pole;
    d and z are overwritten (d with the deflated values).

    Returns (kept, deflated, upairs, ucs, vpairs, vcs): the poles left to the secular
    equation (d[kept] strictly increasing, kept[0] = 0), those whose d is a singular
    value as it stands, and the rotations of index pairs for U's and V's columns.
    """
    n = d.shape[0]
    kept = np.empty(n, np.int64)
    deflated = np.empty(n, np.int64)
    upairs, vpairs = np.empty((n, 2), np.int64), np.empty((n, 2), np.int64)
    ucs, vcs = np.empty((n, 2)), np.empty((n, 2))
    nk = nd = nu = nv = 0
    if abs(z[0]) <= tol:
        z[0] = tol  # dlasd2
    previous = 0
    for j in range(1, n):
        if abs(z[j]) <= tol:
            deflated[nd] = j
            nd += 1
            continue
        tau = np.hypot(z[j], z[previous])
        if previous == 0:
            # Into the zero pole, by V's columns alone: its column keeps a dropped
            # s·d_j in row j, and column j becomes c·d_j·e_j.
            c, s = abs(z[0]) / tau, np.sign(z[0]) * z[j] / tau
            if abs(d[j] * s) <= tol:
                vpairs[nv, 0], vpairs[nv, 1], vcs[nv, 0], vcs[nv, 1] = 0, j, c, s
                nv += 1
                z[0], z[j] = np.sign(z[0]) * tau, 0.0
                d[j] *= c
                deflated[nd] = j
                nd += 1
                continue
        else:
            c, s = z[j] / tau, -z[previous] / tau
            if abs((d[j] - d[previous]) * c * s) <= tol:
                # Close poles: the weight of `previous` onto j (dlasd2, loop 100).
                upairs[nu, 0], upairs[nu, 1], ucs[nu, 0], ucs[nu, 1] = previous, j, c, s
                vpairs[nv, 0], vpairs[nv, 1], vcs[nv, 0], vcs[nv, 1] = previous, j, c, s
                nu += 1
                nv += 1
                z[j], z[previous] = tau, 0.0
                dp, dj = d[previous], d[j]
                d[previous] = dp * c * c + dj * s * s
                d[j] = dp * s * s + dj * c * c
                deflated[nd] = previous
                nd += 1
                previous = j
                continue
        kept[nk] = previous
        nk += 1
        previous = j
    kept[nk] = previous
    nk += 1
    return kept[:nk], deflated[:nd], upairs[:nu], ucs[:nu], vpairs[:nv], vcs[:nv]


@numba.njit(cache=True)
def _supports(columns, above, below, pairs):
    """Positions in ``columns`` that can be nonzero above and below a cut, from each
    column's support (boolean masks ``above``, ``below``, overwritten): a rotation of a
    pair (in order) gives both columns the union of their supports."""
    for t in range(pairs.shape[0]):
        p, r = pairs[t, 0], pairs[t, 1]
        above[p] = above[r] = above[p] or above[r]
        below[p] = below[r] = below[p] or below[r]
    return np.flatnonzero(above[columns]), np.flatnonzero(below[columns])


def _merge_vectors(poles, z, origin, tau, xp):
    """Gu & Eisenstat's singular vectors (U_M, V_M) of M = e₁·ẑᵀ + diag(poles), k×k in
    xp, from the roots' offsets (module docstring, dlasd3)."""
    k = poles.shape[0]
    d = xp.asarray(poles)
    d_o, t = d[xp.asarray(origin)][None, :], xp.asarray(tau)[None, :]
    minus = (d[:, None] - d_o) - t  # d_i − σ_j
    plus = (d[:, None] + d_o) + t   # d_i + σ_j
    # Factor (i, j) of ẑ_i²: (σ_j² − d_i²)/(d_p² − d_i²), p = j below i and j + 1 from
    # i on, the last root's factor without a denominator (eq. (3.3)).
    rows, cols = xp.arange(k)[:, None], xp.arange(k)[None, :]
    p = xp.minimum(cols + (cols >= rows), k - 1)
    below, above = d[p] - d[:, None], d[p] + d[:, None]
    below[:, k - 1] = above[:, k - 1] = 1.0
    ratio = -minus / below
    ratio *= plus / above
    zhat = xp.sqrt(xp.abs(xp.prod(ratio, axis=1))) * xp.asarray(np.sign(z))
    v = zhat[:, None] / minus
    v /= plus
    u = d[:, None] * v
    u[0, :] = -1.0
    v /= xp.sqrt(xp.einsum("ij,ij->j", v, v))[None, :]
    u /= xp.sqrt(xp.einsum("ij,ij->j", u, u))[None, :]
    return u, v


# M's vectors by the name of the namespace (the CUDA twin: two launches per merge, where
# _merge_vectors takes ~30 CuPy operations); others take _merge_vectors.
_MERGE_VECTORS = {"numpy": functools.partial(_merge_vectors, xp=np),
                  "cupy": merge_vectors_cuda.svd_merge_vectors}


def _update_columns(q, starts, rows, cols, ones, wt, xp):
    """For each merge i of a tree level, ``q[s:s + m, c] ← q[s:s + m, c] · W_i`` with
    s = ``starts[i]``, m = ``rows[i]``, c = ``cols[i]`` (host index arrays, k_i columns of
    q) and W_i = ``wt[i, :k_i, :k_i]ᵀ`` (``wt`` a (count, K, K) stack in xp, K ≥ every
    k_i): the merges' updates of their kept columns, the other columns unchanged (their
    W is the identity). Where ``ones[i]`` ≥ 0 the product reads 1 in row ``ones[i]``
    (from s) of the first kept column, whatever q holds there: diag(U₁, 1, U₂)'s 1."""
    for i, (start, m, columns) in enumerate(zip(starts, rows, cols)):
        k, idx = len(columns), xp.asarray(columns)
        block = q[start:start + m, idx]
        if ones[i] >= 0:
            block[ones[i], 0] = 1.0
        q[start:start + m, idx] = block @ wt[i, :k, :k].T


# A level's updates of the kept columns by the name of their namespace (the CUDA twin:
# one gather, one batched GEMM and one scatter for the whole level); others take
# _update_columns.
_UPDATE_COLUMNS = {"numpy": functools.partial(_update_columns, xp=np),
                   "cupy": merge_vectors_cuda.update_columns}


def _coupling_rows(v, level, xp):
    """The rows of V that make each merge's z, for all merges (depth, start, cut, end,
    sqre) of one level of the tree: V[cut, start:cut + 1] (B₁'s last row) and
    V[cut + 1, cut + 1:end + sqre] (B₂'s first), read in one transfer. The merges of a
    level touch disjoint blocks, so all their rows are final once the level below is
    done; on a GPU this is the one synchronization per level, and the host's work of
    one merge (deflation, secular equation) overlaps the device's GEMMs of the previous
    one."""
    rows, cols, sizes = [], [], []
    for _, start, cut, end, sqre in level:
        for row, lo, hi in ((cut, start, cut + 1), (cut + 1, cut + 1, end + sqre)):
            rows.append(np.full(hi - lo, row))
            cols.append(np.arange(lo, hi))
            sizes.append(hi - lo)
    flat = to_host(v[xp.asarray(np.concatenate(rows)), xp.asarray(np.concatenate(cols))])
    pieces = np.split(flat, np.cumsum(sizes)[:-1])
    return list(zip(pieces[::2], pieces[1::2]))


class _Merge(NamedTuple):
    """A merge after its deflation, its secular equation solved or queued: what its
    vectors, its update of U and V and its values need."""

    start: int        # the merge's first row in the block
    m: int            # its rows: U's block is m×m, V's m×(m + sqre)
    sqre: int
    cut: int          # its coupling row, from start
    problem: tuple    # (poles, weights), on the device for CuPy
    origin: Any       # each root's pole and offset from it (on the device for CuPy)
    tau: Any
    steps: Any        # the device's iteration counts, None on the host
    columns: Any      # its kept columns (host, from start), the zero pole's first
    poles: Any        # the kept poles (host, scaled)
    exponent: int     # the merge's scaling, 2^exponent
    upairs: Any       # U's and V's deflation rotations (host, column pairs from start)
    vpairs: Any
    null_weight: bool  # V's null column rotated into the zero pole's (b₁ ≠ 0)
    level: Any = None  # on the device: the level's poles, weights, origins, offsets and
    #                    iteration counts, its merges' entries end to end
    offset: int = 0    # where this merge's are in them


class _Deflation(NamedTuple):
    """A merge deflated on the host: its kept poles and weights and the rotations of U's
    and V's columns that go with them (:func:`_deflate_merge`)."""

    start: int
    m: int
    sqre: int
    cut: int
    poles: Any        # the kept poles and weights (host, scaled)
    weights: Any
    columns: Any      # their columns (host, from start), the zero pole's first
    exponent: int
    urotations: tuple  # (pairs, cs) of U's columns, in order (host)
    vrotations: tuple  # V's: the null columns' rotation first where b₁ ≠ 0, then deflation's
    upairs: Any       # deflation's rotations alone (column pairs from start)
    vpairs: Any
    null_weight: bool  # V's null column rotated into the zero pole's (b₁ ≠ 0)


def _deflate_merge(s, start, m, cut, alpha, beta, sqre, row, first, xp):
    """Deflate the merge of a block's halves (m rows from ``start``) around its coupling
    row ``cut``, on the host: s (host) holds the values of its columns and gets the
    deflated values. ``row`` and ``first`` are V's rows cut (columns :cut + 1) and cut + 1
    (columns cut + 1:) as host arrays (:func:`_coupling_rows`). The rotations of U's and
    V's columns are left to :func:`_solve_merges`."""
    z = np.concatenate((alpha * row[:cut], [0.0], beta * first[:m - cut - 1]))
    a1, b1 = alpha * row[cut], (beta * first[-1] if sqre else 0.0)
    z[cut] = a1
    null = np.empty((0, 2), np.int64), np.empty((0, 2))
    if b1 != 0.0:  # the null columns' weights into one (dlasd1), V's null vector last
        z[cut] = np.hypot(a1, b1)
        null = np.array([[cut, m]]), np.array([[a1 / z[cut], b1 / z[cut]]])
    poles = s.copy()
    poles[cut] = 0.0
    exponent = -np.frexp(max(abs(alpha), abs(beta), poles.max()))[1]
    key = poles.copy()
    key[cut] = -1.0  # the zero pole first
    order = np.argsort(key, kind="stable")
    d, z = np.ldexp(poles[order], exponent), np.ldexp(z[order], exponent)
    with profile.phase("deflation", xp):
        tol = _DEFLATION_FACTOR * _UNIT_ROUNDOFF * max(np.ldexp(max(
            abs(alpha), abs(beta)), exponent), d[-1])
        kept, deflated, upairs, ucs, vpairs, vcs = _deflate(d, z, tol)
        s[order[deflated]] = np.ldexp(d[deflated], -exponent)
    upairs, vpairs = order[upairs], order[vpairs]
    vrotations = np.concatenate((null[0], vpairs)), np.concatenate((null[1], vcs))
    return _Deflation(start, m, sqre, cut, d[kept], z[kept], order[kept], exponent,
                      (upairs, ucs), vrotations, upairs, vpairs, b1 != 0.0)


def _solve_merges(u, v, deflations, xp):
    """Each deflated merge's rotations of U's and V's columns (its block's: U m×m, V
    m×(m + sqre)) and its secular equation (on the device for CuPy, secular_svd_cuda.py:
    the level's poles, weights and rotations cross in one copy); the :class:`_Merge`
    records whose vectors update u and v (:func:`_update_level`)."""
    rotate = _rotation(xp)
    device = xp.__name__ == "cupy"
    rotations = [(*dfl.urotations, *dfl.vrotations) for dfl in deflations]
    sizes = [dfl.poles.shape[0] for dfl in deflations]
    offsets = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    level = None
    if device:
        # The level's poles, then its weights, end to end; each merge's rotations.
        flat = merge_vectors_cuda.upload(
            np.concatenate([dfl.poles for dfl in deflations]),
            np.concatenate([dfl.weights for dfl in deflations]),
            *(np.ascontiguousarray(x) for parts in rotations for x in parts))
        if rotate is _ROTATE["cupy"]:
            rotations = [flat[2 + 4 * i:6 + 4 * i] for i in range(len(deflations))]
        with profile.phase("secular", xp):  # the roots, read back at the level's end
            origin, tau, steps = secular_svd_cuda.svd_roots(flat[0], flat[1], starts=offsets,
                                                            sizes=sizes)
        level = flat[0], flat[1], origin, tau, steps
    merges = []
    for dfl, (upairs, ucs, vpairs, vcs), offset, k in zip(deflations, rotations, offsets,
                                                         sizes):
        end = dfl.start + dfl.m
        if dfl.urotations[0].shape[0]:
            rotate(u[dfl.start:end, dfl.start:end], upairs, ucs)
        if dfl.vrotations[0].shape[0]:
            rotate(v[dfl.start:end + dfl.sqre, dfl.start:end + dfl.sqre], vpairs, vcs)
        if device:
            part = slice(offset, offset + k)
            problem = level[0][part], level[1][part]
            roots = origin[part], tau[part], steps[part]
        else:
            with profile.phase("secular", xp):
                problem = dfl.poles, dfl.weights
                roots = *secular_singular_values(*problem), None
        merges.append(_Merge(dfl.start, dfl.m, dfl.sqre, dfl.cut, problem, *roots,
                             dfl.columns, dfl.poles, dfl.exponent, dfl.upairs, dfl.vpairs,
                             dfl.null_weight, level, int(offset)))
    return merges


def _update_split(u, v, merge, u_m, v_m, xp):
    """u ← u·W_U and v ← v·W_V on one merge's block (u m×m, v m×(m + sqre) views), each
    half's rows against only the columns that can be nonzero there (:func:`_supports`):
    up to half the flops of the dense update, for about fifteen launches a matrix."""
    m, cut, columns = merge.m, merge.cut, merge.columns
    index = np.arange(m)
    up, low = _supports(columns, index < cut, index > cut, merge.upairs)
    top = u[:cut, xp.asarray(columns[up])] @ u_m[xp.asarray(up)]
    bottom = u[cut + 1:, xp.asarray(columns[low])] @ u_m[xp.asarray(low)]
    u[:cut, xp.asarray(columns)] = top
    u[cut, xp.asarray(columns)] = u_m[0]
    u[cut + 1:, xp.asarray(columns)] = bottom
    below = index > cut
    below[cut] = merge.null_weight
    up, low = _supports(columns, index <= cut, below, merge.vpairs)
    top = v[:cut + 1, xp.asarray(columns[up])] @ v_m[xp.asarray(up)]
    bottom = v[cut + 1:, xp.asarray(columns[low])] @ v_m[xp.asarray(low)]
    v[:cut + 1, xp.asarray(columns)] = top
    v[cut + 1:, xp.asarray(columns)] = bottom


def _level_budget(xp):
    """Bytes a group of a level's batched update may hold: :data:`LEVEL_MEMORY_SHARE` of
    the free device memory on a GPU; None (no limit) on the host, where the update goes a
    merge at a time anyway."""
    if xp.__name__ != "cupy":
        return None
    return LEVEL_MEMORY_SHARE * free_device_bytes(xp)


def _groups(merges, budget):
    """``merges`` in consecutive groups whose batched update fits ``budget`` bytes (one
    group when None): 8·count·(2K² + 2K·M) for count merges of at most M rows and K kept
    columns (the two stacks of vectors, the gathered columns and their product). A merge
    larger than the budget alone is a group of its own."""
    if budget is None:
        return [merges]
    groups, current, width, height = [], [], 0, 0
    for merge in merges:
        k, m = len(merge.columns), merge.m + merge.sqre
        w, h = max(width, k), max(height, m)
        if current and 8 * (len(current) + 1) * (2 * w * w + 2 * w * h) > budget:
            groups.append(current)
            current, w, h = [], k, m
        current.append(merge)
        width, height = w, h
    groups.append(current)
    return groups


def _vector_stacks(group, width, xp):
    """The merges' vectors (:data:`_MERGE_VECTORS`, one merge at a time) transposed into
    two zero-padded (count, width, width) stacks, U_Mᵀ and V_Mᵀ of merge i in
    ``[i, :k, :k]``."""
    vectors = _MERGE_VECTORS.get(xp.__name__, functools.partial(_merge_vectors, xp=xp))
    stacks = xp.zeros((2, len(group), width, width))
    for i, merge in enumerate(group):
        k = len(merge.columns)
        u_m, v_m = vectors(*merge.problem, merge.origin, merge.tau)
        stacks[0, i, :k, :k] = u_m.T
        stacks[1, i, :k, :k] = v_m.T
    return stacks


def _vector_stacks_cuda(group, width, xp):
    """:func:`_vector_stacks` for merges of one level on the device: one launch of each
    kernel for all of them (merge_vectors_cuda.py)."""
    poles, weights, origin, tau, _ = group[0].level
    return merge_vectors_cuda.svd_merge_vectors(
        poles, weights, origin, tau, starts=[merge.offset for merge in group],
        sizes=[len(merge.columns) for merge in group], width=width)


# The stacks of a group's vectors by the name of the namespace; others take
# _vector_stacks.
_VECTOR_STACKS = {"cupy": _vector_stacks_cuda}


def _update_level(u, v, merges, xp):
    """U and V (the block's) updated by the vectors of a tree level's merges: merges of
    up to ``divide_conquer_dense_merge_rows`` rows together (in groups that fit
    :func:`_level_budget`), their kept columns by one batched product each for U and V
    (:data:`_UPDATE_COLUMNS`, the merges' vectors transposed into a zero-padded stack);
    larger ones one by one, split by support (:func:`_update_split`)."""
    vectors = _MERGE_VECTORS.get(xp.__name__, functools.partial(_merge_vectors, xp=xp))
    limit = tunables.get().divide_conquer_dense_merge_rows
    with profile.phase("vectors", xp):
        alone = [(merge, *vectors(*merge.problem, merge.origin, merge.tau))
                 for merge in merges if merge.m + merge.sqre > limit]
    with profile.phase("gemm", xp):
        for merge, u_m, v_m in alone:
            end = merge.start + merge.m
            _update_split(u[merge.start:end, merge.start:end],
                          v[merge.start:end + merge.sqre, merge.start:end + merge.sqre],
                          merge, u_m, v_m, xp)
    together = [merge for merge in merges if merge.m + merge.sqre <= limit]
    update = _UPDATE_COLUMNS.get(xp.__name__, functools.partial(_update_columns, xp=xp))
    for group in _groups(together, _level_budget(xp)) if together else []:
        with profile.phase("vectors", xp):
            width = max(len(merge.columns) for merge in group)
            stacks = _VECTOR_STACKS.get(xp.__name__, _vector_stacks)(group, width, xp)
        with profile.phase("gemm", xp):
            starts = [merge.start for merge in group]
            cols = [merge.start + merge.columns for merge in group]
            # diag(U₁, 1, U₂)'s 1 at (cut, cut): U's row and column cut are zero till now,
            # no rotation of U touched the zero pole, and its column is the first kept one
            ones = [merge.cut for merge in group]
            update(u, starts, [merge.m for merge in group], cols, ones, stacks[0])
            update(v, starts, [merge.m + merge.sqre for merge in group], cols,
                   [-1] * len(group), stacks[1])
            del stacks


def _store_values(s, merges):
    """The level's values, each root d_o + τ scaled back, into its merge's columns of s
    (host, the block's), once the device's roots are checked to have converged: called
    after the level's work is queued, so that on a GPU their read (one for the level)
    does not hold it up. On the device the level's own arrays are read (its merges' parts
    end to end), not a concatenation of the parts: no kernel to compile or launch."""
    if merges[0].level is not None:
        origin, tau, steps = (to_host(x) for x in merges[0].level[2:])
    else:
        xp = array_namespace(merges[0].tau)
        origin, tau = (to_host(xp.concatenate([getattr(merge, name) for merge in merges]))
                       for name in ("origin", "tau"))
        steps = None
        if merges[0].steps is not None:
            steps = to_host(xp.concatenate([merge.steps for merge in merges]))
    if steps is not None:
        check_converged(steps)
    first = 0
    for merge in merges:
        k = len(merge.columns)
        s[merge.start + merge.columns] = np.ldexp(
            merge.poles[origin[first:first + k]] + tau[first:first + k], -merge.exponent)
        first += k


def _solve_block(d, e, u, v, xp, early=None):
    """Singular values (host, unsorted) of one square block; its vectors into u and v.
    ``early``: a :class:`LeafFeed` of the block's leaves (the block being all of B)."""
    m = d.shape[0]
    leaves, merges = [], []
    _tree(0, m, 0, 0, leaves, merges)
    s = np.empty(m)
    with profile.phase("leaves", xp):
        if early is not None and early.leaves != leaves:  # a tunable changed meanwhile
            early.close()
            early = None
        if early is not None:
            stacks, values = early.collect(d, e)
        else:
            size = max(end - start + sqre for start, end, sqre in leaves)
            stacks = _LEAF_STACK.get(xp.__name__, np.empty)((2, len(leaves), size, size))
            values = _solve_leaves(d, e, leaves, stacks[0], stacks[1])
        for (start, end, _), leaf in zip(leaves, values):
            s[start:end] = leaf
        place = _PLACE.get(xp.__name__, functools.partial(_place_blocks, xp=xp))
        starts = [start for start, _, _ in leaves]
        place(u, stacks[0], starts, [end - start for start, end, _ in leaves])
        place(v, stacks[1], starts, [end - start + sqre for start, end, sqre in leaves])
    levels = {}
    for merge in merges:
        levels.setdefault(merge[0], []).append(merge)
    for depth in sorted(levels, reverse=True):  # the deepest level first
        level = levels[depth]
        deflations = [_deflate_merge(s[start:end], start, end - start, cut - start, d[cut],
                                     e[cut], sqre, row, first, xp)
                      for (_, start, cut, end, sqre), (row, first)
                      in zip(level, _coupling_rows(v, level, xp))]
        merges = _solve_merges(u, v, deflations, xp)
        _update_level(u, v, merges, xp)
        _store_values(s, merges)  # the values, the device's roots read back
    return s


def bidiagonal_svd_dc(d, e, xp=np, *, early=None):
    """SVD of the real upper bidiagonal B = diag(d) + diag(e, 1) by divide and conquer.

    B = U·diag(s)·Vt by Gu & Eisenstat's divide and conquer (module docstring), its
    matrix products in ``xp``. Backward stable: the values are accurate to about
    n·ε·σ₁, not each to itself (for that, dqds); the vectors are orthogonal to about n·ε.

    Parameters
    ----------
    d : (n,) array_like
        The diagonal of B, float32, float64 or integer; not modified.
    e : (n - 1,) array_like
        The superdiagonal of B (empty for n ≤ 1); not modified.
    xp : module, optional
        The array namespace of U, Vt and of the work on n×n arrays (NumPy, or CuPy).
    early : LeafFeed, optional
        The leaves as solved while B's rows were being made (:class:`LeafFeed`): taken
        where their input is the one this call would solve, bit for bit. The result is
        the same with or without.

    Returns
    -------
    U : (n, n) array in ``xp``
        Left singular vectors as columns.
    s : (n,) array in ``xp``
        The singular values, nonnegative and descending.
    Vt : (n, n) array in ``xp``
        Right singular vectors as rows. All three float32 for float32 input (computed in
        float64 and rounded), float64 otherwise.

    Raises
    ------
    ValueError
        If d or e is not 1-D of lengths n and n − 1, or not real.
    gpusvd.LinAlgError
        If d or e holds NaN or infinity (as :mod:`.dbdsdc`), or a secular equation
        did not converge.

    Examples
    --------
    >>> import numpy as np
    >>> from gpusvd.bidiagonal.dc_svd import bidiagonal_svd_dc
    >>> rng = np.random.default_rng(0)
    >>> d, e = rng.standard_normal(100), rng.standard_normal(99)
    >>> u, s, vt = bidiagonal_svd_dc(d, e)
    >>> b = np.diag(d) + np.diag(e, 1)
    >>> bool(np.allclose(s, np.linalg.svd(b, compute_uv=False), rtol=0, atol=1e-13))
    True
    >>> bool(np.abs(u @ np.diag(s) @ vt - b).max() < 1e-13)
    True
    """
    d, e, dtype = _check(d, e)
    n = d.shape[0]
    u = xp.zeros((n, n), order="F")  # columns contiguous: merges gather columns
    v = xp.zeros((n, n), order="F")
    s = np.empty(n)
    blocks = _blocks(d, e) if n else []
    if early is not None and (early.n != n or len(blocks) != 1):
        early.close()  # its leaves are those of one block of n rows
        early = None
    for start, end in blocks:
        block = slice(start, end)
        exponent = -np.frexp(max(np.abs(d[block]).max(), np.abs(e[start:end - 1]).max(
            initial=0.0)))[1]
        s[block] = np.ldexp(_solve_block(np.ldexp(d[block], exponent),
                                         np.ldexp(e[start:end - 1], exponent),
                                         u[block, block], v[block, block], xp, early),
                            -exponent)
    order = np.argsort(-s, kind="stable")
    columns = xp.asarray(order)
    return (u[:, columns].astype(dtype, copy=False),
            xp.asarray(s[order]).astype(dtype, copy=False),
            v[:, columns].T.astype(dtype, copy=False))
