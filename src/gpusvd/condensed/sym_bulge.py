"""Stage 2 of the two-stage Hermitian eigenvalue reduction: Hermitian band (bandwidth b) →
real symmetric tridiagonal, by bulge chasing.

The symmetric counterpart of bulge.py: Lang's SBR (Parallel Comput. 22 (1996) 1–18) in the
task form of LAPACK's dsytrd_sb2st / zhetrd_hb2st and their kernels dsb2st_kernels,
zhb2st_kernels (Haidar, Ltaief & Dongarra, "Parallel reduction to condensed forms for
symmetric eigenvalue problems using aggregated fine-grained and memory-aware kernels",
SC'11).  Only the lower triangle is stored and touched.  Sweep s
(s = 0 … n−3) chases column s with reflectors H = I − τ·v·vᴴ of length at most b, acting
on the index blocks [s+1+k·b, min(s+(k+1)·b, n−1)], k = 0, 1, …; each H acts as A ← Hᴴ·A·H:

- type 1 (k = 0): H zeroes column s below its subdiagonal and is applied two-sided to
  the diagonal block (a Hermitian rank-2 update, LAPACK's dlarfy/zlarfy);
- type 2: H is applied from the right to the b rows below the diagonal block, which
  fills them beyond the band (the bulge); a new reflector zeroes the bulge's first column
  below its first entry and is applied from the left to the bulge's other columns;
- type 3: that reflector is applied two-sided to the next diagonal block, and type 2
  follows again, down to the end of the band.

As in bulge.py only the bulge's first column is annihilated; the rest of it is annihilated
by the following sweeps, whose blocks are shifted by one.  So the fill reaches the
(2b−1)-th subdiagonal, and the working band stores 2b diagonals, column j of A in
``ab[j]`` with ``ab[j, k] = A[j + k, j]`` (LAPACK's lower band storage; dsytrd_sb2st's
work copy has 2b+1 rows for the same purpose): O(n·b) memory, and every update runs down contiguous
columns.  Each reflector is applied to exactly the entries of its window that can be
nonzero (tests/condensed/naive_symmetric_chase.py applies every one to whole rows and
columns instead).

Flops ≈ 6·n²·b: per block step a Hermitian rank-2 update of a b×b block (≈ 4b²: A·v on
the whole block, the update on its stored triangle) and two one-sided applications to a
b×b block (≈ 8b²), n²/(2b) block steps; three quarters of bulge.py's ≈ 8·n²·b, since
symmetry spares the row reflectors.  The same memory-bound loops, the reason b is kept small.

Complex bands are chased in complex arithmetic with zlarfg's reflectors (real β, shared
with bulge.py: :func:`bulge._reflector`, with dlarfg's rescaling of subnormal columns); the
diagonal stays real and the tridiagonal is made real with e ≥ 0 at the end by a diagonal
unitary, T_chased = D·T·Dᴴ (``phase``, ±1 for real bands), as bulge.py's phases.  The
imaginary parts of the band's diagonal are ignored (taken as zero), as in LAPACK.

The chase has two twins, one sequential Numba loop on the CPU (``_chase``) and a CUDA
kernel that runs many sweeps at once on the GPU (sym_bulge_cuda.py, real bands, the same
operations in the same order, bulge.py's scheme); :data:`_TWINS` picks one by the band's
array namespace.  Sweep s's reflectors are recorded (``record=True``) as ``v[s, k]``,
``tau[s, k]``, block k of sweep s starting at index s+1+k·b, so that
:func:`apply_chase_q` (and later a blocked back-transformation) can apply Q,
A = Q·T_chased·Qᴴ.
"""

from typing import Any, NamedTuple

import numba
import numpy as np

from .._core import tunables
from .._core.backend import array_namespace, to_host
from . import sym_bulge_cuda
from .bulge import _reflector as reflector
from .bulge import _sign as sign

_DTYPES = (np.float32, np.float64, np.complex64, np.complex128)


