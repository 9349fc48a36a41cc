"""Derivatives of the SVD and of the polar decomposition: right, or NaN, never finite and
wrong.

Written once against the array namespace of the framework (``torch`` or ``jax.numpy``),
through the few operations :class:`Ops` names, in forward mode (``*_jvp``) and reverse
mode (``*_backward``); each is linear in its tangent or cotangents and written in
differentiable operations, so that second derivatives work.

**The SVD.** For A = U·diag(s)·Vᴴ (economy, k = min(m, n)), dC = Uᴴ·dA·V, F = dC, G = dCᴴ,
Uᴴ·dA·V = dP·S + dS − S·dQ (dP = UᴴdU, dQ = VᴴdV skew-Hermitian) gives ds = Re diag(dC),

    dP = (F + G)/(2(s_j − s_i)) + (F − G)/(2(s_j + s_i)),
    dQ = (F + G)/(2(s_j − s_i)) − (F − G)/(2(s_j + s_i)),

plus (I − UUᴴ)·dA·V·S⁻¹ in dU (m > k) and (I − VVᴴ)·dAᴴ·U·S⁻¹ in dV (n > k): torch's and
JAX's one fraction (F·s_j + G·s_i)/(s_j² − s_i²) split into a part singular where
s_i = s_j and one singular only where s_i = s_j = 0. The reverse mode is its adjoint:
with Ĝu = Uᴴ·gU, Ĝv = Vᴴ·gV, Xu = Ĝu − Ĝuᴴ, Xv = Ĝv − Ĝvᴴ,

    Ā = U·M·Vᴴ + (gU − U·Ĝu)·S⁻¹·Vᴴ + U·S⁻¹·(gVh − gVh·V·Vᴴ),
    M_ij = (Xu + Xv)_ij / (2(s_j − s_i)) + (Xu − Xv)_ij / (2(s_j + s_i)) + δ_ij·gs_i.

**The rule where values repeat.** Two values are *numerically repeated* when
|s_i − s_j| <= 4·√max(m, n)·ε·s_max (``VECTORS_TOL``), and a value is *numerically zero*
below that bound: there the singular vectors inside the cluster are not determined to
working accuracy. Each term that divides by such a gap is *undetermined*: two losses can
hand the SVD the same cotangents there and need different gradients (the reconstruction
U·S·Vᴴ and the polar factor U·Vᴴ at the identity do), so no backward of the SVD alone can
be right for both. The rule:

1. Values only (no cotangent of U or V: a function of s, ``svdvals``): the cotangent of
   s is averaged over each cluster of values within 4·ε·s_max (``VALUES_TOL``) of each
   other and is 0 at values below that. This is the gradient wherever the loss is differentiable
   (a symmetric function of s gives equal cotangents inside a cluster, and a smooth
   one a zero cotangent at zero) and the minimal-norm subgradient where it is not: the
   spectral norm at a repeated top value gives U_c·V_cᴴ / r over its cluster of r, the
   nuclear norm at a rank-deficient matrix U_r·V_rᴴ, which is what symmetric finite
   differences give.
2. Cotangents of U or V: an undetermined term whose columns the loss reads (a nonzero
   cotangent in column i or j of U, row i or j of Vh) is NaN; one whose columns it
   never reads is exactly 0, which is right (the loss does not depend on how the
   cluster's vectors are chosen). So a loss of the top-k singular vectors across a
   gap is finite and right at rank-deficient matrices, and U·g(S)·Vᴴ at repeated
   values is NaN, where a finite value would be wrong. Beside cotangents of U or V, a
   nonzero cotangent of a numerically zero value is undetermined too, and NaN: with g
   odd, U·g(S)·Vᴴ reads no column of a zero value (g(0) = 0), yet its gradient has parts
   along the directions that pair a null vector of A with one of Aᴴ, which no cotangent
   reaches (the reconstruction U·S·Vᴴ at a singular matrix).
3. ``gauge_invariant=True`` declares that the loss does not change when columns i and
   j of U and of V are rotated together (and, inside the null space, independently),
   for every s, not only where s_i = s_j: a function of U·Vᴴ, of projectors onto
   subspaces spanned by whole clusters, of s. The undetermined terms then take their
   limit for such losses, 0. It is wrong for U·g(S)·Vᴴ (the reconstruction included),
   which is invariant only because s_i = s_j.
4. The forward mode follows the same rule column by column: the tangents of the
   columns of U and V that an undetermined term mixes are NaN (0 with
   ``gauge_invariant``), every other column is right; the tangent of s is averaged
   over clusters and 0 at zero, the transpose of rule 1.
5. A complex loss whose cotangents have a phase part Im diag(Ĝu + Ĝv) beyond
   ``GAUGE_TOL`` of their size depends on the phases of the singular vectors, which the
   SVD does not fix: its gradient is NaN (torch raises there).
6. Second derivatives through a numerically zero value are NaN: the cotangent that rule 1
   sets to 0 there is 0 in value and NaN in derivative. The Hessian of Σs² = ‖A‖²_F at a
   rank-deficient A is 2I, but the derivative of its gradient U·diag(2s)·Vᴴ runs along
   the same unreached directions as in rule 2; at full rank second derivatives are
   right.

``broadening`` (β > 0) replaces every 1/x above by the Lorentzian x/(x² + β) instead
(Liao, Liu, Wang & Xiang, Phys. Rev. X 9, 031041, 2019): biased, never the default, and
it overrides the rule.

**The polar decomposition** A = W·P, W = U·Vᴴ, P = V·S·Vᴴ, has its own derivative, which
divides only by s_i + s_j (the Daleckii–Krein divided differences of the square root):

    dW = U·((dC − dCᴴ) ∘ 1/(s_i + s_j))·Vᴴ + (I − UUᴴ)·dA·V·S⁻¹·Vᴴ + U·S⁻¹·Uᴴ·dA·(I − VVᴴ),
    dP = V·((dC + dCᴴ)/2 − (dC − dCᴴ) ∘ (s_j − s_i)/(2(s_j + s_i)))·Vᴴ
         + (I − VVᴴ)·dAᴴ·U·Vᴴ + V·Uᴴ·dA·(I − VVᴴ),

(the last terms of each for m > k and n > k), exact at repeated values; NaN where
s_i + s_j or a divided s_i is numerically zero (A rank-deficient: W is not unique there).

**The Takagi factorization** A = U·diag(s)·Uᵀ of a complex symmetric A, differentiated as
the factorization of (A + Aᵀ)/2 (the derivative along any dA is the one along its
symmetric part): with P = Uᴴ·dA·Ū (symmetric), Uᴴ·dU = Ω (skew-Hermitian) and
P = Ω·S + S·Ωᵀ + dS,

    ds = Re diag(P),   Re Ω_ij = Re P_ij / (s_j − s_i),   Im Ω_ij = Im P_ij / (s_i + s_j)

(the diagonal Ω_ii = i·Im P_ii / (2s_i)). U is fixed up to the sign of each column, so
no phase rule is needed (rule 5); inside a cluster of repeated values U is fixed up to a
real rotation, which only the real parts' 1/(s_j − s_i) see, and at a numerically zero
value up to any unitary one, which 1/(s_i + s_j) sees too: rules 1–4 apply to them as to
the SVD's terms. The reverse mode, with Ĝ = Uᴴ·gU:

    Ā = U·sym(K)·Uᵀ,   K_ij = Re Ĝ_ij / (s_j − s_i) + i·Im Ĝ_ij / (s_i + s_j) + δ_ij·gs_i,

sym(K) = (K + Kᵀ)/2.
"""

