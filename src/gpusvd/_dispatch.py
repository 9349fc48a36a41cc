"""``gpusvd.svd`` and ``gpusvd.svdvals``: validate, place, choose a method, dispatch.

The numeric work lives one layer down, in the method's driver; this layer turns the
user's array into a NumPy or CuPy array on the chosen device, checks it, picks the method
for ``method="auto"`` (the rule and its measurements: the Notes of :func:`svd`), hands
the stack of matrices to the method, and hands results back in the input's array type.
"""

import contextlib
import math

import numpy as np

from ._core import lapack, tunables, validation
from ._core.arrays import place
from ._core.backend import simple_reductions
from ._core.errors import LinAlgError
from ._core.front_end import directly, receive
from ._core.memory import DENSE_HINT, check_host_memory, hint_on_exhaustion
from ._core.results import SVDResult
from ._core.threads import single_threaded_blas
from . import autodiff
from .golub_reinsch import driver as golub_reinsch
from .jacobi import driver as jacobi
from .jacobi import small_svd, small_svd_cuda
from .jacobi.blocked import block_width
from .polar import svd as polar
from .polar.eigh import hermitian_svd


def _matrix_by_matrix(decompose_one):
    """A stack method from a one-matrix driver ``decompose_one(mat, xp, **kw)``, one matrix
    after another (Golub–Reinsch: a sequential host QR loop per matrix; polar: its steps
    are factorizations of the whole matrix)."""
    def decompose(stack, xp, *, full_matrices, compute_uv, overwrite_a, **options):
        parts = [decompose_one(mat, xp, full_matrices=full_matrices, compute_uv=compute_uv,
                               overwrite_a=overwrite_a, **options) for mat in stack]
        # One matrix: a view with the stack axis, not a copy.
        gather = (lambda i: parts[0][i][None]) if len(parts) == 1 else \
            (lambda i: xp.stack([p[i] for p in parts]))
        if not compute_uv:
            return None, gather(1), None
        return gather(0), gather(1), gather(2)
    return decompose


def _jacobi(stack, xp, *, full_matrices, compute_uv, overwrite_a):
    """The Jacobi SVD of the whole ``stack`` (batch >= 1, m, n) with ``jacobi_svd``'s
    defaults: matrices of at most 2b columns go through its pointwise kernel in one
    batched call. It never writes to ``stack``."""
    return jacobi.decompose(stack, xp, full_matrices=full_matrices, compute_uv=compute_uv,
                            options=jacobi.DEFAULTS)


def _small_jacobi(job, *, full_matrices, compute_uv, check_finite, what, options):
    """``method="auto"``'s path on the GPU for matrices with min(M, N) <= 2b that fit one
    thread block (:func:`gpusvd.jacobi.small_svd_cuda.fits`), one or a stack: the whole
    one-sided Jacobi SVD of each matrix in one kernel launch, the finite check and the
    scaling inside it (``job`` is not scanned), then one host synchronization for its
    status. gesvd's accuracy (not the relative accuracy of ``method="jacobi"``); no
    ``options`` ("auto" takes none)."""
    del options
    u, s, vh, status = small_svd_cuda.small_svd(job.stack, compute_uv=compute_uv,
                                                full_matrices=full_matrices)
    flags = status.wait()
    if flags & small_svd.NOT_FINITE and check_finite:
        raise validation.not_finite(what)
    if flags & small_svd.NOT_CONVERGED:
        raise LinAlgError(f"{what}: no convergence in {small_svd.MAX_SWEEPS} sweeps of the "
                          "one-sided Jacobi method")
    return u, s, vh


def _lapack(stack, xp, *, full_matrices, compute_uv, overwrite_a, driver="gesdd"):
    """LAPACK's SVD of the whole ``stack`` on the CPU by ``driver``
    (:func:`gpusvd._core.lapack.svd`: gesdd, gesvd where it does not converge): not
    ours, the rule of ``method="auto"`` there (:func:`svd`'s Notes). LAPACK copies the
    stack into its column order, so ``overwrite_a`` has nothing to spare."""
    if xp is not np:
        raise ValueError("method='lapack' is LAPACK's gesdd on the CPU (through NumPy and "
                         "SciPy); pass device='cpu', or another method on the GPU")
    out = lapack.svd(stack, full_matrices=full_matrices, compute_uv=compute_uv,
                     driver=driver)
    return out if compute_uv else (None, out, None)


