"""Two-stage reduction: dense → band (GEMMs) → bidiagonal (bulge chasing), the
back-transformations and the driver (the bidiagonal's solvers: :mod:`gpusvd.bidiagonal`)."""
