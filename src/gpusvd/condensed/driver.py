"""Singular values, and the SVD, by the two-stage reduction: dense → band → bidiagonal →
values solver (or the bidiagonal's SVD and the back-transformations: :func:`two_stage_svd`).

1. Stage 1 (band.py): A = Q·B_band·Pᴴ, all but the panel QRs as GEMMs, on the device that
   holds A.
2. Stage 2 (bulge.py): B_band → real bidiagonal by bulge chasing, where the band lies
   (the Numba loop on the host, the CUDA kernel of bulge_cuda.py on the GPU; complex
   bands on the host).
3. The bidiagonal's values, each to high relative accuracy, where the bidiagonal lies
   (:data:`_VALUES_SOLVERS`): on the CPU dqds (bidiagonal/dqds.py) in float64, as
   the one-stage path; on the GPU bisection on the Golub–Kahan tridiagonal
   (bidiagonal/bisection.py, a group of CUDA lanes per value) in the working precision, so that
   only the values cross to the host, when the caller reads them. On one CPU core bisection is
   15–25× slower than dqds (NOTES.md, "Bisection for the bidiagonal's values": n = 1000
   0.36 s against 0.023 s), hence dqds there.

This is the split of LAPACK's dgesvd2stage/dgebrd2stage (xGEBRD_2STAGE: xGE2TB then
xGBBRD-like bulge chasing) and of Haidar et al. (SC'13, "An improved parallel singular
value algorithm and its implementation for multicore hardware"): stage 1 does ~8n³/3
flops in GEMMs instead of the one-stage reduction's memory-bound half, and stage 2 does
O(n²·b) on data of O(n·b).  Both stages are orthogonal, so every value moves by at most a
modest multiple of n·ε·‖A‖ (Weyl), as with the one-stage reduction.

As in golub_reinsch/driver.py: A is scaled by a power of two into the safe range first
(``safe_exponent``, LAPACK's dlascl, applied exactly at any distance), a wide A is
reduced through its transpose (same values), and for m ≥ 1.6·n a QR of A leaves the n×n R
to reduce. Through ``svdvals`` the front end (_core/front_end.py) has already brought
max|A| into that range by the same rule, so the scale here is 1 and nothing is scaled
twice.
"""

import contextlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import numpy as np

from .._core import profile, tunables
from .._core.backend import array_namespace, to_host
from .._core.scaling import largest_entries, safe_exponent, scale_values, times_power_of_two
from ..bidiagonal.bisection import bidiagonal_singular_values_bisection
from ..bidiagonal.dbdsdc import bidiagonal_svd
from ..bidiagonal.dc_svd import LeafFeed, bidiagonal_svd_dc
from ..bidiagonal.dqds import bidiagonal_singular_values
from . import bulge_cuda, chase_back
from .band import _ct, apply_p, apply_q, band_of, reduce_to_band
from .bulge import band_to_bidiagonal

# dgesvd's crossover (LAPACK ILAENV ispec 6: MNTHR = 1.6·min(m, n)): from m ≥ 1.6·n a QR
# first makes stage 1 reduce n×n instead of m×n (2mn² flops of QR instead of 4mn²).
_QR_FIRST_RATIO = 1.6


def _bandwidth(n, bandwidth, xp):
    """The requested (or tuned) bandwidth, at most n − 1 and at least 1: a bandwidth of
    n − 1 or more is an upper triangle, which a plain QR already gives. The tuned one is
    ``two_stage_bandwidth``."""
    t = tunables.get()
    if bandwidth is None:
        bandwidth = t.two_stage_bandwidth
    b = int(bandwidth)
    if b < 1:
        raise ValueError(f"bandwidth must be a positive integer, got {bandwidth}")
    return max(1, min(b, n - 1))


def _scaled_copy(a, xp):
    """(k, a·2^k as a new Fortran-ordered array): A brought into the safe range by an exact
    power of two, at any distance (subnormal max|A| too; the module docstring)."""
    k = safe_exponent(float(largest_entries(a[None], xp)[0]), a.dtype)
    return k, xp.array(times_power_of_two(a, k, xp) if k else a, order="F", copy=True)


def _dqds_on_host(bd):
    """dqds on the host in float64 (each value to a few ulps; Fernando & Parlett 1994)."""
    return bidiagonal_singular_values(to_host(bd.d).astype(np.float64),
                                      to_host(bd.e).astype(np.float64))


