"""Eigenvalues and eigenvectors of a real symmetric tridiagonal T by divide and conquer.

The vectors solver of the two-stage symmetric eigensolver (issue 18), in place of LAPACK's
dstedc on the host: Cuppen's divide and conquer (Numer. Math. 36 (1981) 177–195) with Gu &
Eisenstat's stable eigenvectors (SIAM J. Matrix Anal. Appl. 16 (1995) 172–191), in the
form of LAPACK's dstedc → dlaed0 → dlaed1/2/3/4, written so that the O(n³) part runs as
matrix products in the array namespace ``xp`` (NumPy now, CuPy later) and only O(n) data
(poles, weights, roots) visits the host:

1. Split (dstedc). T falls apart where |e_i| ≤ ε·sqrt(|d_i|·|d_{i+1}|) into independent
   blocks, each scaled by a power of two to max |entry| ≈ 1 (dstedc scales by the
   norm itself; a power of two is exact).
2. Tear (dlaed0), bottom up: a block of m rows is halved until every piece has at most
   ``divide_conquer_leaf_size`` rows (a tunable); at each cut k, with β = e_k,
   T = diag(T₁′, T₂′) + |β|·v·vᵀ, v = e_k + sign(β)·e_{k+1}, T₁′ and T₂′ being T's
   diagonal blocks with |β| taken from their corner entries (Cuppen, Sec. 2).
3. Leaves: LAPACK's dstev (dsteqr's implicit QL/QR, as dlaed0's leaves) on the host.
4. Merge (dlaed1), level by level: with Q = diag(Q₁, Q₂) and D = diag(Λ₁, Λ₂) the
   halves' solutions, T = Q·(D + ρ·z·zᵀ)·Qᵀ, z = Qᵀ·v/√2 (the last row of Q₁ and the
   first of Q₂), ρ = 2|β|.
   - Deflation (dlaed2, with its tolerance 8·ε·max(|d|, |z|)): a pole with ρ|z_j| ≤ tol
     is an eigenvalue as it stands; two poles closer than tol/|c·s| are rotated so
     that one of their weights vanishes (Givens rotation of Q's columns, recorded and
     applied to Q on its side).
   - The k remaining roots of 1/ρ + Σ z_j²/(d_j − λ) = 0 (:mod:`.secular`), each as
     an offset from a pole (dlaed4).
   - Gu & Eisenstat's ẑ (Löwner's formula, their Sec. 3; dlaed3): the weights for
     which the computed roots are exact, ẑ_i² = −∏_j (d_i − λ_j) / ∏_{j≠i} (d_i − d_j),
     and the vectors u_j = (ẑ_i / (d_i − λ_j))_i / ‖·‖, numerically orthogonal.
   - Q ← Q·U on the kept columns, as dlaed3: Q₁'s columns are zero below the cut and
     Q₂'s above, unless a rotation mixed them, so the rows above the cut multiply only
     the columns that can be nonzero there, and those below likewise: two GEMMs, half
     the flops of one over the whole block when nothing is mixed. The new vectors take
     the kept columns' places; deflated columns stay where they are.

What lives where: Q (n×n, Fortran order: merges gather columns), the k×k matrices of
differences, ratios and vectors, and the GEMMs are in ``xp``; d, z, the roots and the
deflation's bookkeeping are O(n) host arrays (Numba loops); rotations are applied to Q's
columns by a Numba loop parallel over blocks of rows (NumPy) or by whole-column
operations (any other ``xp``, :data:`_ROTATE`). On CuPy a merge's vectors are two kernel
launches, the leaves cross to the device in one copy (:mod:`.merge_vectors_cuda`), and
the coupling rows of a whole tree level are read in one transfer (:func:`_coupling_rows`),
so the host's work of one merge overlaps the device's GEMMs of the previous one.

Departures from LAPACK: leaves of 32 rows (``divide_conquer_leaf_size``), not SMLSIZ = 25
(ILAENV ispec 9).
Q's columns are never sorted between merges: the host array of eigenvalues follows them,
each merge sorts its poles through an index, and the result is sorted once at the end
(dlaed1 keeps a merge permutation; dlaed2 copies the columns into its groups). Each
block is scaled by a power of two, not by its norm (exact). The secular equation has a
third model beside dlaed4's two (:mod:`.secular`).

float32 input is computed in float64 and the results rounded back. Accuracy: backward
stable, ‖T − Z·W·Zᵀ‖ and ‖ZᵀZ − I‖ of order n·ε (ε of float64).
"""

import functools

import numba
import numpy as np
import scipy.linalg

from .._core import profile, tunables
from .._core.backend import to_host
from .._core.validation import working_dtype
from . import merge_vectors_cuda, rotate_cuda
from .secular import secular_roots

