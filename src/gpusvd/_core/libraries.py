"""cuBLAS and cuSOLVER called directly (ctypes), each call with its NumPy/SciPy twin.

Why not through CuPy: CuPy refuses every cuBLAS and cuSOLVER call while a stream is
being captured into a CUDA graph (its ``setStream`` raises NotImplementedError, CuPy
14.2), and its wrappers cost 20–190 µs of host time a call (a workspace query and an
allocation for each factorization; NOTES.md, "One matrix of 128–1024"). The routines
below are captured and replayed in graphs on the H100 and H200; cuSOLVER's
``syevd`` is not (CUSOLVER_STATUS_INTERNAL_ERROR under capture), its batched
``XsyevBatched`` is (:mod:`gpusvd.polar.eigh`).

Layout: every array is C-contiguous. cuBLAS and cuSOLVER read such a buffer as the
column-major transpose, so ``C = op(A)·op(B)`` is computed as ``Cᵀ = op(B)ᵀ·op(A)ᵀ``, and
``X·Z⁻¹`` for a symmetric Z is ``(Z⁻¹·Xᵀ)ᵀ``: potrs with X's buffer as the right-hand
side, no transposition. Real float32 and float64 only: the callers take complex input
elsewhere.

Each function takes ``xp`` first and runs the CuPy or the NumPy twin (:data:`_TWINS`);
the twins agree to rounding, and the NumPy ones are what the CPU tests run.
"""

import ctypes
import functools

import numpy as np
import scipy.linalg

from . import graphs

_VOID = ctypes.c_void_p
_I64 = ctypes.c_int64
_SCALAR = {np.dtype(np.float32): ctypes.c_float, np.dtype(np.float64): ctypes.c_double}
# The element types the routines here take.
REAL = frozenset(_SCALAR)
# cudaDataType_t (library_types.h) of each element type.
CUDA_TYPE = {np.dtype(np.float32): 0, np.dtype(np.float64): 1,
             np.dtype(np.complex64): 4, np.dtype(np.complex128): 5}
# The BLAS letter of the legacy (32-bit) entry points of each real type.
_LETTER = {np.dtype(np.float32): "S", np.dtype(np.float64): "D"}
_OP_N, _OP_T = 0, 1            # cublasOperation_t
_LOWER = 0                     # cublasFillMode_t CUBLAS_FILL_MODE_LOWER
_SIDE_LEFT, _SIDE_RIGHT = 0, 1  # cublasSideMode_t
_DIAG_NON_UNIT = 0             # cublasDiagType_t
_SUCCESS = 0


def loaded_library(stem):
    """The CDLL of the shared library ``stem`` (e.g. "libcusolver.so") that this process
    (CuPy) loaded, or None."""
    with open("/proc/self/maps") as maps:
        paths = sorted({line.split()[-1] for line in maps
                        if line.split()[-1].rsplit("/", 1)[-1].startswith(stem + ".")})
    return ctypes.CDLL(paths[0]) if paths else None


@functools.cache
def cusolver():
    """libcusolver as CuPy loaded it."""
    from cupy_backends.cuda.libs import cusolver as _loads_it

    del _loads_it
    return loaded_library("libcusolver.so")


@functools.cache
def _cublas():
    from cupy_backends.cuda.libs import cublas as _loads_it

    del _loads_it
    return loaded_library("libcublas.so")


def check(status, what):
    if status != _SUCCESS:
        raise RuntimeError(f"{what} returned status {status}")


def solver_handle():
    """CuPy's cuSOLVER handle of the current device, bound to the current stream through
    the library itself (CuPy's setStream refuses during a capture)."""
    import cupy

    handle = cupy.cuda.device.get_cusolver_handle()
    check(cusolver().cusolverDnSetStream(_VOID(handle),
                                         _VOID(cupy.cuda.get_current_stream().ptr)),
          "cusolverDnSetStream")
    return handle


@functools.cache
def solver_params(device_id):
    """cuSOLVER's 64-bit API parameters object (default algorithms), one per device."""
    from cupy_backends.cuda.libs import cusolver as binding

    return binding.createParams()


@functools.cache
def _blas_handle(device_id):
    # A handle of our own: its pointer mode stays the default, host scalars.
    handle = _VOID()
    check(_cublas().cublasCreate_v2(ctypes.byref(handle)), "cublasCreate")
    return handle


def _bound_blas_handle():
    import cupy

    handle = _blas_handle(cupy.cuda.Device().id)
    check(_cublas().cublasSetStream_v2(handle, _VOID(cupy.cuda.get_current_stream().ptr)),
          "cublasSetStream")
    return handle


