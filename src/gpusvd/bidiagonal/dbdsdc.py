"""SVD of a real upper bidiagonal by divide and conquer: LAPACK's dbdsdc on the host.

The vectors solver of the two-stage SVD, in place of the implicit-shift QR of
:mod:`gpusvd.bidiagonal.qr`, whose sequential host loop took 3.16 s at
n = 8192 on the H100 machine's host. The algorithm is Gu & Eisenstat, "A divide-and-
conquer algorithm for the bidiagonal SVD", SIAM J. Matrix Anal. Appl. 16 (1995) 79–92,
as LAPACK implements it (dbdsdc → dlasd0 → dlasd1/2/3/4, leaves by dlasdq):

- B is split at its middle row k into two bidiagonals and one coupling row
  (Gu & Eisenstat, Sec. 2); each half is solved recursively, down to leaves of at most
  SMLSIZ = 25 rows (ILAENV ispec 9), which dlasdq solves by the implicit-shift QR.
- A merge (dlasd1) writes B as an orthogonal transformation of a matrix M that is zero
  except for its first row z and its diagonal (the halves' singular values). Small z_i
  and close diagonal entries are deflated by Givens rotations (dlasd2); the singular
  values of the rest are the roots of the secular equation
  1 + Σ z_i²/((d_i − σ)(d_i + σ)) = 0, found one by one to full accuracy (dlasd4).
- The vectors of M come from a recomputed ẑ (Gu & Eisenstat, Sec. 3, eq. (3.3); Löwner's
  theorem), which makes them numerically orthogonal without extra precision; the halves'
  U and Vᵀ are then multiplied by them: two GEMMs per merge (dlasd3). A level whose
  subproblems have m rows costs about n·m² GEMM flops, so the top merge does three
  quarters of them, and deflation (common in practice) makes them smaller.

Accuracy: backward stable, ‖B − U·S·Vᵀ‖ and ‖UᵀU − I‖ of order n·ε. Unlike the QR of
Demmel & Kahan and dqds, dbdsdc is not relatively accurate on n > SMLSIZ rows: it scales
B to max |entry| = 1, then raises every |d_i| < ε to ε and splits at every |e_i| < ε
(dbdsdc's loops 20 and 30), perturbations of ε·‖B‖, so a singular value far below ε·σ₁
(a graded B) is accurate to ε·σ₁ only. Where the small values matter, take them from
dqds (:func:`gpusvd.bidiagonal.dqds.bidiagonal_singular_values`), as the one-stage
driver does beside its QR.

Why the host's LAPACK: most of dbdsdc's work is the merges' GEMMs, which threaded
BLAS runs at its GEMM speed, where the QR's rotations are a sequential chain; that is
what dgesdd gains over dgesvd. A GPU version would keep the tree and the deflation on the
host (or in one thread block per subproblem), solve each merge's secular equations with
one GPU thread per root, and do the merges' GEMMs with cuBLAS on U and Vᵀ resident on the
device, which leaves only the O(n²) deflation and secular work off the GEMM path.

The call: SciPy's :mod:`scipy.linalg.cython_lapack` exports its LAPACK wrappers for
Cython as ``__pyx_capi__``, a dict from name to a PyCapsule that holds the C function's
address; the capsule's name is the C signature. ``ctypes.pythonapi.PyCapsule_GetPointer``
(with that name) gives the address, and a ``ctypes.CFUNCTYPE`` calls it with every
argument by pointer, as Fortran takes them. ctypes releases the GIL for the call, and
LAPACK runs with SciPy's BLAS threads as they are set (threadpoolctl,
``OPENBLAS_NUM_THREADS``). SciPy's LAPACK has 32-bit INTEGERs (LP64), so the workspace,
3n² + 4n entries, must stay below 2³¹: n ≤ 26754.

float32 input is computed in float64 and the results rounded back: one code path, and
vectors orthogonal to float64 roundoff before rounding. That costs speed: on the
bidiagonal of a Gaussian matrix (n = 1000, 2000; one thread of a 2-core CPU),
sbdsdc took 0.056 and 0.35 s against 0.11 and 0.64 s here, its U and Vᵀ orthogonal to
0.4 n·ε (float32's ε) against 0.05. Both are well within the 30 n·ε the tests ask, so
where float32 speed matters sbdsdc (the capsule ``"sbdsdc"``, float32 arrays) is the
change to make.
"""

