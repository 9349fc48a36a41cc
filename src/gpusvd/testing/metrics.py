"""Accuracy metrics of a computed SVD, in units of machine epsilon.

Each metric takes NumPy or CuPy arrays (mixed is fine: NumPy operands are moved
to the GPU when any operand is a CuPy array), computes with that array namespace
and returns a Python float. ε is the machine epsilon of the computed result's
precision (float32 and complex64: float32's), because the metrics judge an
algorithm in the precision it works in. A backward-stable SVD gives
`svd_residual`, `orthogonality` and `sv_error` of order one to a small multiple
of one; values above about 100 signal a bug (LAPACK's xDRVBD flags 50 for its
variants of these ratios).

These are gpusvd's accuracy units, everywhere (tests, ``bench/``, ``gpusvd bench``,
BENCHMARKS.md); "n·ε" in the documentation means, for an m×n matrix:

* residual: ‖A − U·diag(S)·Vh‖_F / (‖A‖_F · max(m, n) · ε) (:func:`svd_residual`);
* orthogonality: ‖QᴴQ − I‖_F / (k · ε), k the number of columns of Q measured,
  min(m, n) for the economy U and Vᴴ (:func:`orthogonality`);
* singular values: max_i |s_i − s_ref,i| / (max_i s_ref,i · ε) (:func:`sv_error`).
"""

import numpy as np

from gpusvd._core.backend import array_namespace


def _namespace(*arrays):
    """The CuPy namespace if any operand is a CuPy array, else NumPy; and the
    operands as arrays of it."""
    xp = np
    for a in arrays:
        if array_namespace(a) is not np:
            xp = array_namespace(a)
    return xp, [xp.asarray(a) for a in arrays]


def _finfo(*arrays):
    """finfo of the working precision: that of the floating operands, float64 if none."""
    dtype = np.result_type(*(a.dtype for a in arrays))
    return np.finfo(dtype if dtype.kind in "fc" else np.float64)


def _norm(xp, x):
    """‖x‖_F without overflow or underflow: scaled by max |x_ij| first, summed in
    float64 (the norm is a measurement, not part of the algorithm measured)."""
    if x.size == 0:
        return 0.0
    # On the magnitudes: a complex array divided by a subnormal scale overflows inside
    # NumPy's complex division (it forms 1/scale), where the real division does not.
    magnitudes = xp.abs(x.astype(np.complex128 if x.dtype.kind == "c" else np.float64))
    scale = float(xp.max(magnitudes))
    if scale == 0.0 or not np.isfinite(scale):
        return scale
    return scale * float(xp.linalg.norm((magnitudes / scale).ravel()))


def _ratio(numerator, denominator, info):
    """numerator/denominator with 0/0 → 0 and x/0 computed as x/tiny (finite where
    possible, so a nonzero result from a zero input still reports as large)."""
    return numerator / max(denominator, float(info.tiny))


def svd_residual(a, u, s, vh):
    """Backward error of A ≈ U·diag(S)·Vh, in units of max(m, n)·ε.

    ``‖A − U[:, :k]·diag(S)·Vh[:k, :]‖_F / (‖A‖_F · max(m, n) · ε)`` with k = len(S),
    so economy and full U, Vh are both accepted. The reconstruction is computed in
    the precision of U, S, Vh (not upcast); the norms are scaled so that matrices
    near overflow or underflow are measured correctly. For A = 0 the result is 0
    when the reconstruction is exactly 0 and very large otherwise.

    Parameters
    ----------
    a : (m, n) array_like
        The matrix that was decomposed. It and U, S, Vh may be NumPy or CuPy arrays.
    u : (m, p) array_like
        Left singular vectors as columns, p ≥ k; the first k are used.
    s : (k,) array_like
        The singular values.
    vh : (q, n) array_like
        Right singular vectors as rows, q ≥ k; the first k are used.

    Returns
    -------
    float
        The backward error in units of max(m, n)·ε, ε of the precision of U, S and Vh
        (float64 if they are integers).

    Examples
    --------
    >>> import scipy.linalg
    >>> from gpusvd.testing import random_matrix, svd_residual
    >>> a = random_matrix(6, 4, seed=0)
    >>> svd_residual(a, *scipy.linalg.svd(a)) < 10
    True
    """
    xp, (a, u, s, vh) = _namespace(a, u, s, vh)
    info = _finfo(u, s, vh)
    k = s.shape[-1]
    m, n = a.shape
    residual = _norm(xp, a - (u[:, :k] * s) @ vh[:k, :])
    relative = _ratio(residual, _norm(xp, a), info)
    return relative / (max(m, n, 1) * float(info.eps))


