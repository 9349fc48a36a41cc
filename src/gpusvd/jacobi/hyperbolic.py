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

:func:`prepare` (J partitioned, scaling, the QR) and :func:`assemble` (U, Σ, V, J) are
public so that the distributed HSVD (:mod:`gpusvd.distributed.jacobi`) runs its iteration
between the same two steps.
"""

import contextlib
from typing import Any, NamedTuple

import numpy as np

from .._core import validation
from .._core.backend import eager_under_compile, simple_reductions
from .._core.front_end import receive
from .._core.memory import DENSE_HINT, hint_on_exhaustion
from .._core.results import HSVDResult
from .driver import DEFAULTS, MAX_SWEEPS, check_options, normalized, scale_to_unit
from .norms import column_norms
from .orthogonalize import orthogonalize
from .precondition import inverse_permutation
from .small_qr_cuda import stack_qr


class Prepared(NamedTuple):
    """J partitioned, G scaled and, for m > n, reduced to its triangular factor: ``x``
    (batch, n, n) is the factor whose columns the Jacobi method orthogonalizes against
    ``signs``, with all that :func:`assemble` needs. The distributed HSVD iterates on
    ``x`` over its ranks between the two."""

    x: Any
    signs: Any          # J of the columns of x, +1 first, of the real dtype (host)
    perm: Any           # the host column permutation that partitions J
    exponents: Any      # of scale_to_unit
    q: Any              # Q of the row-sorted QR, or None (m == n)
    rows: Any           # the row permutation of that QR, or None
    want_v: bool


def prepare(g, signs, xp, *, want_v):
    """Partition J, scale, and for m > n presort the rows and factor each matrix of ``g``
    (batch, m, n), finite, m >= n >= 1, with one host ``signs``."""
    _, m, n = g.shape
    real = np.finfo(g.dtype).dtype
    perm = np.argsort(-signs, kind="stable")          # J partitioned: +1 first
    g, e = scale_to_unit(xp, g[..., xp.asarray(perm)])
    q = rows = None
    if m > n:
        rows = xp.argsort(-column_norms(g.swapaxes(-1, -2), xp), axis=-1, kind="stable")
        g = xp.take_along_axis(g, rows[..., None], axis=-2)
        q, g = stack_qr(g, xp, n)
    return Prepared(g, signs[perm].astype(real), perm, e, q, rows, want_v)


def assemble(prep, res, xp):
    """(U, S, V, J) stacks from the orthogonalized columns ``res`` of ``prep.x``; V is
    None unless ``prep.want_v``, J the host signs paired with S."""
    u = normalized(xp, res.g, res.s, prep.x.shape[-1])
    if prep.q is not None:
        u = xp.take_along_axis(xp.matmul(prep.q, u),
                               inverse_permutation(xp, prep.rows)[..., None], axis=-2)
    v = None
    if prep.want_v:
        v = res.v[:, xp.asarray(np.argsort(prep.perm)), :]
    return u, xp.ldexp(res.s, prep.exponents[:, None]), v, res.signs


def empty(batch, m, dtype, xp):
    """(U, S, V, J) stacks of the HSVD of G (batch, m, 0)."""
    real = np.finfo(dtype).dtype
    return (xp.zeros((batch, m, 0), dtype), xp.zeros((batch, 0), real),
            xp.zeros((batch, 0, 0), dtype), xp.zeros((batch, 0), real))


def _hsvd_stack(g, signs, xp, options, want_v):
    """HSVD of each matrix of ``g`` (batch, m, n), m >= n >= 1, with one ``signs``:
    :func:`prepare`, orthogonalize, :func:`assemble`."""
    prep = prepare(g, signs, xp, want_v=want_v)
    res = orthogonalize(prep.x, prep.signs, xp, want_v=prep.want_v, options=options)
    return assemble(prep, res, xp)


def check_factor(shape, signs, *, what):
    """The host signs for G of ``shape`` (..., m, n), checked: one ±1 per column; and
    m >= n."""
    m, n = shape[-2:]
    signs = validation.check_signs(signs, n, what=what)
    if m < n:
        raise ValueError(f"{what}: g must have at least as many rows as columns "
                         f"(m >= n), got {m}×{n}")
    return signs


@contextlib.contextmanager
def receive_factor(g, signs, *, options, device, check_finite, what):
    """The front end of :func:`hsvd` and :func:`eigh_factored` (and of the distributed
    HSVD): the Jacobi options (``strategy``, ``variant``, ``shorten``, ``tol``,
    ``max_sweeps`` as a dict) checked, :func:`gpusvd._core.front_end.receive`, then G
    must have m >= n and one sign per column. Yields the
    :class:`~gpusvd._core.front_end.Received`, the host signs and the :class:`Options`."""
    options = check_options(vectors="accumulate", precondition=True, what=what, **options)
    with receive(g, what=what, device=device, check_finite=check_finite) as job:
        yield job, check_factor(job.stack.shape, signs, what=what), options


@eager_under_compile
@hint_on_exhaustion(DENSE_HINT)
@simple_reductions
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
            u, s, v, j = empty(batch, m, stack.dtype, xp)
        else:
            u, s, v, j = _hsvd_stack(stack, signs, xp, options, want_v=True)
        return HSVDResult(job.vectors(u), job.values(s), job.vectors(v),
                          job.vectors(xp.asarray(j)))


@eager_under_compile
@hint_on_exhaustion(DENSE_HINT)
@simple_reductions
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
