"""Stage 1 of the two-stage Hermitian eigenvalue reduction: dense Hermitian to Hermitian band.

A = Q·B·Qᴴ with B Hermitian and B[i, j] = 0 for |i − j| > b, the bandwidth b.  Panel k
(columns k … k + b − 1, k a multiple of b) takes one step, as LAPACK's dsytrd_sy2sb /
zhetrd_he2hb with uplo = "L" and MAGMA's zhetrd_he2hb:

1. QR of the panel below the band, A(k+b:, k:k+b) = Q_k·R_k, Q_k = I − V·T·Vᴴ in compact
   WY form (Schreiber & Van Loan, SIAM J. Sci. Stat. Comput. 10 (1989) 53–57).  The panel
   becomes R_k, upper triangular, so column j keeps its rows up to j + b.
2. The two-sided update of the trailing matrix A22 = A(k+b:, k+b:) ← Q_kᴴ·A22·Q_k in
   LAPACK's symmetric rank-2b form (the derivation is at ``_two_sided_update``):
   X = A22·V·T, W = X − ½·V·(Tᴴ·(Vᴴ·X)), A22 ← A22 − V·Wᴴ − W·Vᴴ.

This is the first stage of the framework of Bischof, Lang & Sun ("A framework for symmetric
band reduction", ACM TOMS 26 (2000) 581–601), of Haidar, Ltaief & Dongarra's two-stage
tridiagonal reduction (SC'11, "Parallel reduction to condensed forms for symmetric
eigenvalue problems using aggregated fine-grained and memory-aware kernels") and of
LAPACK 3.7's dsytrd_2stage.  The one-stage tridiagonalization (LAPACK's sytrd, cuSOLVER's
syevd) spends half its 4n³/3 flops in matrix–vector products with the whole trailing
matrix, bound by memory bandwidth; here every flop outside the panel QRs is a GEMM.  In
LAPACK's form the update is a hemm and a her2k on one triangle, about 4n³/3 flops over the
reduction.  Departure: NumPy and CuPy have no hemm or her2k, so both triangles of A22 are
updated, X by one GEMM and V·Wᴴ + W·Vᴴ = [V W]·[W V]ᴴ by one GEMM of inner size 2b: about
2n³ flops, every one in a large GEMM.

The kernels are band.py's twins (``band._TWINS``, by the array namespace): the panel QR
(geqrf) in place on its view, V and T of each panel by one launch each on the GPU, and
every update a GEMM in place on the column-major view of A22 with preallocated column-major
workspaces (cuBLAS on CuPy views as they lie, band_cuda.py: CuPy's matmul copies a strided
view, and ``a22 -= x @ y`` adds an A22-sized temporary and a pass).  So ``a`` is reduced
in a Fortran-ordered work array (``a`` itself when it is one).

Storage (LAPACK's lower form; the upper triangle is ours, LAPACK leaves it alone): only the
lower triangle of ``a`` and the real part of its diagonal are read; the upper triangle is
first made their conjugate mirror.  On return the lower band of the factors is B's, the
Householder vectors of Q_k lie below it in panel k (unit diagonal implied, on the b-th
subdiagonal), the upper triangle holds B's upper band and zeros, and T of every panel is
kept in a (panels, b, b) array, zero-padded where a panel has fewer than b reflectors.
Complex A: B's diagonal and b-th subdiagonal are real (geqrf's R has a real diagonal), the
diagonals between them complex (unitary diagonal scalings cannot make more than a
tridiagonal real); stage 2 (sym_bulge.py) works in complex arithmetic.
"""

from typing import Any, NamedTuple

from .._core.backend import array_namespace
from .band import _TWINS, _apply_blocks, _ct


class HermitianBandReduction(NamedTuple):
    """A = Q·B·Qᴴ as :func:`reduce_to_hermitian_band` returns it."""

    factors: Any   # (n, n): B's band and the Householder vectors of Q (module docstring)
    t: Any         # (panels, b, b): T of each Q_k, zero-padded where it has fewer reflectors
    bandwidth: int


def _panels(n, b):
    """The first columns of the panels with a row below the band.  A one-row panel (and a
    panel's last column with one entry below the band) is in the band already, but geqrf's
    one-entry reflector makes that entry real, as in LAPACK (its loop runs to n − b): so
    the b-th subdiagonal of B is real, and b = 1 gives a real tridiagonal."""
    return range(0, max(n - b, 0), b)


def _mirror_lower(a, b):
    """Make ``a`` exactly Hermitian from its lower triangle and the real part of its
    diagonal, one block column of width b at a time (no n×n temporaries)."""
    xp = array_namespace(a)
    for k in range(0, a.shape[0], b):
        block = a[k:k + b, k:k + b]
        lower = xp.tril(block, -1)
        a[k:k + b, k:k + b] = lower + _ct(lower) + xp.diag(xp.diag(block).real)
        a[k:k + b, k + b:] = _ct(a[k + b:, k:k + b])


