"""Stage 2 of the two-stage reduction: upper band (bandwidth b) → bidiagonal, by bulge chasing.

Sweep s (s = 0 … n−2) makes row s bidiagonal and chases the fill it creates down the band
with Householder reflectors of length at most b, in blocks of b rows and columns
(Haidar, Ltaief, Luszczek & Dongarra, "A comprehensive study of task coalescing for
selecting parallelism granularity in a two-stage bidiagonal reduction", IPDPS 2012, and
Ltaief, Luszczek & Dongarra, ACM TOMS 39 (2013), Sec. 4: the "element-wise" chasing of
their kernels xGBCEU/xGBREL/xGBLRX, PLASMA's core_zgbtype1cb/2cb/3cb; after Lang's
SBR, Parallel Comput. 22 (1996) 1–18).  With block k of sweep s the index range
[s+1+k·b, min(s+(k+1)·b, n−1)]:

- type 1 (k = 0): a right reflector zeroes row s right of its superdiagonal, acting on the
  columns of block 0 and applied to the rows of block 0 (the diagonal block); a left
  reflector then zeroes the first column of that block below its diagonal.
- type 2: the previous left reflector is applied to the block right of the diagonal block
  (rows of block k, columns of block k+1), which fills it beyond the band; a right
  reflector zeroes the first row of that block right of its first column and is applied
  to the rest of its rows;
- type 3: that right reflector is applied to the next diagonal block (block k+1), whose
  first column a new left reflector zeroes below the diagonal.

Only the first column (row) of each bulge is annihilated; the rest of it is annihilated
by the following sweeps, whose blocks are shifted by one.  So between sweeps the matrix
keeps fill down to the (b−1)-th subdiagonal and out to the (2b−1)-th superdiagonal, and
the band is stored with those 3b−1 diagonals (PLASMA's band storage has the same role):
O(n·b) memory, row i in ``ab[i]`` with ``ab[i, j − i + b − 1] = A[i, j]``.  Each reflector
is applied to exactly the rows or columns of its window that can be nonzero
(tests/condensed/naive.py applies every reflector to whole rows and columns instead).

The flops are ≈ 8·n²·b (about 4 applications of a length-b reflector to a b×b block per
block step, n²/(2b) block steps), as against ≈ 8n³/3 for stage 1: O(n²·b) in
memory-bound loops, the reason b is kept small.

Complex bands are chased in complex arithmetic (geqrf-style reflectors with real β, as
zlarfg, so most entries come out real), and the bidiagonal is then made real and
non-negative by two diagonal unitaries, B_chased = D_L·B·D_Rᴴ (``phase_left``,
``phase_right``), as for real bands with D_L, D_R of ±1.

The chase is one sequential Numba loop on the CPU; its GPU twin (bulge_cuda.py,
kernels/bulge.cu) runs the same tasks with many sweeps in flight, task h of sweep s+1
once sweep s has finished its task h+2 and its corner entry once task h+3 is done too
(PLASMA's dependency, with the row and column reflectors of a block as separate tasks),
and :data:`_TWINS` picks one by the band's array namespace.  Sweep s's reflectors are
recorded (``record=True``) as ``v_left[s, k]``, ``tau_left[s, k]`` (block k of sweep s,
acting on rows s+1+k·b …) and the same for the right, so that the back-transformation
can apply them in blocks.
"""

import math
from typing import Any, NamedTuple

import numba
import numpy as np

from .._core import tunables
from .._core.backend import array_namespace, to_host
from .._core.scaling import unit_phase
from . import bulge_cuda

# dlarfg's SAFMIN = DLAMCH('S')/DLAMCH('E') = 2^-1022/2^-53 in double, and its inverse:
# a reflector whose entries are all below it is formed on x·2^969 (exact), since
# 1/(alpha − beta) overflows once |alpha − beta| < 1/DBL_MAX (kernels/bulge.cu's
# REFLECTOR_SAFMIN).
_SAFMIN = 2.0 ** -969
_RSAFMN = 2.0 ** 969


