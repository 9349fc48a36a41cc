"""Inner (pointwise) one-sided Jacobi on a batch of small matrices (CPU twin).

The orthogonalize phase of the pStep kernel (paper 003, §4.3, subphases 1–7), one
matrix per batch element: for each p-step of the parallel strategy ``pairs`` and each
pivot pair (p, q) of the step, in order:

1. the pivot Gram matrix (3) by three dot products over the rows, summed in row order
   i = 0, 1, …, m−1 (recomputed for every pair: the paper's choice when the rotation
   formulas of its ref. [13] are not used); complex entries in real arithmetic,
   ``h_pp += re·re + im·im`` and ``h_pq += conj(x)·y`` written out as
   ``(xr·yr + xi·yi) + i·(xr·yi − xi·yr)``; |h_pq| = √(re² + im²);
2. the relative orthogonality test: rotate only if ``|h_pq| > tol·(√h_pp·√h_qq)``, and
   not where a real h_pq's square underflows or h_pp or h_qq is at most ``floor2``;
3. 𝔱 = −1 (hyperbolic) when ``signs[p] != signs[q]``, else +1;
4. :func:`gpusvd.jacobi.rotations.rotation` gives (cs, tn); the pair is counted as a
   *proper* rotation when cs ≠ 1;
5. trigonometric pairs are kept sorted (§4.3, step 5, after Hari's ref. [21]): with
   h_pp' = h_pp − tn·|h_pq| and h_qq' = h_qq + tn·|h_pq| (or the old values if no
   rotation), columns p and q are swapped when ``signs[p]·(h_pp' − h_qq') < 0``, which
   keeps ‖g‖ descending among +1 columns and ascending among −1 columns (eigenvalues
   ±‖g‖² non-increasing); hyperbolic pairs are never swapped, so J stays as it is;
6. the rotation is applied to columns p, q of g and of v with the phase
   e = h_pq/|h_pq| (computed as (re/|h_pq|, im/|h_pq|)), coefficients
   ``c_p = 𝔱·tn·conj(e)`` and ``c_q = tn·e``, each entry pair (x, y) becoming
   ``x' = x − c_p·y``, ``y' = y + c_q·x`` (complex products written out as above),
   then both multiplied by cs unless cs == 1; then the swap, if any.

A sweep is all p-steps; the sweeps stop after the first one in which no pair failed the
test, or after ``max_sweeps``. Steps 1–6 are computed in float64 for every dtype, without
fused multiply-adds, and the entries of g and v are rounded to their own dtype once, when
stored. For single precision data that is needed, not a luxury: graded and
rank-deficient matrices leave columns of norm 1e-17 with entries of 1e-21, whose float32
squares and products are subnormal or zero, and float32 dot products and updates of such
columns miss the relative orthogonality u·√m by orders of magnitude (an emulation of a
float32 kernel on graded 45×33 input: V orthogonal only to 5·10⁵ n·ε). Products of two
float32 numbers are exact in float64 and cannot underflow there. Columns at or below
:data:`U_FLOOR` of scaled data are not rotated at all (the callers' ``floor2``): float32
ones have subnormal entries, and float64 pairs of them are left by step 2's underflow
rule before they are orthogonal. The small SVD (:mod:`.small_svd`) asks for ``narrow``:
its columns are scaled and never rotated below U_FLOOR (2^-102 for float32), where
float32's absolute rounding 2^-150 lies below ε·‖g‖, so the rotation after (15) and the
updates run in the data's real type (the Gram sums, the test and (15) stay in float64).
The CUDA twin (``inner_cuda.py``) follows the same steps and differs only in the order of
the sums of step 1 (a parallel reduction) and the contraction of the float64 updates into
fma, so the two agree to rounding, not to the bit.
"""

import numba
import numpy as np
from numba import types
from numba.extending import overload

from .._core.threads import single_threaded_blas
from .rotations import _like, cot_2phi, rotation_of

