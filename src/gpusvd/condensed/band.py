"""Stage 1 of the two-stage reduction: a dense m×n matrix (m ≥ n) to upper band form.

B = Qᴴ·A·P with B[i, j] = 0 unless 0 ≤ j − i ≤ b, the bandwidth b: the diagonal and b
superdiagonals.  Panel k (columns and rows k·b … k·b + b − 1) takes two steps:

1. QR of the column panel A(kb:, kb:kb+b) = Q_k·R_k; A(kb:, kb+b:) ← Q_kᴴ·A(kb:, kb+b:).
   The panel becomes R_k, upper triangular.
2. LQ of the row panel A(kb:kb+b, kb+b:) = L_k·P_kᴴ, taken as the QR of its conjugate
   transpose; A(kb+b:, kb+b:) ← A(kb+b:, kb+b:)·P_k.  The row panel becomes L_k, lower
   trapezoidal, so row i keeps columns up to i + b.

This is the first stage of Großer & Lang's two-stage bidiagonalization (B. Großer,
B. Lang, "Efficient parallel reduction to bidiagonal form", Parallel Comput. 25 (1999)
969–986) and of Ltaief, Luszczek & Dongarra, "High performance bidiagonal reduction using
tile algorithms on homogeneous multicore architectures", ACM TOMS 39 (2013), Alg. 1 (there
on tiles; here on panels, as SLATE's ge2tb and our DESIGN's GPU prototype).  Unlike the
one-stage reduction (golub_reinsch/bidiagonalize.py, paper 000 Alg. 2), whose panel needs
matrix–vector products with the whole trailing matrix, every flop outside the panel QRs is
a GEMM: each Q_k and P_k is held in compact WY form I − V·T·Vᴴ (Schreiber & Van Loan,
SIAM J. Sci. Stat. Comput. 10 (1989) 53–57), and a trailing update is three GEMMs.

The panel QR is LAPACK's (cuSOLVER's) geqrf, and the trailing updates are GEMMs on the
trailing sub-blocks in place (c ← c − x·y): :data:`_TWINS` maps the array namespace to them,
NumPy's ``linalg.qr(mode="raw")`` and matmul on the CPU, cuSOLVER and cuBLAS on the views as
they lie on the GPU (band_cuda.py, which says why: CuPy's matmul copies a strided view).

T is made from V and τ without a column loop (one launch per step on a GPU would be 2n
launches): T⁻¹ = diag(1/τ) + striu(VᴴV) (Puglisi, 1992;
Joffrain, Low, Quintana-Ortí, van de Geijn & Van Zee, ACM TOMS 32 (2006) 169–179, eq. (4),
whose 1/τ = vᴴv/2 holds for real reflectors; LAPACK's dlarft recurrence
T(:j, j) = −τ_j·T(:j, :j)·VᴴV(:j, j) is the same triangular inverse taken column by
column), then one triangular solve.  That solve is the one call with no ``xp.linalg`` form;
``compact_wy.wy_factor`` forms T (SciPy's or CuPy's triangular solver).

Complex A: geqrf's R has a real diagonal, so B's diagonal is real, but the rest of the band
is complex: two diagonal unitaries cannot make a band of more than two diagonals real.
Stage 2 (bulge.py) works in complex arithmetic and makes the bidiagonal real at its end.

Storage, as LAPACK's gebrd (m ≥ n): the factors overwrite A.  In panel k, V_k lies below
the diagonal of the column panel (unit diagonal implied), the rows of U_kᴴ (U_k the vectors
of P_k) lie right of the b-th superdiagonal of the row panel (unit entries implied on
it), and B is the band itself.  T_k of every step is kept in a (panels, b, b) array.
"""

from typing import Any, NamedTuple

from .._core import tunables
from .._core.backend import array_namespace
from . import band_cuda
from . import compact_wy

# The namespace's triangular solver: the only step here without an xp.linalg form.
def _ct(x):
    """The conjugate transpose xᴴ, a view (xᵀ) when real."""
    return x.conj().T if x.dtype.kind == "c" else x.T


def _panel_qr(panel):
    """(h, τ) of LAPACK's geqrf on ``panel``: R on and above h's diagonal, the Householder
    vectors below it.  NumPy and CuPy return h transposed (their "raw" mode) and may
    compute float32 in float64; both are undone here."""
    xp = array_namespace(panel)
    h, tau = xp.linalg.qr(panel, mode="raw")
    return h.T.astype(panel.dtype, copy=False), tau.astype(panel.dtype, copy=False)


