"""Blocked one-sided Jacobi SVD and hyperbolic SVD (Novaković 2015, paper 003)."""

from .driver import jacobi_svd
from .hyperbolic import eigh_factored, hsvd

__all__ = ["eigh_factored", "hsvd", "jacobi_svd"]
