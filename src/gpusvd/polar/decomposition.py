"""``gpusvd.polar``: the polar decomposition A = U·P (or P·U) of a matrix or a stack.

The unitary factor is QDWH's on a GPU (Nakatsukasa, Bai & Gygi, SIAM J. Matrix Anal.
Appl. 31(5), 2010; Nakatsukasa & Higham, SIAM J. Sci. Comput. 35(3), 2013) and U = W·Vᴴ
from LAPACK's gesdd on the CPU, as SciPy's (``method="auto"``; on 2 cores QDWH takes 2–10×
gesdd's time at n = 8 to 1000). The Hermitian factor is then one product,
P = Uᴴ·A (right) or A·Uᴴ (left), symmetrized. Which QDWH runs (``method`` "qdwh", or
"auto" on a GPU):

- **One matrix** (a stack of one): QDWH in the input's precision, as the polar SVD runs
  it for one matrix (svd.py): A scaled by a power of two where its norms could
  overflow, a tall A (m > QR_FIRST_RATIO·n) reduced first by A = Q·R (QDWH of the n×n
  R, U = Q·U_R), ‖A‖₂ and σ_min estimated (estimates.py), then Householder-QR and
  Cholesky steps. A stack's iteration runs in float64 whatever the input, at twice the
  cost for one large matrix (BENCHMARKS.md, "Gradients and the polar decomposition").
- **A stack of two or more**: every matrix at once (qdwh.py's :func:`polar_factor`) in
  batched GEMMs, Cholesky factorizations and triangular solves, in float64
  (complex128).

Where a matrix is numerically rank deficient, QDWH's iterate is only a partial isometry
on the singular values below ε·‖A‖₂ (NH §5.3), so U is taken there from that matrix's SVD
(U_svd·Vᴴ with the SVD's orthonormal completion): U is orthonormal for every input, as
SciPy's, and P is the same product. The single-matrix path detects it by QDWH's own flag
or by ‖U_p‖_F²: with U_p = W·f(Σ)·Vᴴ and every f(σ_i) ≤ 1 (each step's rational function
maps [0, 1] into itself), n − ‖U_p‖_F² = Σ(1 − f(σ_i)²) ≥ ‖U_pᴴU_p − I‖_F, one pass over
U_p where the Gram matrix would be another QDWH-sized product.

A wide matrix (M < N) is decomposed through Aᴴ: U has orthonormal rows.
"""

import numpy as np

from .._core import lapack, profile, validation
from .._core.arrays import place
from .._core.backend import simple_reductions, total
from .._core.errors import LinAlgError
from .._core.front_end import directly, receive
from .._core.memory import DENSE_HINT, hint_on_exhaustion
from .. import autodiff
from . import estimates, qdwh
from . import svd

SIDES = ("right", "left")
METHODS = ("auto", "qdwh", "svd")
# ‖U_p‖_F² may fall short of n by this many n·ε before U_p counts as a partial isometry:
# the batched engine's bound on ‖U_pᴴU_p − I‖_F (converged QDWH: 0.4–0.6 n·ε).
ORTHONORMAL_TOL = qdwh.ORTHONORMAL_TOL


def _ct(x):
    return x.conj().swapaxes(-1, -2)


def _svd_factor(a, xp):
    """U·Vᴴ of each matrix of ``a`` (batch, m, n) from the SVD that ``gpusvd.svd`` takes
    for it: LAPACK's gesdd on the CPU, gpusvd's batched SVD on a GPU."""
    if xp is np:
        u, _, vh = lapack.svd(a, full_matrices=False, compute_uv=True)
    else:
        u, _, vh = svd.svd(a, xp, full_matrices=False, compute_uv=True)
    return xp.matmul(u, vh)


def _qdwh_one(a, xp):
    """U_p of one m×n, m >= n >= 1, finite matrix by QDWH in its own precision, as the
    polar SVD runs it for one matrix (svd.py); None where U_p is not
    orthonormal (a zero or numerically rank-deficient ``a``, module docstring)."""
    m, n = a.shape
    eps = float(np.finfo(a.dtype).eps)
    scaled = svd.normalized(a, xp)
    if scaled is None:
        return None
    work = scaled[0]
    q = None
    if m > svd.QR_FIRST_RATIO * n:
        with profile.phase("qr", xp):
            q, work = xp.linalg.qr(work, mode="reduced")
    try:
        up, converged = svd.polar_factor(work, xp, triangular=q is not None)
    except LinAlgError:  # no settling within qdwh_max_iterations: the SVD's U serves
        return None
    with profile.phase("polar_u", xp):
        # Summed in float64: a float32 sum of n² squares errs by more than the tolerance.
        deficit = abs(n - float(total(xp.abs(up) ** 2, dtype=np.float64)))
        if not converged or deficit > ORTHONORMAL_TOL * n * eps:
            return None
        return up if q is None else q @ up


def _unitary_factor_tall(a, xp, method):
    """U of each matrix of ``a`` (batch, m, n), m >= n >= 1, finite: (batch, m, n)."""
    if method == "svd":
        return _svd_factor(a, xp)
    if len(a) == 1:
        u = _qdwh_one(a[0], xp)
        return _svd_factor(a, xp) if u is None else u[None]
    y = _ct(estimates.unit_scaled(a, xp)[0]).copy()  # a new array: QDWH overwrites it
    uh, converged = qdwh.polar_factor(xp, y, float(np.finfo(a.dtype).eps))
    u = _ct(uh).astype(a.dtype)
    if not converged.all():
        index = np.flatnonzero(~converged)
        u[xp.asarray(index)] = _svd_factor(a[xp.asarray(index)], xp)
    return u


