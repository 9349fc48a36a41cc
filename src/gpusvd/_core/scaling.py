"""Scaling a matrix by a power of two so that its reductions neither overflow nor underflow.

The front end (:mod:`._core.front_end`) scales every input matrix whose largest entry is
outside [smlnum, bignum] by an exact power of two before the decomposition and the
singular values back afterwards, as LAPACK's dgesvd does with dlascl; QUIC-SVD's row
blocks, which never pass the front end whole, are scaled by the same rule.

The exponent can exceed the float range (up to 1074 for a subnormal float64 matrix: 2**1074
is not a float64), so a matrix is multiplied by two factors of half the exponent each,
and values are scaled back by ``ldexp``, which rounds once.
"""

import functools
import math

import numpy as np

from . import tunables
from .backend import array_namespace, to_host

# float32's layout: 23 mantissa bits; a normal number is (2^23 + m)·2^(e − 150), a
# subnormal m·2^−149; the sign is bit 31.
_F32_MANTISSA_BITS = 23
_F32_MANTISSA_MASK = (1 << _F32_MANTISSA_BITS) - 1
_F32_NORMAL_SHIFT = 150
_F32_SUBNORMAL_POWER = -149
_F32_SIGN_BIT = -(1 << 31)
# Scaling by 2^k with |k| beyond this can move an entry that matters, one ≥ 2^−23·max|A|
# (ε below the largest), across the smallest normal float32 2^−126: 126 − 23.
_F32_EXACT_BEYOND = 103


@functools.cache
def _range(dtype):
    """dgesvd's safe range [smlnum, bignum] for ``dtype``: smlnum = √(safe minimum)/ε."""
    finfo = np.finfo(dtype)
    smlnum = np.sqrt(float(finfo.tiny)) / float(finfo.eps)
    return smlnum, 1.0 / smlnum


def within_safe_range(largest, dtype):
    """Whether every max|A| in ``largest`` (a host float or array, one per matrix) is zero
    or inside [smlnum, bignum]: finite, and left as it is by the front end's scan.

    Examples
    --------
    >>> within_safe_range(np.array([0.0, 3.0]), np.float64)
    True
    >>> within_safe_range(1e-300, np.float64), within_safe_range(np.nan, np.float32)
    (False, False)
    """
    smlnum, bignum = _range(dtype)
    if np.ndim(largest) == 0:  # one matrix: float comparisons (a 2×2 call is ~10 µs)
        largest = float(largest)
        return bool(largest == 0 or smlnum <= largest <= bignum)
    return bool(((largest == 0) | ((largest >= smlnum) & (largest <= bignum))).all())


def safe_exponent(anrm, dtype):
    """The k for which max|A|·2^k = ``anrm``·2^k lies in [smlnum, bignum]; 0 if it does.

    dgesvd's range and its upper target. Below the range dgesvd scales up to smlnum only;
    then a singular value ulp·smlnum has a square below the smallest normal number, which
    the GPU's reductions flush to zero (float32 Householder norms lost their precision
    on the H100, orthogonality 700–3000 n·ε). Scaling up by a power of two is exact, so
    here a tiny matrix is brought to max|A| in [1/2, 1). Zero and non-finite ``anrm`` give
    0. ``anrm`` may be a host array (one entry per matrix); k is then an int32 array.

    Examples
    --------
    >>> safe_exponent(3.0, np.float32)
    0
    >>> safe_exponent(1e-310, np.float64)           # subnormal: 2**1029 is not a float64
    1029
    >>> safe_exponent(1e300, np.float64) < -500
    True
    """
    smlnum, bignum = _range(dtype)
    anrm = np.asarray(anrm, np.float64)
    _, e = np.frexp(anrm)                   # anrm = f·2^e, f in [1/2, 1)
    e = e.astype(np.int32)
    k = np.where(anrm < smlnum, -e, np.frexp(bignum)[1] - 1 - e)  # anrm·2^k < bignum
    k = np.where(np.isfinite(anrm) & (anrm != 0) & ~((smlnum <= anrm) & (anrm <= bignum)),
                 k, 0).astype(np.int32)
    return int(k) if k.ndim == 0 else k


