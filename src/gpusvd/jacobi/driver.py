"""Blocked one-sided Jacobi SVD (Novaković 2015, paper 003): ``gpusvd.jacobi_svd``.

1. A wide matrix is decomposed through its conjugate transpose; each matrix is scaled by
   a power of two so that its largest entry lies in [1/2, 1) (exact; the Gram matrices of
   the shortening cannot overflow).
2. Preconditioning like DGEJSV (:mod:`.precondition`): rows presorted, QR with column
   pivoting, the Jacobi method on X = Rᴴ.
3. One-sided Jacobi on the columns (:mod:`.orthogonalize`): small matrices in one batched
   pointwise call, larger ones by the blocked method of §2 and §4 (:mod:`.blocked`).
4. σ = column norms (DRDSSQ), U = G·Σ⁻¹ completed to an orthonormal basis where σ is at
   or below the floor of the columns the Jacobi method leaves alone (:data:`.inner.U_FLOOR`);
   V accumulated from the rotations, or solved from X·V = G (``vectors="solve"``, the
   paper's (5): triangular after preconditioning).
"""

import importlib
from typing import Any, NamedTuple

import numpy as np

from .._core import validation
from .._core.backend import eager_under_compile, simple_reductions, to_host
from .._core.front_end import receive
from .._core.memory import DENSE_HINT, hint_on_exhaustion
from .._core.results import SVDResult
from .._core.threads import single_threaded_blas
from .inner import column_floor
from .orthogonalize import Options, orthogonalize
from .precondition import inverse_permutation, precondition
from .small_qr_cuda import stack_qr
from .strategies import NAMES

VARIANTS = ("full-block", "block-oriented")
SHORTENINGS = ("cholesky", "qr")
VECTORS = ("accumulate", "solve")
# Block sweeps allowed by default: DGESVJ allows 30 sweeps; the paper saw up to about 30
# block sweeps with the Brent–Luk strategy (Fig. 7), so some headroom above that.
MAX_SWEEPS = 50
DEFAULTS = Options(strategy="row-reverse", variant="full-block", shorten="cholesky",
                   vectors="accumulate", tol=None, max_sweeps=MAX_SWEEPS, precondition=True)


def check_options(strategy, variant, shorten, vectors, tol, max_sweeps, precondition, *,
                  what):
    """Validate the options of the Jacobi drivers; return them as :class:`Options`."""
    validation.check_choice("strategy", strategy, NAMES)
    validation.check_choice("variant", variant, VARIANTS)
    validation.check_choice("shorten", shorten, SHORTENINGS)
    validation.check_choice("vectors", vectors, VECTORS)
    return Options(strategy, variant, shorten, vectors, validation.check_tol(tol, what=what),
                   validation.check_count("max_sweeps", max_sweeps, what=what),
                   bool(precondition))


def scale_to_unit(xp, a):
    """``a`` (batch, m, n) times 2^-e per matrix so that max|a| is in [1/2, 1); returns e."""
    big = xp.abs(a).max(axis=(1, 2))
    _, e = xp.frexp(xp.where(big > 0, big, 1))
    factor = xp.ldexp(xp.ones_like(big), -e)
    return a * factor[:, None, None].astype(a.dtype), e


def normalized(xp, g, s, k):
    """U = G·Σ⁻¹ for each matrix of the scaled G, completed to k columns where σ is at or
    below :data:`.inner.U_FLOOR`.

    Those columns were not rotated (:mod:`.inner`), so they need not be orthogonal to
    the others, and a complex64 one divided by its subnormal σ overflows; they are
    completed as for σ = 0, their σ kept. ``s`` is descending, so the columns to complete
    are the last ones. The whole stack is completed at once (on the GPU in one launch for
    small matrices): by the columns of Q of the Householder QR of U with those columns
    zero, whose reflectors for them are the identity, so that Q's columns there are
    orthonormal to the columns above the floor; those are kept as they are.
    """
    batch, m, n = g.shape
    floor = column_floor(g.dtype)
    above = s > floor
    u = g / xp.where(above, s, 1)[:, None, :].astype(g.dtype)
    # The one host synchronization. s is descending, so its column k − 1 says whether
    # any of the first k is at or below the floor; read on the host, as CuPy's reductions
    # compile a kernel per size class on their first use (6.6 s of the H100's first
    # svd(method="jacobi")).
    if k <= n and not (k and (to_host(s[:, k - 1]) <= floor).any()):
        return u[:, :, :k]
    u = xp.where(above[:, None, :], u, 0)
    q = stack_qr(u, xp, max(k, n))[0][:, :, :k]
    keep = xp.zeros((batch, k), bool)
    keep[:, :min(n, k)] = above[:, :k]
    wide = xp.zeros_like(q)
    wide[:, :, :min(n, k)] = u[:, :, :k]
    return xp.where(keep[:, None, :], wide, q)


