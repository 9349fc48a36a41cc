"""Singular values of a bidiagonal by bisection on its Golub–Kahan tridiagonal.

The parallel values solver of the two-stage SVD: every singular value is found on its
own, so the work is spread over values (a group of GPU lanes each, Numba's ``prange`` on the
CPU), where dqds (dqds.py) is one sequential chain.

The upper bidiagonal B (diagonal d, superdiagonal e) of order n is the 2n×2n
Golub–Kahan tridiagonal T_GK with zero diagonal and off-diagonal
t = (d₁, e₁, d₂, e₂, …, dₙ), whose eigenvalues are ±σᵢ (Golub & Kahan 1965; LAPACK's
dbdsvdx takes this route). The negative pivots of the LDLᵀ factorization of T_GK − x·I,

    q₁ = −x,   q_{k+1} = −x − t_k·(t_k/q_k)                (Sturm count, dstebz/dlaneg)

count its eigenvalues below x (Sylvester's inertia), the n values −σᵢ among them, so
#{σᵢ < x} = #{q_k < 0} − n for x > 0 (:func:`count_below`). Bisection on that count
finds each σ to a relative tolerance.

Relative accuracy (Demmel & Kahan, "Accurate singular values of bidiagonal matrices",
SIAM J. Sci. Stat. Comput. 11 (1990), §5 and Thm 2; Fernando, "Accurately counting
singular values of bidiagonal matrices", SIAM J. Matrix Anal. Appl. 20 (1998)): with
rounding, q̂_{k+1} = (−x − t_k²(1+α)(1+β)/q̂_k)(1+γ); dividing q̂_k by its (1+γ_k) shows
the computed signs are the exact ones of T_GK with each t_k multiplied by a factor
within 1 ± 1.5ε. Because the diagonal of T_GK is zero, that is a relative perturbation
of B's entries, which moves every σ by a factor within (1 ± 1.5ε)^(2n−1) (Demmel &
Kahan, Thm 2). Bisection stops when hi − lo ≤ 2ε·hi and returns the midpoint, so

    |σ̂ − σ| ≤ ((2n − 1)·1.5 + 1)·ε·σ ≤ 4·n·ε·σ        (the bound the tests check)

for every σ above the floor below. Departures from dstebz, and why:

- t_k·(t_k/q_k) instead of t_k²/q_k: the square of an entry below √(underflow) (1e-154
  in float64, 1e-19 in float32) underflows, and a graded B with values down to 1e-300
  has such entries; the quotient first keeps every intermediate in range. Same
  rounding analysis (two roundings per step).
- B is scaled by a power of two (exact) so that max|t| lies in [1/2, 1). dstebz then
  replaces every pivot with |q| < pivmin by −pivmin; near convergence the last pivot is
  about x − σ, so for σ < pivmin/ε that flips its sign (float64, σ = 9e-301·max|t|:
  relative error 1.2e-8, measured). Here only an exact zero pivot becomes −pivmin (pivmin
  the smallest normal number: t/q < Ω/2, no overflow; on a zero diagonal a pivot
  moved by pivmin is a relative perturbation of t as above, of pivmin/x); a tiny pivot
  keeps its sign, and an overflowing t/q gives q = ±∞, after which the next pivot is −x,
  as IEEE arithmetic allows (Demmel, Dhillon & Ren, "On the correctness of some
  bisection-like parallel eigenvalue algorithms in floating point arithmetic", ETNA 3,
  1995; dlaneg relies on it too). Such an overflow drops a term below 1/Ω (Ω the
  overflow threshold) from one pivot: the bound holds for σ ≥ max|t|/(Ω·ε) (2.5e-293 in
  float64, 2.5e-32 in float32) and in practice (where no pivot before the last is that
  tiny; the case table's values reach 1.7e-306) down to the floor: values below the smallest normal number times
  max|t| (2e-308 in float64, 1e-38 in float32) are returned as 0.
- The midpoint is geometric, √lo·√hi, while hi > 2·lo, so a value near the floor takes
  log₂(log₂(top/floor)) ≈ 10 steps to reach, not 1000; then arithmetic (lo + hi)/2.
- Every value is bisected from the same interval [floor, top] by the same rule, so two
  indices follow the same midpoints until their counts separate them, and the results
  come out ordered (σ̂ᵢ ≥ σ̂ⱼ for i < j in the descending output) without a sort, and the
  same on every device whose division and square root round correctly.

The CUDA twin is ``kernels/bisection.cu`` (a group of lanes per value, which counts at
the next steps' points at once and takes the same steps), launched by
:mod:`.bisection_cuda`; both do the same IEEE operations in the same order (products
written ``__dmul_rn`` there so that nvcc does not fuse them into an fma), so they give the
same bits. :data:`_TWINS` maps the array namespace to its twin.
"""