def _gemm_cuda(a, b, trans_a, trans_b, out, alpha, beta):
    m, n = out.shape
    k = a.shape[0] if trans_a else a.shape[1]
    scalar = _SCALAR[out.dtype]
    fn = getattr(_cublas(), f"cublas{_LETTER[out.dtype]}gemm_v2")
    check(fn(_bound_blas_handle(), _OP_T if trans_b else _OP_N, _OP_T if trans_a else _OP_N,
             n, m, k, ctypes.byref(scalar(alpha)), _VOID(b.data.ptr), b.shape[1],
             _VOID(a.data.ptr), a.shape[1], ctypes.byref(scalar(beta)),
             _VOID(out.data.ptr), n), "cublas gemm")
    return out


def _gemm_host(a, b, trans_a, trans_b, out, alpha, beta):
    product = (a.T if trans_a else a) @ (b.T if trans_b else b)
    out[...] = alpha * product + (beta * out if beta else 0)
    return out


def host_workspace(nbytes, what):
    """The ``nbytes`` of host workspace a cuSOLVER call asks for (a buffer of at least one
    byte). Refused with :class:`.graphs.Uncapturable` while the stream is captured: the
    buffer is freed when the call returns, before any replay would read it (the calls
    captured so far asked for none: the replays matched the eager calls bit for bit)."""
    if nbytes and graphs.capturing():
        raise graphs.Uncapturable(f"{what} asks for {nbytes} bytes of host workspace")
    return ctypes.create_string_buffer(max(nbytes, 1))


def _cholesky_factor_cuda(z):
    """potrf of the symmetric ``z`` in place (its column-major lower triangle, which is
    z's own); returns ``z``, whose buffer then holds L with z = L·Lᵀ."""
    _potrf_cuda(z)
    return z


def _potrf_cuda(z):
    """:func:`_cholesky_factor_cuda`'s potrf; returns its ``info`` (device int32, > 0
    where z is not positive definite)."""
    import cupy

    n = z.shape[0]
    lib, handle, params = cusolver(), solver_handle(), solver_params(z.device.id)
    kind = CUDA_TYPE[z.dtype]
    on_device, on_host = ctypes.c_size_t(0), ctypes.c_size_t(0)
    head = (_VOID(handle), _VOID(params), _LOWER, _I64(n), kind, _VOID(z.data.ptr), _I64(n),
            kind)
    check(lib.cusolverDnXpotrf_bufferSize(*head, ctypes.byref(on_device),
                                          ctypes.byref(on_host)), "Xpotrf_bufferSize")
    work = cupy.empty(max(on_device.value, 1), np.uint8)
    host_work = host_workspace(on_host.value, "cusolverDnXpotrf")
    info = cupy.empty(1, np.int32)
    check(lib.cusolverDnXpotrf(*head, _VOID(work.data.ptr), ctypes.c_size_t(on_device.value),
                               host_work, ctypes.c_size_t(on_host.value),
                               _VOID(info.data.ptr)), "Xpotrf")
    return info


def _cholesky_solve_cuda(z, x):
    import cupy

    n, m = z.shape[0], x.shape[0]
    _cholesky_factor_cuda(z)
    info = cupy.empty(1, np.int32)
    kind = CUDA_TYPE[z.dtype]
    check(cusolver().cusolverDnXpotrs(
        _VOID(solver_handle()), _VOID(solver_params(z.device.id)), _LOWER, _I64(n), _I64(m),
        kind, _VOID(z.data.ptr), _I64(n), kind, _VOID(x.data.ptr), _I64(n),
        _VOID(info.data.ptr)), "Xpotrs")
    return x


def _cholesky_qr_cuda(w, factor):
    """W·L⁻ᵀ in place for ``factor`` from :func:`_cholesky_factor_cuda` of WᵀW: trsm on
    W's buffer, which column-major is Wᵀ (L⁻¹·Wᵀ, left side, lower, no transpose)."""
    rows, n = w.shape
    scalar = _SCALAR[w.dtype]
    fn = getattr(_cublas(), f"cublas{_LETTER[w.dtype]}trsm_v2")
    check(fn(_bound_blas_handle(), _SIDE_LEFT, _LOWER, _OP_N, _DIAG_NON_UNIT, n, rows,
             ctypes.byref(scalar(1.0)), _VOID(factor.data.ptr), n, _VOID(w.data.ptr), n),
          "cublas trsm")
    return w