import ctypes
import functools
import threading

import numpy as np
from scipy.linalg import cython_lapack

from .._core.errors import LinAlgError
from .._core.scaling import safe_exponent

# Workspace lengths, from LAPACK's documentation of DBDSDC: LWORK >= 3·n² + 4·n for
# COMPQ = 'I' (dlasd0 documents 3·n² + 2·n; dbdsdc starts it at WORK(2n − 1) for a lower
# B, hence 2·n more), LWORK >= 4·n for COMPQ = 'N' (dlasdq → dbdsqr's values-only path),
# IWORK of 8·n. The documented sizes, though an upper B would do with less.
_LWORK = {"I": lambda n: 3 * n * n + 4 * n, "N": lambda n: 4 * n}
_IWORK_PER_ROW = 8
# dlasd0's leaves (ILAENV's SMLSIZ, as dbdsdc passes it).
_SMLSIZ = 25
# LAPACK INTEGER in SciPy's cython_lapack: a C int (LP64), so every index < 2³¹.
_LP64_MAX_INDEX = 2 ** 31 - 1

# The dtype of the results by the promoted dtype of (d, e); computed in float64 always.
_RESULT_DTYPE = {np.dtype(np.float32): np.float32, np.dtype(np.float64): np.float64}


def _address(name):
    """The address of SciPy's LAPACK function ``name`` (module docstring: the capsule)."""
    capsule = cython_lapack.__pyx_capi__[name]
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return get_pointer(capsule, get_name(capsule))


_DOUBLES = np.ctypeslib.ndpointer(np.float64, flags="F_CONTIGUOUS, WRITEABLE")
_INTS = np.ctypeslib.ndpointer(np.intc, flags="F_CONTIGUOUS, WRITEABLE")
_INT_P = ctypes.POINTER(ctypes.c_int)


@functools.cache
def _dbdsdc():
    """dbdsdc of SciPy's LAPACK as a ctypes function."""
    # uplo, compq, n, d, e, u, ldu, vt, ldvt, q, iq, work, iwork, info
    prototype = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_char_p, _INT_P, _DOUBLES,
                                 _DOUBLES, _DOUBLES, _INT_P, _DOUBLES, _INT_P, _DOUBLES, _INTS,
                                 _DOUBLES, _INTS, _INT_P)
    return prototype(_address("dbdsdc"))


@functools.cache
def _dlasd0():
    """dlasd0 (dbdsdc's divide and conquer, B n×(n + sqre)) as a ctypes function."""
    # n, sqre, d, e, u, ldu, vt, ldvt, smlsiz, iwork, work, info
    prototype = ctypes.CFUNCTYPE(None, _INT_P, _INT_P, _DOUBLES, _DOUBLES, _DOUBLES, _INT_P,
                                 _DOUBLES, _INT_P, _INT_P, _INTS, _DOUBLES, _INT_P)
    return prototype(_address("dlasd0"))


def _call_dbdsdc(compq, d, e):
    """dbdsdc on the float64 arrays d (n ≥ 2) and e (n − 1), overwritten; returns (u, vt),
    Fortran-ordered n×n (1×1 dummies for COMPQ = 'N'). d holds the values on return."""
    n = d.shape[0]
    size = n if compq == "I" else 1
    u = np.empty((size, size), order="F")
    vt = np.empty((size, size), order="F")
    dummy_q, dummy_iq = np.empty(1), np.empty(1, np.intc)  # referenced for COMPQ = 'P' only
    work = np.empty(_LWORK[compq](n))
    iwork = np.empty(_IWORK_PER_ROW * n, np.intc)
    info = ctypes.c_int(0)
    _dbdsdc()(b"U", compq.encode(), ctypes.byref(ctypes.c_int(n)), d, e,
              u, ctypes.byref(ctypes.c_int(size)), vt, ctypes.byref(ctypes.c_int(size)),
              dummy_q, dummy_iq, work, iwork, ctypes.byref(info))
    if info.value < 0:
        raise RuntimeError(f"dbdsdc rejected its argument {-info.value}: a bug in gpusvd")
    if info.value > 0:
        raise LinAlgError(f"dbdsdc (divide and conquer, n = {n}) did not converge: "
                          f"INFO = {info.value} (a leaf's QR or a merge's secular "
                          f"equation reached its iteration limit)")
    return u, vt


