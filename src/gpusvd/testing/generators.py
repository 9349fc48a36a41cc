"""Test matrices with known singular values, condition numbers or structure.

Every generator builds its matrix on the CPU with NumPy from a
``numpy.random.Generator`` seeded by ``seed``, so the same seed gives the same
bits on every machine, and returns a NumPy array of ``dtype`` (float32, float64,
complex64 or complex128; default float64). Matrices with prescribed singular
values are formed in float64/complex128 and rounded once to ``dtype``.

The spectra follow LAPACK's test generator ``xLATMS`` (modes 1-4) and its SVD
driver test ``xDRVBD`` (types 1-5); the graded matrices are those on which
one-sided Jacobi is relatively accurate (Demmel and Veselić, SIAM J. Matrix Anal.
Appl. 13 (1992)); ``low_rank`` is the generator of the QUIC-SVD paper.
"""

import numpy as np

_DTYPES = tuple(np.dtype(t) for t in ("float32", "float64", "complex64", "complex128"))

# Orders of magnitude spanned by bidiagonal(kind="graded"): beyond 1/eps, so that
# only relatively accurate algorithms resolve the small singular values, and small
# enough that squares of the entries stay normal numbers (float32: 1e-20 > tiny).
_GRADED_BIDIAGONAL_ORDERS = {np.dtype("float32"): 10, np.dtype("float64"): 20}

_CONDITION_MODES = ("geometric", "arithmetic", "cluster_small", "cluster_large")
_LAPACK_KINDS = ("zero", "identity", "evenly_spaced", "near_underflow", "near_overflow")


def _check_dtype(dtype, allowed=_DTYPES):
    dtype = np.dtype(dtype)
    if dtype not in allowed:
        raise ValueError(f"dtype must be one of {[str(t) for t in allowed]}, got {dtype}")
    return dtype


def _working(dtype):
    """float64 or complex128: the precision in which spectra are imposed."""
    return np.dtype(np.complex128 if dtype.kind == "c" else np.float64)


def _gaussian(rng, shape, dtype):
    """Standard normal entries; complex: real and imaginary parts each standard normal."""
    if np.dtype(dtype).kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _haar_columns(rng, m, k, dtype):
    """m×k with orthonormal columns, Haar distributed: QR of a Gaussian with the
    diagonal of R made positive (Mezzadri, Notices AMS 54 (2007), Section 5)."""
    q, r = np.linalg.qr(_gaussian(rng, (m, k), dtype))
    d = np.diagonal(r)
    return q * (d / np.abs(d))


def random_matrix(m, n, *, dtype=np.float64, seed=None):
    """An m×n matrix of independent standard normal entries.

    For complex ``dtype`` the real and imaginary parts are each standard normal.

    Parameters
    ----------
    m, n : int
        Number of rows and of columns.
    dtype : data-type, optional
        ``np.float32``, ``np.float64`` (default), ``np.complex64`` or ``np.complex128``,
        or the name of one.
    seed : int, numpy.random.Generator or None, optional
        Seed of ``numpy.random.default_rng``: the same seed gives the same matrix. A
        Generator is used as it is (and advanced); None (default) draws fresh entropy, so
        each call gives a different matrix.

    Returns
    -------
    a : (m, n) numpy.ndarray of ``dtype``
        The matrix of standard normal entries.

    Raises
    ------
    ValueError
        If ``dtype`` is not one of the four above.

    Examples
    --------
    >>> from gpusvd.testing import random_matrix
    >>> random_matrix(3, 2, dtype="complex64", seed=0).dtype
    dtype('complex64')
    """
    dtype = _check_dtype(dtype)
    return _gaussian(np.random.default_rng(seed), (m, n), dtype)


