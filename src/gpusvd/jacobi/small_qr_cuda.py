"""Householder QR of a stack of small matrices on the GPU, one launch for the whole stack.

``kernels/small_qr.cu`` runs LAPACK's xGEQR2 (and xUNG2R for Q) with one thread block per
matrix, the matrix in shared memory. It replaces ``cupy.linalg.qr`` on stacks in the
preconditioning of paper 003 (eq. (1), :mod:`.precondition`) and in the completion of U
(:mod:`.driver`): CuPy factors a stack by a Python loop of one cuSOLVER geqrf and orgqr per
matrix, about 100 µs each, 2 s for 20000 matrices of order 32. There is no column
pivoting; the callers presort the columns by norm. The CPU reference is LAPACK (NumPy,
SciPy); the kernel itself is also run on the CPU by the host build of the tests.

:func:`launch_config` is plain Python so it can be tested without a GPU; :func:`small_qr`
launches without a host sync.
"""

from typing import NamedTuple

import numpy as np

from .._core import kernels
from .inner_cuda import _DEFAULT_SHARED, _max_shared

_KERNEL_FILE = "jacobi/kernels/small_qr.cu"
_WARP = 32
_MAX_THREADS = 256        # SMALL_QR_MAX_THREADS, the kernel's __launch_bounds__
_COLUMNS_PER_WARP = 8     # warps = about n / 8: each warp updates about 8 columns a step
# Rows beyond which one block per matrix is left to cuSOLVER: a taller matrix keeps one SM
# busy with a long sequential column loop, while a single geqrf of it is already efficient.
MAX_ROWS = 256


class LaunchConfig(NamedTuple):
    threads: int        # threads per block: whole warps
    shared_bytes: int   # dynamic shared memory per block


def shared_bytes(m, n, qcols, itemsize, complex_):
    """Dynamic shared memory of one block: A (and Q) with an odd leading dimension, then,
    at a 16-byte boundary, the n reflector scalars in double (complex double if complex).

    Examples
    --------
    >>> shared_bytes(32, 32, 32, 8, False)   # a 33×32 double matrix and 32 doubles
    8704
    """
    matrix = ((m | 1) * max(n, qcols) * itemsize + 15) // 16 * 16
    return matrix + n * (16 if complex_ else 8)


