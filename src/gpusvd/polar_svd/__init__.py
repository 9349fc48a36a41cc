"""SVD through the polar decomposition: QDWH, then the Hermitian eigendecomposition."""