def haar_orthogonal(n, *, dtype=np.float64, seed=None):
    """An n×n Haar-distributed orthogonal (real ``dtype``) or unitary (complex) matrix.

    QR of a Gaussian matrix with the sign (phase) of R's diagonal moved into Q, which
    makes the distribution exactly Haar (Mezzadri 2007).

    Parameters
    ----------
    n : int
        Order of the matrix.
    dtype : data-type, optional
        ``np.float32``, ``np.float64`` (default), ``np.complex64`` or ``np.complex128``,
        or the name of one.
    seed : int, numpy.random.Generator or None, optional
        Seed of ``numpy.random.default_rng``: the same seed gives the same matrix. A
        Generator is used as it is (and advanced); None (default) draws fresh entropy, so
        each call gives a different matrix.

    Returns
    -------
    q : (n, n) numpy.ndarray of ``dtype``
        The orthogonal or unitary matrix, formed in float64 (complex128) and rounded
        once to ``dtype``.

    Raises
    ------
    ValueError
        If ``dtype`` is not one of the four above.

    Examples
    --------
    >>> import numpy as np
    >>> from gpusvd.testing import haar_orthogonal
    >>> q = haar_orthogonal(4, seed=0)
    >>> bool(np.allclose(q.T @ q, np.eye(4)))
    True
    """
    dtype = _check_dtype(dtype)
    rng = np.random.default_rng(seed)
    return _haar_columns(rng, n, n, _working(dtype)).astype(dtype)


def with_singular_values(s, m, n, *, dtype=np.float64, seed=None):
    """A = U diag(s) Vᴴ with Haar U (m×k), V (n×k), k = len(s) ≤ min(m, n).

    The singular values of A are the entries of ``s`` (any order), plus
    min(m, n) − k zeros. A is formed in float64/complex128 and rounded to ``dtype``.

    Parameters
    ----------
    s : (k,) array_like
        The singular values to impose: finite, non-negative, in any order, with
        k ≤ min(m, n).
    m, n : int
        Number of rows and of columns of A.
    dtype : data-type, optional
        ``np.float32``, ``np.float64`` (default), ``np.complex64`` or ``np.complex128``,
        or the name of one.
    seed : int, numpy.random.Generator or None, optional
        Seed of ``numpy.random.default_rng``: the same seed gives the same matrix. A
        Generator is used as it is (and advanced); None (default) draws fresh entropy, so
        each call gives a different matrix.

    Returns
    -------
    a : (m, n) numpy.ndarray of ``dtype``
        The matrix A.

    Raises
    ------
    ValueError
        If ``s`` is not 1-D, is longer than min(m, n), or has a negative or
        non-finite entry, or if ``dtype`` is not one of the four above.

    Examples
    --------
    >>> import scipy.linalg
    >>> from gpusvd.testing import with_singular_values
    >>> a = with_singular_values([3.0, 2.0, 1.0], 5, 4, seed=0)
    >>> scipy.linalg.svdvals(a).round(12)
    array([3., 2., 1., 0.])
    """
    dtype = _check_dtype(dtype)
    s = np.asarray(s, dtype=np.float64)
    if s.ndim != 1 or s.size > min(m, n):
        raise ValueError(f"s must be 1-D of length at most min(m, n) = {min(m, n)}, "
                         f"got shape {s.shape}")
    if not np.all(np.isfinite(s) & (s >= 0)):
        raise ValueError("singular values must be finite and non-negative")
    rng = np.random.default_rng(seed)
    u = _haar_columns(rng, m, s.size, _working(dtype))
    v = _haar_columns(rng, n, s.size, _working(dtype))
    return ((u * s) @ v.conj().T).astype(dtype)


def _condition_spectrum(k, cond, mode):
    """xLATMS modes 1-4: k singular values from 1 down to 1/cond."""
    if k <= 1:
        return np.ones(k)
    if mode == "cluster_small":                                        # MODE 1
        return np.r_[1.0, np.full(k - 1, 1 / cond)]
    if mode == "cluster_large":                                        # MODE 2
        return np.r_[np.ones(k - 1), 1 / cond]
    t = np.arange(k) / (k - 1)
    if mode == "geometric":                                            # MODE 3
        return cond ** -t
    return 1 - t * (1 - 1 / cond)                                      # MODE 4