def _scanned(method):
    """A route from a method of the scanned stack: the job scanned, then
    ``method(stack, xp, full_matrices=, compute_uv=, overwrite_a=, **options)``."""
    def route(job, *, full_matrices, compute_uv, check_finite, what, options):
        job.scan(what=what, check_finite=check_finite)
        return method(job.stack, job.xp, full_matrices=full_matrices, compute_uv=compute_uv,
                      overwrite_a=job.writable, **options)
    return route


def _polar(job, *, full_matrices, compute_uv, check_finite, what, options):
    """The polar method (:func:`gpusvd.polar.svd.decompose`), which scans the job itself."""
    return polar.decompose(job, full_matrices=full_matrices, compute_uv=compute_uv,
                           what=what, check_finite=check_finite)


def _hermitian(stack, xp, *, full_matrices, compute_uv, overwrite_a):
    """The SVD of Hermitian matrices through their eigendecomposition
    (:func:`gpusvd.polar.eigh.hermitian_svd`), which ``hermitian=True`` takes with
    ``method="auto"``; the matrices are square, so ``full_matrices`` changes nothing."""
    del full_matrices
    return hermitian_svd(stack if overwrite_a else stack.copy(), xp, compute_uv=compute_uv)


# The paths that "auto" may choose besides the methods, not asked for by name.
_SMALL = "small-jacobi"
_HERMITIAN = "hermitian-eigh"
# Each route, as a function of the front end's job (unscanned).
_ROUTES = {"gr": _scanned(_matrix_by_matrix(golub_reinsch.svd)), "jacobi": _scanned(_jacobi),
           "polar": _polar, "lapack": _scanned(_lapack), _SMALL: _small_jacobi,
           _HERMITIAN: _scanned(_hermitian)}
# The names svd's ``method`` takes (the command line's choices too).
METHODS = ("auto", "polar", "gr", "jacobi", "lapack")

# The methods that take options beyond svd's arguments, and the function of each that
# checks them (``ValueError`` for an unknown option or value) and returns them as keyword
# arguments of the method.
_OPTIONS = {"gr": golub_reinsch.check_options}


# The keywords each function takes, for the message of an unknown one.
_COMMON_KEYWORDS = ("method, overwrite_a, check_finite, device, reduction (with method='gr'), "
                    "hermitian, gauge_invariant and broadening")
_KEYWORDS = {"svd": f"full_matrices, compute_uv, lapack_driver, {_COMMON_KEYWORDS}",
             "svdvals": _COMMON_KEYWORDS}


def _method_options(method, reduction, options, *, compute_uv, what):
    """The checked options of ``method`` as its keyword arguments: ``reduction`` is
    ``method="gr"``'s alone; ``options`` are the unknown keywords. ``TypeError`` for an
    unknown keyword (as Python's own for a function's signature), ``ValueError`` for a
    ``reduction`` other than "auto" with another method."""
    if options:
        names = ", ".join(map(repr, sorted(options)))
        raise TypeError(f"{what}() got unexpected keyword argument(s) {names}; it takes "
                        f"the matrix and {_KEYWORDS[what]}")
    if method in _OPTIONS:
        return _OPTIONS[method]({"reduction": reduction}, compute_uv=compute_uv, what=what)
    if not (isinstance(reduction, str) and reduction == "auto"):
        raise ValueError(f"{what}: reduction={reduction!r} is an option of method='gr' only, "
                         f"not of method={method!r}; pass method='gr' to choose how A is "
                         f"brought to bidiagonal form")
    return {}


def _route(shape, dtype, xp, *, compute_uv=True, fits=lambda: True):
    """The route of ``method="auto"`` for matrices of ``shape`` (..., M, N) in the working
    ``dtype`` on ``xp``: the first row of the table that holds (:func:`svd`'s Notes give
    the measurements behind each; the crossovers are tunables). ``fits()``: whether the
    matrices fit the small-matrix kernel's thread block (asked only on a GPU)."""
    k = min(shape[-2:])
    table = (
        (lambda: xp is np, "lapack"),
        (lambda: tunables.gr_on_gpu(k, dtype, compute_uv), "gr"),
        (lambda: k <= 2 * block_width(xp) and fits(), _SMALL),
        (lambda: True, "polar"),
    )
    return next(route for holds, route in table if holds())