@numba.njit(cache=True)
def _column_reflector(ab, c, r0, ln, v):
    """Zero A(r0+1:r0+ln, c) with a left reflector (vector into v[:ln]); returns tau."""
    base = r0 - c
    for i in range(ln):
        v[i] = ab[c, base + i]
    beta, tau = reflector(v[:ln])
    ab[c, base] = beta
    for i in range(1, ln):
        ab[c, base + i] = 0.0
    return tau


@numba.njit(cache=True)
def _hermitian_update(ab, st, ln, v, tau, w):
    """A(st:st+ln, st:st+ln) ← Hᴴ·A·H on its lower triangle, as zlarfy:
    w = tau·A·v − ½·|tau|²·(vᴴ·A·v)·v, A ← A − v·wᴴ − w·vᴴ."""
    for i in range(ln):
        w[i] = 0.0
    for j in range(ln):  # w = A·v from the lower triangle, column j at a time
        col = st + j
        vj = v[j]
        acc = ab[col, 0].real * vj
        for i in range(j + 1, ln):
            a = ab[col, i - j]
            w[i] += a * vj
            acc += np.conj(a) * v[i]
        w[j] += acc
    vav = 0.0
    for i in range(ln):
        vav += (np.conj(v[i]) * w[i]).real
    alpha = -0.5 * abs(tau) ** 2 * vav
    for i in range(ln):
        w[i] = tau * w[i] + alpha * v[i]
    for j in range(ln):
        col = st + j
        cvj = np.conj(v[j])
        cwj = np.conj(w[j])
        for i in range(j, ln):
            ab[col, i - j] -= v[i] * cwj + w[i] * cvj


@numba.njit(cache=True)
def _apply_right(ab, r0, rows, c0, ln, v, tau, w):
    """A(r0:r0+rows, c0:c0+ln) ← A·(I − tau·v·vᴴ), a column at a time (rows r0: > c0+ln−1)."""
    for i in range(rows):
        w[i] = 0.0
    for t in range(ln):
        base = r0 - c0 - t
        vt = v[t]
        for i in range(rows):
            w[i] += ab[c0 + t, base + i] * vt
    for t in range(ln):
        base = r0 - c0 - t
        f = tau * np.conj(v[t])
        for i in range(rows):
            ab[c0 + t, base + i] -= w[i] * f


@numba.njit(cache=True)
def _apply_left(ab, r0, ln, c0, c1, v, tau):
    """A(r0:r0+ln, c0:c1) ← (I − tau·v·vᴴ)ᴴ·A, column by column (rows r0: > c1−1)."""
    ctau = np.conj(tau)
    for c in range(c0, c1):
        base = r0 - c
        acc = np.conj(v[0]) * ab[c, base]
        for i in range(1, ln):
            acc += np.conj(v[i]) * ab[c, base + i]
        acc *= ctau
        for i in range(ln):
            ab[c, base + i] -= acc * v[i]


@numba.njit(cache=True)
def _chase(ab, b, v_rec, tau_rec, record):
    """All sweeps of the module docstring on ``ab`` (n, 2b), in place."""
    n = ab.shape[0]
    v = np.zeros(b, ab.dtype)
    u = np.zeros(b, ab.dtype)
    w = np.zeros(b, ab.dtype)
    for s in range(n - 2):  # sweep n−2 has a column of one entry below the diagonal
        st = s + 1
        ed = min(s + b, n - 1)
        ln = ed - st + 1
        tau = _column_reflector(ab, s, st, ln, v)  # type 1
        k = 0
        while True:
            if record:
                v_rec[s, k, :ln] = v[:ln]
                tau_rec[s, k] = tau
            _hermitian_update(ab, st, ln, v, tau, w)  # types 1 and 3
            j1 = ed + 1
            j2 = min(ed + b, n - 1)
            if j1 > j2:  # the block reached the end: the sweep is done
                break
            rows = j2 - j1 + 1
            _apply_right(ab, j1, rows, st, ln, v, tau, w)  # type 2: the bulge
            if rows == 1:  # one row of bulge is still inside the band
                break
            tau = _column_reflector(ab, st, j1, rows, u)
            _apply_left(ab, j1, rows, st + 1, ed + 1, u, tau)
            v, u = u, v
            st, ed, ln = j1, j2, rows
            k += 1


