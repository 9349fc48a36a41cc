"""JAX's transformations of ``svd``, ``svdvals`` and ``polar``: a ``jax.custom_vjp`` per
decomposition, whose forward is gpusvd's on the concrete array and whose backward is
:func:`.formulas.svd_backward` in ``jax.numpy``. So ``jax.grad`` and ``jax.vjp`` of a
function that calls gpusvd work eagerly; forward mode (``jax.jvp``) is not defined (JAX
says so), and inside ``jax.jit`` gpusvd cannot run: its kernels are not XLA operations,
and the front end says what to do instead (:func:`gpusvd._core.arrays.place`).
"""

import functools

from .._core.arrays import JAX_TRACER_MESSAGE
from . import formulas


def traced(a):
    """Whether ``a`` is a JAX tracer (an array being differentiated or jitted)."""
    if not type(a).__module__.startswith("jax"):
        return False
    import jax

    return isinstance(a, jax.core.Tracer)


@functools.cache
def _ops():
    import jax.numpy as jnp

    def diag_embed(x):
        return x[..., :, None] * jnp.eye(x.shape[-1], dtype=x.dtype)

    return formulas.Ops(where=jnp.where, abs=jnp.abs, diag_embed=diag_embed,
                        diagonal=lambda x: jnp.diagonal(x, axis1=-2, axis2=-1),
                        real=jnp.real, eps=lambda dtype: float(jnp.finfo(dtype).eps),
                        cast=lambda x, like: x.astype(like.dtype))


def _ct(x):
    return x.conj().swapaxes(-1, -2)


def _concrete(x):
    """``x`` if it holds values; inside jax.jit it does not, and gpusvd cannot run."""
    if traced(x):
        raise ValueError(JAX_TRACER_MESSAGE)
    return x


def svd(a, economy, full, *, full_matrices, compute_uv, broadening):
    """``svd`` of the traced array ``a`` under a custom VJP (module docstring)."""
    import jax

    k = min(a.shape[-2:])

    @jax.custom_vjp
    def decompose(x):
        return forward(x)[0]

    def forward(x):
        x = _concrete(x)
        u, s, vh = full(x) if full_matrices and compute_uv else economy(x)
        out = tuple((u, s, vh)) if compute_uv else s
        return out, (u[..., :k], s, vh[..., :k, :])

    def backward(saved, g):
        u, s, vh = saved
        gu, gs, gvh = g if compute_uv else (None, g, None)
        if gu is not None:
            gu, gvh = gu[..., :k], gvh[..., :k, :]
        return (formulas.svd_backward(_ops(), u, s, vh, gu, gs, gvh, broadening),)

    decompose.defvjp(forward, backward)
    return decompose(a)


def polar(a, economy, *, side, broadening):
    """``polar`` of the traced array ``a`` under a custom VJP."""
    import jax

    @jax.custom_vjp
    def right_polar(x):
        return forward(x)[0]

    def forward(x):
        u, s, vh = economy(_concrete(x))
        unitary = u @ vh
        hermitian = (_ct(vh) * s[..., None, :].astype(vh.dtype)) @ vh
        return (unitary, hermitian), (u, s, vh)

    def backward(saved, g):
        u, s, vh = saved
        gu, gs, gvh = formulas.polar_cotangents(u, s, vh, g[0], g[1], _ops())
        return (formulas.svd_backward(_ops(), u, s, vh, gu, gs, gvh, broadening),)

    right_polar.defvjp(forward, backward)
    if side == "right":
        return right_polar(a)
    w, p = right_polar(_ct(a))
    return _ct(w), p