def _cpu_threads(xp, route):
    """The thread pools for ``route`` on ``xp``: on the CPU, BLAS at one thread for
    gpusvd's own methods, whose steps alternate BLAS calls with Numba's parallel loops or
    are BLAS calls on blocks too small for a second thread (on 2 cores, default threads
    against one BLAS thread: ``gr`` 500² 0.41 s against 0.105, ``svdvals(method="gr")``
    2000² 2.47 against 1.11; BENCHMARKS.md, "the CPU"); LAPACK's gesdd keeps its pool."""
    if xp is np and route != "lapack":
        return single_threaded_blas()
    return contextlib.nullcontext()


def _empty_stack(xp, batch, m, n, dtype, full_matrices, compute_uv):
    """Results for a stack of no matrices (some batch dimension is 0)."""
    s = xp.zeros((*batch, min(m, n)), np.finfo(dtype).dtype)
    if not compute_uv:
        return None, s, None
    k_u, k_v = (m, n) if full_matrices else (min(m, n), min(m, n))
    return xp.zeros((*batch, m, k_u), dtype), s, xp.zeros((*batch, k_v, n), dtype)


def _lapack_directly(placed, *, full_matrices, compute_uv, method, driver):
    """The SVD that ``method="auto"`` (or ``"lapack"``) gives an array placed on the CPU,
    with none of the front end's work but its check (:func:`gpusvd._core.front_end.
    directly`): LAPACK's gesdd scales into its safe range itself. Through the whole front
    end a 2×2 float64 NumPy call costs several times NumPy's own (NOTES.md, "Small
    matrices on the CPU: gesdd directly"). The results are the front end's, bit for bit
    (by ``driver``, :func:`gpusvd._core.lapack.svd`); None where the front end is
    needed."""
    if method not in ("auto", "lapack"):
        return None
    out = directly(placed, lambda arr: lapack.svd(arr, full_matrices=full_matrices,
                                                 compute_uv=compute_uv, driver=driver))
    return SVDResult(*out) if out is not None and compute_uv else out


def _host_bytes(arr, *, full_matrices, compute_uv):
    """Bytes that an SVD of ``arr`` (..., M, N) on the CPU holds at once, about: the results
    of every matrix, a working copy of the input and LAPACK's gesdd workspace (4k² for
    vectors), in the working dtype."""
    *batch, m, n = arr.shape
    count = math.prod(batch)        # Python's integers: no overflow, and no ufunc to call
    k = min(m, n)
    per_matrix = k + m * n
    if compute_uv:
        per_matrix += m * (m if full_matrices else k) + (n if full_matrices else k) * n
    # the working dtype's: half precision computes in float32, integers in float64
    item = max(arr.dtype.itemsize, 4) if arr.dtype.kind in "fc" else 8
    return item * (count * per_matrix + 4 * k * k)


def _decompose(a, *, full_matrices, compute_uv, method, overwrite_a, check_finite, device,
               reduction, hermitian, options, what, lapack_driver="gesdd"):
    validation.check_choice("method", method, METHODS)
    validation.check_flag("hermitian", hermitian, what=what)
    validation.check_choice("lapack_driver", lapack_driver, lapack.DRIVERS)
    options = _method_options(method, reduction, options, compute_uv=compute_uv, what=what)
    placed = place(a, device, what)
    if not placed[1].on_gpu and placed[0].ndim >= 2:
        check_host_memory(_host_bytes(placed[0], full_matrices=full_matrices,
                                      compute_uv=compute_uv), "the results and workspace")
    done = None if hermitian else _lapack_directly(
        placed, full_matrices=full_matrices, compute_uv=compute_uv, method=method,
        driver=lapack_driver)
    if done is not None:
        return done
    with receive(a, what=what, device=device, check_finite=check_finite,
                 overwrite_a=overwrite_a, scan=False, placed=placed) as job:
        xp = job.xp
        batch, m, n = job.stack.shape
        route = method
        if hermitian:
            if m != n:
                raise ValueError(f"{what}(hermitian=True) takes square matrices, got "
                                 f"{m}×{n}; pass hermitian=False for the SVD of any matrix")
            validation.check_hermitian(job.stack, xp, what=what)
        if hermitian and method == "auto":
            route = _HERMITIAN
        elif method == "auto":
            route = _route((*job.batch, m, n), job.stack.dtype, xp, compute_uv=compute_uv,
                           fits=lambda: bool(m and n) and small_svd_cuda.fits(
                               m, n, job.stack.dtype, full_matrices=full_matrices,
                               compute_uv=compute_uv))
        if route == "lapack":
            options = {"driver": lapack_driver}
        if batch == 0:
            u, s, vh = _empty_stack(xp, (0,), m, n, job.stack.dtype, full_matrices,
                                    compute_uv)
        else:
            with _cpu_threads(xp, route):
                u, s, vh = _ROUTES[route](job, full_matrices=full_matrices,
                                          compute_uv=compute_uv, check_finite=check_finite,
                                          what=what, options=options)
        if not compute_uv:
            return job.values(s)
        return SVDResult(job.vectors(u), job.values(s), job.vectors(vh))


