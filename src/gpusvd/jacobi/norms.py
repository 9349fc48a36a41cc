"""Column norms safe from overflow and underflow: DRDSSQ (paper 003, Appendix A).

LAPACK's dlassq scales sequentially; DRDSSQ is built for parallel reductions. For a
column x with M = max|xᵢ| and m = min of the nonzero |xᵢ|, the entries are split into
three ranges by the safe bounds μ̃ = √(μ/γ) and ν̂ = √(ν/δₙ), δₙ = 2^⌈lg n⌉·δ^(1+⌈lg n⌉)
(μ, ν the smallest and largest normal numbers, γ = 1 − u, δ = 1 + u, n the length):
entries in [μ̃, ν̂] are summed as they are, larger ones after scaling by the largest power
of two s₂ with s₂·M <= ν̂, smaller ones after scaling by the smallest s₀ with s₀·m >= μ̃.
The scalings are exact (powers of two, applied with ``ldexp``) and the partial sums are
combined in the scale of the largest one, smallest first, so ‖x‖ is accurate whenever it
is itself representable. Complex entries count as their real and imaginary parts.

Every column is reduced with array operations of ``xp`` (NumPy or CuPy), so the same code
runs on the CPU and the GPU; the three partial sums are always formed (no data-dependent
branch, no host synchronization), which costs three passes over the data instead of one.
Single-precision data skip the ranges: their squares are exact in float64 and summed
there in one pass.
"""

import numpy as np

from .._core.scaling import float32_as_float64, float64_as_float32


def _bounds(dtype, n):
    finfo = np.finfo(dtype)
    u = float(finfo.eps) / 2
    levels = int(np.ceil(np.log2(max(n, 1))))
    delta_n = 2.0 ** levels * (1 + u) ** (1 + levels)
    lo = np.sqrt(float(finfo.tiny) / (1 - u))
    hi = np.sqrt(float(finfo.max) / delta_n)
    # Round lo up and hi toward zero in the working type, as the paper's ru/rz.
    lo_t = np.nextafter(dtype.type(lo), dtype.type(np.inf))
    hi_t = np.nextafter(dtype.type(hi), dtype.type(0))
    return lo_t, hi_t


def _exponent_to(xp, f, t, up):
    """The exponent j of the power of two with 2^j·f first >= t (up) or last <= t (down).

    The paper's frexp fragment: with f = fy·2^fe and t = ty·2^te,
    j = (te − fe) + (fy < ty) going up, (te − fe) − (fy > ty) going down.
    """
    fy, fe = xp.frexp(f)
    ty, te = np.frexp(t)
    base = int(te) - fe.astype(np.int32)
    if up:
        return base + (fy < ty).astype(np.int32)
    return base - (fy > ty).astype(np.int32)


def column_norms(a, xp=np):
    """2-norms of the columns of ``a`` (..., m, n), accurate over the whole exponent range.

    Parameters
    ----------
    a : (..., m, n) array of float32, float64, complex64 or complex128 (NumPy or CuPy)
    xp : module
        ``numpy`` or ``cupy``, the namespace of ``a``.

    Returns
    -------
    (..., n) array of the real dtype.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.array([[3e300, 1e-300], [4e300, 0.0]])
    >>> column_norms(a)
    array([5.e+300, 1.e-300])
    """
    x = a if not xp.iscomplexobj(a) else xp.concatenate((a.real, a.imag), axis=-2)
    real = x.dtype
    if x.shape[-2] == 0:
        return xp.zeros(x.shape[:-2] + x.shape[-1:], real)
    if real == np.float32:
        # Squares of float32 numbers are exact in float64, which neither underflows nor
        # overflows on them: one pass, no scaling, one rounding of the root.
        # (Through the bits: the GPU's float32 arithmetic flushes subnormals to zero.)
        wide = float32_as_float64(x, xp)
        return float64_as_float32(xp.sqrt((wide * wide).sum(axis=-2)), xp)
    x = xp.abs(x)
    lo, hi = _bounds(real, x.shape[-2])
    big_m = x.max(axis=-2)
    small_m = xp.where(x > 0, x, xp.asarray(np.finfo(real).max, real)).min(axis=-2)
    zero = xp.zeros((), real)

    mid = xp.where((x >= lo) & (x <= hi), x, zero)
    s_mid = (mid * mid).sum(axis=-2)

    up = _exponent_to(xp, xp.maximum(big_m, hi), hi, up=False)          # s₂ = 2^up <= 1
    big = xp.ldexp(xp.where(x > hi, x, zero), up[..., None, :])
    s_big = (big * big).sum(axis=-2)

    dn = _exponent_to(xp, xp.minimum(small_m, lo), lo, up=True)          # s₀ = 2^dn >= 1
    small = xp.ldexp(xp.where((x < lo) & (x > 0), x, zero), dn[..., None, :])
    s_small = (small * small).sum(axis=-2)

    # Combine in the scale of the largest nonzero partial sum, the smaller ones first.
    with np.errstate(under="ignore"):
        in_big = xp.ldexp(xp.ldexp(s_small, -2 * dn) + s_mid, 2 * up) + s_big
        norm_big = xp.ldexp(xp.sqrt(in_big), -up)
        norm_mid = xp.sqrt(s_mid + xp.ldexp(s_small, -2 * dn))
        norm_small = xp.ldexp(xp.sqrt(s_small), -dn)
    return xp.where(s_big > 0, norm_big, xp.where(s_mid > 0, norm_mid, norm_small))
