"""``gpusvd.svd`` and ``gpusvd.svdvals``: validate, place, dispatch to a method.

The numeric work lives one layer down, in the method's driver; this layer turns the
user's array into a NumPy or CuPy array on the chosen device, checks it, walks a stack
of matrices, and hands results back in the input's array type.
"""

import math

from ._core import validation
from ._core.arrays import place
from ._core.results import SVDResult
from .golub_reinsch import driver as golub_reinsch
from .jacobi import driver as jacobi

# method name -> the driver's one-matrix SVD. "auto" resolves through _choose_method.
_METHODS = {"gr": golub_reinsch.svd, "jacobi": jacobi.svd}


def _choose_method(shape, dtype, on_gpu):
    """The rule of ``method="auto"``: Golub–Reinsch until the Jacobi SVD is benchmarked."""
    return "gr"


def _decompose(a, *, full_matrices, compute_uv, method, overwrite_a, check_finite, device,
               options, what):
    validation.check_choice("method", method, ("auto", *_METHODS))
    validation.check_no_options(options, what=what)
    arr, placement = place(a, device)
    validation.check_matrix(arr, what=what)
    dtype = validation.working_dtype(arr.dtype, allow_complex=False, what=what)
    xp = placement.xp
    with placement.device_context():
        if check_finite:
            validation.check_finite(arr, xp, what=what)
        if method == "auto":
            method = _choose_method(arr.shape, dtype, placement.on_gpu)
        one = _METHODS[method]
        batch, (m, n) = arr.shape[:-2], arr.shape[-2:]
        if arr.dtype != dtype:
            arr = arr.astype(dtype)
            overwrite_a = True  # a private copy now
        mats = arr.reshape(math.prod(batch), m, n)
        parts = [one(mat, xp, full_matrices=full_matrices, compute_uv=compute_uv,
                      overwrite_a=overwrite_a) for mat in mats]
        s = _stack(xp, [p[1] for p in parts], batch, (min(m, n),), dtype)
        if not compute_uv:
            return placement.to_output(s)
        k_u = m if full_matrices else min(m, n)
        k_v = n if full_matrices else min(m, n)
        u = _stack(xp, [p[0] for p in parts], batch, (m, k_u), dtype)
        vh = _stack(xp, [p[2] for p in parts], batch, (k_v, n), dtype)
        return SVDResult(placement.to_output(u), placement.to_output(s),
                         placement.to_output(vh))


def _stack(xp, arrays, batch, shape, dtype):
    if not arrays:
        return xp.zeros((*batch, *shape), dtype=dtype)
    if not batch:
        return arrays[0]
    return xp.stack(arrays).reshape(*batch, *shape)


def svd(a, full_matrices=True, compute_uv=True, *, method="auto", overwrite_a=False,
        check_finite=True, device="auto", **options):
    """Singular value decomposition ``a = U @ diag(S) @ Vh``.

    Parameters
    ----------
    a : (..., M, N) array_like
        Real matrix or stack of matrices: NumPy, CuPy, or anything with ``__dlpack__`` or
        ``__array__`` (PyTorch, JAX, …). Integers are promoted to float64.
    full_matrices : bool, optional
        If true (default) ``U`` is (..., M, M) and ``Vh`` (..., N, N); otherwise
        (..., M, K) and (..., K, N) with K = min(M, N).
    compute_uv : bool, optional
        If false, only the singular values are computed and returned.
    method : {"auto", "gr"}, optional
        ``"gr"``: Golub–Reinsch (Householder bidiagonalization, implicitly shifted QR on
        the bidiagonal; Lahabar & Narayanan 2009). ``"auto"`` picks by shape, dtype and
        device (today always ``"gr"``).
    overwrite_a : bool, optional
        Allow the input's memory to be used as workspace. Otherwise ``a`` is never changed.
    check_finite : bool, optional
        Check that the input holds no NaN or infinity (``ValueError`` if it does).
    device : {"auto", "cpu", "gpu"} or int, optional
        Where to compute. ``"auto"``: on the GPU that holds the input, or for NumPy input
        on a GPU when one is present and the problem is large enough to gain.

    Returns
    -------
    SVDResult(U, S, Vh), or S alone when ``compute_uv`` is false. ``S`` is descending.
    Results have the input's array type and device.

    Raises
    ------
    ValueError
        Input that is not (a stack of) 2-D, non-finite entries, unknown method or option.
    gpusvd.LinAlgError
        The bidiagonal QR did not converge (it practically always does).

    Examples
    --------
    >>> import numpy as np, gpusvd
    >>> a = np.array([[3.0, 0.0], [4.0, 5.0]])
    >>> U, S, Vh = gpusvd.svd(a)
    >>> np.round(S ** 2, 10)
    array([45.,  5.])
    >>> bool(np.allclose(U @ np.diag(S) @ Vh, a))
    True
    """
    return _decompose(a, full_matrices=full_matrices, compute_uv=compute_uv, method=method,
                      overwrite_a=overwrite_a, check_finite=check_finite, device=device,
                      options=options, what="svd")


def svdvals(a, *, method="auto", overwrite_a=False, check_finite=True, device="auto",
            **options):
    """Singular values of ``a`` (or of each matrix of a stack), descending.

    Takes the same arguments as :func:`svd` and does no work on singular vectors.

    Examples
    --------
    >>> import numpy as np, gpusvd
    >>> gpusvd.svdvals(np.diag([1.0, -3.0, 2.0]))
    array([3., 2., 1.])
    """
    return _decompose(a, full_matrices=False, compute_uv=False, method=method,
                      overwrite_a=overwrite_a, check_finite=check_finite, device=device,
                      options=options, what="svdvals")
