"""Shortening of block pairs by Cholesky on the GPU: one launch for a whole p-step.

``kernels/gram_cholesky.cu`` takes the Gram matrices H of a p-step's block pairs (formed
by one batched GEMM) and returns R = Lᴴ·diag(d) with L·Lᴴ = H scaled to unit diagonal plus
a shift, exactly the steps of :func:`gpusvd.jacobi.blocked._factor_gram` on the host
(its CPU twin), and sets the inner Jacobi's V to the identity. It replaces ten CuPy
launches and cuSOLVER's potrfBatched, whose info check synchronized the host once per
p-step. A pair that is not positive definite after the shift is refactored with a larger
one inside the kernel, as the host path does, so nothing is checked on the host.

:func:`launch_config` is plain Python so it can be tested without a GPU.
"""

from typing import NamedTuple

import numpy as np

from .._core import kernels
from .inner_cuda import _DEFAULT_SHARED, _max_shared

_KERNEL_FILE = "jacobi/kernels/gram_cholesky.cu"
_MAX_THREADS = 256           # GRAM_CHOLESKY_MAX_THREADS, the kernel's __launch_bounds__


class LaunchConfig(NamedTuple):
    threads: int
    shared_bytes: int


def launch_config(k, complex_, max_shared):
    """Threads and shared memory of the kernel for pairs of order k.

    The lower triangle of H is held in double (complex double) with an odd leading
    dimension, followed by k doubles (the column norms).

    Examples
    --------
    >>> launch_config(64, False, 227 * 1024)
    LaunchConfig(threads=256, shared_bytes=33792)
    """
    if k < 1:
        raise ValueError(f"the Cholesky shortening needs pairs of order k >= 1, got {k}")
    nbytes = (k | 1) * k * (16 if complex_ else 8) + 8 * k
    if nbytes > max_shared:
        raise ValueError(f"the Cholesky shortening kernel keeps a {k}x{k} Gram matrix in "
                         f"shared memory: {nbytes} bytes, but a block may use {max_shared}")
    threads = min(_MAX_THREADS, max(32, -(-k * k // 16 // 32) * 32))
    return LaunchConfig(threads, nbytes)


def gram_cholesky(h, shift, dtype, kv=0):
    """R (batch, k, k) of ``dtype`` with Rᴴ·R = H, shortened as the host's Cholesky path.

    Parameters
    ----------
    h : (batch, k, k) cupy.ndarray, float64 or complex128
        Hermitian Gram matrices (only the lower triangle and diagonal are read).
    shift : float
        Added to the unit diagonal of the scaled H (the rounding errors of forming it).
    dtype : numpy dtype
        The data type R is rounded to (float32, float64, complex64, complex128).
    kv : int
        If positive, also return V (batch, kv, kv) of ``dtype``, the identity.

    Returns
    -------
    r, or (r, v) when ``kv`` > 0.

    Examples
    --------
    On a GPU (the GPU tests run it; CI runs the kernel's host build)::

        import cupy as cp
        x = cp.asarray([[[3.0, 4.0], [0.0, 5.0]]])      # rows of a pair: columns (3,4), (0,5)
        r = gram_cholesky(x @ x.transpose(0, 2, 1), 0.0, cp.float64)
        # r[0] is upper triangular and r[0].T @ r[0] equals the Gram matrix to rounding
    """
    import cupy

    dtype = np.dtype(dtype)
    wide = np.complex128 if dtype.kind == "c" else np.float64
    if h.ndim != 3 or h.shape[1] != h.shape[2] or h.dtype != wide or dtype not in kernels.CTYPE:
        raise ValueError(f"gram_cholesky needs (batch, k, k) Gram matrices of {np.dtype(wide)}"
                         f" for {dtype} data, got {h.dtype} of shape {h.shape}")
    batch, k, _ = h.shape
    with h.device:
        h = cupy.ascontiguousarray(h)
        r = cupy.empty((batch, k, k), dtype)
        v = cupy.empty((batch, kv, kv), dtype) if kv > 0 else None
        if batch and k:
            config = launch_config(k, dtype.kind == "c", _max_shared(h.device.id))
            kernel = kernels.get_kernel(_KERNEL_FILE, f"gram_cholesky<{kernels.CTYPE[dtype]}>")
            if config.shared_bytes > _DEFAULT_SHARED:
                kernel.max_dynamic_shared_size_bytes = config.shared_bytes
            kernel((batch,), (config.threads,),
                   (h, r, v if v is not None else 0, np.int32(k), np.int32(kv),
                    np.float64(shift)), shared_mem=config.shared_bytes)
        elif v is not None:
            v[...] = cupy.eye(kv, dtype=dtype)
    return r if v is None else (r, v)
