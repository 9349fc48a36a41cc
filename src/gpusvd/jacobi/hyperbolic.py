"""Hyperbolic SVD and the eigenproblem of G·J·Gᴴ by one-sided Jacobi (paper 003, §2, §4).

For G (m×n, m >= n) and J = diag(signs), signs ±1, the HSVD (10) is G·V = U·Σ with U's
columns orthonormal and V J-unitary (Vᴴ·J·V = J'), found by orthogonalizing the columns
of G with trigonometric rotations within a sign and hyperbolic ones across (Veselić 1993,
the paper's ref. [41]). As in §4, J is kept partitioned: the columns are permuted so
that the +1 signs come first (n₊ of them), the inner Jacobi never swaps across the
partition, and the signs come back paired with the sorted Σ. Then
H = G·J·Gᴴ = U·diag(J'·Σ²)·Uᴴ: the eigenvalues ±σ² are relatively accurate when G is
(a graded factor of a graded H), and the eigenvectors are U (no V needed).

For m > n, G is first reduced to its triangular factor (rows presorted by norm, QR
without column pivoting, which would mix the partition), G = P_rᵀ·Q·R; the Jacobi
method runs on R and U = P_rᵀ·Q·U_R. Wide G (m < n) is not supported: its columns
cannot all be made J-orthogonal.
"""

import math

import numpy as np

from .._core import validation
from .._core.arrays import place
from .._core.memory import DENSE_HINT, hint_on_exhaustion
from .._core.results import HSVDResult
from .driver import DEFAULTS, MAX_SWEEPS, check_options, normalized, scale_to_unit
from .norms import column_norms
from .orthogonalize import orthogonalize
from .precondition import inverse_permutation
from .small_qr_cuda import stack_qr


def _check_signs(signs, n, what):
    signs = np.asarray(signs.get() if hasattr(signs, "get") else signs)
    if signs.ndim != 1 or signs.shape[0] != n:
        raise ValueError(f"{what}: signs must be a 1-D array of length n = {n} (one per "
                         f"column of g), got shape {signs.shape}")
    if not np.isin(signs, (-1, 1)).all():
        raise ValueError(f"{what}: signs must hold only +1 and -1")
    return signs


def _hsvd_stack(g, signs, xp, options, want_v):
    """HSVD of each matrix of ``g`` (batch, m, n), m >= n >= 1, with one ``signs``."""
    batch, m, n = g.shape
    real = np.finfo(g.dtype).dtype
    perm = np.argsort(-signs, kind="stable")          # J partitioned: +1 first
    g, e = scale_to_unit(xp, g[..., xp.asarray(perm)])
    q = None
    if m > n:
        rows = xp.argsort(-column_norms(g.swapaxes(-1, -2), xp), axis=-1, kind="stable")
        g = xp.take_along_axis(g, rows[..., None], axis=-2)
        q, g = stack_qr(g, xp, n)
    res = orthogonalize(g, signs[perm].astype(real), xp, want_v=want_v, options=options)
    u = normalized(xp, res.g, res.s, n)
    if q is not None:
        u = xp.take_along_axis(xp.matmul(q, u), inverse_permutation(xp, rows)[..., None],
                               axis=-2)
    v = None
    if want_v:
        v = res.v[:, xp.asarray(np.argsort(perm)), :]
    return u, xp.ldexp(res.s, e[:, None]), v, res.signs


def _prepare(g, signs, device, check_finite, what):
    """Validate and place: (stack (batch, m, n) of the working dtype, placement, batch, signs)."""
    arr, placement = place(g, device)
    validation.check_matrix(arr, what=what)
    dtype = validation.working_dtype(arr.dtype, allow_complex=True, what=what)
    batch, (m, n) = arr.shape[:-2], arr.shape[-2:]
    signs = _check_signs(signs, n, what)
    if m < n:
        raise ValueError(f"{what}: g must have at least as many rows as columns (m >= n), "
                         f"got {m}×{n}")
    xp = placement.xp
    with placement.device_context():
        if check_finite:
            validation.check_finite(arr, xp, what=what)
        stack = xp.asarray(arr, dtype=dtype).reshape(math.prod(batch), m, n)
    return stack, placement, batch, signs