def _differentiated(a, *, full_matrices, compute_uv, gauge_invariant, broadening, kw):
    """The SVD of a torch tensor or JAX array that is differentiated, transformed or
    compiled, through the framework's operator (:mod:`gpusvd.autodiff`); None for any
    other input."""
    binding = autodiff.binding_for(a)
    if binding is None:
        return None
    validation.check_gradient_options(gauge_invariant, broadening)
    out = binding.svd(a, full_matrices=full_matrices, compute_uv=compute_uv,
                      gauge_invariant=gauge_invariant, broadening=broadening, kw=kw)
    return SVDResult(*out) if compute_uv else out


@hint_on_exhaustion(DENSE_HINT)
@simple_reductions
def svd(a, full_matrices=True, compute_uv=True, *, method="auto", overwrite_a=False,
        check_finite=True, device="auto", reduction="auto", hermitian=False,
        lapack_driver="gesdd", gauge_invariant=False, broadening=None, **options):
    """Singular value decomposition ``a = U @ diag(S) @ Vh``.

    Parameters
    ----------
    a : (..., M, N) array_like
        Matrix or stack of matrices, real or complex: NumPy, CuPy, or anything with
        ``__dlpack__`` or ``__array__`` (PyTorch, JAX, …). Integers are promoted to float64.
    full_matrices : bool, optional
        If true (default) ``U`` is (..., M, M) and ``Vh`` (..., N, N); otherwise
        (..., M, K) and (..., K, N) with K = min(M, N).
    compute_uv : bool, optional
        If false, only the singular values are computed and returned.
    method : {"auto", "polar", "gr", "jacobi", "lapack"}, optional
        ``"polar"``: the QDWH polar decomposition A = U_p·H, then the Hermitian
        eigendecomposition of H (a stack through the batched engine). ``"gr"``:
        Golub–Reinsch (Householder bidiagonalization, then the bidiagonal's SVD).
        ``"jacobi"``: the blocked one-sided Jacobi SVD of :func:`gpusvd.jacobi_svd`, with
        high relative accuracy. ``"lapack"``: LAPACK's gesdd, CPU only. ``"auto"``
        (default): the rule in the Notes. Every method takes real and complex input.
    overwrite_a : bool, optional
        Allow the input's memory to be used as workspace. Otherwise ``a`` is never changed.
        Ignored for immutable input (JAX arrays).
    check_finite : bool, optional
        Check that the input holds no NaN or infinity (``ValueError`` if it does). If
        false, a matrix that holds one is not decomposed: its results are NaN.
    device : {"auto", "cpu", "gpu"} or int, optional
        Where to compute. ``"auto"``: on the GPU that holds the input, or for NumPy input
        on a GPU when one is present and the problem is large enough to gain.
    reduction : {"auto", "one-stage", "two-stage"}, optional
        Of ``method="gr"`` only (``ValueError`` with another method): ``"one-stage"``, the
        paper's blocked Householder bidiagonalization; ``"two-stage"``, dense → band by
        matrix products, band → bidiagonal by bulge chasing; ``"auto"`` (default), the
        crossovers of the tunables ``two_stage_*`` (``docs/guide.md`` gives them).
    hermitian : bool, optional
        A is Hermitian (``numpy.linalg.svd``'s): ``method="auto"`` takes its eigenvectors,
        another method the SVD as without it; ``ValueError`` unless it is square and
        Hermitian within 100·n·ε.
    lapack_driver : {"gesdd", "gesvd"}, optional
        As in ``scipy.linalg.svd``, where LAPACK computes (``"auto"`` on the CPU,
        ``"lapack"``); gpusvd's own methods have gesvd's accuracy whatever it says.
    gauge_invariant, broadening : optional
        Gradients only: at repeated singular values a derivative that reads U or Vh is
        NaN; ``gauge_invariant=True`` declares the loss invariant to rotations of their
        vectors and takes the limit, 0; ``broadening=β`` uses x/(x² + β) for each 1/x
        (``docs/guide.md``, "Gradients").

    Returns
    -------
    SVDResult(U, S, Vh), or S alone when ``compute_uv`` is false. ``S`` is descending and
    real. Results have the input's array type and device; for a torch tensor that
    requires grad, or inside ``jax.grad``, the results carry the derivative.

    Raises
    ------
    ValueError
        Input that is not (a stack of) 2-D, non-finite entries, an unknown method or
        value. ``TypeError``: an unknown keyword.
    gpusvd.LinAlgError
        The iteration did not converge (it practically always does).

    Notes
    -----
    ``method="auto"`` takes:

    - on the CPU, LAPACK's gesdd through NumPy (``"lapack"``; SciPy's gesvd where gesdd
      does not converge), the whole stack in one call: the fastest there at every shape
      measured, at LAPACK's accuracy;
    - on the GPU, for matrices with min(M, N) <= 2b (b: tunable
      ``jacobi_block_width_gpu``, 32) that fit one thread block's shared memory (up to
      a few hundred rows), one matrix or a stack: the one-sided Jacobi SVD, the whole
      stack in one kernel launch (taller ones take the polar method);
    - on the GPU, for a stack of larger matrices up to min(M, N) = ``batched_max_n``
      (1024): the polar method through the batched engine, every step over the whole
      stack (batched QDWH, then one batched Hermitian eigensolver);
    - on the GPU, from min(M, N) = 4096 for float64 and complex values only, 4608 for
      float32 values, 6144 for float64 vectors, 8192 for complex and float32 vectors (the
      tunables ``auto_*_gr_min_n_gpu*``): ``"gr"`` through the two-stage reduction;
    - anything else: ``"polar"``, one matrix at a time (up to 1024 real columns: a CUDA
      graph, replayed from the second call of a shape on).

    Every path has gesvd's accuracy or better: residual and orthogonality of a few n·ε.
    The measurements behind the rule are in BENCHMARKS.md and ``docs/guide.md``.

    Ask for ``method="jacobi"`` when small singular values must be relatively accurate
    (column-, row- or two-sided-graded matrices): the polar method, Golub–Reinsch and
    LAPACK bound their error by about n·ε·σ₁ only.

    Examples
    --------
    >>> import numpy as np, gpusvd
    >>> a = np.array([[3.0, 0.0], [4.0, 5.0]])
    >>> U, S, Vh = gpusvd.svd(a)
    >>> np.round(S ** 2, 10)
    array([45.,  5.])
    >>> bool(np.allclose(U @ np.diag(S) @ Vh, a))
    True

    Every method takes complex input:

    >>> z = np.array([[1.0, 2.0j], [0.0, 1.0]])
    >>> np.round(gpusvd.svd(z, compute_uv=False, method="jacobi", device="cpu"), 6)
    array([2.414214, 0.414214])

    A stack of matrices is decomposed in one call (on the CPU by LAPACK, on a GPU by the
    batched Jacobi SVD or the batched engine):

    >>> stack = np.random.default_rng(0).standard_normal((1000, 8, 8))
    >>> U, S, Vh = gpusvd.svd(stack)
    >>> S.shape, bool(np.allclose((U * S[:, None, :]) @ Vh, stack))
    ((1000, 8), True)
    """
    kw = dict(method=method, check_finite=check_finite, device=device, reduction=reduction,
              hermitian=hermitian, lapack_driver=lapack_driver, **options)
    done = _differentiated(a, full_matrices=full_matrices, compute_uv=compute_uv,
                           gauge_invariant=gauge_invariant, broadening=broadening, kw=kw)
    if done is not None:
        return done
    validation.check_gradient_options(gauge_invariant, broadening)
    return _decompose(a, full_matrices=full_matrices, compute_uv=compute_uv, method=method,
                      overwrite_a=overwrite_a, check_finite=check_finite, device=device,
                      reduction=reduction, hermitian=hermitian, options=options, what="svd",
                      lapack_driver=lapack_driver)


