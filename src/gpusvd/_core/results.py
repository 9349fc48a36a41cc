"""Result types returned by the public functions."""

from typing import Any, NamedTuple


class SVDResult(NamedTuple):
    """``A = U @ diag(S) @ Vh``, singular values ``S`` descending.

    Returned by :func:`gpusvd.svd`, :func:`gpusvd.jacobi_svd` and
    :func:`gpusvd.distributed.jacobi_svd`; it unpacks as ``U, S, Vh = result``. The
    arrays have the input's array type and device.

    Attributes
    ----------
    U : (..., M, M) or (..., M, K) array
        Left singular vectors as columns, K = min(M, N); (..., M, K) when
        ``full_matrices`` is false.
    S : (..., K) array
        The singular values, descending, of the real dtype of the working precision.
    Vh : (..., N, N) or (..., K, N) array
        Right singular vectors as rows (``Vh`` = Vᴴ); (..., K, N) when ``full_matrices``
        is false.

    Examples
    --------
    >>> import numpy as np, gpusvd
    >>> r = gpusvd.svd(np.diag([2.0, 1.0]))
    >>> type(r).__name__, r.S
    ('SVDResult', array([2., 1.]))
    >>> U, S, Vh = r
    >>> bool(np.allclose(U * S @ Vh, np.diag([2.0, 1.0])))
    True
    """

    U: Any
    S: Any
    Vh: Any


class LowRankSVD(tuple):
    """``A ≈ U @ diag(S) @ Vh`` of rank ``rank`` from ``gpusvd.svd_lowrank`` (QUIC-SVD).

    It unpacks as ``U, S, Vh = result``, as ``torch.svd_lowrank`` and scikit-learn's
    ``randomized_svd`` do; the fields beyond the three arrays are attributes only. The
    arrays have the input's array type (NumPy for out-of-core input).

    Attributes
    ----------
    U : (M, rank) array
        Left singular vectors as columns.
    S : (rank,) array
        The singular values, descending.
    Vh : (rank, N) array
        Right singular vectors as rows.
    error_bound : float
        ‖A − U·diag(S)·Vh‖²_F / ‖A‖²_F (the squared relative Frobenius error) as
        computed by the final pass.
    rank : int
        The rank of the approximation: the length of ``S``.
    basis_size : int
        The number of basis vectors found before truncation.
    mc_bound : float
        The Monte Carlo bound (on the squared relative error) at which the basis stopped
        growing.
    partitions : int
        The number of row blocks.
    passes : int
        How often the data were read.
    growth_steps : int
        The cosine-tree steps (split, orthonormalize, estimate) taken over all
        partitions.

    Examples
    --------
    >>> import gpusvd
    >>> from gpusvd.testing import low_rank
    >>> r = gpusvd.svd_lowrank(low_rank(40, 30, 3, seed=0), eps=1e-10, seed=0, device="cpu")
    >>> type(r).__name__, r.rank, r.U.shape, r.S.shape, r.Vh.shape
    ('LowRankSVD', 3, (40, 3), (3,), (3, 30))
    >>> r.error_bound <= 1e-10
    True
    >>> U, S, Vh = r
    """

    _fields = ("U", "S", "Vh")
    _INFO = ("error_bound", "rank", "basis_size", "mc_bound", "partitions", "passes",
             "growth_steps")

    def __new__(cls, U, S, Vh, error_bound, rank, basis_size, mc_bound, partitions, passes,
                growth_steps):
        self = super().__new__(cls, (U, S, Vh))
        self.error_bound, self.rank, self.basis_size = error_bound, rank, basis_size
        self.mc_bound, self.partitions, self.passes = mc_bound, partitions, passes
        self.growth_steps = growth_steps
        return self

    U = property(lambda self: self[0], doc="Left singular vectors as columns.")
    S = property(lambda self: self[1], doc="The singular values, descending.")
    Vh = property(lambda self: self[2], doc="Right singular vectors as rows.")

    def __getnewargs__(self):
        return (*self, *(getattr(self, name) for name in self._INFO))

    def _replace(self, **arrays):
        """A copy with some of ``U``, ``S``, ``Vh`` replaced, as a named tuple's."""
        parts = dict(zip(self._fields, self)) | arrays
        return type(self)(*(parts[f] for f in self._fields),
                          *(getattr(self, name) for name in self._INFO))

    def __repr__(self):
        info = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._INFO)
        return f"LowRankSVD(U={self.U!r}, S={self.S!r}, Vh={self.Vh!r}, {info})"


class TakagiResult(NamedTuple):
    """``A = U @ diag(S) @ U.T`` of a complex symmetric A, ``S`` ≥ 0 descending, U unitary.

    Returned by :func:`gpusvd.takagi`; it unpacks as ``S, U = result``. The arrays have
    the input's array type and device.

    Attributes
    ----------
    S : (..., N) array
        The Takagi values (the singular values of A), real, non-negative, descending.
    U : (..., N, N) array
        The unitary Takagi vectors as columns, complex.

    Examples
    --------
    >>> import numpy as np, gpusvd
    >>> r = gpusvd.takagi(np.array([[1.0, 2.0j], [2.0j, 3.0]]), device="cpu")
    >>> type(r).__name__, np.round(r.S, 6)
    ('TakagiResult', array([3.828427, 1.828427]))
    """

    S: Any
    U: Any


class HSVDResult(NamedTuple):
    """Hyperbolic SVD ``G @ V = U @ diag(S)``, ``Vᴴ @ diag(signs) @ V = diag(J)``.

    ``S`` ≥ 0 descending, ``U`` with orthonormal columns, ``V`` J-unitary, ``J`` the ±1
    signs paired with ``S`` (from ``gpusvd.hsvd``, paper 003). It unpacks as
    ``U, S, V, J = result``; the arrays have the input's array type and device.

    Attributes
    ----------
    U : (..., M, N) array
        Orthonormal columns.
    S : (..., N) array
        The hyperbolic singular values, non-negative, descending, of the real dtype.
    V : (..., N, N) array
        The J-unitary matrix.
    J : (..., N) array
        The signs (+1.0 or -1.0) paired with ``S``, of the real dtype.

    Examples
    --------
    >>> import numpy as np, gpusvd
    >>> r = gpusvd.hsvd(np.array([[2.0, 1.0], [0.0, 1.0]]), [1, -1])
    >>> type(r).__name__, r.J
    ('HSVDResult', array([ 1., -1.]))
    """

    U: Any
    S: Any
    V: Any
    J: Any
