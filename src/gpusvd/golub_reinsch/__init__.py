"""Golub–Reinsch SVD: one-stage bidiagonalization and the driver (the bidiagonal's solvers
are in :mod:`gpusvd.bidiagonal`, the two-stage reduction in :mod:`gpusvd.condensed`)."""