# The least column norm of a scaled G (largest entry in [1/2, 1)) that the Jacobi methods
# rotate and divide by, by the real dtype's item size (small_svd.cu's u_floor): a pair is
# not rotated once re² underflows in float64 (|h_pq| < 2^-537), which leaves
# cos(g_p, g_q) <= 2^-53 only where ‖g_p‖·‖g_q‖ >= 2^-484; a float32 column below 2^-102
# nears the subnormal range, whose absolute rounding (2^-150) the relative test cannot
# see past, and its pairs may fail the test at every sweep (D·G·D, D from 1 to 1e-25,
# n = 40: no convergence in 50 block sweeps). Columns at or below it are not rotated
# (``floor2`` = U_FLOOR²) and are completed in U as for σ = 0, their σ kept: the residual
# moves by less than 2^-101·‖A‖, and the σ just above the floor, not made orthogonal to
# those columns, lose about (U_FLOOR/σ)² relatively (float64 G·D, D from 1 to 1e-80:
# 1e5·n·ε at 2^-240, 0.03·n·ε from 2^-233 on).
U_FLOOR = {4: np.float32(2.0 ** -102), 8: np.float64(2.0 ** -242)}


def column_floor(dtype):
    """:data:`U_FLOOR` of the real type of ``dtype`` (an instance of that type).

    Examples
    --------
    >>> bool(column_floor(np.complex64) == 2.0 ** -102)
    True
    """
    return U_FLOOR[np.finfo(dtype).dtype.itemsize]


def _gram(x, y):
    """(h_pp, h_qq, Re h_pq, Im h_pq) of columns x and y in float64 (Python code path)."""
    x, y = x.astype(np.complex128), y.astype(np.complex128)
    h = np.vdot(x, y)
    return np.vdot(x, x).real, np.vdot(y, y).real, h.real, h.imag


@overload(_gram)
def _gram_impl(x, y):
    if isinstance(x.dtype, types.Complex):
        def impl(x, y):
            app = aqq = re = im = np.float64(0)
            for i in range(x.shape[0]):
                xr, xi = np.float64(x[i].real), np.float64(x[i].imag)
                yr, yi = np.float64(y[i].real), np.float64(y[i].imag)
                app += xr * xr + xi * xi
                aqq += yr * yr + yi * yi
                re += xr * yr + xi * yi
                im += xr * yi - xi * yr
            return app, aqq, re, im
    else:
        def impl(x, y):
            app = aqq = re = np.float64(0)
            for i in range(x.shape[0]):
                xi, yi = np.float64(x[i]), np.float64(y[i])
                app += xi * xi
                aqq += yi * yi
                re += xi * yi
            return app, aqq, re, np.float64(0)
    return impl


def _rotate(x, y, cs, cpr, cpi, cqr, cqi):
    """x' = cs·(x − c_p·y), y' = cs·(y + c_q·x) in place, computed in the coefficients'
    real type (float64, or float32 for the small SVD's float data) and rounded to x's
    dtype (Python code path: for docs)."""
    cp, cq = complex(cpr, cpi), complex(cqr, cqi)
    x[:], y[:] = cs * (x - cp * y), cs * (y + cq * x)


@overload(_rotate)
def _rotate_impl(x, y, cs, cpr, cpi, cqr, cqi):
    work = np.float32 if cs == types.float32 else np.float64
    if isinstance(x.dtype, types.Complex):
        def impl(x, y, cs, cpr, cpi, cqr, cqi):
            scale = cs != 1
            for i in range(x.shape[0]):
                xr, xi = work(x[i].real), work(x[i].imag)
                yr, yi = work(y[i].real), work(y[i].imag)
                ar = xr - (cpr * yr - cpi * yi)
                ai = xi - (cpr * yi + cpi * yr)
                br = yr + (cqr * xr - cqi * xi)
                bi = yi + (cqr * xi + cqi * xr)
                if scale:
                    ar, ai, br, bi = cs * ar, cs * ai, cs * br, cs * bi
                x[i] = complex(ar, ai)
                y[i] = complex(br, bi)
    else:
        def impl(x, y, cs, cpr, cpi, cqr, cqi):
            scale = cs != 1
            for i in range(x.shape[0]):
                xi, yi = work(x[i]), work(y[i])
                a = xi - cpr * yi
                b = yi + cqr * xi
                if scale:
                    a, b = cs * a, cs * b
                x[i] = a
                y[i] = b
    return impl


