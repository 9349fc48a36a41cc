"""Exceptions raised by gpusvd."""

import numpy as np


class LinAlgError(np.linalg.LinAlgError):
    """An iteration did not converge within its limit.

    A subclass of :class:`numpy.linalg.LinAlgError`, so code that already catches
    NumPy's or SciPy's error keeps working. The message says which iteration failed
    and how far it got.

    Examples
    --------
    >>> import numpy as np, gpusvd
    >>> issubclass(gpusvd.LinAlgError, np.linalg.LinAlgError)
    True

    One sweep is too few for the Jacobi SVD of a random 4×4 matrix:

    >>> from gpusvd.testing import random_matrix
    >>> try:
    ...     gpusvd.jacobi_svd(random_matrix(4, 4, seed=0), max_sweeps=1, device="cpu")
    ... except np.linalg.LinAlgError as err:
    ...     print(err)
    jacobi: no convergence in 1 sweeps of the pointwise Jacobi method; raise max_sweeps
    """