@numba.njit(cache=True)
def _reflector(x):
    """x ← v in place, v[0] = 1; returns (beta, tau) with (I − tau·v·vᴴ)ᴴ·x = beta·e_0.

    LAPACK's zlarfg (dlarfg when real): beta = −sign(Re x0)·‖x‖ is real.  When x(1:) = 0
    and x0 is real, H = I: tau = 0, beta = x0.  ‖x(1:)‖ is formed with the largest |x_i|
    factored out, so that neither tiny nor huge entries lose it to under/overflow.  When
    every |x_i| < _SAFMIN, x is scaled by _RSAFMN first and beta back after, as in dlarfg:
    down the trailing block of a long chase the entries shrink like products of earlier
    ones and reach subnormals (a random band, n = 3000, b = 16), where 1/(alpha − beta)
    is inf.  Departures from dlarfg, with the same effect: the test is on max|x_i|, not on
    |beta| (one hypot, not two), and one step of its loop suffices (max|x_i| ≥ 2^-1074, so
    max|x_i|·2^969 ≥ 2^-105); past the test |beta| ≥ _SAFMIN.  float32 data, computed in
    double, never comes near it.  Every |x_i| is taken in double (``x[i] * 1.0`` widens a
    complex64 entry, exactly but for the sign of a zero part, which |x_i| ignores and
    alpha keeps): complex64's own modulus, hypotf, rounds a subnormal modulus
    to float's subnormal grid (|3e-45 + 4e-45j| comes out 11% large), and reflectors
    formed from such moduli are not unitary (4% off in the last sweeps of a complex64
    band at n = 1000, b = 32, whose entries are all subnormal)."""
    n = x.shape[0]
    alpha = x[0]
    amax = 0.0
    for i in range(1, n):
        amax = max(amax, abs(x[i] * 1.0))
    if amax == 0.0 and alpha.imag == 0.0:
        x[0] = 1.0
        return alpha.real, x[0] * 0.0
    ssq = 0.0
    if amax > 0.0:
        for i in range(1, n):
            t = abs(x[i] * 1.0) / amax
            ssq += t * t
    shrink = 1.0
    if abs(alpha * 1.0) < _SAFMIN and amax < _SAFMIN:
        shrink = _SAFMIN
        for i in range(n):
            x[i] *= _RSAFMN
        alpha = x[0]
        amax *= _RSAFMN
    beta = -math.copysign(math.hypot(abs(alpha * 1.0), amax * math.sqrt(ssq)), alpha.real)
    tau = (beta - alpha) / beta
    scale = 1.0 / (alpha - beta)
    for i in range(1, n):
        x[i] *= scale
    x[0] = 1.0
    return beta * shrink, tau


@numba.njit(cache=True)
def _apply_right(ab, off, r0, r1, c0, v, ln, tau):
    """A(r0:r1, c0:c0+ln) ← A·(I − tau·v·vᴴ), row by row (rows are contiguous in ab)."""
    for i in range(r0, r1):
        base = c0 - i + off
        w = ab[i, base] * v[0]
        for k in range(1, ln):
            w += ab[i, base + k] * v[k]
        w *= tau
        for k in range(ln):
            ab[i, base + k] -= w * np.conj(v[k])


@numba.njit(cache=True)
def _apply_left(ab, off, r0, c0, c1, v, ln, tau):
    """A(r0:r0+ln, c0:c1) ← (I − tau·v·vᴴ)ᴴ·A, column by column."""
    ctau = np.conj(tau)
    for j in range(c0, c1):
        base = j - r0 + off
        w = np.conj(v[0]) * ab[r0, base]
        for k in range(1, ln):
            w += np.conj(v[k]) * ab[r0 + k, base - k]
        w *= ctau
        for k in range(ln):
            ab[r0 + k, base - k] -= w * v[k]