@numba.njit(cache=True)
def _swap(x, y):
    for i in range(x.shape[0]):
        x[i], y[i] = y[i], x[i]


@numba.njit(cache=True)
def _pair_step(gt, vt, signs, p, q, tol, floor2, like):
    """Steps 1–6 on columns p, q (rows of the transposed gt, vt): the Gram sums, the test
    and (15) in float64, the rotation's (16)–(18) and the updates in ``like``'s real type
    (float64, or the data's float32 for the small SVD); never a rotation where h_pp or h_qq
    <= floor2. Returns (rotated, proper)."""
    app, aqq, re, im = _gram(gt[p], gt[q])
    zero = np.float64(0)
    real = im == 0  # |h_pq| and its phase without a square root or division (the kernel's)
    apq_abs = abs(re) if real else np.sqrt(re * re + im * im)
    # not where re² underflows, as when |h_pq| was sqrt(re²): a column whose squared norm
    # underflows (aqq = 0) would rotate at every sweep and never pass the test
    rotate = (apq_abs > np.float64(tol) * (np.sqrt(app) * np.sqrt(aqq))
              and (not real or re * re != 0) and min(app, aqq) > floor2)
    hyperbolic = signs[p] != signs[q]
    proper = False
    if rotate:
        cs, tn = rotation_of(cot_2phi(app, aqq, apq_abs, hyperbolic), hyperbolic, like)
        proper = cs != 1
        if real:
            er, ei = np.copysign(np.float64(1), re), zero
        else:
            er, ei = re / apq_abs, im / apq_abs
        er, ei = _like(like, er), _like(like, ei)
        t = -tn if hyperbolic else tn
        cpr, cpi = t * er, _like(like, 0) - t * ei
        cqr, cqi = tn * er, tn * ei
        _rotate(gt[p], gt[q], cs, cpr, cpi, cqr, cqi)
        _rotate(vt[p], vt[q], cs, cpr, cpi, cqr, cqi)
        app = app - np.float64(tn) * apq_abs
        aqq = aqq + np.float64(tn) * apq_abs
    if not hyperbolic and signs[p] * (app - aqq) < 0:
        _swap(gt[p], gt[q])
        _swap(vt[p], vt[q])
    return rotate, proper


@numba.njit(parallel=True, cache=True)
def _inner_jacobi(g, v, signs, pairs, max_sweeps, tol, floor2, like, rotations, sweeps):
    batch, m, k = g.shape
    for b in numba.prange(batch):
        gt = np.ascontiguousarray(g[b].T)  # columns contiguous while they are rotated
        vt = np.ascontiguousarray(v[b].T)
        proper_total = 0
        done = 0
        for sweep in range(max_sweeps):
            done = sweep + 1
            rotated = 0
            for step in range(pairs.shape[0]):
                for j in range(pairs.shape[1]):
                    r, pr = _pair_step(gt, vt, signs, pairs[step, j, 0], pairs[step, j, 1], tol,
                                       floor2, like)
                    rotated += r
                    proper_total += pr
            if rotated == 0:
                break
        g[b] = gt.T
        v[b] = vt.T
        rotations[b] = proper_total
        sweeps[b] = done