def with_condition(m, n, cond, *, mode="geometric", dtype=np.float64, seed=None):
    """A matrix with singular values from 1 down to 1/cond, spaced as LAPACK's xLATMS.

    With k = min(m, n) and t_i = i/(k − 1), i = 0 … k − 1, the singular values are

    - ``"geometric"`` (MODE 3): σ_i = cond^(−t_i);
    - ``"arithmetic"`` (MODE 4): σ_i = 1 − t_i (1 − 1/cond);
    - ``"cluster_small"`` (MODE 1): σ_0 = 1, all others 1/cond;
    - ``"cluster_large"`` (MODE 2): all 1 except σ_{k−1} = 1/cond.

    The 2-norm condition number is therefore ``cond`` when k ≥ 2; when k = 1 the one
    singular value is 1. Singular vectors are Haar, as in `with_singular_values`.

    Parameters
    ----------
    m, n : int
        Number of rows and of columns.
    cond : float
        The condition number σ_0/σ_{k−1}, at least 1.
    mode : {"geometric", "arithmetic", "cluster_small", "cluster_large"}, optional
        The spacing of the singular values, as above (default ``"geometric"``).
    dtype : data-type, optional
        ``np.float32``, ``np.float64`` (default), ``np.complex64`` or ``np.complex128``,
        or the name of one.
    seed : int, numpy.random.Generator or None, optional
        Seed of ``numpy.random.default_rng``: the same seed gives the same matrix. A
        Generator is used as it is (and advanced); None (default) draws fresh entropy, so
        each call gives a different matrix.

    Returns
    -------
    a : (m, n) numpy.ndarray of ``dtype``
        The matrix, formed in float64 (complex128) and rounded once to ``dtype``.

    Raises
    ------
    ValueError
        If ``mode`` is unknown, ``cond`` is below 1 (or NaN), or ``dtype`` is not one of
        the four above.

    Examples
    --------
    >>> import numpy as np
    >>> from gpusvd.testing import with_condition
    >>> a = with_condition(6, 4, 1e8, mode="arithmetic", seed=0)
    >>> round(float(np.linalg.cond(a)) / 1e8, 6)
    1.0
    """
    if mode not in _CONDITION_MODES:
        raise ValueError(f"mode must be one of {_CONDITION_MODES}, got {mode!r}")
    if not cond >= 1:
        raise ValueError(f"cond must be at least 1, got {cond}")
    s = _condition_spectrum(min(m, n), float(cond), mode)
    return with_singular_values(s, m, n, dtype=dtype, seed=seed)


def graded(m, n, *, side="left", grading=1e-10, dtype=np.float64, seed=None):
    """A graded matrix D·B, B·D or D₁·B·D₂ with B Gaussian (well conditioned).

    D (m×m for ``side="left"``, n×n for ``"right"``; both for ``"both"``) is diagonal
    with entries ``logspace`` from 1 down to ``grading``, in a random (seeded) order,
    so the row (column) norms of the result span about 1/``grading``; with "both"
    each of D₁, D₂ spans the full ``grading``. One-sided Jacobi computes the singular
    values of such matrices to high relative accuracy, bidiagonalization may not
    (Demmel and Veselić 1992).

    Parameters
    ----------
    m, n : int
        Number of rows and of columns.
    side : {"left", "right", "both"}, optional
        Grade the rows (D·B, default), the columns (B·D), or both (D₁·B·D₂).
    grading : float, optional
        The last entry of the ``logspace`` that forms D, positive and finite (default
        1e-10): the entries of D run from 1 to ``grading``.
    dtype : data-type, optional
        ``np.float32``, ``np.float64`` (default), ``np.complex64`` or ``np.complex128``,
        or the name of one.
    seed : int, numpy.random.Generator or None, optional
        Seed of ``numpy.random.default_rng``: the same seed gives the same matrix. A
        Generator is used as it is (and advanced); None (default) draws fresh entropy, so
        each call gives a different matrix.

    Returns
    -------
    a : (m, n) numpy.ndarray of ``dtype``
        The graded matrix, formed in float64 (complex128) and rounded once to ``dtype``.

    Raises
    ------
    ValueError
        If ``side`` is unknown, ``grading`` is not positive and finite, or ``dtype`` is
        not one of the four above.

    Examples
    --------
    >>> import numpy as np
    >>> from gpusvd.testing import graded
    >>> a = graded(5, 3, grading=1e-12, seed=0)
    >>> norms = np.linalg.norm(a, axis=1)
    >>> bool(1e11 < norms.max() / norms.min() < 1e13)
    True
    """
    dtype = _check_dtype(dtype)
    if side not in ("left", "right", "both"):
        raise ValueError(f"side must be 'left', 'right' or 'both', got {side!r}")
    if not 0 < grading < np.inf:
        raise ValueError(f"grading must be positive and finite, got {grading}")
    rng = np.random.default_rng(seed)
    b = _gaussian(rng, (m, n), _working(dtype))

    def scaling(k):
        return np.logspace(0, np.log10(grading), k)[rng.permutation(k)]

    if side in ("left", "both"):
        b = scaling(m)[:, None] * b
    if side in ("right", "both"):
        b = b * scaling(n)
    return b.astype(dtype)


