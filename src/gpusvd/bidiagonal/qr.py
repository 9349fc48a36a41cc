"""Implicitly shifted QR on an upper bidiagonal matrix, emitting its rotations.

This is the diagonalization step of Golub–Reinsch (paper 000, Section 3.2, Algorithm 3)
in the form of Demmel & Kahan, "Accurate singular values of bidiagonal matrices", SIAM
J. Sci. Stat. Comput. 11(5), 1990 — the algorithm of LAPACK's dbdsqr. Demmel & Kahan
make every singular value, however small, accurate to a few ulps *relative to itself*:

- the convergence tests use the recurrences mu_{j+1} = |d_{j+1}|·mu_j/(mu_j + |e_j|)
  (forward) and its mirror (backward), which estimate the smallest singular value of
  the leading (trailing) block, and set e_j to zero only if |e_j| <= tol·mu_j;
- where a shift would spoil relative accuracy, their implicit zero-shift QR sweep is
  used, which computes every entry to a few ulps without cancellation;
- the bulge is chased from the larger end of the block toward the smaller one, so
  that the converging entries are at the far end.

Paper 000 keeps the loop on the CPU and applies the rotations on the GPU (Alg. 4/5).
Here the loop is Numba and writes each sweep's rotations to a *rotation log* (see
:class:`BidiagonalQR`) that the CPU or CUDA kernel applies to X and Y, so that
Xᵀ·B·Y = diag(d) at the end. The arithmetic is float64 whatever the data's dtype; the
working precision's epsilon sets the tolerances, so float32 data stops earlier.
"""

import math

import numba
import numpy as np

from .._core import tunables
from .._core.errors import LinAlgError
from .two_by_two import _EPS64, _SAFMIN, plane_rotation, singular_values_2x2, svd_2x2

# tol = tolmul·eps with tolmul = max(10, min(100, eps^(-1/8))) (Demmel & Kahan, as in
# dbdsqr's TOLMUL): about 90 for float64, 10 for float32.
_TOLMUL_MIN, _TOLMUL_MAX, _TOLMUL_EXPONENT = 10.0, 100.0, -0.125
# Demmel & Kahan's zero-shift rule: shift 0 if n·tol·(sigma_min/sigma_max) <= max(eps, tol/100).
_HUNDREDTH = 0.01
# LAPACK dgesvd's smlnum and bignum: d and e are scaled by a power of two when their
# largest entry lies outside [_SMLNUM, _BIGNUM] (see BidiagonalQR.__init__).
_SMLNUM = math.sqrt(_SAFMIN) / _EPS64
_BIGNUM = 1.0 / _SMLNUM

# Status codes of _qr_loop.
_DONE, _BUFFER_FULL, _NOT_CONVERGED = 0, 1, 2


@numba.njit(cache=True)
def _absolute_threshold(d, e, tol, maxit):
    """Entries below this are set to zero: tol·(lower bound of sigma_min)/sqrt(n), but
    at least maxit·underflow so that the iteration cannot stall on denormals."""
    n = d.shape[0]
    smin = abs(d[0])
    mu = smin
    for i in range(1, n):
        if smin == 0.0:
            break
        mu = abs(d[i]) * (mu / (mu + abs(e[i - 1])))
        smin = min(smin, mu)
    return max(tol * (smin / math.sqrt(n)), maxit * _SAFMIN)


@numba.njit(cache=True)
def _relative_convergence(d, e, ll, m, idir, tol):
    """Demmel & Kahan's convergence tests on the block ll..m, in the chasing direction.

    Sets a negligible e_j to zero and returns (True, 0); otherwise returns (False,
    sigma_min estimate of the block) from the mu recurrence.
    """
    if idir == 1:
        if abs(e[m - 1]) <= tol * abs(d[m]):
            e[m - 1] = 0.0
            return True, 0.0
        mu = abs(d[ll])
        sminl = mu
        for j in range(ll, m):
            if abs(e[j]) <= tol * mu:
                e[j] = 0.0
                return True, 0.0
            mu = abs(d[j + 1]) * (mu / (mu + abs(e[j])))
            sminl = min(sminl, mu)
    else:
        if abs(e[ll]) <= tol * abs(d[ll]):
            e[ll] = 0.0
            return True, 0.0
        mu = abs(d[m])
        sminl = mu
        for j in range(m - 1, ll - 1, -1):
            if abs(e[j]) <= tol * mu:
                e[j] = 0.0
                return True, 0.0
            mu = abs(d[j]) * (mu / (mu + abs(e[j])))
            sminl = min(sminl, mu)
    return False, sminl


