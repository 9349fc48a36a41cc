"""The back-transformation of stage 2: Q₂·C and P₂·C from the chase's recorded reflectors,
in blocks, as GEMMs.

The chase (bulge.py) records reflector (s, k), block k of sweep s, on each side,
H = I − τ·v·vᴴ on the indices s+1+k·b … s+k·b+b (cut at n); Q = ∏ H(s, k) in the
order (s, k), s major.  Applied one at a time, Q·C for C of n×m is 2n²·m flops in rank-1
updates, each reading b rows of C: memory bound.

Grouping (Haidar, Ltaief & Dongarra, SC'11; Haidar, Tomov, Dongarra, Solcà & Schulthess,
IJHPCA 28 (2014), doi:10.1177/1094342013502097, the back-transformation of stage 2 by
blocks of reflectors of consecutive sweeps; MAGMA's magma_zbulge_applyQ_v2): the
reflectors of g consecutive sweeps J·g … J·g+g−1 at the same block k start at
consecutive indices, so their vectors, shifted down by one per sweep, are the columns of
one (b+g−1)×g lower-trapezoidal V, and their product H(Jg, k)·…·H(Jg+g−1, k) is
I − V·T·Vᴴ with T upper triangular by LAPACK's dlarft recurrence (forward, columnwise)
T(:j, j) = −τ_j·T(:j, :j)·(VᴴV)(:j, j), T(j, j) = τ_j.  A reflector with τ = 0 (H = I)
gets a zero row and column of T, whatever its v; no 1/τ is taken.

Ordering.  Two reflectors commute unless their windows overlap.  Windows of one sweep are
disjoint; (s, k) and (s', k') with s < s' overlap only if |s + k·b − s' − k'·b| < b,
which forces k ≥ k' (the later sweep's window is shifted right by s' − s > 0, so only
its blocks of the same or lower index reach back to block k).  In Q·C the last factor
acts first, so (s', k') must act before (s, k): later sweeps first, and, for group
(J, k), the groups (J', k') with J' > J and k' ≤ k first, and (J, k−1) before (J, k)
(the only same-J pair that overlaps: (s, k) with (s', k−1), s < s').  Hence the
wavefront t = (J_last − J) + k: each group acts at step t after every group it must
follow, and the groups of one step, (J, k) and (J−1, k−1) …, start g + b indices apart
and span b+g−1, so they touch disjoint rows and act as one batched GEMM on the strided
view of C's rows.  Steps: ⌈S/g⌉ + ⌈S/b⌉ − 1 for S sweeps; a group's V and T are built
for all groups at once (g batched steps for T).

Flops.  A group acts as C ← C − V·(W·C) with W = T·Vᴴ formed once (g×(b+g−1)):
4·(b+g−1)·m per reflector, against 4·b·m one at a time, so the trapezoid's two zero
triangles nearly double the work at g = b (≈ 4n²·m in all for n²/(2b) reflectors, against
2n²·m), the price of GEMMs; g < b pays less padding for smaller GEMMs.  Forming V, T and W
costs ≈ 4g·(b+g−1) per reflector, independent of m.  Groups wholly past row n are
skipped; the others, partly past it, are padded with zero rows.

Measured (C = I, b = 32, float64) on the reflectors of a symmetric band's chase (n − 2
sweeps). One core of an AMD EPYC (OpenBLAS, ≈ 30 GFLOP/s on a large GEMM): n = 1000,
0.15–0.18 s against 0.14 s for that chase's unblocked Numba loop (whose C fits in
cache); n = 2000, 1.3–1.5 s (g = 8 … 32) against 1.7 s.  An H100 (CuPy): n = 8000,
0.39 s at g = 32 (5 TFLOP/s counting the padding), 0.35 s at g = 64, where the CPU chase
takes 6.7 s.

On the GPU, real C takes one launch of ``kernels/chase_back.cu`` instead
(chase_back_cuda.passes, for the bandwidths it is instantiated for): the same order by
passes of g sweeps, one reflector at a time on a window of b + g − 1 rows held in each
thread's registers, so no padding and C read about once per four passes. On the H200 at
n = 8192 (C of n columns) float64 0.089 s against the wavefront's 0.182, float32 0.049
against 0.133 (``bench/back_transform.py``). Complex C keeps the wavefront there.

On the CPU every C takes the same passes in Numba (:func:`_passes_host`, the kernel's
twin), one thread a slab of columns on a contiguous copy: gr's SVD of a Gaussian
n×n float64 matrix (the two-stage range of the CPU) at n = 200, 500, 690 took 0.0156,
0.115, 0.263 s against 0.0186, 0.140, 0.294 by the wavefront on one thread, and 0.0166,
0.101, 0.236 against 0.0229, 0.136, 0.276 on two (2 shared EPYC cores, medians of 3).
"""

