"""``gpusvd.takagi``: validate, place, choose a method, hand back (paper 002).

The numeric work is in :mod:`gpusvd.takagi.driver` (the paper's Jacobi method) and
:mod:`gpusvd.takagi.embedding` (a real symmetric eigenproblem twice the size); this layer
turns the user's array into a NumPy or CuPy array on the chosen device, checks that it
is square, finite and symmetric (Aᵀ = A, not Hermitian), picks the method for
``method="auto"``, and returns results in the input's array type.
"""

import numpy as np

from .._core import validation
from .. import autodiff
from .._core.backend import simple_reductions, to_host
from .._core.front_end import receive
from .._core.errors import LinAlgError
from .._core.memory import DENSE_HINT, hint_on_exhaustion
from .._core.results import TakagiResult
from .._core.scaling import unit_phase
from . import driver, embedding

# Relative asymmetry ‖A − Aᵀ‖_F / ‖A‖_F accepted, in units of n·ε: the accuracy asked of
# the factorization itself (a residual below 100·n·ε), which a matrix further from
# symmetric cannot meet. It is factored as (A + Aᵀ)/2.
SYMMETRY_TOL = 100

_COMPLEX = {np.dtype(np.float32): np.dtype(np.complex64),
            np.dtype(np.float64): np.dtype(np.complex128)}

METHODS = ("auto", "jacobi", "eigh")


def _inspect(mats, xp):
    """Whether each matrix of the stack ``mats`` (batch, n, n) is diagonal (a host bool
    array), after checking that each is symmetric to ``SYMMETRY_TOL``·n·ε relative to
    ‖A‖_F (``ValueError`` naming how far the first that is not is): one host
    synchronization for the stack."""
    batch, n = mats.shape[:2]
    if batch == 0 or n == 0:
        return np.ones(batch, bool)
    sums = validation.asymmetry_sums(mats, xp, conjugate=False)
    off = (mats != 0) & ~xp.eye(n, dtype=bool)
    found = to_host(xp.concatenate([sums, off.any(axis=(1, 2))[None].astype(sums.dtype)]))
    _check_symmetric(validation.relative_asymmetry(found), n, mats.dtype)
    return found[2] == 0


def _check_symmetric(asymmetry, n, dtype):
    """``ValueError`` naming the first ‖A − Aᵀ‖_F/‖A‖_F of the host array ``asymmetry``
    (one per matrix) above ``SYMMETRY_TOL``·n·ε."""
    allowed = SYMMETRY_TOL * n * float(np.finfo(dtype).eps)
    if (asymmetry > allowed).any():
        first = asymmetry[np.flatnonzero(asymmetry > allowed)[0]]
        raise ValueError(f"takagi: the input is not symmetric: ‖A − Aᵀ‖_F/‖A‖_F = "
                         f"{first:.3g}, above the tolerance {allowed:.3g} "
                         f"({SYMMETRY_TOL}·n·ε); Takagi factorization needs A = Aᵀ "
                         "(complex symmetric, not Hermitian)")


def _diagonal_takagi(mats, xp):
    """The Takagi factorization of diagonal matrices in closed form: σ_k = |d_k|, u_k =
    e_k·√(d_k/|d_k|) (e_k where d_k = 0), in descending σ with ties in index order, so
    that the zero matrix and the identity give U = I and any diagonal input a phase
    matrix whose columns follow the values' order, whatever the method and device."""
    d = xp.diagonal(mats, axis1=1, axis2=2)
    s = xp.abs(d)
    phase = xp.sqrt(unit_phase(d))  # 1 where d = 0; unit also where d is subnormal
    order = (np.argsort(-s, axis=1, kind="stable") if xp is np
             else xp.argsort(-s, axis=1))  # CuPy's sort is stable
    n = mats.shape[-1]
    eye = xp.broadcast_to(xp.eye(n, dtype=mats.dtype), mats.shape)
    u = xp.take_along_axis(eye, order[:, None, :], axis=2)
    u = u * xp.take_along_axis(phase, order, axis=1)[:, None, :]
    return xp.take_along_axis(s, order, axis=1), u


