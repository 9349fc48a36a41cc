"""Result types returned by the public functions."""

from typing import Any, NamedTuple


class SVDResult(NamedTuple):
    """``A = U @ diag(S) @ Vh``, singular values ``S`` descending."""

    U: Any
    S: Any
    Vh: Any


class LowRankSVD(NamedTuple):
    """``A ≈ U @ diag(S) @ Vh`` of rank ``rank`` from ``gpusvd.svd_lowrank`` (QUIC-SVD).

    ``error_bound`` is ‖A − U·diag(S)·Vh‖²_F / ‖A‖²_F (the squared relative Frobenius
    error) as computed by the final pass; ``mc_bound`` the Monte Carlo bound at which the
    basis stopped growing; ``basis_size`` the number of basis vectors found before
    truncation; ``partitions`` the number of row blocks; ``passes`` how often the data
    were read; ``growth_steps`` the cosine-tree steps (split, orthonormalize, estimate)
    taken over all partitions.
    """

    U: Any
    S: Any
    Vh: Any
    error_bound: float
    rank: int
    basis_size: int
    mc_bound: float
    partitions: int
    passes: int
    growth_steps: int


class TakagiResult(NamedTuple):
    """``A = U @ diag(S) @ U.T`` of a complex symmetric A, ``S`` ≥ 0 descending, U unitary."""

    S: Any
    U: Any


class HSVDResult(NamedTuple):
    """Hyperbolic SVD ``G @ V = U @ diag(S)``, ``Vᴴ @ diag(signs) @ V = diag(J)``.

    ``S`` ≥ 0 descending, ``U`` with orthonormal columns, ``V`` J-unitary, ``J`` the ±1
    signs paired with ``S`` (from ``gpusvd.hsvd``, paper 003).
    """

    U: Any
    S: Any
    V: Any
    J: Any
