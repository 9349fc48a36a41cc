"""The front end of every public function (docs/design.md, "One front end").

:func:`receive` takes the caller's array through the same steps for every entry point:

1. place: NumPy or CuPy, on the device asked for (:func:`._core.arrays.place`);
2. check: a matrix or a stack of them, of a dtype the method takes, in any byte order;
3. the working dtype (:func:`._core.validation.working_dtype`, or the method's own);
4. reshape to a stack (batch, M, N);
5. check finite, and scale into the safe range: one reduction gives max|A| of every
   matrix, which both steps need. A matrix outside dgesvd's range [smlnum, bignum]
   (subnormal or near-overflow entries) is multiplied by an exact power of two
   (:mod:`._core.scaling`, as LAPACK's dlascl). With ``check_finite=False`` a matrix
   that holds NaN or infinity is replaced by zeros, so that no iteration ever sees it,
   and its results come back as NaN (NaN in, NaN out, never a hang);

then the method runs on :attr:`Received.stack`, and :meth:`Received.values` and
:meth:`Received.vectors` scale back and convert back to the caller's array type and
device.
"""

import contextlib
import math

import numpy as np

from . import validation
from .arrays import place
from .scaling import (largest_entries, safe_exponent, scale_values, times_power_of_two,
                      within_safe_range)


class Received:
    """A caller's input as the method takes it, and the way back.

    Attributes
    ----------
    stack : (batch, M, N) array of ``xp``
        The matrices in the working dtype, scaled into the safe range, finite.
    xp : module
        ``numpy`` or ``cupy``.
    batch : tuple
        The caller's stack dimensions (``()`` for one matrix).
    writable : bool
        Whether the method may use ``stack`` as workspace: it is a private copy, or the
        caller allowed ``overwrite_a`` and the memory is writable.
    placement : Placement
        Where the work runs and how results go back.
    """

    def __init__(self, stack, placement, batch, writable):
        self.stack, self.placement, self.batch = stack, placement, batch
        self.xp = placement.xp
        self.writable = writable
        self._exponents = self._bad = None

    def scan(self, *, what, check_finite):
        """Step 5 of the module docstring: check finite and scale into the safe range
        (``ValueError`` for NaN or infinity with ``check_finite``). :func:`prepare` does
        it unless told not to, for a method that does both inside its own kernel."""
        stack, xp = self.stack, self.xp
        if not stack.size:
            return
        largest = largest_entries(stack, xp)
        finite = np.isfinite(largest)
        if not finite.all():
            if check_finite:
                raise validation.not_finite(what)
            self._bad = ~finite
            stack = stack if self.writable else stack.copy()
            stack[xp.asarray(self._bad)] = 0
            self.writable = True
        k = safe_exponent(largest, stack.dtype)
        if k.any():
            stack = times_power_of_two(stack, k.reshape(-1, 1, 1), xp)
            self._exponents, self.writable = k, True
        self.stack = stack

    def unchanged_by_scan(self, largest):
        """Whether :meth:`scan` would leave a matrix of max|A| = ``largest`` as it is:
        finite and inside the safe range. A method that measures max|A| itself (the
        polar method's fixed sequence) keeps its result where this holds, and otherwise
        scans and runs again."""
        return bool(np.isfinite(largest)) and not safe_exponent(largest, self.stack.dtype)

    def values(self, s, power=1):
        """Values of each matrix (batch, ...) scaled back (singular values ``power`` = 1,
        eigenvalues σ² ``power`` = 2), NaN for non-finite input, in the caller's shape,
        array type and device."""
        if self._exponents is not None:
            k = -power * self._exponents
            s = scale_values(s, k.reshape(-1, *([1] * (s.ndim - 1))), self.xp)
        return self.vectors(s)

    def vectors(self, v):
        """Results that do not scale (vectors, signs), NaN for non-finite input, in the
        caller's shape, array type and device."""
        if self._bad is not None:  # a new array: a result may be a read-only view
            bad = self.xp.asarray(self._bad.reshape(-1, *([1] * (v.ndim - 1))))
            v = self.xp.where(bad, self.xp.asarray(np.nan, v.dtype), v)
        return self.placement.to_output(v.reshape(*self.batch, *v.shape[1:]))