_WORKSPACE = threading.local()


def _workspace(doubles, ints):
    """This thread's LAPACK workspace of at least ``doubles`` float64 and ``ints`` C int
    entries, kept between calls: a leaf's 0.4 MB, allocated afresh, is fresh pages to
    map, which host threads then fault in one at a time."""
    work, iwork = getattr(_WORKSPACE, "work", None), getattr(_WORKSPACE, "iwork", None)
    if work is None or work.shape[0] < doubles:
        work = _WORKSPACE.work = np.empty(doubles)
    if iwork is None or iwork.shape[0] < ints:
        iwork = _WORKSPACE.iwork = np.empty(ints, np.intc)
    return work, iwork


def leaf_svd(d, e, sqre):
    """SVD of the real upper bidiagonal n×(n + sqre) B, sqre ∈ {0, 1}, with diagonal d
    (n ≥ 2) and superdiagonal e (n − 1 + sqre entries, the last in column n for sqre =
    1), by LAPACK's dlasd0 (dbdsdc's divide and conquer without its scaling and its
    splits: B's largest entry should be near 1), in float64; d and e are not modified.

    Returns (U, s, Vt): U n×n, s (n,) nonnegative and in no particular order, Vt
    (n + sqre)×(n + sqre) whose last row, for sqre = 1, spans B's null space; U and Vt
    Fortran-ordered. The leaves of :mod:`.dc_svd`, faster than gesdd on the dense block,
    which first reduces it to a bidiagonal again (NOTES.md, "The solver's host work").
    ctypes releases the GIL for the call, so host threads can each take some."""
    n = d.shape[0]
    m = n + sqre
    # Copies, as dlasd0 overwrites d and e; e one longer than dlasd0 reads (m − 1).
    d = np.array(d, np.float64)
    e = np.concatenate((np.asarray(e, np.float64), [0.0]))
    # U and Vt enter as the identity: dlasd0 multiplies its leaves' vectors into them.
    u = np.eye(n, order="F")
    vt = np.eye(m, order="F")
    work, iwork = _workspace(3 * m * m + 2 * m, _IWORK_PER_ROW * n)  # as documented
    info = ctypes.c_int(0)
    _dlasd0()(ctypes.byref(ctypes.c_int(n)), ctypes.byref(ctypes.c_int(sqre)), d, e, u,
              ctypes.byref(ctypes.c_int(n)), vt, ctypes.byref(ctypes.c_int(m)),
              ctypes.byref(ctypes.c_int(_SMLSIZ)), iwork, work, ctypes.byref(info))
    if info.value < 0:
        raise RuntimeError(f"dlasd0 rejected its argument {-info.value}: a bug in gpusvd")
    if info.value > 0:
        raise LinAlgError(f"dlasd0 (divide and conquer, n = {n}) did not converge: "
                          f"INFO = {info.value}")
    return u, d, vt