def safe_scale(anrm, dtype):
    """2^k of :func:`safe_exponent` as a float (for matrices whose k fits the float range).

    Examples
    --------
    >>> safe_scale(1e300, np.float64) < 1e-150
    True
    >>> safe_scale(3.0, np.float32)
    1.0
    """
    return float(np.ldexp(1.0, safe_exponent(anrm, dtype)))


def unit_exponent(anrm):
    """The k that brings max|A| = ``anrm`` (finite) to [1/2, 1): the normalization of
    iterations that square their iterates' norms (QDWH's power iteration, Takagi's
    sweeps), which the safe range [smlnum, bignum] alone does not keep in range.

    Examples
    --------
    >>> unit_exponent(3.0), unit_exponent(0.0)
    (-2, 0)
    """
    return -math.frexp(anrm)[1] if anrm else 0


def float32_as_float64(x, xp):
    """Real float32 ``x`` as float64, exactly, from its bits: integer operations flush no
    subnormal, where the GPU's float32 arithmetic and conversions do. Finite ``x`` only."""
    bits = xp.ascontiguousarray(x).view(np.int32)
    exponent = (bits >> _F32_MANTISSA_BITS) & 0xFF
    normal = exponent != 0
    mantissa = bits & _F32_MANTISSA_MASK
    mantissa = xp.where(normal, mantissa | (_F32_MANTISSA_MASK + 1), mantissa)
    power = xp.where(normal, exponent - _F32_NORMAL_SHIFT, _F32_SUBNORMAL_POWER)
    magnitude = xp.ldexp(mantissa.astype(np.float64), power.astype(np.int32))
    return xp.where(bits < 0, -magnitude, magnitude)


def float64_as_float32(v, xp):
    """float64 ``v`` rounded to float32, subnormal results included: below the smallest
    normal float32 the bits are built from the integer rint(|v|·2^149) (round half to even,
    as the hardware rounds), and 2^23 there is the smallest normal's own encoding."""
    tiny = xp.abs(v) < float(np.finfo(np.float32).tiny)
    small = xp.where(tiny, xp.abs(v), 0.0)
    sub = xp.rint(xp.ldexp(small, -_F32_SUBNORMAL_POWER)).astype(np.int32)
    sub = xp.where(xp.signbit(v), sub | np.int32(_F32_SIGN_BIT), sub)
    normal = xp.ascontiguousarray(v.astype(np.float32)).view(np.int32)
    return xp.where(tiny, sub, normal).view(np.float32)


def _real_parts(a, xp):
    """``a`` as a real array: complex entries as (real, imaginary) pairs."""
    return xp.ascontiguousarray(a).view(np.finfo(a.dtype).dtype) if a.dtype.kind == "c" else a


def largest_entries_on_device(stack, xp):
    """max |a_ij| of each matrix of ``stack`` (batch, m, n) as a (batch,) array of its real
    dtype on ``xp``'s device, with no host synchronization: NaN or infinity where the
    matrix holds one. A complex entry counts by the larger of its parts, which cannot
    overflow where |z| could.

    Computed on the integer view of the bits with the sign bit cleared, which orders as
    the magnitudes do (NaN above infinity): an integer maximum flushes nothing, where a
    float32 reduction on the GPU flushes subnormal entries to zero (on the H100 a matrix
    of entries ≈ 1e-40 reads as zero).

    Examples
    --------
    >>> x = np.array([[[1e-40, -3e-40]]], np.float32)
    >>> bool(largest_entries_on_device(x, np)[0] == np.float32(3e-40))
    True
    """
    parts = _real_parts(stack, xp)
    real = parts.dtype
    ints = np.dtype(f"int{8 * real.itemsize}")
    bits = xp.ascontiguousarray(parts).view(ints) & ints.type(np.iinfo(ints).max)
    _, m, n = bits.shape
    if m * n > tunables.get().scaling_one_pass_entries:  # partial maxima, shorter side
        bits = bits.max(axis=2, keepdims=True) if m >= n else bits.max(axis=1, keepdims=True)
    # One matrix: a whole-array reduction, as the polar method's CUDA graph ran it (CuPy
    # reduces axes (1, 2) into one output in a single thread block).
    top = bits.max().reshape(1) if len(bits) == 1 else bits.max(axis=(1, 2))
    return xp.ascontiguousarray(top).view(real)