from typing import Callable, NamedTuple


class Ops(NamedTuple):
    """What the formulas need of an array library beyond its operators."""

    where: Callable
    abs: Callable
    diag_embed: Callable   # (..., k) -> (..., k, k)
    diagonal: Callable     # (..., k, k) -> (..., k)
    real: Callable
    eps: Callable          # dtype -> machine epsilon (float)
    cast: Callable         # (x, like) -> x in like's dtype
    any: Callable          # (x, axis) -> x.any(axis)


NAN = float("nan")

# A complex loss whose cotangents' phase part Im diag(Ĝu + Ĝv) exceeds this share of
# their mean size (each matrix's own) depends on the singular vectors' phases (torch's
# tolerance).
GAUGE_TOL = 1e-6


def conj_transpose(x):
    """xᴴ of each matrix of a stack (torch tensors and JAX arrays alike). A torch tensor is
    conjugated in memory (``conj_physical``), not by its lazy conjugate bit, which
    AOTAutograd's traced derivatives of these formulas mishandled (opcheck's dynamic
    AOT dispatch test of the derivative operators, torch 2.11)."""
    conj = getattr(x, "conj_physical", None)
    return (conj() if conj is not None else x.conj()).mT


_ct = conj_transpose


class _Gaps(NamedTuple):
    """Which values of each matrix are numerically repeated or zero (module docstring)."""

    close: object     # (..., k, k) |s_i − s_j| <= tol, i ≠ j
    zero: object      # (..., k) s_i <= tol
    zero_sum: object  # (..., k, k) s_i + s_j <= tol