def _bisection(bd):
    """Bisection where the bidiagonal lies, in its precision (each value σ to 4·n·ε·σ;
    Demmel & Kahan 1990, bidiagonal/bisection.py)."""
    return bidiagonal_singular_values_bisection(bd.d, bd.e)


# The solver of the bidiagonal's values by the array namespace's name (module docstring).
_VALUES_SOLVERS = {"numpy": _dqds_on_host, "cupy": _bisection}


def two_stage_singular_values(a, xp=None, *, bandwidth=None):
    """Singular values of one finite matrix by the two-stage reduction (module docstring).

    Parameters
    ----------
    a : (m, n) NumPy or CuPy array, float32, float64, complex64 or complex128
        Finite; not modified.
    xp : module, optional
        ``numpy`` or ``cupy``, the namespace of ``a`` (taken from ``a`` when omitted).
    bandwidth : int, optional
        b of stage 1; ``tunables.get().two_stage_bandwidth`` when omitted.

    Returns
    -------
    s : (min(m, n),) array of the real dtype, in the namespace of ``a``, descending

    Examples
    --------
    >>> import numpy as np
    >>> a = np.random.default_rng(0).standard_normal((40, 30))
    >>> s = two_stage_singular_values(a, bandwidth=8)
    >>> bool(np.allclose(s, np.linalg.svd(a, compute_uv=False), rtol=0, atol=1e-13))
    True
    """
    xp = array_namespace(a) if xp is None else xp
    real = np.finfo(a.dtype).dtype
    m, n = a.shape
    if m < n:
        return two_stage_singular_values(a.T, xp, bandwidth=bandwidth)
    if n == 0:
        return xp.zeros(0, dtype=real)
    b = _bandwidth(n, bandwidth, xp)
    k, work = _scaled_copy(a, xp)
    with profile.phase("values_stage1", xp):
        if m >= _QR_FIRST_RATIO * n:
            work = xp.triu(xp.linalg.qr(work, mode="r")[:n]).astype(a.dtype, copy=False)
        band = band_of(reduce_to_band(xp.asfortranarray(work), bandwidth=b))
    with profile.phase("values_stage2", xp):
        bd = band_to_bidiagonal(band)
    with profile.phase("values_solver", xp):
        s = xp.asarray(_VALUES_SOLVERS[xp.__name__](bd))
    return scale_values(s.astype(real, copy=False), -k, xp)