import math
from typing import NamedTuple

import numba
import numpy as np

from .._core import tunables
from .._core.backend import array_namespace
from .._core.errors import LinAlgError
from .._core.scaling import largest_entries, scale_values, times_power_of_two

# The top of every bisection, for max|t| < 1 (after scaling): σ_max(B) is at most the
# Gershgorin bound of T_GK, max(t_{k−1} + t_k) < 2, and the counts see a B̃ whose values
# are at most (1 + 1.5ε)^(2n−1) times larger; 4 bounds both for any n below 1/(6ε).
_TOP = 4.0


class Bounds(NamedTuple):
    """The constants of one bisection, scalars of the working dtype (except max_steps)."""
    floor: object      # values below it (relative to max|t| in [1/2, 1)) are 0
    pivmin: object     # an exact zero pivot becomes −pivmin (dstebz's PIVMIN)
    top: object        # above every value: _TOP
    two_eps: object    # the stopping tolerance hi − lo ≤ 2ε·hi
    max_steps: int     # the hard limit of bisection steps per value (max_bisection_steps)


def max_bisection_steps(dtype):
    """The hard limit on bisection steps (counts after the floor's) per value.

    Geometric steps while hi > 2·lo halve log₂(hi/lo), from log₂(top/floor) (1024 in
    float64, 128 in float32) to 1: ⌈log₂ log₂(top/floor)⌉ steps. Then arithmetic steps
    halve hi − lo ≤ lo ≤ hi down to 2ε·hi: ⌈log₂(1/(2ε))⌉ + 1. Two more cover the
    rounding of the square root. A finite B never reaches the limit; it stops NaN
    input (which the callers reject first) from looping.

    Examples
    --------
    >>> max_bisection_steps(np.float64), max_bisection_steps(np.float32)
    (64, 32)
    """
    finfo = np.finfo(dtype)
    geometric = math.ceil(math.log2(math.log2(_TOP) - math.log2(finfo.smallest_normal)))
    arithmetic = math.ceil(math.log2(1.0 / (2.0 * float(finfo.eps)))) + 1
    return geometric + arithmetic + 2


def bounds(dtype):
    """The :class:`Bounds` of a bisection in ``dtype`` (float32 or float64)."""
    finfo = np.finfo(dtype)
    real = finfo.dtype.type
    return Bounds(real(finfo.smallest_normal), real(finfo.smallest_normal), real(_TOP),
                  real(2 * finfo.eps), max_bisection_steps(dtype))


@numba.njit(cache=True)
def count_below(t, x, pivmin, counts):
    """#{σᵢ < xₗ} for each shift xₗ > 0 (the reference formula; module docstring).

    ``t`` is T_GK's off-diagonal (2n − 1 entries, |entries|), ``x`` and ``counts`` arrays
    of the same length: the shifts are carried through the recurrence together, so that
    their independent chains of divisions overlap in the CPU's pipeline.
    """
    m = x.shape[0]
    q = np.empty_like(x)
    for l in range(m):
        q[l] = -x[l]  # x >= floor > 0: never 0
        counts[l] = 1
    for k in range(t.shape[0]):
        tk = t[k]
        for l in range(m):
            ql = -x[l] - tk * (tk / q[l])
            if ql == 0:
                ql = -pivmin
            q[l] = ql
            if ql < 0:
                counts[l] += 1
    n = (t.shape[0] + 1) // 2
    for l in range(m):
        counts[l] -= n


@numba.njit(cache=True)
def _midpoint(lo, hi, half):
    """The bisection's next point in [lo, hi]: geometric while hi > 2·lo, then arithmetic."""
    if hi > lo + lo:
        return np.sqrt(lo) * np.sqrt(hi)
    return (lo + hi) * half