# The chase by the band's array namespace: the Numba loop on NumPy, the CUDA kernel on
# CuPy (real bands; a complex band on CuPy, or any with the tunable chase_on_gpu off, is
# chased by the Numba loop on a host copy).
_TWINS = {"numpy": _chase, "cupy": sym_bulge_cuda.chase}
_SUPPORTS = {"numpy": lambda dtype: True,
             "cupy": lambda dtype: tunables.get().chase_on_gpu
             and sym_bulge_cuda.supports(dtype)}


@numba.njit(cache=True)
def _apply_reflectors(v, tau, b, c):
    """c ← Q·c, Q the product of the recorded reflectors in the order (s, k): the last first."""
    n, m = c.shape
    w = np.zeros(m, c.dtype)
    for s in range(v.shape[0] - 1, -1, -1):
        for k in range(v.shape[1] - 1, -1, -1):
            t = tau[s, k]
            if t == 0:
                continue
            start = s + 1 + k * b
            ln = min(b, n - start)
            for j in range(m):
                w[j] = 0.0
            for i in range(ln):
                cv = np.conj(v[s, k, i])
                for j in range(m):
                    w[j] += cv * c[start + i, j]
            for i in range(ln):
                f = t * v[s, k, i]
                for j in range(m):
                    c[start + i, j] -= f * w[j]


class ChaseReflectors(NamedTuple):
    """Stage 2's reflectors (``record=True``): block k of sweep s is H = I − tau·v·vᴴ on
    the indices from s+1+k·b, length min(b, n − s − 1 − k·b); a zero tau is H = I.
    Q = product of the H in the order (s, k), A = Q·T_chased·Qᴴ."""

    v: Any    # (n−2, ceil((n−2)/b), b)
    tau: Any  # (n−2, ceil((n−2)/b))
    bandwidth: int


class Tridiagonal(NamedTuple):
    """The band as (Q·D)·T·(Q·D)ᴴ, T real symmetric tridiagonal with e ≥ 0."""

    d: Any            # (n,) real: T's diagonal
    e: Any            # (n−1,) real, ≥ 0: T's off-diagonal
    phase: Any        # (n,) unit-modulus diagonal of D, of the band's dtype (±1 when real)
    reflectors: Any   # ChaseReflectors, or None without record


def _check_band(band):
    if band.ndim != 2 or band.shape[1] < 1:
        raise ValueError(f"band must be 2-D of shape (n, b + 1) with b >= 0, got shape "
                         f"{band.shape}")
    if band.dtype.type not in _DTYPES:
        raise ValueError(f"band must be float32, float64, complex64 or complex128, got "
                         f"{band.dtype}")