def lapack_type(kind, m, n, *, dtype=np.float64, seed=None):
    """The test matrices of LAPACK's SVD driver test xDRVBD, types 1-5.

    With ε = ``np.finfo(dtype).eps`` (LAPACK's ULP) and τ = ``np.finfo(dtype).tiny``
    (LAPACK's UNFL; OVFL = 1/τ):

    - ``"zero"`` (type 1): the m×n zero matrix; all singular values 0.
    - ``"identity"`` (type 2): ones on the main diagonal of the m×n matrix; all
      min(m, n) singular values 1.
    - ``"evenly_spaced"`` (type 3): U diag(σ) Vᴴ with Haar U, V and σ evenly spaced
      from 1 down to ε (xLATMS mode 4 with COND = 1/ε, as xDRVBD's documentation
      says; its code uses the milder COND = min(m, n)). ‖A‖₂ = 1; rounding A to
      ``dtype`` moves each σ by O(ε), so compare with a reference SVD of A.
    - ``"near_underflow"`` (type 4): type 3 times τ/ε (xDRVBD's UNFL/ULP), so
      ‖A‖₂ = τ/ε (about 1e-292 in float64); squares of the entries underflow.
    - ``"near_overflow"`` (type 5): type 3 times ε/τ (xDRVBD's OVFL·ULP), so
      ‖A‖₂ = ε/τ (about 1e292 in float64); sums of squares of the entries overflow.

    Parameters
    ----------
    kind : {"zero", "identity", "evenly_spaced", "near_underflow", "near_overflow"}
        The xDRVBD type, as above.
    m, n : int
        Number of rows and of columns.
    dtype : data-type, optional
        ``np.float32``, ``np.float64`` (default), ``np.complex64`` or ``np.complex128``,
        or the name of one.
    seed : int, numpy.random.Generator or None, optional
        Seed of ``numpy.random.default_rng`` for the Haar factors of types 3-5 (types 1
        and 2 draw no random numbers): the same seed gives the same matrix. A Generator
        is used as it is (and advanced); None (default) draws fresh entropy, so each call
        gives a different matrix.

    Returns
    -------
    a : (m, n) numpy.ndarray of ``dtype``
        The test matrix; types 3-5 are formed in float64 (complex128) and rounded once
        to ``dtype``.

    Raises
    ------
    ValueError
        If ``kind`` is unknown or ``dtype`` is not one of the four above.

    Examples
    --------
    >>> import numpy as np
    >>> from gpusvd.testing import lapack_type
    >>> a = lapack_type("near_overflow", 4, 3, seed=0)
    >>> bool(np.isfinite(a).all() and np.abs(a).max() > 1e290)
    True
    """
    dtype = _check_dtype(dtype)
    if kind not in _LAPACK_KINDS:
        raise ValueError(f"kind must be one of {_LAPACK_KINDS}, got {kind!r}")
    if kind == "zero":
        return np.zeros((m, n), dtype)
    if kind == "identity":
        return np.eye(m, n, dtype=dtype)
    info = np.finfo(dtype)
    k = min(m, n)
    s = np.linspace(1.0, float(info.eps), k) if k > 1 else np.ones(k)
    a = with_singular_values(s, m, n, dtype=_working(dtype), seed=seed)
    scale = {"evenly_spaced": 1.0,
             "near_underflow": float(info.tiny) / float(info.eps),
             "near_overflow": float(info.eps) / float(info.tiny)}[kind]
    return (a * scale).astype(dtype)