def largest_entries(stack, xp):
    """:func:`largest_entries_on_device` as a host float64 array (one synchronization).

    Examples
    --------
    >>> x = np.array([[[1e-40, -3e-40]]], np.float32)
    >>> bool(largest_entries(x, np)[0] == np.float32(3e-40))
    True
    """
    return to_host(largest_entries_on_device(stack, xp)).astype(np.float64)


def times_power_of_two(a, k, xp):
    """``a``·2^k, exact unless entries leave the float range, for any k of the front end.

    ``k`` is an int or a host integer array that broadcasts against ``a`` (one exponent
    per matrix of a stack: shape (batch, 1, 1)). float64: two factors of about k/2 each,
    so that neither over- or underflows. float32 (and complex64) scaled by more than
    2^±_F32_EXACT_BEYOND: through float64 built from the bits (:func:`float32_as_float64`),
    since the GPU flushes float32 subnormals in and out of its arithmetic, and only there
    can an entry that matters (≥ ε·max|A|) be subnormal on one side; a smaller k takes
    the plain product, with no float64 copy (a 2.2e9-entry float32 matrix ran the H100 out
    of memory through float64 temporaries).
    """
    real = np.finfo(a.dtype).dtype
    k = np.asarray(k)
    if not k.any():
        return a
    if real == np.float32 and int(np.abs(k).max(initial=0)) > _F32_EXACT_BEYOND:
        wide = float32_as_float64(_real_parts(a, xp), xp)
        wide = wide * (xp.asarray(np.ldexp(1.0, k)) if k.ndim else float(np.ldexp(1.0, k)))
        out = float64_as_float32(wide, xp)
        return out.view(a.dtype) if a.dtype.kind == "c" else out
    half = k // 2
    first, second = np.ldexp(np.ones((), real), half), np.ldexp(np.ones((), real), k - half)
    if first.ndim:
        first, second = xp.asarray(first), xp.asarray(second)
    else:
        first, second = real.type(first), real.type(second)
    return a * first * second


def scale_values(s, k, xp):
    """Values ``s`` times 2^k, rounded once (complex ones by parts, as
    :func:`times_power_of_two`); ``k`` an int or a host
    integer array that broadcasts against ``s``. float32 as in :func:`times_power_of_two`.

    Examples
    --------
    >>> s = scale_values(np.array([1.0], np.float32), -140, np)   # a float32 subnormal
    >>> bool(s[0] == np.ldexp(np.float32(1.0), -140))
    True
    """
    k = np.asarray(k, np.int32)
    if s.dtype == np.float32 or s.dtype.kind == "c":
        return times_power_of_two(s, k, xp)
    return xp.ldexp(s, xp.asarray(k) if k.ndim else int(k))


def unit_phase(x):
    """x/|x| elementwise, 1 where x = 0, of x's dtype, with |x/|x|| = 1 to rounding at any
    scale. A complex x is first divided by max(|Re x|, |Im x|), so its modulus is formed
    from parts in [−1, 1]: a subnormal complex64 entry's own modulus (hypotf) is rounded
    to float's subnormal grid, up to 11% off, and a complex division by it overflows.

    Examples
    --------
    >>> import numpy as np
    >>> p = unit_phase(np.array([3e-45 + 4e-45j, 0, -2j], np.complex64))
    >>> np.round(p, 4), bool(np.allclose(abs(p), 1))
    (array([ 0.5547+0.8321j,  1.    +0.j    , -0.    -1.j    ], dtype=complex64), True)
    """
    xp = array_namespace(x)
    if x.dtype.kind != "c":
        mag = xp.abs(x)
        return xp.where(mag == 0, 1, x / xp.where(mag == 0, 1, mag)).astype(x.dtype)
    big = xp.maximum(xp.abs(x.real), xp.abs(x.imag))
    safe = xp.where(big == 0, 1, big)
    re, im = x.real / safe, x.imag / safe
    mag = xp.where(big == 0, 1, xp.sqrt(re * re + im * im))
    return xp.where(big == 0, 1, re / mag + 1j * (im / mag)).astype(x.dtype)
