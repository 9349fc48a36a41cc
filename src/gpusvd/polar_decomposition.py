"""``gpusvd.polar``: the polar decomposition A = U·P (or P·U) of a matrix or a stack.

The unitary factor is QDWH's (Nakatsukasa, Bai & Gygi, SIAM J. Matrix Anal. Appl. 31(5),
2010; Nakatsukasa & Higham, SIAM J. Sci. Comput. 35(3), 2013), computed for the whole
stack at once by the batched engine (:mod:`gpusvd.batched.qdwh`): Cholesky-based steps
and shifted-CholeskyQR3 steps in batched GEMMs, Cholesky factorizations and triangular
solves; no eigensolver. The Hermitian factor is then one product, P = Uᴴ·A (right) or
A·Uᴴ (left), symmetrized.

Where a matrix is numerically rank deficient, QDWH's iterate is only a partial isometry
on the singular values below ε·‖A‖₂ (NH §5.3), so U is taken there from that matrix's SVD
(U_svd·Vᴴ with the SVD's orthonormal completion): U is orthonormal for every input, as
SciPy's, and P is the same product.

A wide matrix (M < N) is decomposed through Aᴴ: U has orthonormal rows.
"""

import numpy as np

from ._core import validation
from ._core.front_end import receive
from ._core.memory import DENSE_HINT, hint_on_exhaustion
from ._dispatch import svd
from . import autodiff
from .batched import driver as batched_svd
from .batched import qdwh

SIDES = ("right", "left")
METHODS = ("auto", "qdwh", "svd")


def _ct(x):
    return x.conj().swapaxes(-1, -2)


def _unitary_factor_tall(a, xp, method):
    """U of each matrix of ``a`` (batch, m, n), m >= n >= 1, finite: (batch, m, n)."""
    if method == "svd":
        u, _, vh = batched_svd.svd(a, xp, full_matrices=False, compute_uv=True)
        return xp.matmul(u, vh)
    y = _ct(qdwh.unit_scaled(a, xp)[0]).copy()  # a new array: QDWH overwrites it
    uh, converged = qdwh.polar_factor(xp, y, float(np.finfo(a.dtype).eps))
    u = _ct(uh).astype(a.dtype)
    if not converged.all():
        index = np.flatnonzero(~converged)
        part = a[xp.asarray(index)]
        us, _, vh = batched_svd.svd(part, xp, full_matrices=False, compute_uv=True)
        u[xp.asarray(index)] = xp.matmul(us, vh)
    return u


def _unitary_factor(a, xp, method):
    batch, m, n = a.shape
    if m == 0 or n == 0:
        return xp.zeros((batch, m, n), a.dtype)
    if m < n:
        return _ct(_unitary_factor_tall(_ct(a), xp, method))
    return _unitary_factor_tall(a, xp, method)


@hint_on_exhaustion(DENSE_HINT)
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
        ``"qdwh"``: the QDWH iteration, every matrix of a stack at once, the SVD only for
        numerically rank-deficient matrices (where QDWH gives a partial isometry).
        ``"svd"``: ``u = U @ Vh`` from gpusvd's SVD. ``"auto"`` (default): ``"qdwh"``.
    check_finite : bool, optional
        Check that the input holds no NaN or infinity (``ValueError`` if it does). If
        false, a matrix that holds one gives NaN.
    device : {"auto", "cpu", "gpu"} or int, optional
        Where to compute, as in :func:`gpusvd.svd`.
    broadening : float > 0, optional
        Gradients only, as in :func:`gpusvd.svd`. The derivative of the polar factors is
        defined wherever σ_i + σ_j > 0; with a torch tensor that requires grad or inside
        ``jax.grad``, the factors come from gpusvd's SVD so that it is recorded.

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
        def economy(x):
            return svd(x, full_matrices=False, check_finite=check_finite, device=device)
        return binding.polar(a, economy, side=side, broadening=broadening)
    with receive(a, what="polar", device=device, check_finite=check_finite) as job:
        stack, xp = job.stack, job.xp
        u = _unitary_factor(stack, xp, "svd" if method == "svd" else "qdwh")
        p = xp.matmul(_ct(u), stack) if side == "right" else xp.matmul(stack, _ct(u))
        p = (p + _ct(p)) * np.finfo(stack.dtype).dtype.type(0.5)
        return job.vectors(u), job.values(p)