@numba.njit(cache=True)
def _row_reflector(ab, off, r, c0, ln, u):
    """Zero A(r, c0+1:c0+ln) with a right reflector (vector into u[:ln]); returns tau."""
    for k in range(ln):
        u[k] = np.conj(ab[r, c0 - r + off + k])
    beta, tau = _reflector(u[:ln])
    ab[r, c0 - r + off] = beta
    for k in range(1, ln):
        ab[r, c0 - r + off + k] = 0.0
    return tau


@numba.njit(cache=True)
def _column_reflector(ab, off, c, ln, v):
    """Zero A(c+1:c+ln, c) with a left reflector (vector into v[:ln]); returns tau."""
    for k in range(ln):
        v[k] = ab[c + k, off - k]
    beta, tau = _reflector(v[:ln])
    ab[c, off] = beta
    for k in range(1, ln):
        ab[c + k, off - k] = 0.0
    return tau


@numba.njit(cache=True)
def _chase(ab, b, v_left, tau_left, v_right, tau_right, record):
    """All sweeps of the module docstring on ``ab`` (n, 3b−1), in place."""
    n = ab.shape[0]
    off = b - 1
    u = np.zeros(b, ab.dtype)
    v = np.zeros(b, ab.dtype)
    for s in range(n - 1):
        st = s + 1
        ed = min(s + b, n - 1)
        if ed == st:  # row s is already bidiagonal, and so are all rows after it
            break
        # Type 1: row s, then the first column of the diagonal block.
        tau_r = _row_reflector(ab, off, s, st, ed - st + 1, u)
        _apply_right(ab, off, st, ed + 1, st, u, ed - st + 1, tau_r)
        k = 0
        while True:
            ln = ed - st + 1
            tau_l = _column_reflector(ab, off, st, ln, v)
            if record:
                v_right[s, k, :ln] = u[:ln]
                tau_right[s, k] = tau_r
                v_left[s, k, :ln] = v[:ln]
                tau_left[s, k] = tau_l
            # Type 3's left application to the rest of the diagonal block and type 2's to
            # the block right of it, in one pass (their columns are adjacent).
            j1 = ed + 1
            j2 = min(ed + b, n - 1)
            _apply_left(ab, off, st, st + 1, j2 + 1, v, ln, tau_l)
            if j2 <= j1:  # no bulge beyond the band: the sweep is done
                break
            # Type 2's right reflector on the first row of the off-diagonal block, applied
            # to its other rows and (type 3) to the next diagonal block's rows, adjacent.
            tau_r = _row_reflector(ab, off, st, j1, j2 - j1 + 1, u)
            _apply_right(ab, off, st + 1, j2 + 1, j1, u, j2 - j1 + 1, tau_r)
            st, ed = j1, j2
            k += 1


# The chase by the band's array namespace: the Numba loop on NumPy, the CUDA kernel on
# CuPy (with the tunable chase_on_gpu off, the Numba loop on a host copy).
_TWINS = {"numpy": _chase, "cupy": bulge_cuda.chase}
_SUPPORTS = {"numpy": lambda dtype: True,
             "cupy": lambda dtype: tunables.get().chase_on_gpu and bulge_cuda.supports(dtype)}


class ChaseReflectors(NamedTuple):
    """Stage 2's reflectors, for the back-transformation (``record=True``).

    Block k of sweep s acts on the index range starting at s+1+k·b (rows for the left
    reflector, columns for the right one) with H = I − tau·v·vᴴ; a zero tau is H = I.
    The band A_band = Q₂·B_chased·P₂ᴴ, with Q₂ (P₂) the product of the left (right)
    reflectors in the order of (s, k)."""

    v_left: Any     # (n−1, ceil((n−1)/b), b)
    tau_left: Any   # (n−1, ceil((n−1)/b))
    v_right: Any
    tau_right: Any
    bandwidth: int