def _op(x, op):
    return {"N": x, "T": x.T, "C": _ct(x)}[op]


def _gemm_host(c, a, b, *, op_a="N", op_b="N", subtract=False):
    """band_cuda.gemm_into's NumPy twin: c ← op(a)·op(b), or c − op(a)·op(b), in place."""
    product = _op(a, op_a) @ _op(b, op_b)
    if subtract:
        c -= product
    else:
        c[...] = product
    return c


def _geqrf_host(panel):
    """band_cuda.geqrf_into's NumPy twin: geqrf on ``panel`` in place, τ returned."""
    h, tau = _panel_qr(panel)
    panel[...] = h
    return tau


def _unit_lower(h):
    """V: the strictly lower part of h with ones on the diagonal (a new array)."""
    xp = array_namespace(h)
    v = xp.tril(h, -1)
    xp.fill_diagonal(v, 1)
    return v


def _wy_factor_host(v, tau, out):
    """band_cuda.wy_factor_into's NumPy twin: T of :func:`.compact_wy.wy_factor` into
    ``out``."""
    out[...] = compact_wy.wy_factor(v, tau)
    return out


class _Twins(NamedTuple):
    gemm: Any        # gemm_into(c, a, b, *, op_a, op_b, subtract)
    geqrf: Any       # geqrf_into(panel) -> tau
    unit_lower: Any  # unit_lower(h) -> V
    wy_factor: Any   # wy_factor_into(v, tau, out) -> out = T


# Stage 1's kernels by the array namespace's name (module docstring).
_TWINS = {"numpy": _Twins(_gemm_host, _geqrf_host, _unit_lower, _wy_factor_host),
          "cupy": _Twins(band_cuda.gemm_into, band_cuda.geqrf_into, band_cuda.unit_lower,
                         band_cuda.wy_factor_into)}


class BandReduction(NamedTuple):
    """A = Q·B·Pᴴ as :func:`reduce_to_band` returns it (m ≥ n)."""

    factors: Any   # (m, n): B's band and the Householder vectors of Q and P (module docstring)
    t_left: Any    # (panels, b, b): T of each Q_k, zero-padded in the last panel
    t_right: Any   # (panels, b, b): T of each P_k; zero where a panel has no P_k
    bandwidth: int


def _panels(n, b):
    return range(0, n, b)


def reduce_to_band(a, *, bandwidth):
    """Reduce ``a`` to upper band form, A = Q·B·Pᴴ, by panel QR and LQ (module docstring).

    Parameters
    ----------
    a : (m, n) float32, float64, complex64 or complex128 NumPy or CuPy array, m ≥ n
        OVERWRITTEN with the factors and returned in them: pass a copy to keep it.
    bandwidth : int
        b ≥ 1: B[i, j] = 0 unless 0 ≤ j − i ≤ b.  b = 1 gives a bidiagonal.

    Returns
    -------
    BandReduction
        :func:`band_of` takes B out of it; :func:`apply_q` and :func:`apply_p` apply Q, P.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.random.default_rng(0).standard_normal((9, 7))
    >>> red = reduce_to_band(a.copy(), bandwidth=3)
    >>> band = band_of(red)                      # (7, 4): band[i, k] = B[i, i + k]
    >>> s = np.linalg.svd(band_matrix(band, 9), compute_uv=False)
    >>> bool(np.allclose(s, np.linalg.svd(a, compute_uv=False)))
    True
    """
    xp = array_namespace(a)
    m, n = a.shape
    if m < n:
        raise ValueError(f"reduce_to_band needs m >= n, got a of shape {a.shape}; "
                         "pass the transpose of a wide matrix")
    if bandwidth < 1:
        raise ValueError(f"bandwidth must be a positive integer, got {bandwidth}")
    b = bandwidth
    panels = _panels(n, b)
    t_left = xp.zeros((len(panels), b, b), dtype=a.dtype)
    t_right = xp.zeros((len(panels), b, b), dtype=a.dtype)
    gemm, geqrf, unit_lower, wy_factor = _TWINS[xp.__name__]
    # The updates run on column-major sub-blocks (band_cuda.py): a C-ordered a is reduced
    # in a Fortran-ordered copy and written back.
    work = a if a.flags.f_contiguous else xp.asfortranarray(a)
    # Workspace of the updates, column-major: Vᴴ·C and its T-product (b × n), C·U (m × b).
    w = xp.empty((2, n, b), dtype=a.dtype).transpose(0, 2, 1)
    x = xp.empty((2, b, m), dtype=a.dtype).transpose(0, 2, 1)
    for p, k in enumerate(panels):
        kb = min(b, n - k)
        # Step 1: QR of the column panel, Q_kᴴ applied to the columns right of it:
        # C ← C − V·(Tᴴ·(Vᴴ·C)).
        tau = geqrf(work[k:, k:k + kb])
        v = unit_lower(work[k:, k:k + kb])
        t = wy_factor(v, tau, t_left[p, :kb, :kb])
        right = work[k:, k + kb:]
        cols = right.shape[1]
        if cols == 0:
            break
        gemm(w[0, :kb, :cols], v, right, op_a="C")
        gemm(w[1, :kb, :cols], t, w[0, :kb, :cols], op_a="C")
        gemm(right, v, w[1, :kb, :cols], subtract=True)
        # Step 2: LQ of the row panel (QR of its conjugate transpose), P_k applied to the
        # rows below it: C ← C − ((C·U)·T)·Uᴴ.
        h = xp.array(_ct(work[k:k + kb, k + kb:]), order="F")
        tau = geqrf(h)
        work[k:k + kb, k + kb:] = _ct(h)
        r = tau.shape[0]  # min(kb, n − k − kb) reflectors
        u = unit_lower(h[:, :r])
        t = wy_factor(u, tau, t_right[p, :r, :r])
        below = work[k + kb:, k + kb:]
        rows = below.shape[0]
        gemm(x[0, :rows, :r], below, u)
        gemm(x[1, :rows, :r], x[0, :rows, :r], t)
        gemm(below, x[1, :rows, :r], u, op_b="C", subtract=True)
    if work is not a:
        a[...] = work
    return BandReduction(a, t_left, t_right, b)


