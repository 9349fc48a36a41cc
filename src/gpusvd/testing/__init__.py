"""Test matrices and accuracy metrics for singular value decompositions.

Public, so that users can check gpusvd (or any SVD) the way its own tests do::

    >>> import scipy.linalg
    >>> from gpusvd.testing import with_condition, svd_residual, orthogonality
    >>> a = with_condition(50, 30, 1e6, seed=0)
    >>> u, s, vh = scipy.linalg.svd(a, full_matrices=False)
    >>> svd_residual(a, u, s, vh) < 10 and orthogonality(u) < 10
    True

Generators (:mod:`gpusvd.testing.generators`) build NumPy arrays on the CPU from
a seed, so every run and every machine sees the same matrix. Metrics
(:mod:`gpusvd.testing.metrics`) accept NumPy or CuPy arrays and return floats in
units of machine epsilon.
"""

from gpusvd.testing.generators import (
    bidiagonal,
    complex_symmetric,
    graded,
    haar_orthogonal,
    lapack_type,
    low_rank,
    mixed_stack,
    random_matrix,
    with_condition,
    with_singular_values,
)
from gpusvd.testing.metrics import orthogonality, relative_sv_error, sv_error, svd_residual

__all__ = [
    "bidiagonal",
    "complex_symmetric",
    "graded",
    "haar_orthogonal",
    "lapack_type",
    "low_rank",
    "mixed_stack",
    "orthogonality",
    "random_matrix",
    "relative_sv_error",
    "sv_error",
    "svd_residual",
    "with_condition",
    "with_singular_values",
]
