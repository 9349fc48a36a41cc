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

import contextlib

import numpy as np

from .._core import validation
from .._core.front_end import receive
from .._core.memory import DENSE_HINT, hint_on_exhaustion
from .._core.results import HSVDResult
from .driver import DEFAULTS, MAX_SWEEPS, check_options, normalized, scale_to_unit
from .norms import column_norms
from .orthogonalize import orthogonalize
from .precondition import inverse_permutation
from .small_qr_cuda import stack_qr


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


@contextlib.contextmanager
def receive_factor(g, signs, *, options, device, check_finite, what):
    """The front end of :func:`hsvd` and :func:`eigh_factored` (and of the distributed
    HSVD): the Jacobi options (``strategy``, ``variant``, ``shorten``, ``tol``,
    ``max_sweeps`` as a dict) checked, :func:`gpusvd._core.front_end.receive`, then G
    must have m >= n and one sign per column. Yields the
    :class:`~gpusvd._core.front_end.Received`, the host signs and the :class:`Options`."""
    options = check_options(vectors="accumulate", precondition=True, what=what, **options)
    with receive(g, what=what, device=device, check_finite=check_finite) as job:
        _, m, n = job.stack.shape
        signs = validation.check_signs(signs, n, what=what)
        if m < n:
            raise ValueError(f"{what}: g must have at least as many rows as columns "
                             f"(m >= n), got {m}×{n}")
        yield job, signs, options


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
    options = dict(strategy=strategy, variant=variant, shorten=shorten, tol=tol,
                   max_sweeps=max_sweeps)
    with receive_factor(g, signs, options=options, device=device, check_finite=check_finite,
                        what="hsvd") as (job, signs, options):
        stack, xp, (batch, m, n) = job.stack, job.xp, job.stack.shape
        if n == 0:
            real = np.finfo(stack.dtype).dtype
            u, s = xp.zeros((batch, m, 0), stack.dtype), xp.zeros((batch, 0), real)
            v, j = xp.zeros((batch, 0, 0), stack.dtype), xp.zeros((batch, 0), real)
        else:
            u, s, v, j = _hsvd_stack(stack, signs, xp, options, want_v=True)
        return HSVDResult(job.vectors(u), job.values(s), job.vectors(v),
                          job.vectors(xp.asarray(j)))


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
    options = dict(strategy=strategy, variant=variant, shorten=shorten, tol=tol,
                   max_sweeps=max_sweeps)
    with receive_factor(g, signs, options=options, device=device, check_finite=check_finite,
                        what="eigh_factored") as (job, signs, options):
        stack, xp, (batch, m, n) = job.stack, job.xp, job.stack.shape
        real = np.finfo(stack.dtype).dtype
        if n == 0:
            w = xp.zeros((batch, 0), real)
            u = xp.zeros((batch, m, 0), stack.dtype)
        else:
            u, s, _, j = _hsvd_stack(stack, signs, xp, options, want_v=False)
            w = s * s * xp.asarray(j, dtype=real)
        if m > n:
            w = xp.concatenate([w, xp.zeros((batch, m - n), real)], axis=1)
            u = xp.concatenate([u, stack_qr(u, xp, m)[0][:, :, n:]], axis=2)
        order = xp.argsort(w, axis=1, kind="stable")
        w = xp.take_along_axis(w, order, axis=1)
        u = xp.take_along_axis(u, order[:, None, :], axis=2)
        return job.values(w, power=2), job.vectors(u)