# dlamch('E'): LAPACK's unit roundoff, half of NumPy's machine epsilon.
_UNIT_ROUNDOFF = np.finfo(np.float64).eps / 2
# dlaed2's deflation tolerance, TOL = 8·ε·max(max |d|, max |z|).
_DEFLATION_FACTOR = 8.0
# Rows of Q rotated together, contiguous in its Fortran-ordered columns: a block of one
# column stays in L1 (256 × 8 bytes) while every rotation passes over it.
_ROW_BLOCK = 256


def _check(d, e):
    """d and e as float64 host arrays, and the dtype of the results."""
    d, e = to_host(d), to_host(e)
    dtype = working_dtype(np.result_type(d, e), allow_complex=False, what="tridiagonal_eigh")
    if d.ndim != 1 or e.ndim != 1 or e.shape[0] != max(d.shape[0] - 1, 0):
        raise ValueError(f"tridiagonal_eigh: d must be 1-D of length n and e 1-D of length "
                         f"n-1, got shapes {d.shape} and {e.shape}")
    if not (np.isfinite(d).all() and np.isfinite(e).all()):
        raise ValueError("tridiagonal_eigh: d and e must be finite; they hold NaN or infinity")
    return d.astype(np.float64), e.astype(np.float64), dtype


def _blocks(d, e):
    """Start and end of the blocks T splits into (dstedc's test)."""
    tiny = _UNIT_ROUNDOFF * np.sqrt(np.abs(d[:-1])) * np.sqrt(np.abs(d[1:]))
    cuts = np.flatnonzero(np.abs(e) <= tiny) + 1
    edges = np.concatenate(([0], cuts, [d.shape[0]]))
    return [(start, end) for start, end in zip(edges[:-1], edges[1:]) if end > start]