def _sweeps(mats, xp, tol, max_sweeps, *, fallback):
    """The Jacobi sweeps of the stack; where they do not converge, ``fallback`` (the
    default method on the GPU, not asked for by name nor controlled) takes the
    eigensolver instead of raising. Some degenerate inputs converge only linearly under
    the sweeps: a 60×60 matrix of 35 zero and 25 equal values (thewalrus's
    test_degenerate) was still at 68·n·ε after 50 sweeps, the off-diagonal norm falling
    by about a quarter a sweep."""
    try:
        return driver.factorize_stack(mats, xp, tol=tol, max_sweeps=max_sweeps)
    except LinAlgError:
        if not fallback:
            raise
    return embedding.factorize(mats, xp)


def _one_launch(mats, xp, tol, max_sweeps, *, fallback):
    """The sweeps of a GPU stack of matrices of one tile (:func:`.driver.one_launch`):
    the symmetry check, the scaling, the sweeps and a diagonal matrix's closed form in
    one launch and one host synchronization (:func:`.driver.factorize_one_launch`).
    Matrices whose sweeps do not converge take the eigensolver where ``fallback``
    holds (as :func:`_sweeps`), else raise."""
    s, u, found = driver.factorize_one_launch(mats, xp, tol=tol, max_sweeps=max_sweeps)
    _check_symmetric(found.asymmetry, mats.shape[-1], mats.dtype)
    if not found.converged.all():
        if not fallback:
            raise driver.not_converged(max_sweeps, float(found.off[~found.converged].max()),
                                       tol)
        which = xp.asarray(np.flatnonzero(~found.converged))
        s[which], u[which] = embedding.factorize(mats[which], xp)
    return s, u


