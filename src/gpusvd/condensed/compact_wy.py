"""The triangular factor T of the compact WY form of a product of Householder reflectors.

H_0·H_1·…·H_{k−1} = I − V·T·Vᴴ with H_j = I − τ_j·v_j·v_jᴴ (Schreiber & Van Loan, *A
storage-efficient WY representation for products of Householder transformations*, SIAM
J. Sci. Stat. Comput. 10(1), 1989; LAPACK's dlarft): T⁻¹ is the strictly upper triangle
of VᴴV plus diag(1/τ), so T is one triangular solve. The NumPy reference of stage 1's
T (:mod:`.band`), and the fallback of its CUDA twin (:func:`.band_cuda.wy_factor_into`)
where the one-launch recurrence does not apply: a module below both, so that neither
imports the other.
"""

import importlib

from .._core.backend import array_namespace

# The module whose solve_triangular serves arrays of the namespace.
_SOLVE_TRIANGULAR = {"numpy": "scipy.linalg", "cupy": "cupyx.scipy.linalg"}


def _solve_upper(t_inverse):
    xp = array_namespace(t_inverse)
    solver = importlib.import_module(_SOLVE_TRIANGULAR[xp.__name__]).solve_triangular
    eye = xp.eye(t_inverse.shape[0], dtype=t_inverse.dtype)
    return solver(t_inverse, eye, lower=False)


def wy_factor(v, tau):
    """T with H_0·H_1·…·H_{k−1} = I − V·T·Vᴴ, H_j = I − τ_j·v_j·v_jᴴ.

    A reflector with τ = 0 (H = I: geqrf's x was already zero) gets a zero row and
    column of T; its column of V is masked out of VᴴV so that 1/τ is never needed.

    Examples
    --------
    >>> import numpy as np
    >>> v = np.array([[1.0], [0.5]]); tau = np.array([0.8])
    >>> t = wy_factor(v, tau)
    >>> h = np.eye(2) - 0.8 * v @ v.T
    >>> bool(np.allclose(np.eye(2) - v @ t @ v.T, h))
    True
    """
    xp = array_namespace(v)
    active = tau != 0
    v = v * active
    t_inverse = (xp.triu(v.conj().T @ v, 1)
                 + xp.diag(xp.where(active, 1 / xp.where(active, tau, 1), 1)))
    return _solve_upper(t_inverse) * active
