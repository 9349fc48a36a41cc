"""Eigendecomposition of a stack of Hermitian matrices in one call, and the SVD of
Hermitian matrices through it (``svd(a, hermitian=True)``).

On the CPU, NumPy's ``linalg.eigh`` (LAPACK's syevd, the loop over the stack in C). On
the GPU, cuSOLVER's ``cusolverDnXsyevBatched`` (CUDA 12.6 and later; JAX's ``eigh`` of a
stack calls it), reached through ctypes since CuPy has no binding for it: CuPy's own
``eigh`` of a stack runs the Jacobi ``syevjBatched`` (H200: 2000 × 128²
float64 263 ms, float32 46 ms, where XsyevBatched took at 26 and 15 ms on
the H100). Where the library lacks the function, CuPy's ``eigh`` serves.

cuSOLVER reads the C-ordered stack as column-major, that is as the transposes, conj(H)
for Hermitian H: the eigenvalues are the same and the eigenvectors come back conjugated
and, read in C order, transposed, so V = (the buffer)ᴴ.
"""

import ctypes
import functools

import numpy as np

from .._core import libraries, tunables

# The cudaDataType_t of each element type's real values.
_CUDA_REAL = {np.dtype(np.float32): 0, np.dtype(np.float64): 1,
              np.dtype(np.complex64): 0, np.dtype(np.complex128): 1}
_EIG_MODE = {False: 0, True: 1}   # CUSOLVER_EIG_MODE_NOVECTOR, _VECTOR
_FILL_LOWER = 0                    # CUBLAS_FILL_MODE_LOWER


@functools.cache
def syev_batched():
    """(bufferSize, solve) of cusolverDnXsyevBatched from the cuSOLVER that CuPy loaded,
    or None where that library has no such function."""
    lib = libraries.cusolver()
    if lib is None or not hasattr(lib, "cusolverDnXsyevBatched"):
        return None
    size, solve = lib.cusolverDnXsyevBatched_bufferSize, lib.cusolverDnXsyevBatched
    common = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
              ctypes.c_int64, ctypes.c_int, ctypes.c_void_p, ctypes.c_int64,
              ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
    size.argtypes = common + [ctypes.POINTER(ctypes.c_size_t),
                              ctypes.POINTER(ctypes.c_size_t), ctypes.c_int64]
    solve.argtypes = common + [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
                               ctypes.c_size_t, ctypes.c_void_p, ctypes.c_int64]
    return size, solve


def _cusolver_eigh(h, vectors):
    """eigh of a C-contiguous CuPy stack (batch, n, n), overwritten; None where cuSOLVER
    lacks XsyevBatched. No host synchronization and no CuPy library call: it can be
    captured into a CUDA graph (:mod:`gpusvd._core.libraries`)."""
    import cupy

    functions = syev_batched()
    if functions is None:
        return None
    size_fn, solve_fn = functions
    batch, n, _ = h.shape
    real = np.finfo(h.dtype).dtype
    w = cupy.empty((batch, n), real)
    info = cupy.empty(batch, np.int32)
    kind = libraries.CUDA_TYPE[h.dtype]
    head = (libraries.solver_handle(), libraries.solver_params(h.device.id),
            _EIG_MODE[vectors], _FILL_LOWER, n, kind, h.data.ptr, n, _CUDA_REAL[h.dtype],
            w.data.ptr, kind)
    on_device, on_host = ctypes.c_size_t(0), ctypes.c_size_t(0)
    libraries.check(size_fn(*head, ctypes.byref(on_device), ctypes.byref(on_host), batch),
                    "XsyevBatched_bufferSize")
    work = cupy.empty(max(on_device.value, 1), np.uint8)
    host_work = libraries.host_workspace(on_host.value, "cusolverDnXsyevBatched")
    libraries.check(solve_fn(*head, work.data.ptr, on_device.value, host_work,
                             on_host.value, info.data.ptr, batch), "XsyevBatched")
    if not vectors:
        return w, None
    return w, h.conj().swapaxes(-1, -2)


def eigh(h, xp, *, vectors=True):
    """Eigenvalues (ascending) and, with ``vectors``, eigenvectors of each Hermitian
    matrix of the stack ``h`` (batch, n, n), whose lower triangle is read; ``h`` may be
    overwritten. Returns (w, v), v None without ``vectors``.

    Examples
    --------
    >>> w, v = eigh(np.array([[[2.0, 1.0], [1.0, 2.0]]]), np)
    >>> w
    array([[1., 3.]])
    """
    batch, n, _ = h.shape
    if not (batch and n):
        # nothing to solve: cuSOLVER refuses n = 0 (an invalid value, status 3)
        w = xp.empty((batch, n), np.finfo(h.dtype).dtype)
        return w, (xp.empty(h.shape, h.dtype) if vectors else None)
    if xp is not np:
        found = _cusolver_eigh(xp.ascontiguousarray(h), vectors)
        if found is not None:
            return found
    if vectors:
        return xp.linalg.eigh(h)
    return xp.linalg.eigvalsh(h), None


def hermitian_svd(stack, xp, *, compute_uv):
    """The SVD of each Hermitian matrix of ``stack`` (batch, n, n; its lower triangle is
    read, and it may be overwritten) through its eigendecomposition A = V·Λ·Vᴴ: S = |Λ|
    descending (ties in index order), U = V in that order, Vh = (V·sign Λ)ᴴ with the sign
    of a zero eigenvalue taken as +1, as ``numpy.linalg.svd(hermitian=True)`` does.
    Returns (U, S, Vh), U and Vh None without ``compute_uv``.

    Examples
    --------
    >>> u, s, vh = hermitian_svd(np.array([[[1.0, 2.0], [2.0, 1.0]]]), np, compute_uv=True)
    >>> s
    array([[3., 1.]])
    >>> bool(np.allclose((u * s[:, None, :]) @ vh, [[1.0, 2.0], [2.0, 1.0]]))
    True
    """
    if xp is not np and stack.shape[-1] > tunables.get().batched_max_n:
        # one matrix at a time by syevd, as the polar method takes the eigendecomposition
        # of one H past the stack engine's sizes, for which the batched eigensolver is made
        parts = [xp.linalg.eigh(h) if compute_uv else (xp.linalg.eigvalsh(h), None)
                 for h in stack]
        w = xp.stack([p[0] for p in parts])
        v = xp.stack([p[1] for p in parts]) if compute_uv else None
    else:
        w, v = eigh(stack, xp, vectors=compute_uv)
    s = xp.abs(w)
    order = (np.argsort(-s, axis=-1, kind="stable") if xp is np
             else xp.argsort(-s, axis=-1))      # CuPy's sort is stable
    s = xp.take_along_axis(s, order, axis=-1)
    if not compute_uv:
        return None, s, None
    w = xp.take_along_axis(w, order, axis=-1)
    u = xp.take_along_axis(v, order[:, None, :], axis=-1)
    signs = xp.where(w < 0, -1.0, 1.0).astype(u.dtype)
    return u, s, (u * signs[:, None, :]).conj().swapaxes(-1, -2)