@hint_on_exhaustion(DENSE_HINT)
@simple_reductions
def svdvals(a, *, method="auto", overwrite_a=False, check_finite=True, device="auto",
            reduction="auto", hermitian=False, gauge_invariant=False, broadening=None,
            **options):
    """Singular values of ``a`` (or of each matrix of a stack), descending.

    Takes the same arguments as :func:`svd`, chooses the method by the same rule, and
    does no work on singular vectors.

    Parameters
    ----------
    a : (..., M, N) array_like
        Matrix or stack of matrices, real or complex: NumPy, CuPy, or anything with
        ``__dlpack__`` or ``__array__`` (PyTorch, JAX, …). Integers are promoted to float64.
    method : {"auto", "polar", "gr", "jacobi", "lapack"}, optional
        As in :func:`svd`: the polar method (``"polar"``, eigenvalues of H only),
        Golub–Reinsch (``"gr"``, one- or two-stage reduction to a bidiagonal, then its
        values by dqds, or by bisection on the GPU), the blocked one-sided Jacobi SVD
        (``"jacobi"``, relatively accurate), LAPACK's gesdd (``"lapack"``, CPU only), or
        ``"auto"`` (default), the rule in the Notes of :func:`svd`.
    overwrite_a : bool, optional
        Allow the input's memory to be used as workspace. Otherwise ``a`` is never changed.
        Ignored for immutable input (JAX arrays).
    check_finite : bool, optional
        As in :func:`svd`: ``ValueError`` for NaN or infinity, or, if false, NaN values.
    device : {"auto", "cpu", "gpu"} or int, optional
        Where to compute, as in :func:`svd`.
    reduction : {"auto", "one-stage", "two-stage"}, optional
        Of ``method="gr"`` only, as in :func:`svd`: ``"one-stage"`` (the paper's
        Householder bidiagonalization), ``"two-stage"`` (dense → band → bidiagonal), or
        ``"auto"`` (default): two-stage from min(M, N) >= 10 on the CPU and >= 4096 on
        the GPU.
    hermitian : bool, optional
        A is Hermitian, as in :func:`svd`: with ``method="auto"`` the values are the
        absolute values of its eigenvalues, descending.

    gauge_invariant, broadening : optional
        As in :func:`svd` (gradients only; the gradient of the values needs neither: it
        is exact where the values are differentiable, the minimal-norm subgradient where
        they are not).

    Returns
    -------
    S : (..., K) array
        The singular values of each matrix, K = min(M, N), descending, real: float32 for
        float16, float32 and complex64 input, float64 otherwise. The result has the
        input's array type and device.

    Raises
    ------
    ValueError
        Input that is not (a stack of) 2-D, non-finite entries, an unknown method or
        value. ``TypeError``: an unknown keyword.
    gpusvd.LinAlgError
        The iteration did not converge (it practically always does).

    Examples
    --------
    >>> import numpy as np, gpusvd
    >>> gpusvd.svdvals(np.diag([1.0, -3.0, 2.0]))
    array([3., 2., 1.])

    Golub–Reinsch through the two-stage reduction, within 30·n·ε·σ₁ of LAPACK's values:

    >>> a = np.random.default_rng(0).standard_normal((300, 200))
    >>> s = gpusvd.svdvals(a, method="gr", reduction="two-stage", device="cpu")
    >>> err = np.abs(s - np.linalg.svd(a, compute_uv=False)).max()
    >>> bool(err < 30 * 300 * np.finfo(float).eps * s[0])
    True
    """
    kw = dict(method=method, check_finite=check_finite, device=device, reduction=reduction,
              hermitian=hermitian, **options)
    done = _differentiated(a, full_matrices=False, compute_uv=False,
                           gauge_invariant=gauge_invariant, broadening=broadening, kw=kw)
    if done is not None:
        return done
    validation.check_gradient_options(gauge_invariant, broadening)
    return _decompose(a, full_matrices=False, compute_uv=False, method=method,
                      overwrite_a=overwrite_a, check_finite=check_finite, device=device,
                      reduction=reduction, hermitian=hermitian, options=options,
                      what="svdvals")