@numba.njit(cache=True)
def _shift(d, e, ll, m, idir, sminl, smax, n, tol, eps):
    """Wilkinson-like shift from the 2×2 at the far end, or 0 where Demmel & Kahan say
    a shift would cost relative accuracy (or is negligible anyway)."""
    if n * tol * (sminl / smax) <= max(eps, _HUNDREDTH * tol):
        return 0.0
    if idir == 1:
        sll = abs(d[ll])
        shift, _ = singular_values_2x2(d[m - 1], e[m - 1], d[m])
    else:
        sll = abs(d[m])
        shift, _ = singular_values_2x2(d[ll], e[ll], d[ll + 1])
    if sll > 0.0 and (shift / sll) ** 2 < eps:
        return 0.0
    return shift


@numba.njit(cache=True)
def _zero_shift_sweep(d, e, ll, m, idir, left, right):
    """Demmel & Kahan's implicit zero-shift QR sweep, chasing down (idir=1) or up."""
    cs, oldcs, oldsn = 1.0, 1.0, 0.0
    if idir == 1:
        for i in range(ll, m):
            cs, sn, r = plane_rotation(d[i] * cs, e[i])
            if i > ll:
                e[i - 1] = oldsn * r
            oldcs, oldsn, r = plane_rotation(oldcs * r, d[i + 1] * sn)
            d[i] = r
            right[i - ll, 0], right[i - ll, 1] = cs, sn
            left[i - ll, 0], left[i - ll, 1] = oldcs, oldsn
        h = d[m] * cs
        d[m], e[m - 1] = h * oldcs, h * oldsn
    else:
        # The same sweep on the flipped transpose: row and column rotations trade places,
        # and a rotation of (i, i-1) is the log's rotation of (i-1, i) with s negated.
        for i in range(m, ll, -1):
            cs, sn, r = plane_rotation(d[i] * cs, e[i - 1])
            if i < m:
                e[i] = oldsn * r
            oldcs, oldsn, r = plane_rotation(oldcs * r, d[i - 1] * sn)
            d[i] = r
            left[i - 1 - ll, 0], left[i - 1 - ll, 1] = cs, -sn
            right[i - 1 - ll, 0], right[i - 1 - ll, 1] = oldcs, -oldsn
        h = d[ll] * cs
        d[ll], e[ll] = h * oldcs, h * oldsn


