"""The multi-GPU level of the blocked Jacobi SVD and HSVD over MPI ranks (paper 003, §5)."""

from .jacobi import hsvd, jacobi_svd

__all__ = ["hsvd", "jacobi_svd"]
