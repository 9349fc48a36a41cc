"""LAPACK's SVD on the CPU, as ``method="auto"`` takes it there (:func:`gpusvd.svd`'s
Notes) and as ``gpusvd.polar`` takes it for its unitary factor on the CPU."""

import numpy as np
import scipy.linalg


DRIVERS = ("gesdd", "gesvd")


def svd(stack, *, full_matrices, compute_uv, driver="gesdd"):
    """LAPACK's SVD of each matrix of the NumPy ``stack`` (..., M, N), finite:
    ``(u, s, vh)``, or ``s`` without ``compute_uv``; by divide and conquer (``driver=
    "gesdd"``) or by the QR iteration (``"gesvd"``), as ``scipy.linalg.svd``'s
    ``lapack_driver``.

    gesdd through NumPy's ``linalg.svd``, whose LAPACK takes 64-bit indices (matrices past
    2³¹ entries) and which loops over a stack in C (1000 × 8×8: 9.4 ms against 25 ms
    through SciPy's batched call, one thread, ``bench/cpu.py``); where it does not
    converge, gesvd, as LAPACK's users do. gesvd through SciPy (``check_finite=False``:
    the caller has checked). Both copy the C-ordered stack into LAPACK's column order;
    ``stack`` is not changed.

    Examples
    --------
    >>> np.round(svd(np.diag([1.0, -3.0]), full_matrices=False, compute_uv=False), 12)
    array([3., 1.])
    """
    out = None
    if driver == "gesdd":
        try:
            out = np.linalg.svd(stack, full_matrices=full_matrices, compute_uv=compute_uv)
        except np.linalg.LinAlgError:
            pass
    if out is None:
        out = scipy.linalg.svd(stack, full_matrices=full_matrices, compute_uv=compute_uv,
                               check_finite=False, lapack_driver="gesvd")
    return tuple(out) if compute_uv else out
