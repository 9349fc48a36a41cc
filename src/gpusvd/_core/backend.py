"""Array namespaces: NumPy on the CPU, CuPy on the GPU.

Drivers are written once against ``xp`` (paper-independent plumbing); this module
says which ``xp`` an array belongs to and whether a GPU is usable at all.
"""

import functools

import numpy as np


@functools.cache
def cupy_or_none():
    """The ``cupy`` module if it imports and sees a GPU, else ``None``."""
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
        return cupy
    except Exception:  # no CuPy, no driver or no device: the CPU path serves
        return None


def is_cupy_array(a) -> bool:
    return type(a).__module__.startswith("cupy") and hasattr(a, "device")


def array_namespace(a):
    """``cupy`` for a CuPy array, ``numpy`` for everything else."""
    if is_cupy_array(a):
        import cupy
        return cupy
    return np


def to_host(a):
    """``a`` as a NumPy array: a CuPy array is copied to the host (which synchronizes)."""
    return a.get() if is_cupy_array(a) else np.asarray(a)


@functools.cache
def _scipy_linalg(xp_name):
    if xp_name == "cupy":
        import cupyx.scipy.linalg
        return cupyx.scipy.linalg
    import scipy.linalg
    return scipy.linalg


def scipy_linalg(xp):
    """SciPy's ``linalg`` for NumPy, ``cupyx.scipy.linalg`` for CuPy: the triangular
    solves (batched too, SciPy >= 1.15) and LU factorizations the drivers share."""
    return _scipy_linalg(xp.__name__)