def orthogonality(q, *, rows=False):
    """Loss of orthonormality of the columns of Q, in units of k·ε.

    ``‖Qᴴ·Q − I‖_F / (k · ε)`` with k the number of columns. Pass ``rows=True`` to
    measure the rows instead (``‖Q·Qᴴ − I‖_F / (k · ε)``, k rows), as for Vh of an
    SVD: ``orthogonality(vh, rows=True)``. Q·Qᴴ of a tall Q is not the identity, so
    only tall or square Q (wide with ``rows=True``) can score small. QᴴQ (QQᴴ) is
    computed in Q's precision. An empty Q scores 0.

    Parameters
    ----------
    q : (m, k) array_like, or (k, n) with ``rows=True``
        The matrix whose k columns (rows) are measured, NumPy or CuPy.
    rows : bool, optional
        Measure the rows instead of the columns (default False).

    Returns
    -------
    float
        The loss of orthonormality in units of k·ε, ε of Q's precision (float64 if Q
        holds integers); 0.0 for an empty Q.

    Examples
    --------
    >>> import numpy as np
    >>> from gpusvd.testing import orthogonality
    >>> orthogonality(np.eye(3)[:, :2])
    0.0
    """
    xp, (q,) = _namespace(q)
    if rows:
        q = q.conj().T
    k = q.shape[1]
    if k == 0:
        return 0.0
    gram = q.conj().T @ q - xp.eye(k, dtype=q.dtype)
    return _norm(xp, gram) / (k * float(_finfo(q).eps))


def _sv_operands(s, s_ref):
    xp, (s, s_ref) = _namespace(s, s_ref)
    if s.shape != s_ref.shape:
        raise ValueError(f"singular values of shape {s.shape} cannot be compared with "
                         f"reference values of shape {s_ref.shape}")
    return xp, s, s_ref


def relative_sv_error(s, s_ref):
    """Largest relative error of the singular values.

    ``max_i |s_i − s_ref_i| / |s_ref_i|`` with 0/0 taken as 0 and x/0 (x > 0) as
    inf. Both arrays must be sorted the same way (descending) by the caller. This
    is the measure for relatively accurate algorithms (one-sided Jacobi on graded
    matrices, zero-shift bidiagonal QR); backward-stable ones only bound
    `sv_error`. Empty arrays give 0.

    Parameters
    ----------
    s : array_like
        The computed singular values, NumPy or CuPy (as is ``s_ref``).
    s_ref : array_like
        The reference singular values, of the same shape as ``s``.

    Returns
    -------
    float
        The largest relative error (not in units of ε); inf when some reference value
        is 0 and the computed one is not.

    Raises
    ------
    ValueError
        If the shapes differ.

    Examples
    --------
    >>> from gpusvd.testing import relative_sv_error
    >>> relative_sv_error([2.0, 1.0, 0.0], [2.0, 0.5, 0.0])
    1.0
    """
    xp, s, s_ref = _sv_operands(s, s_ref)
    if s.size == 0:
        return 0.0
    error = xp.abs(s - s_ref)
    ref = xp.abs(s_ref)
    zero_ref = ref == 0
    ratio = error / xp.where(zero_ref, 1, ref)
    ratio = xp.where(zero_ref, xp.where(error == 0, 0.0, xp.inf), ratio)
    return float(xp.max(ratio))


def sv_error(s, s_ref):
    """Largest absolute error of the singular values, in units of ‖A‖₂·ε.

    ``max_i |s_i − s_ref_i| / (max_i s_ref_i · ε)``, ε of the precision of ``s``:
    the norm-wise bound (Weyl) that every backward-stable SVD meets with a
    modest constant. For s_ref = 0 the result is 0 if s = 0 too and very large
    otherwise. Empty arrays give 0.

    Parameters
    ----------
    s : array_like
        The computed singular values, NumPy or CuPy (as is ``s_ref``).
    s_ref : array_like
        The reference singular values, of the same shape as ``s``.

    Returns
    -------
    float
        The largest absolute error in units of max_i |s_ref_i|·ε, ε of the precision of
        ``s`` (float64 if it holds integers).

    Raises
    ------
    ValueError
        If the shapes differ.

    Examples
    --------
    >>> import numpy as np
    >>> from gpusvd.testing import sv_error
    >>> eps = np.finfo(np.float64).eps
    >>> sv_error([2.0 + 4 * eps, 1.0], [2.0, 1.0])
    2.0
    """
    xp, s, s_ref = _sv_operands(s, s_ref)
    if s.size == 0:
        return 0.0
    info = _finfo(s)
    error = float(xp.max(xp.abs(s - s_ref)))
    return _ratio(error, float(xp.max(xp.abs(s_ref))), info) / float(info.eps)