def low_rank(m, n, rank, *, noise=0.0, dtype=np.float64, seed=None):
    """G·H with G (m×rank) and H (rank×n) Gaussian, plus optional Gaussian noise.

    This is the test generator of the QUIC-SVD paper. With ``noise`` > 0 a Gaussian
    matrix E scaled to ‖E‖_F = noise·‖G·H‖_F is added, so the result is of full rank
    with a gap after singular value ``rank``.

    Parameters
    ----------
    m, n : int
        Number of rows and of columns.
    rank : int
        Inner dimension of G·H, from 0 to min(m, n): the rank of the result without
        noise.
    noise : float, optional
        Frobenius norm of the added noise relative to ‖G·H‖_F, non-negative and finite
        (default 0.0, no noise).
    dtype : data-type, optional
        ``np.float32``, ``np.float64`` (default), ``np.complex64`` or ``np.complex128``,
        or the name of one.
    seed : int, numpy.random.Generator or None, optional
        Seed of ``numpy.random.default_rng``: the same seed gives the same matrix. A
        Generator is used as it is (and advanced); None (default) draws fresh entropy, so
        each call gives a different matrix.

    Returns
    -------
    a : (m, n) numpy.ndarray of ``dtype``
        G·H (+ E), formed in float64 (complex128) and rounded once to ``dtype``.

    Raises
    ------
    ValueError
        If ``rank`` is outside [0, min(m, n)], ``noise`` is negative or not finite, or
        ``dtype`` is not one of the four above.

    Examples
    --------
    >>> import numpy as np
    >>> from gpusvd.testing import low_rank
    >>> int(np.linalg.matrix_rank(low_rank(20, 10, 3, seed=0)))
    3
    """
    dtype = _check_dtype(dtype)
    if not 0 <= rank <= min(m, n):
        raise ValueError(f"rank must be in [0, min(m, n)] = [0, {min(m, n)}], got {rank}")
    if not 0 <= noise < np.inf:
        raise ValueError(f"noise must be non-negative and finite, got {noise}")
    rng = np.random.default_rng(seed)
    work = _working(dtype)
    a = _gaussian(rng, (m, rank), work) @ _gaussian(rng, (rank, n), work)
    if noise > 0:
        e = _gaussian(rng, (m, n), work)
        norm_e = np.linalg.norm(e)
        if norm_e > 0:
            a += e * (noise * np.linalg.norm(a) / norm_e)
    return a.astype(dtype)


STACK_KINDS = ("random", "rank", "graded", "kappa1e12") + _LAPACK_KINDS