def launch_config(m, n, qcols, itemsize, complex_, max_shared):
    """Threads and shared memory of the small QR kernel for (m×n) matrices.

    Parameters
    ----------
    m, n : int
        Rows and columns of each matrix, m >= n >= 1.
    qcols : int
        Columns of Q to form: 0 (R only), or n <= qcols <= m.
    itemsize : int
        Bytes per element.
    complex_ : bool
        Whether the elements are complex (the reflector scalars are then complex double).
    max_shared : int
        Dynamic shared memory a block may use on the device.

    Returns
    -------
    LaunchConfig

    Raises
    ------
    ValueError
        If the shape is not m >= n >= 1 with qcols 0 or in [n, m], or the matrix does not
        fit in ``max_shared`` bytes.

    Examples
    --------
    >>> launch_config(32, 32, 32, 8, False, 227 * 1024)
    LaunchConfig(threads=128, shared_bytes=8704)
    """
    if not (m >= n >= 1 and (qcols == 0 or n <= qcols <= m)):
        raise ValueError(f"small QR needs m >= n >= 1 and q columns 0 or in [n, m], got "
                         f"m={m}, n={n}, q columns={qcols}")
    warps = min(_MAX_THREADS // _WARP, max(1, -(-n // _COLUMNS_PER_WARP)))
    nbytes = shared_bytes(m, n, qcols, itemsize, complex_)
    if nbytes > max_shared:
        raise ValueError(f"the small QR kernel keeps a {m}x{max(n, qcols)} matrix of "
                         f"{itemsize}-byte elements in shared memory: {nbytes} bytes, but a "
                         f"block may use {max_shared}")
    return LaunchConfig(warps * _WARP, nbytes)


def supports(shape, dtype, qcols):
    """Whether :func:`small_qr` takes matrices of ``shape`` (..., m, n) on this device."""
    m, n = shape[-2:]
    if not (m >= n >= 1 and m <= MAX_ROWS and (qcols == 0 or n <= qcols <= m)):
        return False
    dtype = np.dtype(dtype)
    try:
        launch_config(m, n, qcols, dtype.itemsize, dtype.kind == "c",
                      _max_shared(_device_id()))
    except ValueError:
        return False
    return True


def _device_id():
    import cupy

    return cupy.cuda.Device().id


def small_qr(a, qcols):
    """QR factorization of each matrix of a CuPy stack, without pivoting, in one launch.

    Parameters
    ----------
    a : (batch, m, n) cupy.ndarray
        float32, float64, complex64 or complex128, m >= n >= 1; not changed.
    qcols : int
        Columns of Q to form: 0 for R alone, n for the economic Q, m for the complete Q
        (any count in between gives the leading columns of the complete Q).

    Returns
    -------
    q : (batch, m, qcols) cupy.ndarray, or None when ``qcols`` is 0
    r : (batch, n, n) cupy.ndarray, upper triangular with real diagonal; a = q[..., :n] @ r
        up to rounding.

    Raises
    ------
    ValueError
        For an unsupported dtype or shape, or matrices too large for a block's shared
        memory (:func:`supports` tells beforehand).

    Examples
    --------
    On a GPU (the GPU tests run it; CI has none)::

        import cupy as cp
        q, r = small_qr(cp.asarray([[[3.0, 1.0], [4.0, 2.0]]]), 2)
        # q[0] @ r[0] equals the input to rounding; |r[0, 0]| = 5
    """
    import cupy

    if a.ndim != 3 or np.dtype(a.dtype) not in kernels.CTYPE:
        raise ValueError(f"small_qr needs a (batch, m, n) stack of float32, float64, "
                         f"complex64 or complex128, got {a.dtype} of shape {a.shape}")
    batch, m, n = a.shape
    with a.device:
        config = launch_config(m, n, qcols, a.itemsize, a.dtype.kind == "c",
                               _max_shared(a.device.id))
        a = cupy.ascontiguousarray(a)
        r = cupy.empty((batch, n, n), a.dtype)
        q = cupy.empty((batch, m, qcols), a.dtype) if qcols else None
        if batch == 0:
            return q, r
        kernel = kernels.get_kernel(_KERNEL_FILE, f"small_qr<{kernels.CTYPE[a.dtype]}>")
        if config.shared_bytes > _DEFAULT_SHARED:
            kernel.max_dynamic_shared_size_bytes = config.shared_bytes
        kernel((batch,), (config.threads,),
               (a, r, r if q is None else q, np.int32(m), np.int32(n), np.int32(qcols)),
               shared_mem=config.shared_bytes)
    return q, r


def stack_qr(a, xp, qcols):
    """Unpivoted QR of each matrix of a stack (batch, m, n), m >= n, NumPy or CuPy.

    The small kernel on the GPU where :func:`supports` says so, else ``xp.linalg.qr``.
    Returns (q, r) as :func:`small_qr`: q (batch, m, qcols) or None for ``qcols`` 0 (else
    n <= qcols <= m), r (batch, n, n).

    Examples
    --------
    >>> import numpy as np
    >>> q, r = stack_qr(np.array([[[3.0], [4.0]]]), np, 2)
    >>> q.shape, float(abs(r[0, 0, 0]))
    ((1, 2, 2), 5.0)
    """
    m, n = a.shape[-2:]
    if xp is not np and supports(a.shape, a.dtype, qcols):
        return small_qr(a, qcols)
    if qcols == 0:
        return None, xp.linalg.qr(a, mode="r")[..., :n, :]
    q, r = xp.linalg.qr(a, mode="complete" if qcols > n else "reduced")
    return q[..., :qcols], r[..., :n, :]