def _hermitian_part(a, start, stop):
    """a[start:stop, start:stop] ← its Hermitian part (D + Dᴴ)/2.  The trailing update
    changes both triangles by separate GEMMs, so they differ by rounding; the mean makes B
    exactly Hermitian with an exactly real diagonal, each entry within rounding of both."""
    block = a[start:stop, start:stop]
    a[start:stop, start:stop] = (block + _ct(block)) / 2


def _two_sided_update(a22, v, t, x, y, gemm):
    """a22 ← Qᴴ·a22·Q for Hermitian a22 and Q = I − V·T·Vᴴ (geqrf's Q: H_0·…·H_{r−1}), in
    place by ``gemm`` (band._TWINS); x (m × 4r) and y (r × 2r) are column-major workspaces.

    Qᴴ·A·Q = A − A·V·T·Vᴴ − V·Tᴴ·Vᴴ·A + V·Tᴴ·Vᴴ·A·V·T·Vᴴ.  With X = A·V·T the second term
    is X·Vᴴ and, A being Hermitian, the third is V·Xᴴ; the last is V·M·Vᴴ with
    M = Tᴴ·Vᴴ·X = Tᴴ·(Vᴴ·A·V)·T Hermitian.  Splitting it in halves, ½·V·M·Vᴴ + ½·V·Mᴴ·Vᴴ,
    and W = X − ½·V·M gives Qᴴ·A·Q = A − V·Wᴴ − W·Vᴴ: LAPACK zhetrd_he2hb's lower-case
    W = A·(V·T) − ½·V·((V·T)ᴴ·W).  T (not Tᴴ) in X because the right factor is Q itself.
    GEMMs only take α = ±1, so ½·M is formed by halving M, exact in binary.

    x holds [V W V A·V], so that V·Wᴴ + W·Vᴴ = [V W]·[W V]ᴴ is one GEMM of inner size 2r
    on adjacent columns: one pass over A22 where two GEMMs of inner size r make two (one
    EPYC core, float64, b = 32, stage 1 at n = 2000: 0.88 s with one, 1.25 s with two);
    the copies of V are m × r."""
    r = v.shape[1]
    x[:, :r] = v
    x[:, 2 * r:3 * r] = v
    w, av = x[:, r:2 * r], x[:, 3 * r:]
    vx, m = y[:, :r], y[:, r:]
    gemm(av, a22, v)                       # A·V
    gemm(w, av, t)                         # X = A·V·T
    gemm(vx, v, w, op_a="C")               # Vᴴ·X
    gemm(m, t, vx, op_a="C")               # M = Tᴴ·Vᴴ·X
    m *= 0.5
    gemm(w, v, m, subtract=True)           # W = X − ½·V·M
    gemm(a22, x[:, :2 * r], x[:, r:3 * r], op_b="C", subtract=True)


def reduce_to_hermitian_band(a, *, bandwidth):
    """Reduce Hermitian ``a`` to Hermitian band form, A = Q·B·Qᴴ (module docstring).

    Parameters
    ----------
    a : (n, n) float32, float64, complex64 or complex128 NumPy or CuPy array
        Hermitian: only its lower triangle and the real part of its diagonal are read.
        OVERWRITTEN with the factors and returned in them: pass a copy to keep it.
    bandwidth : int
        b ≥ 1: B[i, j] = 0 for |i − j| > b.  b = 1 gives a tridiagonal, real for complex
        A.  For b ≥ n − 1 A is a band already: its upper triangle is made the mirror of
        the lower and, for b = n − 1, B[n − 1, 0] real.

    Returns
    -------
    HermitianBandReduction
        :func:`hermitian_band_of` takes B's lower band out of it; :func:`apply_q` applies Q.

    Raises
    ------
    ValueError
        If ``a`` is not square or ``bandwidth`` < 1.

    Examples
    --------
    >>> import numpy as np, scipy.linalg
    >>> x = np.random.default_rng(0).standard_normal((8, 8))
    >>> a = x + x.T
    >>> red = reduce_to_hermitian_band(a.copy(), bandwidth=3)
    >>> band = hermitian_band_of(red)            # (8, 4): band[i, k] = B[i + k, i]
    >>> w = scipy.linalg.eigvals_banded(band.T, lower=True)   # LAPACK's lower band storage
    >>> bool(np.allclose(w, np.linalg.eigvalsh(a)))
    True
    """
    xp = array_namespace(a)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError("reduce_to_hermitian_band needs a square matrix, "
                         f"got a of shape {a.shape}")
    if bandwidth < 1:
        raise ValueError(f"bandwidth must be a positive integer, got {bandwidth}")
    b, n = bandwidth, a.shape[0]
    gemm, geqrf, unit_lower, wy_factor = _TWINS[xp.__name__]
    work = a if a.flags.f_contiguous else xp.asfortranarray(a)
    _mirror_lower(work, b)
    panels = _panels(n, b)
    t_all = xp.zeros((len(panels), b, b), dtype=a.dtype)
    # The update's workspaces, column-major: [V W V A·V] (n × 4b) and [Vᴴ·X M] (b × 2b).
    x = xp.empty((n, 4 * b), dtype=a.dtype, order="F")
    y = xp.empty((b, 2 * b), dtype=a.dtype, order="F")
    for p, k in enumerate(panels):
        j = k + b
        _hermitian_part(work, k, j)  # final: the later panels touch only rows and columns j:
        panel = work[j:, k:j]
        tau = geqrf(panel)
        work[k:j, j:] = _ct(xp.triu(panel))  # R_kᴴ and zeros: the upper triangle stays Bᴴ's
        r = tau.shape[0]  # min(b, n − j) reflectors
        v = unit_lower(panel[:, :r])
        t = wy_factor(v, tau, t_all[p, :r, :r])
        _two_sided_update(work[j:, j:], v, t, x[j:, :4 * r], y[:r, :2 * r], gemm)
    _hermitian_part(work, len(panels) * b, n)  # the last diagonal block, up to b + 1 wide
    if work is not a:
        a[...] = work
    return HermitianBandReduction(a, t_all, b)