# The gaps below which the derivative's terms are undetermined: VECTORS_TOL·√max(m, n)·ε·
# s_max for the terms of U and V (a finite term above it is off by at most ε·s_max/gap of
# the cotangent, the accuracy of the vectors themselves); VALUES_TOL·ε·s_max for the rule
# of the values (a differentiable loss moves by O(ε·s_max) there when its cotangent is
# averaged, where a wider bound would zero the cotangent of a small but distinct value).
VECTORS_TOL = 4.0
VALUES_TOL = 4.0


def _eye(ops, s):
    """The boolean identity (..., k, k) for values ``s`` (..., k)."""
    return ops.diag_embed(1 + 0 * s) != 0


def _is_complex(x):
    dtype = x.dtype
    return dtype.is_complex if hasattr(dtype, "is_complex") else dtype.kind == "c"


def _gaps(ops, s, scale):
    tol = ops.eps(s.dtype) * scale * s[..., :1, None]
    off = ops.abs(s[..., :, None] - s[..., None, :]) <= tol
    return _Gaps(off & ~_eye(ops, s), s <= tol[..., 0],
                 s[..., :, None] + s[..., None, :] <= tol)


def _vector_gaps(ops, s, m, n):
    return _gaps(ops, s, VECTORS_TOL * max(m, n) ** 0.5)


def _reciprocal(ops, x, small, undetermined, gauge_invariant, broadening):
    """1/x where not ``small``; there NaN where ``undetermined`` (0 with
    ``gauge_invariant``) and 0 elsewhere; with ``broadening`` β, x/(x² + β) everywhere."""
    if broadening:
        return x / (x * x + broadening)
    inverse = ops.where(small, 0 * x, 1 / ops.where(small, 1 + 0 * x, x))
    if gauge_invariant:
        return inverse
    return ops.where(undetermined, NAN + 0 * x, inverse)


def _values_tol(ops, s):
    """VALUES_TOL·ε·s_max (..., 1): rule 1's clusters and numerically zero values."""
    return VALUES_TOL * ops.eps(s.dtype) * s[..., :1]


