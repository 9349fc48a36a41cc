"""QUIC-SVD: cosine trees, Monte Carlo error bounds, blocked Gram–Schmidt, out of core."""