def hermitian_band_of(reduction):
    """B's lower band in LAPACK's lower band storage, transposed.

    Parameters
    ----------
    reduction : HermitianBandReduction
        From :func:`reduce_to_hermitian_band`.

    Returns
    -------
    band : (n, b + 1) array in the factors' namespace and dtype
        band[i, k] = B[i + k, i], zero past row n − 1: the (real) diagonal in column 0,
        subdiagonal k in column k.  ``band.T`` is LAPACK's (b + 1, n) lower AB.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.diag([1.0, 2.0, 3.0]) + np.diag([4.0, 5.0], -1)
    >>> hermitian_band_of(reduce_to_hermitian_band(a, bandwidth=1))
    array([[1., 4.],
           [2., 5.],
           [3., 0.]])
    """
    xp = array_namespace(reduction.factors)
    f = reduction.factors
    n = f.shape[0]
    cols = xp.arange(n)[:, None]
    rows = cols + xp.arange(reduction.bandwidth + 1)[None, :]
    return xp.where(rows < n, f[xp.minimum(rows, n - 1), cols], 0)


def hermitian_band_matrix(band):
    """The dense n×n Hermitian matrix of a lower band.

    Parameters
    ----------
    band : (n, b + 1) array
        As :func:`hermitian_band_of`: band[i, k] = B[i + k, i].

    Returns
    -------
    dense : (n, n) array in the namespace and dtype of ``band``
        B, with B[i, i + k] = conj(band[i, k]); the diagonal's imaginary parts are
        ignored, as in LAPACK's band storage.

    Examples
    --------
    >>> import numpy as np
    >>> hermitian_band_matrix(np.array([[1.0, 4.0], [2.0, 5.0], [3.0, 0.0]]))
    array([[1., 4., 0.],
           [4., 2., 5.],
           [0., 5., 3.]])
    """
    xp = array_namespace(band)
    n, width = band.shape
    dense = xp.zeros((n, n), dtype=band.dtype)
    idx = xp.arange(n)
    dense[idx, idx] = band[:, 0].real
    for k in range(1, min(width, n)):
        idx = xp.arange(n - k)
        dense[idx + k, idx] = band[:n - k, k]
        dense[idx, idx + k] = band[:n - k, k].conj()
    return dense


def apply_q(reduction, c):
    """Q·c, Q = Q_0·Q_1·… of :func:`reduce_to_hermitian_band`, one compact WY block per
    panel, the last panel first: three GEMMs each, in place on c's column-major rows
    (``band._TWINS``; a C-ordered ``c`` is worked on in a Fortran-ordered copy).

    Parameters
    ----------
    reduction : HermitianBandReduction
        From :func:`reduce_to_hermitian_band`.
    c : (n, m) array in the factors' namespace
        OVERWRITTEN with Q·c.

    Returns
    -------
    c : (n, m) array
        Q·c, in ``c``.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(1).standard_normal((7, 7))
    >>> a = x + x.T
    >>> red = reduce_to_hermitian_band(a.copy(), bandwidth=2)
    >>> q = apply_q(red, np.eye(7))
    >>> b = hermitian_band_matrix(hermitian_band_of(red))
    >>> bool(np.allclose(q.T @ q, np.eye(7)) and np.allclose(q @ b @ q.T, a))
    True
    """
    xp = array_namespace(c)
    f, b = reduction.factors, reduction.bandwidth
    f = f if f.flags.f_contiguous else xp.asfortranarray(f)  # unit_lower reads columns
    n = f.shape[0]
    blocks = [(k + b, f[k + b:, k:k + min(b, n - k - b)], reduction.t[p])
              for p, k in enumerate(_panels(n, b)) if k + b < n]
    return _apply_blocks(c, blocks[::-1], b)