def _cluster_mean(ops, x, s, broadening=None):
    """``x`` (..., k) averaged over each cluster of values ``s`` within VALUES_TOL·ε·s_max
    of each other, 0 at values below that (rule 1). Each value is in its own cluster
    (|s_i − s_i| = 0), so the count is at least 1 unless s is NaN, whose mean is NaN.
    The 0 is √(d²) with d = mean − mean: 0 in value, and NaN wherever it is
    differentiated (the derivative of √ at 0 is infinite, times d's zero), so that a
    second derivative through a numerically zero value is NaN (rule 6); with
    ``broadening``, which overrides the rule, a plain 0."""
    tol = _values_tol(ops, s)
    together = ops.cast(ops.abs(s[..., :, None] - s[..., None, :]) <= tol[..., None], x)
    mean = (together @ x[..., :, None])[..., 0] / together.sum(-1)
    zero = s <= tol
    if broadening:
        return ops.where(zero, 0 * mean, mean)
    moved = mean - mean
    # √ of 1 where the value is not zero: the unused branch's derivative stays finite
    root = ops.where(zero, moved * moved, 1 + 0 * moved) ** 0.5
    return ops.where(zero, root, mean)


def _phase_nan(ops, gu_hat, gv_hat):
    """NaN on the diagonal where a complex loss depends on the vectors' phases (rule 5),
    else 0."""
    phase = ops.diagonal(gu_hat + gv_hat).imag
    size = (ops.abs(gu_hat) + ops.abs(gv_hat)).mean((-2, -1))  # each matrix's own
    bad = ops.abs(phase) > GAUGE_TOL * size[..., None]
    return ops.diag_embed(ops.where(bad, NAN + 0 * phase, 0 * phase))


def svd_backward(ops, u, s, vh, gu, gs, gvh, *, gauge_invariant=False, broadening=None):
    """Ā from the cotangents of an economy SVD (module docstring); ``u`` (..., m, k), ``s``
    (..., k) descending, ``vh`` (..., k, n); ``gu``, ``gs``, ``gvh`` of the same shapes or
    None."""
    if gu is None and gvh is None:  # values only (rule 1): U·diag(ḡs)·Vᴴ
        g = 0 * s if gs is None else _cluster_mean(ops, gs, s, broadening)
        return (u * g[..., None, :]) @ vh
    m, n, k = u.shape[-2], vh.shape[-1], s.shape[-1]
    gaps = _vector_gaps(ops, s, m, n)
    middle = 0 * s[..., :, None] * s[..., None, :]
    if gs is not None:
        g = _cluster_mean(ops, gs, s, broadening)
        if not (gauge_invariant or broadening):
            # A cotangent at a zero value beside those of U or V: undetermined (rule 2).
            g = ops.where((s <= _values_tol(ops, s)) & (gs != 0), NAN + 0 * gs, g)
        middle = middle + ops.diag_embed(g)
    cols = 0
    read = 0 * s != 0
    if gu is not None:
        read = read | ops.any(gu != 0, -2)
    if gvh is not None:
        read = read | ops.any(gvh != 0, -1)
    reads_pair = read[..., :, None] | read[..., None, :]
    gu_hat = _ct(u) @ gu if gu is not None else 0 * middle
    gv_hat = vh @ _ct(gvh) if gvh is not None else 0 * middle
    xu, xv = gu_hat - _ct(gu_hat), gv_hat - _ct(gv_hat)
    diff = s[..., None, :] - s[..., :, None]
    summ = s[..., None, :] + s[..., :, None]
    small_diff = gaps.close | _eye(ops, s)
    inv_diff = _reciprocal(ops, diff, small_diff, gaps.close & reads_pair,
                           gauge_invariant, broadening)
    inv_sum = _reciprocal(ops, summ, gaps.zero_sum, gaps.zero_sum & reads_pair,
                          gauge_invariant, broadening)
    middle = middle + ((xu + xv) * inv_diff + (xu - xv) * inv_sum) / 2
    if _is_complex(u) and k:
        middle = middle + _phase_nan(ops, gu_hat, gv_hat)
    inv_s = _reciprocal(ops, s, gaps.zero, gaps.zero & read, gauge_invariant, broadening)
    if gu is not None and m > k:
        cols = ((gu - u @ gu_hat) * inv_s[..., None, :]) @ vh
    if gvh is not None and n > k:
        cols = cols + u @ ((gvh - gvh @ _ct(vh) @ vh) * inv_s[..., :, None])
    return u @ ops.cast(middle, u) @ vh + cols


