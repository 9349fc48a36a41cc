"""Golub–Reinsch SVD: bidiagonalization, bidiagonal QR, rotation application."""