@hint_on_exhaustion(DENSE_HINT)
@simple_reductions
def takagi(a, *, method="auto", device="auto", tol=None, max_sweeps=driver.MAX_SWEEPS,
           check_finite=True, gauge_invariant=False, broadening=None):
    """Takagi factorization ``a = U @ diag(S) @ U.T`` of a complex symmetric matrix.

    The same values as the singular values of ``a``, and ``U`` in place of both singular
    vector matrices, by one of two methods:

    - ``"jacobi"``: the Jacobi method with chess-tournament ordering (Sachdev, Vanjani &
      Hall, *Takagi Factorization on GPU using CUDA*): sweeps of parallel steps of 2×2
      complex symmetric diagonalizations, blocked on the GPU for large matrices;
    - ``"eigh"``: the real symmetric eigenproblem of [[Re A, Im A], [Im A, −Re A]] (2N ×
      2N), whose eigenvalues are ±S and whose eigenvectors of +S hold U's real and
      imaginary parts, by LAPACK's (or cuSOLVER's) eigensolver, then a QR of U that
      keeps it unitary where values are near zero (:mod:`gpusvd.takagi.embedding`);
    - ``"auto"`` (default): ``"eigh"`` on the CPU, 9–31× faster than the Jacobi sweeps
      there at N = 64–500 with the same accuracy; ``"jacobi"`` on the GPU (where
      ``"eigh"`` is the slower, BENCHMARKS.md), falling back to ``"eigh"`` where its
      sweeps do not converge in 50 (some degenerate inputs converge only linearly); and
      ``"jacobi"`` wherever ``tol`` or a ``max_sweeps`` other than 50 is given (they
      control its sweeps, and not converging raises).

    Parameters
    ----------
    a : (..., N, N) array_like
        Complex symmetric (``a.T == a``, not Hermitian) matrix or stack of matrices:
        NumPy, CuPy, or anything with ``__dlpack__`` or ``__array__``. Real symmetric
        input is accepted (``U`` is complex even then); float32 and complex64 compute in
        complex64, other real and integer input in complex128.
    method : {"auto", "jacobi", "eigh"}, optional
        The method, above.
    device : {"auto", "cpu", "gpu"} or int, optional
        Where to compute. ``"auto"``: on the GPU that holds the input, or for NumPy
        input on a GPU when one is present and the matrix is large enough to gain.
    tol : float in (0, 1), optional
        ``"jacobi"`` only: stop when the off-diagonal Frobenius norm is at most
        ``tol``·‖A‖_F. Default 4·N·ε of the working precision.
    max_sweeps : int >= 1, optional
        ``"jacobi"`` only: sweeps allowed before :class:`gpusvd.LinAlgError` is raised
        (default 50, which ``"eigh"`` accepts and ignores).
    check_finite : bool, optional
        Check that the input holds no NaN or infinity (``ValueError`` if it does).
    gauge_invariant, broadening : optional
        The derivative's rule at repeated and zero values, as :func:`gpusvd.svd`'s. A
        torch tensor that is differentiated or compiled, or a JAX array inside ``jit``,
        ``vmap``, ``grad`` or ``jvp``, goes through a torch operator or a JAX primitive
        with reverse and forward mode and second derivatives: those of the factorization
        of (A + Aᵀ)/2 (U is fixed up to each column's sign, so its derivative exists
        where the values are distinct and nonzero; elsewhere :func:`gpusvd.svd`'s rule
        applies: a loss that reads the columns concerned gets NaN).

    Returns
    -------
    TakagiResult(S, U)
        ``S`` (..., N) real, non-negative, descending; ``U`` (..., N, N) unitary, complex.
        A diagonal matrix gets its closed form on every method and device: U a phase
        matrix with columns in the values' order, ties in index order (U = I for the
        zero matrix and the identity). Results have the input's array type and device.

    Raises
    ------
    ValueError
        Input that is not (a stack of) square matrices, not symmetric within 100·N·ε
        relative to ‖A‖_F (the message says how far it is), or not finite; an unknown
        ``method``; a bad ``tol`` or ``max_sweeps``, or either with ``method="eigh"``.
    gpusvd.LinAlgError
        The sweeps did not converge within ``max_sweeps``.

    Examples
    --------
    >>> import numpy as np
    >>> from gpusvd.takagi import takagi
    >>> a = np.array([[1.0, 2.0j], [2.0j, 3.0]])
    >>> S, U = takagi(a, device="cpu")
    >>> np.round(S, 6)
    array([3.828427, 1.828427])
    >>> bool(np.allclose(U @ np.diag(S) @ U.T, a))
    True
    """
    validation.check_choice("method", method, METHODS)
    max_sweeps = validation.check_count("max_sweeps", max_sweeps, what="takagi")
    tol = validation.check_tol(tol, what="takagi")
    validation.check_gradient_options(gauge_invariant, broadening)
    controlled = tol is not None or max_sweeps != driver.MAX_SWEEPS
    if method == "eigh" and controlled:
        raise ValueError("takagi: tol and max_sweeps control the sweeps of "
                         "method='jacobi'; method='eigh' takes neither")
    binding = autodiff.binding_for(a)
    if binding is not None:
        kw = dict(method=method, device=device, tol=tol, max_sweeps=max_sweeps,
                  check_finite=check_finite)
        return TakagiResult(*binding.takagi(a, gauge_invariant=gauge_invariant,
                                            broadening=broadening, kw=kw))
    with receive(a, what="takagi", device=device, check_finite=check_finite,
                 working=lambda dtype: _COMPLEX.get(dtype, dtype)) as job:
        mats, xp = job.stack, job.xp
        batch, n, n_cols = mats.shape
        if n != n_cols:
            raise ValueError(f"takagi expects square matrices (..., N, N); got shape "
                             f"{(*job.batch, n, n_cols)}")
        fallback = method == "auto" and not controlled
        if method == "auto":
            method = "eigh" if xp is np and not controlled else "jacobi"
        if method == "jacobi" and driver.one_launch(n, xp):
            tol = driver.default_tol(n, mats.dtype) if tol is None else tol
            s, u = _one_launch(mats, xp, tol, max_sweeps, fallback=fallback)
            return TakagiResult(job.values(s), job.vectors(u))
        diagonal = _inspect(mats, xp)
        if diagonal.all():  # the zero stack and the empty stack included
            s, u = _diagonal_takagi(mats, xp)
        elif method == "eigh":
            s, u = embedding.factorize(mats, xp)
        else:
            tol = driver.default_tol(n, mats.dtype) if tol is None else tol
            s, u = _sweeps(mats, xp, tol, max_sweeps, fallback=fallback)
        if diagonal.any() and not diagonal.all():
            which = xp.asarray(np.flatnonzero(diagonal))
            s[which], u[which] = _diagonal_takagi(mats[which], xp)
        return TakagiResult(job.values(s), job.vectors(u))