def mixed_stack(kinds, m, n, *, dtype=np.float64, seed=None):
    """A stack of m×n matrices, one of each kind in ``kinds``: easy and hard matrices
    side by side, as a stacked SVD must take them (one hard matrix must not slow or spoil
    the others).

    Kinds: ``"random"`` (:func:`random_matrix`), ``"rank"`` (:func:`low_rank` of rank
    max(1, min(m, n) // 3)), ``"graded"`` (:func:`graded` with grading 1e-6),
    ``"kappa1e12"`` (:func:`with_condition`, κ = 10¹²), or a LAPACK type of
    :func:`lapack_type`.

    Parameters
    ----------
    kinds : sequence of str
        One kind per matrix, from :data:`STACK_KINDS`.
    m, n : int
        Rows and columns of every matrix.
    dtype : data-type, optional
        As for the other generators.
    seed : int, numpy.random.Generator or None, optional
        As for the other generators.

    Returns
    -------
    (len(kinds), m, n) numpy.ndarray of ``dtype``

    Raises
    ------
    ValueError
        For an unknown kind (or what the generator of a kind raises).

    Examples
    --------
    >>> from gpusvd.testing import mixed_stack
    >>> mixed_stack(["random", "zero", "kappa1e12"], 6, 4, seed=0).shape
    (3, 6, 4)
    """
    rng = np.random.default_rng(seed)
    mats = []
    for kind in kinds:
        if kind == "random":
            a = random_matrix(m, n, dtype=dtype, seed=rng)
        elif kind == "rank":
            a = low_rank(m, n, max(1, min(m, n) // 3), dtype=dtype, seed=rng)
        elif kind == "graded":
            a = graded(m, n, grading=1e-6, dtype=dtype, seed=rng)
        elif kind == "kappa1e12":
            a = with_condition(m, n, 1e12, dtype=dtype, seed=rng)
        elif kind in _LAPACK_KINDS:
            a = lapack_type(kind, m, n, dtype=dtype, seed=rng)
        else:
            raise ValueError(f"kind must be one of {', '.join(STACK_KINDS)}, got {kind!r}")
        mats.append(a)
    return np.stack(mats) if mats else np.zeros((0, m, n), _check_dtype(dtype))


def complex_symmetric(n, *, dtype=np.complex128, seed=None):
    """A random complex symmetric matrix, A = Aᵀ (not Hermitian): Takagi's input.

    A = (G + Gᵀ)/2 with G complex Gaussian; the result is exactly symmetric. A real
    ``dtype`` gives a real symmetric matrix.

    Parameters
    ----------
    n : int
        Order of the matrix.
    dtype : data-type, optional
        ``np.complex128`` (default), ``np.complex64``, ``np.float32`` or ``np.float64``,
        or the name of one.
    seed : int, numpy.random.Generator or None, optional
        Seed of ``numpy.random.default_rng``: the same seed gives the same matrix. A
        Generator is used as it is (and advanced); None (default) draws fresh entropy, so
        each call gives a different matrix.

    Returns
    -------
    a : (n, n) numpy.ndarray of ``dtype``
        The symmetric matrix, computed in ``dtype``.

    Raises
    ------
    ValueError
        If ``dtype`` is not one of the four above.

    Examples
    --------
    >>> import numpy as np
    >>> from gpusvd.testing import complex_symmetric
    >>> a = complex_symmetric(4, seed=0)
    >>> bool((a == a.T).all())
    True
    """
    dtype = _check_dtype(dtype)
    g = _gaussian(np.random.default_rng(seed), (n, n), dtype)
    return (g + g.T) / 2


def bidiagonal(n, *, kind="random", dtype=np.float64, seed=None):
    """The diagonal d (n) and superdiagonal e (max(n − 1, 0)) of an upper bidiagonal B.

    - ``"random"``: standard normal d and e.
    - ``"graded"``: the sequence d₁, e₁, d₂, e₂, …, dₙ decreases geometrically from
      1 to 1e-20 (float32: 1e-10), each entry times a random factor in [1, 2) and
      a random sign. Only relatively accurate methods (Demmel and Kahan, zero-shift
      QR) get the small singular values right.
    - ``"clustered"``: d = ±1 and e of size up to √ε, so all singular values lie
      within about 2√ε of 1.

    Only real dtypes: the bidiagonal form of a complex matrix can be made real.

    Parameters
    ----------
    n : int
        Order of B.
    kind : {"random", "graded", "clustered"}, optional
        The distribution of the entries, as above (default ``"random"``).
    dtype : data-type, optional
        ``np.float32`` or ``np.float64`` (default), or the name of one.
    seed : int, numpy.random.Generator or None, optional
        Seed of ``numpy.random.default_rng``: the same seed gives the same matrix. A
        Generator is used as it is (and advanced); None (default) draws fresh entropy, so
        each call gives a different matrix.

    Returns
    -------
    d : (n,) numpy.ndarray of ``dtype``
        The diagonal of B.
    e : (max(n − 1, 0),) numpy.ndarray of ``dtype``
        The superdiagonal of B.

    Raises
    ------
    ValueError
        If ``kind`` is unknown or ``dtype`` is not float32 or float64.

    Examples
    --------
    >>> from gpusvd.testing import bidiagonal
    >>> d, e = bidiagonal(5, kind="graded", seed=0)
    >>> d.shape, e.shape
    ((5,), (4,))
    """
    dtype = _check_dtype(dtype, _DTYPES[:2])
    if kind not in ("random", "graded", "clustered"):
        raise ValueError(f"kind must be 'random', 'graded' or 'clustered', got {kind!r}")
    rng = np.random.default_rng(seed)
    length = max(2 * n - 1, 0)
    if kind == "random":
        entries = rng.standard_normal(length)
    elif kind == "graded":
        decay = _GRADED_BIDIAGONAL_ORDERS[dtype] / max(length - 1, 1)
        entries = (rng.choice([-1.0, 1.0], length) * rng.uniform(1, 2, length)
                   * 10.0 ** (-decay * np.arange(length)))
    else:
        entries = rng.choice([-1.0, 1.0], length)
        entries[1::2] *= np.sqrt(np.finfo(dtype).eps) * rng.uniform(size=length // 2)
    entries = entries.astype(dtype)
    return entries[0::2].copy(), entries[1::2].copy()
