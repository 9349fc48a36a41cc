"""The reverse-mode derivative of the SVD, stable where singular values repeat.

Written once against the array namespace of the framework (``torch`` or ``jax.numpy``),
through the few operations :class:`Ops` names. For A = U·diag(s)·Vᴴ (economy, k =
min(m, n)) and cotangents gU, gs, gVh (any may be None), with Ĝu = UᴴgU, Ĝv = Vᴴ·gV
(gV = gVhᴴ), Xu = Ĝu − Ĝuᴴ and Xv = Ĝv − Ĝvᴴ (their skew-Hermitian parts), the derivation
of Uᴴ·dA·V = dP·S + dS − S·dQ (dP = UᴴdU, dQ = VᴴdV skew-Hermitian) gives

    Ā = U·M·Vᴴ + (gU − U·Ĝu)·S⁻¹·Vᴴ + U·S⁻¹·(gVh − gVh·Vᴴ·V),
    M_ij = (Xu + Xv)_ij / (2(s_j − s_i)) + (Xu − Xv)_ij / (2(s_j + s_i)) + δ_ij·gs_i,

the split of (Xu_ij·s_j + Xv_ij·s_i)/(s_j² − s_i²) (torch's and JAX's one fraction) into
a part that is singular where s_i = s_j and one that is singular only where
s_i = s_j = 0. For a loss invariant under the rotations that leave A unchanged — U and V
rotated together inside a repeated singular value's subspace, independently inside the
null space — the numerator of each singular part vanishes there: (Xu + Xv) on a
repeated value's block, (Xu − Xv) on the null space's. Those 0/0 terms are defined as
0, their limit, wherever the denominator is below ``max(m, n)·ε·s_max``, so the gradient
of every such loss (a function of s, the nuclear norm, the polar factor, a projector onto
a separated subspace) is finite and right at repeated and zero values, where torch and
JAX divide by zero (JAX #2311, #8732; torch #49886). A loss that depends on the choice of
basis inside a degenerate subspace has no gradient there; the same rule returns the
gradient of its gauge-invariant part. The diagonal of the second part is the complex
phase term, (Im Ĝu_ii − Im Ĝv_ii)/(2s_i)·i (torch's, symmetrized). S⁻¹ in the last two
terms is 0 where s_i is below the same threshold: the columns of U and V for zero
singular values are arbitrary, and the gradient is taken with their cotangents ignored.

``broadening`` (β > 0) replaces every 1/x above by the Lorentzian x/(x² + β) instead
(Liao, Liu, Wang & Xiang, Phys. Rev. X 9, 031041, 2019), for losses that are not
invariant: it is biased, and never the default.
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


def _ct(x):
    return x.conj().swapaxes(-1, -2)


def _inverse(ops, x, tol, broadening):
    """1/x, 0 where |x| <= tol; with ``broadening`` β, x/(x² + β)."""
    if broadening:
        return x / (x * x + broadening)
    big = ops.abs(x) > tol
    return ops.where(big, 1 / ops.where(big, x, 1), 0 * x)


def svd_backward(ops, u, s, vh, gu, gs, gvh, broadening=None):
    """Ā from the cotangents of an economy SVD (module docstring); ``u`` (..., m, k), ``s``
    (..., k) descending, ``vh`` (..., k, n); ``gu``, ``gs``, ``gvh`` of the same shapes or
    None."""
    m, n = u.shape[-2], vh.shape[-1]
    tol = ops.eps(s.dtype) * max(m, n) * s[..., :1, None]
    inv_s = _inverse(ops, s, tol[..., 0], broadening)
    middle = 0 * s[..., :, None] * s[..., None, :]
    if gs is not None:
        middle = middle + ops.diag_embed(gs)
    cols = 0
    if gu is not None or gvh is not None:
        gu_hat = _ct(u) @ gu if gu is not None else 0 * middle
        gv_hat = vh @ _ct(gvh) if gvh is not None else 0 * middle
        xu, xv = gu_hat - _ct(gu_hat), gv_hat - _ct(gv_hat)
        diff = s[..., None, :] - s[..., :, None]
        summ = s[..., None, :] + s[..., :, None]
        middle = middle + ((xu + xv) * _inverse(ops, diff, tol, broadening)
                           + (xu - xv) * _inverse(ops, summ, tol, broadening)) / 2
        if gu is not None and m > s.shape[-1]:
            cols = ((gu - u @ gu_hat) * inv_s[..., None, :]) @ vh
        if gvh is not None and n > s.shape[-1]:
            cols = cols + u @ ((gvh - gvh @ _ct(vh) @ vh) * inv_s[..., :, None])
    return u @ ops.cast(middle, u) @ vh + cols


def polar_cotangents(u, s, vh, g_unitary, g_hermitian, ops):
    """(gU, gs, gVh) of the SVD from the cotangents of the right polar factors
    W = U·Vᴴ and P = V·diag(s)·Vᴴ (either may be None): W and P are invariant under the
    SVD's rotations, so :func:`svd_backward` gives their gradient everywhere."""
    v = _ct(vh)
    gu = g_unitary @ v if g_unitary is not None else None
    gv = _ct(g_unitary) @ u if g_unitary is not None else 0 * v
    gs = None
    if g_hermitian is not None:
        gs = ops.real(ops.diagonal(vh @ g_hermitian @ v))
        gv = gv + ((g_hermitian + _ct(g_hermitian)) @ v) * s[..., None, :]
    return gu, gs, _ct(gv)



def svd_jvp(ops, u, s, vh, da, broadening=None):
    """(dU, ds, dVh) of an economy SVD along ``da``: the forward-mode form of
    :func:`svd_backward` (the same derivation, the same split and the same 0/0 rule), so
    that JAX may transpose it into the reverse mode. dU = U·dP + (I − UUᴴ)·dA·V·S⁻¹,
    dV = V·dQ + (I − VVᴴ)·dAᴴ·U·S⁻¹ with, for dC = Uᴴ·dA·V, F = dC and G = dCᴴ,
    dP = (F + G)/(2(s_j − s_i)) + (F − G)/(2(s_j + s_i)) and
    dQ = (F + G)/(2(s_j − s_i)) − (F − G)/(2(s_j + s_i)); ds = Re diag(dC)."""
    m, n = u.shape[-2], vh.shape[-1]
    k = s.shape[-1]
    tol = ops.eps(s.dtype) * max(m, n) * s[..., :1, None]
    inv_s = _inverse(ops, s, tol[..., 0], broadening)
    v = _ct(vh)
    dc = _ct(u) @ da @ v
    ds = ops.real(ops.diagonal(dc))
    plus, minus = dc + _ct(dc), dc - _ct(dc)
    one = plus * _inverse(ops, s[..., None, :] - s[..., :, None], tol, broadening) / 2
    two = minus * _inverse(ops, s[..., None, :] + s[..., :, None], tol, broadening) / 2
    du = u @ (one + two)
    dv = v @ (one - two)
    if m > k:
        du = du + (da @ v - u @ dc) * inv_s[..., None, :]
    if n > k:
        dv = dv + (_ct(da) @ u - v @ _ct(dc)) * inv_s[..., None, :]
    return du, ds, _ct(dv)