class Bidiagonal(NamedTuple):
    """The band as D_L·B·D_Rᴴ, B real upper bidiagonal with d, e ≥ 0 (from the chase)."""

    d: Any            # (n,) real
    e: Any            # (n−1,) real
    phase_left: Any   # (n,) unit-modulus, of the band's dtype (±1 when real)
    phase_right: Any
    reflectors: Any   # ChaseReflectors, or None without record
    band: Any = None      # on a GPU, the chased band (n, 3b−1) and the chase's progress,
    progress: Any = None  # which say which rows are final while it runs (bulge_cuda.follow)


def _real_bidiagonal(d, e):
    """(|d|, |e|, φ, ψ) with the bidiagonal (d, e) = diag(φ)·B·diag(ψ)ᴴ, B = (|d|, |e|):
    ψ_0 = 1, φ_i = ψ_i·sign(d_i), ψ_{i+1} = φ_i·conj(sign(e_i))."""
    xp = array_namespace(d)
    steps = unit_phase(d[:-1]) * xp.conj(unit_phase(e))
    psi = xp.concatenate([xp.ones(min(d.shape[0], 1), d.dtype), xp.cumprod(steps)])
    return xp.abs(d), xp.abs(e), psi * unit_phase(d), psi


def band_to_bidiagonal(band, *, record=False):
    """Reduce an upper band matrix to real bidiagonal form by bulge chasing (module docstring).

    Parameters
    ----------
    band : (n, b + 1) NumPy or CuPy array, float32, float64, complex64 or complex128
        ``band[i, k]`` = A[i, i + k] (as :func:`gpusvd.condensed.band.band_of` gives it);
        entries past column n − 1 are ignored.  Not modified.  Chased where it lies
        (:data:`_TWINS`).
    record : bool
        Keep the reflectors (n²-sized per side) for a later back-transformation.

    Returns
    -------
    Bidiagonal
        A = (Q₂·D_L)·B·(P₂·D_R)ᴴ, with d, e of the real dtype, in the band's namespace.

    Examples
    --------
    >>> import numpy as np
    >>> band = np.random.default_rng(0).standard_normal((6, 3))
    >>> bd = band_to_bidiagonal(band)
    >>> dense = np.zeros((6, 6))
    >>> for k in range(3):
    ...     dense += np.diag(band[:6 - k, k], k)
    >>> b = np.diag(bd.d) + np.diag(bd.e, 1)
    >>> bool(np.allclose(np.linalg.svd(b)[1], np.linalg.svd(dense)[1]))
    True
    """
    xp = array_namespace(band)
    if not _SUPPORTS[xp.__name__](band.dtype):
        bd = band_to_bidiagonal(to_host(band), record=record)
        refl = bd.reflectors and ChaseReflectors(*map(xp.asarray, bd.reflectors[:4]),
                                                 bd.reflectors.bandwidth)
        return Bidiagonal(*map(xp.asarray, bd[:4]), refl)
    n, width = band.shape
    b = max(1, min(width - 1, n - 1))
    ab = xp.zeros((n, 3 * b - 1), band.dtype)
    for k in range(b + 1):
        ab[:n - k, b - 1 + k] = band[:n - k, k]
    steps = -(-(n - 1) // b) if record else 0
    sweeps = n - 1 if record else 0
    v_left = xp.zeros((sweeps, steps, b), band.dtype)
    tau_left = xp.zeros((sweeps, steps), band.dtype)
    v_right = xp.zeros_like(v_left)
    tau_right = xp.zeros_like(tau_left)
    progress = None
    if n > 2 and b > 1:
        progress = _TWINS[xp.__name__](ab, b, v_left, tau_left, v_right, tau_right, record)
    d, e = ab[:, b - 1], ab[:n - 1, b]
    d, e, phase_left, phase_right = _real_bidiagonal(d, e)
    reflectors = ChaseReflectors(v_left, tau_left, v_right, tau_right, b) if record else None
    return Bidiagonal(d, e, phase_left, phase_right, reflectors,
                      ab if progress is not None else None, progress)