def _check(d, e):
    """d and e as 1-D arrays and the dtype of the results."""
    d, e = np.asarray(d), np.asarray(e)
    dtype = np.result_type(d, e)
    if dtype.kind in "biu":
        dtype = np.dtype(np.float64)
    if dtype not in _RESULT_DTYPE:
        raise ValueError(f"d and e must be real (float32, float64 or integer), got {dtype}")
    if d.ndim != 1 or e.ndim != 1 or e.shape[0] != max(d.shape[0] - 1, 0):
        raise ValueError(f"d must be 1-D of length n and e 1-D of length n-1, got shapes "
                         f"{d.shape} and {e.shape}")
    if 3 * d.shape[0] ** 2 + 4 * d.shape[0] > _LP64_MAX_INDEX:
        raise ValueError(f"n = {d.shape[0]} is too large for LAPACK with 32-bit integers "
                         f"(dbdsdc's workspace 3n² + 4n must stay below 2³¹: n ≤ 26754)")
    if not (np.isfinite(d).all() and np.isfinite(e).all()):
        raise LinAlgError("the bidiagonal holds NaN or infinity: the input was not finite "
                          "(check_finite=True rejects such input up front)")
    return d, e, _RESULT_DTYPE[dtype]


def bidiagonal_svd(d, e, *, compute_uv=True):
    """SVD of the real upper bidiagonal B = diag(d) + diag(e, 1) by divide and conquer.

    B = U·diag(s)·Vt through LAPACK's dbdsdc (Gu & Eisenstat; module docstring), in
    float64 whatever the input's precision. Backward stable: the values are accurate to
    about n·ε·σ₁, not each to itself (for that, dqds); the vectors are orthogonal to
    about n·ε.

    Parameters
    ----------
    d : (n,) array_like
        The diagonal of B, float32, float64 or integer; not modified.
    e : (n - 1,) array_like
        The superdiagonal of B (empty for n ≤ 1); not modified.
    compute_uv : bool, optional
        Whether to compute U and Vt (default True). Without them dbdsdc's values-only
        path runs (dlasdq → dbdsqr → dqds, relatively accurate), and s alone is returned.

    Returns
    -------
    U : (n, n) numpy.ndarray
        Left singular vectors as columns, Fortran-ordered as LAPACK writes them (no copy
        for float64 input; ``numpy.ascontiguousarray`` would cost one n×n copy).
    s : (n,) numpy.ndarray
        The singular values, nonnegative and descending.
    Vt : (n, n) numpy.ndarray
        Right singular vectors as rows, Fortran-ordered.

    float32 if d and e are float32 (computed in float64 and rounded), else float64. With
    ``compute_uv=False`` only ``s``.

    Raises
    ------
    ValueError
        If d or e is not 1-D of lengths n and n − 1, is complex, or n > 26754 (LAPACK's
        32-bit integers).
    gpusvd.LinAlgError
        If d or e holds NaN or infinity (as the bidiagonal QR does), or dbdsdc does not
        converge.

    Examples
    --------
    >>> import numpy as np
    >>> from gpusvd.bidiagonal.dbdsdc import bidiagonal_svd
    >>> u, s, vt = bidiagonal_svd([3.0, 1.0], [4.0])
    >>> np.round(s, 6)
    array([5.064495, 0.592359])
    >>> b = np.array([[3.0, 4.0], [0.0, 1.0]])
    >>> bool(np.allclose(u @ np.diag(s) @ vt, b))
    True
    """
    d, e, dtype = _check(d, e)
    n = d.shape[0]
    if n <= 1:
        # dbdsdc would return U = SIGN(1, d) (Fortran's SIGN of −0.0 varies by compiler)
        s = np.abs(d).astype(dtype)
        u = np.where(d < 0, -1.0, 1.0).astype(dtype).reshape(n, n)
        return (u, s, np.ones((n, n), dtype)) if compute_uv else s
    # An exact power of two brings max |entry| into dgesvd's safe range: dbdsdc scales
    # only above SMLSIZ rows, and its leaves' QR has an absolute floor of n²·underflow.
    amax = max(float(np.abs(d).max()), float(np.abs(e).max()))
    k = safe_exponent(amax, np.float64)
    d64 = np.ldexp(d.astype(np.float64), k)  # new arrays: dbdsdc overwrites d and e
    e64 = np.ldexp(e.astype(np.float64), k)
    u, vt = _call_dbdsdc("I" if compute_uv else "N", d64, e64)
    s = np.ldexp(d64, -k).astype(dtype, copy=False)
    if not compute_uv:
        return s
    return u.astype(dtype, copy=False), s, vt.astype(dtype, copy=False)