_LAPACK_TYPES = frozenset(map(np.dtype, (np.float32, np.float64, np.complex64, np.complex128)))


def passes_unchanged(arr, placement):
    """Whether steps 2–5 would leave ``arr`` (step 1's result, :func:`place`) as it is
    and on the CPU: a non-empty NumPy (stack of) matrix of a LAPACK dtype, every matrix
    finite and with max|A| (the scan's: the larger of |Re| and |Im|) zero or inside the
    safe range. LAPACK's own drivers then take ``arr`` as it is: they scale themselves.
    max|A| is reduced in floats, exact on the CPU, which flushes no subnormal: the
    scan's :func:`~gpusvd._core.scaling.largest_entries` reads the bits for the GPU's
    sake, at ~4× the cost of a 2×2 call's reduction.

    Examples
    --------
    >>> passes_unchanged(*place(np.eye(3), "cpu"))
    True
    >>> passes_unchanged(*place(np.eye(3) * 1e-300, "cpu"))
    False
    """
    if placement.on_gpu or arr.ndim < 2 or not arr.size or arr.dtype not in _LAPACK_TYPES:
        return False
    axes = None if arr.ndim == 2 else (-2, -1)
    if arr.dtype.kind == "c":
        largest = np.maximum(np.abs(arr.real).max(axis=axes),
                             np.abs(arr.imag).max(axis=axes))
    else:
        largest = np.abs(arr).max(axis=axes)
    return within_safe_range(largest, arr.dtype)


def directly(placed, compute):
    """``compute(arr)``'s results in the caller's array type, with none of the front
    end's work, where it would pass ``arr`` unchanged (:func:`passes_unchanged`; ``placed``
    is :func:`place`'s ``(arr, placement)``); None otherwise, for the caller to take the
    front end. The CPU's shortcut to LAPACK's drivers, which scale themselves: ``svd`` and
    ``polar`` of a small matrix pay the front end's work several times over otherwise.
    ``compute`` returns an array or a tuple of arrays.

    Examples
    --------
    >>> directly(place(np.eye(2), "cpu"), lambda arr: (arr, 2 * arr))[1]
    array([[2., 0.],
           [0., 2.]])
    >>> directly(place(np.eye(2) * 1e-300, "cpu"), np.abs) is None
    True
    """
    arr, placement = placed
    if not passes_unchanged(arr, placement):
        return None
    out = compute(arr)
    if isinstance(out, tuple):
        return tuple(map(placement.to_output, out))
    return placement.to_output(out)


def prepare(a, *, what, device="auto", check_finite=True, overwrite_a=False,
            allow_complex=True, working=None, scan=True, placed=None):
    """Place, check, convert, check finite, scale and stack ``a`` (the module docstring);
    returns a :class:`Received`. :func:`receive` also enters the computing device.

    ``working`` maps the validated working dtype to the method's own (Takagi: complex).
    ``scan=False`` leaves step 5 to the caller (:meth:`Received.scan`). ``placed``: step
    1's result for ``a`` and ``device`` where the caller has placed it already.
    """
    arr, placement = place(a, device, what) if placed is None else placed
    validation.check_matrix(arr, what=what)
    dtype = validation.working_dtype(arr.dtype, allow_complex=allow_complex, what=what)
    if working is not None:
        dtype = working(dtype)
    batch, (m, n) = arr.shape[:-2], arr.shape[-2:]
    with placement.device_context():
        writable = overwrite_a and placement.writable
        if arr.dtype != dtype:
            arr, writable = arr.astype(dtype), True
        job = Received(arr.reshape(math.prod(batch), m, n), placement, batch, writable)
        if scan:
            job.scan(what=what, check_finite=check_finite)
    return job


@contextlib.contextmanager
def receive(a, **kwargs):
    """:func:`prepare` ``a``; yields the :class:`Received` inside the computing device's
    context (a no-op on the CPU), in which the method then runs."""
    job = prepare(a, **kwargs)
    with job.placement.device_context():
        yield job