def _unitary_factor(a, xp, method):
    batch, m, n = a.shape
    if m == 0 or n == 0:
        return xp.zeros((batch, m, n), a.dtype)
    if m < n:
        return _ct(_unitary_factor_tall(_ct(a), xp, method))
    return _unitary_factor_tall(a, xp, method)


@hint_on_exhaustion(DENSE_HINT)
@simple_reductions
def polar(a, side="right", *, method="auto", check_finite=True, device="auto",
          broadening=None):
    """Polar decomposition ``a = u @ p`` (``side="right"``) or ``a = p @ u`` (``"left"``).

    ``u`` has orthonormal columns (rows, for a wide ``a``) and ``p`` is Hermitian positive
    semidefinite, as in :func:`scipy.linalg.polar`.

    Parameters
    ----------
    a : (..., M, N) array_like
        Matrix or stack of matrices, real or complex: NumPy, CuPy, or anything with
        ``__dlpack__`` or ``__array__``. Integers are promoted to float64.
    side : {"right", "left"}, optional
        ``"right"`` (default): ``a = u @ p`` with ``p`` (..., N, N); ``"left"``:
        ``a = p @ u`` with ``p`` (..., M, M).
    method : {"auto", "qdwh", "svd"}, optional
        ``"qdwh"``: the QDWH iteration, one matrix in its own precision, every matrix of
        a stack at once in float64; the SVD only for numerically rank-deficient matrices
        (where QDWH gives a partial isometry).
        ``"svd"``: ``u = U @ Vh`` from gpusvd's SVD (LAPACK's gesdd on the CPU, as
        :func:`scipy.linalg.polar`). ``"auto"`` (default): ``"svd"`` on the CPU, where
        QDWH took 2–10× its time (n = 8 to 1000), ``"qdwh"`` on a GPU.
    check_finite : bool, optional
        Check that the input holds no NaN or infinity (``ValueError`` if it does). If
        false, a matrix that holds one gives NaN.
    device : {"auto", "cpu", "gpu"} or int, optional
        Where to compute, as in :func:`gpusvd.svd`.
    broadening : float > 0, optional
        Gradients of second order only, as in :func:`gpusvd.svd`. The polar factors
        have their own derivative, exact wherever σ_i + σ_j > 0 (repeated singular
        values included) and NaN where A is numerically rank-deficient; when a
        derivative is needed, the factors come from gpusvd's SVD.

    Returns
    -------
    u : (..., M, N) array
        The unitary factor: orthonormal columns (M >= N) or rows (M < N).
    p : (..., N, N) or (..., M, M) array
        The Hermitian positive semidefinite factor. Both have the input's array type,
        device and working dtype.

    Raises
    ------
    ValueError
        Input that is not (a stack of) 2-D, non-finite entries, an unknown ``side`` or
        ``method``.

    Examples
    --------
    >>> import numpy as np, gpusvd
    >>> a = np.array([[1.0, -1.0], [2.0, 4.0]])
    >>> u, p = gpusvd.polar(a)
    >>> bool(np.allclose(u @ p, a)), bool(np.allclose(u.T @ u, np.eye(2)))
    (True, True)
    >>> bool(np.allclose(p, p.T)), bool(np.all(np.linalg.eigvalsh(p) >= 0))
    (True, True)
    """
    validation.check_choice("side", side, SIDES)
    validation.check_choice("method", method, METHODS)
    validation.check_broadening(broadening)
    binding = autodiff.binding_for(a)
    if binding is not None:
        return binding.polar(a, side=side, broadening=broadening,
                             kw_polar=dict(method=method, check_finite=check_finite,
                                           device=device),
                             kw_svd=dict(check_finite=check_finite, device=device))
    placed = place(a, device, "polar")
    route = "svd" if method == "svd" or (method == "auto" and not placed[1].on_gpu) else "qdwh"
    if route == "svd":
        # LAPACK's SVD takes the array as it is (a 3×3 call: 0.14 → 0.05 ms, as SciPy's)
        done = directly(placed, lambda arr: _matrix_factors(arr, route, side))
        if done is not None:
            return done
    with receive(a, what="polar", device=device, check_finite=check_finite,
                 placed=placed) as job:
        u, p = _factors(job.stack, job.xp, route, side)
        return job.vectors(u), job.values(p)


def _matrix_factors(arr, route, side):
    """(u, p) of the NumPy (stack of) matrix ``arr``, finite, of any leading shape."""
    m, n = arr.shape[-2:]
    u, p = _factors(arr.reshape(-1, m, n), np, route, side)
    return u.reshape(arr.shape), p.reshape(*arr.shape[:-2], *p.shape[-2:])


def _factors(stack, xp, route, side):
    """(u, p) of each matrix of ``stack`` (batch, m, n), finite: u by ``route``, p the
    symmetrized product."""
    u = _unitary_factor(stack, xp, route)
    p = xp.matmul(_ct(u), stack) if side == "right" else xp.matmul(stack, _ct(u))
    p = (p + _ct(p)) * np.finfo(stack.dtype).dtype.type(0.5)
    return u, p