@numba.njit(cache=True)
def _bisect_group(t, rank, below, above, floor, pivmin, top, two_eps, half, max_steps, out):
    """out[l] = the value of rank rank[l] by bisection from [floor, top], the values of a
    group advancing together, one pass of :func:`count_below` per step serving them all.
    A step whose midpoint lies outside [below[l], above[l]] is taken without a count; the
    floor is counted first where below[l] ≤ floor. Returns a mask of the values whose
    final interval has an end that no count set and whose count there disagrees (those
    values are not written)."""
    m = rank.shape[0]
    lo, hi = np.full(m, floor), np.full(m, top)
    steps = np.zeros(m, np.int64)
    lo_counted, hi_counted = np.empty(m, np.bool_), np.ones(m, np.bool_)
    x = np.full(m, floor)
    counts = np.empty(m, np.int64)
    active = np.ones(m, np.bool_)
    zero = np.zeros(m, np.bool_)
    for l in range(m):
        lo_counted[l] = not below[l] > floor  # (and for a NaN bound: no skips)
    if lo_counted.any():  # the floor counted first, as the kernel does, only where needed
        count_below(t, x, pivmin, counts)
        for l in range(m):
            zero[l] = lo_counted[l] and counts[l] > rank[l]  # below the floor
            active[l] = not zero[l]
    while True:
        running = False
        for l in range(m):
            while active[l]:
                if steps[l] >= max_steps or hi[l] - lo[l] <= two_eps * hi[l]:
                    active[l] = False
                    break
                mid = _midpoint(lo[l], hi[l], half)
                if mid <= below[l]:
                    lo[l], lo_counted[l] = mid, False
                elif mid > above[l]:
                    hi[l], hi_counted[l] = mid, False
                else:
                    x[l] = mid
                    running = True
                    break
                steps[l] += 1
        if not running:
            break
        count_below(t, x, pivmin, counts)
        for l in range(m):
            if active[l]:
                steps[l] += 1
                if counts[l] > rank[l]:
                    hi[l], hi_counted[l] = x[l], True
                else:
                    lo[l], lo_counted[l] = x[l], True
    # the ends no count set: lo's count must be ≤ rank, hi's above it
    ends = np.concatenate((lo, hi))
    ends_counts = np.zeros(2 * m, np.int64)
    if not (lo_counted.all() and hi_counted.all()):
        count_below(t, ends, pivmin, ends_counts)
    wrong = np.zeros(m, np.bool_)
    for l in range(m):
        wrong[l] = not zero[l] and ((not lo_counted[l] and ends_counts[l] > rank[l])
                                    or (not hi_counted[l] and ends_counts[m + l] <= rank[l]))
        if zero[l]:
            out[l] = 0
        elif not wrong[l]:
            out[l] = (lo[l] + hi[l]) * half
    return wrong