def _pieces(m):
    """dlaed0's subdivision of m rows: every piece halved until none has more than
    ``divide_conquer_leaf_size`` rows; returns the pieces' edges (a power of two of
    pieces)."""
    sizes = [m]
    leaf = tunables.get().divide_conquer_leaf_size
    while max(sizes) > leaf:
        sizes = [half for s in sizes for half in (s // 2, s - s // 2)]
    return np.concatenate(([0], np.cumsum(sizes)))


@numba.njit(parallel=True, cache=True)
def _rotate_host(q, pairs, cs):
    """Columns p, r of q ← (c·q_p + s·q_r, c·q_r − s·q_p) for each (p, r), in order
    (dlaed2's DROT), a block of rows at a time through all of them."""
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


# Deflation's rotations of Q's columns, by the name of Q's namespace (the CUDA twin: one
# launch per merge); others take _rotate_columns.
_ROTATE = {"numpy": _rotate_host, "cupy": rotate_cuda.rotate_pairs}


def _place_host(q, blocks, starts):
    """q[s:s + m, s:s + m] = block for each host block (m×m) and start."""
    for block, start in zip(blocks, starts):
        q[start:start + block.shape[0], start:start + block.shape[0]] = block


def _place_blocks(q, blocks, starts, xp):
    """_place_host in any namespace, the blocks crossing to it in one transfer."""
    packed, sizes = merge_vectors_cuda.pack_blocks(blocks)
    packed = xp.asarray(packed)
    for slot, size, start in zip(packed, sizes, starts):
        q[start:start + size, start:start + size] = slot[:size, :size].T


# The leaves' blocks onto Q's diagonal, by the name of Q's namespace (the CUDA twin: one
# copy and one launch for all leaves); others take _place_blocks.
_PLACE = {"numpy": _place_host, "cupy": merge_vectors_cuda.place_blocks}


@numba.njit(cache=True)
def _deflate(d, z, rho, tol):
    """dlaed2's deflation of D + ρ·z·zᵀ, d ascending, ‖z‖ = 1; d and z are overwritten.

    Returns (kept, deflated, pairs, cs): the indices of the poles left to the secular
    equation (d[kept] strictly increasing, z[kept] the weights), those whose d is an
    eigenvalue as it stands, and the rotations (dlaed2's DROT) of index pairs, in order.
    """
    n = d.shape[0]
    kept = np.empty(n, np.int64)
    deflated = np.empty(n, np.int64)
    pairs = np.empty((n, 2), np.int64)
    cs = np.empty((n, 2))
    nk = nd = nr = 0
    previous = -1
    for j in range(n):
        if rho * abs(z[j]) <= tol:
            deflated[nd] = j
            nd += 1
            continue
        if previous >= 0:
            tau = np.hypot(z[j], z[previous])
            c, s = z[j] / tau, -z[previous] / tau
            if abs((d[j] - d[previous]) * c * s) <= tol:
                # Close poles: rotate the weight of `previous` onto j (dlaed2, loop 100).
                z[j], z[previous] = tau, 0.0
                pairs[nr, 0], pairs[nr, 1], cs[nr, 0], cs[nr, 1] = previous, j, c, s
                nr += 1
                dp, dj = d[previous], d[j]
                d[previous] = dp * c * c + dj * s * s
                d[j] = dp * s * s + dj * c * c
                deflated[nd] = previous
                nd += 1
            else:
                kept[nk] = previous
                nk += 1
        previous = j
    if previous >= 0:
        kept[nk] = previous
        nk += 1
    return kept[:nk], deflated[:nd], pairs[:nr], cs[:nr]


@numba.njit(cache=True)
def supports(columns, above, below, pairs):
    """Positions in ``columns`` that can be nonzero above and below a cut, from each
    column's support (boolean masks ``above``, ``below``, overwritten): a rotation of a
    pair (in order) gives both columns the union of their supports. Shared with
    bidiagonal_svd_dc.py."""
    for t in range(pairs.shape[0]):
        p, r = pairs[t, 0], pairs[t, 1]
        above[p] = above[r] = above[p] or above[r]
        below[p] = below[r] = below[p] or below[r]
    return np.flatnonzero(above[columns]), np.flatnonzero(below[columns])


def _rank_one_vectors(poles, z, origin, tau, xp):
    """Gu & Eisenstat's eigenvectors of diag(poles) + ρ·ẑ·ẑᵀ, as columns (k×k, in xp).

    delta[i, j] = d_i − λ_j from the roots' offsets (dlaed4's DELTA, exact differences
    of poles first), ẑ from Löwner's formula as dlaed3 forms it (a product of ratios,
    which neither overflows nor underflows), the signs of z kept.
    """
    k = poles.shape[0]
    d = xp.asarray(poles)
    delta = d[:, None] - d[xp.asarray(origin)][None, :]
    delta -= xp.asarray(tau)[None, :]
    ratios = d[:, None] - d[None, :]
    diagonal = xp.arange(k)
    ratios[diagonal, diagonal] = 1.0
    xp.divide(delta, ratios, out=ratios)
    zhat = xp.sqrt(-xp.prod(ratios, axis=1)) * xp.asarray(np.sign(z))
    u = xp.divide(zhat[:, None], delta, out=delta)
    u /= xp.sqrt(xp.einsum("ij,ij->j", u, u))[None, :]
    return u


# The merge's vectors by the name of the namespace (the CUDA twin: two launches per merge,
# where _rank_one_vectors takes ~20 CuPy operations); others take _rank_one_vectors.
_RANK_ONE_VECTORS = {"numpy": functools.partial(_rank_one_vectors, xp=np),
                     "cupy": merge_vectors_cuda.eigh_merge_vectors}


def _coupling_rows(q, level, xp):
    """Each merge's z before scaling, Q[cut − 1, start:cut] and Q[cut, cut:end], for all
    merges (start, cut, end) of one level, read in one transfer: the one synchronization
    per level on a GPU (the merges of a level touch disjoint blocks), so the host's work
    of one merge overlaps the device's GEMMs of the previous one."""
    rows = np.concatenate([np.r_[np.full(cut - start, cut - 1), np.full(end - cut, cut)]
                           for start, cut, end in level])
    cols = np.concatenate([np.arange(start, end) for start, _, end in level])
    flat = to_host(q[xp.asarray(rows), xp.asarray(cols)])
    return np.split(flat, np.cumsum([end - start for start, _, end in level])[:-1])


def _merge(lam, q, cut, beta, xp, z):
    """Merge the halves [0, cut) and [cut, m) of a block: lam (host) holds the
    eigenvalues of q's columns (m×m view in xp), any order; both are updated. ``z`` is
    Q's rows cut − 1 (columns :cut) and cut (columns cut:) as one host array, overwritten
    (:func:`_coupling_rows`)."""
    if beta < 0:
        z[cut:] = -z[cut:]
    z /= np.sqrt(2.0)
    rho = 2.0 * abs(beta)
    order = np.argsort(lam, kind="stable")
    d, z = lam[order], z[order]
    with profile.phase("deflation", xp):
        tol = _DEFLATION_FACTOR * _UNIT_ROUNDOFF * max(np.abs(d).max(), np.abs(z).max())
        kept, deflated, pairs, cs = _deflate(d, z, rho, tol)
        if pairs.shape[0]:
            _ROTATE.get(xp.__name__, _rotate_columns)(q, order[pairs], cs)
        lam[order[deflated]] = d[deflated]
    if kept.size == 0:
        return
    with profile.phase("secular", xp):
        origin, tau = secular_roots(d[kept], z[kept], rho)
    with profile.phase("vectors", xp):
        u = _RANK_ONE_VECTORS.get(xp.__name__, functools.partial(_rank_one_vectors, xp=xp))(
            d[kept], z[kept], origin, tau)
    with profile.phase("gemm", xp):
        # The new vectors take the kept poles' columns; the deflated stay where they are.
        # Q₁'s columns are zero below the cut and Q₂'s above, unless a rotation mixed
        # them: each half's rows multiply only the kept columns that can be nonzero
        # there (dlaed3's two GEMMs on dlaed2's column types).
        columns = order[kept]
        # Of the block's columns those < cut come from Q₁ (rows above the cut), the rest
        # from Q₂.
        above = np.arange(q.shape[0]) < cut
        upper, lower = supports(columns, above, ~above, order[pairs])
        top = q[:cut, xp.asarray(columns[upper])] @ u[xp.asarray(upper)]
        bottom = q[cut:, xp.asarray(columns[lower])] @ u[xp.asarray(lower)]
        q[:cut, xp.asarray(columns)] = top
        q[cut:, xp.asarray(columns)] = bottom
        lam[columns] = d[kept][origin] + tau


def _solve_block(d, e, q, xp):
    """Eigenvalues (host, ascending) of one unreduced block; its vectors into q (xp)."""
    m = d.shape[0]
    edges = _pieces(m)
    d = d.copy()
    for cut in edges[1:-1]:
        d[cut - 1] -= abs(e[cut - 1])
        d[cut] -= abs(e[cut - 1])
    lam = np.empty(m)
    with profile.phase("leaves", xp):
        leaves = []
        for start, end in zip(edges[:-1], edges[1:]):
            if end - start == 1:
                lam[start], leaf = d[start], np.ones((1, 1))
            else:
                lam[start:end], leaf = scipy.linalg.eigh_tridiagonal(
                    d[start:end], e[start:end - 1], lapack_driver="stev")
            leaves.append(leaf)
        _PLACE.get(xp.__name__, functools.partial(_place_blocks, xp=xp))(q, leaves, edges[:-1])
    while edges.shape[0] > 2:
        level = list(zip(edges[:-2:2], edges[1:-1:2], edges[2::2]))
        for (start, cut, end), z in zip(level, _coupling_rows(q, level, xp)):
            _merge(lam[start:end], q[start:end, start:end], cut - start, e[cut - 1], xp, z)
        edges = edges[::2]
    return lam


def tridiagonal_eigh(d, e, xp=np):
    """Eigenvalues and eigenvectors of a real symmetric tridiagonal matrix.

    T = diag(d) + diag(e, 1) + diag(e, −1) = Z·diag(w)·Zᵀ, by Cuppen's divide and
    conquer with Gu & Eisenstat's eigenvectors (module docstring).

    Parameters
    ----------
    d : (n,) array_like
        The diagonal, float32, float64 or integer, finite.
    e : (n-1,) array_like
        The off-diagonal.
    xp : module, optional
        The array namespace of Z and of the work on n×n arrays (NumPy, or CuPy).

    Returns
    -------
    w : (n,) array in ``xp``
        The eigenvalues, ascending.
    z : (n, n) array in ``xp``
        The orthonormal eigenvectors, as columns. Both in float32 for float32 input
        (computed in float64), float64 otherwise.

    Raises
    ------
    ValueError
        If d or e is not 1-D of lengths n and n − 1, not real, or not finite.
    LinAlgError
        If a secular equation did not converge (module :mod:`.secular`).

    Examples
    --------
    The 1-2-1 matrix, eigenvalues 2 − 2·cos(jπ/(n+1)):

    >>> import numpy as np
    >>> n = 100
    >>> w, z = tridiagonal_eigh(2.0 * np.ones(n), -np.ones(n - 1))
    >>> exact = 2 - 2 * np.cos(np.arange(1, n + 1) * np.pi / (n + 1))
    >>> bool(np.abs(w - exact).max() < 1e-13)
    True
    >>> t = np.diag(2.0 * np.ones(n)) - np.eye(n, k=1) - np.eye(n, k=-1)
    >>> bool(np.abs(t @ z - z * w).max() < 1e-13)
    True
    """
    d, e, dtype = _check(d, e)
    n = d.shape[0]
    z = xp.zeros((n, n), order="F")  # columns contiguous: merges gather columns
    w = np.empty(n)
    for start, end in _blocks(d, e):
        block = slice(start, end)
        # dstedc's scaling to max |entry| = 1, by a power of two (exact).
        exponent = -np.frexp(max(np.abs(d[block]).max(), np.abs(e[start:end - 1]).max(
            initial=0.0)))[1]
        lam = _solve_block(np.ldexp(d[block], exponent), np.ldexp(e[start:end - 1], exponent),
                           z[block, block], xp)
        w[block] = np.ldexp(lam, -exponent)
    order = np.argsort(w, kind="stable")
    return (xp.asarray(w[order]).astype(dtype, copy=False),
            z[:, xp.asarray(order)].astype(dtype, copy=False))