def _gram_lower_cuda(wh, alpha, out):
    """``out`` += alpha·wh·whᵀ's lower triangle, column-major, for ``wh`` (n×p): wh's
    buffer read column-major is M = whᵀ (p×n), and syrk forms MᵀM."""
    n, p = wh.shape
    if not p:   # a rank that holds no columns: syrk refuses lda = 0
        return out
    scalar = _SCALAR[wh.dtype]
    check(getattr(_cublas(), f"cublas{_LETTER[wh.dtype]}syrk_v2")(
        _bound_blas_handle(), _LOWER, _OP_T, n, p, ctypes.byref(scalar(alpha)),
        _VOID(wh.data.ptr), p, ctypes.byref(scalar(1.0)), _VOID(out.data.ptr), n),
        "cublas syrk")
    return out


def _factor_checked_cuda(z):
    return z, _potrf_cuda(z)


def _solve_columns_cuda(factor, wh, gram):
    """``wh`` (n×p) ← L⁻¹·wh, or with ``gram`` (L·Lᵀ)⁻¹·wh, in place: wh's buffer read
    column-major is M = whᵀ (p×n), and (L⁻¹·wh)ᵀ = M·L⁻ᵀ, ((L·Lᵀ)⁻¹·wh)ᵀ = M·L⁻ᵀ·L⁻¹:
    right-side trsm."""
    n, p = wh.shape
    if not p:
        return wh
    scalar = _SCALAR[wh.dtype]
    trsm = getattr(_cublas(), f"cublas{_LETTER[wh.dtype]}trsm_v2")
    for op in (_OP_T, _OP_N) if gram else (_OP_T,):
        check(trsm(_bound_blas_handle(), _SIDE_RIGHT, _LOWER, op, _DIAG_NON_UNIT, p, n,
                   ctypes.byref(scalar(1.0)), _VOID(factor.data.ptr), n,
                   _VOID(wh.data.ptr), p), "cublas trsm")
    return wh


def _gram_lower_host(wh, alpha, out):
    out += (wh @ wh.T) * wh.dtype.type(alpha)
    return out


def _factor_checked_host(z):
    try:
        return np.linalg.cholesky(z), np.zeros(1, np.int32)
    except np.linalg.LinAlgError:
        return np.full_like(z, np.nan), np.ones(1, np.int32)


def _solve_columns_host(factor, wh, gram):
    wh[...] = scipy.linalg.solve_triangular(factor, wh, lower=True, check_finite=False)
    if gram:
        wh[...] = scipy.linalg.solve_triangular(factor, wh, lower=True, trans="T",
                                                check_finite=False)
    return wh


def _cholesky_qr_host(w, factor):
    w[...] = scipy.linalg.solve_triangular(factor, w.T, lower=True, check_finite=False).T
    return w


def _cholesky_solve_host(z, x):
    factor = scipy.linalg.cho_factor(z, lower=True, check_finite=False)
    x[...] = scipy.linalg.cho_solve(factor, x.T, check_finite=False).T
    return x


def _cholesky_factor_host(z):
    return np.linalg.cholesky(z)


_TWINS = {"numpy": {"gemm": _gemm_host, "cholesky_solve": _cholesky_solve_host,
                    "cholesky_factor": _cholesky_factor_host,
                    "cholesky_qr": _cholesky_qr_host, "gram_lower": _gram_lower_host,
                    "factor_checked": _factor_checked_host,
                    "solve_columns": _solve_columns_host},
          "cupy": {"gemm": _gemm_cuda, "cholesky_solve": _cholesky_solve_cuda,
                   "cholesky_factor": _cholesky_factor_cuda,
                   "cholesky_qr": _cholesky_qr_cuda, "gram_lower": _gram_lower_cuda,
                   "factor_checked": _factor_checked_cuda,
                   "solve_columns": _solve_columns_cuda}}


def gemm(xp, a, b, *, out, trans_a=False, trans_b=False, alpha=1.0, beta=0.0):
    """``out`` ← alpha·op(a)·op(b) + beta·``out`` (op: transpose where asked), in place;
    returns ``out``.

    Examples
    --------
    >>> out = np.zeros((2, 2))
    >>> gemm(np, np.eye(2), np.array([[1.0, 2.0], [3.0, 4.0]]), out=out, trans_b=True)
    array([[1., 3.],
           [2., 4.]])
    """
    return _TWINS[xp.__name__]["gemm"](a, b, trans_a, trans_b, out, alpha, beta)


def cholesky_solve(xp, z, x):
    """X·Z⁻¹ for a symmetric positive definite ``z`` (n×n, overwritten by its Cholesky
    factor) and ``x`` (m×n, overwritten by the result, which is returned): potrf and potrs.
    A ``z`` that is not positive definite leaves NaN or garbage, never an exception (a
    graph cannot raise): callers check the result.

    Examples
    --------
    >>> z = np.array([[4.0, 2.0], [2.0, 3.0]])
    >>> bool(np.allclose(cholesky_solve(np, z.copy(), np.eye(2)), np.linalg.inv(z)))
    True
    """
    return _TWINS[xp.__name__]["cholesky_solve"](z, x)


