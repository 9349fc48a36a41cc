"""JAX's transformations of ``svd``, ``svdvals`` and ``polar``: a ``jax.custom_jvp`` per
decomposition, whose primal is gpusvd's on the concrete array and whose tangent map is
:func:`.formulas.svd_jvp` in ``jax.numpy``, linear in the tangent, so that JAX transposes
it for the reverse mode: ``jax.jvp``, ``jax.grad`` and ``jax.vjp`` of eager code that
calls gpusvd work. Inside ``jax.jit`` gpusvd cannot run: its kernels are not XLA
operations, and the front end says what to do instead. ``full_matrices=True`` is not
differentiable here (the extra columns are arbitrary; ``jnp.linalg.svd`` refuses too).
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
    """``x`` if it holds values; inside jax.jit it does not, and gpusvd cannot run. A
    differentiation tracer holds its primal, which may hold values in turn."""
    import jax

    inner = x
    while isinstance(inner, jax.core.Tracer):
        if not hasattr(inner, "primal"):
            raise ValueError(JAX_TRACER_MESSAGE)
        inner = inner.primal
    return x


def _svd_rule(economy, broadening):
    """The custom-JVP economy SVD: (U, s, Vh) of a concrete array, its tangents."""
    import jax

    @jax.custom_jvp
    def decompose(x):
        return tuple(economy(_concrete(x)))

    @decompose.defjvp
    def tangents(primals, dots):
        (x,), (dx,) = primals, dots
        u, s, vh = decompose(x)
        du, ds, dvh = formulas.svd_jvp(_ops(), u, s, vh, dx, broadening)
        return (u, s, vh), (du, ds, dvh)

    return decompose


def svd(a, economy, full, *, full_matrices, compute_uv, broadening):
    """``svd`` of the traced array ``a`` under a custom JVP (module docstring)."""
    _concrete(a)
    if full_matrices and compute_uv:
        raise ValueError("svd: full_matrices=True is not differentiable (its extra columns "
                         "are arbitrary); pass full_matrices=False under jax.grad or jax.jvp")
    u, s, vh = _svd_rule(economy, broadening)(a)
    return (u, s, vh) if compute_uv else s


def polar(a, economy, *, side, broadening):
    """``polar`` of the traced array ``a``: its factors from the differentiable SVD."""
    x = _concrete(a) if side == "right" else _ct(_concrete(a))
    u, s, vh = _svd_rule(economy, broadening)(x)
    unitary = u @ vh
    hermitian = (_ct(vh) * s[..., None, :].astype(vh.dtype)) @ vh
    if side == "right":
        return unitary, hermitian
    return _ct(unitary), hermitian