def svd_jvp(ops, u, s, vh, da, *, gauge_invariant=False, broadening=None):
    """(dU, ds, dVh) of an economy SVD along ``da``: the forward mode of the module
    docstring, the transpose of :func:`svd_backward` (rule 4 at repeated values)."""
    m, n, k = u.shape[-2], vh.shape[-1], s.shape[-1]
    gaps = _vector_gaps(ops, s, m, n)
    v = _ct(vh)
    dc = _ct(u) @ da @ v
    ds = _cluster_mean(ops, ops.real(ops.diagonal(dc)), s, broadening)
    plus, minus = dc + _ct(dc), dc - _ct(dc)
    diff = s[..., None, :] - s[..., :, None]
    small_diff = gaps.close | _eye(ops, s)
    inv_diff = _reciprocal(ops, diff, small_diff, gaps.close, gauge_invariant, broadening)
    inv_sum = _reciprocal(ops, s[..., None, :] + s[..., :, None], gaps.zero_sum,
                          gaps.zero_sum, gauge_invariant, broadening)
    one = plus * ops.cast(inv_diff, dc) / 2
    two = minus * ops.cast(inv_sum, dc) / 2
    du = u @ (one + two)
    dv = v @ (one - two)
    if m > k or n > k:
        inv_s = ops.cast(_reciprocal(ops, s, gaps.zero, gaps.zero, gauge_invariant,
                                     broadening), dc)
        if m > k:
            du = du + (da @ v - u @ dc) * inv_s[..., None, :]
        if n > k:
            dv = dv + (_ct(da) @ u - v @ _ct(dc)) * inv_s[..., None, :]
    return du, ds, _ct(dv)


def _polar_weights(ops, s, m, n):
    """1/(s_i + s_j), 2·s_i/(s_i + s_j) and 1/s_i, NaN where the divisor is numerically
    zero (the polar factor is not unique there)."""
    gaps = _vector_gaps(ops, s, m, n)
    summ = s[..., :, None] + s[..., None, :]
    inv_sum = _reciprocal(ops, summ, gaps.zero_sum, gaps.zero_sum, False, None)
    inv_s = _reciprocal(ops, s, gaps.zero, gaps.zero, False, None)
    return inv_sum, 2 * s[..., :, None] * inv_sum, inv_s


def polar_jvp(ops, u, s, vh, da):
    """(dW, dP) of the right polar decomposition A = W·P along ``da``, from A's economy
    SVD (module docstring)."""
    m, n, k = u.shape[-2], vh.shape[-1], s.shape[-1]
    inv_sum, share, inv_s = (ops.cast(w, da) for w in _polar_weights(ops, s, m, n))
    v = _ct(vh)
    dc = _ct(u) @ da @ v
    minus = dc - _ct(dc)
    dw = u @ (minus * inv_sum) @ vh
    # (dC + dCᴴ)/2 − (dC − dCᴴ)∘(s_j − s_i)/(2(s_j + s_i)); 1 − share is the last ratio
    inner = (dc + _ct(dc)) / 2 - minus * (1 - share) / 2
    dp = v @ inner @ vh
    if m > k:
        dw = dw + ((da @ v - u @ dc) * inv_s[..., None, :]) @ vh
    if n > k:
        rest = da - da @ v @ vh
        dw = dw + (u * inv_s[..., None, :]) @ _ct(u) @ rest
        dp = dp + _ct(rest) @ u @ vh + v @ _ct(u) @ rest
    return dw, dp