def cholesky_factor(xp, g):
    """The Cholesky factor of the symmetric positive definite ``g`` (overwritten on the
    GPU), in the form :func:`cholesky_qr_solve` takes."""
    return _TWINS[xp.__name__]["cholesky_factor"](g)


def cholesky_qr_solve(xp, w, factor):
    """W·L⁻ᵀ for W (rows×n, overwritten on the GPU) and ``factor`` = L of WᵀW (or of a
    shifted WᵀW) from :func:`cholesky_factor`: one pass of Cholesky QR.

    Examples
    --------
    >>> w = np.array([[3.0, 1.0], [4.0, 2.0], [0.0, 2.0]])
    >>> q = cholesky_qr_solve(np, w.copy(), cholesky_factor(np, w.T @ w))
    >>> bool(np.allclose(q.T @ q, np.eye(2)))
    True
    """
    return _TWINS[xp.__name__]["cholesky_qr"](w, factor)


def shifted_gram_solve(xp, y, c, *, summed=None):
    """Z⁻¹·Y with Z = I + c·Y·Yᵀ for a real C-contiguous ``y`` (n×m) and c ≥ 0: QDWH's
    Cholesky step for one matrix (:mod:`gpusvd.polar.qdwh`), as syrk, potrf and two
    triangular solves in place. ``summed``: applied to c·Y·Yᵀ before I is added, where Y's
    columns are spread over ranks that sum theirs. ``y`` is left as it is. Returns
    ``(result, info)``:
    ``info`` (a one-entry int32 array on ``y``'s device) is positive where potrf found Z
    not positive definite, and the result is then not to be read; a NaN in ``y`` need not
    be flagged (LAPACK's potrf passes it on), only carried into the result.

    Examples
    --------
    >>> y = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 1.0]])
    >>> x, info = shifted_gram_solve(np, y, 0.5)
    >>> z = np.eye(2) + 0.5 * y @ y.T
    >>> bool(np.allclose(z @ x, y)), int(info[0])
    (True, 0)
    """
    n = len(y)
    if summed is None:
        z = gram_lower(xp, y, c, out=xp.eye(n, dtype=y.dtype))
    else:   # the ranks' parts summed, I added once
        z = summed(gram_lower(xp, y, c))
        z.reshape(-1)[::n + 1] += 1
    factor, info = factor_checked(xp, z)
    return solve_columns(xp, factor, y.copy(), gram=True), info


def gram_lower(xp, wh, alpha=1.0, *, out=None):
    """alpha·``wh``·``wh``ᵀ added to ``out`` (n×n, zeros by default) for a real
    C-contiguous ``wh`` (n×p), as syrk: the GPU writes only the lower triangle of the
    column-major ``out`` (what :func:`factor_checked` reads), the CPU all of it. Returns
    ``out``; summed elementwise over ranks, that triangle stays the sum's.

    Examples
    --------
    >>> wh = np.array([[1.0, 2.0], [0.0, 1.0]])
    >>> gram_lower(np, wh, 2.0, out=np.eye(2))
    array([[11.,  4.],
           [ 4.,  3.]])
    """
    n = len(wh)
    out = xp.zeros((n, n), wh.dtype) if out is None else out
    return _TWINS[xp.__name__]["gram_lower"](wh, alpha, out)


def factor_checked(xp, z):
    """``(factor, info)``: the Cholesky factor L of the symmetric ``z`` from
    :func:`gram_lower` (``z`` overwritten on the GPU) in the form :func:`solve_columns`
    takes, and ``info`` (a one-entry int32 array on z's device), positive where ``z`` is
    not positive definite (the factor is then not to be read)."""
    return _TWINS[xp.__name__]["factor_checked"](z)


def solve_columns(xp, factor, wh, *, gram=False):
    """``wh`` (n×p, real, C-contiguous) ← L⁻¹·wh, or with ``gram`` (L·Lᵀ)⁻¹·wh, in place,
    for L = ``factor`` from :func:`factor_checked`; returns ``wh``.

    Examples
    --------
    >>> z = np.array([[4.0, 2.0], [2.0, 3.0]])
    >>> factor, info = factor_checked(np, z.copy())
    >>> x = solve_columns(np, factor, np.eye(2), gram=True)
    >>> bool(np.allclose(x, np.linalg.inv(z))), int(info[0])
    (True, 0)
    """
    return _TWINS[xp.__name__]["solve_columns"](factor, wh, gram)