@numba.njit(cache=True)
def _shifted_sweep(d, e, ll, m, idir, shift, left, right):
    """Implicitly shifted QR sweep (Golub & Kahan; paper 000 Alg. 3 step 37), chasing
    the bulge down (idir=1) or up the block ll..m."""
    if idir == 1:
        f = (abs(d[ll]) - shift) * (math.copysign(1.0, d[ll]) + shift / d[ll])
        g = e[ll]
        for i in range(ll, m):
            cr, sr, r = plane_rotation(f, g)  # columns i, i+1: zero the bulge right of e[i-1]
            if i > ll:
                e[i - 1] = r
            f = cr * d[i] + sr * e[i]
            e[i] = cr * e[i] - sr * d[i]
            g = sr * d[i + 1]
            d[i + 1] = cr * d[i + 1]
            cl, sl, r = plane_rotation(f, g)  # rows i, i+1: zero the bulge below d[i]
            d[i] = r
            f = cl * e[i] + sl * d[i + 1]
            d[i + 1] = cl * d[i + 1] - sl * e[i]
            if i < m - 1:
                g = sl * e[i + 1]
                e[i + 1] = cl * e[i + 1]
            right[i - ll, 0], right[i - ll, 1] = cr, sr
            left[i - ll, 0], left[i - ll, 1] = cl, sl
        e[m - 1] = f
    else:
        f = (abs(d[m]) - shift) * (math.copysign(1.0, d[m]) + shift / d[m])
        g = e[m - 1]
        for i in range(m, ll, -1):
            cr, sr, r = plane_rotation(f, g)  # rows i-1, i: zero the bulge above e[i]
            if i < m:
                e[i] = r
            f = cr * d[i] + sr * e[i - 1]
            e[i - 1] = cr * e[i - 1] - sr * d[i]
            g = sr * d[i - 1]
            d[i - 1] = cr * d[i - 1]
            cl, sl, r = plane_rotation(f, g)  # columns i-1, i: zero the bulge left of d[i]
            d[i] = r
            f = cl * e[i - 1] + sl * d[i - 1]
            d[i - 1] = cl * d[i - 1] - sl * e[i - 1]
            if i > ll + 1:
                g = sl * e[i - 2]
                e[i - 2] = cl * e[i - 2]
            left[i - 1 - ll, 0], left[i - 1 - ll, 1] = cr, -sr
            right[i - 1 - ll, 0], right[i - 1 - ll, 1] = cl, -sl
        e[ll] = f


@numba.njit(cache=True)
def _qr_loop(d, e, state, tol, thresh, eps, sweeps, cs_left, cs_right, record):
    """Paper 000 Alg. 3 with Demmel & Kahan's tests; resumable through ``state``.

    state = [m, oldll, oldm, idir, iterations, maxit]: m is the last row of the part
    not yet converged, (oldll, oldm) the block of the previous sweep, idir its chasing
    direction (1 down, -1 up). Returns (sweeps written, rows written, status).
    """
    n = d.shape[0]
    m, oldll, oldm, idir, it, maxit = state[0], state[1], state[2], state[3], state[4], state[5]
    scratch_left = np.empty((max(n - 1, 0), 2))
    scratch_right = np.empty((max(n - 1, 0), 2))
    nsw, nrows = 0, 0
    while True:
        if m <= 0:
            status = _DONE
            break
        if it > maxit:
            status = _NOT_CONVERGED
            break
        # The next sweep has at most m rotations.
        if record and (nsw == sweeps.shape[0] or cs_left.shape[0] - nrows < m):
            status = _BUFFER_FULL
            break
        # Split: find the bottom unreduced block ll..m (Alg. 3 steps 12-25).
        smax = abs(d[m])
        ll = -1
        for j in range(m - 1, -1, -1):
            if abs(e[j]) <= thresh:
                ll = j
                break
            smax = max(smax, abs(d[j]), abs(e[j]))
        if ll >= 0:
            e[ll] = 0.0
            if ll == m - 1:
                m -= 1
                continue
        ll += 1
        count = m - ll
        if record:
            left, right = cs_left[nrows:nrows + count], cs_right[nrows:nrows + count]
        else:
            left, right = scratch_left[:count], scratch_right[:count]
        direction = 1
        if count == 1:
            # 2×2 block: its SVD directly, a sweep of one rotation (Alg. 3 steps 27-31).
            smin, smx, sr, cr, sl, cl = svd_2x2(d[m - 1], e[m - 1], d[m])
            d[m - 1], e[m - 1], d[m] = smx, 0.0, smin
            left[0, 0], left[0, 1] = cl, sl
            right[0, 0], right[0, 1] = cr, sr
            m -= 2
        else:
            if ll > oldm or m < oldll:
                # A new block: chase from the larger end toward the smaller (Alg. 3 step 33).
                idir = 1 if abs(d[ll]) >= abs(d[m]) else -1
            converged, sminl = _relative_convergence(d, e, ll, m, idir, tol)
            if converged:
                continue
            oldll, oldm = ll, m
            shift = _shift(d, e, ll, m, idir, sminl, smax, n, tol, eps)
            it += count
            if shift == 0.0:
                _zero_shift_sweep(d, e, ll, m, idir, left, right)
            else:
                _shifted_sweep(d, e, ll, m, idir, shift, left, right)
            end = m - 1 if idir == 1 else ll
            if abs(e[end]) <= thresh:
                e[end] = 0.0
            direction = idir
        if record:
            sweeps[nsw, 0], sweeps[nsw, 1], sweeps[nsw, 2] = ll, count, direction
            nsw += 1
            nrows += count
    state[0], state[1], state[2], state[3], state[4] = m, oldll, oldm, idir, it
    return nsw, nrows, status