def polar_backward(ops, u, s, vh, gw, gp):
    """Ā from the cotangents ``gw`` of W and ``gp`` of P (either may be None): the adjoint
    of :func:`polar_jvp`."""
    m, n, k = u.shape[-2], vh.shape[-1], s.shape[-1]
    inv_sum, share, inv_s = (ops.cast(w, u) for w in _polar_weights(ops, s, m, n))
    v = _ct(vh)
    inner = 0 * inv_sum
    out = 0
    if gw is not None:
        g_hat = _ct(u) @ gw @ v
        inner = inner + (g_hat - _ct(g_hat)) * inv_sum
        if m > k:
            out = out + (gw - u @ (_ct(u) @ gw)) @ (v * inv_s[..., None, :]) @ vh
        if n > k:
            out = out + (u * inv_s[..., None, :]) @ _ct(u) @ (gw - gw @ v @ vh)
    if gp is not None:
        h_hat = vh @ gp @ v
        inner = inner + (h_hat + _ct(h_hat)) / 2 * share
        if n > k:
            both = gp + _ct(gp)
            out = out + u @ vh @ (both - both @ v @ vh)
    return u @ inner @ vh + out


def _takagi_weights(ops, s, reads_pair, gauge_invariant, broadening):
    """1/(s_j − s_i) (0 on the diagonal) and 1/(s_i + s_j) (..., n, n) of the Takagi
    factorization's derivative, undetermined where ``reads_pair`` (module docstring)."""
    n = s.shape[-1]
    gaps = _vector_gaps(ops, s, n, n)
    diff = s[..., None, :] - s[..., :, None]
    inv_diff = _reciprocal(ops, diff, gaps.close | _eye(ops, s), gaps.close & reads_pair,
                           gauge_invariant, broadening)
    inv_sum = _reciprocal(ops, s[..., :, None] + s[..., None, :], gaps.zero_sum,
                          gaps.zero_sum & reads_pair, gauge_invariant, broadening)
    return inv_diff, inv_sum


def _split(ops, x, along_real, along_imag):
    """Re x ∘ ``along_real`` + i·Im x ∘ ``along_imag``, complex as ``x``."""
    return (ops.cast(ops.real(x) * along_real, x)
            + 1j * ops.cast(ops.real(-1j * x) * along_imag, x))


def takagi_jvp(ops, s, u, da, *, gauge_invariant=False, broadening=None):
    """(ds, dU) of the Takagi factorization A = U·diag(s)·Uᵀ along ``da`` (module
    docstring; ``s`` (..., n) descending, ``u`` (..., n, n)), rule 4 at repeated values."""
    p = _ct(u) @ ops.cast((da + da.mT) / 2, u) @ _ct(u).mT
    ds = _cluster_mean(ops, ops.real(ops.diagonal(p)), s, broadening)
    inv_diff, inv_sum = _takagi_weights(ops, s, True, gauge_invariant, broadening)
    return ds, u @ _split(ops, p, inv_diff, inv_sum)


def takagi_backward(ops, s, u, gs, gu, *, gauge_invariant=False, broadening=None):
    """Ā (symmetric) from the cotangents ``gs`` of s and ``gu`` of U (either may be None):
    the adjoint of :func:`takagi_jvp`, rules 1–3 at repeated and zero values."""
    g = 0 * s if gs is None else _cluster_mean(ops, gs, s, broadening)
    if gu is None:
        return (u * ops.cast(g, u)[..., None, :]) @ u.mT
    if gs is not None and not (gauge_invariant or broadening):
        # a cotangent at a zero value beside those of U: undetermined (rule 2)
        g = ops.where((s <= _values_tol(ops, s)) & (gs != 0), NAN + 0 * gs, g)
    read = ops.any(gu != 0, -2)
    inv_diff, inv_sum = _takagi_weights(ops, s, read[..., :, None] | read[..., None, :],
                                        gauge_invariant, broadening)
    k = _split(ops, _ct(u) @ gu, inv_diff, inv_sum) + ops.cast(ops.diag_embed(g), u)
    return u @ ((k + k.mT) / 2) @ u.mT