def _divide_and_conquer_on_host(d, e, xp, real, early=None):
    """(U_B, V_B, s) by dbdsdc on the host (vectors) and dqds beside it on a second thread
    (values, each to high relative accuracy, as the one-stage path gives them; dbdsdc's
    are accurate to n·ε·σ₁ only: bidiagonal/dbdsdc.py). ``early`` is for the device's
    solver (:func:`_leaves_ahead`)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        values = pool.submit(bidiagonal_singular_values, d, e)
        u_b, _, vt_b = bidiagonal_svd(d, e)
        s = values.result()
    return xp.asarray(u_b.astype(real, copy=False)), xp.asarray(vt_b.T.astype(real)), s


def _divide_and_conquer_on_device(d, e, xp, real, early=None):
    """(U_B, V_B, s) by our divide and conquer (bidiagonal/dc_svd.py: U, V and the merges'
    GEMMs in ``xp``, O(n) work per merge on the host) and the values by bisection where U
    lies (each to 4·n·ε·σ relative, in float64, as ``svdvals`` takes them: the divide and
    conquer's own are accurate to n·ε·σ₁ only).

    The bisection starts from the divide and conquer's values (its ``near``), within
    2·n·ε·max|B| ≥ n·ε·σ₁ of the true ones: it counts only the steps inside that slack,
    about 15 + log₂(σ₁/σ) of a value's 64 in float64, and gives the bits it gives
    without (bidiagonal/bisection.py). ``early``: the leaves solved while stage 2 ran
    (:func:`_leaves_ahead`)."""
    u_b, near, vt_b = bidiagonal_svd_dc(d, e, xp=xp, early=early)
    top = max(np.abs(d).max(initial=0.0), np.abs(e).max(initial=0.0))
    s = bidiagonal_singular_values_bisection(
        xp.asarray(d), xp.asarray(e), near=near,
        slack=2 * d.shape[0] * float(np.finfo(np.float64).eps) * top)
    return u_b, vt_b.T, s


# The bidiagonal's SVD with vectors by the array namespace's name. The CPU: LAPACK's
# divide and conquer, 5–19× the QR's speed on one core (n = 500–2000, bidiagonal/dbdsdc.py).
# The GPU: our divide and conquer with U, V, its merges and GEMMs on the device. On the
# H100 the two-stage SVD at 8192 float64 takes 1.87 s with it (the solver 0.5 s), 5.77 s
# with the QR on the host and its rotations on the device (the solver 3.29 s); dbdsdc on
# the host's 16 cores takes 14.8 s for the solver alone.
_VECTORS_SOLVERS = {"numpy": _divide_and_conquer_on_host, "cupy": _divide_and_conquer_on_device}


@contextlib.contextmanager
def _leaves_ahead(bd, xp):
    """On a GPU, for a real bidiagonal of at least two leaves: a :class:`LeafFeed` whose
    host threads solve the divide and conquer's leaves while the chase still makes B's
    rows (bulge_cuda.follow), so that the solver finds them done (at 8192, about 20 ms
    of host work the GPU would wait for); None elsewhere. The solver takes a leaf only
    if its input is bit for bit the final one, so the result is the same either way."""
    n = bd.d.shape[0]
    if (xp.__name__ != "cupy" or bd.progress is None or bd.band.dtype.kind == "c"
            or n < 2 * tunables.get().divide_conquer_leaf_size):
        yield None
        return
    with LeafFeed(n, xp) as feed:
        for start, d, e in bulge_cuda.follow(bd.band, (bd.band.shape[1] + 1) // 3,
                                             bd.progress):
            feed.add(start, d, e)
        yield feed


class Reduced(NamedTuple):
    """A scaled, square-or-tall matrix taken to the bidiagonal's SVD, before the
    back-transformations (:func:`left_vectors`, :func:`right_vectors`)."""

    band: Any         # stage 1's BandReduction
    bidiagonal: Any   # stage 2's Bidiagonal, its reflectors recorded
    u_b: Any          # the bidiagonal's left vectors (n×n), in the matrix's dtype
    v_b: Any          # its right vectors
    s: Any            # its values, descending


def reduce_and_solve(work, xp, b):
    """Stage 1 on ``work`` (m×n, m < 1.6·n, scaled; overwritten), stage 2 with its
    reflectors recorded, the bidiagonal's SVD (:data:`_VECTORS_SOLVERS`): a
    :class:`Reduced`."""
    dtype = work.dtype
    with profile.phase("svd_stage1", xp):
        red = reduce_to_band(work, bandwidth=b)
    with contextlib.ExitStack() as leaves:
        with profile.phase("svd_stage2", xp):
            bd = band_to_bidiagonal(band_of(red), record=True)
            early = leaves.enter_context(_leaves_ahead(bd, xp))
        with profile.phase("svd_solver", xp):
            d = np.asarray(to_host(bd.d), np.float64)
            e = np.asarray(to_host(bd.e), np.float64)
            u_b, v_b, s = _VECTORS_SOLVERS[xp.__name__](d, e, xp, np.finfo(dtype).dtype,
                                                        early)
    return Reduced(red, bd, u_b.astype(dtype, copy=False), v_b.astype(dtype, copy=False), s)


def left_vectors(reduced, u_b, m, first, count):
    """Columns ``first`` … ``first + count − 1`` of U = Q₁·Q₂·D_L·[U_B 0; 0 I] (m×m, or its
    first n columns), from ``u_b``, U_B's columns among them (those below n). Columns
    are independent, so several devices can each take some (gpusvd.distributed)."""
    red, bd = reduced.band, reduced.bidiagonal
    xp = array_namespace(u_b)
    n = bd.d.shape[0]
    c = xp.zeros((m, count), dtype=u_b.dtype, order="F")
    if u_b.shape[1]:
        c[:n, :u_b.shape[1]] = chase_back.apply_q(bd.reflectors, bd.phase_left[:, None] * u_b)
    lo, hi = max(first, n), first + count   # U's columns past n: the identity's
    if hi > lo:
        c[lo:hi, lo - first:hi - first] = xp.eye(hi - lo, dtype=u_b.dtype)
    return apply_q(red, c) if count else c


def right_vectors(reduced, v_b):
    """The columns of V = P₁·P₂·D_R·V_B for the columns ``v_b`` of V_B (as
    :func:`left_vectors`)."""
    red, bd = reduced.band, reduced.bidiagonal
    xp = array_namespace(v_b)
    if not v_b.shape[1]:
        return xp.zeros_like(v_b, order="F")
    v = chase_back.apply_p(bd.reflectors, bd.phase_right[:, None] * v_b)
    return apply_p(red, xp.asfortranarray(v))


def _vectors_here(reduced, m, count):
    """U's first ``count`` columns (m rows) and V, on this device."""
    return (left_vectors(reduced, reduced.u_b, m, 0, count),
            right_vectors(reduced, reduced.v_b))


def _vectors_tall(work, xp, b, full_matrices, vectors):
    """(U, s, Vh) of the scaled, square-or-tall (m < 1.6·n) ``work``, overwritten:
    :func:`reduce_and_solve`, then the back-transformations U = Q₁·Q₂·D_L·U_B and
    V = P₁·P₂·D_R·V_B (module docstring) by ``vectors(reduced, m, count)``."""
    m, n = work.shape
    reduced = reduce_and_solve(work, xp, b)
    with profile.phase("svd_back_transform", xp):
        u, v = vectors(reduced, m, m if full_matrices else n)
    return u, xp.asarray(reduced.s), _ct(v)


def two_stage_svd(a, xp=None, *, full_matrices=False, bandwidth=None, vectors=_vectors_here):
    """U, Σ, Vᴴ of one finite matrix by the two-stage reduction (module docstring).

    Dense → band (stage 1, on the device that holds A), band → bidiagonal by bulge chasing
    with its reflectors recorded (stage 2, where the band lies), the bidiagonal's SVD
    (:data:`_VECTORS_SOLVERS`: divide and conquer, LAPACK's on the CPU with values by dqds,
    ours with its GEMMs on the device on the GPU, its leaves solved on host threads while
    the chase runs, with values by bisection from its own values there: each value to
    high relative accuracy, as the one-stage path gives them), then the
    back-transformations as GEMMs: stage 2's reflectors in blocks (chase_back.py), stage
    1's compact WY factors (band.py). For m ≥ 1.6·n a QR of A first (U = Q·U_R), as
    dgesvd.

    Parameters
    ----------
    a : (m, n) NumPy or CuPy array, float32, float64, complex64 or complex128
        Finite; not modified.
    xp : module, optional
        ``numpy`` or ``cupy``, the namespace of ``a`` (taken from ``a`` when omitted).
    full_matrices : bool
        U of m×m and Vᴴ of n×n (True) or m×k and k×n, k = min(m, n).
    bandwidth : int, optional
        b of stage 1, as :func:`two_stage_singular_values`.
    vectors : callable, optional
        ``vectors(reduced, m, count)`` → (U's first ``count`` columns, V) of the
        :class:`Reduced` matrix of m rows: the back-transformations, on this device by
        default (:func:`left_vectors`, :func:`right_vectors`; gpusvd.distributed shares
        their columns out among its ranks).

    Returns
    -------
    u, s, vh : arrays in the namespace of ``a``; s of the real dtype, descending; u and vh
        C-contiguous, of ``a``'s dtype

    Examples
    --------
    >>> import numpy as np
    >>> a = np.random.default_rng(0).standard_normal((40, 30))
    >>> u, s, vh = two_stage_svd(a, bandwidth=8)
    >>> bool(np.allclose(u * s @ vh, a, rtol=0, atol=1e-12))
    True
    """
    xp = array_namespace(a) if xp is None else xp
    real = np.finfo(a.dtype).dtype
    m, n = a.shape
    if m < n:
        u, s, vh = two_stage_svd(_ct(a), xp, full_matrices=full_matrices, bandwidth=bandwidth,
                                 vectors=vectors)
        return xp.ascontiguousarray(_ct(vh)), s, xp.ascontiguousarray(_ct(u))
    if n == 0:
        return (xp.eye(m, dtype=a.dtype) if full_matrices else xp.zeros((m, 0), a.dtype),
                xp.zeros(0, dtype=real), xp.zeros((0, 0), a.dtype))
    b = _bandwidth(n, bandwidth, xp)
    k, work = _scaled_copy(a, xp)
    if m >= _QR_FIRST_RATIO * n:
        with profile.phase("svd_qr", xp):
            q, r = xp.linalg.qr(work, mode="complete" if full_matrices else "reduced")
            r = xp.asfortranarray(xp.triu(r[:n]).astype(a.dtype, copy=False))
        u_r, s, vh = _vectors_tall(r, xp, b, False, vectors)
        with profile.phase("svd_back_transform", xp):
            u = q.astype(a.dtype, copy=True)
            u[:, :n] = q[:, :n] @ u_r
    else:
        u, s, vh = _vectors_tall(work, xp, b, full_matrices, vectors)
    s = scale_values(s.astype(real, copy=False), -k, xp)
    return xp.ascontiguousarray(u), s, xp.ascontiguousarray(vh)
