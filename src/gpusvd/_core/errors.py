"""Exceptions raised by gpusvd."""

import numpy as np


class LinAlgError(np.linalg.LinAlgError):
    """An iteration did not converge within its limit.

    A subclass of :class:`numpy.linalg.LinAlgError`, so code that already catches
    NumPy's or SciPy's error keeps working. The message says which iteration failed
    and how far it got.
    """