def band_of(reduction):
    """B's band, (n, b + 1) with band[i, k] = B[i, i + k] (zero past column n − 1): the
    diagonal in column 0, superdiagonal k in column k, in the factors' namespace."""
    xp = array_namespace(reduction.factors)
    f = reduction.factors
    n = f.shape[1]
    rows = xp.arange(n)[:, None]
    cols = rows + xp.arange(reduction.bandwidth + 1)[None, :]
    inside = cols < n
    return xp.where(inside, f[rows, xp.minimum(cols, n - 1)], 0)


def band_matrix(band, m=None):
    """The dense m×n upper band matrix of ``band`` ((n, b + 1) as :func:`band_of`), m ≥ n
    (default n); rows n: are zero."""
    xp = array_namespace(band)
    n, width = band.shape
    dense = xp.zeros((n if m is None else m, n), dtype=band.dtype)
    for k in range(min(width, n)):
        idx = xp.arange(n - k)
        dense[idx, idx + k] = band[:n - k, k]
    return dense


def apply_q(reduction, c):
    """Q·c, Q = Q_0·Q_1·… of :func:`reduce_to_band`; ``c`` (m, k) is overwritten and
    returned.  One compact WY block per panel, the last panel first: three GEMMs each, in
    place on c's column-major rows (:data:`_TWINS`, as the reduction's own updates; a
    C-ordered ``c`` is worked on in a Fortran-ordered copy).

    Examples
    --------
    >>> import numpy as np
    >>> a = np.random.default_rng(1).standard_normal((6, 5))
    >>> red = reduce_to_band(a.copy(), bandwidth=2)
    >>> q = apply_q(red, np.eye(6))
    >>> bool(np.allclose(q.T @ q, np.eye(6)))
    True
    """
    f, n = reduction.factors, reduction.factors.shape[1]
    f = f if f.flags.f_contiguous else array_namespace(f).asfortranarray(f)  # V by columns
    b = reduction.bandwidth
    blocks = [(k, f[k:, k:k + min(b, n - k)], reduction.t_left[p])
              for p, k in enumerate(_panels(n, b))]
    return _apply_blocks(c, blocks[::-1])


