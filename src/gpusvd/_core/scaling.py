"""Scaling a matrix by a power of two so that its reductions neither overflow nor underflow.

The drivers scale their input by an exact power of two before the decomposition and the
singular values back afterwards, as LAPACK's dgesvd does with dlascl.
"""

import numpy as np


def safe_scale(anrm, dtype):
    """The power of two that brings max|A| = ``anrm`` into [smlnum, bignum].

    dgesvd's range and its upper target. Below the range dgesvd scales up to smlnum only;
    then a singular value ulp·smlnum has a square below the smallest normal number, which
    the GPU's reductions flush to zero (float32 Householder norms lost their precision
    on the H100, orthogonality 700–3000 n·ε). Scaling up by a power of two is exact, so
    here a tiny matrix is brought to max|A| ≈ 1. Returns 1.0 where no scaling is needed.

    Examples
    --------
    >>> safe_scale(1e300, np.float64) < 1e-150
    True
    >>> safe_scale(3.0, np.float32)
    1.0
    """
    finfo = np.finfo(dtype)
    smlnum = np.sqrt(float(finfo.tiny)) / float(finfo.eps)
    bignum = 1.0 / smlnum
    if anrm == 0.0 or smlnum <= anrm <= bignum:
        return 1.0
    target = 1.0 if anrm < smlnum else bignum
    return float(2.0 ** np.round(np.log2(target / anrm)))
