"""Scaling a matrix by a power of two so that its reductions neither overflow nor underflow.

The front end (:mod:`._core.front_end`) scales every input matrix whose largest entry is
outside [smlnum, bignum] by an exact power of two before the decomposition and the
singular values back afterwards, as LAPACK's dgesvd does with dlascl; QUIC-SVD's row
blocks, which never pass the front end whole, are scaled by the same rule.

The exponent can exceed the float range (up to 1074 for a subnormal float64 matrix: 2**1074
is not a float64), so a matrix is multiplied by two factors of half the exponent each,
and values are scaled back by ``ldexp``, which rounds once.
"""

import numpy as np


def _range(dtype):
    """dgesvd's safe range [smlnum, bignum] for ``dtype``: smlnum = √(safe minimum)/ε."""
    finfo = np.finfo(dtype)
    smlnum = np.sqrt(float(finfo.tiny)) / float(finfo.eps)
    return smlnum, 1.0 / smlnum


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


def times_power_of_two(a, k, xp):
    """``a``·2^k, exact unless entries leave the float range, for any k of the front end.

    ``k`` is an int or a host integer array that broadcasts against ``a`` (one exponent
    per matrix of a stack: shape (batch, 1, 1)). Two factors of about k/2 each, of the
    real dtype of ``a`` (complex ``a`` too), so that neither factor over- or underflows.
    """
    real = np.finfo(a.dtype).dtype
    k = np.asarray(k)
    half = k // 2
    first, second = np.ldexp(np.ones((), real), half), np.ldexp(np.ones((), real), k - half)
    if first.ndim:
        first, second = xp.asarray(first), xp.asarray(second)
    else:
        first, second = real.type(first), real.type(second)
    return a * first * second


def scale_values(s, k, xp):
    """Values ``s`` (of a real dtype) times 2^k, rounded once (``ldexp``); ``k`` an int or a
    host integer array that broadcasts against ``s``."""
    k = np.asarray(k, np.int32)
    return xp.ldexp(s, xp.asarray(k) if k.ndim else int(k))
