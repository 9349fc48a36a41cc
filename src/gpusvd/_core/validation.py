"""Validation of user input; every message says what is wrong and what is expected."""

import numpy as np

_REAL = (np.dtype(np.float32), np.dtype(np.float64))
_COMPLEX = (np.dtype(np.complex64), np.dtype(np.complex128))


def working_dtype(dtype, *, allow_complex, what):
    """The dtype a decomposition computes in for input of ``dtype``.

    Integers and booleans are promoted to float64 as NumPy does, float16 to float32.
    """
    dtype = np.dtype(dtype)
    if dtype.kind in "biu":
        return np.dtype(np.float64)
    if dtype == np.float16:
        return np.dtype(np.float32)
    if dtype in _REAL or (allow_complex and dtype in _COMPLEX):
        return dtype
    allowed = "float32 or float64" + (", complex64 or complex128" if allow_complex else "")
    raise ValueError(f"{what} takes {allowed} input (integers are promoted), got {dtype}")


def check_matrix(a, *, what):
    """Raise ``ValueError`` unless ``a`` is a matrix or a stack of matrices."""
    if a.ndim < 2:
        raise ValueError(f"{what} expects a 2-D array or a stack of them (..., M, N); "
                         f"got an array of shape {a.shape}")


def check_finite(a, xp, *, what):
    """Raise ``ValueError`` if ``a`` holds NaN or infinity."""
    if a.size and not bool(xp.isfinite(a).all()):
        raise ValueError(f"{what}: the input contains NaN or infinity; pass finite values "
                         "(or check_finite=False to skip this check at your own risk)")


def check_choice(name, value, allowed):
    if value not in allowed:
        raise ValueError(f"unknown {name} {value!r}; expected one of {', '.join(map(repr, allowed))}")


def check_no_options(options, *, what):
    if options:
        raise ValueError(f"{what}: unknown option(s) {', '.join(sorted(options))}")