@numba.njit(parallel=True, cache=True)
def _bisect(t, floor, pivmin, top, two_eps, half, max_steps, lanes, near, slack, out):
    """out[i] = the i-th largest singular value of the B of ``t``, by bisection; ``lanes``
    values advance together. With ``near`` (n entries; empty for none), the steps
    whose midpoint lies outside [near[i] − slack, near[i] + slack] are taken without a
    count, and a value whose check fails is bisected again with every step counted
    (:func:`bidiagonal_singular_values_bisection`)."""
    n = out.shape[0]
    bracketed = near.shape[0] == n
    for group in numba.prange((n + lanes - 1) // lanes):
        first = group * lanes
        m = min(lanes, n - first)
        rank = np.empty(m, np.int64)  # out[first + l] is the (rank + 1)-th smallest
        for l in range(m):
            rank[l] = n - 1 - (first + l)
        below, above = np.zeros(m, out.dtype), np.full(m, top)  # every midpoint inside
        if bracketed:
            for l in range(m):
                below[l], above[l] = near[first + l] - slack, near[first + l] + slack
        values = np.empty(m, out.dtype)
        wrong = _bisect_group(t, rank, below, above, floor, pivmin, top, two_eps, half,
                              max_steps, values)
        if wrong.any():
            again = np.nonzero(wrong)[0]
            redone = np.empty(again.shape[0], out.dtype)
            _bisect_group(t, rank[again], np.zeros(again.shape[0], out.dtype),
                          np.full(again.shape[0], top), floor, pivmin, top, two_eps, half,
                          max_steps, redone)
            values[again] = redone
        out[first:first + m] = values


def _numba_twin(t, n, b, near=None, slack=0.0):
    out = np.empty(n, t.dtype)
    real = t.dtype.type
    _bisect(t, b.floor, b.pivmin, b.top, b.two_eps, real(0.5), b.max_steps,
            tunables.get().bisection_cpu_lanes,
            np.empty(0, t.dtype) if near is None else near, real(slack), out)
    return out


def _cuda_twin(t, n, b, near=None, slack=0.0):
    from .bisection_cuda import bisect

    return bisect(t, n, b, near=near, slack=slack)


# The twin that bisects T_GK's off-diagonal t, by the name of its array namespace.
_TWINS = {"numpy": _numba_twin, "cupy": _cuda_twin}


def golub_kahan_offdiagonal(xp, d, e):
    """(t, exponent): |d₁|, |e₁|, |d₂|, …, |dₙ| times 2^−exponent, max|t| in [1/2, 1).

    One reduction (max|t| on the integer bits, read back to the host: ``largest_entries``,
    which a GPU's float32 flush of subnormals cannot touch) checks B and gives the
    exponent, 0 for B = 0; the scaling is exact (``times_power_of_two``).

    Raises
    ------
    gpusvd.LinAlgError
        If an entry is NaN or infinite.
    """
    n = d.shape[0]
    t = xp.empty(max(2 * n - 1, 0), d.dtype)
    t[0::2] = d
    t[1::2] = e
    top = float(largest_entries(t.reshape(1, 1, -1), xp)[0]) if n else 0.0
    if not math.isfinite(top):
        raise LinAlgError("the bidiagonal holds NaN or infinity: the input was not finite "
                          "(check_finite=True rejects such input up front)")
    exponent = math.frexp(top)[1] if top > 0 else 0
    return xp.abs(times_power_of_two(t, -exponent, xp)), exponent


def bidiagonal_singular_values_bisection(d, e, *, near=None, slack=None):
    """Singular values of the upper bidiagonal B (diagonal d, superdiagonal e) by
    bisection on its Golub–Kahan tridiagonal, each to high relative accuracy.

    Parallel over the values: Numba threads for NumPy input, a group of CUDA lanes per
    value for CuPy input (module docstring). Each value σ is accurate to 4·n·ε·σ (Demmel &
    Kahan 1990) where σ ≥ 2.5e-293·max|B| in float64 (2.5e-32 in float32), and in
    practice down to 2.2e-308·max|B| (1.2e-38); values below that are returned as 0.

    Values known roughly (a divide and conquer's, to about n·ε·σ₁) save most of the
    counts: with ``near``, value i's bisection takes every step whose midpoint lies
    outside [near[i] − slack, near[i] + slack] without counting, as the count would take
    it if the value lies in there, and counts the others (the floor first only where that
    interval reaches it); an end of the final interval that no count set is checked by
    one count, and where a check fails the value is bisected again from the start with
    every step counted. A value thus costs about log₂(slack/(ε·σ)) counts in place of
    about 64 (float64), and one below the slack all of them. The result is the same bits
    as without ``near`` wherever the computed count is monotone in the shift (Demmel,
    Dhillon & Ren 1995 give the conditions); in any case each value keeps the bound
    above, since its final interval's ends are checked by counts.

    Parameters
    ----------
    d, e : array_like (NumPy or CuPy)
        Diagonal (n,) and superdiagonal (n-1,), finite; not modified. float32 input is
        solved in float32, anything else in float64.
    near : array_like, optional
        (n,) the values, descending, each within ``slack`` of the true one; in the
        namespace of ``d`` or on the host. A wrong one costs time, never accuracy.
    slack : float, optional
        The absolute bound on ``near``'s errors, finite and at least 0; required with
        ``near``.

    Returns
    -------
    array
        The n singular values, descending, float32 or float64, in the namespace of ``d``.

    Raises
    ------
    ValueError
        If the shapes do not match, or ``near`` comes without a finite ``slack`` ≥ 0.
    gpusvd.LinAlgError
        If an entry is not finite (the input of the SVD was not).

    Examples
    --------
    >>> import numpy as np
    >>> s = bidiagonal_singular_values_bisection(np.array([3.0, 1.0]), np.array([4.0]))
    >>> np.round(s, 6)
    array([5.064495, 0.592359])
    >>> s = bidiagonal_singular_values_bisection(np.array([1.0, 1e-200]), np.array([1e-100]))
    >>> round(float(s[1]) * 1e200, 12)  # |det B|/σ₁, to a few ulps
    1.0
    >>> d, e = np.array([3.0, 1.0]), np.array([4.0])
    >>> near = bidiagonal_singular_values_bisection(d, e, near=[5.0645, 0.5924], slack=1e-3)
    >>> bool((near == bidiagonal_singular_values_bisection(d, e)).all())
    True
    """
    xp = array_namespace(d)
    dtype = np.float32 if (np.dtype(getattr(d, "dtype", np.float64)) == np.float32
                           and np.dtype(getattr(e, "dtype", np.float64)) == np.float32) \
        else np.float64
    d = xp.asarray(d, dtype=dtype).reshape(-1)
    e = xp.asarray(e, dtype=dtype).reshape(-1)
    n = d.shape[0]
    if e.shape[0] != max(n - 1, 0):
        raise ValueError(f"e must have n-1 = {max(n - 1, 0)} entries, got {e.shape[0]}")
    if near is not None:
        if slack is None or not math.isfinite(slack) or slack < 0:
            raise ValueError(f"near needs a finite slack >= 0, got {slack!r}")
        near = xp.asarray(near, dtype=dtype).reshape(-1)
        if near.shape[0] != n:
            raise ValueError(f"near must have n = {n} entries, got {near.shape[0]}")
    t, exponent = golub_kahan_offdiagonal(xp, d, e)
    if n == 0:
        return xp.empty(0, dtype)
    if near is None:
        s = _TWINS[xp.__name__](t, n, bounds(dtype))
    else:  # near and slack on t's scale (a power of two: exact but for underflow)
        s = _TWINS[xp.__name__](t, n, bounds(dtype), times_power_of_two(near, -exponent, xp),
                                math.ldexp(float(slack), -exponent))
    return scale_values(s, exponent, xp)