class BidiagonalQR:
    """The bidiagonal QR iteration as a resumable object that writes a rotation log.

    The log, chunk by chunk: ``sweeps`` int64 (k, 3) rows (lo, count, direction);
    sweep t rotates the column pairs (lo+j, lo+j+1), j = 0..count-1, in increasing j
    for direction +1 and decreasing j for -1. ``cs_left`` and ``cs_right`` float64
    (rows, 2) hold (c, s) of sweep t's pair j at row off_t + j (off_t: the counts of the
    earlier sweeps, in the chunk). A rotation (c, s) of columns a, b does
    a <- c·a + s·b, b <- -s·a + c·b. Applied to X = I (left) and Y = I (right) they give
    Xᵀ·B·Y = diag(d). A 2×2 block is a sweep of count 1.

    Parameters
    ----------
    d, e : array_like
        Diagonal (n,) and superdiagonal (n-1,) of an upper bidiagonal B; copied.
    eps : float
        Epsilon of the working precision; every tolerance derives from it.
    compute_rotations : bool
        Whether :meth:`run` writes the log; without it the values come out bitwise the same.
    """

    def __init__(self, d, e, *, eps, compute_rotations=True):
        self._d = np.array(d, dtype=np.float64).reshape(-1)
        self._e = np.array(e, dtype=np.float64).reshape(-1)
        n = self._d.shape[0]
        if self._e.shape[0] != max(n - 1, 0):
            raise ValueError(f"e must have n-1 = {max(n - 1, 0)} entries, got {self._e.shape[0]}")
        if not (np.isfinite(self._d).all() and np.isfinite(self._e).all()):
            raise LinAlgError("the bidiagonal holds NaN or infinity: the input was not finite "
                              "(check_finite=True rejects such input up front)")
        eps = float(eps)
        if not 0.0 < eps < 1.0:
            raise ValueError(f"eps must lie in (0, 1), got {eps}")
        # Scale extreme matrices by a power of two (exact) so that the largest entry lies
        # in [0.5, 1): the threshold's floor 6·n²·underflow then costs no accuracy on tiny
        # ones, and mu + |e| cannot overflow on huge ones (dbdsqr leaves this to dgesvd).
        amax = max(np.abs(self._d).max(initial=0.0), np.abs(self._e).max(initial=0.0))
        self._exponent = 0 if amax == 0.0 or _SMLNUM <= amax <= _BIGNUM else int(np.frexp(amax)[1])
        self._d = np.ldexp(self._d, -self._exponent)
        self._e = np.ldexp(self._e, -self._exponent)
        self._eps = eps
        self._tol = max(_TOLMUL_MIN, min(_TOLMUL_MAX, eps ** _TOLMUL_EXPONENT)) * eps
        self._maxit_factor = tunables.get().bidiagonal_qr_max_iteration_factor
        maxit = self._maxit_factor * n * n
        self._thresh = _absolute_threshold(self._d, self._e, self._tol, maxit) if n else 0.0
        self._state = np.array([n - 1, -1, -1, 1, 0, maxit], dtype=np.int64)
        self._record = bool(compute_rotations)

    @property
    def done(self):
        """Whether every singular value has converged."""
        return self._state[0] <= 0

    def run(self, sweeps, cs_left, cs_right):
        """Continue the iteration, writing the next chunk of the log into the buffers.

        Stops when done, when ``sweeps`` is full, or before a sweep that might not fit
        in the rotation rows left (buffers of n-1 rows always make progress).

        Returns
        -------
        (int, int)
            Sweeps and rotation rows written (0, 0 without ``compute_rotations``, which
            ignores the buffers and runs to the end).

        Raises
        ------
        gpusvd.LinAlgError
            If the iteration takes more than 6·n² inner steps (the factor is the
            tunable ``bidiagonal_qr_max_iteration_factor``).
        """
        n = self._d.shape[0]
        if self._record:
            if not (sweeps.dtype == np.int64 and sweeps.ndim == 2 and sweeps.shape[1] == 3
                    and all(c.dtype == np.float64 and c.ndim == 2 and c.shape[1] == 2
                            for c in (cs_left, cs_right))):
                raise ValueError("sweeps must be int64 (K, 3), cs_left and cs_right float64 (R, 2)")
            if not self.done and (sweeps.shape[0] < 1 or min(len(cs_left), len(cs_right)) < n - 1):
                raise ValueError(f"the buffers must hold at least 1 sweep and n-1 = {n - 1} rotations")
        else:
            sweeps, cs_left, cs_right = np.empty((0, 3), np.int64), np.empty((0, 2)), np.empty((0, 2))
        if self.done:
            return 0, 0
        nsw, nrows, status = _qr_loop(self._d, self._e, self._state, self._tol, self._thresh,
                                      self._eps, sweeps, cs_left, cs_right, self._record)
        if status == _NOT_CONVERGED:
            m = int(self._state[0])
            raise LinAlgError(
                f"bidiagonal QR did not converge in {self._state[5]} inner steps "
                f"({self._maxit_factor}·n², n = {n}): "
                f"{n - 1 - m} of {n} singular values converged, "
                f"{np.count_nonzero(self._e[:m])} superdiagonal entries still nonzero")
        return int(nsw), int(nrows)

    def singular_values(self):
        """(s, perm, flip): s = |d| descending, s = |d|[perm] (stable), flip = d < 0."""
        if not self.done:
            raise RuntimeError("the bidiagonal QR has not finished: call run() until done")
        absd = np.ldexp(np.abs(self._d), self._exponent)
        perm = np.argsort(-absd, kind="stable")
        return absd[perm], perm, self._d < 0