# The module whose solve_triangular twin serves arrays of the namespace, by its name;
# imported when first used (SciPy's linalg costs import time, cupyx exists only with CuPy).
_LINALG = {"numpy": "scipy.linalg", "cupy": "cupyx.scipy.linalg"}


def solve_v(xp, x, g, lower):
    """V from X·V = G for each matrix (triangular X after preconditioning)."""
    if lower is None:
        return xp.linalg.solve(x, g)
    if len(x) == 0:
        return g.copy()
    solve_triangular = importlib.import_module(_LINALG[xp.__name__]).solve_triangular
    return solve_triangular(x, g, lower=lower)  # batched in both (SciPy >= 1.15, CuPy)


class Prepared(NamedTuple):
    """Steps 1–2 of the module docstring done: ``x`` (batch, m', n) is the factor whose
    columns the Jacobi method orthogonalizes (Rᴴ after preconditioning, else A scaled),
    with all that :func:`assemble` needs. The distributed driver iterates on ``x`` over
    its ranks between the two."""

    shape: tuple        # (m, n) of the (tall) matrix
    x: Any
    signs: Any          # ones: J = I
    exponents: Any      # of scale_to_unit
    pre: Any            # precondition()'s result, or None
    want_v: bool
    full_matrices: bool
    compute_uv: bool
    options: Options


def prepare(a, xp, *, full_matrices, compute_uv, options):
    """Scale and precondition each matrix of ``a`` (batch, m, n), finite, m >= n >= 1."""
    _, m, n = a.shape
    if options.vectors == "solve" and not options.precondition and m != n:
        raise ValueError("vectors='solve' needs a square matrix when precondition=False")
    a, e = scale_to_unit(xp, a)
    pre = None
    x = a
    if options.precondition:
        pre = precondition(a, xp, want_q=compute_uv, complete=full_matrices and m > n)
        x = pre.r.conj().swapaxes(-1, -2)
    return Prepared((m, n), x, np.ones(n, np.finfo(a.dtype).dtype), e, pre,
                    compute_uv and options.vectors == "accumulate", full_matrices,
                    compute_uv, options)


def assemble(prep, res, xp):
    """(U, S, Vh) stacks from the orthogonalized columns ``res`` of ``prep.x`` (step 4;
    U, Vh None without vectors)."""
    (m, n), pre = prep.shape, prep.pre
    s = xp.ldexp(res.s, prep.exponents[:, None])
    if not prep.compute_uv:
        return None, s, None
    v = res.v if prep.want_v else solve_v(xp, prep.x, res.g,
                                          True if pre is not None else None)
    if pre is not None:
        # A = P_rᵀ·(Q·V)·Σ·(P_c·U_x)ᴴ with U_x = G·Σ⁻¹.
        u_x = normalized(xp, res.g, res.s, n)
        qv = xp.matmul(pre.q[..., :n], v)
        if prep.full_matrices and m > n:
            qv = xp.concatenate([qv, pre.q[..., n:]], axis=-1)
        u = xp.take_along_axis(qv, inverse_permutation(xp, pre.rows)[..., None], axis=-2)
        right = xp.take_along_axis(u_x, inverse_permutation(xp, pre.cols)[..., None], axis=-2)
    else:
        u = normalized(xp, res.g, res.s, m if prep.full_matrices else n)
        right = v
    return u, s, right.conj().swapaxes(-1, -2)


def svd_stack(a, xp, *, full_matrices, compute_uv, options):
    """Jacobi SVD of each matrix of ``a`` (batch, m, n), finite, m >= n >= 1:
    :func:`prepare`, orthogonalize, :func:`assemble`.

    Returns (U, S, Vh) stacks (U, Vh None without ``compute_uv``); ``a`` is not changed.
    """
    prep = prepare(a, xp, full_matrices=full_matrices, compute_uv=compute_uv, options=options)
    res = orthogonalize(prep.x, prep.signs, xp, want_v=prep.want_v, options=options)
    return assemble(prep, res, xp)


def _empty(batch, m, n, xp, dtype, full_matrices):
    real = np.finfo(dtype).dtype
    s = xp.zeros((batch, 0), real)
    u = xp.zeros((batch, m, m if full_matrices else 0), dtype)
    vh = xp.zeros((batch, n if full_matrices else 0, n), dtype)
    if full_matrices:
        u[:] = xp.eye(m, dtype=dtype)
        vh[:] = xp.eye(n, dtype=dtype)
    return u, s, vh


