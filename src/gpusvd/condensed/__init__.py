"""Two-stage reduction: dense → band (GEMMs) → bidiagonal (bulge chasing), and its solvers."""