def apply_p(reduction, c):
    """P·c, P = P_0·P_1·… of :func:`reduce_to_band` (A = Q·B·Pᴴ); ``c`` (n, k) is
    overwritten and returned, as :func:`apply_q`.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.random.default_rng(2).standard_normal((6, 6))
    >>> red = reduce_to_band(a.copy(), bandwidth=2)
    >>> b = band_matrix(band_of(red))
    >>> q, p = apply_q(red, np.eye(6)), apply_p(red, np.eye(6))
    >>> bool(np.allclose(q @ b @ p.T, a))
    True
    """
    f, n = reduction.factors, reduction.factors.shape[1]
    b = reduction.bandwidth
    blocks = []
    for p, k in enumerate(_panels(n, b)):
        kb = min(b, n - k)
        w = min(kb, n - k - kb)  # reflectors of P_k
        if w:
            blocks.append((k + kb, _ct(f[k:k + w, k + kb:]), reduction.t_right[p]))
    return _apply_blocks(c, blocks[::-1])


def _groups(blocks, columns):
    """``blocks`` [(row j, h, T)] in the order they act, cut into runs of consecutive
    blocks of at most ``columns`` reflectors in all (a block wider than that alone)."""
    group, width = [], 0
    for block in blocks:
        r = block[1].shape[1]
        if group and width + r > columns:
            yield group
            group, width = [], 0
        group.append(block)
        width += r
    if group:
        yield group


def _aggregate(group, rows, unit_lower):
    """(row j, V, T) of H_g·…·H_2·H_1 = I − V·T·Vᴴ for a ``group`` [(j_i, h_i, T_i)] = H_1,
    …, H_g in the order they act (j_1 ≥ … ≥ j_g), each on rows j_i: of a matrix of
    ``rows`` rows. V's columns are H_g's vectors, then H_{g−1}'s, …, each block's embedded
    from its row j_i (zeros above), and T is block upper triangular, built a block at a
    time by (I − V_a·T_a·V_aᴴ)·(I − V_i·T_i·V_iᴴ) = I − [V_a V_i]·[[T_a, −T_a·V_aᴴV_i·T_i],
    [0, T_i]]·[V_a V_i]ᴴ (Schreiber & Van Loan): GEMMs only, no inverse of T."""
    j, h, t = group[0]
    if len(group) == 1:
        r = h.shape[1]
        return j, unit_lower(h), t[:r, :r]
    xp = array_namespace(h)
    top = group[-1][0]
    width = sum(block[1].shape[1] for block in group)
    v = xp.zeros((rows - top, width), dtype=h.dtype, order="F")
    t_all = xp.zeros((width, width), dtype=h.dtype)
    col = 0
    for j, h, t in group[::-1]:
        r, first = h.shape[1], j - top
        v[first:, col:col + r] = unit_lower(h)
        t_all[col:col + r, col:col + r] = t[:r, :r]
        if col:
            overlap = _ct(v[first:, :col]) @ v[first:, col:col + r]
            t_all[:col, col:col + r] = -(t_all[:col, :col] @ overlap) @ t[:r, :r]
        col += r
    return top, v, t_all


def _apply_blocks(c, blocks):
    """c ← H_m·…·H_2·H_1·c for ``blocks`` [(row j, h, T)] = H_1, …, H_m (the first acts
    first, rows j non-increasing), H = I − V·T·Vᴴ on rows j: of c, V the unit lower part
    of h. Runs of consecutive blocks are applied as one (:func:`_aggregate`, at most the
    tunable ``back_transform_block_columns`` reflectors): three GEMMs per run in place
    (:data:`_TWINS`), their inner dimension the run's width rather than one panel's b,
    so that C's rows below j are read and written once a run, not once a panel. On the
    GPU, runs only from ``back_transform_merge_min_n_gpu`` rows (the tunable says why)."""
    xp = array_namespace(c)
    gemm, _, unit_lower, _ = _TWINS[xp.__name__]
    work = c if c.flags.f_contiguous else xp.asfortranarray(c)
    t = tunables.get()
    merge = xp.__name__ == "numpy" or c.shape[0] >= t.back_transform_merge_min_n_gpu
    columns = max(1, t.back_transform_block_columns) if merge else 1
    widest = max([block[1].shape[1] for block in blocks] + [columns])
    # Vᴴ·C and T·(Vᴴ·C), column-major (at most ``widest`` × columns each)
    w = xp.empty((2, work.shape[1], widest), dtype=work.dtype).transpose(0, 2, 1)
    for group in _groups(blocks, columns):
        j, v, t = _aggregate(group, work.shape[0], unit_lower)
        r = v.shape[1]
        gemm(w[0, :r], v, work[j:], op_a="C")
        gemm(w[1, :r], t, w[0, :r])
        gemm(work[j:], v, w[1, :r], subtract=True)
    if work is not c:
        c[...] = work
    return c