# The sweeps interleave the parallel Numba kernel with GEMMs of one block pair, so BLAS runs
# one thread for the whole of it (_core/threads.py: 500×500 on 2 cores 2.13 → 1.01 s).
@single_threaded_blas()
def decompose(a, xp, *, full_matrices, compute_uv, options):
    """Any stack (batch, m, n): empty, wide (through Aᴴ) or tall."""
    batch, m, n = a.shape
    if m == 0 or n == 0:
        return _empty(batch, m, n, xp, a.dtype, full_matrices)
    if m < n:
        u, s, vh = svd_stack(a.conj().swapaxes(-1, -2), xp, full_matrices=full_matrices,
                             compute_uv=compute_uv, options=options)
        if not compute_uv:
            return None, s, None
        return vh.conj().swapaxes(-1, -2), s, u.conj().swapaxes(-1, -2)
    return svd_stack(a, xp, full_matrices=full_matrices, compute_uv=compute_uv,
                     options=options)


@eager_under_compile
@hint_on_exhaustion(DENSE_HINT)
@simple_reductions
def jacobi_svd(a, full_matrices=True, compute_uv=True, *, strategy=DEFAULTS.strategy,
               variant=DEFAULTS.variant, shorten=DEFAULTS.shorten,
               vectors=DEFAULTS.vectors, tol=None, max_sweeps=MAX_SWEEPS, precondition=True,
               overwrite_a=False, check_finite=True, device="auto"):
    """Singular value decomposition by the blocked one-sided Jacobi method (paper 003).

    Singular values are computed to high relative accuracy: for column-, row- and
    two-sided-graded matrices each one to nearly full precision down to about 2^-90·σ₁
    in single and 2^-216·σ₁ in double precision. Columns of norm below about 2^-102·σ₁
    and 2^-242·σ₁ (:data:`gpusvd.jacobi.inner.U_FLOOR`) are not rotated: their σ are
    accurate to ε·σ₁, their singular vectors are completed to an orthonormal basis, and
    the σ just above them lose about (U_FLOOR·σ₁/σ)² relatively.

    Parameters
    ----------
    a : (..., M, N) array_like
        Real or complex matrix or stack (NumPy, CuPy, or anything with ``__dlpack__`` or
        ``__array__``); float32, float64, complex64, complex128 (integers promoted).
    full_matrices, compute_uv : bool, optional
        As in :func:`gpusvd.svd`.
    strategy : str, optional
        Pivot strategy (:func:`gpusvd.jacobi.strategies.pivot_strategy`), at both levels;
        ``"row-reverse"`` (default, the paper's fastest), ``"column-reverse"``, ``"row"``,
        ``"column"``, ``"brent-luk"``, ``"modulus"``, or the sequential ``"row-cyclic"``,
        ``"column-cyclic"`` (at the block level; the inner Jacobi then uses R∥ or C∥).
    variant : {"full-block", "block-oriented"}, optional
        Inner Jacobi on each block pair to convergence, or one inner sweep.
    shorten : {"cholesky", "qr"}, optional
        Shortening of a block pair: Cholesky factor of its Gram matrix, or R of its QR.
    vectors : {"accumulate", "solve"}, optional
        V from the accumulated rotations, or from the triangular system X·V = G.
    tol : float in (0, 1), optional
        Relative orthogonality threshold c(ε); default u·√(2b) blocked, u·√m pointwise.
    max_sweeps : int >= 1, optional
        Block sweeps (or sweeps of the pointwise method) before ``LinAlgError``.
    precondition : bool, optional
        QR preconditioning like DGEJSV (default). Without it the Jacobi method runs on A.
    overwrite_a : bool, optional
        Accepted for SciPy compatibility; ``a`` is never written to.
    check_finite : bool, optional
        Check that the input holds no NaN or infinity (``ValueError`` if it does).
    device : {"auto", "cpu", "gpu"} or int, optional
        Where to compute, as in :func:`gpusvd.svd`.

    Returns
    -------
    SVDResult(U, S, Vh), or S alone when ``compute_uv`` is false; ``S`` descending, of
    the real dtype.

    Raises
    ------
    ValueError
        Bad input (not (a stack of) 2-D, non-finite, unsupported dtype) or unknown option.
    gpusvd.LinAlgError
        No convergence within ``max_sweeps``.

    Examples
    --------
    >>> import numpy as np
    >>> from gpusvd.jacobi import jacobi_svd
    >>> a = np.array([[1e-20, 0.0], [1.0, 1e-30]])
    >>> s = jacobi_svd(a, compute_uv=False)
    >>> float(s[1] / 1e-50)          # the tiny singular value, to full relative accuracy
    1.0
    >>> U, S, Vh = jacobi_svd(np.array([[3.0, 0.0], [4.0, 5.0]]))
    >>> bool(np.allclose(U @ np.diag(S) @ Vh, [[3, 0], [4, 5]]))
    True
    """
    options = check_options(strategy, variant, shorten, vectors, tol, max_sweeps, precondition,
                            what="jacobi_svd")
    with receive(a, what="jacobi_svd", device=device, check_finite=check_finite) as job:
        u, s, vh = decompose(job.stack, job.xp, full_matrices=full_matrices,
                             compute_uv=compute_uv, options=options)
        if not compute_uv:
            return job.values(s)
        return SVDResult(job.vectors(u), job.values(s), job.vectors(vh))
