"""Takagi factorization A = U diag(S) Uᵀ by Jacobi with chess-tournament ordering (paper 002)."""

from .factorization import takagi

__all__ = ["takagi"]