def bidiagonal_svd(d, e, *, eps=np.finfo(float).eps, compute_rotations=True):
    """SVD of the upper bidiagonal B with diagonal d and superdiagonal e: B = X·diag(s)·Yᵀ.

    The rotation log is applied chunk by chunk to X = I and Y = I with the CPU kernel
    :func:`gpusvd.bidiagonal.rotations.apply_rotations`.

    Returns
    -------
    s : ndarray
        Singular values, float64, descending.
    x, y : ndarray or None
        Orthogonal n×n float64 matrices (None without ``compute_rotations``).

    Examples
    --------
    >>> import numpy as np
    >>> s, x, y = bidiagonal_svd([3.0, 1.0], [4.0])
    >>> np.round(s, 6)
    array([5.064495, 0.592359])
    >>> b = np.array([[3.0, 4.0], [0.0, 1.0]])
    >>> bool(np.allclose(x.T @ b @ y, np.diag(s)))
    True
    """
    from .rotations import apply_rotations

    qr = BidiagonalQR(d, e, eps=eps, compute_rotations=compute_rotations)
    n = np.size(d)
    if not compute_rotations:
        qr.run(None, None, None)
        return qr.singular_values()[0], None, None
    capacity = tunables.get().qr_chunk_sweeps
    sweeps = np.empty((capacity, 3), np.int64)
    cs_left = np.empty((capacity * max(n - 1, 1), 2))
    cs_right = np.empty_like(cs_left)
    x, y = np.eye(n), np.eye(n)
    while not qr.done:
        k, r = qr.run(sweeps, cs_left, cs_right)
        apply_rotations(x, sweeps[:k], cs_left[:r])
        apply_rotations(y, sweeps[:k], cs_right[:r])
    s, perm, flip = qr.singular_values()
    y[:, flip] *= -1.0
    return s, x[:, perm], y[:, perm]
