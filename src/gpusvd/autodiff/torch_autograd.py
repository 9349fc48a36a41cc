"""PyTorch autograd for ``svd``, ``svdvals`` and ``polar``: a ``torch.autograd.Function``
per decomposition whose forward is gpusvd's (on the detached tensor, on its device) and
whose backward is :func:`.formulas.svd_backward` in torch operations, on the same device.
Double backward is not supported (the backward is not itself recorded).
"""

import functools

from . import formulas


def records_grad(a):
    """Whether ``a`` is a torch tensor whose decomposition autograd must record."""
    if not type(a).__module__.startswith("torch"):
        return False
    import torch

    return isinstance(a, torch.Tensor) and a.requires_grad and torch.is_grad_enabled()


@functools.cache
def _ops():
    import torch

    return formulas.Ops(where=torch.where, abs=torch.abs, diag_embed=torch.diag_embed,
                        diagonal=lambda x: torch.diagonal(x, dim1=-2, dim2=-1),
                        real=torch.real, eps=lambda dtype: torch.finfo(dtype).eps,
                        cast=lambda x, like: x.to(like.dtype))


def _ct(x):
    return x.conj().swapaxes(-1, -2)


# A complex loss whose gradient's phase part Im diag(UᴴgU + VᴴgV) exceeds this share of
# the cotangents' size depends on the phases of the singular vectors, which the SVD does
# not fix (torch's own check, with its tolerance).
GAUGE_TOL = 1e-6


def _check_gauge(u, vh, gu, gvh):
    """``ValueError`` for a complex loss that depends on the singular vectors' phases."""
    import torch

    if not u.is_complex() or (gu is None and gvh is None):
        return
    phase = 0
    if gu is not None:
        phase = phase + torch.diagonal(_ct(u) @ gu, dim1=-2, dim2=-1).imag
    if gvh is not None:
        phase = phase + torch.diagonal(vh @ _ct(gvh), dim1=-2, dim2=-1).imag
    size = sum(float(g.abs().max()) for g in (gu, gvh) if g is not None and g.numel())
    if float(phase.abs().max()) > GAUGE_TOL * max(size, 1.0):
        raise ValueError(
            "svd: this loss depends on the phases of the complex singular vectors, which "
            "the SVD does not determine (each u_i, v_i pair may be multiplied by e^(iφ)): "
            "its gradient is not defined. Use a loss invariant to them (of U·Vᴴ, of "
            "projectors, of |u_i|, of S)")


@functools.cache
def _functions():
    """The autograd Functions, defined once torch is imported."""
    import torch

    class SVD(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, economy, k, broadening):
            u, s, vh = economy(a.detach())
            ctx.set_materialize_grads(False)
            ctx.save_for_backward(u[..., :k], s, vh[..., :k, :])
            ctx.broadening = broadening
            return u, s, vh

        @staticmethod
        def backward(ctx, gu, gs, gvh):
            u, s, vh = ctx.saved_tensors
            k = s.shape[-1]
            gu = None if gu is None else gu[..., :k]
            gvh = None if gvh is None else gvh[..., :k, :]
            _check_gauge(u, vh, gu, gvh)
            return (formulas.svd_backward(_ops(), u, s, vh, gu, gs, gvh, ctx.broadening),
                    None, None, None)

    class SVDVals(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, economy):
            u, s, vh = economy(a.detach())
            ctx.set_materialize_grads(False)
            ctx.save_for_backward(u, s, vh)
            return s

        @staticmethod
        def backward(ctx, gs):
            u, s, vh = ctx.saved_tensors
            return formulas.svd_backward(_ops(), u, s, vh, None, gs, None), None

    class RightPolar(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, economy, broadening):
            u, s, vh = economy(a.detach())
            ctx.set_materialize_grads(False)
            ctx.save_for_backward(u, s, vh)
            ctx.broadening = broadening
            unitary = u @ vh
            hermitian = (_ct(vh) * s[..., None, :].to(vh.dtype)) @ vh
            return unitary, hermitian

        @staticmethod
        def backward(ctx, g_unitary, g_hermitian):
            u, s, vh = ctx.saved_tensors
            gu, gs, gvh = formulas.polar_cotangents(u, s, vh, g_unitary, g_hermitian, _ops())
            return (formulas.svd_backward(_ops(), u, s, vh, gu, gs, gvh, ctx.broadening),
                    None, None)

    return SVD, SVDVals, RightPolar


def svd(a, economy, full, *, full_matrices, compute_uv, broadening):
    """``svd`` of the tensor ``a`` with its backward recorded. ``economy(x)`` and
    ``full(x)`` are gpusvd's economy and full SVD of a tensor that needs no grad."""
    svd_fn, svdvals_fn, _ = _functions()
    if not compute_uv:
        return svdvals_fn.apply(a, economy)
    k = min(a.shape[-2:])
    return svd_fn.apply(a, full if full_matrices else economy, k, broadening)


def polar(a, economy, *, side, broadening):
    """``polar`` of the tensor ``a`` with its backward recorded (the left polar
    decomposition of A is the right one of Aᴴ)."""
    right_polar = _functions()[2]
    if side == "right":
        return right_polar.apply(a, economy, broadening)
    w, p = right_polar.apply(_ct(a), economy, broadening)
    return _ct(w), p
