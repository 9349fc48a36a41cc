"""JAX's transformations of ``svd``, ``svdvals``, ``polar`` and ``takagi``: the entry from gpusvd's
public functions, for a traced JAX array, to the primitives of :mod:`.jax_primitives`
(which imports JAX: this module does not, so that gpusvd loads without it). Inside
``jax.jit``, ``jax.vmap``, ``jax.grad`` and their compositions, each decomposition is one
primitive that runs gpusvd's eager function on the concrete arrays, with derivatives from
:mod:`.formulas`.

>>> import jax, jax.numpy as jnp, gpusvd
>>> a = jnp.array([[3.0, 0.0], [4.0, 5.0]])
>>> [round(float(s) ** 2, 3) for s in jax.jit(gpusvd.svdvals)(a)]
[45.0, 5.0]
>>> jax.vmap(gpusvd.svdvals)(jnp.stack([a, 2 * a])).shape
(2, 2)
>>> grad = jax.jit(jax.grad(lambda x: gpusvd.svdvals(x).sum()))
>>> grad(jnp.diag(jnp.array([3.0, 1.0]))).tolist()
[[1.0, 0.0], [0.0, 1.0]]
"""

from .._core.arrays import jax_tracer


def traced(a):
    """Whether ``a`` is a JAX tracer (inside ``jax.jit``, ``jax.vmap``, ``jax.grad`` or
    any other transformation)."""
    return jax_tracer(a)


def _params(kw):
    """Keyword arguments as a primitive's parameter, which must be hashable."""
    return tuple(sorted(kw.items()))


def svd(a, *, full_matrices, compute_uv, gauge_invariant, broadening, kw):
    """``svd`` (``compute_uv``) or ``svdvals`` of the traced array ``a`` as a primitive,
    whose value is gpusvd's eager SVD with the keywords ``kw``. ``gauge_invariant`` and
    ``broadening`` choose the derivative's rule (:func:`.formulas.svd_backward`).
    ``full_matrices=True`` compiles and maps but raises ``ValueError`` under
    differentiation."""
    from . import jax_primitives as primitives

    x, back = primitives.working(a)
    if not compute_uv:
        (s,) = primitives.svdvals_p.bind(x, kw=_params(kw),
                                         gauge_invariant=gauge_invariant,
                                         broadening=broadening)
        return back(s)
    out = primitives.svd_p.bind(x, kw=_params(kw),
                                full_matrices=full_matrices,
                                gauge_invariant=gauge_invariant, broadening=broadening)
    return tuple(map(back, out))


def polar(a, *, side, broadening, kw_polar, kw_svd):
    """``polar`` of the traced array ``a`` as a primitive: the factors by gpusvd's eager
    polar with the keywords ``kw_polar``, their derivative from its SVD with ``kw_svd``;
    ``broadening`` enters second derivatives only (the closed forms of
    :func:`.formulas.polar_jvp` need none)."""
    from . import jax_primitives as primitives

    x, back = primitives.working(a)
    w, p = primitives.polar_p.bind(x, kw=_params(kw_polar), side=side,
                                   kw_svd=_params(kw_svd), broadening=broadening)
    return back(w), back(p)


def takagi(a, *, gauge_invariant, broadening, kw):
    """``takagi`` of the traced array ``a`` as a primitive, whose value is gpusvd's eager
    Takagi factorization (S, U) with the keywords ``kw``, computed in complex (real input
    promoted as gpusvd promotes it); ``gauge_invariant`` and ``broadening`` choose the
    derivative's rule (:func:`.formulas.takagi_backward`)."""
    from . import jax_primitives as primitives

    return tuple(primitives.takagi_p.bind(primitives.complex_working(a), kw=_params(kw),
                                          gauge_invariant=gauge_invariant,
                                          broadening=broadening))