def band_to_tridiagonal(band, *, record=False):
    """Reduce a Hermitian band matrix to real symmetric tridiagonal form by bulge chasing
    (module docstring).

    Parameters
    ----------
    band : (n, b + 1) NumPy or CuPy array, float32, float64, complex64 or complex128
        The lower band in LAPACK's lower band storage, ``band[i, k]`` = A[i + k, i]; the
        diagonal's imaginary parts and entries past row n − 1 are ignored.  Not modified.
        Chased where it lies (:data:`_TWINS`).
    record : bool
        Keep the reflectors (n²-sized) for :func:`apply_chase_q`.

    Returns
    -------
    Tridiagonal
        d, e of the band's real dtype; A = (Q·D)·T·(Q·D)ᴴ with D = diag(phase); every
        array in the band's namespace.

    Raises
    ------
    ValueError
        If ``band`` is not 2-D with at least one column, or of another dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.linalg import eigvalsh, eigvalsh_tridiagonal
    >>> band = np.random.default_rng(0).standard_normal((6, 3))
    >>> dense = np.diag(band[:, 0])
    >>> for k in (1, 2):
    ...     dense += np.diag(band[:6 - k, k], -k) + np.diag(band[:6 - k, k], k)
    >>> t = band_to_tridiagonal(band)
    >>> bool(np.allclose(eigvalsh_tridiagonal(t.d, t.e), eigvalsh(dense)))
    True
    """
    xp = array_namespace(band)
    band = xp.asarray(band)
    _check_band(band)
    if not _SUPPORTS[xp.__name__](band.dtype):
        tri = band_to_tridiagonal(to_host(band), record=record)
        refl = tri.reflectors and ChaseReflectors(*map(xp.asarray, tri.reflectors[:2]),
                                                  tri.reflectors.bandwidth)
        return Tridiagonal(*map(xp.asarray, tri[:3]), refl)
    n, width = band.shape
    b = max(0, min(width - 1, n - 1))
    ab = xp.zeros((n, max(2 * b, 2)), band.dtype)
    ab[:, 0] = band[:, 0].real
    for k in range(1, b + 1):
        ab[:n - k, k] = band[:n - k, k]
    sweeps = n - 2 if record and n > 2 else 0
    v = xp.zeros((sweeps, -(-sweeps // max(b, 1)), max(b, 1)), band.dtype)
    tau = xp.zeros(v.shape[:2], band.dtype)
    if n > 2 and b > 1:
        _TWINS[xp.__name__](ab, b, v, tau, record)
    real = band.real.dtype
    e = ab[:n - 1, 1]
    phase = xp.concatenate([xp.ones(min(n, 1), band.dtype), xp.cumprod(sign(e))])
    reflectors = ChaseReflectors(v, tau, max(b, 1)) if record else None
    return Tridiagonal(ab[:, 0].real.astype(real), xp.abs(e).astype(real), phase, reflectors)


def apply_chase_q(refl, c):
    """Q·c for the reflectors recorded by :func:`band_to_tridiagonal` (``record=True``).

    Parameters
    ----------
    refl : ChaseReflectors
        ``band_to_tridiagonal(band, record=True).reflectors`` of a NumPy band.  NumPy
        only: a CuPy band's reflectors are CuPy arrays, applied on the device by
        :func:`gpusvd.condensed.chase_back.apply_sym_q` (blocked, xp-generic) or here
        after a copy to the host (``ChaseReflectors(v.get(), tau.get(), bandwidth)``).
    c : (n,) or (n, k) NumPy array
        Not modified.

    Returns
    -------
    ndarray
        Q·c, of the shape of ``c`` and the common dtype of the reflectors and ``c``.

    Examples
    --------
    >>> import numpy as np
    >>> band = np.random.default_rng(1).standard_normal((8, 3))
    >>> t = band_to_tridiagonal(band, record=True)
    >>> q = apply_chase_q(t.reflectors, np.eye(8)) * t.phase
    >>> tri = np.diag(t.d) + np.diag(t.e, 1) + np.diag(t.e, -1)
    >>> dense = np.diag(band[:, 0])
    >>> for k in (1, 2):
    ...     dense += np.diag(band[:8 - k, k], -k) + np.diag(band[:8 - k, k], k)
    >>> bool(np.allclose(q @ tri @ q.T, dense))
    True
    """
    c = np.asarray(c)
    if c.ndim not in (1, 2):
        raise ValueError(f"c must be 1-D or 2-D, got shape {c.shape}")
    out = np.array(c if c.ndim == 2 else c[:, None], dtype=np.result_type(refl.v, c), order="C")
    if refl.v.size:
        _apply_reflectors(refl.v, refl.tau, refl.bandwidth, out)
    return out if c.ndim == 2 else out[:, 0]
