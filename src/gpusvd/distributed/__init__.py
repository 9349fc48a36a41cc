"""Decompositions over MPI ranks, one GPU (or CPU) each: the multi-GPU level of the blocked
Jacobi SVD and HSVD (paper 003, §5), the exact SVD (the polar method with a block of rows
per rank, or the Golub–Reinsch SVD with its back-transformations shared out by columns),
and QUIC-SVD with a row partition per rank."""

from .jacobi import hsvd, jacobi_svd
from .lowrank import svd_lowrank
from .exact import svd

__all__ = ["hsvd", "jacobi_svd", "svd", "svd_lowrank"]