import numba
import numpy as np

from .._core import tunables
from .._core.backend import array_namespace
from . import chase_back_cuda


def _groups(v, tau, b, g, n):
    """V (as its rows Vᵀ) and τ of every group: (G, K, g, b+g−1) and (G, K, g).

    v (S, K, b) and τ are cut at n first (entries past the end of the matrix act on
    nothing), and padded with τ = 0 sweeps to a multiple of g.  Row j of group (J, k) is
    v(Jg+j, k) shifted right by j: laid out in rows of b+g, the flat vector read in rows
    of b+g−1 shifts row j by j."""
    xp = array_namespace(v)
    sweeps, blocks, _ = v.shape
    first = (xp.arange(sweeps)[:, None, None] + 1 + b * xp.arange(blocks)[None, :, None])
    v = xp.where(first + xp.arange(b) < n, v, 0)
    tau = xp.where(first[..., 0] < n, tau, 0)
    groups = -(-sweeps // g)
    padded = xp.zeros((groups * g, blocks, b + g), v.dtype)
    padded[:sweeps, :, :b] = v
    taus = xp.zeros((groups * g, blocks), tau.dtype)
    taus[:sweeps] = tau
    rows = padded.reshape(groups, g, blocks, b + g).transpose(0, 2, 1, 3)
    flat = rows.reshape(groups, blocks, g * (b + g))[..., :g * (b + g - 1)]
    taus = taus.reshape(groups, g, blocks).transpose(0, 2, 1)
    return flat.reshape(groups, blocks, g, b + g - 1), taus


def _wy_t(rows, tau):
    """T of each group, I − V·T·Vᴴ = H_0·…·H_{g−1}: dlarft's recurrence, batched."""
    xp = array_namespace(rows)
    g = rows.shape[-2]
    gram = rows.conj() @ rows.swapaxes(-1, -2)  # (VᴴV)(i, j) = v_iᴴ·v_j
    t = xp.zeros(rows.shape[:-1] + (g,), rows.dtype)
    t[..., 0, 0] = tau[..., 0]
    for j in range(1, g):
        col = t[..., :j, :j] @ gram[..., :j, j:j + 1]
        t[..., :j, j:j + 1] = -tau[..., j, None, None] * col
        t[..., j, j] = tau[..., j]
    return t


def _factors(v, tau, b, g, n):
    """V and W = T·Vᴴ of every group, flat over (J, k): (G·K, b+g−1, g), (G·K, g, b+g−1),
    both C-ordered (chase_back_cuda.py reads them as they lie)."""
    xp = array_namespace(v)
    rows, taus = _groups(v, tau, b, g, n)
    flat = (rows.shape[0] * rows.shape[1],) + rows.shape[2:]
    wy = xp.ascontiguousarray((_wy_t(rows, taus) @ rows.conj()).reshape(flat))
    vs = xp.ascontiguousarray(rows.reshape(flat).swapaxes(-1, -2))
    return vs, wy, rows.shape[0] - 1, rows.shape[1]


def _wavefront(work, vs, wy, last, blocks, b, g, n):
    """work(:n) ← Q·work(:n), the groups in the wavefront order of the module docstring;
    ``work`` has g + b zero rows below row n for the groups that reach past it."""
    span = b + g - 1
    step = _STEPS[array_namespace(work).__name__]
    for t in range(last + blocks):
        j_lo = max(0, last - t)
        k_lo = t - last + j_lo
        r0 = j_lo * g + k_lo * b + 1
        count = min(last - j_lo + 1, blocks - k_lo, (n - 1 - r0) // (g + b) + 1)
        if count <= 0:
            continue
        i0 = j_lo * blocks + k_lo  # group (J, k) is J·K + k; (J+1, k+1) is K + 1 on
        step(work, r0, count, span, g + b, vs, wy, i0, blocks + 1)


def _step_host(work, r0, count, span, period, vs, wy, first, stride):
    """chase_back_cuda.wavefront_step's twin: windows i < ``count`` of ``work`` (rows
    r0 + i·period …, ``span`` long) ← window − vs[g_i]·(wy[g_i]·window), g_i = first +
    i·stride, as one batched matmul on the strided view."""
    pick = slice(first, first + (count - 1) * stride + 1, stride)
    view = work[r0:r0 + count * period].reshape(count, period, work.shape[1])[:, :span]
    view -= vs[pick] @ (wy[pick] @ view)


# One wavefront step by the array namespace's name (chase_back_cuda.py says why).
_STEPS = {"numpy": _step_host, "cupy": chase_back_cuda.wavefront_step}


@numba.njit(cache=True)
def _passes_slab(v, tau, b, g, c):
    """c (C-ordered, overwritten) ← Q·c pass by pass (:func:`_passes_host`)."""
    n, m = c.shape
    sweeps = v.shape[0]
    passes = -(-sweeps // g)
    dot = np.empty(m, c.dtype)
    for back in range(passes):
        j = passes - 1 - back
        for k in range(-(-(n - 1 - j * g) // b)):
            for s in range(min(j * g + g, sweeps) - 1, j * g - 1, -1):
                first = s + 1 + k * b
                if first >= n or tau[s, k] == 0:
                    continue
                dot[:] = 0
                for i in range(min(b, n - first)):
                    h = v[s, k, i].conjugate()
                    for col in range(m):
                        dot[col] += h * c[first + i, col]
                dot *= tau[s, k]
                for i in range(min(b, n - first)):
                    h = v[s, k, i]
                    for col in range(m):
                        c[first + i, col] -= h * dot[col]


@numba.njit(cache=True, parallel=True)
def _passes_host(v, tau, b, g, c, columns):
    """chase_back_cuda.passes' twin and the CPU's product: c (n×m, overwritten) ← Q·c one
    reflector at a time, in the kernel's order (kernels/chase_back.cu): pass J (sweeps
    J·g … J·g+g−1) from the last down, its groups k = 0, 1, … down the rows, each group's
    sweeps from the last. Slabs of ``columns`` columns are independent (Q acts on each
    column alone): one thread a slab, on a C-ordered copy of it (loops over whole rows:
    3.7× faster than on the slab in place, n = 500)."""
    m = c.shape[1]
    for slab in numba.prange(-(-m // columns)):
        lo, hi = slab * columns, min(m, slab * columns + columns)
        work = np.ascontiguousarray(c[:, lo:hi])
        _passes_slab(v, tau, b, g, work)
        c[:, lo:hi] = work
    return c


def _passes_cpu(c, v, tau, b, g):
    """c (C-ordered) ← Q·c in place by :func:`_passes_host`, slabs of the tunable
    ``chase_back_panel_columns_cpu`` columns; one slab without the thread pool (whose
    start beside BLAS's spinning threads cost more than the product at n = 200)."""
    columns = max(1, tunables.get().chase_back_panel_columns_cpu)
    if c.shape[1] <= columns:
        _passes_slab(v, tau, b, g, c)
    else:
        _passes_host(v, tau, b, g, c, columns)


# Q·C by passes (one reflector at a time, no padding) by the array namespace's name.
_PASSES = {"numpy": _passes_cpu, "cupy": chase_back_cuda.passes}


def _pass_group(xp, b, g, dtype, group):
    """The sweeps a pass for this call (:data:`_PASSES`), or None where the wavefront of
    GEMMs serves it: ``g`` (from ``group``, b by default) on the CPU; on the GPU the
    kernel's, None for complex C, a bandwidth without an instantiation of the kernel, or
    a ``group`` other than the kernel's."""
    if xp.__name__ != "cupy":
        return g
    kernel = chase_back_cuda.PASS_GROUPS.get((b, np.dtype(dtype)))
    return kernel if kernel is not None and group in (None, kernel) else None


def _apply(v, tau, b, c, group):
    """Q·c for reflectors (S, K, b) on windows s+1+k·b, S = n − 1."""
    xp = array_namespace(c)
    if c.ndim not in (1, 2):
        raise ValueError(f"c must be 1-D or 2-D, got shape {c.shape}")
    n = c.shape[0]
    if v.shape[0] != max(n - 1, 0) and v.size:
        raise ValueError(f"c has {n} rows; the reflectors are of a matrix of order "
                         f"{v.shape[0] + 1}")
    g = b if group is None else int(group)
    if g < 1:
        raise ValueError(f"group must be at least 1, got {group}")
    dtype = xp.result_type(v.dtype, c.dtype)
    out = xp.array(c if c.ndim == 2 else c[:, None], dtype=dtype, order="C")
    pass_group = _pass_group(xp, b, g, dtype, group)
    if v.size and pass_group is not None:
        _PASSES[xp.__name__](out, xp.ascontiguousarray(v, dtype),
                             xp.ascontiguousarray(tau, dtype), b, pass_group)
    elif v.size:
        work = xp.zeros((n + g + b, out.shape[1]), dtype)  # all of C: the largest GEMMs
        work[:n] = out
        _wavefront(work, *_factors(xp.asarray(v, dtype), xp.asarray(tau, dtype), b, g, n),
                   b, g, n)
        out[...] = work[:n]
    return out if c.ndim == 2 else out[:, 0]


def apply_q(refl, c, *, group=None):
    """Q₂·c for the left reflectors of :func:`gpusvd.condensed.bulge.band_to_bidiagonal`.

    Parameters
    ----------
    refl : bulge.ChaseReflectors
        ``band_to_bidiagonal(band, record=True).reflectors``, NumPy or CuPy.
    c : (n,) or (n, m) array, in the reflectors' namespace
        Not modified.
    group : int, optional
        Sweeps per block, g (module docstring); default the bandwidth b.

    Returns
    -------
    array
        Q₂·c, of the shape of ``c`` and the common dtype of the reflectors and ``c``.

    Raises
    ------
    ValueError
        If ``c`` is not 1-D or 2-D, its rows do not match the reflectors, or g < 1.

    Examples
    --------
    >>> import numpy as np
    >>> from gpusvd.condensed import bulge
    >>> band = np.random.default_rng(0).standard_normal((9, 4))
    >>> bd = bulge.band_to_bidiagonal(band, record=True)
    >>> q = apply_q(bd.reflectors, np.eye(9)) * bd.phase_left
    >>> p = apply_p(bd.reflectors, np.eye(9)) * bd.phase_right
    >>> dense = sum(np.diag(band[:9 - k, k], k) for k in range(4))
    >>> bool(np.allclose(q @ (np.diag(bd.d) + np.diag(bd.e, 1)) @ p.T, dense))
    True
    """
    return _apply(refl.v_left, refl.tau_left, refl.bandwidth, c, group)


def apply_p(refl, c, *, group=None):
    """P₂·c for the right reflectors of :func:`gpusvd.condensed.bulge.band_to_bidiagonal`
    (A_band = Q₂·B_chased·P₂ᴴ); parameters as :func:`apply_q`.

    Examples
    --------
    >>> import numpy as np
    >>> from gpusvd.condensed import bulge
    >>> bd = bulge.band_to_bidiagonal(np.random.default_rng(1).standard_normal((7, 3)),
    ...                               record=True)
    >>> p = apply_p(bd.reflectors, np.eye(7), group=2)
    >>> bool(np.allclose(p.T @ p, np.eye(7)))
    True
    """
    return _apply(refl.v_right, refl.tau_right, refl.bandwidth, c, group)