@hint_on_exhaustion(DENSE_HINT)
def hsvd(g, signs, *, strategy=DEFAULTS.strategy, variant=DEFAULTS.variant,
         shorten=DEFAULTS.shorten, tol=None, max_sweeps=MAX_SWEEPS, check_finite=True,
         device="auto"):
    """Hyperbolic SVD ``G @ V = U @ diag(S)`` with ``Vᴴ @ diag(signs) @ V = diag(J)``.

    Parameters
    ----------
    g : (..., M, N) array_like, M >= N
        Real or complex matrix or stack (float32/64, complex64/128).
    signs : (N,) array_like of +1 and -1
        J = diag(signs), one sign per column of ``g``.
    strategy, variant, shorten, tol, max_sweeps, check_finite, device
        As in :func:`gpusvd.jacobi.jacobi_svd`.

    Returns
    -------
    HSVDResult(U, S, V, J): U (..., M, N) orthonormal columns, S (..., N) descending,
    V (..., N, N) J-unitary, J (..., N) the signs paired with S, of the real dtype.

    Raises
    ------
    ValueError
        Bad input, signs not ±1 or of the wrong length, M < N, unknown option.
    gpusvd.LinAlgError
        No convergence within ``max_sweeps``.

    Examples
    --------
    >>> import numpy as np
    >>> from gpusvd.jacobi import hsvd
    >>> g = np.array([[2.0, 1.0], [0.0, 1.0]])
    >>> U, S, V, J = hsvd(g, [1, -1])
    >>> bool(np.allclose(g @ V, U * S)), bool(np.allclose(V.T @ np.diag([1, -1]) @ V, np.diag(J)))
    (True, True)
    """
    options = check_options(strategy, variant, shorten, "accumulate", tol, max_sweeps, True)
    stack, placement, batch, signs = _prepare(g, signs, device, check_finite, "hsvd")
    xp = placement.xp
    _, m, n = stack.shape
    dtype = stack.dtype
    with placement.device_context():
        if n == 0:
            real = np.finfo(dtype).dtype
            u, s = xp.zeros((len(stack), m, 0), dtype), xp.zeros((len(stack), 0), real)
            v, j = xp.zeros((len(stack), 0, 0), dtype), np.zeros((len(stack), 0), real)
        else:
            u, s, v, j = _hsvd_stack(stack, signs, xp, options, want_v=True)
        return HSVDResult(placement.to_output(u.reshape(*batch, m, n)),
                          placement.to_output(s.reshape(*batch, n)),
                          placement.to_output(v.reshape(*batch, n, n)),
                          placement.to_output(xp.asarray(j).reshape(*batch, n)))


@hint_on_exhaustion(DENSE_HINT)
def eigh_factored(g, signs, *, strategy=DEFAULTS.strategy, variant=DEFAULTS.variant,
                  shorten=DEFAULTS.shorten, tol=None, max_sweeps=MAX_SWEEPS,
                  check_finite=True, device="auto"):
    """Eigenvalues and eigenvectors of H = G·diag(signs)·Gᴴ from the factor G, via the HSVD.

    Like :func:`scipy.linalg.eigh` applied to H, but H is never formed: the eigenvalues
    ±σᵢ² come out to high relative accuracy when G is graded (Veselić 1993).

    Parameters
    ----------
    g : (..., M, N) array_like, M >= N
        The factor G: real or complex matrix or stack (float32/64, complex64/128).
    signs : (N,) array_like of +1 and -1
        J = diag(signs), one sign per column of ``g``.
    strategy, variant, shorten, tol, max_sweeps, check_finite, device
        As in :func:`gpusvd.jacobi.jacobi_svd`.

    Returns
    -------
    w : (..., M) ascending eigenvalues (M − N of them zero: rank H <= N)
    v : (..., M, M) orthonormal eigenvectors, column i for ``w[..., i]``

    Raises
    ------
    ValueError
        Bad input, signs not ±1 or of the wrong length, M < N, unknown option.
    gpusvd.LinAlgError
        No convergence within ``max_sweeps``.

    Examples
    --------
    >>> import numpy as np
    >>> from gpusvd.jacobi import eigh_factored
    >>> g = np.array([[2.0, 1.0], [0.0, 1.0]])
    >>> w, v = eigh_factored(g, [1, -1])
    >>> bool(np.allclose(w, np.linalg.eigvalsh(g @ np.diag([1.0, -1.0]) @ g.T)))
    True
    """
    options = check_options(strategy, variant, shorten, "accumulate", tol, max_sweeps, True)
    stack, placement, batch, signs = _prepare(g, signs, device, check_finite, "eigh_factored")
    xp = placement.xp
    _, m, n = stack.shape
    dtype = stack.dtype
    with placement.device_context():
        real = np.finfo(dtype).dtype
        if n == 0:
            w = xp.zeros((len(stack), 0), real)
            u = xp.zeros((len(stack), m, 0), dtype)
        else:
            u, s, _, j = _hsvd_stack(stack, signs, xp, options, want_v=False)
            w = s * s * xp.asarray(j, dtype=real)
        if m > n:
            w = xp.concatenate([w, xp.zeros((len(stack), m - n), real)], axis=1)
            u = xp.concatenate([u, stack_qr(u, xp, m)[0][:, :, n:]], axis=2)
        order = xp.argsort(w, axis=1, kind="stable")
        w = xp.take_along_axis(w, order, axis=1)
        u = xp.take_along_axis(u, order[:, None, :], axis=2)
        return (placement.to_output(w.reshape(*batch, m)),
                placement.to_output(u.reshape(*batch, m, m)))