def inner_jacobi(g, v, signs, pairs, max_sweeps, tol, floor2=0.0, narrow=False):
    """One-sided Jacobi on each matrix of a batch, in place (CPU twin of the pStep core).

    Parameters
    ----------
    g : (batch, m, k) ndarray, m >= k, k even
        float32, float64, complex64 or complex128, C-contiguous; its columns are
        orthogonalized in place.
    v : (batch, k, k) ndarray of g's dtype
        Every transformation of columns (p, q) of g is applied to columns (p, q) of v.
    signs : (k,) ndarray of g's real dtype
        +1 or −1 per column; pairs with different signs get hyperbolic rotations.
    pairs : (steps, k // 2, 2) int32 ndarray
        A parallel pivot strategy (:func:`gpusvd.jacobi.strategies.pivot_strategy`).
    max_sweeps : int >= 1
        1 is the block-oriented variant's single inner sweep.
    tol : float
        Relative orthogonality threshold c(ε) (:func:`~gpusvd.jacobi.rotations.orthogonality_tol`).
    floor2 : float, optional
        A pair with h_pp or h_qq at or below it is never rotated (the callers pass
        :data:`U_FLOOR`² of the dtype for their scaled columns); 0 by default.
    narrow : bool, optional
        Compute the rotation after (15) and the updates in g's real type instead of
        float64 (the small SVD's, safe there because its columns are scaled and never
        rotated below :data:`U_FLOOR`; the kernel's ``Narrow``). False by default.

    Returns
    -------
    rotations : (batch,) int64
        Proper rotations (cs ≠ 1) applied, over all sweeps.
    sweeps : (batch,) int32
        Sweeps run; a matrix converged if its last sweep rotated nothing, which is
        certain when ``sweeps < max_sweeps``.

    Examples
    --------
    >>> import numpy as np
    >>> from gpusvd.jacobi.strategies import pivot_strategy
    >>> g = np.array([[[3.0, 0.0], [4.0, 5.0]]])
    >>> v = np.eye(2)[None].copy()
    >>> rot, sw = inner_jacobi(g, v, np.ones(2), pivot_strategy("row", 2), 10, 1e-15)
    >>> np.round(np.linalg.norm(g[0], axis=0) ** 2, 10)
    array([45.,  5.])
    """
    _check(g, v, signs, pairs, max_sweeps)
    rotations = np.zeros(g.shape[0], np.int64)
    sweeps = np.zeros(g.shape[0], np.int32)
    if g.shape[0] and g.shape[2]:
        real = g.real.dtype.type
        with single_threaded_blas():  # the cores to Numba's threads (_core/threads.py)
            like = real(0) if narrow else np.float64(0)
            _inner_jacobi(g, v, signs, pairs, int(max_sweeps), real(tol), np.float64(floor2),
                          like, rotations, sweeps)
    return rotations, sweeps


def _check(g, v, signs, pairs, max_sweeps):
    if g.ndim != 3 or g.dtype not in (np.float32, np.float64, np.complex64, np.complex128):
        raise ValueError("g must be a (batch, m, k) float32/64 or complex64/128 array")
    batch, m, k = g.shape
    if m < k or k % 2:
        raise ValueError(f"g must have m >= k and k even, got m={m}, k={k}")
    if v.shape != (batch, k, k) or v.dtype != g.dtype:
        raise ValueError(f"v must be a ({batch}, {k}, {k}) array of dtype {g.dtype}")
    if not (g.flags.c_contiguous and v.flags.c_contiguous):
        raise ValueError("g and v must be C-contiguous")
    if not (getattr(g.flags, "writeable", True) and getattr(v.flags, "writeable", True)):
        raise ValueError("g and v must be writeable (they are updated in place)")
    if signs.shape != (k,) or signs.dtype != g.real.dtype:
        raise ValueError(f"signs must be a ({k},) array of dtype {g.real.dtype}")
    if pairs.dtype != np.int32 or pairs.ndim != 3 or pairs.shape[1:] != (k // 2, 2):
        raise ValueError(f"pairs must be a (steps, {k // 2}, 2) int32 array")
    # Range-checked on the host only: on the device the check would cost two host
    # synchronizations per call, one per p-step of the blocked driver (whose tables come
    # from pivot_strategy and are valid by construction).
    if isinstance(pairs, np.ndarray) and pairs.size and (pairs.min() < 0 or pairs.max() >= k):
        raise ValueError(f"pairs must hold column indices in [0, {k})")
    if max_sweeps < 1:
        raise ValueError(f"max_sweeps must be >= 1, got {max_sweeps}")
